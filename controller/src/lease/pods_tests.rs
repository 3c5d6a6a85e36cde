//! A run's pod fault against kube's mock service: applied to every ready replica of the target (its annotation
//! before the fault), recorded, and undone at the run's end — and when the run is dropped part-way (an abort), or
//! when it fails on a later pod, whatever was applied before.

use std::sync::Arc;

use parking_lot::Mutex;

use super::PodStack;
use crate::docker::ContainerAction;
use crate::kubernetes::tests::{Handle, OWNER, PODS, Seen, answer, fixture, mock, next};
use crate::kubernetes::{Cluster, FAULT_ANNOTATION, discovery};
use crate::roster::Roster;
use crate::spec::ExperimentSpec;
use crate::store::{FaultCall, PutFault, RunEvent, RunEventRecord};

/// The three ready Checkout pods of the scaled fixture, in label order.
const CHECKOUTS: [&str; 3] = [
    "checkout-7d9f8c6b5-4xk2p",
    "checkout-7d9f8c6b5-9wq7m",
    "checkout-7d9f8c6b5-zt5rn",
];

fn spec(target: &str) -> ExperimentSpec {
    ExperimentSpec::parse(&format!(
        "name = \"pods\"\nduration = \"5s\"\n[load]\nusers = 2\n[fault]\ntarget = \"{target}\"\n\
         kind = \"restart\"\nrates = [1.0]\nlease = \"30s\"\n[breaker]\nmodes = [\"enforce\"]\n"
    ))
    .expect("the spec parses")
}

/// The namespace's pods as the watch would hold them.
fn stack(cluster: Cluster) -> PodStack {
    let pods: serde_json::Value =
        serde_json::from_str(fixture("pods_scaled_checkout.json")).unwrap();
    let pods: Vec<k8s_openapi::api::core::v1::Pod> =
        serde_json::from_value(pods["items"].clone()).unwrap();
    let mut roster = Roster::new();
    roster
        .update(&discovery::instances(&pods, 8080))
        .expect("a roster");
    PodStack {
        cluster,
        roster: Arc::new(Mutex::new(roster)),
        owner: OWNER.into(),
    }
}

/// Serves one pod's delete fault: get, the annotation written, the pod deleted. Returns the pod.
async fn serve_delete(handle: &mut Handle, log: &mut Vec<Seen>) -> String {
    let (get, respond) = next(handle, log).await;
    assert_eq!(get.method.as_str(), "GET", "{get:?}");
    let pod = get.path.trim_start_matches(&format!("{PODS}/")).to_owned();
    answer(respond, 200, fixture("pod_checkout.json"));
    let (patch, respond) = next(handle, log).await;
    assert_eq!(
        (patch.method.as_str(), patch.path.as_str()),
        ("PATCH", get.path.as_str())
    );
    let written = patch.json()["metadata"]["annotations"][FAULT_ANNOTATION].clone();
    assert!(
        written.as_str().is_some_and(|lease| lease.contains(OWNER)),
        "{written}"
    );
    answer(respond, 200, fixture("pod_checkout.json"));
    let (delete, respond) = next(handle, log).await;
    assert_eq!(
        (delete.method.as_str(), delete.path.as_str()),
        ("DELETE", get.path.as_str())
    );
    answer(respond, 200, fixture("pod_checkout.json"));
    pod
}

/// Serves one annotation cleared (the pod deleted already: 404, which counts as undone). Returns the pod.
async fn serve_cleared(handle: &mut Handle, log: &mut Vec<Seen>) -> String {
    let (patch, respond) = next(handle, log).await;
    assert_eq!(patch.method.as_str(), "PATCH", "{patch:?}");
    assert_eq!(
        patch.json()["metadata"]["annotations"][FAULT_ANNOTATION],
        serde_json::Value::Null
    );
    answer(respond, 404, fixture("status_not_found.json"));
    patch
        .path
        .trim_start_matches(&format!("{PODS}/"))
        .to_owned()
}

fn applied(events: &[RunEventRecord]) -> Vec<(String, String)> {
    events
        .iter()
        .filter_map(|record| match &record.event {
            RunEvent::Fault(FaultCall::Applied(PutFault::Pod { pod, replica, .. })) => {
                Some((replica.clone(), pod.clone()))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_runs_pod_fault_is_on_every_ready_replica_and_undone_at_its_end() {
    let (cluster, mut handle) = mock();
    let mut log = Vec::new();
    let spec = spec("checkout");
    let planned = spec.plan().remove(0);
    let events = Arc::new(Mutex::new(Vec::new()));
    let stack = stack(cluster);
    let begun = {
        let events = Arc::clone(&events);
        tokio::spawn(async move {
            stack
                .begin(&spec, &planned, Some(ContainerAction::Restart), &events)
                .await
        })
    };
    let mut deleted = Vec::new();
    for _ in CHECKOUTS {
        deleted.push(serve_delete(&mut handle, &mut log).await);
    }
    assert_eq!(deleted, CHECKOUTS);
    let run = begun.await.unwrap().expect("the fault is on");
    assert_eq!(
        applied(&events.lock()),
        [
            ("checkout".to_owned(), CHECKOUTS[0].to_owned()),
            ("checkout#2".to_owned(), CHECKOUTS[1].to_owned()),
            ("checkout#3".to_owned(), CHECKOUTS[2].to_owned()),
        ]
    );
    let ending = {
        let events = Arc::clone(&events);
        tokio::spawn(async move { run.end(&events).await })
    };
    let mut cleared = Vec::new();
    for _ in CHECKOUTS {
        cleared.push(serve_cleared(&mut handle, &mut log).await);
    }
    ending.await.unwrap();
    assert_eq!(cleared, CHECKOUTS);
    let removed = (events.lock().iter())
        .filter(|r| matches!(r.event, RunEvent::Fault(FaultCall::Removed { .. })))
        .count();
    assert_eq!(removed, 3);
}

#[tokio::test]
async fn an_aborted_run_undoes_its_pod_fault() {
    let (cluster, mut handle) = mock();
    let mut log = Vec::new();
    let spec = spec("checkout#2");
    let planned = spec.plan().remove(0);
    let events = Arc::new(Mutex::new(Vec::new()));
    let stack = stack(cluster);
    let begun = {
        let events = Arc::clone(&events);
        tokio::spawn(async move {
            stack
                .begin(&spec, &planned, Some(ContainerAction::Restart), &events)
                .await
        })
    };
    // Only the replica the label names.
    assert_eq!(serve_delete(&mut handle, &mut log).await, CHECKOUTS[1]);
    let run = begun.await.unwrap().expect("the fault is on");
    // The run's future dropped part-way: what it applied is undone all the same.
    drop(run);
    assert_eq!(serve_cleared(&mut handle, &mut log).await, CHECKOUTS[1]);
}

#[tokio::test]
async fn a_fault_refused_on_a_later_pod_undoes_the_earlier_ones_and_names_the_pod() {
    let (cluster, mut handle) = mock();
    let mut log = Vec::new();
    let spec = spec("checkout");
    let planned = spec.plan().remove(0);
    let events = Arc::new(Mutex::new(Vec::new()));
    let stack = stack(cluster);
    let begun = {
        let events = Arc::clone(&events);
        tokio::spawn(async move {
            stack
                .begin(&spec, &planned, Some(ContainerAction::Restart), &events)
                .await
                .map(|_| ())
        })
    };
    assert_eq!(serve_delete(&mut handle, &mut log).await, CHECKOUTS[0]);
    // The second pod is gone by the time its fault comes.
    let (get, respond) = next(&mut handle, &mut log).await;
    assert!(get.path.ends_with(CHECKOUTS[1]), "{get:?}");
    answer(respond, 404, fixture("status_not_found.json"));
    let error = begun.await.unwrap().unwrap_err().to_string();
    assert!(
        error.contains(&format!("get pod {} in namespace shop", CHECKOUTS[1])),
        "{error}"
    );
    assert_eq!(serve_cleared(&mut handle, &mut log).await, CHECKOUTS[0]);
}
