//! The study's three decisions a breaker cannot make for the team, answered for one input: match the detector to
//! the failure rates you care about, decide what a rejection is worth, audit what failure does to your state.

use serde::Serialize;

use crate::advisor::candidates::detector_family;
use crate::advisor::current::CurrentPlacement;
use crate::advisor::input::TuneInput;
use crate::advisor::search::Evaluation;

/// One decision and what it came to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decision {
    /// `detector`, `rejection_price` or `state`.
    pub decision: &'static str,
    pub answer: String,
}

const FAMILIES: [&str; 4] = [
    "consecutive_failures",
    "failure_rate",
    "last_calls",
    "slow_call",
];

/// The three decisions for `input`, from its ranked candidates.
pub fn decisions(
    input: &TuneInput,
    ranked: &[Evaluation],
    current: Option<&CurrentPlacement>,
) -> Vec<Decision> {
    vec![
        detector(input, ranked, current),
        rejection_price(input, ranked),
        state(input, ranked),
    ]
}

/// Which detector families detect each sustained failure at all, and within the constraint.
fn detector(
    input: &TuneInput,
    ranked: &[Evaluation],
    current: Option<&CurrentPlacement>,
) -> Decision {
    let within = input.constraints.detect_within.map(|d| d.as_secs_f64());
    let mut parts = Vec::new();
    for (index, profile) in input.profiles.iter().enumerate() {
        if !profile.must_be_detected() {
            continue;
        }
        let mut by_family = Vec::new();
        for family in FAMILIES {
            let of_family: Vec<&Evaluation> = ranked
                .iter()
                .filter(|e| detector_family(&e.config) == family)
                .collect();
            if of_family.is_empty() {
                continue;
            }
            let detected = of_family
                .iter()
                .filter(|e| {
                    e.per_profile[index]
                        .detect_s
                        .is_some_and(|d| within.is_none_or(|w| d <= w))
                })
                .count();
            by_family.push(format!("{family} {detected}/{}", of_family.len()));
        }
        parts.push(format!(
            "{} is detected{} by {}",
            profile.name,
            within.map_or(String::new(), |w| format!(" within {w} s")),
            by_family.join(", ")
        ));
    }
    let recommended = &ranked[0];
    let mut answer = if parts.is_empty() {
        "no profile is a sustained failure to detect; the detector is chosen on cost alone"
            .to_owned()
    } else {
        parts.join("; ")
    };
    answer.push_str(&format!(
        ". The recommendation uses {}",
        detector_family(&recommended.config)
    ));
    if let Some(current) = current {
        let blind: Vec<&str> = input
            .profiles
            .iter()
            .zip(&current.evaluation.per_profile)
            .filter(|(p, f)| p.must_be_detected() && f.detect_s.is_none())
            .map(|(p, _)| p.name.as_str())
            .collect();
        answer.push_str(&format!(
            "; the current config ({}) is {}",
            detector_family(&current.evaluation.config),
            if blind.is_empty() {
                "not blind to any of them".to_owned()
            } else {
                format!("blind to {}", blind.join(", "))
            }
        ));
    }
    Decision {
        decision: "detector",
        answer: format!("{answer}."),
    }
}

/// What the pick rejects that would have succeeded, and the pick if a rejection were free or ten times dearer.
fn rejection_price(input: &TuneInput, ranked: &[Evaluation]) -> Decision {
    let recommended = &ranked[0];
    let price = input.costs.rejected_success;
    let rejected: f64 = weighted(input, recommended, |f| f.rejected_success);
    let pick_at = |factor: f64| {
        ranked
            .iter()
            .filter(|e| e.feasible() == recommended.feasible())
            .min_by(|a, b| {
                let cost = |e: &Evaluation| e.cost.total + (factor - 1.0) * e.cost.rejected_success;
                cost(a).total_cmp(&cost(b))
            })
            .unwrap_or(recommended)
    };
    let free = pick_at(0.0);
    let dear = pick_at(10.0);
    let say = |e: &Evaluation| {
        if e.config == recommended.config {
            "the same".to_owned()
        } else {
            e.label.clone()
        }
    };
    Decision {
        decision: "rejection_price",
        answer: format!(
            "at {price} a rejection, the pick turns away {rejected:.0} requests an hour that would have succeeded \
             (weighted over the profiles) to save {:.0} caller-seconds; were a rejection free the pick would be {}, \
             at ten times the price {}",
            recommended.saved_s,
            say(free),
            say(dear)
        ),
    }
}

/// What the rejections do to state the simulator cannot see.
fn state(input: &TuneInput, ranked: &[Evaluation]) -> Decision {
    let recommended = &ranked[0];
    let worst = input
        .profiles
        .iter()
        .zip(&recommended.per_profile)
        .max_by(|a, b| a.1.rejected.total_cmp(&b.1.rejected));
    let answer = match worst {
        Some((profile, figures)) if figures.rejected > 0.0 => format!(
            "in {} the pick rejects {:.0} requests an hour, each an operation whose effects did not happen (in the \
             study, a checkout whose cart was never emptied, making every later cart view slower); the simulator \
             has no state, so audit it: `--verify` runs the candidates on the testbed, whose report shows cart \
             inflation",
            profile.name, figures.rejected
        ),
        _ => "the pick rejects nothing in these profiles: no operation is skipped, no state left behind".to_owned(),
    };
    Decision {
        decision: "state",
        answer,
    }
}

/// The profiles' weighted mean of one figure.
fn weighted(
    input: &TuneInput,
    evaluation: &Evaluation,
    figure: impl Fn(&crate::advisor::search::ProfileFigures) -> f64,
) -> f64 {
    let total = input.total_weight().max(f64::MIN_POSITIVE);
    input
        .profiles
        .iter()
        .zip(&evaluation.per_profile)
        .map(|(p, f)| p.weight / total * figure(f))
        .sum()
}
