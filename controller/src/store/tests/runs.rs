//! Runs: what a finished, aborted or failed run stores, written once and in chunks, nothing left behind by a
//! failing write, interrupted runs retried, transitions written while a run goes.

use super::*;

#[tokio::test]
async fn a_finished_run_stores_everything_it_saw() {
    let (stores, _file) = stores().await;
    for store in &stores {
        let (spec, experiment) = new_experiment(store).await;
        let planned = spec.plan()[3];
        let run = store
            .start_run(
                experiment,
                &planned,
                Duration::from_secs(2),
                Duration::from_secs(10),
                1_100,
            )
            .await
            .unwrap();
        let runs = store.runs(experiment).await.unwrap();
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].status, Status::Running);
        assert_eq!(runs[0].outcomes, None);
        assert_eq!(runs[0].plan_index, 3);
        assert_eq!(runs[0].condition_label, planned.condition.label());
        assert_eq!(runs[0].fault_rate, planned.condition.fault_rate);
        assert!(
            store.samples(run).await.unwrap().is_empty(),
            "nothing before the end"
        );

        let record = record(Status::Finished, Duration::from_secs(2));
        store.finish_run(run, &record).await.unwrap();

        let row = &store.runs(experiment).await.unwrap()[0];
        assert_eq!(row.status, Status::Finished);
        assert_eq!(row.finished_at_ms, Some(2_000));
        assert_eq!(row.outcomes, Some(record.outcomes()));
        assert_eq!(row.energy, Some((40.0, EnergySource::Modelled)));
        assert_eq!(row.warmup_ms, 2_000);

        let samples = store.samples(run).await.unwrap();
        assert_eq!(samples.len(), 4);
        assert!(samples[0].warmup && samples[1].warmup && !samples[2].warmup);
        assert_eq!(samples[0].outcomes, record.seconds[0].outcomes());
        assert_eq!(samples[1].collector, record.collector[0]);
        assert_eq!(samples[2].collector.cart_mean_items, None);

        let seconds = store.endpoint_seconds(run).await.unwrap();
        assert_eq!(seconds.len(), 8, "two endpoints × four seconds");
        let product = seconds
            .iter()
            .find(|s| s.second == 0 && s.endpoint == "GET /product/{id}")
            .unwrap();
        let histogram = deserialize_histogram(&product.histogram_v2).unwrap();
        assert_eq!(histogram.len(), 10);
        assert_eq!(product.outcomes.total(), 10);
        assert_eq!(product.latency.max_us as u64, histogram.max());
        // Second 0 of GET /product: ok after 1, 2, 5, 6, 9, 10 ms, failed or rejected after 3, 4, 7, 8 ms.
        let near = |value: Option<i64>, us: i64| value.is_some_and(|v| (v - us).abs() <= us / 500);
        assert!(near(product.p95_ok_us, 10_000), "{product:?}");
        assert!(near(product.p95_failed_us, 8_000), "{product:?}");
        let checkout = seconds
            .iter()
            .find(|s| s.second == 0 && s.endpoint == endpoint::NAMES[endpoint::CHECKOUT])
            .unwrap();
        assert_eq!(checkout.p95_failed_us, None, "every checkout succeeded");

        let histograms = store.endpoint_histograms(run).await.unwrap();
        assert_eq!(histograms.len(), endpoint::NAMES.len());
        let product = histograms
            .iter()
            .find(|h| h.endpoint == "GET /product/{id}")
            .unwrap();
        assert_eq!(product.outcomes.total(), 20, "measured part only");
        assert_eq!(product.outcomes.ok, 10);
        let all = deserialize_histogram(&product.histogram_v2).unwrap();
        let ok = deserialize_histogram(&product.histogram_ok_v2).unwrap();
        assert_eq!((all.len(), ok.len()), (20, 10));
        assert_eq!(product.latency.p99_us as u64, all.value_at_quantile(0.99));

        assert_eq!(store.transitions(run).await.unwrap(), record.transitions);
        assert_eq!(store.run_events(run).await.unwrap(), record.events);
        assert_eq!(
            store.finished_plan_indices(experiment).await.unwrap(),
            vec![3]
        );
    }
}

#[tokio::test]
async fn an_aborted_run_keeps_its_reason() {
    let (stores, _file) = stores().await;
    for store in &stores {
        let (spec, experiment) = new_experiment(store).await;
        let run = start_run_of(store, &spec, experiment, 0, 1).await;
        store
            .finish_run(run, &record(Status::Aborted, Duration::ZERO))
            .await
            .unwrap();
        let row = &store.runs(experiment).await.unwrap()[0];
        assert_eq!(row.status, Status::Aborted);
        assert_eq!(
            row.abort_reason.as_deref(),
            Some("availability below 0.2 for 10s")
        );
        assert!(
            store
                .finished_plan_indices(experiment)
                .await
                .unwrap()
                .is_empty()
        );
        let error = store
            .finish_run(run, &record(Status::Running, Duration::ZERO))
            .await
            .unwrap_err();
        assert!(matches!(error, StoreError::NotAnEnd(..)), "{error}");
    }
}

#[tokio::test]
async fn a_run_is_written_once() {
    let (stores, _file) = stores().await;
    for store in &stores {
        let (spec, experiment) = new_experiment(store).await;
        let run = start_run_of(store, &spec, experiment, 1, 1).await;
        let record = record(Status::Finished, Duration::ZERO);
        store.finish_run(run, &record).await.unwrap();
        let error = store.finish_run(run, &record).await.unwrap_err();
        assert!(
            matches!(error, StoreError::RunNotRunning(id) if id == run),
            "{error}"
        );
        assert_eq!(
            store.samples(run).await.unwrap().len(),
            record.seconds.len()
        );
    }
}

#[tokio::test]
async fn interrupted_runs_get_no_rows_and_are_retried() {
    let (stores, _file) = stores().await;
    for store in &stores {
        let (spec, experiment) = new_experiment(store).await;
        let planned = spec.plan()[2];
        let first = store
            .start_run(
                experiment,
                &planned,
                Duration::ZERO,
                Duration::from_secs(10),
                1,
            )
            .await
            .unwrap();
        // The controller died; a new one marks what was running.
        assert_eq!(store.mark_interrupted(experiment, 50).await.unwrap(), 1);
        assert_eq!(store.mark_interrupted(experiment, 60).await.unwrap(), 0);
        let record = record(Status::Finished, Duration::ZERO);
        assert!(matches!(
            store.finish_run(first, &record).await,
            Err(StoreError::RunNotRunning(_))
        ));
        assert!(store.samples(first).await.unwrap().is_empty());

        // The retry of the same plan position finishes; the interrupted attempt stays as history.
        let retry = store
            .start_run(
                experiment,
                &planned,
                Duration::ZERO,
                Duration::from_secs(10),
                70,
            )
            .await
            .unwrap();
        store.finish_run(retry, &record).await.unwrap();
        let runs = store.runs(experiment).await.unwrap();
        let statuses: Vec<Status> = runs.iter().map(|r| r.status).collect();
        assert_eq!(statuses, vec![Status::Interrupted, Status::Finished]);
        assert_eq!(
            store.finished_plan_indices(experiment).await.unwrap(),
            vec![2]
        );
    }
}

#[tokio::test]
async fn a_plan_position_cannot_finish_twice() {
    let (stores, _file) = stores().await;
    for store in &stores {
        let (spec, experiment) = new_experiment(store).await;
        let planned = spec.plan()[0];
        let record = record(Status::Finished, Duration::ZERO);
        let first = store
            .start_run(
                experiment,
                &planned,
                Duration::ZERO,
                Duration::from_secs(10),
                1,
            )
            .await
            .unwrap();
        let second = store
            .start_run(
                experiment,
                &planned,
                Duration::ZERO,
                Duration::from_secs(10),
                2,
            )
            .await
            .unwrap();
        store.finish_run(first, &record).await.unwrap();
        let error = store.finish_run(second, &record).await.unwrap_err();
        assert!(matches!(error, StoreError::Database(_)), "{error}");
        // The failed transaction left nothing behind and the run still counts as running.
        assert!(store.samples(second).await.unwrap().is_empty());
        let runs = store.runs(experiment).await.unwrap();
        assert_eq!(runs[1].status, Status::Running);
    }
}

#[tokio::test]
async fn a_failing_write_leaves_nothing_behind() {
    let (stores, _file) = stores().await;
    for store in &stores {
        let (spec, experiment) = new_experiment(store).await;
        let run = start_run_of(store, &spec, experiment, 0, 1).await;
        let mut broken = record(Status::Finished, Duration::ZERO);
        // The same second twice violates the samples' primary key after other rows were written.
        let duplicate = broken.seconds[0].clone();
        broken.seconds.push(duplicate);
        assert!(store.finish_run(run, &broken).await.is_err());
        assert!(store.samples(run).await.unwrap().is_empty());
        assert!(store.endpoint_histograms(run).await.unwrap().is_empty());
        assert_eq!(
            store.runs(experiment).await.unwrap()[0].status,
            Status::Running
        );

        // The run can still be written properly.
        store
            .finish_run(run, &record(Status::Finished, Duration::ZERO))
            .await
            .unwrap();
    }
}

/// Transitions written while the run goes come first, in the order written; the run's end writes the rest after
/// them; a run that is not `running` takes none (an interrupted one keeps what it had).
#[tokio::test]
async fn transitions_written_while_a_run_goes_are_followed_by_the_rest() {
    let (stores, _file) = stores().await;
    for store in &stores {
        let run = started_run(store, 0).await;
        let mut record = record(Status::Finished, Duration::from_secs(2));
        let at = |seq: i64| TransitionRecord {
            seq,
            at_ms: 1_000 + seq,
            ..record.transitions[0].clone()
        };
        let early: Vec<TransitionRecord> = (0..(ROWS_PER_INSERT as i64 + 5)).map(at).collect();
        store.append_transitions(run, &early[..3]).await.unwrap();
        store.append_transitions(run, &early[3..]).await.unwrap();
        record.transitions = vec![at(9_000), at(9_001)];
        store.finish_run(run, &record).await.unwrap();
        let seqs: Vec<i64> = (store.transitions(run).await.unwrap().iter())
            .map(|t| t.seq)
            .collect();
        let expected: Vec<i64> = (0..(ROWS_PER_INSERT as i64 + 5))
            .chain([9_000, 9_001])
            .collect();
        assert_eq!(seqs, expected);
        assert!(matches!(
            store.append_transitions(run, &early[..1]).await,
            Err(StoreError::RunNotRunning(_))
        ));

        let (spec, experiment) = new_experiment(store).await;
        let interrupted = start_run_of(store, &spec, experiment, 1, 1).await;
        store
            .append_transitions(interrupted, &early[..2])
            .await
            .unwrap();
        assert_eq!(store.mark_interrupted(experiment, 5).await.unwrap(), 1);
        assert_eq!(store.transitions(interrupted).await.unwrap().len(), 2);
    }
}

#[tokio::test]
async fn long_runs_are_written_in_chunks() {
    let (stores, _file) = stores().await;
    for store in &stores {
        let (spec, experiment) = new_experiment(store).await;
        let run = store
            .start_run(
                experiment,
                &spec.plan()[0],
                Duration::ZERO,
                Duration::from_secs(600),
                1,
            )
            .await
            .unwrap();
        let mut recorder = Recorder::new(1, Duration::ZERO, None);
        for second in 0..(ROWS_PER_INSERT as u64 * 2 + 7) {
            recorder.record(
                0,
                Duration::from_secs(second),
                RequestOutcome::Ok,
                Duration::from_millis(2),
                Duration::ZERO,
            );
        }
        let (seconds, totals) = recorder.finish(ROWS_PER_INSERT as u64 * 2 + 7);
        let mut long = record(Status::Finished, Duration::ZERO);
        long.endpoint_names = vec!["GET /x".into()];
        long.seconds = seconds;
        long.endpoints = vec![EndpointReport {
            name: "GET /x".into(),
            stats: totals.into_iter().next().unwrap(),
        }];
        long.transitions = (0..(ROWS_PER_INSERT + 3))
            .map(|i| TransitionRecord {
                seq: i as i64,
                ..long.transitions[0].clone()
            })
            .collect();
        store.finish_run(run, &long).await.unwrap();
        assert_eq!(
            store.samples(run).await.unwrap().len(),
            ROWS_PER_INSERT * 2 + 7
        );
        assert_eq!(
            store.endpoint_seconds(run).await.unwrap().len(),
            ROWS_PER_INSERT * 2 + 7
        );
        let transitions = store.transitions(run).await.unwrap();
        assert_eq!(transitions.len(), ROWS_PER_INSERT + 3);
        assert_eq!(transitions.last().unwrap().seq, ROWS_PER_INSERT as i64 + 2);
    }
}

/// A failed run (a panic, its load generator's own failures) is stored as `failed`, reads back as failed with
/// its reason as given and load-generator count, on both engines, and is no verdict: a resume runs its plan
/// position again.
#[tokio::test]
async fn failed_runs_read_back_as_failed_with_their_load_errors() {
    let (stores, _file) = stores().await;
    for store in &stores {
        let (spec, experiment) = new_experiment(store).await;
        let run = start_run_of(store, &spec, experiment, 0, 1).await;
        let mut failed = record(Status::Failed, Duration::ZERO);
        failed.abort_reason =
            Some("load generator: 7 request(s) failed in the driver itself".into());
        failed.load_errors = 7;
        store.finish_run(run, &failed).await.unwrap();
        let row = &store.runs(experiment).await.unwrap()[0];
        assert_eq!(row.status, Status::Failed);
        assert_eq!(
            row.abort_reason.as_deref(),
            Some("load generator: 7 request(s) failed in the driver itself")
        );
        let stored: String = sqlx::query_scalar("SELECT status FROM runs WHERE id = $1")
            .bind(run.0)
            .fetch_one(store.pool())
            .await
            .unwrap();
        assert_eq!(
            stored, "failed",
            "its own status, not `aborted` with a prefix"
        );
        assert_eq!(row.load_errors, Some(7));
        assert!(!row.stopped_by_condition());
        assert!(
            store
                .terminal_plan_indices(experiment)
                .await
                .unwrap()
                .is_empty()
        );

        // A finished run stores its count too (0), an unfinished one has none yet.
        let next = start_run_of(store, &spec, experiment, 1, 2).await;
        assert_eq!(store.runs(experiment).await.unwrap()[1].load_errors, None);
        store
            .finish_run(next, &record(Status::Finished, Duration::ZERO))
            .await
            .unwrap();
        let rows = store.runs(experiment).await.unwrap();
        assert_eq!(rows[1].status, Status::Finished);
        assert_eq!(rows[1].load_errors, Some(0));
    }
}
