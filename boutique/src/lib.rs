//! Online Boutique in Rust: ten services whose every dependency call goes through a breaker.
//!
//! Each service is a module under [`services`] with `fn router(state) -> Router`; [`RunningStack`] runs
//! all ten in one process on loopback, [`run_one`] runs one. Every inter-service call goes through
//! [`client::Dependency`]: a `caller->dependency` breaker from the service's `breaker::Registry`, a call
//! timeout, and HTTP classification (5xx, timeouts and transport errors fail; 4xx never do). Each
//! service has a bounded [`pool::WorkerPool`] and the admin endpoints of [`admin`].

pub mod admin;
pub mod breaker_lease;
pub mod client;
pub mod config;
pub mod context;
pub mod cookies;
pub mod data;
pub mod error;
pub mod metrics;
pub mod mode_switch;
pub mod money;
pub mod pool;
pub mod pool_edges;
pub mod request_stats;
pub mod service_name;
pub mod services;
pub mod stack;
pub mod wire;

pub use config::{PoolConfig, RawStackConfig, StackConfig, StackConfigError};
pub use error::StackError;
pub use service_name::ServiceName;
pub use stack::{RunningService, RunningStack, run_one};
