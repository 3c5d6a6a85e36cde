//! What a run saw of each `[[sources]]` source is stored with it on both engines, and a source blind during the
//! measured window leaves its breakers' figures out of the stats, with a statement saying when and how long.

use super::*;
use crate::metric::{MetricKey, MetricName};
use crate::sources::{BlindPeriod, SourceHealth};

const SOURCE: &str = "prometheus:http://127.0.0.1:9000/metrics";

fn health(source: &str, blind: Vec<BlindPeriod>) -> SourceHealth {
    SourceHealth {
        source: source.into(),
        scrapes: 200,
        failures: 160,
        longest_gap_ms: 8_000,
        blind,
    }
}

#[tokio::test]
async fn a_runs_sources_are_stored_and_a_blind_one_leaves_its_breakers_out() {
    let (stores, _file) = stores().await;
    for store in &stores {
        let (spec, experiment) = new_experiment(store).await;
        // Two rounds of the same condition: one where the source answered, one where it stopped after 2 s.
        let seen = start_run_of(store, &spec, experiment, 0, 1).await;
        let mut record_seen = record(Status::Finished, Duration::ZERO);
        record_seen.sources = vec![health(SOURCE, Vec::new())];
        store.finish_run(seen, &record_seen).await.unwrap();
        let position = (spec.plan().iter())
            .position(|p| p.round == 1 && p.condition.index == spec.plan()[0].condition.index)
            .unwrap();
        let blind = start_run_of(store, &spec, experiment, position, 1).await;
        let periods = vec![BlindPeriod {
            from_ms: 2_001,
            to_ms: 10_001,
        }];
        let mut record_blind = record(Status::Finished, Duration::ZERO);
        record_blind.sources = vec![
            health(SOURCE, periods.clone()),
            health("prometheus:http://other", Vec::new()),
        ];
        store.finish_run(blind, &record_blind).await.unwrap();

        let read = store.run_sources(blind).await.unwrap();
        assert_eq!(read, record_blind.sources, "{:?}", store.backend());
        assert_eq!(read[0].blind_ms(), 8_000);
        assert!(
            store
                .run_sources(RunId(blind.0 + 100))
                .await
                .unwrap()
                .is_empty()
        );

        let stats = crate::stats::load_experiment(store, experiment)
            .await
            .unwrap();
        let statements: Vec<&str> = (stats.experiment.not_measured.iter())
            .map(|line| line.statement.as_str())
            .collect();
        let said = statements
            .iter()
            .find(|line| line.starts_with(SOURCE))
            .unwrap_or_else(|| panic!("no statement of the blind source: {statements:?}"));
        assert!(said.contains(&format!("run {blind}: 8.0 s")), "{said}");
        assert!(said.contains("in 1 of 2 runs"), "{said}");
        assert!(
            !statements
                .iter()
                .any(|line| line.starts_with("prometheus:http://other"))
        );
        let condition = stats
            .condition(spec.plan()[0].condition.index as i64)
            .unwrap();
        // The run-wide opens come from the seen run only, as do the blind source's breaker's.
        for key in [
            MetricKey::run(MetricName::BreakerOpens),
            MetricKey::breaker(MetricName::BreakerOpens, "inventory"),
        ] {
            let summary = condition.summary(&key).unwrap_or_else(|| panic!("{key:?}"));
            assert_eq!(summary.n, 1, "{key:?}");
        }
        let availability = condition
            .summary(&MetricKey::run(MetricName::Availability))
            .unwrap();
        assert_eq!(availability.n, 2, "what the source does not say is kept");
    }
}
