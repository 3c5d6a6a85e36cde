//! A size cap on every answer the Kubernetes API sends (issue 26, item 1), checked while reading: the client's
//! service stack ends in a layer that wraps each response body in `http_body_util::Limited`, so a list or a
//! watch past [`MAX_KUBE_ANSWER_BYTES`] ends in an error naming the cap rather than in a process that grows
//! until it dies. A watch that reaches the cap ends like any broken watch, and is started again by whoever
//! follows it.

use bytes::Bytes;
use http::Response;
use http_body_util::Limited;
use kube::client::ClientBuilder;
use tower::util::MapResponseLayer;

/// Longest answer read from the Kubernetes API: a list of some thousands of pods is a few MiB.
pub const MAX_KUBE_ANSWER_BYTES: usize = 64 * 1024 * 1024;

/// `builder`'s client, every answer body read through a cap of `limit` bytes.
pub fn capped<S, B>(builder: ClientBuilder<S>, limit: usize) -> kube::Client
where
    S: tower::Service<http::Request<kube::client::Body>, Response = Response<B>> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<tower::BoxError>,
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<tower::BoxError>,
{
    let limit_body = move |response: Response<B>| response.map(|body| Limited::new(body, limit));
    builder
        .with_layer(&MapResponseLayer::new(limit_body))
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Request;
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::{Api, ListParams};
    use kube::client::Body;

    /// A list answer longer than the cap is an error saying so; one within it is read.
    #[tokio::test]
    async fn an_answer_past_the_cap_is_an_error_not_a_growing_process() {
        let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
        let client = capped(ClientBuilder::new(service, "shop"), 1_000);
        let pods: Api<Pod> = Api::namespaced(client, "shop");
        let list =
            r#"{"apiVersion":"v1","kind":"PodList","metadata":{"resourceVersion":"1"},"items":[]}"#;
        let padded = format!("{}{}", &list[..list.len() - 1], r#","padding":""#)
            + &"x".repeat(5_000)
            + r#""}"#;
        let answer = tokio::spawn(async move {
            for body in [list.to_owned(), padded] {
                let (_, send) = handle.next_request().await.expect("a request");
                send.send_response(Response::new(Body::from(body.into_bytes())));
            }
        });
        let small = pods.list(&ListParams::default()).await;
        assert!(small.is_ok(), "{small:?}");
        let large = pods.list(&ListParams::default()).await;
        let error = large.expect_err("5 kB through a 1 kB cap").to_string();
        assert!(error.contains("length limit exceeded"), "{error}");
        answer.await.unwrap();
    }
}
