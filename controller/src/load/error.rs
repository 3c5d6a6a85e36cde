//! Why a load run cannot be set as asked, each error naming its field.

use std::time::Duration;

use super::mix::InvalidPath;
use crate::spec::{MAX_TIMEOUT, MAX_USERS, MAX_WRITTEN_DURATION, RATE_RANGE};

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("load.users: must be at least 1")]
    NoUsers,
    #[error("load.users: {0} is more than the maximum {MAX_USERS}")]
    UsersAbove(u32),
    #[error(
        "load.rate: {0} is not a number of tasks per second between {min} and {max}",
        min = RATE_RANGE.0,
        max = RATE_RANGE.1
    )]
    BadRate(f64),
    #[error("load.think_time: minimum {min:?} is above maximum {max:?}")]
    BadThinkTime { min: Duration, max: Duration },
    /// (A year: a spec's think time divided by the smallest `time_scale` stays below it.)
    #[error("load.think_time: maximum {0:?} is longer than {MAX_WRITTEN_DURATION:?}")]
    LongThinkTime(Duration),
    #[error("load.timeout: {0:?} is not above zero and at most {MAX_TIMEOUT:?}")]
    BadTimeout(Duration),
    #[error("load.users: users {first}..{} are not inside a run of {of} users", u64::from(*first) + u64::from(*users))]
    BadShare { first: u32, users: u32, of: u32 },
    #[error("load.path: {0}")]
    BadPath(#[from] InvalidPath),
    #[error(
        "load.users: {users} virtual users need more file descriptors than this process may open: \
         {per_user} each, at most {most} users in a limit of {soft} ({open} open now, \
         {fixed} kept for the rest); run fewer users or raise `ulimit -n`{hard_note}",
        hard_note = match hard {
            Some(hard) if hard > soft => format!(" (the hard limit is {hard})"),
            _ => String::new(),
        }
    )]
    TooManyUsers {
        users: u32,
        most: u64,
        per_user: u64,
        fixed: u64,
        soft: u64,
        open: u64,
        hard: Option<u64>,
    },
}
