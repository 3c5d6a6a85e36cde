//! Hand-checkable advisor cases (the issue's), each on a thinned grid that still holds every detector family:
//! at 25 % partial failure with "detect within 10 s" no consecutive-failure config is recommended; with only
//! 3 s blips no open window above the blip length is; with a 2 % baseline and no false trips no config on the
//! front trips on the baseline; a Resilience4j time window needing 100 calls at 20 calls per window never trips.

use std::time::Duration;

use breaker::sim::{
    self, CallFailure, Pattern, RawScenario, Scenario, Schedule, Upstream, Workload,
};
use breaker::{RawBreakerConfig, RawFailureRateConfig, RawTripConfig};

use super::*;

fn input(text: &str) -> TuneInput {
    TuneInput::parse(text).unwrap_or_else(|e| panic!("{e}"))
}

fn advice(input: &TuneInput, current: Option<&CurrentConfig>) -> Advice {
    advise(input, current, &AdviseOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

const TRAFFIC: &str = "[traffic]\nrate = 20.0\ntimeout = \"1s\"\nlatency = \"20ms\"\n";

#[test]
fn at_a_quarter_failing_and_detect_within_10s_no_consecutive_detector_is_recommended() {
    let input = input(&format!(
        "{TRAFFIC}[[profiles]]\nname = \"partial-25\"\nkind = \"partial\"\nrate = 0.25\nwindow = \"60s\"\n\
         [constraints]\ndetect_within = \"10s\"\n[search]\nmax_candidates = 700\n"
    ));
    let advice = advice(&input, None);
    let recommended = advice.recommended.config.trip();
    assert!(
        advice.recommended.feasible(),
        "{:?}",
        advice.recommended.violations
    );
    assert_eq!(
        recommended.consecutive_failures(),
        None,
        "{}",
        advice.recommended.label
    );
    // Why: every consecutive candidate is blind at 25 % (five failures in a row come once in a thousand tries).
    let consecutive: Vec<&Evaluation> = advice
        .evaluations
        .iter()
        .filter(|e| {
            e.config
                .trip()
                .consecutive_failures()
                .is_some_and(|k| k >= 5)
        })
        .collect();
    assert!(!consecutive.is_empty());
    assert!(
        consecutive.iter().all(|e| !e.feasible()),
        "a consecutive detector of 5 or more is blind at 25 %"
    );
    assert_eq!(
        advice.why.decided_by, "detect_within",
        "{:?}",
        advice.why.reasons
    );
}

#[test]
fn with_only_three_second_blips_no_open_window_longer_than_a_blip_is_recommended() {
    let input = input(&format!(
        "{TRAFFIC}[[profiles]]\nname = \"blips\"\nkind = \"blips\"\nlength = \"3s\"\nevery = \"30s\"\nfault = \"hang\"\n\
         [search]\nmax_candidates = 700\n"
    ));
    let advice = advice(&input, None);
    assert!(
        advice.recommended.config.open().base() <= Duration::from_secs(3),
        "{}",
        advice.recommended.label
    );
    // And the breaker is worth having here: hanging calls cost caller-seconds, the pick saves some.
    assert!(
        advice.recommended.saved_s > 0.0,
        "{:?}",
        advice.recommended.per_profile
    );
}

#[test]
fn with_a_two_percent_baseline_and_no_false_trips_nothing_on_the_front_trips_on_it() {
    let input = input(&format!(
        "{TRAFFIC}[[profiles]]\nname = \"baseline\"\nkind = \"baseline\"\nrate = 0.02\nwindow = \"120s\"\n\
         [[profiles]]\nname = \"outage\"\nkind = \"hang\"\nlength = \"30s\"\n\
         [constraints]\nfalse_trips_per_hour = 0\n[search]\nmax_candidates = 700\n"
    ));
    let advice = advice(&input, None);
    assert!(!advice.front.is_empty());
    for point in &advice.front {
        assert_eq!(
            point.per_profile[0].opens, 0.0,
            "{} trips on the baseline",
            point.label
        );
    }
    // The constraint did bite: some candidates trip at 2 % (a consecutive threshold of 2 does, for one).
    assert!(
        advice
            .evaluations
            .iter()
            .any(|e| e.per_profile[0].opens > 0.0)
    );
}

/// resilience4j#1443: a TIME_BASED window of 10 s with minimumNumberOfCalls 100, at 2 calls a second.
#[test]
fn a_time_window_needing_100_calls_at_20_per_window_never_trips_simulated_or_imported() {
    let mut raw = RawBreakerConfig {
        trip: RawTripConfig {
            consecutive_failures: None,
            failure_rate: Some(RawFailureRateConfig {
                threshold: 0.5,
                window: Duration::from_secs(10),
                min_calls: 100,
            }),
            last_calls: None,
            slow_call: None,
        },
        ..RawBreakerConfig::default()
    };
    raw.open.base = Duration::from_secs(30);
    let scenario = Scenario::try_from(RawScenario {
        window: Duration::from_secs(600),
        workload: Workload::Open {
            rate: 2.0,
            share: 1.0,
        },
        upstream: Upstream {
            schedule: Schedule::Once {
                start: Duration::from_secs(10),
                length: Duration::from_secs(580),
            },
            failure_rate: 1.0,
            pattern: Pattern::Random,
            kind: CallFailure::Error,
            timeout: Duration::from_secs(1),
            latency: Duration::ZERO,
            warmup: None,
        },
        breaker: raw.build().expect("valid"),
        instances: 1,
        workers: None,
        seed: 1,
        log_calls: false,
        model: breaker::sim::Model::AtTimeout,
        callers: Vec::new(),
    })
    .expect("valid");
    let run = sim::simulate(&scenario);
    assert_eq!(
        run.totals.opens, 0,
        "ten minutes of a hard outage and no trip"
    );
    assert_eq!(run.totals.never_made, 0);
    // The same config imported from the Resilience4j YAML, placed by the advisor: it never opens either.
    let imported = Library::Resilience4j
        .import(
            include_str!("libraries/examples/resilience4j-1443.yml"),
            None,
        )
        .expect("valid");
    let current = CurrentConfig {
        config: imported.config,
        source: "resilience4j".into(),
        notes: imported.notes,
    };
    let input = input(
        "[traffic]\nrate = 2.0\ntimeout = \"1s\"\n[[profiles]]\nname = \"outage\"\nkind = \"outage\"\nlength = \"580s\"\n\
         [constraints]\ndetect_within = \"30s\"\n[search]\nmax_candidates = 50\n",
    );
    let advice = advice(&input, Some(&current));
    let placed = advice.current.expect("placed");
    assert_eq!(placed.evaluation.per_profile[0].opens, 0.0);
    assert_eq!(placed.evaluation.per_profile[0].detect_s, None);
    assert!(
        placed
            .evaluation
            .violations
            .iter()
            .any(|v| matches!(v, Violation::DetectWithin { detect_s: None, .. })),
        "never detected"
    );
}

#[test]
fn input_errors_name_the_field_and_its_line() {
    for (text, field, line) in [
        (
            "[traffic]\nrate = 0.0\ntimeout = \"1s\"\n[[profiles]]\nname = \"p\"\nkind = \"partial\"\nrate = 0.2\n",
            "traffic.rate",
            2,
        ),
        (
            "[traffic]\nrate = 5.0\ntimeout = \"1s\"\n[[profiles]]\nname = \"p\"\nkind = \"partial\"\nrate = 1.5\n",
            "profiles[0].rate",
            7,
        ),
        (
            "[traffic]\nrate = 5.0\ntimeout = \"1s\"\n[[profiles]]\nname = \"b\"\nkind = \"blips\"\nlength = \"5s\"\nevery = \"5s\"\n",
            "profiles[0].every",
            8,
        ),
        (
            "[traffic]\nrate = 5.0\ntimeout = \"1s\"\nlatency = \"2s\"\n[[profiles]]\nname = \"p\"\nkind = \"outage\"\nlength = \"9s\"\n",
            "traffic.latency",
            4,
        ),
        (
            "[traffic]\nrate = 5.0\ntimeout = \"1s\"\n[[profiles]]\nname = \"p\"\nkind = \"partial\"\nrate = 0.2\n[constraints]\ndetect_within = \"1ms\"\n",
            "constraints.detect_within",
            9,
        ),
        (
            "[traffic]\nrate = 5.0\ntimeout = \"1s\"\n[[profiles]]\nname = \"p\"\nkind = \"hang\"\n",
            "profiles[0].length",
            6,
        ),
        (
            "[traffic]\nrate = 9000.0\ntimeout = \"1s\"\n[[profiles]]\nname = \"p\"\nkind = \"baseline\"\nrate = 0.01\nwindow = \"6h\"\n",
            "profiles[0].window",
            8,
        ),
        (
            "[traffic]\nrate = 5.0\ntimeout = \"1s\"\n[[profiles]]\nname = \"p\"\nkind = \"partial\"\nrate = 0.2\nweigth = 2.0\n",
            "profiles.weigth",
            8,
        ),
    ] {
        let error = TuneInput::parse(text).expect_err(field);
        assert_eq!(
            (error.field(), error.line()),
            (Some(field), Some(line)),
            "{error}"
        );
    }
}

#[test]
fn the_json_has_exactly_the_four_keys_and_the_svg_marks_the_current_config() {
    let input = input(&format!(
        "{TRAFFIC}[[profiles]]\nname = \"outage\"\nkind = \"hang\"\nlength = \"20s\"\n[search]\nmax_candidates = 60\n"
    ));
    let current = CurrentConfig {
        config: breaker::BreakerConfig::default(),
        source: "tolerant".into(),
        notes: Vec::new(),
    };
    let advice = advice(&input, Some(&current));
    let json = advice.to_json();
    let keys: Vec<&String> = json.as_object().expect("object").keys().collect();
    assert_eq!(keys, ["current", "front", "recommended", "why"]);
    assert_eq!(
        json["recommended"],
        serde_json::to_value(&advice.recommended.config).expect("json")
    );
    assert_eq!(json["current"]["source"], "tolerant");
    let svg = advice.svg().expect("svg");
    assert!(svg.starts_with("<svg") && svg.contains("current") && svg.contains("recommended"));
    let text = advice.to_text();
    assert!(
        text.contains("recommended:")
            && text.contains("Pareto front")
            && text.contains("current config")
    );
    assert_eq!(advice.why.decisions.len(), 3);
}

fn shipped_input() -> TuneInput {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../experiments/tune-partial-failure.toml"
    );
    let mut input = TuneInput::from_file(path).unwrap_or_else(|e| panic!("{e}"));
    // A thinned grid keeps the test quick in a debug build; every family and open window is still in it.
    input.search.max_candidates = 900;
    input
}

fn study_breaker() -> CurrentConfig {
    let text = include_str!("../../../experiments/breakers/study.toml");
    CurrentConfig {
        config: breaker::BreakerConfig::from_toml_str(text).expect("valid"),
        source: "tolerant".into(),
        notes: Vec::new(),
    }
}

#[test]
fn the_shipped_example_rejects_the_studys_consecutive_detector_and_its_long_open_window() {
    let input = shipped_input();
    let current = study_breaker();
    let advice = advice(&input, Some(&current));
    let recommended = &advice.recommended;
    assert!(recommended.feasible(), "{:?}", recommended.violations);
    assert_eq!(
        recommended.config.trip().consecutive_failures(),
        None,
        "{}",
        recommended.label
    );
    assert!(
        recommended.config.open().base() < Duration::from_secs(30),
        "{}",
        recommended.label
    );
    let placed = advice.current.expect("placed");
    assert!(
        placed.evaluation.violations.iter().any(|v| matches!(
            v,
            Violation::DetectWithin { profile, .. } if profile == "partial-25"
        )),
        "blind at 25 %: {:?}",
        placed.evaluation.violations
    );
    // Its 30 s window outlasts the blips' 27 s of health: it rejects far more that would have succeeded.
    let blips = |e: &Evaluation| e.per_profile[1].rejected_success;
    assert!(blips(&placed.evaluation) > 2.0 * blips(recommended));
    assert!(placed.evaluation.cost.total > recommended.cost.total);
}

#[test]
fn the_verification_is_one_spec_of_configs_by_profiles_that_validates() {
    let input = shipped_input();
    let current = study_breaker();
    let advice = advice(&input, Some(&current));
    let plan = verify::plan(&input, &advice, Some(&current), None).expect("a plan");
    let names: Vec<&str> = plan.candidates.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["current", "recommended", "candidate-3"]);
    let spec = crate::spec::ExperimentSpec::parse(&plan.spec_toml).expect("it validates");
    let conditions = spec.conditions();
    assert_eq!(conditions.len(), 3 * 2, "configs × profiles");
    assert_eq!(spec.plan().len(), 6 * 5, "five rounds");
    let labels: Vec<String> = conditions
        .iter()
        .map(|c| crate::spec::label_in(&spec, c))
        .collect();
    assert!(
        labels.contains(&"blips-3s: error 500 @ 100% / enforce / current".to_owned()),
        "{labels:?}"
    );
    // Each condition runs its own config (windows scaled by 4) and its own fault schedule.
    let blips_current = &conditions[3];
    assert_eq!(
        spec.breaker_config_of(blips_current)
            .expect("config")
            .open()
            .base(),
        Duration::from_millis(7_500)
    );
    assert!(spec.written_schedule_of(blips_current).is_some());
    assert!(
        spec.written_schedule_of(&conditions[0]).is_none(),
        "partial failure: the whole run"
    );
    // The open model's rate is scaled with the durations: 2 checkouts a second × 19 tasks × 4.
    let rate = spec.load.rate.expect("open model");
    assert!(
        (rate - 2.0 / crate::predict::checkout_share() * 4.0).abs() < 1e-6,
        "{rate}"
    );
}

/// A spec of one's own: a shop behind the agent whose breakers take a config.
const OWN_SPEC: &str = r#"
name = "shop"
duration = "60s"
[targets]
shop = { url = "http://127.0.0.1:9000", offers = ["breaker-config", "breaker-stream"] }
agent = "http://127.0.0.1:9090"
[fault]
target = "shop"
rates = [0.5]
[load]
users = 7
think_time = ["100ms", "200ms"]
target = "shop"
[[load.tasks]]
name = "order"
critical = true
requests = [{ method = "POST", path = "/orders" }]
"#;

#[test]
fn a_testbed_of_ones_own_takes_the_place_of_the_embedded_one() {
    let input = shipped_input();
    let current = study_breaker();
    let advice = advice(&input, Some(&current));
    let plan = verify::plan(&input, &advice, Some(&current), Some(OWN_SPEC)).expect("a plan");
    let spec = crate::spec::ExperimentSpec::parse(&plan.spec_toml).expect("it validates");
    assert_eq!(spec.fault.target.as_str(), "shop");
    assert_eq!(spec.targets.len(), 2, "{:?}", spec.targets);
    assert_eq!(
        spec.load.users, 7,
        "the spec's own load, not the boutique mix"
    );
    assert_eq!(spec.conditions().len(), 3 * 2, "configs × profiles");
    // The profiles are the input's, whatever rates the spec of one's own listed.
    assert!(spec.conditions().iter().any(|c| c.fault_rate == 0.25));
}

#[test]
fn a_testbed_of_ones_own_must_take_the_candidates_configs() {
    let input = shipped_input();
    let current = study_breaker();
    let advice = advice(&input, Some(&current));
    let no_config = OWN_SPEC.replace(r#""breaker-config", "#, "");
    let error = verify::plan(&input, &advice, Some(&current), Some(&no_config))
        .expect_err("nothing to apply the configs to");
    assert!(error.to_string().contains("breaker-config"), "{error}");
    let embedded =
        "name = \"x\"\nduration = \"60s\"\n[fault]\ntarget = \"payment\"\nrates = [0.5]\n";
    let error =
        verify::plan(&input, &advice, Some(&current), Some(embedded)).expect_err("no targets");
    assert!(error.to_string().contains("verify.spec"), "{error}");
}

#[test]
fn verify_spec_is_read_relative_to_the_input_file() {
    let dir = crate::test_support::TempStore::new("verify-spec");
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../experiments/tune-partial-failure.toml"
    ))
    .expect("shipped input")
    .replace("[verify]\n", "[verify]\nspec = \"shop.toml\"\n");
    let path = dir.dir().join("tune.toml");
    std::fs::write(&path, text).expect("write");
    let input = TuneInput::from_file(&path).expect("valid");
    assert_eq!(input.verify.spec, Some(dir.dir().join("shop.toml")));
    let error = TuneInput::parse("name = \"x\"\n[traffic]\nrate = 1.0\ntimeout = \"1s\"\n[[profiles]]\nname = \"p\"\nkind = \"partial\"\nrate = 0.25\n[verify]\nspec = \"\"\n")
        .expect_err("an empty path");
    assert!(error.to_string().contains("verify.spec"), "{error}");
}

/// A candidate measured over rounds of these costs.
fn verified(
    name: &str,
    predicted: Option<f64>,
    searched: f64,
    rounds: &[f64],
) -> verify::VerifiedCandidate {
    verify::VerifiedCandidate {
        name: name.into(),
        label: name.into(),
        searched_cost: searched,
        predicted,
        measured: crate::stats::Summary::of(rounds),
    }
}

#[test]
fn the_verdict_names_which_intervals_the_pick_lies_below() {
    // The shape of the shipped example's verified run: the pick far below the study's config, overlapping a
    // close runner-up.
    let verification = verify::Verification::judge(
        1,
        vec![
            verified(
                "current",
                Some(7688.7),
                3285.0,
                &[9000.0, 5000.0, 13000.0, 8000.0, 9900.0],
            ),
            verified(
                "recommended",
                Some(309.6),
                15.0,
                &[80.0, 10.0, 150.0, 60.0, 87.0],
            ),
            verified(
                "candidate-3",
                Some(489.6),
                15.0,
                &[250.0, 0.0, 600.0, 100.0, 310.0],
            ),
        ],
    );
    assert_eq!(verification.pick.as_deref(), Some("recommended"));
    assert_eq!(verification.separated_from, ["current"]);
    assert!(!verification.separated, "candidate-3 overlaps");
    assert!(verification.same_ranking);
    assert_eq!(verification.ranked_by, "prediction");
    let text = verification.to_text();
    assert!(
        text.contains("lies below current's and overlaps candidate-3's"),
        "{text}"
    );
    // Without a prediction for one of them, the search's cost ranks them, and the report says so.
    let unmodelled = verify::Verification::judge(
        2,
        vec![
            verified("current", None, 3285.0, &[9000.0, 8500.0, 9500.0]),
            verified("recommended", None, 15.0, &[80.0, 10.0, 150.0]),
        ],
    );
    assert_eq!(unmodelled.ranked_by, "search");
    assert!(unmodelled.separated);
    assert!(unmodelled.to_text().contains("lies below every other's"));
    assert!(unmodelled.to_text().contains("search (the spec"));
}
