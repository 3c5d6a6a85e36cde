//! Predictions: for each condition of a spec, what `breaker::sim` says the run will measure — breaker opens,
//! rejected requests, observed checkout failure, time open — over the measured window, before anything runs.
//!
//! The spec maps onto the simulator's model: the spec's users and think time (or its open-model rate), one task in
//! nineteen a checkout calling the dependency (the Online Boutique mix's weights), the fault active as the spec's
//! `fault.schedule` says (the whole run without one) at the condition's rate (a hang costs the boutique's call timeout, an error or reset nothing), and the
//! condition's breaker config with the spec's time scale. Each condition is simulated with [`SEEDS`] seeds; the
//! band is the 2.5th–97.5th percentile of those runs, and a measurement whose 95 % interval misses the band is
//! flagged with the model assumption most likely behind the difference.
//!
//! Opens, time open and rejections are predicted per breaker, for every breaker the fault reaches: Checkout's on
//! Payment, and up the critical task's call chain the frontend's on Checkout (Checkout answers 5xx when Payment
//! fails or its breaker rejects; while the frontend's is open Payment's sees no calls), each with its own
//! config and the boutique's call timeout. Each figure is set beside that breaker's measurement alone, never a
//! sum over breakers. A workload of one's own has the same chain when its critical task ends in the boutique
//! frontend's `POST /cart/checkout` ([`checkouts_through_boutique`]); otherwise the chain of its critical task is
//! not known and the breakers upstream are named as not modelled. What else the model leaves out, and so what a flag usually means: no
//! latency or queueing before the call, and checkouts that fail only through the dependency.
//!
//! Two inputs the spec does not decide but a run measures outright: the load's checkout rate (full carts slow
//! every cart view, and a closed-model load then sends fewer checkouts than the spec's users and think time
//! would) and how long the services up the chain take to answer (a half-open probe is in flight that long, its
//! breaker neither open nor closed). Each prediction keeps the checkouts per second its simulations made, and
//! [`predict_at_load`] runs the same condition again at the measured rate and latencies, so that stats compare
//! the model with what ran, like with like.
//!
//! In a circle with `at_load.rs` and `pool.rs` because the three are one model split by size: this file
//! simulates a condition, `at_load.rs` runs it again at a measured load and `pool.rs` with a worker pool, each
//! calling back into the scenario and the simulation here.

mod at_load;
mod pool;
#[cfg(test)]
mod tests;

pub use at_load::{AT_RATE_BOUNDS, MAX_LATENCY_MS, MeasuredLoad, predict_at_load};
pub use pool::PoolPrediction;

use std::time::Duration;

use boutique::ServiceName;
use breaker::sim::{self, CallFailure, Caller, Pattern, RawScenario, Scenario, Upstream, Workload};
use serde::{Deserialize, Serialize};

use crate::metric::MetricName;
use crate::spec::{BreakerMode, Condition, ConditionFault, ExperimentSpec};

/// Seeds each condition is simulated with: a band is the 2.5th–97.5th percentile of this many simulations.
pub const SEEDS: u64 = 40;

/// A predicted range from seeded simulations of one condition: their lowest, mean and highest value, and the
/// band a measurement is judged against — their 2.5th and 97.5th percentiles. A measurement is flagged only when
/// its own 95 % interval misses the band, so the band and the measurement's interval together make the
/// tolerance; nothing is hand-picked.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Band {
    pub low: f64,
    pub mean: f64,
    pub high: f64,
    pub band_low: f64,
    pub band_high: f64,
    /// How many simulations made the band (0 for a band stored before the count was kept).
    #[serde(default)]
    pub simulations: u32,
}

impl Band {
    /// The band of `values`, one per seeded simulation.
    pub fn of(values: &[f64]) -> Band {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let at = |p: f64| {
            let index = (p * n.saturating_sub(1) as f64).round() as usize;
            sorted.get(index).copied().unwrap_or(0.0)
        };
        Band {
            low: sorted.first().copied().unwrap_or(0.0),
            mean: values.iter().sum::<f64>() / n.max(1) as f64,
            high: sorted.last().copied().unwrap_or(0.0),
            band_low: at(0.025),
            band_high: at(0.975),
            simulations: u32::try_from(n).unwrap_or(u32::MAX),
        }
    }

    /// Whether a measured interval `[low, high]` misses the band entirely. A difference in the last bits of a
    /// float (a sum over runs or replicas, rounded otherwise than the simulations' sum) is not a miss.
    pub fn misses(&self, low: f64, high: f64) -> bool {
        let rounding = 1e-9 * self.band_low.abs().max(self.band_high.abs()).max(1.0);
        high < self.band_low - rounding || low > self.band_high + rounding
    }
}

/// A breaker on the fault's path the simulator does not model, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotModelled {
    /// Its name (`caller->dependency`).
    pub breaker: String,
    pub reason: String,
}

/// What the simulator predicts for one breaker further up the chain than [`Prediction::breaker`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BreakerPrediction {
    /// Its name (`caller->dependency`).
    pub breaker: String,
    pub opens: Band,
    pub time_open_s: Band,
    /// Calls it rejects.
    pub rejected: Band,
    /// Upper bound on its opens over the measured window from the configurations alone.
    pub opens_bound: Option<u64>,
}

/// What the simulator predicts for one condition's runs (measured window only).
///
/// Opens, time open and the opens bound are per breaker: [`Prediction::breaker`]'s, the breaker in front of
/// the faulty service, and each of [`Prediction::upstream`]'s, judged against that breaker's own measurement,
/// never against a sum over breakers. The breakers the fault reaches that the model leaves out are listed in
/// [`Prediction::not_modelled`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    /// The condition's index in expansion order.
    pub condition: usize,
    /// The breaker the opens and time open are of (`checkout->payment`).
    #[serde(default = "payment_breaker")]
    pub breaker: String,
    pub breaker_opens: Band,
    /// Requests a breaker rejects, any breaker of the chain (the load counts every rejected request).
    pub rejected: Band,
    /// Share of checkouts that fail (rejections count), against the injected rate.
    pub checkout_failure: Band,
    pub injected_rate: f64,
    pub time_open_s: Band,
    /// Upper bound on the breaker's opens over the measured window from the configuration alone.
    pub opens_bound: Option<u64>,
    /// The study's estimate: measured time / (open window + time to trip), for a binary fault.
    pub opens_estimate: Option<f64>,
    /// Calls [`Prediction::breaker`] itself rejects (`None` in a prediction stored before it was kept).
    #[serde(default)]
    pub breaker_rejected: Option<Band>,
    /// The breakers further up the critical task's chain that the model covers, outermost first.
    #[serde(default)]
    pub upstream: Vec<BreakerPrediction>,
    /// The other breakers on the fault's path, which the model leaves out.
    #[serde(default)]
    pub not_modelled: Vec<NotModelled>,
    /// A hang's worker-pool exhaustion (`None` for another fault, or in a prediction stored before it was kept).
    #[serde(default)]
    pub pool: Option<PoolPrediction>,
    /// Checkouts per second of the measured window in the simulations (`None` in a prediction stored before it
    /// was kept): the load the bands assume, set beside the load's measured `checkout_rate`.
    #[serde(default)]
    pub checkout_rate: Option<Band>,
    /// The load these simulations were run at when it is the one the runs measured ([`predict_at_load`]);
    /// `None` for the prediction made from the spec before any run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_measured_load: Option<MeasuredLoad>,
}

fn payment_breaker() -> String {
    ServiceName::Checkout.breaker_name(ServiceName::Payment)
}

/// One predicted breaker: its name, its metrics' bands, its opens bound.
pub type BreakerBands<'a> = (&'a str, Vec<(MetricName, Band)>, Option<u64>);

impl Prediction {
    /// The predicted metrics of the whole condition with their bands, in the order reports list them.
    pub fn bands(&self) -> Vec<(MetricName, Band)> {
        let mut bands = vec![
            (MetricName::Rejected, self.rejected),
            (MetricName::CheckoutFailure, self.checkout_failure),
        ];
        if let Some(pool) = &self.pool {
            bands.extend((pool.exhaustion_s).map(|band| (MetricName::PoolExhaustionS, band)));
            bands.push((MetricName::PoolRefused, pool.refused));
        }
        bands
    }

    /// Every predicted breaker, outermost first, with its metrics' bands and its opens bound.
    pub fn per_breaker(&self) -> Vec<BreakerBands<'_>> {
        let mut breakers: Vec<BreakerBands<'_>> = self
            .upstream
            .iter()
            .map(|b| {
                (
                    b.breaker.as_str(),
                    vec![
                        (MetricName::BreakerOpens, b.opens),
                        (MetricName::TimeOpenS, b.time_open_s),
                        (MetricName::Rejected, b.rejected),
                    ],
                    b.opens_bound,
                )
            })
            .collect();
        let mut own = vec![
            (MetricName::BreakerOpens, self.breaker_opens),
            (MetricName::TimeOpenS, self.time_open_s),
        ];
        own.extend(
            self.breaker_rejected
                .map(|band| (MetricName::Rejected, band)),
        );
        breakers.push((self.breaker.as_str(), own, self.opens_bound));
        breakers
    }
}

/// The frontend's breaker on Checkout, up the checkout's chain from Payment's.
fn frontend_breaker() -> String {
    ServiceName::Frontend.breaker_name(ServiceName::Checkout)
}

/// The breakers up the chain of a workload of one's own whose critical request is not the boutique's checkout:
/// its chain is not known.
fn unknown_chain() -> Vec<NotModelled> {
    vec![NotModelled {
        breaker: frontend_breaker(),
        reason: "not modelled: the critical task of [[load.tasks]] does not end in the Online Boutique's POST /cart/checkout, so which services it calls is not known; this one sees Checkout's 5xx when Payment fails or is rejected".to_owned(),
    }]
}

/// Whether the load's critical requests are the Online Boutique's checkouts, whose chain is known (frontend →
/// checkout → payment): the mix's, or a critical task of one's own that ends in the frontend's
/// `POST /cart/checkout` on the testbed's own services (no `[targets]`: embedded, compose, swarm or Kubernetes).
pub fn checkouts_through_boutique(spec: &ExperimentSpec) -> bool {
    let Some(custom) = &spec.load.custom else {
        return true;
    };
    let Some(request) = custom.critical_request() else {
        return false;
    };
    // The mix's own name of the checkout endpoint (`POST /cart/checkout`), so the path is written once.
    let Some((method, path)) = crate::metric::checkout_endpoint().split_once(' ') else {
        return false;
    };
    spec.targets.is_empty()
        && spec.load.target.as_str() == ServiceName::Frontend.as_str()
        && request.method.as_str() == method
        && request.path.is_literally(path)
}

/// The callers up the critical task's chain from Payment's breaker, outermost first, with their names: the
/// Online Boutique checkout goes frontend → checkout → payment, the frontend's breaker taking the condition's
/// config when `breaker.services` includes it (a disabled breaker is not on the path). `None`: not known.
fn chain(spec: &ExperimentSpec, config: &breaker::BreakerConfig) -> Option<Vec<(String, Caller)>> {
    if !checkouts_through_boutique(spec) {
        return None;
    }
    let frontend = crate::target::ServiceId::new(ServiceName::Frontend.as_str()).ok()?;
    Some(if spec.breaker.applies_to(&frontend) {
        vec![(
            frontend_breaker(),
            Caller {
                breaker: config.clone(),
                timeout: boutique::config::DEFAULT_CALL_TIMEOUT,
                latency: Duration::ZERO,
            },
        )]
    } else {
        Vec::new()
    })
}

/// Share of the Online Boutique mix's tasks that are checkouts (the only task calling Payment).
pub fn checkout_share() -> f64 {
    crate::load::online_boutique()
        .critical_share()
        .unwrap_or_default()
}

/// Share of the spec's tasks that call the dependency: the Online Boutique mix's checkouts, or with
/// `[[load.tasks]]` the critical task's weight over all (`None` without a critical task: the model cannot
/// know which task calls the dependency).
pub fn dependency_share(spec: &ExperimentSpec) -> Option<f64> {
    match &spec.load.custom {
        None => Some(checkout_share()),
        Some(custom) => custom.critical_share(),
    }
}

/// The simulator's scenario for one condition, or `None` when the model does not cover it (a delay fault, a
/// container restart, a network fault, a fault on another service than Payment, a run longer than the simulator's window).
pub fn scenario(spec: &ExperimentSpec, condition: &Condition, seed: u64) -> Option<Scenario> {
    Scenario::try_from(raw_scenario(spec, condition, seed, None)?).ok()
}

/// The scenario's fields; with `load`, an open-model load sending its checkouts per second instead of the
/// spec's load, and the callers up the chain answered with its latencies.
pub(super) fn raw_scenario(
    spec: &ExperimentSpec,
    condition: &Condition,
    seed: u64,
    load: Option<&MeasuredLoad>,
) -> Option<RawScenario> {
    if spec.fault.target != "payment" {
        return None;
    }
    let kind = match condition.fault {
        ConditionFault::Error { .. } | ConditionFault::Reset => CallFailure::Error,
        ConditionFault::Hang => CallFailure::Hang,
        // A paused container holds every call until the caller's timeout, like a hang; a stopped or killed
        // one refuses them at once, like an error.
        ConditionFault::Pause => CallFailure::Hang,
        ConditionFault::Stop | ConditionFault::Kill { .. } => CallFailure::Error,
        // A restart is down for a moment the model cannot know; lost packets are retransmitted, so a network
        // fault slows calls by an amount the model cannot know either.
        ConditionFault::Delay { .. }
        | ConditionFault::Restart
        | ConditionFault::NetDelay { .. }
        | ConditionFault::NetLoss => return None,
    };
    let window = spec.run_warmup() + spec.run_duration();
    let share = dependency_share(spec)?;
    let config = spec
        .breaker_config_of(&Condition {
            breaker_mode: BreakerMode::Enforce,
            ..*condition
        })
        .ok()?;
    let callers = at_load::with_latencies(chain(spec, &config).unwrap_or_default(), load);
    let workload = match (load, spec.load.rate) {
        (Some(load), _) => Workload::Open {
            rate: load.checkout_rate / share.max(f64::MIN_POSITIVE),
            share,
        },
        (None, Some(rate)) => Workload::Open { rate, share },
        (None, None) => {
            let (think_min, think_max) = spec.think_time();
            Workload::Closed {
                users: spec.load.users,
                think_min: think_min.max(sim::MIN_THINK),
                think_max: think_max.max(sim::MIN_THINK),
                share,
            }
        }
    };
    Some(RawScenario {
        window,
        workload,
        upstream: Upstream {
            schedule: spec.fault_schedule_of(condition),
            failure_rate: condition.fault_rate,
            pattern: Pattern::Random,
            kind,
            timeout: boutique::config::DEFAULT_CALL_TIMEOUT,
            latency: Duration::ZERO,
            warmup: None,
        },
        breaker: config,
        instances: spec.breaker.instances,
        workers: None,
        seed,
        log_calls: false,
        model: sim::Model::AtTimeout,
        callers,
    })
}

/// Predictions for every condition of `spec` the model covers, in condition order.
pub fn predict(spec: &ExperimentSpec) -> Vec<Prediction> {
    spec.conditions()
        .iter()
        .filter_map(|condition| predict_condition(spec, condition, None))
        .collect()
}

pub(super) fn predict_condition(
    spec: &ExperimentSpec,
    condition: &Condition,
    load: Option<&MeasuredLoad>,
) -> Option<Prediction> {
    let guarded = matches!(condition.breaker_mode, BreakerMode::Enforce);
    let counts_opens = matches!(
        condition.breaker_mode,
        BreakerMode::Enforce | BreakerMode::Shadow
    );
    let warmup_s = spec.run_warmup().as_secs();
    let mut opens = Vec::new();
    let mut rejected = Vec::new();
    let mut failure = Vec::new();
    let mut time_open = Vec::new();
    let mut own_rejected = Vec::new();
    let mut rates = Vec::new();
    let measured_s = spec.run_duration().as_secs_f64();
    let mut estimate = None;
    let mut bound = None;
    let names: Vec<String> = spec
        .breaker_config_of(condition)
        .ok()
        .and_then(|config| chain(spec, &config))
        .unwrap_or_default()
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    // Per caller up the chain: opens, time open, rejected, one value per seed.
    let mut up: Vec<[Vec<f64>; 3]> = vec![Default::default(); names.len()];
    let mut up_bound = Vec::new();
    for seed in 0..SEEDS {
        let raw = raw_scenario(spec, condition, spec.seed.wrapping_add(seed), load)?;
        let run = sim::simulate(&Scenario::try_from(raw).ok()?);
        let measured = run.seconds.iter().filter(|s| u64::from(s.t) >= warmup_s);
        let (mut o, mut r, mut calls, mut failed, mut open) = (0, 0, 0, 0, 0.0);
        let (mut calls_without, mut failed_without, mut own) = (0, 0, 0);
        let mut checkouts = 0;
        let mut callers = vec![[0.0; 3]; names.len()];
        for second in measured {
            own += second.rejected;
            for (sum, caller) in callers.iter_mut().zip(&second.callers) {
                sum[0] += caller.opens as f64;
                sum[1] += caller.open;
                sum[2] += caller.rejected as f64;
            }
            o += second.opens;
            r += second.never_made;
            calls += second.dependency_calls;
            failed += second.dependency_failures;
            open += second.open;
            calls_without += second.dependency_calls_without;
            failed_without += second.failed_without_breaker;
            // The load's checkouts: with the breaker when it can reject, without it otherwise (a closed
            // model's users send fewer while they wait on hanging calls).
            checkouts += if guarded {
                second.dependency_calls
            } else {
                second.dependency_calls_without
            };
        }
        if measured_s > 0.0 {
            rates.push(checkouts as f64 / measured_s);
        }
        opens.push(if counts_opens { o as f64 } else { 0.0 });
        time_open.push(if guarded { open } else { 0.0 });
        rejected.push(if guarded { r as f64 } else { 0.0 });
        own_rejected.push(if guarded { own as f64 } else { 0.0 });
        for (values, sums) in up.iter_mut().zip(&callers) {
            values[0].push(if counts_opens { sums[0] } else { 0.0 });
            values[1].push(if guarded { sums[1] } else { 0.0 });
            values[2].push(if guarded { sums[2] } else { 0.0 });
        }
        // Without a breaker a checkout fails only when the fault is on and the draw hits it.
        failure.push(if guarded {
            failed as f64 / calls.max(1) as f64
        } else {
            failed_without as f64 / calls_without.max(1) as f64
        });
        if seed == 0 && counts_opens {
            // The estimate counts the fault's active time; keep the part of it after the warmup.
            let warmup = spec.run_warmup();
            let (mut active, mut measured_active) = (0.0, 0.0);
            for (start, end) in spec.fault_periods_of(condition) {
                active += (end - start).as_secs_f64();
                measured_active += end.saturating_sub(start.max(warmup)).as_secs_f64();
            }
            let measured_share = if active > 0.0 {
                measured_active / active
            } else {
                0.0
            };
            estimate = run.closed_form.opens_estimate.map(|e| e * measured_share);
            bound = Some(run.closed_form.opens_bound);
            up_bound = run.closed_form.callers_opens_bound.clone();
        }
    }
    Some(Prediction {
        condition: condition.index,
        breaker: payment_breaker(),
        breaker_opens: Band::of(&opens),
        rejected: Band::of(&rejected),
        checkout_failure: Band::of(&failure),
        injected_rate: condition.fault_rate,
        time_open_s: Band::of(&time_open),
        opens_bound: bound,
        opens_estimate: estimate,
        breaker_rejected: Some(Band::of(&own_rejected)),
        upstream: names
            .into_iter()
            .zip(up)
            .enumerate()
            .map(
                |(hop, (breaker, [opens, open, rejected]))| BreakerPrediction {
                    breaker,
                    opens: Band::of(&opens),
                    time_open_s: Band::of(&open),
                    rejected: Band::of(&rejected),
                    opens_bound: up_bound.get(hop).copied(),
                },
            )
            .collect(),
        not_modelled: if !checkouts_through_boutique(spec) {
            unknown_chain()
        } else {
            Vec::new()
        },
        pool: pool::predict_pool(spec, condition, load),
        checkout_rate: (!rates.is_empty()).then(|| Band::of(&rates)),
        at_measured_load: load.cloned(),
    })
}
