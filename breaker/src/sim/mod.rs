//! The breaker on a virtual clock: the production [`CircuitBreaker`](crate::CircuitBreaker) driven by a simulated
//! workload against a dependency that fails on a schedule, twice — with a breaker per instance and without one —
//! so that every total has its counterfactual.
//!
//! The idealised model breaker simulators use is the default ([`Settings::default`]): a window of time, requests at
//! a constant rate, a dependency that fails every call from a start for a length, each failing call costing its
//! caller the full timeout, a rejection costing nothing, and either "each arriving request may probe" or the
//! breaker's real half-open limit. Two models of when the breaker learns an outcome ([`Model`]): at the call's
//! end (`at-timeout`, the default, as in production), or at once as the published simulator has it
//! (`published`, with its defaults in [`Settings::published`]). Beyond it: partial failure at a seeded rate (or evenly spread), hangs or instant
//! errors, every detector and half-open policy and backoff with jitter (any [`BreakerConfig`](crate::BreakerConfig)),
//! worker pools, several instances recovering together against a dependency that comes back cold, and a closed
//! workload like an experiment's (users, think time, the share of tasks that call the dependency).
//!
//! Nothing here reads a real clock or does I/O; the same scenario and seed give the same result.
//!
//! ```
//! use breaker::sim::{self, Settings};
//!
//! let run = sim::simulate(&Settings::default().scenario().expect("valid"));
//! // In a hard outage every call fails either way; the breaker saves the callers' waiting, and costs the calls it
//! // rejects after the dependency is back.
//! assert!(run.totals.caller_seconds_with < run.totals.caller_seconds_without);
//! assert!(run.totals.failed_with_breaker >= run.totals.failed_without_breaker);
//! assert!(run.totals.opens <= run.closed_form.opens_bound);
//! ```

mod arrivals;
mod chain;
mod checks;
mod draws;
mod engine;
mod output;
mod scenario;
mod settings;
mod tally;

pub use engine::{CallRecord, Decision};
pub use output::{CallerFigures, ClosedForm, Second, Simulation, Totals, closed_form};
pub use scenario::{
    CallFailure, Caller, MAX_CALLERS, MAX_INSTANCES, MAX_RATE, MAX_REQUESTS, MAX_TIMEOUT,
    MAX_USERS, MAX_WINDOW, MAX_WORKERS, MIN_THINK, MIN_WINDOW, Model, Pattern, RawScenario,
    Scenario, ScenarioError, Schedule, Upstream, Warmup, Workload,
};
pub use settings::{
    HalfOpen, InvalidDuration, InvalidHalfOpen, MAX_THRESHOLD, Settings, parse_duration,
};

/// Simulate `scenario` (checked when it was built) with a breaker per instance and without one.
pub fn simulate(scenario: &Scenario) -> Simulation {
    simulate_with(scenario, &Counterfactual::of(scenario))
}

/// The pass without a breaker, kept to set beside many passes with one: it depends on everything in the
/// scenario but the breaker's config, so a search over configs runs it once ([`simulate_with`]).
#[derive(Debug, Clone)]
pub struct Counterfactual {
    pass: engine::Pass,
    scenario: Scenario,
}

impl Counterfactual {
    /// The pass of `scenario` without a breaker.
    pub fn of(scenario: &Scenario) -> Self {
        Counterfactual {
            pass: engine::run(scenario, false),
            scenario: scenario.clone(),
        }
    }
}

/// [`simulate`] with the pass without a breaker already run: `without` must be of a scenario that differs
/// from `scenario` at most in the breaker's config (otherwise it is run again, so the result is always right).
pub fn simulate_with(scenario: &Scenario, without: &Counterfactual) -> Simulation {
    let with = engine::run(scenario, true);
    let same = without.scenario.window() == scenario.window()
        && without.scenario.workload() == scenario.workload()
        && without.scenario.upstream() == scenario.upstream()
        && without.scenario.instances() == scenario.instances()
        && without.scenario.workers() == scenario.workers()
        && without.scenario.seed() == scenario.seed()
        && without.scenario.log_calls() == scenario.log_calls();
    if same {
        output::combine(scenario, with, &without.pass)
    } else {
        output::combine(scenario, with, &engine::run(scenario, false))
    }
}

#[cfg(test)]
mod tests;
