//! Product catalog: the nine Online Boutique products, listed, fetched by id and searched.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;

use crate::data;
use crate::services::json_error;
use crate::wire::Product;

/// The catalog's state: the fixed product list.
#[derive(Debug, Clone)]
pub struct CatalogState {
    products: Arc<Vec<Product>>,
}

impl Default for CatalogState {
    fn default() -> Self {
        CatalogState {
            products: Arc::new(data::products()),
        }
    }
}

/// `GET /products`, `GET /products/{id}`, `GET /products/search?query=`.
pub fn router(state: CatalogState) -> Router {
    Router::new()
        .route("/products", get(list))
        .route("/products/search", get(search))
        .route("/products/{id}", get(product))
        .with_state(state)
}

async fn list(State(state): State<CatalogState>) -> Json<Vec<Product>> {
    Json(state.products.as_ref().clone())
}

async fn product(State(state): State<CatalogState>, Path(id): Path<String>) -> Response {
    match state.products.iter().find(|product| product.id == id) {
        Some(product) => Json(product.clone()).into_response(),
        None => json_error(StatusCode::NOT_FOUND, format!("no product with id {id}")),
    }
}

#[derive(Debug, Deserialize)]
struct SearchQuery {
    query: String,
}

async fn search(State(state): State<CatalogState>, Query(query): Query<SearchQuery>) -> Response {
    let needle = query.query.to_lowercase();
    let found: Vec<Product> = state
        .products
        .iter()
        .filter(|product| {
            product.name.to_lowercase().contains(&needle)
                || product.description.to_lowercase().contains(&needle)
        })
        .cloned()
        .collect();
    Json(found).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::{Body, to_bytes};
    use axum::http::Request;
    use tower::ServiceExt;

    async fn get_json(uri: &str) -> (StatusCode, serde_json::Value) {
        let response = router(CatalogState::default())
            .oneshot(Request::get(uri).body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = response.status();
        let body = to_bytes(response.into_body(), 1 << 20).await.unwrap();
        (status, serde_json::from_slice(&body).unwrap())
    }

    #[tokio::test]
    async fn lists_nine_products_and_finds_one_by_id() {
        let (status, list) = get_json("/products").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(list.as_array().unwrap().len(), 9);
        let (status, product) = get_json("/products/OLJCESPC7Z").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(product["name"], "Sunglasses");
    }

    #[tokio::test]
    async fn unknown_id_is_404_and_search_filters() {
        let (status, _) = get_json("/products/NOPE").await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        let (_, found) = get_json("/products/search?query=mug").await;
        assert_eq!(found.as_array().unwrap().len(), 1);
    }
}
