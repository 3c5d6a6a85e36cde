//! The error boundary: an internal failure (here a closed database) answers a generic 500 with an error id, in
//! the API and in the pages alike, and never the internal detail; a client error keeps its message. Both are the
//! stack's one error body.

use http::StatusCode;
use serving::ErrorBody;

use crate::routes_tests::{get, send, stored_app, text};
use controller::test_support::TempStore;

const GENERIC: &str = "internal error; the detail is in the controller log (error id ";

#[tokio::test]
async fn a_store_failure_is_a_generic_500_with_an_error_id_and_no_detail() {
    let database = TempStore::new("web-closed-store");
    let (state, store) = stored_app(&database.location()).await;
    let missing = send(&state, get("/api/experiments/999")).await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    let missing = the_one_error_body(&text(missing).await);
    assert!(
        missing.error.contains("experiment 999 does not exist"),
        "a client error keeps its message: {missing:?}"
    );
    assert_eq!(missing.error_id, None, "a client error is not logged");

    store.close().await;
    let detail = store
        .experiments()
        .await
        .expect_err("the database is closed")
        .to_string();

    let api = send(&state, get("/api/experiments")).await;
    assert_eq!(api.status(), StatusCode::INTERNAL_SERVER_ERROR);
    let body = the_one_error_body(&text(api).await);
    let message = body.error.as_str();
    let id = body.error_id.as_deref().expect("error id");
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

/// The answer read as the stack's one error body, and nothing more: written back, it is the same JSON.
fn the_one_error_body(answer: &str) -> ErrorBody {
    let value: serde_json::Value = serde_json::from_str(answer).expect("JSON body");
    let body: ErrorBody = serde_json::from_value(value.clone()).expect("the error body");
    assert_eq!(
        serde_json::to_value(&body).unwrap(),
        value,
        "no other key than the error body's"
    );
    body
}
