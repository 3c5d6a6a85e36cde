//! `fault.schedule`: when the fault is on inside a run — once (`{ start, length }`) or in on/off periods
//! (`{ start, on, off }`) — as the simulator's own [`Schedule`], so the runner and the predictions read the same
//! value. Times are from the run's start (warmup included), as written; `time_scale` divides them like every other
//! duration. Validation bounds every number after scaling and names the field.

use std::time::Duration;

use breaker::sim::Schedule;
use serde::Deserialize;
use toml::Spanned;

use super::checker::Checker;
use super::error::SpecError;
use super::experiment::ExperimentSpec;
use super::model::scale_duration;

/// Shortest on or off period after scaling: putting and removing a fault takes a round trip to the agent.
pub const MIN_PERIOD: Duration = Duration::from_millis(200);
/// Most on-periods one run may have.
pub const MAX_PERIODS: usize = 1_000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSchedule {
    start: Option<Spanned<String>>,
    length: Option<Spanned<String>>,
    on: Option<Spanned<String>>,
    off: Option<Spanned<String>>,
}

/// `raw` checked against a run of `run_length` (warmup + duration, as written) at `time_scale`.
pub(super) fn schedule(
    check: &Checker<'_>,
    raw: &Spanned<RawSchedule>,
    run_length: Duration,
    time_scale: f64,
) -> Result<Schedule, SpecError> {
    let table = raw.get_ref();
    let scaled = |d: Duration| scale_duration(d, time_scale);
    let run_scaled = scaled(run_length);
    let duration = |field: &str, value: &Option<Spanned<String>>| -> Result<Option<_>, SpecError> {
        value
            .as_ref()
            .map(|v| check.duration(field, v).map(|d| (d, v.span())))
            .transpose()
    };
    let start = duration("fault.schedule.start", &table.start)?;
    let length = duration("fault.schedule.length", &table.length)?;
    let on = duration("fault.schedule.on", &table.on)?;
    let off = duration("fault.schedule.off", &table.off)?;
    let (start, start_span) = start.unwrap_or((Duration::ZERO, raw.span()));
    if scaled(start) >= run_scaled {
        return Err(check.error(
            "fault.schedule.start",
            start_span,
            format!(
                "{} after scaling is not inside the run ({} of warmup + duration after scaling)",
                humantime::format_duration(scaled(start)),
                humantime::format_duration(run_scaled)
            ),
        ));
    }
    let at_least = |field: &str, (value, span): (Duration, std::ops::Range<usize>)| {
        if scaled(value) < MIN_PERIOD {
            Err(check.error(
                field,
                span,
                format!(
                    "{} after scaling is shorter than {}",
                    humantime::format_duration(scaled(value)),
                    humantime::format_duration(MIN_PERIOD)
                ),
            ))
        } else {
            Ok(value)
        }
    };
    match (length, on, off) {
        (Some(length), None, None) => {
            let span = length.1.clone();
            let length = at_least("fault.schedule.length", length)?;
            if scaled(start) + scaled(length) > run_scaled {
                return Err(check.error(
                    "fault.schedule.length",
                    span,
                    format!(
                        "start + length after scaling is {}, past the run's end ({} of warmup + duration after scaling)",
                        humantime::format_duration(scaled(start) + scaled(length)),
                        humantime::format_duration(run_scaled)
                    ),
                ));
            }
            Ok(Schedule::Once { start, length })
        }
        (None, Some(on), Some(off)) => {
            let on_span = on.1.clone();
            let on = at_least("fault.schedule.on", on)?;
            let off = at_least("fault.schedule.off", off)?;
            // Counted, not listed: nothing is allocated before the bound holds.
            let remaining = (run_scaled - scaled(start)).as_nanos();
            let periods = remaining.div_ceil((scaled(on) + scaled(off)).as_nanos());
            if periods > MAX_PERIODS as u128 {
                return Err(check.error(
                    "fault.schedule.on",
                    on_span,
                    format!(
                        "{periods} on-periods fit in one run, more than the maximum {MAX_PERIODS} (lengthen on or off)"
                    ),
                ));
            }
            Ok(Schedule::Periodic { start, on, off })
        }
        (None, None, None) => Err(check.error(
            "fault.schedule",
            raw.span(),
            "needs `length` (once) or `on` and `off` (repeated)",
        )),
        (Some(_), _, _) => Err(check.error(
            "fault.schedule.length",
            raw.span(),
            "give either `length` (once) or `on` and `off` (repeated), not both",
        )),
        (None, Some(_), None) => Err(check.error(
            "fault.schedule.off",
            raw.span(),
            "`on` needs `off` (the healthy time between on-periods)",
        )),
        (None, None, Some(_)) => Err(check.error(
            "fault.schedule.on",
            raw.span(),
            "`off` needs `on` (the length of each on-period)",
        )),
    }
}

/// `schedule` with every duration divided by `time_scale`.
pub fn scaled_schedule(schedule: &Schedule, time_scale: f64) -> Schedule {
    let scaled = |d: Duration| scale_duration(d, time_scale);
    match *schedule {
        Schedule::Once { start, length } => Schedule::Once {
            start: scaled(start),
            length: scaled(length),
        },
        Schedule::Periodic { start, on, off } => Schedule::Periodic {
            start: scaled(start),
            on: scaled(on),
            off: scaled(off),
        },
    }
}

impl ExperimentSpec {
    /// When the fault is on in every run, scaled, from the run's start (warmup included): the written schedule,
    /// or once for the whole run. The runner applies its outages and the predictions simulate it.
    pub fn fault_schedule(&self) -> breaker::sim::Schedule {
        match &self.fault.schedule {
            Some(schedule) => scaled_schedule(schedule, self.time_scale),
            None => breaker::sim::Schedule::Once {
                start: Duration::ZERO,
                length: self.run_warmup() + self.run_duration(),
            },
        }
    }

    /// The on-periods of the fault in one run, `[start, end)` from the run's start (scaled), in order.
    pub fn fault_periods(&self) -> Vec<(Duration, Duration)> {
        self.periods_of(self.fault_schedule())
    }

    pub(super) fn periods_of(&self, schedule: breaker::sim::Schedule) -> Vec<(Duration, Duration)> {
        let run = self.run_warmup() + self.run_duration();
        let run_ns = u64::try_from(run.as_nanos()).unwrap_or(u64::MAX);
        schedule
            .outages(run_ns)
            .into_iter()
            .map(|(start, end)| (Duration::from_nanos(start), Duration::from_nanos(end)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use breaker::sim::Schedule;

    use crate::spec::ExperimentSpec;

    fn spec_with(time_scale: f64, schedule: &str) -> String {
        format!(
            r#"
name = "t"
duration = "100s"
warmup = "20s"
time_scale = {time_scale}

[load]
users = 2

[fault]
target = "payment"
kind = "error"
rates = [1.0]
schedule = {schedule}
"#
        )
    }

    fn error_field(source: &str) -> (String, String) {
        let error = ExperimentSpec::parse(source).expect_err("rejected");
        (
            error.field().unwrap_or("<none>").to_owned(),
            error.to_string(),
        )
    }

    #[test]
    fn a_single_outage_is_scaled_with_the_run() {
        let spec =
            crate::test_support::spec(&spec_with(10.0, r#"{ start = "60s", length = "30s" }"#));
        assert_eq!(
            spec.fault.schedule,
            Some(Schedule::Once {
                start: Duration::from_secs(60),
                length: Duration::from_secs(30)
            })
        );
        assert_eq!(
            spec.fault_periods(),
            vec![(Duration::from_secs(6), Duration::from_secs(9))]
        );
    }

    #[test]
    fn on_off_periods_repeat_to_the_run_end() {
        let spec = crate::test_support::spec(&spec_with(
            1.0,
            r#"{ start = "10s", on = "20s", off = "30s" }"#,
        ));
        let secs = |a, b| (Duration::from_secs(a), Duration::from_secs(b));
        assert_eq!(
            spec.fault_periods(),
            vec![secs(10, 30), secs(60, 80), secs(110, 120)]
        );
    }

    #[test]
    fn without_a_schedule_the_fault_is_on_for_the_whole_run() {
        let source = spec_with(2.0, "1").replace("schedule = 1\n", "");
        let spec = crate::test_support::spec(&source);
        assert_eq!(spec.fault.schedule, None);
        assert_eq!(
            spec.fault_periods(),
            vec![(Duration::ZERO, Duration::from_secs(60))]
        );
    }

    #[test]
    fn bad_schedules_name_the_field() {
        let cases = [
            (
                r#"{ start = "120s", length = "1s" }"#,
                "fault.schedule.start",
                "not inside the run",
            ),
            (
                r#"{ start = "100s", length = "30s" }"#,
                "fault.schedule.length",
                "past the run's end",
            ),
            (
                r#"{ start = "1s", length = "100ms" }"#,
                "fault.schedule.length",
                "shorter than 200ms",
            ),
            (r#"{ on = "1s" }"#, "fault.schedule.off", "`on` needs `off`"),
            (r#"{ off = "1s" }"#, "fault.schedule.on", "`off` needs `on`"),
            (
                r#"{ length = "1s", on = "1s", off = "1s" }"#,
                "fault.schedule.length",
                "not both",
            ),
            (r#"{ start = "1s" }"#, "fault.schedule", "needs `length`"),
            (
                r#"{ on = "1s", off = "0s" }"#,
                "fault.schedule.off",
                "shorter than",
            ),
            (
                r#"{ start = "soon", length = "1s" }"#,
                "fault.schedule.start",
                "not a duration",
            ),
        ];
        for (schedule, field, message) in cases {
            let (got_field, got_message) = error_field(&spec_with(1.0, schedule));
            assert_eq!(got_field, field, "{schedule}: {got_message}");
            assert!(got_message.contains(message), "{schedule}: {got_message}");
        }
        let long_run = spec_with(1.0, r#"{ on = "1s", off = "1s" }"#).replace("\"100s\"", "\"1h\"");
        let (field, message) = error_field(&long_run);
        assert_eq!(field, "fault.schedule.on", "{message}");
        assert!(message.contains("1810 on-periods"), "{message}");
        // On and off are bounded after scaling: 2 s at time scale 20 is 100 ms.
        let (field, message) = error_field(&spec_with(
            20.0,
            r#"{ start = "10s", on = "2s", off = "10s" }"#,
        ));
        assert_eq!(field, "fault.schedule.on", "{message}");
        let (field, message) = error_field(&spec_with(1.0, r#"{ start = "1s", lenght = "2s" }"#));
        assert!(field.starts_with("fault.schedule"), "{field}: {message}");
        assert!(message.contains("lenght"), "{message}");
    }

    #[test]
    fn container_kinds_cannot_be_scheduled() {
        let source = spec_with(1.0, r#"{ start = "1s", length = "2s" }"#)
            .replace("kind = \"error\"", "kind = \"pause\"");
        let (field, message) = error_field(&source);
        assert_eq!(field, "fault.schedule", "{message}");
        assert!(message.contains("containers"), "{message}");
    }
}
