//! Every Kubernetes API call tested without a cluster (the kube-rs book's "mocked unit tests"): a
//! `tower_test::mock::pair()` handed to `kube::Client::new`, each request the code sends asserted (method, path,
//! query — label selector, watch parameters, exec command —, patch body) and answered with a fixture shaped as
//! the API returns it (`fixtures/`). The RBAC test drives every call the code makes and compares what the
//! requests need with the manifests' Role, both ways.

use std::collections::BTreeSet;
use std::time::Duration;

use http::{Request, Response};
use http_body_util::BodyExt;
use kube::client::Body;
use tokio::sync::broadcast;

use super::fault::{PodAction, PodLease};
use super::manifests::{ManifestOptions, role};
use super::rbac::{Permission, needed_by};
use super::{Cluster, FAULT_ANNOTATION};
use crate::roster::{ReplicaChange, Roster};

pub(crate) const PODS: &str = "/api/v1/namespaces/shop/pods";
pub(crate) const OWNER: &str = "test-host/1/00000001";

pub(crate) type Handle = tower_test::mock::Handle<Request<Body>, Response<Body>>;
pub(crate) type Responder = tower_test::mock::SendResponse<Response<Body>>;

pub(crate) fn fixture(name: &str) -> &'static str {
    match name {
        "pods_scaled_checkout.json" => include_str!("fixtures/pods_scaled_checkout.json"),
        "pod_checkout.json" => include_str!("fixtures/pod_checkout.json"),
        "watch_pod_replaced.jsonl" => include_str!("fixtures/watch_pod_replaced.jsonl"),
        "pods_with_fault_annotations.json" => {
            include_str!("fixtures/pods_with_fault_annotations.json")
        }
        "status_forbidden_exec.json" => include_str!("fixtures/status_forbidden_exec.json"),
        "status_not_found.json" => include_str!("fixtures/status_not_found.json"),
        other => panic!("no fixture {other}"),
    }
}

pub(crate) fn mock() -> (Cluster, Handle) {
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let client = kube::Client::new(service, "shop");
    (Cluster::from_client(client, "shop"), handle)
}

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) method: http::Method,
    pub(crate) path: String,
    pub(crate) query: String,
    pub(crate) body: String,
}

impl Seen {
    /// The query's pairs, decoded, in order.
    fn pairs(&self) -> Vec<(String, String)> {
        self.query
            .split('&')
            .filter(|pair| !pair.is_empty())
            .map(|pair| {
                let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                (percent_decode(key), percent_decode(value))
            })
            .collect()
    }

    fn value(&self, key: &str) -> Option<String> {
        self.pairs()
            .into_iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }

    /// An exec's command, its `command` pairs in order.
    fn command(&self) -> Vec<String> {
        self.pairs()
            .into_iter()
            .filter(|(key, _)| key == "command")
            .map(|(_, value)| value)
            .collect()
    }

    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
                out.push(u8::from_str_radix(hex, 16).unwrap());
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            byte => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap()
}

/// The next request (within a bound: a missing request fails the test instead of hanging it).
pub(crate) async fn next(handle: &mut Handle, log: &mut Vec<Seen>) -> (Seen, Responder) {
    let (request, respond) = tokio::time::timeout(Duration::from_secs(10), handle.next_request())
        .await
        .expect("the code sent no further request")
        .expect("the client went away");
    let (parts, body) = request.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let seen = Seen {
        method: parts.method,
        path: parts.uri.path().to_owned(),
        query: parts.uri.query().unwrap_or("").to_owned(),
        body: String::from_utf8_lossy(&body).into_owned(),
    };
    log.push(seen.clone());
    (seen, respond)
}

pub(crate) fn answer(respond: Responder, status: u16, body: &str) {
    respond.send_response(
        Response::builder()
            .status(status)
            .header("content-type", "application/json")
            .body(Body::from(body.as_bytes().to_vec()))
            .unwrap(),
    );
}

/// Lists the scaled deployment; returns the requests seen.
async fn discovery(log: &mut Vec<Seen>) -> Vec<crate::roster::Instance> {
    let (cluster, mut handle) = mock();
    let listed = tokio::spawn(async move { cluster.pods_matching("app.kubernetes.io/name").await });
    let (seen, respond) = next(&mut handle, log).await;
    assert_eq!((seen.method.as_str(), seen.path.as_str()), ("GET", PODS));
    assert_eq!(
        seen.value("labelSelector").as_deref(),
        Some("app.kubernetes.io/name")
    );
    answer(respond, 200, fixture("pods_scaled_checkout.json"));
    let pods = listed.await.unwrap().unwrap();
    assert_eq!(pods.len(), 5);
    super::discovery::instances(&pods, 8080)
}

#[tokio::test]
async fn discovery_of_a_scaled_deployment_labels_every_ready_pod() {
    let mut log = Vec::new();
    let instances = discovery(&mut log).await;
    // The pending pod is no replica yet.
    assert_eq!(
        instances
            .iter()
            .map(|i| (i.service.as_str(), i.url.as_str()))
            .collect::<Vec<_>>(),
        [
            ("frontend", "http://10.244.1.10:8080"),
            ("checkout", "http://10.244.1.11:8080"),
            ("checkout", "http://10.244.1.12:8080"),
            ("checkout", "http://10.244.1.13:8080"),
        ]
    );
    let mut roster = Roster::new();
    roster.update(&instances).unwrap();
    let labels: Vec<String> = roster
        .running()
        .into_iter()
        .map(|(l, _)| l.into_string())
        .collect();
    assert_eq!(labels, ["checkout", "checkout#2", "checkout#3", "frontend"]);
    assert_eq!(
        roster.instance("checkout#3").unwrap().name,
        "checkout-7d9f8c6b5-zt5rn"
    );
}

/// The watch: the initial list, then the watch request; returns the changes it sent.
async fn watch_replacement(log: &mut Vec<Seen>) -> Vec<ReplicaChange> {
    let (cluster, mut handle) = mock();
    let (changes, mut received) = broadcast::channel(64);
    let watching = tokio::spawn(async move {
        cluster
            .watch(
                "app.kubernetes.io/part-of=tolerant-testbed",
                8080,
                std::sync::Arc::new(parking_lot::Mutex::new(Roster::new())),
                changes,
            )
            .await
    });
    let (list, respond) = next(&mut handle, log).await;
    assert_eq!((list.method.as_str(), list.path.as_str()), ("GET", PODS));
    assert_eq!(
        list.value("labelSelector").as_deref(),
        Some("app.kubernetes.io/part-of=tolerant-testbed")
    );
    assert_eq!(list.value("watch"), None, "{list:?}");
    answer(respond, 200, fixture("pods_scaled_checkout.json"));
    let (watch, respond) = next(&mut handle, log).await;
    assert_eq!((watch.method.as_str(), watch.path.as_str()), ("GET", PODS));
    assert_eq!(watch.value("watch").as_deref(), Some("true"), "{watch:?}");
    // From the list's version on, with the same selector: nothing between the two is missed.
    assert_eq!(watch.value("resourceVersion").as_deref(), Some("1000"));
    assert_eq!(
        watch.value("labelSelector").as_deref(),
        Some("app.kubernetes.io/part-of=tolerant-testbed")
    );
    assert!(watch.value("timeoutSeconds").is_some(), "{watch:?}");
    answer(respond, 200, fixture("watch_pod_replaced.jsonl"));
    let mut seen = Vec::new();
    while seen.len() < 6 {
        let change = tokio::time::timeout(Duration::from_secs(10), received.recv())
            .await
            .expect("a change")
            .unwrap();
        seen.push(change);
    }
    watching.abort();
    seen
}

#[tokio::test]
async fn a_pod_replaced_during_a_watch_takes_the_label_of_the_one_it_replaced() {
    let mut log = Vec::new();
    let changes = watch_replacement(&mut log).await;
    let said: Vec<(&str, &str)> = changes
        .iter()
        .map(|c| (c.event_name(), c.label().as_str()))
        .collect();
    assert_eq!(
        said,
        [
            ("replica:added", "checkout"),
            ("replica:added", "checkout#2"),
            ("replica:added", "checkout#3"),
            ("replica:added", "frontend"),
            // Terminating: no longer a replica.
            ("replica:removed", "checkout#3"),
            // Ready in its place: followed under its label.
            ("replica:replaced", "checkout#3"),
        ]
    );
    let ReplicaChange::Replaced {
        previous, instance, ..
    } = &changes[5]
    else {
        panic!("{:?}", changes[5]);
    };
    assert_eq!(previous, "checkout-7d9f8c6b5-zt5rn");
    assert_eq!(instance.name, "checkout-7d9f8c6b5-r6d2w");
    assert_eq!(instance.url, "http://10.244.2.21:8080");
}

/// A kill whose exec the API refuses: the annotation is written before the exec and removed after.
async fn kill_refused(log: &mut Vec<Seen>) -> String {
    let (cluster, mut handle) = mock();
    let pod = "checkout-7d9f8c6b5-4xk2p";
    let injected = tokio::spawn(async move {
        cluster
            .inject(
                pod,
                None,
                &PodAction::Kill {
                    signal: "SIGTERM".into(),
                },
                Duration::from_secs(30),
                OWNER,
                1_000_000,
            )
            .await
    });
    let (get, respond) = next(&mut handle, log).await;
    assert_eq!(
        (get.method.as_str(), get.path.as_str()),
        ("GET", format!("{PODS}/{pod}").as_str())
    );
    answer(respond, 200, fixture("pod_checkout.json"));
    let (patch, respond) = next(&mut handle, log).await;
    assert_eq!(
        (patch.method.as_str(), patch.path.as_str()),
        ("PATCH", format!("{PODS}/{pod}").as_str())
    );
    let written = patch.json()["metadata"]["annotations"][FAULT_ANNOTATION].clone();
    let lease: PodLease =
        serde_json::from_str(written.as_str().expect("the annotation is a string")).unwrap();
    assert_eq!(
        lease,
        PodLease {
            owner: OWNER.into(),
            until_ms: 1_030_000,
            container: "checkout".into(),
            action: PodAction::Kill {
                signal: "SIGTERM".into()
            },
        }
    );
    answer(respond, 200, fixture("pod_checkout.json"));
    let (exec, respond) = next(&mut handle, log).await;
    assert_eq!(
        (exec.method.as_str(), exec.path.as_str()),
        ("GET", format!("{PODS}/{pod}/exec").as_str())
    );
    let commands = exec.command();
    assert_eq!(commands, ["kill", "-s", "SIGTERM", "1"]);
    assert_eq!(exec.value("container").as_deref(), Some("checkout"));
    assert_eq!(exec.value("stdout").as_deref(), Some("true"));
    assert_eq!(exec.value("stdin"), None);
    answer(respond, 403, fixture("status_forbidden_exec.json"));
    let (cleared, respond) = next(&mut handle, log).await;
    assert_eq!(cleared.method.as_str(), "PATCH");
    assert_eq!(
        cleared.json()["metadata"]["annotations"][FAULT_ANNOTATION],
        serde_json::Value::Null
    );
    answer(respond, 200, fixture("pod_checkout.json"));
    injected.await.unwrap().unwrap_err().to_string()
}

#[tokio::test]
async fn a_pod_faults_annotation_is_written_before_the_exec_and_cleared_when_it_fails() {
    let mut log = Vec::new();
    let error = kill_refused(&mut log).await;
    assert!(
        error.contains("exec in pod checkout-7d9f8c6b5-4xk2p in namespace shop"),
        "{error}"
    );
}

/// A delete: annotation, then the pod deleted.
async fn delete_pod(log: &mut Vec<Seen>) {
    let (cluster, mut handle) = mock();
    let pod = "checkout-7d9f8c6b5-4xk2p";
    let injected = tokio::spawn(async move {
        cluster
            .inject(
                pod,
                None,
                &PodAction::Delete,
                Duration::from_secs(10),
                OWNER,
                5_000,
            )
            .await
    });
    let (get, respond) = next(&mut handle, log).await;
    assert_eq!(get.method.as_str(), "GET");
    answer(respond, 200, fixture("pod_checkout.json"));
    let (patch, respond) = next(&mut handle, log).await;
    assert_eq!(patch.method.as_str(), "PATCH");
    assert!(patch.body.contains("\\\"delete\\\""), "{}", patch.body);
    answer(respond, 200, fixture("pod_checkout.json"));
    let (delete, respond) = next(&mut handle, log).await;
    assert_eq!(
        (delete.method.as_str(), delete.path.as_str()),
        ("DELETE", format!("{PODS}/{pod}").as_str())
    );
    answer(respond, 200, fixture("pod_checkout.json"));
    let lease = injected.await.unwrap().unwrap();
    assert_eq!(lease.until_ms, 15_000);
}

/// A renewal rewrites the annotation with the new end.
async fn renew(log: &mut Vec<Seen>) {
    let (cluster, mut handle) = mock();
    let lease = PodLease {
        owner: OWNER.into(),
        until_ms: 10,
        container: "checkout".into(),
        action: PodAction::NetDelay { delay_ms: 200 },
    };
    let renewing = tokio::spawn(async move {
        cluster
            .renew(
                "checkout-7d9f8c6b5-4xk2p",
                &lease,
                Duration::from_secs(30),
                100,
            )
            .await
    });
    let (patch, respond) = next(&mut handle, log).await;
    assert_eq!(patch.method.as_str(), "PATCH");
    let written = patch.json()["metadata"]["annotations"][FAULT_ANNOTATION]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        serde_json::from_str::<PodLease>(&written).unwrap().until_ms,
        30_100
    );
    answer(respond, 200, fixture("pod_checkout.json"));
    renewing.await.unwrap().unwrap();
}

/// A new controller's sweep: only the expired annotation is undone.
async fn sweep(log: &mut Vec<Seen>) -> Vec<String> {
    let (cluster, mut handle) = mock();
    let sweeping = tokio::spawn(async move { cluster.sweep(Some(2_000_000)).await });
    let (list, respond) = next(&mut handle, log).await;
    assert_eq!((list.method.as_str(), list.path.as_str()), ("GET", PODS));
    assert_eq!(
        list.value("labelSelector"),
        None,
        "every pod of the namespace"
    );
    answer(respond, 200, fixture("pods_with_fault_annotations.json"));
    let (patch, respond) = next(&mut handle, log).await;
    assert_eq!(
        (patch.method.as_str(), patch.path.as_str()),
        ("PATCH", format!("{PODS}/checkout-7d9f8c6b5-4xk2p").as_str())
    );
    assert_eq!(
        patch.json()["metadata"]["annotations"][FAULT_ANNOTATION],
        serde_json::Value::Null
    );
    answer(respond, 200, fixture("pod_checkout.json"));
    sweeping.await.unwrap().unwrap()
}

#[tokio::test]
async fn a_new_controllers_sweep_undoes_only_the_expired_annotation() {
    let mut log = Vec::new();
    assert_eq!(sweep(&mut log).await, ["checkout-7d9f8c6b5-4xk2p"]);
    // Nothing else was asked: the live fault of another controller is left alone.
    assert_eq!(log.len(), 2);
}

/// A network fault's undo: `tc qdisc del` by exec (refused here: the error names the pod).
async fn undo_net(log: &mut Vec<Seen>) -> String {
    let (cluster, mut handle) = mock();
    let lease = PodLease {
        owner: OWNER.into(),
        until_ms: 10,
        container: "checkout".into(),
        action: PodAction::NetLoss { percent: 10.0 },
    };
    let undoing =
        tokio::spawn(async move { cluster.undo("checkout-7d9f8c6b5-4xk2p", &lease).await });
    let (exec, respond) = next(&mut handle, log).await;
    let commands = exec.command();
    assert_eq!(commands.join(" "), "tc qdisc del dev eth0 root");
    answer(respond, 403, fixture("status_forbidden_exec.json"));
    undoing.await.unwrap().unwrap_err().to_string()
}

#[tokio::test]
async fn an_api_error_surfaces_as_an_error_naming_the_pod() {
    let (cluster, mut handle) = mock();
    let mut log = Vec::new();
    let getting = tokio::spawn(async move { cluster.pod("checkout-gone").await });
    let (_, respond) = next(&mut handle, &mut log).await;
    answer(respond, 404, fixture("status_not_found.json"));
    let error = getting.await.unwrap().unwrap_err().to_string();
    assert!(
        error.contains("get pod checkout-gone in namespace shop"),
        "{error}"
    );
    assert!(error.contains("not found"), "{error}");
    let undo = undo_net(&mut log).await;
    assert!(undo.contains("pod checkout-7d9f8c6b5-4xk2p"), "{undo}");
}

#[tokio::test]
async fn the_role_holds_exactly_what_the_calls_need() {
    let mut log = Vec::new();
    discovery(&mut log).await;
    watch_replacement(&mut log).await;
    kill_refused(&mut log).await;
    delete_pod(&mut log).await;
    renew(&mut log).await;
    sweep(&mut log).await;
    undo_net(&mut log).await;
    let needed: BTreeSet<Permission> = log
        .iter()
        .flat_map(|seen| needed_by(&seen.method, &seen.path, &seen.query))
        .collect();
    let granted: BTreeSet<(String, String)> =
        role(&ManifestOptions::new("shop", "0123456789abcdef0123"))
            .rules
            .unwrap_or_default()
            .into_iter()
            .flat_map(|rule| {
                assert_eq!(
                    rule.api_groups.as_deref(),
                    Some(&[String::new()][..]),
                    "core API group only"
                );
                let resources = rule.resources.unwrap_or_default();
                rule.verbs.into_iter().flat_map(move |verb| {
                    resources
                        .clone()
                        .into_iter()
                        .map(move |r| (verb.clone(), r))
                })
            })
            .collect();
    let needed: BTreeSet<(String, String)> = needed
        .into_iter()
        .map(|p| (p.verb.to_owned(), p.resource.to_owned()))
        .collect();
    let missing: Vec<_> = needed.difference(&granted).collect();
    let extra: Vec<_> = granted.difference(&needed).collect();
    assert!(missing.is_empty(), "the Role lacks {missing:?}");
    assert!(
        extra.is_empty(),
        "the Role grants {extra:?}, which no call needs"
    );
}

#[tokio::test(start_paused = true)]
async fn a_call_the_server_never_answers_is_an_error_naming_the_pod_within_the_bound() {
    let (cluster, mut handle) = mock();
    let mut log = Vec::new();
    let getting = tokio::spawn(async move { cluster.pod("checkout-slow").await });
    // Taken and never answered.
    let (_, held) = next(&mut handle, &mut log).await;
    let answer = tokio::time::timeout(super::API_TIMEOUT * 4, getting)
        .await
        .expect("the call is bounded")
        .unwrap();
    let error = answer.unwrap_err().to_string();
    assert!(
        error.contains("get pod checkout-slow in namespace shop: no answer within 15s"),
        "{error}"
    );
    drop(held);
}

/// An API server that takes the connection and says nothing: connecting is refused within the bound, naming
/// the server.
#[tokio::test(start_paused = true)]
async fn a_server_that_never_answers_is_unreachable_naming_it() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let holding = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let url: http::Uri = format!("http://127.0.0.1:{port}").parse().unwrap();
    let connecting = Cluster::answering(kube::Config::new(url), "shop");
    let error = tokio::time::timeout(super::API_TIMEOUT * 4, connecting)
        .await
        .expect("connecting is bounded")
        .unwrap_err()
        .to_string();
    holding.abort();
    assert!(
        error.starts_with(&format!(
            "Kubernetes API server http://127.0.0.1:{port}/: not reachable"
        )),
        "{error}"
    );
    assert!(error.contains("no answer within 15s"), "{error}");
}

/// `tolerant halt --kubernetes`: every fault of the namespace undone, live or not, whoever holds it (the live
/// network delay's `tc qdisc del` finds its pod gone here, which counts as undone).
#[tokio::test]
async fn a_halt_sweeps_every_annotation_live_or_expired() {
    let (cluster, mut handle) = mock();
    let mut log = Vec::new();
    let sweeping = tokio::spawn(async move { cluster.sweep(None).await });
    let (list, respond) = next(&mut handle, &mut log).await;
    assert_eq!((list.method.as_str(), list.path.as_str()), ("GET", PODS));
    answer(respond, 200, fixture("pods_with_fault_annotations.json"));
    // The expired kill: its annotation cleared.
    let (patch, respond) = next(&mut handle, &mut log).await;
    assert_eq!(
        (patch.method.as_str(), patch.path.as_str()),
        ("PATCH", format!("{PODS}/checkout-7d9f8c6b5-4xk2p").as_str())
    );
    assert_eq!(
        patch.json()["metadata"]["annotations"][FAULT_ANNOTATION],
        serde_json::Value::Null
    );
    answer(respond, 200, fixture("pod_checkout.json"));
    // The live delay of another controller: undone too.
    let (exec, respond) = next(&mut handle, &mut log).await;
    assert!(exec.path.ends_with("/exec"), "{exec:?}");
    assert_eq!(exec.command().join(" "), "tc qdisc del dev eth0 root");
    let live = exec
        .path
        .trim_start_matches(&format!("{PODS}/"))
        .trim_end_matches("/exec")
        .to_owned();
    answer(respond, 404, fixture("status_not_found.json"));
    let undone = sweeping.await.unwrap().unwrap();
    assert_eq!(undone, ["checkout-7d9f8c6b5-4xk2p".to_owned(), live]);
}
