//! Live dashboard: the hub that fans events out to browsers, the controller HTTP API, the pages.

pub mod hub;
pub mod live;
