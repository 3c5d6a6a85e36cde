//! Recommendation: up to five random catalog products the user is not already looking at (asks the catalog).

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use parking_lot::Mutex;
use rand::SeedableRng;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use serde::Deserialize;

use crate::client::Dependency;
use crate::services::dependency_failure;
use crate::wire::{Product, Recommendations};

/// At most this many recommendations per answer.
pub const MAX_RECOMMENDATIONS: usize = 5;

/// Recommendation's state: the catalog client and a seeded random source.
#[derive(Debug, Clone)]
pub struct RecommendationState {
    catalog: Dependency,
    rng: Arc<Mutex<SmallRng>>,
}

impl RecommendationState {
    /// Recommends from `catalog`, shuffling with `seed`.
    pub fn new(catalog: Dependency, seed: u64) -> Self {
        RecommendationState {
            catalog,
            rng: Arc::new(Mutex::new(SmallRng::seed_from_u64(seed))),
        }
    }
}

/// `GET /recommendations?user_id=&product_ids=a,b`.
pub fn router(state: RecommendationState) -> Router {
    Router::new()
        .route("/recommendations", get(recommend))
        .with_state(state)
}

#[derive(Debug, Deserialize)]
struct RecommendationQuery {
    #[serde(default)]
    product_ids: String,
}

async fn recommend(
    State(state): State<RecommendationState>,
    Query(query): Query<RecommendationQuery>,
) -> Response {
    let products: Vec<Product> = match state.catalog.get("/products").await {
        Ok(products) => products,
        Err(error) => return dependency_failure(&error),
    };
    let shown: Vec<&str> = query.product_ids.split(',').map(str::trim).collect();
    let mut candidates: Vec<String> = products
        .into_iter()
        .map(|product| product.id)
        .filter(|id| !shown.contains(&id.as_str()))
        .collect();
    candidates.shuffle(&mut *state.rng.lock());
    candidates.truncate(MAX_RECOMMENDATIONS);
    Json(Recommendations {
        product_ids: candidates,
    })
    .into_response()
}
