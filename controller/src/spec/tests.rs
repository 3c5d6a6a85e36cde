//! Spec parsing, validation and matrix expansion tests.

use std::collections::BTreeSet;
use std::time::Duration;

use super::*;

const MINIMAL: &str = r#"
name = "t"
duration = "10s"

[load]
users = 2
"#;

fn experiments_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../experiments")
}

/// Parses `source`, expecting an error; returns (field, line).
fn error_of(source: &str) -> (String, usize, String) {
    let error = ExperimentSpec::parse(source).expect_err("spec should be rejected");
    let message = error.to_string();
    (
        error.field().unwrap_or("<none>").to_owned(),
        error.line().unwrap_or(0),
        message,
    )
}

#[test]
fn every_shipped_experiment_parses() {
    let mut parsed = 0;
    for entry in std::fs::read_dir(experiments_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|ext| ext == "toml") {
            let spec = ExperimentSpec::from_file(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(!spec.plan().is_empty(), "{}", path.display());
            parsed += 1;
        }
    }
    assert!(
        parsed >= 3,
        "expected the seed study, the hang variant and the smoke test"
    );
}

#[test]
fn seed_study_has_the_published_design() {
    let spec = ExperimentSpec::from_file(experiments_dir().join("payment-errors.toml")).unwrap();
    assert_eq!(spec.rounds, 15);
    assert_eq!(spec.duration, Duration::from_secs(30 * 60));
    assert_eq!(spec.warmup, Duration::from_secs(5 * 60));
    assert_eq!(spec.load.users, 100);
    assert_eq!(
        spec.load.think_time,
        (Duration::from_secs(1), Duration::from_secs(10))
    );
    assert_eq!(spec.fault.target, "payment");
    assert_eq!(spec.fault.kinds, vec![FaultKind::Error { status: 500 }]);
    assert_eq!(spec.fault.rates, vec![0.0, 0.25, 0.5, 0.75, 1.0]);
    assert_eq!(
        spec.breaker.modes,
        vec![BreakerMode::Disabled, BreakerMode::Enforce]
    );
    assert_eq!(spec.conditions().len(), 10);
    assert_eq!(spec.plan().len(), 150);
    let config = spec.breaker.config_for(BreakerMode::Enforce);
    assert_eq!(config.mode, breaker::Mode::Enforce);
    assert_eq!(config.trip.consecutive_failures, Some(5));
    assert_eq!(config.open.base, Duration::from_secs(30));
    assert_eq!(
        spec.breaker.config_for(BreakerMode::Disabled).mode,
        breaker::Mode::Disabled
    );
}

#[test]
fn smoke_experiment_takes_about_a_minute() {
    let spec = ExperimentSpec::from_file(experiments_dir().join("smoke.toml")).unwrap();
    let total: Duration = spec
        .plan()
        .iter()
        .map(|_| spec.run_warmup() + spec.run_duration())
        .sum();
    assert!(total <= Duration::from_secs(70), "{total:?}");
    assert!(total >= Duration::from_secs(30), "{total:?}");
}

#[test]
fn hang_variant_uses_hang_faults() {
    let spec = ExperimentSpec::from_file(experiments_dir().join("payment-hang.toml")).unwrap();
    assert_eq!(spec.fault.kinds, vec![FaultKind::Hang]);
    assert_eq!(
        spec.fault.match_rule.path_prefix.as_deref(),
        Some("/charge")
    );
}

#[test]
fn minimal_spec_takes_defaults() {
    let spec = ExperimentSpec::parse(MINIMAL).unwrap();
    assert_eq!(spec.rounds, 1);
    assert_eq!(spec.time_scale, 1.0);
    assert_eq!(spec.order, Order::Randomized);
    assert_eq!(spec.warmup, Duration::ZERO);
    assert_eq!(spec.fault.rates, vec![0.0]);
    assert_eq!(spec.breaker.modes, vec![BreakerMode::Enforce]);
    assert_eq!(spec.source, MINIMAL);
}

#[test]
fn time_scale_divides_durations_and_think_time() {
    let spec = ExperimentSpec::parse(
        r#"
name = "t"
duration = "30m"
warmup = "5m"
time_scale = 30
[load]
users = 1
think_time = ["1s", "10s"]
"#,
    )
    .unwrap();
    assert_eq!(spec.run_duration(), Duration::from_secs(60));
    assert_eq!(spec.run_warmup(), Duration::from_secs(10));
    assert_eq!(
        spec.think_time(),
        (
            Duration::from_secs(1).div_f64(30.0),
            Duration::from_secs(10).div_f64(30.0)
        )
    );
}

#[test]
fn unknown_field_after_a_table_header_belongs_to_the_table() {
    let (field, line, message) = error_of(&format!("{MINIMAL}bogus = 1\n"));
    assert_eq!(field, "load.bogus", "{message}");
    assert_eq!(line, 7, "{message}");
    assert!(message.contains("unknown field"), "{message}");
}

#[test]
fn unknown_field_in_a_table_names_table_and_key() {
    let source =
        "name = \"t\"\nduration = \"10s\"\n\n[load]\nusers = 2\nthinktime = [\"1s\", \"2s\"]\n";
    let (field, line, message) = error_of(source);
    assert_eq!(field, "load.thinktime", "{message}");
    assert_eq!(line, 6, "{message}");
}

#[test]
fn unknown_field_before_any_table() {
    let source = "name = \"t\"\ndurration = \"10s\"\n[load]\nusers = 2\n";
    let (field, line, message) = error_of(source);
    assert_eq!(field, "durration", "{message}");
    assert_eq!(line, 2, "{message}");
}

#[test]
fn unknown_field_in_an_inline_table() {
    let source = format!(
        "{MINIMAL}[fault]\ntarget = \"payment\"\nrates = [1.0]\nmatch = {{ methd = \"POST\" }}\n"
    );
    let (field, line, message) = error_of(&source);
    assert_eq!(field, "fault.match.methd", "{message}");
    assert_eq!(line, 10, "{message}");
}

#[test]
fn zero_users_is_impossible() {
    let (field, line, _) = error_of("name = \"t\"\nduration = \"10s\"\n[load]\nusers = 0\n");
    assert_eq!((field.as_str(), line), ("load.users", 4));
}

#[test]
fn negative_users_is_a_type_error_naming_the_field() {
    let (field, line, message) = error_of("name = \"t\"\nduration = \"10s\"\n[load]\nusers = -3\n");
    assert_eq!((field.as_str(), line), ("load.users", 4), "{message}");
}

#[test]
fn rate_out_of_range_names_the_element() {
    let source = format!("{MINIMAL}\n[fault]\ntarget = \"payment\"\nrates = [0.0, 1.5]\n");
    let (field, line, message) = error_of(&source);
    assert_eq!((field.as_str(), line), ("fault.rates[1]", 10), "{message}");
}

#[test]
fn unknown_fault_target_is_rejected() {
    let source = format!("{MINIMAL}\n[fault]\ntarget = \"paymnet\"\nrates = [0.5]\n");
    let (field, line, message) = error_of(&source);
    assert_eq!((field.as_str(), line), ("fault.target", 9), "{message}");
    assert!(message.contains("paymnet"), "{message}");
}

#[test]
fn unknown_external_target_is_rejected() {
    let source = format!("{MINIMAL}\n[targets]\nfrontned = \"http://127.0.0.1:1\"\n");
    let (field, line, message) = error_of(&source);
    assert_eq!((field.as_str(), line), ("targets.frontned", 9), "{message}");
}

#[test]
fn bad_target_url_is_rejected() {
    let source = format!("{MINIMAL}\n[targets]\nfrontend = \"ftp://x\"\n");
    let (field, _, message) = error_of(&source);
    assert_eq!(field, "targets.frontend", "{message}");
}

#[test]
fn bad_duration_names_field() {
    let (field, line, message) =
        error_of("name = \"t\"\nduration = \"ten seconds\"\n[load]\nusers = 1\n");
    assert_eq!((field.as_str(), line), ("duration", 2), "{message}");
}

#[test]
fn warmup_must_be_shorter_than_duration() {
    let (field, line, _) =
        error_of("name = \"t\"\nduration = \"10s\"\nwarmup = \"10s\"\n[load]\nusers = 1\n");
    assert_eq!((field.as_str(), line), ("warmup", 3));
}

#[test]
fn scaled_duration_below_a_second_is_rejected() {
    let (field, _, _) =
        error_of("name = \"t\"\nduration = \"10s\"\ntime_scale = 100\n[load]\nusers = 1\n");
    assert_eq!(field, "duration");
}

#[test]
fn zero_time_scale_is_rejected() {
    let (field, line, _) =
        error_of("name = \"t\"\nduration = \"10s\"\ntime_scale = 0.0\n[load]\nusers = 1\n");
    assert_eq!((field.as_str(), line), ("time_scale", 3));
}

#[test]
fn think_time_min_above_max_is_rejected() {
    let (field, line, _) = error_of(
        "name = \"t\"\nduration = \"10s\"\n[load]\nusers = 1\nthink_time = [\"5s\", \"1s\"]\n",
    );
    assert_eq!((field.as_str(), line), ("load.think_time", 5));
}

#[test]
fn delay_kind_needs_a_delay() {
    let source =
        format!("{MINIMAL}\n[fault]\ntarget = \"payment\"\nkind = \"delay\"\nrates = [0.5]\n");
    let (field, _, message) = error_of(&source);
    assert_eq!(field, "fault.delay", "{message}");
}

#[test]
fn status_outside_error_range_is_rejected() {
    let source = format!("{MINIMAL}\n[fault]\ntarget = \"payment\"\nstatus = 200\nrates = [0.5]\n");
    let (field, line, _) = error_of(&source);
    assert_eq!((field.as_str(), line), ("fault.status", 10));
}

#[test]
fn unknown_breaker_mode_names_field() {
    let source = format!("{MINIMAL}\n[breaker]\nmodes = [\"enforce\", \"sometimes\"]\n");
    let (field, line, message) = error_of(&source);
    assert_eq!(line, 9, "{message}");
    assert!(field.starts_with("breaker.modes"), "{field}: {message}");
}

#[test]
fn duplicate_breaker_mode_is_rejected() {
    let source = format!("{MINIMAL}\n[breaker]\nmodes = [\"enforce\", \"enforce\"]\n");
    let (field, _, _) = error_of(&source);
    assert_eq!(field, "breaker.modes[1]");
}

#[test]
fn missing_required_field_is_named() {
    let (field, _, message) = error_of("name = \"t\"\n[load]\nusers = 1\n");
    assert!(field.ends_with("duration"), "{field}: {message}");
}

#[test]
fn syntax_error_gives_a_line() {
    let error = ExperimentSpec::parse("name = \"t\nduration = 1\n").unwrap_err();
    assert_eq!(error.line(), Some(1), "{error}");
}

#[test]
fn matrix_crosses_kinds_rates_and_modes() {
    let spec = ExperimentSpec::parse(&format!(
        "{MINIMAL}rate = 5.0\n[fault]\ntarget = \"payment\"\nkinds = [\"error\", \"delay\"]\ndelay = \"200ms\"\nrates = [0.1, 0.9]\n[breaker]\nmodes = [\"shadow\", \"enforce\"]\n"
    ))
    .unwrap();
    let conditions = spec.conditions();
    assert_eq!(conditions.len(), 2 * 2 * 2);
    let distinct: BTreeSet<String> = conditions.iter().map(Condition::label).collect();
    assert_eq!(distinct.len(), 8, "{distinct:?}");
    assert!(
        distinct.contains("delay 200ms @ 90% / shadow"),
        "{distinct:?}"
    );
    for (i, condition) in conditions.iter().enumerate() {
        assert_eq!(condition.index, i);
    }
}

#[test]
fn randomized_plan_holds_each_condition_once_per_round_and_is_reproducible() {
    let spec = ExperimentSpec::from_file(experiments_dir().join("payment-errors.toml")).unwrap();
    let plan = spec.plan();
    let conditions = spec.conditions().len();
    let mut orders = BTreeSet::new();
    for round in 0..spec.rounds {
        let in_round: Vec<usize> = plan
            .iter()
            .filter(|run| run.round == round)
            .map(|run| run.condition.index)
            .collect();
        let distinct: BTreeSet<usize> = in_round.iter().copied().collect();
        assert_eq!(distinct.len(), conditions);
        assert_eq!(in_round.len(), conditions);
        orders.insert(in_round);
    }
    // 15 shuffles of 10 conditions: all equal would mean no shuffle at all.
    assert!(orders.len() > 10, "only {} distinct orders", orders.len());
    assert_eq!(plan, spec.plan(), "same seed, same plan");
    for (i, run) in plan.iter().enumerate() {
        assert_eq!(run.sequence, i);
    }

    let mut other_seed = spec.clone();
    other_seed.seed += 1;
    assert_ne!(plan, other_seed.plan());
}

#[test]
fn fixed_order_keeps_expansion_order() {
    let spec = ExperimentSpec::parse(&format!(
        "order = \"fixed\"\nrounds = 3\n{MINIMAL}[fault]\ntarget = \"payment\"\nrates = [0.0, 0.5, 1.0]\n"
    ))
    .unwrap();
    let indices: Vec<usize> = spec.plan().iter().map(|run| run.condition.index).collect();
    assert_eq!(indices, vec![0, 1, 2, 0, 1, 2, 0, 1, 2]);
}

#[test]
fn shuffle_is_a_permutation() {
    let mut items: Vec<u32> = (0..100).collect();
    shuffle_seeded(&mut items, 7);
    let mut sorted = items.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..100).collect::<Vec<_>>());
    assert_ne!(items, sorted);
}

#[test]
fn error_message_names_field_and_line() {
    let error =
        ExperimentSpec::parse("name = \"t\"\nduration = \"10s\"\n[load]\nusers = 0\n").unwrap_err();
    let message = error.to_string();
    assert!(
        message.starts_with("load.users (line 4, column 9)"),
        "{message}"
    );
}

#[test]
fn breaker_sections_use_the_breaker_vocabulary_and_scale() {
    let spec = ExperimentSpec::parse(&format!(
        "time_scale = 10\n{MINIMAL}[breaker]\nmodes = [\"shadow\"]\n[breaker.trip]\nfailure_rate = {{ threshold = 0.5, window = \"20s\", min_calls = 20 }}\n[breaker.open]\nbase = \"30s\"\nmax = \"5m\"\n"
    ))
    .unwrap();
    let config = spec.breaker_config(BreakerMode::Shadow);
    assert_eq!(config.mode, breaker::Mode::Shadow);
    assert_eq!(config.open.base, Duration::from_secs(3));
    assert_eq!(config.open.max, Duration::from_secs(30));
    assert_eq!(
        config.trip.failure_rate.as_ref().unwrap().window,
        Duration::from_secs(2)
    );
    // Unscaled as written.
    assert_eq!(spec.breaker.config.open.base, Duration::from_secs(30));
    assert!(config.to_toml_string().contains("mode = \"shadow\""));
}

#[test]
fn unknown_breaker_field_names_field_and_line() {
    let source = format!(
        "{MINIMAL}[breaker]\nmodes = [\"enforce\"]\n[breaker.trip]\nconsecutive_failure = 5\n"
    );
    let (field, line, message) = error_of(&source);
    assert_eq!(
        (field.as_str(), line),
        ("breaker.trip.consecutive_failure", 10),
        "{message}"
    );
}

#[test]
fn invalid_breaker_value_is_named_by_the_breaker_validation() {
    let source = format!(
        "{MINIMAL}[breaker]\nmodes = [\"enforce\"]\n[breaker.half_open]\nsuccesses_to_close = 0\n"
    );
    let (field, line, message) = error_of(&source);
    assert_eq!(field, "breaker.half_open.successes_to_close", "{message}");
    assert_eq!(line, 9, "{message}");
}

#[test]
fn bad_breaker_duration_names_field() {
    let source =
        format!("{MINIMAL}[breaker]\nmodes = [\"enforce\"]\n[breaker.open]\nbase = \"soon\"\n");
    let (field, line, message) = error_of(&source);
    assert_eq!(
        (field.as_str(), line),
        ("breaker.open.base", 10),
        "{message}"
    );
}

#[test]
fn validate_tables_become_the_specs_criteria() {
    let source = format!(
        "{MINIMAL}\n[[validate]]\nmetric = \"availability\"\nfault_rate = 0.0\nbreaker = \"enforce\"\n\
         comparison = \">=\"\nthreshold = 0.9\n"
    );
    let spec = ExperimentSpec::parse(&source).unwrap();
    assert_eq!(spec.validate.len(), 1);
    assert_eq!(spec.validate[0].fault_rate, 0.0);
    assert!(ExperimentSpec::parse(MINIMAL).unwrap().validate.is_empty());
}

#[test]
fn a_bad_criterion_names_its_field_and_line() {
    let bad_comparison = format!(
        "{MINIMAL}\n[[validate]]\nmetric = \"availability\"\nfault_rate = 0.0\nbreaker = \"enforce\"\n\
         comparison = \"about\"\nthreshold = 0.9\n"
    );
    let (field, line, message) = error_of(&bad_comparison);
    assert_eq!(field, "validate[0].comparison", "{message}");
    assert!(line >= 8, "{message}");

    // A rate the experiment does not run cannot be judged.
    let not_run = format!(
        "{MINIMAL}\n[[validate]]\nmetric = \"availability\"\nfault_rate = 0.5\nbreaker = \"enforce\"\n\
         comparison = \">=\"\nthreshold = 0.9\n"
    );
    let (field, _, message) = error_of(&not_run);
    assert_eq!(field, "validate[0]", "{message}");
    assert!(message.contains("fault_rate"), "{message}");
}

/// The spec documentation's examples are specs that parse, and its example gate has criteria.
#[test]
fn every_toml_example_of_the_experiments_readme_is_a_valid_spec() {
    let readme = std::fs::read_to_string(experiments_dir().join("README.md")).unwrap();
    let blocks: Vec<&str> = readme
        .split("```toml\n")
        .skip(1)
        .map(|rest| rest.split("```").next().unwrap())
        .collect();
    assert!(!blocks.is_empty(), "the README shows an example spec");
    for block in &blocks {
        let spec = ExperimentSpec::parse(block).unwrap_or_else(|error| panic!("{error}\n{block}"));
        assert!(!spec.validate.is_empty(), "the example is a release gate");
    }
    // Every table of a spec is documented.
    for table in [
        "[load]",
        "[fault]",
        "[fault.match]",
        "[breaker]",
        "[breaker.trip]",
        "[breaker.trip.failure_rate]",
        "[breaker.trip.slow_call]",
        "[breaker.open]",
        "[breaker.half_open]",
        "[stop]",
        "[targets]",
        "[[sources]]",
        "[[validate]]",
    ] {
        assert!(
            readme.contains(&format!("`{table}`")),
            "{table} is documented"
        );
    }
}

/// Every count and duration a spec holds has an upper bound, and crossing it is an error that names
/// the field — before anything is allocated (a plan of 4294967295 rounds would be 300 GB).
#[test]
fn absurd_counts_and_durations_are_rejected_naming_the_field() {
    let head = "name = \"t\"\nduration = \"10s\"\n";
    let load = "[load]\nusers = 2\n";
    let cases: Vec<(String, &str)> = vec![
        (format!("rounds = 4294967295\n{head}{load}"), "rounds"),
        (format!("rounds = 1001\n{head}{load}"), "rounds"),
        (
            // 101 rates × 4 modes × 30 rounds = 12,120 runs: each count in bounds, the product not.
            format!(
                "rounds = 30\n{head}{load}[fault]\ntarget = \"payment\"\nrates = [{}]\n[breaker]\nmodes = [\"enforce\", \"shadow\", \"disabled\", \"forced-open\"]\n",
                (0..=100)
                    .map(|i| format!("{}", f64::from(i) / 100.0))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            "rounds",
        ),
        (
            format!(
                "{head}{load}[fault]\ntarget = \"payment\"\nrates = [{}]\n",
                (0..102)
                    .map(|i| format!("{}", f64::from(i) / 1000.0))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            "fault.rates",
        ),
        (format!("{head}[load]\nusers = 4294967295\n"), "load.users"),
        (
            format!("name = \"{}\"\nduration = \"10s\"\n{load}", "n".repeat(201)),
            "name",
        ),
        (format!("{head}time_scale = 1e-300\n{load}"), "time_scale"),
        (format!("{head}time_scale = 1e300\n{load}"), "time_scale"),
        (format!("{head}time_scale = inf\n{load}"), "time_scale"),
        (format!("{head}time_scale = nan\n{load}"), "time_scale"),
        (
            format!("name = \"t\"\nduration = \"500000000000y\"\n{load}"),
            "duration",
        ),
        (
            format!("name = \"t\"\nduration = \"367days\"\n{load}"),
            "duration",
        ),
        // In bounds as written, but 300 days / 0.01 is 82 years of one run.
        (
            format!("name = \"t\"\nduration = \"300days\"\ntime_scale = 0.01\n{load}"),
            "duration",
        ),
        (
            format!("{head}warmup = \"500000000000y\"\n{load}"),
            "warmup",
        ),
        (format!("{head}{load}rate = 1e-300\n"), "load.rate"),
        (format!("{head}{load}rate = 1e300\n"), "load.rate"),
        (format!("{head}{load}rate = -1.0\n"), "load.rate"),
        (
            format!("{head}{load}timeout = \"500000000000y\"\n"),
            "load.timeout",
        ),
        (
            format!("{head}{load}think_time = [\"1s\", \"500000000000y\"]\n"),
            "load.think_time[1]",
        ),
        (
            format!(
                "{head}{load}[fault]\ntarget = \"payment\"\nkind = \"delay\"\ndelay = \"500000000000y\"\nrates = [0.5]\n"
            ),
            "fault.delay",
        ),
        (
            format!(
                "{head}{load}[fault]\ntarget = \"payment\"\nkind = \"delay\"\ndelay = \"1s\"\njitter = \"500000000000y\"\nrates = [0.5]\n"
            ),
            "fault.jitter",
        ),
        (
            format!(
                "{head}{load}[fault]\ntarget = \"payment\"\nrates = [0.5]\nlease = \"500000000000y\"\n"
            ),
            "fault.lease",
        ),
        (
            format!(
                "{head}{load}[fault]\ntarget = \"payment\"\nrates = [0.5]\nmatch = {{ path_prefix = \"/{}\" }}\n",
                "p".repeat(2000)
            ),
            "fault.match.path_prefix",
        ),
        (
            format!("{head}{load}[stop]\nwindow = \"500000000000y\"\n"),
            "stop.window",
        ),
        (
            format!(
                "{head}{load}[breaker]\nmodes = [\"enforce\"]\n[breaker.trip]\nfailure_rate = {{ threshold = 0.5, window = \"500000000000y\", min_calls = 5 }}\n"
            ),
            "breaker.trip.failure_rate.window",
        ),
        (
            // A day-long window is allowed as written; a thousandfold slower study makes it too long.
            format!(
                "name = \"t\"\nduration = \"10s\"\ntime_scale = 0.001\n{load}[breaker]\nmodes = [\"enforce\"]\n[breaker.trip]\nslow_call = {{ duration = \"1s\", rate = 0.5, window = \"1day\", min_calls = 5 }}\n"
            ),
            "breaker.trip.slow_call.window",
        ),
    ];
    for (source, expected) in cases {
        let (field, _, message) = error_of(&source);
        assert_eq!(field, expected, "{message}\n--- spec:\n{source}");
    }
}

#[test]
fn counts_and_durations_at_their_bounds_are_accepted() {
    let spec = ExperimentSpec::parse(&format!(
        "rounds = {}\nname = \"{}\"\nduration = \"1s\"\ntime_scale = 0.001\n[load]\nusers = {}\nrate = 0.01\ntimeout = \"10m\"\n",
        raw::MAX_ROUNDS,
        "n".repeat(raw::MAX_NAME_BYTES),
        raw::MAX_USERS
    ))
    .unwrap();
    assert_eq!(spec.plan().len(), raw::MAX_ROUNDS as usize);
    assert_eq!(spec.run_duration(), Duration::from_secs(1000));
}

#[test]
fn scaling_a_duration_saturates_instead_of_panicking() {
    let long = Duration::from_secs(u64::MAX / 2);
    assert_eq!(scale_duration(long, 1e-300), Duration::MAX);
    assert_eq!(scale_duration(long, 0.0), Duration::MAX);
    assert_eq!(scale_duration(long, f64::NAN), Duration::MAX);
    assert_eq!(
        scale_duration(Duration::from_secs(30), 30.0),
        Duration::from_secs(1)
    );
}

#[test]
fn breaker_sources_are_read_with_their_presets() {
    let spec = ExperimentSpec::parse(&format!(
        r#"{MINIMAL}
[[sources]]
kind = "prometheus"
url = "http://127.0.0.1:9000/actuator/prometheus"
preset = "resilience4j"
interval = "250ms"
service = "orders"

[[sources]]
kind = "prometheus"
url = "http://127.0.0.1:9001/metrics"
preset = "opossum"
prefix = "shop_"

[[sources]]
kind = "prometheus"
url = "http://127.0.0.1:9002/metrics"
preset = "gauge"
metric = "pybreaker_state"
label = "breaker"
values = {{ closed = 0, open = 1, "half-open" = 2 }}

[[sources]]
kind = "push"
listen = "127.0.0.1:9400"
"#
    ))
    .unwrap();
    assert_eq!(spec.sources.len(), 4);
    let SourceSpec::Prometheus(r4j) = &spec.sources[0] else {
        panic!("{:?}", spec.sources[0]);
    };
    assert_eq!(r4j.mapping, crate::sources::StateMapping::resilience4j());
    assert_eq!(r4j.interval, Duration::from_millis(250));
    assert_eq!(r4j.service, "orders");
    assert_eq!(
        r4j.source_name(),
        "prometheus:http://127.0.0.1:9000/actuator/prometheus"
    );
    let SourceSpec::Prometheus(opossum) = &spec.sources[1] else {
        panic!("{:?}", spec.sources[1]);
    };
    assert_eq!(opossum.mapping.metric(), "shop_circuit");
    assert_eq!(opossum.service, "127.0.0.1:9001", "the URL's authority");
    assert_eq!(opossum.interval, DEFAULT_SCRAPE_INTERVAL);
    let SourceSpec::Prometheus(gauge) = &spec.sources[2] else {
        panic!("{:?}", spec.sources[2]);
    };
    let crate::sources::StateMapping::Value {
        metric,
        breaker_label,
        values,
    } = &gauge.mapping
    else {
        panic!("{:?}", gauge.mapping);
    };
    assert_eq!(
        (metric.as_str(), breaker_label.as_str()),
        ("pybreaker_state", "breaker")
    );
    assert!(
        values.contains(&(2.0, breaker::State::HalfOpen)),
        "{values:?}"
    );
    assert_eq!(
        spec.sources[3],
        SourceSpec::Push {
            listen: Some("127.0.0.1:9400".parse().unwrap())
        }
    );
}

#[test]
fn breaker_source_errors_name_the_field_and_line() {
    let with = |source: &str| format!("{MINIMAL}\n[[sources]]\n{source}\n");
    let line_of =
        |text: &str, needle: &str| text.lines().position(|l| l.contains(needle)).unwrap() + 1;
    let text = with(
        "kind = \"prometheus\"\nurl = \"http://h:1/m\"\npreset = \"resilience4j\"\ninterval = \"10ms\"",
    );
    let (field, line, _) = error_of(&text);
    assert_eq!(
        (field.as_str(), line),
        ("sources[0].interval", line_of(&text, "10ms"))
    );
    let text = with("kind = \"prometheus\"\nurl = \"ftp://h/m\"\npreset = \"gauge\"");
    let (field, line, _) = error_of(&text);
    assert_eq!(
        (field.as_str(), line),
        ("sources[0].url", line_of(&text, "ftp"))
    );
    let text = with("kind = \"prometheus\"\nurl = \"http://h:1/m\"\npreset = \"gauge\"");
    assert_eq!(error_of(&text).0, "sources[0].metric");
    let text = with(
        "kind = \"prometheus\"\nurl = \"http://h:1/m\"\npreset = \"gauge\"\nmetric = \"m\"\nvalues = { shut = 0 }",
    );
    assert_eq!(error_of(&text).0, "sources[0].values.shut");
    let text = with(
        "kind = \"prometheus\"\nurl = \"http://h:1/m\"\npreset = \"resilience4j\"\nmetric = \"m\"",
    );
    assert_eq!(error_of(&text).0, "sources[0].metric");
    let text = with("kind = \"prometheus\"\nurl = \"http://h:1/m\"");
    assert_eq!(error_of(&text).0, "sources[0].preset");
    let text = with("kind = \"push\"\nlisten = \"nowhere\"");
    let (field, line, _) = error_of(&text);
    assert_eq!(
        (field.as_str(), line),
        ("sources[0].listen", line_of(&text, "nowhere"))
    );
    let text = with("kind = \"push\"\nurl = \"http://h:1/m\"");
    assert_eq!(error_of(&text).0, "sources[0].url");
    let text = with("kind = \"carrier-pigeon\"");
    assert!(
        error_of(&text).0.starts_with("sources"),
        "{:?}",
        error_of(&text)
    );
}

#[test]
fn targets_of_your_own_say_what_they_offer() {
    let spec = ExperimentSpec::parse(
        &format!(
            r#"{MINIMAL}
[fault]
target = "upstream"
rates = [1.0]

[targets]
shop = {{ url = "http://127.0.0.1:9000", offers = [] }}
upstream = {{ url = "http://127.0.0.1:9001", offers = ["pool", "reset"] }}
agent = "http://127.0.0.1:9002"
"#
        )
        .replace("users = 2", "users = 2\ntarget = \"shop\""),
    )
    .unwrap();
    assert_eq!(spec.load.target, "shop");
    assert_eq!(spec.offers_of("shop"), Offers::default());
    assert_eq!(spec.offers_of("upstream").offered(), vec!["reset", "pool"]);
    assert!(!spec.offers.contains_key("agent"));
    assert_eq!(spec.targets["shop"], "http://127.0.0.1:9000");
    assert_eq!(spec.fault.target, "upstream");
    // The embedded stack offers everything a Tolerant service does.
    let embedded = ExperimentSpec::parse(MINIMAL).unwrap();
    assert!(embedded.offers_of("payment").breaker_stream);
    assert!(embedded.offers_of("cart").cart_metrics);
    assert!(!embedded.offers_of("payment").cart_metrics);

    let with_targets = |targets: &str, load: &str| {
        format!(
            "{}\n[targets]\n{targets}\n",
            MINIMAL.replace("users = 2", &format!("users = 2\n{load}"))
        )
    };
    let text = with_targets("shop = \"http://127.0.0.1:9000\"", "target = \"shop\"");
    let (field, line, message) = error_of(&text);
    assert_eq!(field, "targets.shop", "{message}");
    assert_eq!(
        line,
        text.lines().position(|l| l.starts_with("shop")).unwrap() + 1
    );
    assert!(message.contains("offers = []"), "{message}");
    let text = with_targets(
        "shop = { url = \"http://127.0.0.1:9000\", offers = [\"teleport\"] }",
        "target = \"shop\"",
    );
    let (field, _, message) = error_of(&text);
    assert_eq!(field, "targets.shop.offers[0]", "{message}");
    let text = with_targets(
        "shop = { url = \"http://127.0.0.1:9000\" }",
        "target = \"store\"",
    );
    assert_eq!(error_of(&text).0, "load.target");
    let text = with_targets("Shop! = { url = \"http://127.0.0.1:9000\" }", "");
    assert_eq!(error_of(&text).0, "targets.Shop!");
}

#[test]
fn a_workload_of_your_own_is_read_and_its_errors_name_the_field() {
    let spec = ExperimentSpec::parse(&MINIMAL.replace(
        "users = 2",
        r#"users = 2
cookies = false
on_start = [{ method = "post", path = "/login", form = { user = "u{id}" } }]
values = { sku = ["A1", "B2"], id = { from = 1, to = 9 } }

[[load.tasks]]
name = "browse"
weight = 5
requests = [{ path = "/item/{sku}" }]

[[load.tasks]]
name = "order"
critical = true
requests = [
  { path = "/item/{sku}" },
  { method = "post", path = "/orders", name = "place order", form = { sku = "{sku}", qty = "{id}" }, expect = [201] },
]"#,
    ))
    .unwrap();
    let custom = spec.load.custom.as_ref().expect("a custom workload");
    assert_eq!(custom.tasks.len(), 2);
    assert_eq!(custom.tasks[0].weight, 5);
    assert_eq!(
        custom.endpoint_names,
        vec!["POST /login", "GET /item/{sku}", "place order"]
    );
    assert_eq!(custom.on_start.len(), 1);
    assert_eq!(custom.on_start[0].method, http::Method::POST);
    assert_eq!(custom.tasks[1].requests[1].method, http::Method::POST);
    assert_eq!(custom.tasks[1].requests[1].expect, vec![201]);
    assert_eq!(custom.critical_endpoint(), Some("place order"));
    assert!(!custom.cookies);

    let with = |tasks: &str| MINIMAL.replace("users = 2", &format!("users = 2\n{tasks}"));
    let text = with(
        "values = { sku = [\"A\"] }\n[[load.tasks]]\nname = \"t\"\nrequests = [{ path = \"/x/{skew}\" }]",
    );
    let (field, line, message) = error_of(&text);
    assert_eq!(field, "load.tasks[0].requests[0].path", "{message}");
    assert_eq!(
        line,
        text.lines().position(|l| l.contains("skew")).unwrap() + 1
    );
    assert!(message.contains("sku"), "{message}");
    let text = with("[[load.tasks]]\nname = \"t\"\nweight = 0\nrequests = [{ path = \"/\" }]");
    assert_eq!(error_of(&text).0, "load.tasks[0].weight");
    let text = with("[[load.tasks]]\nname = \"t\"\nrequests = [{ path = \"x\" }]");
    assert_eq!(error_of(&text).0, "load.tasks[0].requests[0].path");
    let text = with("[[load.tasks]]\nname = \"t\"\nrequests = [{ path = \"/\", expect = [999] }]");
    assert_eq!(error_of(&text).0, "load.tasks[0].requests[0].expect");
    let text = with("[[load.tasks]]\nname = \"t\"\nrequests = []");
    assert_eq!(error_of(&text).0, "load.tasks[0].requests");
    let text = with(
        "mix = \"online-boutique\"\n[[load.tasks]]\nname = \"t\"\nrequests = [{ path = \"/\" }]",
    );
    assert_eq!(error_of(&text).0, "load.mix");
    let text = with("cookies = false");
    assert_eq!(error_of(&text).0, "load.cookies");
    let text = with("on_start = [{ path = \"/\" }]");
    assert_eq!(error_of(&text).0, "load.on_start");
    let text = with(
        "on_start = [{ path = \"/\" }, { path = \"/{nope}\" }]\n[[load.tasks]]\nname = \"t\"\nrequests = [{ path = \"/\" }]",
    );
    assert_eq!(error_of(&text).0, "load.on_start[1].path");
}

#[test]
fn request_headers_and_json_bodies_are_checked_and_their_errors_name_the_field() {
    let with = |request: &str| {
        MINIMAL.replace(
            "users = 2",
            &format!(
                "users = 2\nvalues = {{ sku = [\"A1\"], bad = [\"a\\nb\"] }}\n[[load.tasks]]\nname = \"t\"\nrequests = [{request}]"
            ),
        )
    };
    let spec = ExperimentSpec::parse(&with(
        r#"{ method = "POST", path = "/api/orders", headers = { Authorization = "Bearer t-{sku}", "X-Trace" = "1" }, json = { sku = "{sku}", qty = 2, gift = false, tags = ["a", "{sku}"], ship = { to = "x" } } }"#,
    ))
    .expect("headers and a json body parse");
    let request = &spec.load.custom.as_ref().unwrap().tasks[0].requests[0];
    let names: Vec<&str> = request.headers.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, vec!["authorization", "x-trace"]);
    assert!(request.json.is_some() && request.form.is_empty());

    let cases = [
        (
            r#"{ path = "/", headers = { "Bad Name" = "x" } }"#,
            "load.tasks[0].requests[0].headers.Bad Name",
            "header name",
        ),
        (
            r#"{ path = "/", headers = { Host = "x" } }"#,
            "load.tasks[0].requests[0].headers.Host",
            "load driver",
        ),
        (
            r#"{ path = "/", headers = { "X-A" = "{nope}" } }"#,
            "load.tasks[0].requests[0].headers.X-A",
            "names no value list",
        ),
        (
            r#"{ path = "/", headers = { "X-A" = "{bad}" } }"#,
            "load.tasks[0].requests[0].headers.X-A",
            "load.values.bad",
        ),
        (
            r#"{ path = "/", headers = { "X-A" = "a\u0001b" } }"#,
            "load.tasks[0].requests[0].headers.X-A",
            "not a valid header value",
        ),
        (
            r#"{ path = "/", form = { a = "b" }, json = { a = "b" } }"#,
            "load.tasks[0].requests[0].json",
            "not both",
        ),
        (
            r#"{ path = "/", json = { a = [1, { b = "{nope}" }] } }"#,
            "load.tasks[0].requests[0].json.a[1].b",
            "names no value list",
        ),
        (
            r#"{ path = "/", json = { at = 1979-05-27 } }"#,
            "load.tasks[0].requests[0].json.at",
            "date",
        ),
    ];
    for (request, field, words) in cases {
        let (at, _, message) = error_of(&with(request));
        assert_eq!(at, field, "{request}: {message}");
        assert!(message.contains(words), "{request}: {message}");
    }
    let many: Vec<String> = (0..=crate::spec::workload::MAX_HEADERS)
        .map(|i| format!("\"X-{i}\" = \"v\""))
        .collect();
    let (at, _, message) = error_of(&with(&format!(
        "{{ path = \"/\", headers = {{ {} }} }}",
        many.join(", ")
    )));
    assert_eq!(at, "load.tasks[0].requests[0].headers", "{message}");
    let long = "v".repeat(crate::spec::workload::MAX_HEADER_VALUE + 1);
    let (at, _, message) = error_of(&with(&format!(
        "{{ path = \"/\", headers = {{ \"X-Long\" = \"{long}\" }} }}"
    )));
    assert_eq!(at, "load.tasks[0].requests[0].headers.X-Long", "{message}");
    let deep = format!("{}1{}", "[".repeat(20), "]".repeat(20));
    let (at, _, message) = error_of(&with(&format!(
        "{{ path = \"/\", json = {{ d = {deep} }} }}"
    )));
    assert!(
        at.starts_with("load.tasks[0].requests[0].json.d["),
        "{at}: {message}"
    );
    assert!(message.contains("nested"), "{message}");
}

#[test]
fn container_kinds_parse_with_kills_signal() {
    let source = format!(
        "{MINIMAL}\n[fault]\ntarget = \"payment\"\nkinds = [\"pause\", \"kill\", \"restart\"]\nsignal = \"term\"\nrates = [0.0, 1.0]\n"
    );
    let spec = ExperimentSpec::parse(&source).expect("container kinds parse");
    assert_eq!(
        spec.fault.kinds,
        vec![
            FaultKind::Pause,
            FaultKind::Kill { signal: "SIGTERM" },
            FaultKind::Restart
        ]
    );
    assert!(
        spec.fault
            .kinds
            .iter()
            .all(|kind| kind.name().is_container())
    );
    let labels: Vec<String> = spec
        .plan()
        .iter()
        .map(|run| run.condition.label())
        .collect();
    assert!(
        labels
            .iter()
            .any(|label| label.starts_with("kill SIGTERM @ 100%")),
        "{labels:?}"
    );
}

#[test]
fn a_signal_needs_kind_kill_and_a_known_name() {
    let without_kill = format!(
        "{MINIMAL}\n[fault]\ntarget = \"payment\"\nkind = \"pause\"\nsignal = \"KILL\"\nrates = [1.0]\n"
    );
    let (field, line, message) = error_of(&without_kill);
    assert_eq!((field.as_str(), line), ("fault.signal", 11), "{message}");
    let unknown = format!(
        "{MINIMAL}\n[fault]\ntarget = \"payment\"\nkind = \"kill\"\nsignal = \"SIGWHAT\"\nrates = [1.0]\n"
    );
    let (field, _, message) = error_of(&unknown);
    assert_eq!(field, "fault.signal", "{message}");
    assert!(
        message.contains("SIGWHAT") && message.contains("SIGKILL"),
        "{message}"
    );
}

/// Found by `tests/fuzz_spec.rs`: a bare `[` was a field error naming the empty field.
#[test]
fn a_bare_table_bracket_is_a_syntax_error_not_an_empty_field() {
    for source in ["[\n", "[]\n", &format!("{MINIMAL}\n[\n")] {
        let error = ExperimentSpec::parse(source).expect_err("not TOML");
        assert!(
            matches!(error, SpecError::Syntax { .. }),
            "{source:?}: {error:?}"
        );
    }
}

/// Found by `tests/fuzz_spec.rs`: a match method the agent refuses (empty, spaces) was accepted, so every run
/// failed to apply its fault.
#[test]
fn the_match_method_is_checked_by_the_agents_rule() {
    for method in ["", "G E T", "P0ST", &"A".repeat(33)] {
        let (field, _, message) = error_of(&format!(
            "{MINIMAL}\n[fault]\ntarget = \"payment\"\nrates = [1.0]\nmatch = {{ method = \"{method}\" }}\n"
        ));
        assert_eq!(field, "fault.match.method", "{method:?}: {message}");
    }
    let spec = ExperimentSpec::parse(&format!(
        "{MINIMAL}\n[fault]\ntarget = \"payment\"\nrates = [1.0]\nmatch = {{ method = \"post\" }}\n"
    ))
    .unwrap();
    assert_eq!(spec.fault.match_rule.method.as_deref(), Some("POST"));
}
