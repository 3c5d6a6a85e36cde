//! The error boundary: an internal failure (here a closed database) answers a generic 500 with an error id, in
//! the API and in the pages alike, and never the internal detail; a client error keeps its message.

use http::StatusCode;

use crate::routes_tests::{get, send, stored_app, text};
use controller::test_support::TempStore;

const GENERIC: &str = "internal error; the detail is in the controller log (error id ";

#[tokio::test]
async fn a_store_failure_is_a_generic_500_with_an_error_id_and_no_detail() {
    let database = TempStore::new("web-closed-store");
    let (state, store) = stored_app(&database.location()).await;
    let missing = send(&state, get("/api/experiments/999")).await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    assert!(
        text(missing)
            .await
            .contains("experiment 999 does not exist"),
        "a client error keeps its message"
    );

    store.close().await;
    let detail = store
        .experiments()
        .await
        .expect_err("the database is closed")
        .to_string();

    let api = send(&state, get("/api/experiments")).await;
    assert_eq!(api.status(), StatusCode::INTERNAL_SERVER_ERROR);
    let body: serde_json::Value = serde_json::from_str(&text(api).await).expect("JSON body");
    let message = body["error"].as_str().expect("error message");
    let id = body["error_id"].as_str().expect("error id");
    assert_eq!(message, format!("{GENERIC}{id})"));
    assert!(!message.contains(&detail), "{message} leaks {detail}");

    let page = send(&state, get("/experiments")).await;
    assert_eq!(page.status(), StatusCode::INTERNAL_SERVER_ERROR);
    let page = text(page).await;
    assert!(page.contains("id=\"error-message\""), "{page}");
    assert!(
        page.contains(GENERIC),
        "the page shows the same text: {page}"
    );
    assert!(!page.contains(&detail), "the page leaks {detail}: {page}");
}
