//! The matrix: conditions crossed, plans shuffled per round from the seed, fixed order kept.

use super::*;
use crate::test_support;

#[test]
fn matrix_crosses_kinds_rates_and_modes() {
    let spec = test_support::spec(&format!(
        "{MINIMAL}rate = 5.0\n[fault]\ntarget = \"payment\"\nkinds = [\"error\", \"delay\"]\ndelay = \"200ms\"\nrates = [0.1, 0.9]\n[breaker]\nmodes = [\"shadow\", \"enforce\"]\n"
    ));
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
    let spec = test_support::spec(&format!(
        "order = \"fixed\"\nrounds = 3\n{MINIMAL}[fault]\ntarget = \"payment\"\nrates = [0.0, 0.5, 1.0]\n"
    ));
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
fn named_configs_and_fault_profiles_expand_as_factors_with_their_own_config_and_schedule() {
    let spec = ExperimentSpec::parse(
        r#"
name = "levels"
duration = "60s"
[load]
users = 5
[fault]
target = "payment"
kind = "error"
[[fault.profiles]]
name = "partial"
rate = 0.25
[[fault.profiles]]
name = "blips"
rate = 1.0
schedule = { start = "10s", on = "3s", off = "27s" }
[breaker]
modes = ["enforce"]
[[breaker.configs]]
name = "study"
trip = { consecutive_failures = 5 }
open = { base = "30s", max = "30s" }
[[breaker.configs]]
name = "window"
trip = { failure_rate = { threshold = 0.2, window = "10s", min_calls = 10 } }
open = { base = "2s", max = "2s" }
"#,
    )
    .expect("valid");
    let conditions = spec.conditions();
    let labels: Vec<String> = conditions
        .iter()
        .map(|c| crate::spec::label_in(&spec, c))
        .collect();
    assert_eq!(
        labels,
        [
            "partial: error 500 @ 25% / enforce / study",
            "partial: error 500 @ 25% / enforce / window",
            "blips: error 500 @ 100% / enforce / study",
            "blips: error 500 @ 100% / enforce / window",
        ]
    );
    assert_eq!(
        conditions[1].label(),
        "error 500 @ 25% / enforce · profile 1 · config 2"
    );
    let window = spec.breaker_config_of(&conditions[3]).expect("config");
    assert!(window.trip().failure_rate().is_some());
    assert_eq!(
        spec.breaker_config_of(&conditions[2])
            .expect("config")
            .open()
            .base()
            .as_secs(),
        30
    );
    assert_eq!(
        spec.fault_periods_of(&conditions[0]).len(),
        1,
        "the whole run"
    );
    assert_eq!(
        spec.fault_periods_of(&conditions[2]).len(),
        2,
        "10–13 s and 40–43 s"
    );
    // The condition's JSON is byte-stable for specs without the new levels.
    let plain = ExperimentSpec::parse("name = \"x\"\nduration = \"60s\"\n[load]\nusers = 1\n")
        .expect("valid");
    let json = serde_json::to_string(&plain.conditions()[0]).expect("json");
    assert!(
        !json.contains("fault_profile") && !json.contains("breaker_config"),
        "{json}"
    );
}

#[test]
fn named_levels_are_checked_and_cannot_be_mixed_with_the_single_ones() {
    let base = "name = \"x\"\nduration = \"60s\"\n[load]\nusers = 1\n";
    for (tail, field) in [
        (
            "[fault]\ntarget = \"payment\"\nrates = [0.5]\n[[fault.profiles]]\nname = \"p\"\nrate = 0.5\n",
            "fault.rates",
        ),
        (
            "[fault]\ntarget = \"payment\"\n[[fault.profiles]]\nname = \"p\"\nrate = 1.5\n",
            "fault.profiles[0].rate",
        ),
        (
            "[fault]\ntarget = \"payment\"\n[[fault.profiles]]\nname = \"p\"\nrate = 0.5\n[[fault.profiles]]\nname = \"p\"\nrate = 0.2\n",
            "fault.profiles[1].name",
        ),
        (
            "[fault]\ntarget = \"payment\"\n[[fault.profiles]]\nname = \"p\"\nrate = 0.5\nschedule = { start = \"90s\", length = \"1s\" }\n",
            "fault.profiles[0].schedule.start",
        ),
        (
            "[breaker]\nmodes = [\"enforce\"]\ntrip = { consecutive_failures = 3 }\n[[breaker.configs]]\nname = \"a\"\n",
            "breaker.configs",
        ),
        (
            "[breaker]\nmodes = [\"enforce\"]\n[[breaker.configs]]\nname = \"a\"\nopen = { base = \"0s\" }\n",
            "breaker.configs[0].open.base",
        ),
    ] {
        let error = ExperimentSpec::parse(&format!("{base}{tail}")).expect_err(field);
        assert_eq!(error.field(), Some(field), "{error}");
    }
}
