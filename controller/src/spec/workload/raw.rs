//! A custom workload as serde reads it: tasks, requests, values and on-start requests, each value spanned.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTask {
    pub(super) name: Spanned<String>,
    pub(super) weight: Option<Spanned<u32>>,
    /// This task's failures are the critical ones (the checkout of the seed study).
    pub(super) critical: Option<Spanned<bool>>,
    pub(super) requests: Spanned<Vec<Spanned<RawRequest>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRequest {
    pub(super) method: Option<String>,
    pub(super) path: String,
    pub(super) name: Option<String>,
    pub(super) form: Option<BTreeMap<String, String>>,
    pub(super) json: Option<toml::Value>,
    pub(super) headers: Option<BTreeMap<String, String>>,
    pub(super) expect: Option<Vec<u16>>,
}

/// `[load.values]` as written: each entry read by hand ([`RawValues::from_value`]), so that an entry of neither
/// shape is an error naming the entry and both shapes.
pub(crate) type RawValuesTable = Spanned<BTreeMap<String, Spanned<toml::Value>>>;

/// The requests a user makes once when it starts (`load.on_start`).
pub(crate) type RawOnStart = Spanned<Vec<Spanned<RawRequest>>>;

/// A file holding only a workload: its `[load]` table with `tasks`, `values`, `on_start` and `cookies`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWorkloadFile {
    pub(super) load: RawWorkloadLoad,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWorkloadLoad {
    pub(super) tasks: Spanned<Vec<Spanned<RawTask>>>,
    pub(super) values: Option<RawValuesTable>,
    pub(super) on_start: Option<RawOnStart>,
    pub(super) cookies: Option<bool>,
}
