//! Fuzzing the experiment spec parser (`ExperimentSpec::parse`) with proptest: raw bytes, TOML-ish text, near-valid
//! specs whose every field may be absent or absurd, byte mutations of those, and a valid spec with exactly one
//! field set to an arbitrary value.
//!
//! Properties: parsing never panics; a rejected spec names the field (with one field changed, the error blames
//! that field — or another whose message names it, as `duration` is blamed for a `time_scale` that shrinks it
//! below a second); an accepted spec is within every documented bound, plans at most `MAX_RUNS` runs, and its
//! agent faults pass the agent's own validation. `cargo test` runs proptest's default 256 cases per property;
//! `PROPTEST_CASES=100000` is the long profile (see FUZZING.md). Failing cases are saved in
//! `tests/fuzz_spec.proptest-regressions` and replayed first.

use controller::test_support;
use std::time::Duration;

use controller::spec::{
    ConditionFault, ExperimentSpec, MAX_FAULT_DELAY, MAX_LEASE, MAX_NAME_BYTES,
    MAX_PATH_PREFIX_BYTES, MAX_RATE_LEVELS, MAX_ROUNDS, MAX_RUN_DURATION, MAX_RUNS,
    MAX_SCHEDULE_PERIODS, MAX_STOP_WINDOW, MAX_THINK_TIME, MAX_TIMEOUT, MAX_USERS,
    MAX_WRITTEN_DURATION, MIN_RUN_DURATION, RATE_RANGE, SpecError, TIME_SCALE_RANGE,
};
use proptest::prelude::*;
use proptest::sample::select;

/// The tables of a spec in the order they are written (`""` is the top level).
const TABLES: [&str; 8] = [
    "",
    "load",
    "fault",
    "breaker",
    "breaker.trip",
    "breaker.open",
    "breaker.half_open",
    "stop",
];

/// A valid spec, table by table: every key a fuzzed spec starts from.
const BASE: [(&str, &str, &str); 27] = [
    ("", "name", "\"fuzz\""),
    ("", "rounds", "2"),
    ("", "duration", "\"10s\""),
    ("", "warmup", "\"2s\""),
    ("", "time_scale", "1.0"),
    ("", "order", "\"fixed\""),
    ("", "seed", "7"),
    ("load", "users", "5"),
    ("load", "think_time", "[\"1s\", \"2s\"]"),
    ("load", "timeout", "\"5s\""),
    ("load", "mix", "\"online-boutique\""),
    ("fault", "target", "\"payment\""),
    ("fault", "kind", "\"error\""),
    ("fault", "status", "503"),
    ("fault", "rates", "[0.0, 0.5]"),
    ("fault", "lease", "\"30s\""),
    (
        "fault",
        "match",
        "{ method = \"POST\", path_prefix = \"/charge\" }",
    ),
    ("breaker", "modes", "[\"disabled\", \"enforce\"]"),
    ("breaker.trip", "consecutive_failures", "5"),
    ("breaker.open", "base", "\"30s\""),
    ("breaker.open", "backoff", "1.0"),
    ("breaker.open", "max", "\"5m\""),
    ("breaker.open", "jitter", "0.0"),
    ("breaker.half_open", "probes", "1"),
    ("breaker.half_open", "successes_to_close", "2"),
    ("stop", "availability_below", "0.05"),
    ("stop", "window", "\"60s\""),
];

/// What values a field is fuzzed with.
#[derive(Debug, Clone, Copy)]
enum Gen {
    Int,
    Float,
    Duration,
    Text,
    DurationList,
    TextList,
    Rates,
    Match,
    FailureRate,
    SlowCall,
    Schedule,
    Probes,
    /// A key no table has.
    Unknown,
}

/// Every field a fuzzed spec may hold: those of [`BASE`], the optional ones, and an unknown key per table.
const FIELDS: [(&str, &str, Gen); 48] = [
    ("", "name", Gen::Text),
    ("", "rounds", Gen::Int),
    ("", "duration", Gen::Duration),
    ("", "warmup", Gen::Duration),
    ("", "time_scale", Gen::Float),
    ("", "order", Gen::Text),
    ("", "seed", Gen::Int),
    ("load", "users", Gen::Int),
    ("load", "think_time", Gen::DurationList),
    ("load", "rate", Gen::Float),
    ("load", "timeout", Gen::Duration),
    ("load", "target", Gen::Text),
    ("load", "mix", Gen::Text),
    ("fault", "target", Gen::Text),
    ("fault", "kind", Gen::Text),
    ("fault", "kinds", Gen::TextList),
    ("fault", "status", Gen::Int),
    ("fault", "rates", Gen::Rates),
    ("fault", "delay", Gen::Duration),
    ("fault", "jitter", Gen::Duration),
    ("fault", "lease", Gen::Duration),
    ("fault", "signal", Gen::Text),
    ("fault", "match", Gen::Match),
    ("fault", "schedule", Gen::Schedule),
    ("breaker", "modes", Gen::TextList),
    ("breaker.trip", "consecutive_failures", Gen::Int),
    ("breaker.trip", "failure_rate", Gen::FailureRate),
    ("breaker.trip", "slow_call", Gen::SlowCall),
    ("breaker.open", "base", Gen::Duration),
    ("breaker.open", "backoff", Gen::Float),
    ("breaker.open", "max", Gen::Duration),
    ("breaker.open", "jitter", Gen::Float),
    ("breaker.open", "seed", Gen::Int),
    ("breaker.half_open", "probes", Gen::Probes),
    ("breaker.half_open", "successes_to_close", Gen::Int),
    ("stop", "availability_below", Gen::Float),
    ("stop", "window", Gen::Duration),
    ("", "colour", Gen::Unknown),
    ("load", "colour", Gen::Unknown),
    ("fault", "colour", Gen::Unknown),
    ("breaker", "colour", Gen::Unknown),
    ("breaker.trip", "colour", Gen::Unknown),
    ("breaker.open", "colour", Gen::Unknown),
    ("breaker.half_open", "colour", Gen::Unknown),
    ("stop", "colour", Gen::Unknown),
    ("load", "cookies", Gen::Unknown),
    ("load", "values", Gen::Unknown),
    ("load", "tasks", Gen::Unknown),
];

fn toml_string(text: &str) -> String {
    toml::Value::String(text.to_owned()).to_string()
}

fn toml_float(value: f64) -> String {
    if value.is_nan() {
        "nan".into()
    } else if value.is_infinite() {
        if value > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        format!("{value:?}")
    }
}

fn int() -> BoxedStrategy<String> {
    let edges: Vec<i64> = vec![
        0,
        1,
        -1,
        2,
        5,
        100,
        399,
        400,
        599,
        600,
        1000,
        1001,
        10_000,
        10_001,
        100_000,
        100_001,
        i64::from(u16::MAX) + 1,
        i64::from(u32::MAX),
        i64::from(u32::MAX) + 1,
        i64::MAX,
        i64::MIN,
    ];
    prop_oneof![select(edges), any::<i64>(), 0i64..3000]
        .prop_map(|n| n.to_string())
        .boxed()
}

fn float() -> BoxedStrategy<String> {
    let edges = vec![
        0.0,
        -0.0,
        0.5,
        1.0,
        -1.0,
        2.0,
        1e-300,
        1e300,
        1e-3,
        9.99e-4,
        1e6,
        1.000001e6,
        1e-2,
        1.0000001,
        f64::MIN_POSITIVE,
        5e-324,
        f64::MAX,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
    ];
    prop_oneof![select(edges), any::<f64>(), 0.0..1.0f64]
        .prop_map(toml_float)
        .boxed()
}

fn duration_text() -> BoxedStrategy<String> {
    let edges = vec![
        "500000000000y",
        "0s",
        "0ns",
        "1ns",
        "999ms",
        "1s",
        "30s",
        "250ms",
        "18446744073709551615s",
        "18446744073709551616s",
        "584542046091y",
        "99999999999999999999999ns",
        "366d",
        "367d",
        "1y",
        "7d",
        "8d",
        "1h",
        "61m",
        "10m 1s",
        "",
        " ",
        "-1s",
        "1.5s",
        "1e3s",
        "soon",
    ];
    let units = select(vec!["ns", "us", "ms", "s", "m", "h", "d", "w", "M", "y"]);
    prop_oneof![
        select(edges).prop_map(str::to_owned),
        (any::<u64>(), units.clone()).prop_map(|(n, unit)| format!("{n}{unit}")),
        (0u64..5000, units).prop_map(|(n, unit)| format!("{n}{unit}")),
    ]
    .boxed()
}

fn duration() -> BoxedStrategy<String> {
    duration_text().prop_map(|text| toml_string(&text)).boxed()
}

fn text() -> BoxedStrategy<String> {
    let words = vec![
        "payment",
        "frontend",
        "checkout",
        "agent",
        "nobody",
        "",
        " ",
        "POST",
        "G E T",
        "/charge",
        "charge",
        "fixed",
        "randomized",
        "online-boutique",
        "all",
        "SIGKILL",
        "term",
        "SIGFOO",
        "error",
        "hang",
        "delay",
        "reset",
        "pause",
        "stop",
        "kill",
        "restart",
        "enforce",
        "disabled",
        "shadow",
        "forced-open",
        "sideways",
    ];
    prop_oneof![
        4 => select(words).prop_map(str::to_owned),
        2 => "\\PC{0,40}",
        1 => (0usize..3000).prop_map(|n| format!("/{}", "p".repeat(n))),
    ]
    .prop_map(|text| toml_string(&text))
    .boxed()
}

fn list(element: BoxedStrategy<String>, max: usize) -> BoxedStrategy<String> {
    proptest::collection::vec(element, 0..max)
        .prop_map(|items| format!("[{}]", items.join(", ")))
        .boxed()
}

/// Rate levels: distinct fractions (possibly more than the maximum) or arbitrary numbers.
fn rates() -> BoxedStrategy<String> {
    prop_oneof![
        proptest::collection::btree_set(0u32..=1000, 0..130).prop_map(|set| {
            let items: Vec<String> = set
                .into_iter()
                .map(|n| toml_float(f64::from(n) / 1000.0))
                .collect();
            format!("[{}]", items.join(", "))
        }),
        list(float(), 6),
    ]
    .boxed()
}

fn inline(pairs: Vec<(&'static str, String)>) -> String {
    let items: Vec<String> = pairs
        .into_iter()
        .map(|(k, v)| format!("{k} = {v}"))
        .collect();
    format!("{{ {} }}", items.join(", "))
}

/// Any value of any shape (a field given the wrong type).
fn any_value() -> BoxedStrategy<String> {
    prop_oneof![
        int(),
        float(),
        duration(),
        text(),
        Just("true".to_owned()),
        list(int(), 4),
        Just("{ colour = 1 }".to_owned()),
    ]
    .boxed()
}

impl Gen {
    fn strategy(self) -> BoxedStrategy<String> {
        match self {
            Gen::Int => int(),
            Gen::Float => float(),
            Gen::Duration => duration(),
            Gen::Text => text(),
            Gen::DurationList => list(duration(), 4),
            Gen::TextList => list(text(), 5),
            Gen::Rates => rates(),
            Gen::Match => (text(), text(), any::<bool>())
                .prop_map(|(method, prefix, extra)| {
                    let mut pairs = vec![("method", method), ("path_prefix", prefix)];
                    if extra {
                        pairs.push(("verb", "\"GET\"".to_owned()));
                    }
                    inline(pairs)
                })
                .boxed(),
            Gen::FailureRate => (float(), duration(), int())
                .prop_map(|(threshold, window, min_calls)| {
                    inline(vec![
                        ("threshold", threshold),
                        ("window", window),
                        ("min_calls", min_calls),
                    ])
                })
                .boxed(),
            Gen::SlowCall => (duration(), float(), duration(), int())
                .prop_map(|(duration, rate, window, min_calls)| {
                    inline(vec![
                        ("duration", duration),
                        ("rate", rate),
                        ("window", window),
                        ("min_calls", min_calls),
                    ])
                })
                .boxed(),
            Gen::Schedule => proptest::collection::vec(
                (select(vec!["start", "length", "on", "off"]), duration()),
                0..4,
            )
            .prop_map(|mut pairs| {
                pairs.sort_by_key(|(key, _)| *key);
                pairs.dedup_by_key(|(key, _)| *key);
                inline(pairs)
            })
            .boxed(),
            Gen::Probes => prop_oneof![int(), text()].boxed(),
            Gen::Unknown => any_value(),
        }
    }
}

/// A spec as (table, key, TOML literal) entries.
type Entries = Vec<(&'static str, &'static str, String)>;

fn base() -> Entries {
    BASE.iter()
        .map(|(table, key, value)| (*table, *key, (*value).to_owned()))
        .collect()
}

fn set(entries: &mut Entries, table: &'static str, key: &'static str, value: Option<String>) {
    entries.retain(|(t, k, _)| !(*t == table && *k == key));
    if let Some(value) = value {
        entries.push((table, key, value));
    }
}

fn render(entries: &Entries) -> String {
    let mut text = String::new();
    for table in TABLES {
        if !table.is_empty() {
            text.push_str(&format!("\n[{table}]\n"));
        }
        for (_, key, value) in entries.iter().filter(|(t, _, _)| *t == table) {
            text.push_str(&format!("{key} = {value}\n"));
        }
    }
    text
}

/// Index of a field in [`FIELDS`] and its new value.
fn one_field() -> impl Strategy<Value = (usize, String)> {
    (0..FIELDS.len()).prop_flat_map(|index| {
        let value = prop_oneof![3 => FIELDS[index].2.strategy(), 1 => any_value()];
        (Just(index), value)
    })
}

/// Every field kept (as in [`BASE`]), removed, or set to a fuzzed value.
fn near_valid() -> impl Strategy<Value = String> {
    let choices: Vec<BoxedStrategy<Option<Option<String>>>> = FIELDS
        .iter()
        .map(|(_, _, generator)| {
            prop_oneof![
                3 => Just(None),
                1 => Just(Some(None)),
                2 => generator.strategy().prop_map(|value| Some(Some(value))),
            ]
            .boxed()
        })
        .collect();
    choices.prop_map(|choices| {
        let mut entries = base();
        for ((table, key, _), choice) in FIELDS.iter().zip(choices) {
            if let Some(value) = choice {
                set(&mut entries, table, key, value);
            }
        }
        render(&entries)
    })
}

/// A rejected spec names a field in its error, or says the text is not TOML.
fn check_error(error: &SpecError, text: &str) -> Result<(), TestCaseError> {
    match error {
        SpecError::Field { field, .. } => {
            prop_assert!(!field.is_empty(), "empty field: {error}\n{text}");
            prop_assert!(error.to_string().contains(field.as_str()));
        }
        SpecError::Syntax { .. } => {}
        SpecError::Read { .. } => prop_assert!(false, "a parse cannot fail to read: {error}"),
    }
    Ok(())
}

fn check_bounds(spec: &ExperimentSpec, text: &str) -> Result<(), TestCaseError> {
    let context = || format!("accepted:\n{text}\n{spec:?}");
    prop_assert!((1..=MAX_ROUNDS).contains(&spec.rounds), "{}", context());
    prop_assert!(!spec.name.is_empty() && spec.name.len() <= MAX_NAME_BYTES);
    prop_assert!(spec.duration <= MAX_WRITTEN_DURATION && spec.warmup < spec.duration);
    let (low, high) = TIME_SCALE_RANGE;
    prop_assert!((low..=high).contains(&spec.time_scale), "{}", context());
    prop_assert!(spec.run_duration() >= MIN_RUN_DURATION, "{}", context());
    // Each half is scaled on its own, so the sum may be a nanosecond over the checked total.
    let run = spec.run_warmup().saturating_add(spec.run_duration());
    prop_assert!(
        run <= MAX_RUN_DURATION + Duration::from_micros(1),
        "{}",
        context()
    );

    let load = &spec.load;
    prop_assert!((1..=MAX_USERS).contains(&load.users), "{}", context());
    let (think_min, think_max) = load.think_time;
    prop_assert!(think_min <= think_max && think_max <= MAX_THINK_TIME);
    if let Some(rate) = load.rate {
        prop_assert!(
            (RATE_RANGE.0..=RATE_RANGE.1).contains(&rate),
            "{}",
            context()
        );
    }
    prop_assert!(!load.timeout.is_zero() && load.timeout <= MAX_TIMEOUT);

    let fault = &spec.fault;
    prop_assert!(!fault.kinds.is_empty());
    prop_assert!(!fault.rates.is_empty() && fault.rates.len() <= MAX_RATE_LEVELS);
    for (i, rate) in fault.rates.iter().enumerate() {
        prop_assert!((0.0..=1.0).contains(rate), "{}", context());
        prop_assert!(!fault.rates[..i].contains(rate), "{}", context());
    }
    for kind in &fault.kinds {
        match kind {
            ConditionFault::Error { status } => prop_assert!((400..=599).contains(&status.get())),
            ConditionFault::Delay { delay, jitter } => {
                prop_assert!(!delay.is_zero() && *delay <= MAX_FAULT_DELAY);
                prop_assert!(*jitter <= MAX_FAULT_DELAY);
            }
            _ => {}
        }
    }
    prop_assert!(fault.lease >= Duration::from_secs(1) && fault.lease <= MAX_LEASE);
    if let Some(prefix) = &fault.match_rule.path_prefix {
        prop_assert!(prefix.starts_with('/') && prefix.len() <= MAX_PATH_PREFIX_BYTES);
    }

    prop_assert!(!spec.breaker.modes.is_empty());
    for mode in &spec.breaker.modes {
        let scaled = spec.breaker_config(*mode);
        prop_assert!(scaled.is_ok(), "{scaled:?} {}", context());
    }
    if let Some(stop) = &spec.stop {
        prop_assert!(stop.window >= Duration::from_secs(1) && stop.window <= MAX_STOP_WINDOW);
        if let Some(below) = stop.availability_below {
            prop_assert!((0.0..=1.0).contains(&below));
        }
    }

    // The fault's on-periods: at most MAX_SCHEDULE_PERIODS, in order, inside the run.
    let periods = spec.fault_periods();
    prop_assert!(
        periods.len() <= MAX_SCHEDULE_PERIODS,
        "{} periods: {}",
        periods.len(),
        context()
    );
    let mut previous_end = Duration::ZERO;
    for (start, end) in &periods {
        prop_assert!(
            previous_end <= *start && start < end && *end <= run,
            "{periods:?}: {}",
            context()
        );
        previous_end = *end;
    }

    let runs = spec.conditions().len() * spec.rounds as usize;
    prop_assert!(runs <= MAX_RUNS, "{runs} runs: {}", context());
    let plan = spec.plan();
    prop_assert_eq!(plan.len(), runs);
    // What the runner will ask of the agent passes the agent's own rules.
    for planned in plan.iter().take(spec.conditions().len()) {
        let checked = controller::runner::fault_spec(spec, planned);
        prop_assert!(checked.is_ok(), "agent refuses {checked:?}: {}", context());
    }
    Ok(())
}

fn check(text: &str) -> Result<(), TestCaseError> {
    match ExperimentSpec::parse(text) {
        Ok(spec) => check_bounds(&spec, text),
        Err(error) => check_error(&error, text),
    }
}

#[test]
fn the_base_spec_is_valid() {
    let spec = test_support::spec(&render(&base()));
    assert_eq!(spec.plan().len(), 8);
}

proptest! {
    #[test]
    fn raw_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..1024)) {
        check(&String::from_utf8_lossy(&bytes))?;
    }

    #[test]
    fn toml_like_text_never_panics(text in "[\\[\\]a-z_.=\" 0-9\n{},#-]{0,400}") {
        check(&text)?;
    }

    #[test]
    fn near_valid_specs_are_rejected_by_field_or_within_bounds(text in near_valid()) {
        check(&text)?;
    }

    #[test]
    fn mutated_specs_never_panic(
        text in near_valid(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), 0u8..3, any::<u8>()), 1..8),
    ) {
        let mut bytes = text.into_bytes();
        for (at, op, byte) in edits {
            let at = at.index(bytes.len() + 1);
            match op {
                0 => bytes.insert(at, byte),
                1 if at < bytes.len() => { bytes.remove(at); }
                _ if at < bytes.len() => bytes[at] = byte,
                _ => {}
            }
        }
        check(&String::from_utf8_lossy(&bytes))?;
    }

    #[test]
    fn one_changed_field_is_the_field_blamed((index, value) in one_field()) {
        let (table, key, _) = FIELDS[index];
        let mut entries = base();
        set(&mut entries, table, key, Some(value));
        let text = render(&entries);
        match ExperimentSpec::parse(&text) {
            Ok(spec) => check_bounds(&spec, &text)?,
            Err(error) => {
                check_error(&error, &text)?;
                let path = if table.is_empty() { key.to_owned() } else { format!("{table}.{key}") };
                let SpecError::Field { field, message, .. } = &error else {
                    return Err(TestCaseError::fail(format!("{path} changed, no field named: {error}\n{text}")));
                };
                let blamed_it = field == &path
                    || field.starts_with(&format!("{path}."))
                    || field.starts_with(&format!("{path}["))
                    || message.contains(key);
                prop_assert!(blamed_it, "{path} changed, {field} blamed: {error}\n{text}");
            }
        }
    }
}
