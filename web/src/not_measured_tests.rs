//! The results page states what an experiment's targets could not measure — the report's own *Not measured*
//! statements — and shows "not measured" instead of 0 for a metric they leave out.

use std::time::Duration;

use controller::store::{CollectorSample, RunRecord, Status};

use crate::routes_tests::{get, send, stored_app, text};
use controller::test_support::{self, TempStore};

/// A plain HTTP service loaded by the users, a dependency behind the agent, neither offering anything.
const PLAIN_SPEC: &str = r#"name = "plain"
rounds = 1
duration = "2s"

[load]
users = 1
target = "shop"

[targets]
shop = { url = "http://127.0.0.1:9", offers = [] }
upstream = { url = "http://127.0.0.1:9", offers = [] }
agent = "http://127.0.0.1:9"
"#;

/// What askama makes of a statement in the page.
fn escaped(line: &str) -> String {
    line.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&#34;")
        .replace('\'', "&#39;")
}

#[tokio::test]
async fn the_results_page_says_what_a_plain_target_did_not_measure_and_shows_no_zero_for_it() {
    let database = TempStore::new("web-not-measured");
    let (state, store) = stored_app(&database.location()).await;
    let spec = test_support::spec(PLAIN_SPEC);
    let experiment = store.create_experiment(&spec, 1_000).await.expect("stored");
    let run = store
        .start_run(
            experiment,
            &spec.plan()[0],
            Duration::ZERO,
            Duration::from_secs(2),
            1_000,
        )
        .await
        .expect("run");
    // A finished run with no transition: nothing watched a breaker, so there are no opens to count (not 0).
    let record = RunRecord {
        status: Status::Finished,
        abort_reason: None,
        load_errors: 0,
        finished_at_ms: 3_000,
        endpoint_names: Vec::new(),
        seconds: Vec::new(),
        endpoints: Vec::new(),
        collector: vec![CollectorSample {
            second: 1,
            cart_mean_items: None,
            carts: None,
            pool_in_flight: None,
            pool_queued: None,
            cpu_seconds: Some(0.25),
            energy_joules: None,
            extra: None,
        }],
        transitions: Vec::new(),
        events: Vec::new(),
        energy: None,
        sources: Vec::new(),
    };
    store.finish_run(run, &record).await.expect("finished");
    store
        .set_experiment_status(experiment, Status::Finished, 3_000, None)
        .await
        .expect("status");

    let page = text(
        send(
            &state,
            get(&format!("/experiments/{}/results", experiment.0)),
        )
        .await,
    )
    .await;
    assert!(page.contains("id=\"not-measured\""), "{page}");
    let statements = controller::stats::not_measured(&spec);
    assert!(statements.len() >= 5, "{statements:?}");
    for statement in &statements {
        assert!(page.contains(&escaped(statement)), "{statement}\n{page}");
    }
    // The summary's opens and cart-size cells say "not measured", with the reason, and no cell reads 0.
    let start = page.find("id=\"summary-table\"").expect("summary table");
    let summary = &page[start..start + page[start..].find("</table>").expect("end")];
    let opens = statements
        .iter()
        .find(|line| line.starts_with("breaker opens and time open were not measured"))
        .expect("opens statement");
    assert!(
        summary.contains(&format!(
            "<td class=\"not-measured\" title=\"{}\">not measured</td>",
            escaped(opens)
        )),
        "{summary}"
    );
    assert!(
        summary.contains("cart sizes (cart inflation) were not measured"),
        "{summary}"
    );
    for zero in [">0<", ">0.00<", ">0 opens<"] {
        assert!(!summary.contains(zero), "{zero} in {summary}");
    }
    store.close().await;
}
