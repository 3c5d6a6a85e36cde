//! Ad: ads matching the page's product categories, or two random ones when nothing matches.

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::routing::get;
use axum::{Json, Router};
use parking_lot::Mutex;
use rand::SeedableRng;
use rand::rngs::SmallRng;
use rand::seq::IndexedRandom;
use serde::Deserialize;

use crate::data;
use crate::wire::{Ad, Ads};

/// How many random ads to serve when no category matches.
const RANDOM_AD_COUNT: usize = 2;

/// Ad's state: the ads by category and a seeded random source.
#[derive(Debug, Clone)]
pub struct AdState {
    ads: Arc<Vec<(&'static str, Ad)>>,
    rng: Arc<Mutex<SmallRng>>,
}

impl AdState {
    /// The fixed ads with random picks drawn from `seed`.
    pub fn new(seed: u64) -> Self {
        AdState {
            ads: Arc::new(data::ads_by_category()),
            rng: Arc::new(Mutex::new(SmallRng::seed_from_u64(seed))),
        }
    }
}

/// `GET /ads?context_keys=a,b`.
pub fn router(state: AdState) -> Router {
    Router::new().route("/ads", get(ads)).with_state(state)
}

#[derive(Debug, Deserialize)]
struct AdsQuery {
    #[serde(default)]
    context_keys: String,
}

async fn ads(State(state): State<AdState>, Query(query): Query<AdsQuery>) -> Json<Ads> {
    let keys: Vec<&str> = query
        .context_keys
        .split(',')
        .map(str::trim)
        .filter(|key| !key.is_empty())
        .collect();
    let mut matching: Vec<Ad> = state
        .ads
        .iter()
        .filter(|(category, _)| keys.contains(category))
        .map(|(_, ad)| ad.clone())
        .collect();
    if matching.is_empty() {
        let mut rng = state.rng.lock();
        matching = state
            .ads
            .choose_multiple(&mut *rng, RANDOM_AD_COUNT)
            .map(|(_, ad)| ad.clone())
            .collect();
    }
    Json(Ads { ads: matching })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::{Body, to_bytes};
    use axum::http::Request;
    use tower::ServiceExt;

    async fn fetch(uri: &str) -> Ads {
        let response = router(AdState::new(7))
            .oneshot(Request::get(uri).body(Body::empty()).unwrap())
            .await
            .unwrap();
        let body = to_bytes(response.into_body(), 1 << 20).await.unwrap();
        serde_json::from_slice(&body).unwrap()
    }

    #[tokio::test]
    async fn matching_categories_and_random_fallback() {
        assert_eq!(fetch("/ads?context_keys=kitchen").await.ads.len(), 2);
        assert_eq!(fetch("/ads?context_keys=footwear").await.ads.len(), 1);
        assert_eq!(fetch("/ads").await.ads.len(), RANDOM_AD_COUNT);
    }
}
