//! Whether one size of the sizing ladder is healthy (a pure judgement of its figures against the smallest
//! size's), and its row: the printed line and the line of `size.csv`.

/// Least availability of a healthy size.
pub const MIN_AVAILABILITY: f64 = 0.99;
/// Most p95 latency of any endpoint at a healthy size, milliseconds.
pub const MAX_P95_MS: f64 = 1000.0;
/// Least share of the smallest size's successful requests per user a healthy size keeps: closed-model users
/// keep their pace until the machine saturates, then latency eats the think time and each user asks less.
pub const MIN_PER_USER_SHARE: f64 = 0.9;

/// What one step of the ladder measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    pub users: u32,
    /// Successful requests a second of the measured window.
    pub throughput_ok: Option<f64>,
    pub availability: Option<f64>,
    /// The endpoint with the highest p95 and that p95, milliseconds.
    pub worst_p95: Option<(String, f64)>,
    /// Why the step has no figures (its run did not end as planned), if so.
    pub problem: Option<String>,
}

impl Figures {
    /// Successful requests a second per user.
    pub fn per_user(&self) -> Option<f64> {
        self.throughput_ok
            .map(|ok| ok / f64::from(self.users.max(1)))
    }
}

/// A size's verdict: healthy, or each rule it broke.
#[derive(Debug, Clone, PartialEq)]
pub enum Health {
    Healthy,
    Unhealthy(Vec<String>),
}

impl Health {
    pub fn healthy(&self) -> bool {
        matches!(self, Health::Healthy)
    }

    /// `healthy`, or the broken rules joined by `; `.
    pub fn text(&self) -> String {
        match self {
            Health::Healthy => "healthy".into(),
            Health::Unhealthy(rules) => rules.join("; "),
        }
    }
}

/// Judges `figures` against `first`, the smallest size's figures (`None`: `figures` are the smallest's, and
/// the per-user rule compares them with themselves). A figure that was not measured breaks its rule.
pub fn judge(figures: &Figures, first: Option<&Figures>) -> Health {
    let mut broken = Vec::new();
    if let Some(problem) = &figures.problem {
        broken.push(problem.clone());
    }
    match figures.availability {
        Some(availability) if availability >= MIN_AVAILABILITY => {}
        Some(availability) => broken.push(format!(
            "availability {availability:.4} < {MIN_AVAILABILITY}"
        )),
        None => broken.push("no availability measured".into()),
    }
    match &figures.worst_p95 {
        Some((_, p95)) if *p95 <= MAX_P95_MS => {}
        Some((endpoint, p95)) => broken.push(format!(
            "p95 {p95:.0} ms of {endpoint} > {MAX_P95_MS:.0} ms"
        )),
        None => broken.push("no p95 measured".into()),
    }
    let baseline = first.unwrap_or(figures);
    match (figures.per_user(), baseline.per_user()) {
        (Some(per_user), Some(base)) if per_user >= MIN_PER_USER_SHARE * base => {}
        (Some(per_user), Some(base)) => broken.push(format!(
            "{per_user:.3} ok/s per user < {MIN_PER_USER_SHARE} × {base:.3} of {} users",
            baseline.users
        )),
        (None, _) => broken.push("no throughput measured".into()),
        (Some(_), None) => broken.push(format!(
            "no throughput measured at {} users to compare with",
            baseline.users
        )),
    }
    if broken.is_empty() {
        Health::Healthy
    } else {
        Health::Unhealthy(broken)
    }
}

/// One size's row: its figures, the machine over its measured window, its verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub figures: Figures,
    /// The services process's CPU over the measured window, percent of one core.
    pub services_cpu_percent: Option<f64>,
    /// The 1-minute load average at the end of the measured window.
    pub load_average: Option<f64>,
    pub health: Health,
}

/// `size.csv`'s header; [`Row::csv`] writes its fields in this order.
pub const CSV_HEADER: &str = "users,throughput_ok_per_s,throughput_ok_per_user,availability,worst_p95_ms,\
worst_p95_endpoint,services_cpu_percent,load_average_1m,healthy,broken_rules";

fn or_dash(value: Option<f64>, decimals: usize) -> String {
    value.map_or("-".into(), |v| format!("{v:.decimals$}"))
}

fn or_empty(value: Option<f64>, decimals: usize) -> String {
    value.map_or(String::new(), |v| format!("{v:.decimals$}"))
}

/// A CSV field: quoted when it holds a comma, a quote or a line break.
fn field(text: &str) -> String {
    if text.contains([',', '"', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

impl Row {
    /// The printed line.
    pub fn line(&self) -> String {
        let figures = &self.figures;
        let worst = match &figures.worst_p95 {
            Some((endpoint, p95)) => format!("{p95:.0} ms ({endpoint})"),
            None => "-".into(),
        };
        format!(
            "{:>5} users: {} ok/s, {} per user, availability {}, worst p95 {worst}, services CPU {} %, load {}: {}",
            figures.users,
            or_dash(figures.throughput_ok, 1),
            or_dash(figures.per_user(), 3),
            or_dash(figures.availability, 4),
            or_dash(self.services_cpu_percent, 0),
            or_dash(self.load_average, 2),
            self.health.text(),
        )
    }

    /// The line of `size.csv` (no line break), in [`CSV_HEADER`]'s order; what was not measured is empty.
    pub fn csv(&self) -> String {
        let figures = &self.figures;
        let (worst_ms, worst_endpoint) = match &figures.worst_p95 {
            Some((endpoint, p95)) => (format!("{p95:.1}"), field(endpoint)),
            None => (String::new(), String::new()),
        };
        let broken = match &self.health {
            Health::Healthy => String::new(),
            Health::Unhealthy(rules) => field(&rules.join("; ")),
        };
        [
            figures.users.to_string(),
            or_empty(figures.throughput_ok, 3),
            or_empty(figures.per_user(), 4),
            or_empty(figures.availability, 5),
            worst_ms,
            worst_endpoint,
            or_empty(self.services_cpu_percent, 1),
            or_empty(self.load_average, 2),
            self.health.healthy().to_string(),
            broken,
        ]
        .join(",")
    }
}

/// The largest healthy size of a ladder's rows: the last healthy one before the first unhealthy one.
pub fn largest_healthy(rows: &[Row]) -> Option<u32> {
    (rows.iter())
        .take_while(|row| row.health.healthy())
        .last()
        .map(|row| row.figures.users)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(users: u32, ok_per_s: f64, availability: f64, p95: f64) -> Figures {
        Figures {
            users,
            throughput_ok: Some(ok_per_s),
            availability: Some(availability),
            worst_p95: Some(("GET /cart".into(), p95)),
            problem: None,
        }
    }

    fn broken(health: &Health) -> Vec<String> {
        match health {
            Health::Healthy => Vec::new(),
            Health::Unhealthy(rules) => rules.clone(),
        }
    }

    #[test]
    fn the_smallest_size_is_judged_against_itself() {
        let first = figures(20, 30.0, 0.999, 120.0);
        assert_eq!(judge(&first, None), Health::Healthy);
        let slow = figures(20, 30.0, 0.999, 1500.0);
        let rules = broken(&judge(&slow, None));
        assert_eq!(rules.len(), 1, "{rules:?}");
        assert!(rules[0].contains("p95 1500 ms of GET /cart"), "{rules:?}");
    }

    #[test]
    fn each_bound_is_inclusive_and_just_past_it_breaks() {
        let first = figures(20, 20.0, 1.0, 100.0);
        // 0.9 × 1.0 ok/s per user at 40 users is 36 ok/s.
        let edge = figures(40, 36.0, MIN_AVAILABILITY, MAX_P95_MS);
        assert_eq!(judge(&edge, Some(&first)), Health::Healthy);
        let past = figures(40, 35.9, 0.9899, 1000.4);
        let rules = broken(&judge(&past, Some(&first)));
        assert_eq!(rules.len(), 3, "{rules:?}");
        assert!(rules[0].starts_with("availability 0.9899"), "{rules:?}");
        assert!(rules[1].starts_with("p95 1000 ms"), "{rules:?}");
        assert!(
            rules[2].contains("per user < 0.9 × 1.000 of 20 users"),
            "{rules:?}"
        );
    }

    #[test]
    fn a_saturated_size_falls_in_throughput_per_user_alone() {
        let first = figures(20, 28.0, 1.0, 90.0);
        // Twice the users, 1.6 × the throughput: 0.8 of the first's per user, the rest fine.
        let saturated = figures(40, 44.8, 0.999, 400.0);
        let rules = broken(&judge(&saturated, Some(&first)));
        assert_eq!(rules.len(), 1, "{rules:?}");
        assert!(rules[0].starts_with("1.120 ok/s per user"), "{rules:?}");
        assert_eq!(
            judge(&figures(40, 56.0, 0.999, 400.0), Some(&first)),
            Health::Healthy
        );
    }

    #[test]
    fn what_was_not_measured_breaks_its_rule() {
        let first = figures(20, 28.0, 1.0, 90.0);
        let failed = Figures {
            users: 40,
            throughput_ok: None,
            availability: None,
            worst_p95: None,
            problem: Some("the run did not end as planned".into()),
        };
        let rules = broken(&judge(&failed, Some(&first)));
        assert_eq!(rules.len(), 4, "{rules:?}");
        assert_eq!(rules[0], "the run did not end as planned");
        let unmeasured_first = Figures {
            throughput_ok: None,
            ..first.clone()
        };
        let rules = broken(&judge(&first, Some(&unmeasured_first)));
        assert_eq!(rules.len(), 1, "{rules:?}");
    }

    #[test]
    fn the_largest_healthy_size_is_before_the_first_unhealthy_one() {
        let row = |users, healthy: bool| Row {
            figures: figures(users, 1.0, 1.0, 1.0),
            services_cpu_percent: None,
            load_average: None,
            health: if healthy {
                Health::Healthy
            } else {
                Health::Unhealthy(vec!["x".into()])
            },
        };
        assert_eq!(
            largest_healthy(&[row(20, true), row(40, true), row(80, false)]),
            Some(40)
        );
        assert_eq!(largest_healthy(&[row(20, false), row(40, true)]), None);
        assert_eq!(largest_healthy(&[]), None);
    }

    #[test]
    fn a_row_prints_and_writes_every_figure() {
        let row = Row {
            figures: figures(40, 50.0, 0.995, 210.4),
            services_cpu_percent: Some(87.24),
            load_average: None,
            health: Health::Unhealthy(vec!["a, b".into(), "c".into()]),
        };
        let line = row.csv();
        assert_eq!(
            line,
            "40,50.000,1.2500,0.99500,210.4,GET /cart,87.2,,false,\"a, b; c\""
        );
        assert_eq!(CSV_HEADER.split(',').count(), 10);
        let printed = row.line();
        assert!(
            printed.contains("1.250 per user") && printed.contains("210 ms (GET /cart)"),
            "{printed}"
        );
        assert!(
            printed.contains("load -") && printed.ends_with("a, b; c"),
            "{printed}"
        );
    }
}
