//! What a simulation reports: a row per second, the totals with and without the breaker, and the closed-form
//! figures (opens bound, time to pool exhaustion, jitter needed) computed from the scenario alone.

use serde::Serialize;

use crate::clock::duration_nanos;
use crate::config::Probes;
use crate::sim::engine::{CallRecord, Pass};
use crate::sim::scenario::{CallFailure, Model, Scenario};
use crate::state::State;

const NANOS: f64 = 1_000_000_000.0;

/// One second of the window, with the breaker.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Second {
    /// Seconds since the window's start.
    pub t: u32,
    /// The state instance 0's breaker spent most of this second in.
    pub state: State,
    /// Instance-seconds spent open or half-open in this second, over all instances (0 … instances).
    pub not_closed: f64,
    /// Instance-seconds spent open in this second, over all instances.
    pub open: f64,
    /// Transitions into open in this second, over all instances.
    pub opens: u64,
    /// Requests that arrived.
    pub calls: u64,
    /// Requests that call the dependency.
    pub dependency_calls: u64,
    /// Of those, the ones that failed (rejections included).
    pub dependency_failures: u64,
    /// Calls that reached the dependency.
    pub reached: u64,
    /// Calls the breaker rejected.
    pub never_made: u64,
    /// Half-open probes let through.
    pub probes: u64,
    /// Requests that succeeded.
    pub successful: u64,
    /// Requests that failed after holding their caller for the timeout.
    pub slow_failures: u64,
    /// Requests that failed at once (rejections, instant errors, a full worker pool).
    pub fast_failures: u64,
    /// Requests refused by a full worker pool.
    pub refused: u64,
    /// Requests that failed in the same second without the breaker.
    pub failed_without_breaker: u64,
    /// Requests that called the dependency in the same second without the breaker (a closed workload's users
    /// send fewer while they wait on hanging calls).
    pub dependency_calls_without: u64,
    /// Most workers of one instance busy at once (0 without a pool).
    pub busy_workers: u32,
    /// Calls the breaker in front of the dependency rejected itself (`never_made` less the callers' rejections).
    pub rejected: u64,
    /// What each caller further up the chain did in this second, outermost first (empty without callers).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub callers: Vec<CallerFigures>,
}

/// What one caller's breaker further up the chain did, over all instances: in one second, or over the window.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CallerFigures {
    /// Transitions into open.
    pub opens: u64,
    /// Instance-seconds open (over the window: seconds open per instance, the mean over instances).
    pub open: f64,
    /// Calls it rejected.
    pub rejected: u64,
}

/// Totals over the window. The first ten are the idealised model's; the rest cover what the model leaves out.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Totals {
    /// Calls that reached the dependency.
    pub reached: u64,
    /// Calls the breaker rejected (never made).
    pub never_made: u64,
    /// Requests that failed after holding their caller for the timeout.
    pub slow_failures: u64,
    /// Requests that failed at once: breaker rejections, instant errors, refusals of a full worker pool.
    pub fast_failures: u64,
    /// Requests that failed with the breaker.
    pub failed_with_breaker: u64,
    /// Requests that failed without it (same arrivals and draws, no breaker).
    pub failed_without_breaker: u64,
    /// Requests that succeeded with the breaker.
    pub successful: u64,
    /// Requests rejected while the dependency was healthy again after an outage, in seconds of the dependency's
    /// traffic (rejections / dependency calls per second).
    pub rejected_after_recovery_s: f64,
    /// Rejected requests the dependency would have answered (the draw the call would have had, not made): what
    /// the breaker's "no" cost in requests that would have succeeded.
    pub rejected_would_succeed: u64,
    /// Time callers spent waiting on the dependency, with the breaker.
    pub caller_seconds_with: f64,
    /// The same without the breaker.
    pub caller_seconds_without: f64,
    /// Requests that arrived.
    pub requests: u64,
    /// Requests that call the dependency.
    pub dependency_calls: u64,
    /// Requests that succeeded without the breaker.
    pub successful_without_breaker: u64,
    /// Share of the requests calling the dependency that failed, with the breaker (rejections count as failures).
    pub dependency_failure_with: f64,
    /// The same without the breaker.
    pub dependency_failure_without: f64,
    /// Transitions into open, over all instances.
    pub opens: u64,
    /// When a breaker first opened, seconds since the window's start (`None`: it never opened).
    pub first_open_s: Option<f64>,
    /// Seconds open per instance (mean over instances).
    pub open_s: f64,
    /// Seconds half-open per instance (mean over instances).
    pub half_open_s: f64,
    /// Half-open probes let through, over all instances.
    pub probes: u64,
    /// Most probes in one second, over all instances: the aggregate probe rate the dependency sees.
    pub peak_probes_per_s: u64,
    /// Requests refused by a full worker pool, with the breaker.
    pub refused_with: u64,
    /// The same without the breaker.
    pub refused_without: u64,
    /// When a worker pool first filled with the breaker, seconds since the window's start.
    pub pool_exhausted_at_s_with: Option<f64>,
    /// The same without the breaker.
    pub pool_exhausted_at_s_without: Option<f64>,
    /// What each caller further up the chain did, outermost first (empty without callers).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub callers: Vec<CallerFigures>,
}

/// Figures that follow from the scenario by arithmetic, to set beside the simulated ones.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClosedForm {
    /// Dependency calls per second reaching one instance (mean).
    pub dependency_rate_per_instance: f64,
    /// Seconds from the open window's end to the next trip when every call fails: the wait for the next call
    /// (1 / rate per instance) plus how long the breaker waits for a failure (the timeout for a hang, unless the
    /// model is the published one, where outcomes are seen at once).
    pub time_to_trip_s: f64,
    /// The study's estimate of opens over all instances: time the fault is active / (open window + time to
    /// trip), for a binary fault and a fixed open window; `None` otherwise.
    pub opens_estimate: Option<f64>,
    /// An upper bound on opens that holds for every detector and half-open policy: two trips of one breaker are
    /// at least (shortest open window + the delay before a failure is seen) apart, and failures only happen while the fault is
    /// active (or the dependency is cold). Over all instances.
    pub opens_bound: u64,
    /// workers / (requests per second per instance × share calling the dependency): how long a hang takes to
    /// fill a worker pool without a breaker; `None` without a pool or a hang.
    pub time_to_exhaustion_s: Option<f64>,
    /// Jitter spread needed so the instances' probes stay under the dependency's warm capacity:
    /// instances × probes per instance / capacity; `None` without a warm-up or with every arrival probing.
    pub jitter_needed_s: Option<f64>,
    /// The opens bound of each caller's breaker further up the chain, outermost first, over all instances: the
    /// same arithmetic with its own open window and the delay before it sees a failure.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub callers_opens_bound: Vec<u64>,
}

/// Everything a simulation reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Simulation {
    /// The model drawn (`at-timeout` or `published`).
    pub model: Model,
    /// One row per second.
    pub seconds: Vec<Second>,
    /// Totals with and without the breaker.
    pub totals: Totals,
    /// The arithmetic beside them.
    pub closed_form: ClosedForm,
    /// Every request with the breaker, when the scenario asked for it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<CallRecord>,
}

fn dominant(state_ns: [u64; 3]) -> State {
    let [closed, open, half_open] = state_ns;
    if open >= closed && open >= half_open {
        State::Open
    } else if half_open > closed {
        State::HalfOpen
    } else {
        State::Closed
    }
}

fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// Put the two passes side by side.
pub(crate) fn combine(scenario: &Scenario, with: Pass, without: &Pass) -> Simulation {
    let seconds = with
        .seconds
        .iter()
        .enumerate()
        .map(|(t, tally)| Second {
            t: u32::try_from(t).unwrap_or(u32::MAX),
            state: dominant(with.state_ns[t]),
            not_closed: with.not_closed_s[t],
            open: with.open_s[t],
            opens: with.opens_per_second[t],
            calls: tally.requests,
            dependency_calls: tally.dependency_calls,
            dependency_failures: tally.dependency_failures,
            reached: tally.reached,
            never_made: tally.never_made,
            probes: tally.probes,
            successful: tally.successful,
            slow_failures: tally.slow_failures,
            fast_failures: tally.fast_failures,
            refused: tally.refused,
            failed_without_breaker: without.seconds[t].failed(),
            dependency_calls_without: without.seconds[t].dependency_calls,
            busy_workers: tally.busy_peak,
            rejected: tally.never_made - with.callers.iter().map(|c| c.rejected[t]).sum::<u64>(),
            callers: with
                .callers
                .iter()
                .map(|c| CallerFigures {
                    opens: c.opens_per_second[t],
                    open: c.open_s[t],
                    rejected: c.rejected[t],
                })
                .collect(),
        })
        .collect();
    let (w, wo) = (&with.totals, &without.totals);
    let window_s = scenario.window().as_secs_f64();
    let dependency_rate = w.dependency_calls as f64 / window_s;
    let instances = f64::from(scenario.instances());
    let totals = Totals {
        reached: w.reached,
        never_made: w.never_made,
        slow_failures: w.slow_failures,
        fast_failures: w.fast_failures,
        failed_with_breaker: w.failed(),
        failed_without_breaker: wo.failed(),
        successful: w.successful,
        rejected_after_recovery_s: if dependency_rate > 0.0 {
            w.rejected_after_recovery as f64 / dependency_rate
        } else {
            0.0
        },
        rejected_would_succeed: w.rejected_would_succeed,
        caller_seconds_with: w.caller_ns as f64 / NANOS,
        caller_seconds_without: wo.caller_ns as f64 / NANOS,
        requests: w.requests,
        dependency_calls: w.dependency_calls,
        successful_without_breaker: wo.successful,
        dependency_failure_with: ratio(w.dependency_failures, w.dependency_calls),
        dependency_failure_without: ratio(wo.dependency_failures, wo.dependency_calls),
        opens: with.opens,
        first_open_s: with.first_open_ns.map(|ns| ns as f64 / NANOS),
        open_s: with.open_ns as f64 / NANOS / instances,
        half_open_s: with.half_open_ns as f64 / NANOS / instances,
        probes: w.probes,
        peak_probes_per_s: with.seconds.iter().map(|s| s.probes).max().unwrap_or(0),
        refused_with: w.refused,
        refused_without: wo.refused,
        pool_exhausted_at_s_with: with.pool_exhausted_at_ns.map(|ns| ns as f64 / NANOS),
        pool_exhausted_at_s_without: without.pool_exhausted_at_ns.map(|ns| ns as f64 / NANOS),
        callers: with
            .callers
            .iter()
            .map(|c| CallerFigures {
                opens: c.opens,
                open: c.open_ns as f64 / NANOS / instances,
                rejected: c.rejected.iter().sum(),
            })
            .collect(),
    };
    Simulation {
        model: scenario.model(),
        seconds,
        totals,
        closed_form: closed_form(scenario),
        calls: with.calls,
    }
}

/// The arithmetic, from the scenario alone.
pub fn closed_form(scenario: &Scenario) -> ClosedForm {
    let up = &scenario.upstream();
    let instances = f64::from(scenario.instances());
    let share = scenario.workload().share();
    let request_rate_per_instance = scenario.workload().mean_rate() / instances;
    let dependency_rate_per_instance = request_rate_per_instance * share;
    // How long after a failing call is made the breaker learns of it.
    let failure_seen_ns = match (scenario.model(), up.kind) {
        (Model::AtTimeout, CallFailure::Hang) => duration_nanos(up.timeout),
        (Model::Published, _) | (_, CallFailure::Error) => 0,
    };
    let time_to_trip_s = 1.0 / dependency_rate_per_instance + failure_seen_ns as f64 / NANOS;
    let window_ns = duration_nanos(scenario.window());
    let outages = up.schedule.outages(window_ns);
    let active_s: f64 = outages
        .iter()
        .map(|(start, end)| (end - start) as f64 / NANOS)
        .sum();
    let open = scenario.breaker().open();
    let fixed_window = open.backoff() == 1.0 && open.jitter() == 0.0;
    let opens_estimate = (up.failure_rate == 1.0 && fixed_window && up.warmup.is_none())
        .then(|| instances * active_s / (open.base().as_secs_f64() + time_to_trip_s));
    // Failures are recorded only in [start + delay, end + delay) of each outage (and its cold period).
    let warm_ns = up.warmup.map_or(0, |w| duration_nanos(w.length));
    let fails = up.failure_rate > 0.0 || up.warmup.is_some();
    let active: Vec<(u64, u64)> = merge(
        outages
            .iter()
            .map(|&(start, end)| (start, end.saturating_add(warm_ns).min(window_ns))),
    );
    let instances_n = u64::from(scenario.instances());
    let longest_open_ns = |open: &crate::config::OpenConfig| {
        (duration_nanos(open.base().max(open.max())) as f64 * (1.0 + open.jitter())).ceil() as u64
    };
    // Trips of one breaker are at least its shortest open window plus `seen_ns` apart, and happen only while
    // failures can reach it: each outage, `after_ns` past its end.
    let bound = |open: &crate::config::OpenConfig, seen_ns: u64, after_ns: u64| -> u64 {
        let shortest_open_ns = (duration_nanos(open.base().min(open.max())) as f64
            * (1.0 - open.jitter()))
        .floor() as u64;
        let gap = shortest_open_ns.saturating_add(seen_ns).max(1);
        let per_instance: u64 = if fails {
            merge(
                active
                    .iter()
                    .map(|&(start, end)| (start, end.saturating_add(after_ns))),
            )
            .iter()
            .map(|&(start, end)| (end.min(window_ns) - start).div_ceil(gap))
            .sum()
        } else {
            0
        };
        per_instance.saturating_mul(instances_n)
    };
    // A caller also fails at once on a rejection from below, so its trips are its shortest open window apart,
    // and failures reach it until the breakers below have seen the last failure and ended their longest open
    // window after it.
    let mut below_ns = failure_seen_ns.saturating_add(longest_open_ns(open));
    let mut callers_opens_bound: Vec<u64> = scenario
        .callers()
        .iter()
        .rev()
        .map(|caller| {
            let caller_open = caller.breaker.open();
            let bound = bound(caller_open, 0, below_ns);
            below_ns = below_ns.saturating_add(longest_open_ns(caller_open));
            bound
        })
        .collect();
    callers_opens_bound.reverse();
    let time_to_exhaustion_s = match (scenario.workers(), up.kind) {
        (Some(workers), CallFailure::Hang) => {
            Some(f64::from(workers) / dependency_rate_per_instance)
        }
        _ => None,
    };
    let jitter_needed_s = match (up.warmup, scenario.breaker().half_open().probes()) {
        (Some(warm), Probes::Limited(probes)) => {
            Some(instances * f64::from(probes.get()) / warm.capacity)
        }
        _ => None,
    };
    ClosedForm {
        dependency_rate_per_instance,
        time_to_trip_s,
        opens_estimate,
        opens_bound: bound(open, failure_seen_ns, 0),
        time_to_exhaustion_s,
        jitter_needed_s,
        callers_opens_bound,
    }
}

/// Overlapping or touching `[start, end)` intervals (in order of start) merged.
fn merge(intervals: impl Iterator<Item = (u64, u64)>) -> Vec<(u64, u64)> {
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (start, end) in intervals {
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    merged
}
