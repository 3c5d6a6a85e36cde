//! Frontend: the shop's HTML pages, route- and form-compatible with Online Boutique's frontend so its
//! stock load generator runs unchanged. Read paths degrade (no products, empty cart, no ads or
//! recommendations, page still 200); checkout shows failures, with `x-tolerant-rejected` when a breaker
//! rejected the order.

pub mod forms;
pub mod pages;
pub mod session;

mod respond;
mod routes;
mod state;
#[cfg(test)]
mod tests;

pub use routes::router;
pub use state::{FrontendDependencies, FrontendState};
