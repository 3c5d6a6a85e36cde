//! What is followed and sampled of whom: a target's label, URL and follows, and the targets the sampler reads
//! with what each watch wants read of them.

use std::collections::BTreeMap;

use crate::target::ServiceId;

/// What to follow of one target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Follows {
    /// Its `/_breakers/stream`.
    pub transitions: bool,
    /// `GET /_pool` every second.
    pub pool: bool,
    /// `GET /_admin/cart-stats` every second.
    pub cart: bool,
    /// `GET /metrics` every second.
    pub metrics: bool,
    /// `GET /_breakers` every second.
    pub breakers: bool,
}

impl Follows {
    pub(super) fn union(self, other: Follows) -> Follows {
        Follows {
            transitions: self.transitions || other.transitions,
            pool: self.pool || other.pool,
            cart: self.cart || other.cart,
            metrics: self.metrics || other.metrics,
            breakers: self.breakers || other.breakers,
        }
    }

    /// Whether the sampler reads anything of the target.
    pub(super) fn sampled(self) -> bool {
        self.pool || self.cart || self.metrics || self.breakers
    }
}

/// A target to follow: its label (a replica's is its own, `checkout#2`), its base URL (`http://…`), and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub label: ServiceId,
    pub url: String,
    pub follows: Follows,
}

pub(super) type WatchId = u64;

/// A sampled target and what each watch wants read of it.
pub(super) struct SampledTarget {
    pub(super) label: ServiceId,
    pub(super) url: String,
    pub(super) by: BTreeMap<WatchId, Follows>,
}

/// The targets the sampler reads, in the order they were first asked for.
#[derive(Default)]
pub(super) struct SampledTargets(pub(super) Vec<SampledTarget>);

impl SampledTargets {
    /// `(label, base URL, what to read)` of every target something is read of.
    pub(super) fn snapshot(&self) -> Vec<(ServiceId, String, Follows)> {
        self.0
            .iter()
            .filter_map(|target| {
                let follows = (target.by.values()).fold(Follows::default(), |a, b| a.union(*b));
                follows
                    .sampled()
                    .then(|| (target.label.clone(), target.url.clone(), follows))
            })
            .collect()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}
