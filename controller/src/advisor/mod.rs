//! The breaker advisor (`tolerant tune`): which breaker settings to ship for the team's traffic and the failures
//! it cares about, found by a search on `breaker::sim`, priced by the team's own cost weights, kept to its
//! constraints, explained (which constraint or cost term decided, and what the study's three decisions came to),
//! set on a Pareto front with the team's current config, read from and written in the vocabulary of the team's
//! library (`libraries/`), and proven by an experiment (`verify.rs`).
//!
//! `input.rs` the TOML input, `file.rs` the capped read of every file it takes, `current.rs` the team's current
//! config and its place on the front, `profile.rs` a profile as a scenario, `candidates.rs` the search space,
//! `search.rs` the simulations, cost model, ranking and front, `decisions.rs` the three decisions, `plot.rs` the
//! SVG, `libraries/` the five libraries' formats, `verify.rs` the experiment.

pub mod candidates;
mod current;
pub mod decisions;
mod file;
pub mod input;
pub mod libraries;
pub mod plot;
pub mod profile;
pub mod search;
#[cfg(test)]
mod tests;
pub mod verify;

use breaker::BreakerConfig;
use serde::Serialize;
use serde_json::{Value, json};

pub use candidates::{candidates, label};
pub use current::{CurrentConfig, CurrentError, CurrentPlacement};
pub use decisions::Decision;
pub use file::{MAX_FILE_BYTES, read_capped};
pub use input::{Costs, Profile, ProfileKind, TuneInput};
pub use libraries::{FieldNote, Imported, Library, NoteKind};
pub use search::{CostTerms, Evaluation, Prepared, ProfileError, Violation};

/// Why the recommendation is the one it is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Why {
    /// The constraint or cost term that decided (`detect_within`, `false_trips_per_hour`, `rejected_success`, …).
    pub decided_by: String,
    pub reasons: Vec<String>,
    /// The study's three decisions, for this input.
    pub decisions: Vec<Decision>,
    pub candidates: usize,
    pub feasible: usize,
}

/// Everything the advisor says.
#[derive(Debug, Clone, PartialEq)]
pub struct Advice {
    pub recommended: Evaluation,
    pub why: Why,
    pub front: Vec<Evaluation>,
    pub current: Option<CurrentPlacement>,
    /// Every candidate evaluated, ranked (for the chart).
    pub evaluations: Vec<Evaluation>,
    /// The library the search was restricted to (`--format`), if any.
    pub library: Option<Library>,
}

/// How a search runs.
#[derive(Debug, Clone, Default)]
pub struct AdviseOptions {
    /// Only configs this library can express (`--format`).
    pub library: Option<Library>,
    /// Candidates to search instead of the grid (tests).
    pub candidates: Option<Vec<BreakerConfig>>,
}

/// A search that could not run.
#[derive(Debug, thiserror::Error)]
pub enum AdviseError {
    #[error(transparent)]
    Profile(#[from] ProfileError),
    #[error("no candidate can be written in {0}'s vocabulary")]
    NothingExpressible(&'static str),
}

/// Search, price, rank, explain.
pub fn advise(
    input: &TuneInput,
    current: Option<&CurrentConfig>,
    options: &AdviseOptions,
) -> Result<Advice, AdviseError> {
    let prepared = Prepared::new(input)?;
    let mut grid = options
        .candidates
        .clone()
        .unwrap_or_else(|| candidates(input));
    if let Some(library) = options.library {
        grid.retain(|config| library.expresses(config).is_ok());
        if grid.is_empty() {
            return Err(AdviseError::NothingExpressible(library.as_str()));
        }
    }
    let evaluations = search::rank(&prepared, &grid);
    let front: Vec<Evaluation> = search::front(&evaluations).into_iter().cloned().collect();
    let recommended = evaluations[0].clone();
    let current = current.map(|current| {
        let evaluation = prepared.evaluate(&current.config);
        let dominated_by = front
            .iter()
            .filter(|point| search::dominates(point, &evaluation))
            .map(|point| point.label.clone())
            .collect::<Vec<_>>();
        let on_front = front.iter().any(|point| point.config == evaluation.config);
        let rank = 1 + evaluations
            .iter()
            .filter(|e| {
                (e.feasible(), -(e.cost.total)) > (evaluation.feasible(), -(evaluation.cost.total))
            })
            .count();
        CurrentPlacement {
            evaluation,
            source: current.source.clone(),
            notes: current.notes.clone(),
            on_front,
            dominated_by,
            rank,
        }
    });
    let why = explain(input, &evaluations, current.as_ref());
    Ok(Advice {
        recommended,
        why,
        front,
        current,
        evaluations,
        library: options.library,
    })
}

/// Which constraint or cost term decided, and the three decisions.
fn explain(input: &TuneInput, ranked: &[Evaluation], current: Option<&CurrentPlacement>) -> Why {
    let recommended = &ranked[0];
    let feasible = ranked.iter().filter(|e| e.feasible()).count();
    let mut reasons = Vec::new();
    let cheapest = ranked
        .iter()
        .min_by(|a, b| a.cost.total.total_cmp(&b.cost.total))
        .unwrap_or(recommended);
    let decided_by;
    if !recommended.feasible() {
        decided_by = "no feasible candidate".to_owned();
        reasons.push(format!(
            "no candidate keeps every constraint; the one breaking the fewest ({}) and cheapest among those is shown",
            recommended.violations.len()
        ));
    } else if cheapest.config != recommended.config {
        // A constraint excluded a cheaper config: name the one that did, with how many it excluded.
        let constraint = cheapest
            .violations
            .first()
            .map_or("constraints", Violation::constraint);
        decided_by = constraint.to_owned();
        for name in ["detect_within", "false_trips_per_hour"] {
            let excluded = ranked
                .iter()
                .filter(|e| e.violations.iter().any(|v| v.constraint() == name))
                .count();
            if excluded > 0 {
                reasons.push(format!(
                    "{name} excludes {excluded} of {} candidates",
                    ranked.len()
                ));
            }
        }
        reasons.push(format!(
            "the cheapest candidate overall, {} (cost {:.1}/h), breaks {}: {}",
            cheapest.label,
            cheapest.cost.total,
            constraint,
            describe(&cheapest.violations)
        ));
    } else {
        decided_by = runner_up_term(ranked)
            .unwrap_or("rejected_success")
            .to_owned();
        reasons
            .push("every constraint leaves the cheapest candidate in: the cost decided".to_owned());
    }
    if let Some(term) = runner_up_term(ranked) {
        let runner_up = ranked.iter().skip(1).find(|e| e.feasible());
        if let Some(runner_up) = runner_up {
            reasons.push(format!(
                "against the runner-up ({}, cost {:.1}/h) the recommendation wins most on {term}",
                runner_up.label, runner_up.cost.total
            ));
        }
    }
    reasons.push(format!(
        "recommended: {} — cost {:.1}/h ({})",
        recommended.label,
        recommended.cost.total,
        recommended
            .cost
            .named()
            .iter()
            .filter(|(_, v)| *v > 0.0)
            .map(|(n, v)| format!("{n} {v:.1}"))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    if let Some(current) = current {
        let e = &current.evaluation;
        reasons.push(format!(
            "current ({}): {} — cost {:.1}/h, rank {} of {}{}",
            current.source,
            e.label,
            e.cost.total,
            current.rank,
            ranked.len() + 1,
            if e.feasible() {
                String::new()
            } else {
                format!("; breaks {}", describe(&e.violations))
            }
        ));
    }
    Why {
        decided_by,
        reasons,
        decisions: decisions::decisions(input, ranked, current),
        candidates: ranked.len(),
        feasible,
    }
}

/// The cost term on which the recommendation beats the next feasible candidate by the most.
fn runner_up_term(ranked: &[Evaluation]) -> Option<&'static str> {
    let best = ranked.first().filter(|e| e.feasible())?;
    let next = ranked.iter().skip(1).find(|e| e.feasible())?;
    best.cost
        .named()
        .iter()
        .zip(next.cost.named())
        .map(|((name, b), (_, n))| (*name, n - b))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .filter(|(_, gain)| *gain > 0.0)
        .map(|(name, _)| name)
}

/// Violations as a sentence.
pub fn describe(violations: &[Violation]) -> String {
    violations
        .iter()
        .map(|v| match v {
            Violation::DetectWithin { profile, detect_s } => match detect_s {
                Some(s) => format!("{profile} detected only after {s:.1} s"),
                None => format!("{profile} never detected"),
            },
            Violation::FalseTripsPerHour { profile, per_hour } => {
                format!("{profile} trips it {per_hour:.1} times an hour")
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn point_json(evaluation: &Evaluation, recommended: &Evaluation) -> Value {
    json!({
        "label": evaluation.label,
        "config": evaluation.config,
        "cost": evaluation.cost,
        "saved_s": evaluation.saved_s,
        "feasible": evaluation.feasible(),
        "violations": evaluation.violations,
        "per_profile": evaluation.per_profile,
        "recommended": evaluation.config == recommended.config,
    })
}

impl Advice {
    /// `--json`: exactly the keys `recommended` (the config in Tolerant's breaker vocabulary), `why`, `front`
    /// and `current` (`null` without `--current`).
    pub fn to_json(&self) -> Value {
        let current = self.current.as_ref().map(|current| {
            let mut point = point_json(&current.evaluation, &self.recommended);
            if let Value::Object(map) = &mut point {
                map.insert("source".into(), json!(current.source));
                map.insert("notes".into(), json!(current.notes));
                map.insert("on_front".into(), json!(current.on_front));
                map.insert("dominated_by".into(), json!(current.dominated_by));
                map.insert("rank".into(), json!(current.rank));
            }
            point
        });
        json!({
            "recommended": self.recommended.config,
            "why": self.why,
            "front": self.front.iter().map(|p| point_json(p, &self.recommended)).collect::<Vec<_>>(),
            "current": current,
        })
    }

    /// The front as an SVG chart.
    pub fn svg(&self) -> Result<String, plot::PlotError> {
        let point = |e: &Evaluation| plot::FrontPoint {
            rejection_cost: e.cost.rejected_success,
            saved_s: e.saved_s,
        };
        plot::FrontChart {
            others: self
                .evaluations
                .iter()
                .filter(|e| e.feasible())
                .map(point)
                .collect(),
            front: self.front.iter().map(point).collect(),
            recommended: Some(point(&self.recommended)),
            current: self.current.as_ref().map(|c| point(&c.evaluation)),
        }
        .to_svg()
    }

    /// The text report: the recommendation and why, the front as a table, the current config, the decisions.
    pub fn to_text(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        let _ = writeln!(out, "recommended: {}", self.recommended.label);
        let _ = writeln!(
            out,
            "  as Tolerant config: {}",
            serde_json::to_string(&self.recommended.config).unwrap_or_default()
        );
        let _ = writeln!(out, "\nwhy (decided by {}):", self.why.decided_by);
        for reason in &self.why.reasons {
            let _ = writeln!(out, "  - {reason}");
        }
        let _ = writeln!(
            out,
            "\nPareto front ({} of {} candidates feasible; cost per hour, weighted over the profiles):",
            self.why.feasible, self.why.candidates
        );
        let _ = writeln!(
            out,
            "  {:>12} {:>12} {:>10}  config",
            "rejections", "saved s", "total"
        );
        for point in &self.front {
            let mark = if point.config == self.recommended.config {
                " ← recommended"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "  {:>12.1} {:>12.1} {:>10.1}  {}{mark}",
                point.cost.rejected_success, point.saved_s, point.cost.total, point.label
            );
        }
        if let Some(current) = &self.current {
            let e = &current.evaluation;
            let _ = writeln!(out, "\ncurrent config ({}): {}", current.source, e.label);
            let _ = writeln!(
                out,
                "  rejections {:.1}, saved {:.1} s, total {:.1}/h; {}",
                e.cost.rejected_success,
                e.saved_s,
                e.cost.total,
                if current.on_front {
                    "on the front".to_owned()
                } else if current.dominated_by.is_empty() {
                    "off the front, dominated by none of its points".to_owned()
                } else {
                    format!("dominated by {} front point(s)", current.dominated_by.len())
                }
            );
            if !e.feasible() {
                let _ = writeln!(out, "  breaks: {}", describe(&e.violations));
            }
            for note in &current.notes {
                let _ = writeln!(
                    out,
                    "  {}: {} — {}",
                    note.field,
                    note.kind.as_str(),
                    note.note
                );
            }
        }
        let _ = writeln!(out, "\nthe study's three decisions, for this input:");
        for decision in &self.why.decisions {
            let _ = writeln!(out, "  {}: {}", decision.decision, decision.answer);
        }
        out
    }
}
