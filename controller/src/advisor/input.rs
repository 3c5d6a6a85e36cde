//! The advisor's input (`tolerant tune INPUT`): the traffic, the failure profiles the team cares about with their
//! weights, what each kind of cost is worth, the constraints and the search's and verification's settings — read
//! from TOML with every value's span, every number bounded before anything is simulated, and every error naming
//! the dotted field and its line (the spec's [`Checker`], the same [`SpecError`]).

use std::time::Duration;

use breaker::sim::{MIN_THINK, Workload};
use serde::Deserialize;
use toml::Spanned;

use crate::spec::SpecError;
use crate::spec::checker::Checker;

/// Healthy time before an outage, a hang or the first blip starts.
pub const FAULT_LEAD: Duration = Duration::from_secs(10);

/// Most failure profiles one input may list.
pub const MAX_PROFILES: usize = 8;
/// Highest request rate of the traffic, requests per second.
pub const MAX_TRAFFIC_RATE: f64 = 10_000.0;
/// Most users of a closed workload.
pub const MAX_TRAFFIC_USERS: u32 = 10_000;
/// Most instances of the calling service.
pub const MAX_TRAFFIC_INSTANCES: u32 = 100;
/// Most workers per instance.
pub const MAX_TRAFFIC_WORKERS: u32 = 100_000;
/// Longest call timeout.
pub const MAX_CALL_TIMEOUT: Duration = Duration::from_secs(600);
/// Shortest and longest simulated window of one profile.
pub const MIN_PROFILE_WINDOW: Duration = Duration::from_secs(10);
pub const MAX_PROFILE_WINDOW: Duration = Duration::from_secs(6 * 3600);
/// Most requests one profile's window may hold (rate × window), so the search stays bounded.
pub const MAX_PROFILE_REQUESTS: f64 = 1_000_000.0;
/// Highest weight of a profile and highest price of a cost term.
pub const MAX_WEIGHT: f64 = 1_000_000.0;
/// Longest `detect_within`.
pub const MAX_DETECT_WITHIN: Duration = Duration::from_secs(3600);
/// Most false trips per hour a constraint may allow.
pub const MAX_FALSE_TRIPS_PER_HOUR: f64 = 3_600.0;
/// Most candidates one search may simulate.
pub const MAX_CANDIDATES: u32 = 100_000;
/// Most candidates (current config included) one verification runs.
pub const MAX_VERIFY_CANDIDATES: u32 = 6;
/// Most rounds of a verification.
pub const MAX_VERIFY_ROUNDS: u32 = 30;

/// The checked input.
#[derive(Debug, Clone, PartialEq)]
pub struct TuneInput {
    /// The dependency the breaker guards (names the exported instance: `payment`).
    pub name: String,
    pub traffic: Traffic,
    pub profiles: Vec<Profile>,
    pub costs: Costs,
    pub constraints: Constraints,
    pub search: SearchSettings,
    pub verify: VerifySettings,
}

/// Who calls the dependency and what a call costs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Traffic {
    /// Arrivals (open model: `rate`; closed: `users` thinking `think_min`…`think_max`), with the share calling
    /// the dependency.
    pub workload: Workload,
    /// What a healthy call costs its caller.
    pub latency: Duration,
    /// What a hanging call costs its caller: the caller's timeout.
    pub timeout: Duration,
    /// Workers per instance (`None`: unbounded).
    pub workers: Option<u32>,
    /// Instances of the caller, one breaker each.
    pub instances: u32,
}

/// One failure profile, with its weight among the profiles.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    pub name: String,
    pub kind: ProfileKind,
    /// Relative weight of this profile in the total cost.
    pub weight: f64,
    /// Simulated time.
    pub window: Duration,
}

/// What goes wrong in a profile.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ProfileKind {
    /// The dependency fails every call for `length`, every `every` (at once, or hanging until the timeout).
    Blips {
        length: Duration,
        every: Duration,
        hang: bool,
    },
    /// A share `rate` of calls fail, the whole window (at once, or hanging until the timeout).
    Partial { rate: f64, hang: bool },
    /// Every call hangs until the caller's timeout, for `length`.
    Hang { length: Duration },
    /// Every call fails at once, for `length`.
    Outage { length: Duration },
    /// The healthy baseline: a share `rate` of calls fail, at which the breaker must not trip.
    Baseline { rate: f64 },
}

impl ProfileKind {
    /// The spelling in the input.
    pub fn as_str(self) -> &'static str {
        match self {
            ProfileKind::Blips { .. } => "blips",
            ProfileKind::Partial { .. } => "partial",
            ProfileKind::Hang { .. } => "hang",
            ProfileKind::Outage { .. } => "outage",
            ProfileKind::Baseline { .. } => "baseline",
        }
    }

    /// Default simulated window: a few periods of blips, two minutes of partial failure, the outage with time
    /// before and after it, ten minutes of baseline.
    fn default_window(self) -> Duration {
        match self {
            ProfileKind::Blips { every, .. } => (every * 6).max(Duration::from_secs(60)),
            ProfileKind::Partial { .. } => Duration::from_secs(120),
            ProfileKind::Hang { length } | ProfileKind::Outage { length } => {
                length + Duration::from_secs(40)
            }
            ProfileKind::Baseline { .. } => Duration::from_secs(600),
        }
    }
}

/// What each kind of cost is worth, in one unit of the team's choosing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Costs {
    /// A request rejected that would have succeeded.
    pub rejected_success: f64,
    /// A caller-second blocked on a failing call.
    pub blocked_second: f64,
    /// A request refused by a full worker pool.
    pub refused: f64,
    /// A second to detect (open on) a full outage or hang.
    pub detect_second: f64,
}

impl Default for Costs {
    fn default() -> Self {
        Costs {
            rejected_success: 1.0,
            blocked_second: 1.0,
            refused: 1.0,
            detect_second: 0.0,
        }
    }
}

/// What a recommendation must keep to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Constraints {
    /// Every sustained failure (outage, hang, partial failure) opens the breaker within this.
    pub detect_within: Option<Duration>,
    /// At most this many trips per hour at the baseline error rate.
    pub false_trips_per_hour: Option<f64>,
}

/// The search's own settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchSettings {
    /// Seed of every draw of the simulations.
    pub seed: u64,
    /// Most candidates simulated (the grid is thinned evenly above it).
    pub max_candidates: u32,
}

/// How `--verify` runs its experiment.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifySettings {
    /// Candidates verified besides the current config (the best by predicted cost).
    pub top: u32,
    pub rounds: u32,
    /// Divides every duration of the experiment (the study's time scale).
    pub time_scale: f64,
    /// `verify.spec`: an experiment spec whose `[targets]`, `[load]`, `[[sources]]` and `fault.target` are the
    /// testbed and load of the verification (the user's own system) instead of the embedded testbed; as written
    /// (relative to the input file once [`TuneInput::from_file`] has read it).
    pub spec: Option<std::path::PathBuf>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawInput {
    name: Option<Spanned<String>>,
    traffic: Spanned<RawTraffic>,
    profiles: Spanned<Vec<Spanned<RawProfile>>>,
    costs: Option<RawCosts>,
    constraints: Option<RawConstraints>,
    search: Option<RawSearch>,
    verify: Option<RawVerify>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTraffic {
    rate: Option<Spanned<f64>>,
    users: Option<Spanned<u32>>,
    think_min: Option<Spanned<String>>,
    think_max: Option<Spanned<String>>,
    share: Option<Spanned<f64>>,
    latency: Option<Spanned<String>>,
    timeout: Spanned<String>,
    workers: Option<Spanned<u32>>,
    instances: Option<Spanned<u32>>,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum KindName {
    Blips,
    Partial,
    Hang,
    Outage,
    Baseline,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProfile {
    name: Spanned<String>,
    kind: Spanned<KindName>,
    weight: Option<Spanned<f64>>,
    rate: Option<Spanned<f64>>,
    length: Option<Spanned<String>>,
    every: Option<Spanned<String>>,
    window: Option<Spanned<String>>,
    /// How a failing call of blips or a partial failure fails: `error` (at once, the default) or `hang`.
    fault: Option<Spanned<FailingCall>>,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum FailingCall {
    Error,
    Hang,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCosts {
    rejected_success: Option<Spanned<f64>>,
    blocked_second: Option<Spanned<f64>>,
    refused: Option<Spanned<f64>>,
    detect_second: Option<Spanned<f64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConstraints {
    detect_within: Option<Spanned<String>>,
    false_trips_per_hour: Option<Spanned<f64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSearch {
    seed: Option<u64>,
    max_candidates: Option<Spanned<u32>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVerify {
    top: Option<Spanned<u32>>,
    rounds: Option<Spanned<u32>>,
    time_scale: Option<Spanned<f64>>,
    spec: Option<Spanned<String>>,
}

impl TuneInput {
    /// Parse and check an input; the error names the field and its line.
    pub fn parse(source: &str) -> Result<TuneInput, SpecError> {
        let raw: RawInput = toml::from_str(source).map_err(|e| SpecError::from_toml(source, &e))?;
        let check = Checker::new(source);
        let name = match &raw.name {
            Some(name) => check.name("name", name)?,
            None => "dependency".to_owned(),
        };
        let traffic = traffic(&check, raw.traffic.get_ref(), raw.traffic.span())?;
        if raw.profiles.get_ref().is_empty() {
            return Err(check.error(
                "profiles",
                raw.profiles.span(),
                "must list at least one profile",
            ));
        }
        if raw.profiles.get_ref().len() > MAX_PROFILES {
            return Err(check.error(
                "profiles",
                raw.profiles.span(),
                format!("at most {MAX_PROFILES} profiles"),
            ));
        }
        let mut profiles: Vec<Profile> = Vec::new();
        for (i, raw_profile) in raw.profiles.get_ref().iter().enumerate() {
            let profile = profile(&check, i, raw_profile.get_ref(), &traffic)?;
            if profiles.iter().any(|p| p.name == profile.name) {
                return Err(check.error(
                    &format!("profiles[{i}].name"),
                    raw_profile.get_ref().name.span(),
                    format!("`{}` is listed twice", profile.name),
                ));
            }
            profiles.push(profile);
        }
        let costs = match &raw.costs {
            Some(raw) => {
                let price = |field: &str, value: &Option<Spanned<f64>>, default: f64| match value {
                    Some(v) => {
                        check.number_in(&format!("costs.{field}"), v, (0.0, MAX_WEIGHT), "units")
                    }
                    None => Ok(default),
                };
                let defaults = Costs::default();
                Costs {
                    rejected_success: price(
                        "rejected_success",
                        &raw.rejected_success,
                        defaults.rejected_success,
                    )?,
                    blocked_second: price(
                        "blocked_second",
                        &raw.blocked_second,
                        defaults.blocked_second,
                    )?,
                    refused: price("refused", &raw.refused, defaults.refused)?,
                    detect_second: price(
                        "detect_second",
                        &raw.detect_second,
                        defaults.detect_second,
                    )?,
                }
            }
            None => Costs::default(),
        };
        let constraints = match &raw.constraints {
            Some(raw) => Constraints {
                detect_within: match &raw.detect_within {
                    Some(value) => {
                        let within = check.duration_at_most(
                            "constraints.detect_within",
                            value,
                            MAX_DETECT_WITHIN,
                        )?;
                        if within < Duration::from_millis(10) {
                            return Err(check.error(
                                "constraints.detect_within",
                                value.span(),
                                "must be at least 10ms",
                            ));
                        }
                        Some(within)
                    }
                    None => None,
                },
                false_trips_per_hour: match &raw.false_trips_per_hour {
                    Some(value) => Some(check.number_in(
                        "constraints.false_trips_per_hour",
                        value,
                        (0.0, MAX_FALSE_TRIPS_PER_HOUR),
                        "trips per hour",
                    )?),
                    None => None,
                },
            },
            None => Constraints {
                detect_within: None,
                false_trips_per_hour: None,
            },
        };
        let search = match &raw.search {
            Some(raw) => SearchSettings {
                seed: raw.seed.unwrap_or(1),
                max_candidates: match &raw.max_candidates {
                    Some(value) => {
                        count(&check, "search.max_candidates", value, 1, MAX_CANDIDATES)?
                    }
                    None => MAX_CANDIDATES,
                },
            },
            None => SearchSettings {
                seed: 1,
                max_candidates: MAX_CANDIDATES,
            },
        };
        let verify = match &raw.verify {
            Some(raw) => VerifySettings {
                top: match &raw.top {
                    Some(v) => count(&check, "verify.top", v, 1, MAX_VERIFY_CANDIDATES - 1)?,
                    None => 2,
                },
                rounds: match &raw.rounds {
                    Some(v) => count(&check, "verify.rounds", v, 2, MAX_VERIFY_ROUNDS)?,
                    None => 5,
                },
                time_scale: match &raw.time_scale {
                    Some(v) => check.number_in(
                        "verify.time_scale",
                        v,
                        crate::spec::TIME_SCALE_RANGE,
                        "times",
                    )?,
                    None => 1.0,
                },
                spec: match &raw.spec {
                    Some(path) => Some(verify_spec_path(&check, path)?),
                    None => None,
                },
            },
            None => VerifySettings {
                top: 2,
                rounds: 5,
                time_scale: 1.0,
                spec: None,
            },
        };
        Ok(TuneInput {
            name,
            traffic,
            profiles,
            costs,
            constraints,
            search,
            verify,
        })
    }

    /// Read and check an input file.
    pub fn from_file(path: impl AsRef<std::path::Path>) -> Result<TuneInput, SpecError> {
        let path = path.as_ref();
        let source = crate::advisor::file::read_capped(path).map_err(|source| SpecError::Read {
            path: path.display().to_string(),
            source,
        })?;
        let mut input = TuneInput::parse(&source)?;
        if let Some(spec) = input.verify.spec.take() {
            let dir = path.parent().unwrap_or_else(|| std::path::Path::new(""));
            input.verify.spec = Some(dir.join(spec));
        }
        Ok(input)
    }

    /// Sum of the profiles' weights.
    pub fn total_weight(&self) -> f64 {
        self.profiles.iter().map(|p| p.weight).sum()
    }
}

/// Longest `verify.spec` path accepted.
const MAX_SPEC_PATH: usize = 4096;

/// `verify.spec`: a non-empty path of at most [`MAX_SPEC_PATH`] bytes.
fn verify_spec_path(
    check: &Checker<'_>,
    path: &Spanned<String>,
) -> Result<std::path::PathBuf, SpecError> {
    let text = path.get_ref();
    if text.is_empty() || text.len() > MAX_SPEC_PATH || text.contains('\0') {
        return Err(check.error(
            "verify.spec",
            path.span(),
            format!("must be a path of 1 to {MAX_SPEC_PATH} bytes"),
        ));
    }
    Ok(std::path::PathBuf::from(text))
}

fn count(
    check: &Checker<'_>,
    field: &str,
    value: &Spanned<u32>,
    min: u32,
    max: u32,
) -> Result<u32, SpecError> {
    let v = *value.get_ref();
    if (min..=max).contains(&v) {
        Ok(v)
    } else {
        Err(check.error(
            field,
            value.span(),
            format!("{v} is not between {min} and {max}"),
        ))
    }
}

fn traffic(
    check: &Checker<'_>,
    raw: &RawTraffic,
    span: std::ops::Range<usize>,
) -> Result<Traffic, SpecError> {
    let share = match &raw.share {
        Some(share) => {
            let v = check.fraction("traffic.share", share)?;
            if v == 0.0 {
                return Err(check.error("traffic.share", share.span(), "must be above 0"));
            }
            v
        }
        None => 1.0,
    };
    let workload = match (&raw.rate, &raw.users) {
        (Some(_), Some(users)) => {
            return Err(check.error(
                "traffic.users",
                users.span(),
                "give either `rate` (an open model) or `users` (a closed one), not both",
            ));
        }
        (None, None) => {
            return Err(check.error("traffic", span, "needs `rate` or `users`"));
        }
        (Some(rate), None) => {
            let v = *rate.get_ref();
            if !(v.is_finite() && v > 0.0 && v <= MAX_TRAFFIC_RATE) {
                return Err(check.error(
                    "traffic.rate",
                    rate.span(),
                    format!("{v} is not a rate above 0 and at most {MAX_TRAFFIC_RATE} requests per second"),
                ));
            }
            for (field, value) in [
                ("traffic.think_min", &raw.think_min),
                ("traffic.think_max", &raw.think_max),
            ] {
                if let Some(value) = value {
                    return Err(check.error(field, value.span(), "only used with `users`"));
                }
            }
            Workload::Open { rate: v, share }
        }
        (None, Some(users)) => {
            let users_v = count(check, "traffic.users", users, 1, MAX_TRAFFIC_USERS)?;
            let think =
                |field: &str, value: &Option<Spanned<String>>, default: Duration| match value {
                    Some(value) => {
                        let d = check.duration_at_most(field, value, Duration::from_secs(3600))?;
                        if d < MIN_THINK {
                            return Err(check.error(field, value.span(), "must be at least 10ms"));
                        }
                        Ok(d)
                    }
                    None => Ok(default),
                };
            let think_min = think("traffic.think_min", &raw.think_min, Duration::from_secs(1))?;
            let think_max = think("traffic.think_max", &raw.think_max, Duration::from_secs(10))?;
            if think_max < think_min {
                let span = raw.think_max.as_ref().map_or(users.span(), Spanned::span);
                return Err(check.error("traffic.think_max", span, "must be at least think_min"));
            }
            Workload::Closed {
                users: users_v,
                think_min,
                think_max,
                share,
            }
        }
    };
    let timeout = check.duration_at_most("traffic.timeout", &raw.timeout, MAX_CALL_TIMEOUT)?;
    if timeout < Duration::from_millis(1) {
        return Err(check.error(
            "traffic.timeout",
            raw.timeout.span(),
            "must be at least 1ms",
        ));
    }
    let latency = match &raw.latency {
        Some(latency) => {
            let v = check.duration_at_most("traffic.latency", latency, MAX_CALL_TIMEOUT)?;
            if v >= timeout {
                return Err(check.error(
                    "traffic.latency",
                    latency.span(),
                    "must be shorter than traffic.timeout",
                ));
            }
            v
        }
        None => Duration::ZERO,
    };
    let workers = match &raw.workers {
        Some(workers) if *workers.get_ref() == 0 => None,
        Some(workers) => Some(count(
            check,
            "traffic.workers",
            workers,
            0,
            MAX_TRAFFIC_WORKERS,
        )?),
        None => None,
    };
    let instances = match &raw.instances {
        Some(v) => count(check, "traffic.instances", v, 1, MAX_TRAFFIC_INSTANCES)?,
        None => 1,
    };
    Ok(Traffic {
        workload,
        latency,
        timeout,
        workers,
        instances,
    })
}

fn profile(
    check: &Checker<'_>,
    i: usize,
    raw: &RawProfile,
    traffic: &Traffic,
) -> Result<Profile, SpecError> {
    let field = |name: &str| format!("profiles[{i}].{name}");
    let name = check.name(&field("name"), &raw.name)?;
    let kind_name = *raw.kind.get_ref();
    let kind_span = raw.kind.span();
    fn needed<'v>(
        check: &Checker<'_>,
        field: &str,
        value: &'v Option<Spanned<String>>,
        kind_span: std::ops::Range<usize>,
        example: &str,
    ) -> Result<&'v Spanned<String>, SpecError> {
        let what = field.rsplit('.').next().unwrap_or(field);
        value.as_ref().ok_or_else(|| {
            check.error(
                field,
                kind_span,
                format!("this kind needs `{what}` (e.g. {example})"),
            )
        })
    }
    let needs = |value: &'_ Option<Spanned<String>>,
                 what: &str,
                 example: &str|
     -> Result<Spanned<String>, SpecError> {
        needed(check, &field(what), value, kind_span.clone(), example).cloned()
    };
    let unused = |value_span: Option<std::ops::Range<usize>>, what: &str| match value_span {
        Some(span) => Err(check.error(&field(what), span, "not used by this kind")),
        None => Ok(()),
    };
    let rate_span = raw.rate.as_ref().map(Spanned::span);
    let hang = raw
        .fault
        .as_ref()
        .is_some_and(|f| *f.get_ref() == FailingCall::Hang);
    if let (Some(fault), KindName::Hang | KindName::Outage | KindName::Baseline) =
        (&raw.fault, kind_name)
    {
        return Err(check.error(
            &field("fault"),
            fault.span(),
            "only blips and partial failures say how a call fails",
        ));
    }
    let length_span = raw.length.as_ref().map(Spanned::span);
    let every_span = raw.every.as_ref().map(Spanned::span);
    let kind = match kind_name {
        KindName::Blips => {
            unused(rate_span, "rate")?;
            let length_raw = needs(&raw.length, "length", "\"3s\"")?;
            let length =
                check.duration_at_most(&field("length"), &length_raw, MAX_PROFILE_WINDOW)?;
            let every_raw = needs(&raw.every, "every", "\"30s\"")?;
            let every = check.duration_at_most(&field("every"), &every_raw, MAX_PROFILE_WINDOW)?;
            if length < Duration::from_millis(1) {
                return Err(check.error(
                    &field("length"),
                    length_raw.span(),
                    "must be at least 1ms",
                ));
            }
            if every <= length {
                return Err(check.error(
                    &field("every"),
                    every_raw.span(),
                    "must be longer than length (blips need healthy time between them)",
                ));
            }
            ProfileKind::Blips {
                length,
                every,
                hang,
            }
        }
        KindName::Partial | KindName::Baseline => {
            unused(length_span, "length")?;
            unused(every_span, "every")?;
            let rate_raw = raw.rate.as_ref().ok_or_else(|| {
                check.error(
                    &field("rate"),
                    kind_span.clone(),
                    "this kind needs `rate` (e.g. 0.25)",
                )
            })?;
            let rate = check.fraction(&field("rate"), rate_raw)?;
            if kind_name == KindName::Partial {
                if rate == 0.0 {
                    return Err(check.error(&field("rate"), rate_raw.span(), "must be above 0"));
                }
                ProfileKind::Partial { rate, hang }
            } else {
                if rate >= 1.0 {
                    return Err(check.error(
                        &field("rate"),
                        rate_raw.span(),
                        "a baseline error rate must be below 1",
                    ));
                }
                ProfileKind::Baseline { rate }
            }
        }
        KindName::Hang | KindName::Outage => {
            unused(rate_span, "rate")?;
            unused(every_span, "every")?;
            let length_raw = needs(&raw.length, "length", "\"60s\"")?;
            let length =
                check.duration_at_most(&field("length"), &length_raw, MAX_PROFILE_WINDOW)?;
            if length < Duration::from_millis(1) {
                return Err(check.error(
                    &field("length"),
                    length_raw.span(),
                    "must be at least 1ms",
                ));
            }
            if kind_name == KindName::Hang {
                ProfileKind::Hang { length }
            } else {
                ProfileKind::Outage { length }
            }
        }
    };
    let weight = match &raw.weight {
        Some(weight) => {
            let v = check.number_in(&field("weight"), weight, (0.0, MAX_WEIGHT), "units")?;
            if v == 0.0 {
                return Err(check.error(&field("weight"), weight.span(), "must be above 0"));
            }
            v
        }
        None => 1.0,
    };
    let window = match &raw.window {
        Some(window) => {
            let v = check.duration_at_most(&field("window"), window, MAX_PROFILE_WINDOW)?;
            if v < MIN_PROFILE_WINDOW {
                return Err(check.error(&field("window"), window.span(), "must be at least 10s"));
            }
            v
        }
        None => kind.default_window().min(MAX_PROFILE_WINDOW),
    };
    let window_span = raw.window.as_ref().map_or(kind_span.clone(), Spanned::span);
    if let ProfileKind::Hang { length } | ProfileKind::Outage { length } = kind {
        if FAULT_LEAD + length > window {
            return Err(check.error(
                &field("window"),
                window_span.clone(),
                "must hold the fault's length and the 10s before it",
            ));
        }
    }
    if let ProfileKind::Blips { every, .. } = kind {
        if every > window {
            return Err(check.error(
                &field("window"),
                window_span.clone(),
                "must hold at least one blip",
            ));
        }
    }
    let requests = traffic.workload.mean_rate() * window.as_secs_f64();
    if requests > MAX_PROFILE_REQUESTS {
        return Err(check.error(
            &field("window"),
            window_span,
            format!(
                "the traffic makes {requests:.0} requests in this window, more than {MAX_PROFILE_REQUESTS:.0}"
            ),
        ));
    }
    Ok(Profile {
        name,
        kind,
        weight,
        window,
    })
}
