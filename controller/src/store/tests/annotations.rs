//! Annotations: round trip with their experiment and run, bad text refused naming the field, kept across a
//! reopen.

use super::*;

#[tokio::test]
async fn annotations_round_trip_with_their_experiment_and_run() {
    let (stores, _file) = stores().await;
    for store in &stores {
        let (spec, experiment) = new_experiment(store).await;
        // Later than anything other tests write, and unique per experiment even in a reused database.
        let base = 1_000_000_000_000_000 + experiment.0 * 100;
        store
            .set_experiment_status(experiment, Status::Running, base, None)
            .await
            .unwrap();
        assert_eq!(store.running().await.unwrap(), Some((experiment, None)));
        let run = store
            .start_run(
                experiment,
                &spec.plan()[0],
                Duration::ZERO,
                Duration::from_secs(10),
                base,
            )
            .await
            .unwrap();
        assert_eq!(
            store.running().await.unwrap(),
            Some((experiment, Some(run)))
        );

        let during = store
            .insert_annotation(&NewAnnotation {
                at_ms: base + 2,
                text: "  18:02 cut payment DB \n".into(),
                author: Some(" alice ".into()),
                experiment_id: Some(experiment),
                run_id: Some(run),
            })
            .await
            .unwrap();
        assert_eq!(during.text, "18:02 cut payment DB", "trimmed");
        assert_eq!(during.author.as_deref(), Some("alice"));
        let earlier = store
            .insert_annotation(&NewAnnotation {
                at_ms: base + 1,
                text: "paged the payment team".into(),
                author: Some("   ".into()),
                experiment_id: Some(experiment),
                run_id: None,
            })
            .await
            .unwrap();
        assert_eq!(earlier.author, None, "a blank author is none");
        let unattached = store
            .insert_annotation(&NewAnnotation {
                at_ms: base + 3,
                text: "18:05 rollback".into(),
                author: None,
                experiment_id: None,
                run_id: None,
            })
            .await
            .unwrap();
        assert!(during.id < earlier.id && earlier.id < unattached.id);

        // By time, not by insertion order; the experiment's list leaves the unattached one out.
        assert_eq!(
            store.annotations(experiment).await.unwrap(),
            vec![earlier.clone(), during.clone()]
        );
        assert_eq!(
            store.latest_annotations(2).await.unwrap(),
            vec![during.clone(), unattached.clone()]
        );
        assert!(store.latest_annotations(0).await.unwrap().is_empty());

        store
            .set_experiment_status(experiment, Status::Finished, base + 10, None)
            .await
            .unwrap();
        assert_ne!(
            store.running().await.unwrap().map(|(id, _)| id),
            Some(experiment)
        );
    }
}

#[tokio::test]
async fn bad_annotation_text_is_refused_naming_the_field_and_nothing_is_stored() {
    let (stores, _file) = stores().await;
    for store in &stores {
        let (_, experiment) = new_experiment(store).await;
        let long = "x".repeat(MAX_ANNOTATION_CHARS + 1);
        for text in ["", "  \n\t ", long.as_str()] {
            let error = store
                .insert_annotation(&NewAnnotation {
                    at_ms: 5,
                    text: text.to_owned(),
                    author: None,
                    experiment_id: Some(experiment),
                    run_id: None,
                })
                .await
                .unwrap_err();
            assert!(
                matches!(error, StoreError::Invalid { field: "text", .. }),
                "{error}"
            );
            assert!(error.to_string().starts_with("text: "), "{error}");
        }
        let error = store
            .insert_annotation(&NewAnnotation {
                at_ms: 5,
                text: "fine".into(),
                author: Some("a".repeat(MAX_AUTHOR_CHARS + 1)),
                experiment_id: Some(experiment),
                run_id: None,
            })
            .await
            .unwrap_err();
        assert!(error.to_string().starts_with("author: "), "{error}");
        assert!(store.annotations(experiment).await.unwrap().is_empty());

        // A run must be one of the annotation's experiment.
        let (spec, other) = new_experiment(store).await;
        let others_run = start_run_of(store, &spec, other, 0, 1).await;
        for experiment_id in [Some(experiment), None] {
            let error = store
                .insert_annotation(&NewAnnotation {
                    at_ms: 5,
                    text: "fine".into(),
                    author: None,
                    experiment_id,
                    run_id: Some(others_run),
                })
                .await
                .unwrap_err();
            assert!(error.to_string().starts_with("run_id: "), "{error}");
        }
        assert!(store.annotations(experiment).await.unwrap().is_empty());
        assert!(store.annotations(other).await.unwrap().is_empty());

        // The limit counts characters, not bytes: 2,000 multi-byte characters are accepted.
        let wide = "é".repeat(MAX_ANNOTATION_CHARS);
        let stored = store
            .insert_annotation(&NewAnnotation {
                at_ms: 5,
                text: wide.clone(),
                author: None,
                experiment_id: Some(experiment),
                run_id: None,
            })
            .await
            .unwrap();
        assert_eq!(store.annotations(experiment).await.unwrap(), vec![stored]);
    }
}

#[tokio::test]
async fn annotations_survive_reopening_the_database() {
    let file = TempStore::new("store");
    let location = file.location();
    let store = Store::open(&location).await.unwrap();
    let (_, experiment) = new_experiment(&store).await;
    let stored = store
        .insert_annotation(&NewAnnotation {
            at_ms: 42,
            text: "18:02 cut payment DB".into(),
            author: None,
            experiment_id: Some(experiment),
            run_id: None,
        })
        .await
        .unwrap();
    store.close().await;
    let store = Store::open(&location).await.unwrap();
    assert_eq!(
        store.annotations(experiment).await.unwrap(),
        vec![stored.clone()]
    );
    assert_eq!(store.latest_annotations(10).await.unwrap(), vec![stored]);
    store.close().await;
}
