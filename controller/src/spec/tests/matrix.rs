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
