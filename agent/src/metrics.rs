//! The agent's counters and their Prometheus text rendering.

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::api::FaultKind;

/// Kind names in the order of [`kind_slot`]; the label values of `tolerant_agent_faults_injected_total`.
pub(crate) const KIND_NAMES: [&str; 4] = ["error", "hang", "delay", "reset"];

/// Index of a kind in [`KIND_NAMES`].
pub(crate) fn kind_slot(kind: &FaultKind) -> usize {
    match kind {
        FaultKind::Error { .. } => 0,
        FaultKind::Hang => 1,
        FaultKind::Delay { .. } => 2,
        FaultKind::Reset => 3,
    }
}

/// Monotonic counters; every field is written with relaxed atomics (they are statistics, not synchronisation).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// Requests the fault layer saw (the control API's own requests are not counted).
    pub(crate) requests_seen: AtomicU64,
    /// Faults injected, by kind, indexed like [`KIND_NAMES`].
    pub(crate) injected_by_kind: [AtomicU64; 4],
    /// Faults removed because their lease ran out.
    pub(crate) leases_expired: AtomicU64,
    /// Requests a `hang` fault holds right now (shared with each held request's guard).
    pub(crate) requests_held: Arc<AtomicU64>,
    /// Requests marked as a caller's half-open probe ([`crate::PROBE_HEADER`]).
    pub(crate) probes_seen: AtomicU64,
}

impl Counters {
    pub(crate) fn record_injection(&self, kind: &FaultKind) {
        self.injected_by_kind[kind_slot(kind)].fetch_add(1, Ordering::Relaxed);
    }

    /// Prometheus text exposition format 0.0.4.
    pub(crate) fn render(&self, active_faults: usize) -> String {
        let mut text = String::with_capacity(1024);
        let _ = writeln!(
            text,
            "# HELP tolerant_agent_requests_total Requests seen by the fault layer.\n\
             # TYPE tolerant_agent_requests_total counter\n\
             tolerant_agent_requests_total {}",
            self.requests_seen.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            text,
            "# HELP tolerant_agent_faults_injected_total Requests a fault fired on, by fault kind.\n\
             # TYPE tolerant_agent_faults_injected_total counter"
        );
        for (name, count) in KIND_NAMES.iter().zip(&self.injected_by_kind) {
            let _ = writeln!(
                text,
                "tolerant_agent_faults_injected_total{{kind=\"{name}\"}} {}",
                count.load(Ordering::Relaxed)
            );
        }
        let _ = writeln!(
            text,
            "# HELP tolerant_agent_active_faults Faults currently active.\n\
             # TYPE tolerant_agent_active_faults gauge\n\
             tolerant_agent_active_faults {active_faults}"
        );
        let _ = writeln!(
            text,
            "# HELP tolerant_agent_leases_expired_total Faults the agent removed because their lease ran out.\n\
             # TYPE tolerant_agent_leases_expired_total counter\n\
             tolerant_agent_leases_expired_total {}",
            self.leases_expired.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            text,
            "# HELP tolerant_agent_requests_held Requests a hang fault is holding right now.\n\
             # TYPE tolerant_agent_requests_held gauge\n\
             tolerant_agent_requests_held {}",
            self.requests_held.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            text,
            "# HELP tolerant_agent_probes_total Requests marked as a caller's half-open breaker probe.\n\
             # TYPE tolerant_agent_probes_total counter\n\
             tolerant_agent_probes_total {}",
            self.probes_seen.load(Ordering::Relaxed)
        );
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_every_series() {
        let counters = Counters::default();
        counters.requests_seen.store(12, Ordering::Relaxed);
        counters.probes_seen.store(4, Ordering::Relaxed);
        counters.record_injection(&FaultKind::Reset);
        counters.record_injection(&FaultKind::Reset);
        let text = counters.render(3);
        assert!(text.contains("tolerant_agent_requests_total 12\n"));
        assert!(text.contains("tolerant_agent_faults_injected_total{kind=\"reset\"} 2\n"));
        assert!(text.contains("tolerant_agent_faults_injected_total{kind=\"error\"} 0\n"));
        assert!(text.contains("tolerant_agent_active_faults 3\n"));
        assert!(text.contains("tolerant_agent_probes_total 4\n"));
        assert!(text.contains("# TYPE tolerant_agent_active_faults gauge\n"));
    }
}
