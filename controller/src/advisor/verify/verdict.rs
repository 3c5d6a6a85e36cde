//! The verdict on a verification: the pick, whether the prediction ranked the candidates as measured, which
//! intervals separate, and the table that says so.

use super::model::{Verification, VerifiedCandidate};

impl Verification {
    /// The pick (lowest measured mean), whether the prediction (else the search) ranked the candidates in the
    /// measured order, and which candidates' intervals lie wholly above the pick's.
    pub fn judge(experiment: i64, candidates: Vec<VerifiedCandidate>) -> Verification {
        let order = |key: &dyn Fn(&VerifiedCandidate) -> f64| {
            let mut names: Vec<(f64, &str)> = candidates
                .iter()
                .map(|c| (key(c), c.name.as_str()))
                .collect();
            names.sort_by(|a, b| a.0.total_cmp(&b.0));
            names
                .into_iter()
                .map(|(_, n)| n.to_owned())
                .collect::<Vec<_>>()
        };
        let measured_order = order(&|c| c.measured.map_or(f64::INFINITY, |m| m.mean));
        let modelled = candidates.iter().all(|c| c.predicted.is_some());
        let predicted_order = if modelled {
            order(&|c| c.predicted.unwrap_or(f64::INFINITY))
        } else {
            order(&|c| c.searched_cost)
        };
        let pick = candidates
            .iter()
            .filter(|c| c.measured.is_some())
            .min_by(|a, b| {
                let mean = |c: &VerifiedCandidate| c.measured.map_or(f64::INFINITY, |m| m.mean);
                mean(a).total_cmp(&mean(b))
            });
        let separated_from: Vec<String> = match pick {
            Some(pick) => {
                let high = pick
                    .measured
                    .and_then(|m| m.ci_high)
                    .unwrap_or(f64::INFINITY);
                candidates
                    .iter()
                    .filter(|c| c.name != pick.name)
                    .filter(|c| {
                        c.measured
                            .and_then(|m| m.ci_low)
                            .is_some_and(|low| low > high)
                    })
                    .map(|c| c.name.clone())
                    .collect()
            }
            None => Vec::new(),
        };
        let separated = pick.is_some() && separated_from.len() + 1 == candidates.len();
        Verification {
            experiment,
            pick: pick.map(|c| c.name.clone()),
            same_ranking: measured_order == predicted_order,
            ranked_by: if modelled { "prediction" } else { "search" },
            separated,
            separated_from,
            candidates,
        }
    }
}

impl Verification {
    /// The verification as a table and its verdicts.
    pub fn to_text(&self) -> String {
        use std::fmt::Write as _;
        let mut out = format!(
            "\nverification (experiment {}; cost per hour, weighted over the profiles):\n  {:<12} {:>10} {:>10} {:>22}  config\n",
            self.experiment, "candidate", "searched", "predicted", "measured (95 % CI)"
        );
        for c in &self.candidates {
            let measured = match c.measured {
                Some(m) => match (m.ci_low, m.ci_high) {
                    (Some(low), Some(high)) => format!("{:.1} [{low:.1}, {high:.1}]", m.mean),
                    _ => format!("{:.1}", m.mean),
                },
                None => "-".to_owned(),
            };
            let predicted = c
                .predicted
                .map_or_else(|| "-".to_owned(), |p| format!("{p:.1}"));
            let _ = writeln!(
                out,
                "  {:<12} {:>10.1} {:>10} {:>22}  {}",
                c.name, c.searched_cost, predicted, measured, c.label
            );
        }
        let others: Vec<&str> = self
            .candidates
            .iter()
            .map(|c| c.name.as_str())
            .filter(|name| Some(*name) != self.pick.as_deref())
            .collect();
        let overlapping: Vec<&str> = others
            .iter()
            .copied()
            .filter(|name| !self.separated_from.iter().any(|s| s == name))
            .collect();
        let intervals = match (self.separated_from.is_empty(), overlapping.is_empty()) {
            (_, true) => "lies below every other's".to_owned(),
            (true, false) => "separates from none of the others'".to_owned(),
            (false, false) => format!(
                "lies below {}'s and overlaps {}'s",
                self.separated_from.join(", "),
                overlapping.join(", ")
            ),
        };
        let _ = writeln!(
            out,
            "pick by measured cost: {}; the {} ranked them {}; the pick's interval {intervals}",
            self.pick.as_deref().unwrap_or("none (no finished round)"),
            if self.ranked_by == "prediction" {
                "prediction"
            } else {
                "search (the spec is not one the prediction models)"
            },
            if self.same_ranking {
                "the same way"
            } else {
                "differently"
            },
        );
        out
    }
}
