//! Reading the advisor's input: TOML to the raw tables, then every table checked and bounded into
//! [`TuneInput`], errors naming the dotted field and its line.

use std::time::Duration;

use breaker::sim::{MIN_THINK, Workload};
use toml::Spanned;

use super::profiles::profile;
use super::raw::{RawInput, RawTraffic};
use super::{
    Constraints, Costs, MAX_CALL_TIMEOUT, MAX_CANDIDATES, MAX_DETECT_WITHIN,
    MAX_FALSE_TRIPS_PER_HOUR, MAX_PROFILES, MAX_TRAFFIC_INSTANCES, MAX_TRAFFIC_RATE,
    MAX_TRAFFIC_USERS, MAX_TRAFFIC_WORKERS, MAX_VERIFY_CANDIDATES, MAX_VERIFY_ROUNDS, MAX_WEIGHT,
    Profile, SearchSettings, Traffic, TuneInput, VerifySettings,
};
use crate::spec::SpecError;
use crate::spec::checker::Checker;

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
