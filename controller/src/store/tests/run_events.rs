//! The typed run events and transitions store the very text the untyped records stored (the expected texts below
//! are what the code before the types wrote, `serde_json::Value::to_string` of the same events), read back as
//! themselves; a stored name or detail no version wrote is `StoreError::Corrupt` naming its column.

use agent::api::{AgentEvent, FaultSpec};
use breaker::{Mode, Reason, State, TransitionDetail};

use super::*;
use crate::docker::ContainerAction;

/// A fault document in the agent's wire shape.
fn fault(document: &str) -> FaultSpec {
    serde_json::from_str(document).expect("a fault document the agent takes")
}

fn error_503() -> FaultSpec {
    fault(
        r#"{"kind":"error","status":503,"rate":0.5,"match":{"method":"POST","path_prefix":"/charge"},"lease":"30s"}"#,
    )
}

fn delay_800ms() -> FaultSpec {
    fault(r#"{"kind":"delay","delay":"800ms","jitter":"100ms","rate":1.0,"lease":"30s"}"#)
}

const REFUSED: &str = "PUT http://agent: connection refused";

/// Every shape of every event, with the text the untyped record stored for it.
fn cases() -> Vec<(RunEvent, &'static str)> {
    let agent = |event: AgentEvent| RunEvent::agent(event);
    let call = RunEvent::Fault;
    let container = |action: ContainerAction| {
        call(FaultCall::Applied(PutFault::Container {
            container: "shop-payment-1".into(),
            action,
        }))
    };
    vec![
        (
            call(FaultCall::Applied(PutFault::Agent {
                fault: error_503(),
                period: None,
            })),
            r#"{"kind":"error","lease":"30s","match":{"method":"POST","path_prefix":"/charge"},"rate":0.5,"status":503}"#,
        ),
        (
            call(FaultCall::Applied(PutFault::Agent {
                fault: delay_800ms(),
                period: Some(2),
            })),
            r#"{"delay":"800ms","jitter":"100ms","kind":"delay","lease":"30s","period":2,"rate":1.0}"#,
        ),
        (
            call(FaultCall::ApplyFailed {
                fault: delay_800ms(),
                period: Some(2),
                error: REFUSED.into(),
            }),
            r#"{"delay":"800ms","error":"PUT http://agent: connection refused","jitter":"100ms","kind":"delay","lease":"30s","period":2,"rate":1.0}"#,
        ),
        (
            container(ContainerAction::Kill {
                signal: "SIGKILL".into(),
            }),
            r#"{"action":{"action":"kill","signal":"SIGKILL"},"container":"shop-payment-1"}"#,
        ),
        (
            container(ContainerAction::Disconnect {
                network: "shop_default".into(),
                aliases: vec!["payment".into()],
            }),
            r#"{"action":{"action":"disconnect","aliases":["payment"],"network":"shop_default"},"container":"shop-payment-1"}"#,
        ),
        (
            container(ContainerAction::NetLoss { percent: 12.5 }),
            r#"{"action":{"action":"net_loss","percent":12.5},"container":"shop-payment-1"}"#,
        ),
        (call(FaultCall::Renewed), "{}"),
        (
            call(FaultCall::RenewFailed {
                error: REFUSED.into(),
            }),
            r#"{"error":"PUT http://agent: connection refused"}"#,
        ),
        (call(FaultCall::Removed { period: None }), "{}"),
        (
            call(FaultCall::Removed { period: Some(2) }),
            r#"{"period":2}"#,
        ),
        (
            call(FaultCall::RemoveFailed {
                period: None,
                error: REFUSED.into(),
            }),
            r#"{"error":"PUT http://agent: connection refused"}"#,
        ),
        (
            call(FaultCall::RemoveFailed {
                period: Some(2),
                error: REFUSED.into(),
            }),
            r#"{"error":"PUT http://agent: connection refused","period":2}"#,
        ),
        (
            RunEvent::ContainerStatsFailed {
                error: "no such container".into(),
            },
            r#"{"error":"no such container"}"#,
        ),
        (
            RunEvent::ScrapeFailed {
                source: "prometheus:http://shop/metrics".into(),
                error: "GET http://shop/metrics: answer too large: more than 8388608 bytes".into(),
            },
            r#"{"error":"GET http://shop/metrics: answer too large: more than 8388608 bytes","source":"prometheus:http://shop/metrics"}"#,
        ),
        (
            RunEvent::TransitionsNotStored {
                service: "shop".into(),
                breaker: "shop->db".into(),
                source: Some("push".into()),
                count: 80,
                why: "over the ceiling of 20 transitions a second per breaker".into(),
            },
            r#"{"breaker":"shop->db","count":80,"service":"shop","source":"push","why":"over the ceiling of 20 transitions a second per breaker"}"#,
        ),
        (
            RunEvent::ProbeBuckets(crate::store::ProbeBucketsRead {
                agents: vec!["http://payment:8080".into()],
                errors: vec![
                    "GET http://payment-2:8080/_agent/probes?since_ms=0&until_ms=9: refused".into(),
                ],
                since_ms: 0,
                until_ms: 9,
                bucket_ms: 10,
                buckets: vec![(0, 3)],
            }),
            r#"{"agents":["http://payment:8080"],"bucket_ms":10,"buckets":[[0,3]],"errors":["GET http://payment-2:8080/_agent/probes?since_ms=0&until_ms=9: refused"],"since_ms":0,"until_ms":9}"#,
        ),
        (
            call(FaultCall::Applied(PutFault::Pod {
                pod: "checkout-7d4f9-abcde".into(),
                replica: "checkout#2".into(),
                action: crate::kubernetes::fault::PodAction::Kill {
                    signal: "SIGTERM".into(),
                },
            })),
            r#"{"action":{"action":"kill","signal":"SIGTERM"},"pod":"checkout-7d4f9-abcde","replica":"checkout#2"}"#,
        ),
        (
            RunEvent::Replica(ReplicaEvent::Added(ReplicaSeen {
                replica: "checkout#3".into(),
                instance: "shop_checkout.3.x".into(),
                url: "http://10.0.0.9:8080".into(),
            })),
            r#"{"instance":"shop_checkout.3.x","replica":"checkout#3","url":"http://10.0.0.9:8080"}"#,
        ),
        (
            RunEvent::Replica(ReplicaEvent::Removed(ReplicaGone {
                replica: "checkout#2".into(),
                instance: "shop_checkout.2.old".into(),
            })),
            r#"{"instance":"shop_checkout.2.old","replica":"checkout#2"}"#,
        ),
        (
            RunEvent::Replica(ReplicaEvent::Replaced(ReplicaReplacement {
                replica: "checkout#2".into(),
                previous: "shop_checkout.2.old".into(),
                instance: "shop_checkout.2.new".into(),
                url: "http://10.0.0.8:8080".into(),
            })),
            r#"{"instance":"shop_checkout.2.new","previous":"shop_checkout.2.old","replica":"checkout#2","url":"http://10.0.0.8:8080"}"#,
        ),
        (
            RunEvent::Replica(ReplicaEvent::Followed(ReplicaStream {
                replica: "checkout#2".into(),
                url: "http://10.0.0.8:8080".into(),
            })),
            r#"{"replica":"checkout#2","url":"http://10.0.0.8:8080"}"#,
        ),
        (
            RunEvent::Replica(ReplicaEvent::FollowFailed(ReplicaStreamFailed {
                replica: "checkout#3".into(),
                url: "http://10.0.0.9:8080".into(),
                error: "not connected within 20s".into(),
            })),
            r#"{"error":"not connected within 20s","replica":"checkout#3","url":"http://10.0.0.9:8080"}"#,
        ),
        (
            agent(AgentEvent::Applied {
                id: "experiment-1-run-2".into(),
                fault: error_503(),
                lease_ms: 30_000,
                renewed: false,
                at_ms: 1_732_896_000_123,
                seq: 3,
            }),
            r#"{"at_ms":1732896000123,"event":"applied","fault":{"kind":"error","lease":"30s","match":{"method":"POST","path_prefix":"/charge"},"rate":0.5,"status":503},"id":"experiment-1-run-2","lease_ms":30000,"renewed":false,"seq":3}"#,
        ),
        (
            agent(AgentEvent::Applied {
                id: "experiment-1-run-2".into(),
                fault: error_503(),
                lease_ms: 30_000,
                renewed: true,
                at_ms: 1_732_896_000_123,
                seq: 4,
            }),
            r#"{"at_ms":1732896000123,"event":"applied","fault":{"kind":"error","lease":"30s","match":{"method":"POST","path_prefix":"/charge"},"rate":0.5,"status":503},"id":"experiment-1-run-2","lease_ms":30000,"renewed":true,"seq":4}"#,
        ),
        (
            agent(AgentEvent::Expired {
                id: "f1".into(),
                at_ms: 30,
                seq: 3,
            }),
            r#"{"at_ms":30,"event":"expired","id":"f1","seq":3}"#,
        ),
        (
            agent(
                serde_json::from_str(
                    r#"{"event":"removed","id":"f1","reason":"deleted","at_ms":30,"seq":3}"#,
                )
                .unwrap(),
            ),
            r#"{"at_ms":30,"event":"removed","id":"f1","reason":"deleted","seq":3}"#,
        ),
        (
            agent(AgentEvent::Lagged { missed: 3 }),
            r#"{"event":"lagged","missed":3}"#,
        ),
        (
            RunEvent::Agent(AgentReport::StreamUnavailable {
                error: "ws://127.0.0.1:9/_agent/stream: Connection refused".into(),
            }),
            r#"{"error":"ws://127.0.0.1:9/_agent/stream: Connection refused"}"#,
        ),
        (
            RunEvent::BreakerHold(BreakerHoldFailure::RenewFailed {
                service: "http://127.0.0.1:8080".into(),
                error: "POST http://127.0.0.1:8080/_admin/breakers/renew: connection refused"
                    .into(),
            }),
            r#"{"error":"POST http://127.0.0.1:8080/_admin/breakers/renew: connection refused","service":"http://127.0.0.1:8080"}"#,
        ),
        (
            RunEvent::BreakerHold(BreakerHoldFailure::RestoreFailed {
                service: "http://127.0.0.1:8080".into(),
                error: "refused".into(),
            }),
            r#"{"error":"refused","service":"http://127.0.0.1:8080"}"#,
        ),
        (
            RunEvent::BreakerHold(BreakerHoldFailure::JoinFailed {
                service: "http://10.0.0.9:8080".into(),
                error: "connection refused".into(),
            }),
            r#"{"error":"connection refused","service":"http://10.0.0.9:8080"}"#,
        ),
    ]
}

/// Every transition detail shape, with the text the untyped record stored for it.
fn transition_cases() -> Vec<(TransitionRecord, &'static str)> {
    let transition = |from, to, reason, detail| TransitionRecord {
        at_ms: 1_500,
        service: "checkout".into(),
        breaker: "checkout->payment".into(),
        from,
        to,
        reason,
        detail,
        seq: 1,
        shadow: false,
        source: None,
    };
    vec![
        (
            transition(
                State::Closed,
                State::Open,
                Reason::FailureRate,
                TransitionDetail {
                    failures: Some(5),
                    calls: Some(10),
                    rate: Some(0.5),
                    threshold: Some(0.5),
                    window_ms: Some(10_000),
                    trips: Some(1),
                    open_ms: Some(30_000),
                    ..TransitionDetail::default()
                },
            ),
            r#"{"calls":10,"failures":5,"open_ms":30000,"rate":0.5,"threshold":0.5,"trips":1,"window_ms":10000}"#,
        ),
        (
            transition(
                State::HalfOpen,
                State::Closed,
                Reason::ConfigChanged,
                TransitionDetail {
                    mode: Some(Mode::Shadow),
                    reset: Some(true),
                    ..TransitionDetail::default()
                },
            ),
            r#"{"mode":"shadow","reset":true}"#,
        ),
        (
            transition(
                State::Closed,
                State::HalfOpen,
                Reason::Observed,
                TransitionDetail::default(),
            ),
            "{}",
        ),
    ]
}

async fn stored_texts(store: &Store, run: RunId, sql: &str) -> Vec<(String, String)> {
    sqlx::query_as(sql)
        .bind(run.0)
        .fetch_all(store.pool())
        .await
        .unwrap()
}

fn corrupt_column(error: StoreError) -> (&'static str, String) {
    match error {
        StoreError::Corrupt { column, value } => (column, value),
        other => panic!("expected Corrupt, got {other}"),
    }
}

#[tokio::test]
async fn every_run_event_is_stored_as_the_untyped_record_wrote_it_and_read_back_as_itself() {
    let (stores, _file) = stores().await;
    for store in &stores {
        let run = started_run(store, 0).await;
        let mut finished = record(Status::Finished, Duration::ZERO);
        let cases = cases();
        finished.events = cases
            .iter()
            .enumerate()
            .map(|(i, (event, _))| RunEventRecord {
                at_ms: 1_000 + i as i64,
                fault_id: "run-1".into(),
                event: event.clone(),
            })
            .collect();
        let (transitions, transition_texts): (Vec<_>, Vec<_>) =
            transition_cases().into_iter().unzip();
        finished.transitions = transitions;
        store.finish_run(run, &finished).await.unwrap();

        let stored = stored_texts(
            store,
            run,
            "SELECT event, detail_json FROM fault_events WHERE run_id = $1 ORDER BY ordinal",
        )
        .await;
        let written: Vec<(String, String)> = cases
            .iter()
            .map(|(event, text)| (event.kind().as_str().to_owned(), (*text).to_owned()))
            .collect();
        assert_eq!(stored, written);
        // Every kind has a case.
        for kind in RunEventKind::ALL {
            assert!(
                stored.iter().any(|(name, _)| name == kind.as_str()),
                "{kind}"
            );
        }
        assert_eq!(store.run_events(run).await.unwrap(), finished.events);

        let stored = stored_texts(
            store,
            run,
            "SELECT reason, detail_json FROM transitions WHERE run_id = $1 ORDER BY ordinal",
        )
        .await;
        let written: Vec<(String, String)> = finished
            .transitions
            .iter()
            .zip(&transition_texts)
            .map(|(t, text)| (t.reason.as_str().to_owned(), (*text).to_owned()))
            .collect();
        assert_eq!(stored, written);
        let states: Vec<(String, String)> = stored_texts(
            store,
            run,
            "SELECT from_state, to_state FROM transitions WHERE run_id = $1 ORDER BY ordinal",
        )
        .await;
        assert_eq!(
            states,
            [
                ("closed", "open"),
                ("half_open", "closed"),
                ("closed", "half_open")
            ]
            .map(|(from, to)| (from.to_owned(), to.to_owned()))
        );
        assert_eq!(store.transitions(run).await.unwrap(), finished.transitions);
    }
}

/// A name no version wrote, or a detail that is not its name's shape (another event's, a field too many), is
/// an error naming the column with the stored text — never a guess.
#[tokio::test]
async fn a_stored_event_not_of_its_names_shape_is_corrupt() {
    let (stores, _file) = stores().await;
    for store in &stores {
        let run = started_run(store, 0).await;
        store
            .finish_run(run, &record(Status::Finished, Duration::ZERO))
            .await
            .unwrap();
        let damaged = [
            ("event = 'exploded'", ("fault_events.event", "exploded")),
            (
                "event = 'agent:renewed', detail_json = '{\"event\":\"lagged\",\"missed\":3}'",
                (
                    "fault_events.detail_json",
                    "{\"event\":\"lagged\",\"missed\":3}",
                ),
            ),
            (
                "event = 'removed', detail_json = '{\"period\":1,\"why\":\"x\"}'",
                ("fault_events.detail_json", "{\"period\":1,\"why\":\"x\"}"),
            ),
            (
                "event = 'renew_failed', detail_json = '{}'",
                ("fault_events.detail_json", "{}"),
            ),
            (
                "event = 'applied', detail_json = '{\"kind\":\"error\",\"status\":200,\"rate\":1.0}'",
                (
                    "fault_events.detail_json",
                    "{\"kind\":\"error\",\"status\":200,\"rate\":1.0}",
                ),
            ),
        ];
        for (set, expected) in damaged {
            let sql = format!("UPDATE fault_events SET {set} WHERE run_id = $1 AND ordinal = 0");
            sqlx::query(&sql)
                .bind(run.0)
                .execute(store.pool())
                .await
                .unwrap();
            let (column, value) = corrupt_column(store.run_events(run).await.unwrap_err());
            assert_eq!((column, value.as_str()), expected, "{set}");
        }

        let damaged = [
            ("from_state = 'ajar'", ("transitions.from_state", "ajar")),
            ("to_state = 'Open'", ("transitions.to_state", "Open")),
            ("reason = 'bad_luck'", ("transitions.reason", "bad_luck")),
            (
                "detail_json = '{\"failures\":5,\"luck\":0}'",
                ("transitions.detail_json", "{\"failures\":5,\"luck\":0}"),
            ),
        ];
        for (set, expected) in damaged {
            let healthy =
                "from_state = 'closed', to_state = 'open', reason = 'observed', detail_json = '{}'";
            for sql in [healthy, set] {
                sqlx::query(&format!(
                    "UPDATE transitions SET {sql} WHERE run_id = $1 AND ordinal = 0"
                ))
                .bind(run.0)
                .execute(store.pool())
                .await
                .unwrap();
            }
            let (column, value) = corrupt_column(store.transitions(run).await.unwrap_err());
            assert_eq!((column, value.as_str()), expected, "{set}");
        }
    }
}
