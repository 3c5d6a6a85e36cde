//! The load driver's file-descriptor budget: every virtual user holds a connection, and on one machine the
//! process runs out of descriptors long before `load.users` reaches its bound. A run that hits the limit
//! measures `EMFILE`, not the system, so the users a process cannot hold are refused before anything is
//! stored or started.
//!
//! The cost is measured, not guessed: `tolerant run` against the embedded stack, think time 0.5–2 s, the peak
//! of `/proc/PID/fd` sampled every 0.3 s (`BENCHMARKS.md` of this crate has the commands):
//!
//! | users | peak descriptors |
//! |---|---|
//! | 100 (`hang` on half the charges) | 932 |
//! | 500 (same) | 2 892 |
//! | 2 000 (same) | 5 373 |
//! | 2 000 (no fault) | 5 432 |
//!
//! Every user keeps its keep-alive connection open, so against the embedded stack (same process) it holds
//! two descriptors, its socket and the frontend's end of it; the services' connections to each other grow
//! with the requests in flight up to about 1 900 here and are counted as a fixed part. Against a target
//! elsewhere a user holds only its own socket.

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

use super::LoadError;

/// What virtual users cost in descriptors: `per_user` each, plus `fixed` for the rest of the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DescriptorCost {
    pub per_user: u64,
    pub fixed: u64,
}

/// Descriptors kept for everything else the process opens: listeners, the store, stream subscriptions,
/// the dashboard's clients, libraries.
pub const DESCRIPTOR_RESERVE: u64 = 512;

/// Users whose target runs in this process (the embedded stack): two descriptors each, and the services'
/// connections to each other (measured up to about 1 900) on top of the reserve.
pub const EMBEDDED_COST: DescriptorCost = DescriptorCost {
    per_user: 2,
    fixed: DESCRIPTOR_RESERVE + 2_048,
};

/// Users whose target runs elsewhere: their own connection each.
pub const EXTERNAL_COST: DescriptorCost = DescriptorCost {
    per_user: 1,
    fixed: DESCRIPTOR_RESERVE,
};

/// The process's limit on open descriptors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DescriptorLimit {
    /// What the process may open now (`None`: unlimited).
    pub soft: Option<u64>,
    /// What the soft limit may be raised to.
    pub hard: Option<u64>,
}

/// Raises the soft limit on open descriptors to the hard limit, where allowed, and returns the limit then
/// in force. Called before the budget is checked: the default soft limit (often 1 024) is far below what
/// the hard limit lets an unprivileged process use.
pub fn raise_descriptor_limit() -> DescriptorLimit {
    let limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        let raised = Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        };
        if setrlimit(Resource::Nofile, raised).is_ok() {
            let now = getrlimit(Resource::Nofile);
            return DescriptorLimit {
                soft: now.current,
                hard: now.maximum,
            };
        }
    }
    DescriptorLimit {
        soft: limit.current,
        hard: limit.maximum,
    }
}

/// Descriptors this process has open now (Linux: `/proc/self/fd`); `None` where that cannot be read.
pub fn open_descriptors() -> Option<u64> {
    std::fs::read_dir("/proc/self/fd")
        .ok()
        .map(|entries| entries.count() as u64)
}

/// The most virtual users a process with `limit` descriptors, `open` of them in use, can hold at `cost`.
pub fn users_within(limit: u64, open: u64, cost: DescriptorCost) -> u64 {
    limit.saturating_sub(open).saturating_sub(cost.fixed) / cost.per_user.max(1)
}

/// Checks that `users` virtual users at `cost` fit in `limit` with `open` in use; the error names
/// `load.users` and says how many would.
pub fn check_users(
    users: u32,
    cost: DescriptorCost,
    limit: DescriptorLimit,
    open: u64,
) -> Result<(), LoadError> {
    let Some(soft) = limit.soft else {
        return Ok(());
    };
    let most = users_within(soft, open, cost);
    if u64::from(users) <= most {
        return Ok(());
    }
    Err(LoadError::TooManyUsers {
        users,
        most,
        per_user: cost.per_user,
        fixed: cost.fixed,
        soft,
        open,
        hard: limit.hard,
    })
}

/// Raises the soft limit where allowed and checks that `users` virtual users fit in this process, their
/// target running in it (`embedded`) or elsewhere. A check that cannot read the open count takes it as 0.
pub fn check_descriptor_budget(users: u32, embedded: bool) -> Result<(), LoadError> {
    let cost = if embedded {
        EMBEDDED_COST
    } else {
        EXTERNAL_COST
    };
    let limit = raise_descriptor_limit();
    check_users(users, cost, limit, open_descriptors().unwrap_or(0))
}

/// [`check_descriptor_budget`] for a run's users, unless they run on load workers (`on_workers`): each worker
/// checks its own share against its capacity, so this process holds none of them.
pub fn check_users_fit(users: u32, on_workers: bool, embedded: bool) -> Result<(), LoadError> {
    if on_workers {
        return Ok(());
    }
    check_descriptor_budget(users, embedded)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT_20K: DescriptorLimit = DescriptorLimit {
        soft: Some(20_000),
        hard: Some(20_000),
    };

    #[test]
    fn users_on_load_workers_cost_this_process_nothing() {
        // Far beyond any descriptor limit: refused in-process, accepted when the workers hold them.
        assert!(check_users_fit(4_000_000_000, false, false).is_err());
        assert!(check_users_fit(4_000_000_000, true, true).is_ok());
    }

    #[test]
    fn users_fit_within_the_limit_less_what_is_open_and_the_fixed_part() {
        assert_eq!(
            users_within(20_000, 88, EMBEDDED_COST),
            (20_000 - 88 - 2_560) / 2
        );
        assert_eq!(users_within(1_024, 88, EXTERNAL_COST), 1_024 - 88 - 512);
        // Less left than the fixed part: no user fits.
        assert_eq!(users_within(2_048, 88, EMBEDDED_COST), 0);
        let free = DescriptorCost {
            per_user: 0,
            fixed: 0,
        };
        assert_eq!(users_within(20_000, 0, free), 20_000);
    }

    /// The measured peaks (module documentation) fit in what the embedded cost asks for.
    #[test]
    fn the_embedded_cost_covers_the_measured_peaks() {
        for (users, peak) in [
            (100u64, 932u64),
            (500, 2_892),
            (2_000, 5_373),
            (2_000, 5_432),
        ] {
            let asked = users * EMBEDDED_COST.per_user + EMBEDDED_COST.fixed;
            assert!(asked >= peak, "{users} users: {asked} < {peak}");
        }
    }

    #[test]
    fn a_user_count_above_the_budget_names_the_field() {
        assert!(check_users(8_000, EMBEDDED_COST, LIMIT_20K, 100).is_ok());
        let error = check_users(100_000, EMBEDDED_COST, LIMIT_20K, 100).unwrap_err();
        let text = error.to_string();
        assert!(
            text.starts_with("load.users: 100000 virtual users"),
            "{text}"
        );
        assert!(text.contains("at most 8670"), "{text}");
        assert!(text.contains("ulimit -n"), "{text}");
        // Unlimited: anything fits.
        let unlimited = DescriptorLimit {
            soft: None,
            hard: None,
        };
        assert!(check_users(100_000, EMBEDDED_COST, unlimited, 100).is_ok());
    }

    #[test]
    fn the_soft_limit_is_raised_to_the_hard_one() {
        let limit = raise_descriptor_limit();
        assert_eq!(limit.soft, limit.hard, "{limit:?}");
        assert!(open_descriptors().is_some_and(|open| open >= 3));
    }
}
