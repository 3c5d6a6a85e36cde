//! The load workers panel: `GET /api/workers` says nothing ran, then in-process, then the pool's workers as last
//! published (a lost one marked); the `/ws` snapshot carries the same panel; the live page has the panel's card.

use controller::workers::{WorkerStatus, WorkersView};
use http::StatusCode;

use super::{app, get, json, send, text};
use crate::hub::{LiveEvent, LoadWorkers};

fn status(name: &str, users: u32, lost_from_second: Option<u64>) -> WorkerStatus {
    WorkerStatus {
        name: name.into(),
        capacity: 500,
        users,
        requests_per_second: if lost_from_second.is_some() { 0 } else { 42 },
        lag_seconds: 1,
        lost_from_second,
    }
}

#[tokio::test]
async fn the_api_and_the_snapshot_show_the_workers_panel_as_last_published() {
    let (state, _) = app();
    let body = json(send(&state, get("/api/workers")).await).await;
    assert_eq!(body["load"], "none");
    assert_eq!(body["at_ms"], serde_json::Value::Null);

    state.hub.publish(LiveEvent::Workers(LoadWorkers {
        at_ms: 1_000,
        experiment_id: 1,
        pool: None,
    }));
    state.hub.flush();
    let body = json(send(&state, get("/api/workers")).await).await;
    assert_eq!(
        (&body["load"], &body["experiment_id"], &body["pool"]),
        (
            &serde_json::json!("in-process"),
            &serde_json::json!(1),
            &serde_json::Value::Null
        )
    );

    state.hub.publish(LiveEvent::Workers(LoadWorkers {
        at_ms: 2_000,
        experiment_id: 2,
        pool: Some(WorkersView {
            url: "ws://127.0.0.1:7070/workers".into(),
            wanted: 2,
            connected: 1,
            workers: vec![status("w1", 3, None), status("w2", 3, Some(4))],
        }),
    }));
    state.hub.flush();
    let response = send(&state, get("/api/workers")).await;
    assert_eq!(response.status(), StatusCode::OK);
    let body = json(response).await;
    assert_eq!(body["load"], "workers");
    assert_eq!(body["at_ms"], 2_000);
    let pool = &body["pool"];
    assert_eq!(
        (&pool["wanted"], &pool["connected"]),
        (&2.into(), &1.into())
    );
    assert_eq!(pool["workers"][0]["name"], "w1");
    assert_eq!(pool["workers"][0]["requests_per_second"], 42);
    assert_eq!(
        pool["workers"][0]["lost_from_second"],
        serde_json::Value::Null
    );
    assert_eq!(pool["workers"][1]["lost_from_second"], 4);

    // A reload's first frame carries the same panel.
    let snapshot: serde_json::Value =
        serde_json::from_str(state.hub.subscribe().snapshot.text.as_str()).unwrap();
    assert_eq!(snapshot["state"]["workers"]["pool"], body["pool"]);
    assert_eq!(snapshot["state"]["workers"]["experiment_id"], 2);
}

#[tokio::test]
async fn the_live_page_has_the_load_workers_card() {
    let (state, _) = app();
    let response = send(&state, get("/live")).await;
    assert_eq!(response.status(), StatusCode::OK);
    let page = text(response).await;
    let card = page
        .split("id=\"workers-card\"")
        .nth(1)
        .expect("the workers card")
        .split("</section>")
        .next()
        .unwrap();
    assert!(card.contains("<h2>Load workers</h2>"), "{card}");
    for header in [
        "worker",
        "capacity",
        "users",
        "requests/s",
        "lag (s)",
        "state",
    ] {
        assert!(
            card.contains(&format!(">{header}</th>")),
            "{header}: {card}"
        );
    }
    assert!(card.contains("id=\"workers-summary\""), "{card}");
    // Hidden until an experiment says where its users run.
    assert!(page.contains("id=\"workers-card\" hidden"), "{page}");
}
