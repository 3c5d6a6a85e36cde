//! Annotations over the embedded operations and a SQLite file: tied to the run, seen across a restart, bad
//! listing queries refused naming the field.

use super::*;
use controller::test_support::{self, TempStore};

#[tokio::test]
async fn annotations_are_stored_tied_to_the_run_and_seen_by_a_new_app_over_the_same_database() {
    let database = TempStore::new("web-annotations");
    let (state, store) = stored_app(&database.location()).await;
    let created = send(&state, bearer("/api/experiments", RUNNABLE_SPEC)).await;
    assert_eq!(created.status(), StatusCode::CREATED);
    let experiment = json(created).await["id"].as_i64().expect("id");
    // What the runner records while it runs (nothing here can run it for real).
    let spec = test_support::spec(RUNNABLE_SPEC);
    store
        .set_experiment_status(ExperimentId(experiment), Status::Running, 1_000, None)
        .await
        .expect("running");
    let run = store
        .start_run(
            ExperimentId(experiment),
            &spec.plan()[0],
            std::time::Duration::ZERO,
            std::time::Duration::from_secs(2),
            1_000,
        )
        .await
        .expect("run");

    // The game day form, with the login cookie and its CSRF token.
    let (cookie, csrf) = log_in(&state).await;
    let note = format!("csrf={csrf}&text=18%3A02+cut+payment+DB&author=alice&next=/gameday");
    let response = send(&state, form("/ui/annotate", &note, Some(&cookie))).await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    // The API, with the token.
    let response = send(
        &state,
        bearer("/api/annotations", "{\"text\":\" 18:05 rollback \"}"),
    )
    .await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let stored = json(response).await;
    assert_eq!(stored["text"], "18:05 rollback");
    assert_eq!(stored["experiment_id"], experiment);
    assert_eq!(stored["run_id"], run.0);

    // Refused input names the field and stores nothing.
    for (body, field) in [
        ("{\"text\":\"   \"}".to_owned(), "text: empty"),
        (
            format!("{{\"text\":\"{}\"}}", "x".repeat(2_001)),
            "text: longer than 2000",
        ),
        ("{\"text\":\"ok\",\"experiment\":\"x\"}".to_owned(), "body:"),
    ] {
        let response = send(&state, bearer("/api/annotations", &body)).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{field}");
        assert!(
            json(response).await["error"]
                .as_str()
                .expect("message")
                .starts_with(field)
        );
    }
    let response = send(
        &state,
        bearer("/api/annotations", "{\"text\":\"ok\",\"experiment\":999}"),
    )
    .await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    // A note about another experiment is not tied to the running run.
    let created = send(&state, bearer("/api/experiments", RUNNABLE_SPEC)).await;
    let other = json(created).await["id"].as_i64().expect("id");
    let response = send(
        &state,
        bearer(
            "/api/annotations",
            &format!("{{\"text\":\"about the other one\",\"experiment\":{other}}}"),
        ),
    )
    .await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let stored = json(response).await;
    assert_eq!(
        (&stored["experiment_id"], &stored["run_id"]),
        (&serde_json::json!(other), &serde_json::Value::Null)
    );

    state.hub.flush();
    let live: Vec<String> = state
        .hub
        .state()
        .annotations
        .iter()
        .map(|note| note.text.clone())
        .collect();
    assert_eq!(
        live,
        [
            "18:02 cut payment DB",
            "18:05 rollback",
            "about the other one"
        ]
    );
    drop(state);
    store.close().await;

    // A restarted dashboard over the same database.
    let (state, store) = stored_app(&database.location()).await;
    let listed = json(
        send(
            &state,
            get(&format!("/api/annotations?experiment={experiment}")),
        )
        .await,
    )
    .await;
    let listed = listed.as_array().expect("a list");
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert_eq!(listed[0]["text"], "18:02 cut payment DB");
    assert_eq!(listed[0]["author"], "alice");
    assert_eq!(listed[0]["run_id"], run.0);
    assert_eq!(listed[1]["author"], serde_json::Value::Null);
    let latest = json(send(&state, get("/api/annotations?limit=2")).await).await;
    let latest: Vec<&str> = latest
        .as_array()
        .expect("a list")
        .iter()
        .map(|note| note["text"].as_str().expect("text"))
        .collect();
    assert_eq!(latest, ["18:05 rollback", "about the other one"]);
    // The live snapshot starts with them.
    let subscription = state.hub.subscribe();
    let snapshot = subscription.snapshot.text.as_str();
    assert!(snapshot.contains("18:02 cut payment DB"), "{snapshot}");
    assert!(snapshot.contains("18:05 rollback"), "{snapshot}");
    drop(subscription);
    // The game day page lists them, newest first.
    let page = text(send(&state, get("/gameday")).await).await;
    let first = page.find("about the other one").expect("listed");
    assert!(first < page.find("18:05 rollback").expect("listed"));
    let first = page.find("18:05 rollback").expect("listed");
    let second = page.find("18:02 cut payment DB").expect("listed");
    assert!(first < second);

    // The results export and page carry them.
    let export = json(
        send(
            &state,
            get(&format!("/api/experiments/{experiment}/results.json")),
        )
        .await,
    )
    .await;
    let exported: Vec<&str> = export["annotations"]
        .as_array()
        .expect("annotations in the export")
        .iter()
        .map(|note| note["text"].as_str().expect("text"))
        .collect();
    assert_eq!(exported, ["18:02 cut payment DB", "18:05 rollback"]);
    let results = json(
        send(
            &state,
            get(&format!("/api/experiments/{experiment}/results")),
        )
        .await,
    )
    .await;
    assert_eq!(results["annotations"].as_array().map(Vec::len), Some(2));
    let page = text(send(&state, get(&format!("/experiments/{experiment}/results"))).await).await;
    assert!(page.contains("id=\"annotations\""));
    assert!(page.contains("18:02 cut payment DB"));
    assert!(page.contains("— alice"));
    assert!(page.contains(&format!("run {}", run.0)));
    drop(state);
    store.close().await;
}

#[tokio::test]
async fn annotation_listings_refuse_bad_queries_naming_the_field() {
    let (state, _) = app();
    for (uri, field) in [
        ("/api/annotations?experiment=abc", "experiment:"),
        ("/api/annotations?limit=0", "limit:"),
        ("/api/annotations?limit=100000", "limit:"),
    ] {
        let response = send(&state, get(uri)).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{uri}");
        assert!(
            json(response).await["error"]
                .as_str()
                .expect("message")
                .starts_with(field),
            "{uri}"
        );
    }
    assert_eq!(
        send(&state, get("/api/annotations?experiment=7"))
            .await
            .status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        json(send(&state, get("/api/annotations")).await).await,
        serde_json::json!([])
    );
}
