//! The verification's experiment: the spec of candidates × failure profiles on the embedded testbed or the
//! user's own (`verify.spec`), its load, and the share of calls each profile's fault fails.

use std::time::Duration;

use breaker::sim::{self, Schedule};

use super::model::{Plan, PlannedCandidate, VerifyError};
use crate::advisor::Advice;
use crate::advisor::current::CurrentConfig;
use crate::advisor::input::{ProfileKind, Traffic, TuneInput};
use crate::spec::ExperimentSpec;

/// Users the verification's open-model load may keep in flight.
const VERIFY_USERS: u32 = 50;

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
