//! `tolerant tune --verify`: the current config and the top candidates as one experiment — conditions are
//! config × failure profile (`[[breaker.configs]]` × `[[fault.profiles]]`, each profile a fault schedule) on the
//! embedded testbed, or on the user's own `[targets]` and load when the input names a spec (`verify.spec`), run
//! through `tolerant run`'s code path — then per candidate the predicted cost beside the
//! measured one with its 95 % interval over the rounds, the pick by measured cost, and whether the prediction
//! ranked the candidates the same way.
//!
//! Both sides price what the testbed measures, with the same estimator: rejected requests × (1 − the share of
//! calls the fault fails over the run) as requests that would have succeeded, and for hanging profiles the
//! failed calls × the testbed's call timeout as caller-seconds blocked, each per hour and weighted over the
//! profiles as the search weighs them. The prediction is `controller::predict`'s model of the same spec (the
//! Online Boutique mix, one checkout in nineteen calling Payment), averaged over its seeds; a spec of one's own
//! that model does not cover is ranked by the search's own cost instead, and the report says so.

use std::collections::BTreeMap;
use std::time::Duration;

use breaker::BreakerConfig;
use breaker::sim::{self, Schedule};
use serde::Serialize;

use crate::advisor::Advice;
use crate::advisor::current::CurrentConfig;
use crate::advisor::input::{ProfileKind, Traffic, TuneInput};
use crate::spec::{ExperimentSpec, SpecError};
use crate::stats::Summary;
use crate::store::{ExperimentId, Status, Store, StoreError};

/// Users the verification's open-model load may keep in flight.
const VERIFY_USERS: u32 = 50;

/// A verification that cannot be planned or read.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("verify: {0}")]
    Input(String),
    #[error("verify: the generated spec does not validate: {0}")]
    Spec(#[from] SpecError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// One config the experiment runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlannedCandidate {
    /// Its `[[breaker.configs]]` name: `current`, `recommended`, `candidate-3`, …
    pub name: String,
    pub label: String,
    pub config: BreakerConfig,
    /// What the search predicted it costs (its own traffic model), per hour.
    pub searched_cost: f64,
}

/// The experiment to run and what each of its levels is.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub spec_toml: String,
    pub candidates: Vec<PlannedCandidate>,
    /// Each profile's weight share and the share of calls its fault fails over a run.
    profiles: Vec<(f64, f64, bool)>,
    costs: crate::advisor::Costs,
    /// What a hanging call blocks its caller for: the testbed's call timeout (the input's `traffic.timeout` on a
    /// testbed of one's own).
    call_timeout: Duration,
}

/// One candidate's predicted and measured cost.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VerifiedCandidate {
    pub name: String,
    pub label: String,
    pub searched_cost: f64,
    /// The spec's prediction, per hour (`None`: the prediction's model does not cover the spec).
    pub predicted: Option<f64>,
    /// Over the rounds, per hour.
    pub measured: Option<Summary>,
}

/// What the experiment showed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verification {
    pub experiment: i64,
    pub candidates: Vec<VerifiedCandidate>,
    /// The candidate whose measured cost is lowest.
    pub pick: Option<String>,
    /// Whether the prediction ranks the candidates in the measured order.
    pub same_ranking: bool,
    /// What ranked them: `"prediction"`, or `"search"` when the prediction does not cover every candidate.
    pub ranked_by: &'static str,
    /// Whether the pick's interval lies below every other candidate's (the intervals separate).
    pub separated: bool,
    /// The candidates whose interval lies wholly above the pick's (the pick is measurably cheaper than each).
    pub separated_from: Vec<String>,
}

/// The schedule a profile's fault follows inside a run, as written (the spec scales it).
fn schedule_of(profile: &crate::advisor::Profile) -> Option<Schedule> {
    match profile.kind {
        ProfileKind::Partial { .. } | ProfileKind::Baseline { .. } => None,
        _ => Some(profile.schedule()),
    }
}

fn duration_text(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

/// The load of the verification: the input's workload on the Online Boutique mix, its dependency Payment.
/// An open model's rate is not divided by `time_scale` as durations are: it is multiplied here, so a scaled run
/// holds as many calls per fault period as the unscaled model.
fn load_table(traffic: &Traffic, time_scale: f64) -> toml::Table {
    let mut load = toml::Table::new();
    load.insert("mix".into(), "online-boutique".into());
    match traffic.workload {
        sim::Workload::Open { rate, share } => {
            // The dependency's rate in checkouts a second, as tasks of the mix.
            let tasks = rate * share / crate::predict::checkout_share().max(f64::MIN_POSITIVE);
            load.insert("users".into(), i64::from(VERIFY_USERS).into());
            load.insert("rate".into(), (tasks * time_scale).into());
        }
        sim::Workload::Closed {
            users,
            think_min,
            think_max,
            ..
        } => {
            load.insert("users".into(), i64::from(users).into());
            load.insert(
                "think_time".into(),
                toml::Value::Array(vec![
                    duration_text(think_min).into(),
                    duration_text(think_max).into(),
                ]),
            );
        }
    }
    load
}

/// The experiment: the current config (when given) and the `verify.top` best feasible candidates, each against
/// every profile, `verify.rounds` rounds at `verify.time_scale`. `own` is the text of the input's `verify.spec`
/// (read by the caller): its testbed and load replace the embedded testbed's.
pub fn plan(
    input: &TuneInput,
    advice: &Advice,
    current: Option<&CurrentConfig>,
    own: Option<&str>,
) -> Result<Plan, VerifyError> {
    let own = own.map(OwnTestbed::parse).transpose()?;
    let hangs: Vec<bool> = input
        .profiles
        .iter()
        .map(|p| p.fault_kind() == sim::CallFailure::Hang)
        .collect();
    if hangs.iter().any(|h| *h) && hangs.iter().any(|h| !*h) {
        return Err(VerifyError::Input(
            "the profiles mix hangs and errors; the testbed's fault kind is one per experiment"
                .into(),
        ));
    }
    let mut candidates: Vec<PlannedCandidate> = Vec::new();
    if let Some(current) = current {
        let searched = advice
            .current
            .as_ref()
            .map_or(0.0, |c| c.evaluation.cost.total);
        candidates.push(PlannedCandidate {
            name: "current".into(),
            label: crate::advisor::label(&current.config),
            config: current.config.clone().with_mode(breaker::Mode::Enforce),
            searched_cost: searched,
        });
    }
    for evaluation in advice.evaluations.iter().filter(|e| e.feasible()) {
        if candidates.len() >= input.verify.top as usize + usize::from(current.is_some()) {
            break;
        }
        if candidates.iter().any(|c| c.config == evaluation.config) {
            continue;
        }
        let name = if evaluation.config == advice.recommended.config {
            "recommended".to_owned()
        } else {
            format!("candidate-{}", candidates.len() + 1)
        };
        candidates.push(PlannedCandidate {
            name,
            label: evaluation.label.clone(),
            config: evaluation.config.clone(),
            searched_cost: evaluation.cost.total,
        });
    }
    if candidates.len() < 2 {
        return Err(VerifyError::Input(
            "fewer than two configs to compare (give --current, or raise verify.top)".into(),
        ));
    }
    let window = input
        .profiles
        .iter()
        .map(|p| p.window)
        .max()
        .unwrap_or(Duration::from_secs(60));
    let mut spec = toml::Table::new();
    spec.insert("name".into(), format!("tune-verify-{}", input.name).into());
    spec.insert("rounds".into(), i64::from(input.verify.rounds).into());
    spec.insert("duration".into(), duration_text(window).into());
    spec.insert("time_scale".into(), input.verify.time_scale.into());
    spec.insert("order".into(), "randomized".into());
    spec.insert(
        "seed".into(),
        i64::try_from(input.search.seed % (1 << 62))
            .unwrap_or(1)
            .into(),
    );
    spec.insert(
        "load".into(),
        toml::Value::Table(load_table(&input.traffic, input.verify.time_scale)),
    );
    let mut fault = toml::Table::new();
    fault.insert("target".into(), "payment".into());
    fault.insert(
        "kind".into(),
        if hangs.first() == Some(&true) {
            "hang"
        } else {
            "error"
        }
        .into(),
    );
    let mut profiles = Vec::new();
    let mut shares = Vec::new();
    let total_weight = input.total_weight().max(f64::MIN_POSITIVE);
    for profile in &input.profiles {
        let mut table = toml::Table::new();
        table.insert("name".into(), profile.name.clone().into());
        table.insert("rate".into(), profile.failure_rate().into());
        let window_ns = u64::try_from(window.as_nanos()).unwrap_or(u64::MAX);
        let schedule = schedule_of(profile);
        let on_share = match schedule {
            Some(s) => {
                s.outages(window_ns)
                    .iter()
                    .map(|(a, b)| (b - a) as f64)
                    .sum::<f64>()
                    / window_ns as f64
            }
            None => 1.0,
        };
        if let Some(schedule) = schedule {
            let mut s = toml::Table::new();
            match schedule {
                Schedule::Once { start, length } => {
                    s.insert("start".into(), duration_text(start).into());
                    s.insert("length".into(), duration_text(length).into());
                }
                Schedule::Periodic { start, on, off } => {
                    s.insert("start".into(), duration_text(start).into());
                    s.insert("on".into(), duration_text(on).into());
                    s.insert("off".into(), duration_text(off).into());
                }
            }
            table.insert("schedule".into(), toml::Value::Table(s));
        }
        profiles.push(toml::Value::Table(table));
        shares.push((
            profile.weight / total_weight,
            profile.failure_rate() * on_share,
            hangs[shares.len()],
        ));
    }
    fault.insert("profiles".into(), toml::Value::Array(profiles));
    let mut breaker_table = toml::Table::new();
    breaker_table.insert("modes".into(), toml::Value::Array(vec!["enforce".into()]));
    match &own {
        // Every target that takes a config gets the candidate's (the runner pushes only where it is offered).
        Some(own) => own.replace(&mut spec, &mut fault),
        None => {
            breaker_table.insert(
                "services".into(),
                toml::Value::Array(vec!["checkout".into()]),
            );
        }
    }
    spec.insert("fault".into(), toml::Value::Table(fault));
    let mut configs = Vec::new();
    for candidate in &candidates {
        let raw = candidate.config.clone().into_raw();
        let mut table = toml::Table::new();
        table.insert("name".into(), candidate.name.clone().into());
        for (key, value) in [
            ("trip", toml::Value::try_from(&raw.trip)),
            ("open", toml::Value::try_from(&raw.open)),
            ("half_open", toml::Value::try_from(&raw.half_open)),
        ] {
            let value = value.map_err(|e| VerifyError::Input(format!("{key}: {e}")))?;
            table.insert(key.into(), value);
        }
        configs.push(toml::Value::Table(table));
    }
    breaker_table.insert("configs".into(), toml::Value::Array(configs));
    spec.insert("breaker".into(), toml::Value::Table(breaker_table));
    let spec_toml = format!(
        "# `tolerant tune --verify` of {}: {} configs × {} profiles, generated.\n{}",
        input.name,
        candidates.len(),
        input.profiles.len(),
        toml::to_string(&spec).map_err(|e| VerifyError::Input(e.to_string()))?
    );
    // Checked here, so a plan that reaches the runner always validates.
    ExperimentSpec::parse(&spec_toml)?;
    Ok(Plan {
        spec_toml,
        candidates,
        profiles: shares,
        costs: input.costs,
        call_timeout: match own {
            Some(_) => input.traffic.timeout,
            None => boutique::config::DEFAULT_CALL_TIMEOUT,
        },
    })
}

/// `verify.spec` as read: the tables of it the verification takes.
struct OwnTestbed {
    targets: toml::Value,
    load: toml::Value,
    sources: Option<toml::Value>,
    fault_target: String,
}

impl OwnTestbed {
    /// Checks `text` as a spec and keeps its testbed: it must have `[targets]` with at least one target that
    /// takes a breaker config, or the candidates could not be applied.
    fn parse(text: &str) -> Result<OwnTestbed, VerifyError> {
        let spec = ExperimentSpec::parse(text)
            .map_err(|e| VerifyError::Input(format!("verify.spec: {e}")))?;
        if spec.targets.is_empty() {
            return Err(VerifyError::Input(
                "verify.spec: the spec has no [targets] (leave verify.spec out to verify on the embedded testbed)"
                    .into(),
            ));
        }
        if !spec.offers.values().any(|offers| offers.breaker_config) {
            return Err(VerifyError::Input(
                "verify.spec: no target offers `breaker-config`, so the candidates' configs cannot be applied".into(),
            ));
        }
        let table: toml::Table =
            toml::from_str(text).map_err(|e| VerifyError::Input(format!("verify.spec: {e}")))?;
        let take = |key: &str| table.get(key).cloned();
        Ok(OwnTestbed {
            targets: take("targets")
                .ok_or_else(|| VerifyError::Input("verify.spec: no [targets]".into()))?,
            load: take("load")
                .ok_or_else(|| VerifyError::Input("verify.spec: no [load]".into()))?,
            sources: take("sources"),
            fault_target: spec.fault.target.to_string(),
        })
    }

    /// Puts this testbed and its load into the generated `spec` and `fault` tables.
    fn replace(&self, spec: &mut toml::Table, fault: &mut toml::Table) {
        spec.insert("targets".into(), self.targets.clone());
        spec.insert("load".into(), self.load.clone());
        if let Some(sources) = &self.sources {
            spec.insert("sources".into(), sources.clone());
        }
        fault.insert("target".into(), self.fault_target.clone().into());
    }
}

/// The estimator both sides share, per hour of a run: rejections that would have succeeded and, for hanging
/// profiles, failed calls as caller-seconds blocked at the testbed's call timeout.
fn priced(plan: &Plan, profile: usize, rejected: f64, failed: f64, measured_s: f64) -> f64 {
    let (_, failing_share, hang) = plan.profiles[profile];
    let per_hour = 3600.0 / measured_s.max(f64::MIN_POSITIVE);
    let blocked = if hang {
        failed * plan.call_timeout.as_secs_f64()
    } else {
        0.0
    };
    (plan.costs.rejected_success * rejected * (1.0 - failing_share)
        + plan.costs.blocked_second * blocked)
        * per_hour
}

/// The prediction of every (candidate, profile) condition of the plan's spec, weighted per candidate; `None`
/// for a candidate with a condition the model does not cover.
fn predicted(plan: &Plan, spec: &ExperimentSpec) -> Vec<Option<f64>> {
    let mut by_candidate = vec![Some(0.0); plan.candidates.len()];
    let measured_s = spec.run_duration().as_secs_f64();
    for condition in spec.conditions() {
        let (Some(candidate), Some(profile)) = (condition.breaker_config, condition.fault_profile)
        else {
            continue;
        };
        let mut total = 0.0;
        let mut runs = 0.0;
        for seed in 0..crate::predict::SEEDS {
            let Some(scenario) =
                crate::predict::scenario(spec, &condition, spec.seed.wrapping_add(seed))
            else {
                continue;
            };
            let totals = sim::simulate(&scenario).totals;
            // Failures of calls that reached the dependency: the testbed's `failed` (rejections are their own).
            let failed = totals
                .failed_with_breaker
                .saturating_sub(totals.never_made + totals.refused_with)
                as f64;
            total += priced(plan, profile, totals.never_made as f64, failed, measured_s);
            runs += 1.0;
        }
        by_candidate[candidate] = match by_candidate[candidate] {
            Some(sum) if runs > 0.0 => Some(sum + plan.profiles[profile].0 * total / runs),
            _ => None,
        };
    }
    by_candidate
}

/// The experiment's finished runs priced, per candidate over the rounds, beside the prediction.
pub async fn measured(
    store: &Store,
    experiment: ExperimentId,
    plan: &Plan,
) -> Result<Verification, VerifyError> {
    let spec = ExperimentSpec::parse(&plan.spec_toml)?;
    let conditions = spec.conditions();
    let predicted = predicted(plan, &spec);
    // (candidate, round) → the weighted cost summed over its profiles, and how many profiles it has.
    let mut per_round: BTreeMap<(usize, i64), (f64, usize)> = BTreeMap::new();
    for run in store.runs(experiment).await? {
        if run.status != Status::Finished {
            continue;
        }
        let Some(outcomes) = run.outcomes else {
            continue;
        };
        let Some(condition) = usize::try_from(run.condition_index)
            .ok()
            .and_then(|i| conditions.get(i))
        else {
            continue;
        };
        let (Some(candidate), Some(profile)) = (condition.breaker_config, condition.fault_profile)
        else {
            continue;
        };
        let measured_s = run.duration_ms as f64 / 1000.0;
        let cost = priced(
            plan,
            profile,
            outcomes.rejected as f64,
            outcomes.failed as f64,
            measured_s,
        );
        let entry = per_round.entry((candidate, run.round_index)).or_default();
        entry.0 += plan.profiles[profile].0 * cost;
        entry.1 += 1;
    }
    let profiles = plan.profiles.len();
    let candidates: Vec<VerifiedCandidate> = plan
        .candidates
        .iter()
        .enumerate()
        .map(|(index, candidate)| {
            let rounds: Vec<f64> = per_round
                .iter()
                .filter(|((c, _), (_, n))| *c == index && *n == profiles)
                .map(|(_, (cost, _))| *cost)
                .collect();
            VerifiedCandidate {
                name: candidate.name.clone(),
                label: candidate.label.clone(),
                searched_cost: candidate.searched_cost,
                predicted: predicted[index],
                measured: Summary::of(&rounds),
            }
        })
        .collect();
    Ok(Verification::judge(experiment.0, candidates))
}

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
