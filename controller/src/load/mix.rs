//! Workloads: the Online Boutique mix (the stock Locust file's tasks and weights, defined once in
//! `online-boutique.toml` in the `[[load.tasks]]` vocabulary), a workload of the spec's own, and a fixed
//! single-URL loop for benchmarks.

use std::sync::{Arc, LazyLock};

use http::Uri;
use rand::rngs::SmallRng;

use super::custom::CustomWorkload;
use super::step::Step;

/// Online Boutique product ids (the catalogue's nine products): the testbed's own list.
pub use boutique::data::PRODUCT_IDS;

/// Currencies the stock load generator picks from: the testbed's own list.
pub use boutique::data::LOAD_GENERATOR_CURRENCIES as CURRENCIES;

/// The Online Boutique mix as written: tasks, weights, value lists, `on_start` and the checkout form.
pub const ONLINE_BOUTIQUE_TOML: &str = include_str!("online-boutique.toml");

static ONLINE_BOUTIQUE: LazyLock<Arc<CustomWorkload>> = LazyLock::new(|| {
    Arc::new(
        crate::spec::parse_workload(ONLINE_BOUTIQUE_TOML)
            .expect("the embedded Online Boutique mix is valid (checked by a unit test)"),
    )
});

/// The Online Boutique mix, parsed once by the spec's own workload parser.
pub fn online_boutique() -> &'static Arc<CustomWorkload> {
    &ONLINE_BOUTIQUE
}

/// Endpoints of the Online Boutique workload (index = the endpoint id used in the stats), as the definition
/// names them: stored results and the critical-failure metric refer to them by these names.
pub mod endpoint {
    pub const INDEX: usize = 0;
    pub const SET_CURRENCY: usize = 1;
    pub const PRODUCT: usize = 2;
    pub const ADD_TO_CART: usize = 3;
    pub const VIEW_CART: usize = 4;
    pub const CHECKOUT: usize = 5;
    pub const NAMES: [&str; 6] = [
        "GET /",
        "POST /setCurrency",
        "GET /product/{id}",
        "POST /cart",
        "GET /cart",
        "POST /cart/checkout",
    ];
}

/// A workload ready to draw tasks from: request targets parsed once.
#[derive(Debug, Clone)]
pub struct PreparedWorkload {
    workload: Workload,
    fixed: Option<Step>,
}

impl PreparedWorkload {
    /// Draws the next task into `steps` (cleared first) and returns its index in `task_names`.
    pub fn next_task(&self, rng: &mut SmallRng, steps: &mut Vec<Step>) -> usize {
        steps.clear();
        if let Some(fixed) = &self.fixed {
            steps.push(fixed.clone());
            return 0;
        }
        match &self.workload {
            Workload::OnlineBoutique => online_boutique().next_task(rng, steps),
            Workload::Custom(custom) => custom.next_task(rng, steps),
            Workload::Fixed { .. } => 0,
        }
    }

    pub fn workload(&self) -> &Workload {
        &self.workload
    }
}

/// A fixed path that is not a valid request target.
#[derive(Debug, thiserror::Error)]
#[error("`{path}` is not a valid request path: {reason}")]
pub struct InvalidPath {
    pub path: String,
    pub reason: String,
}

/// What the virtual users do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Workload {
    /// The Online Boutique mix ([`online_boutique`]) against the frontend.
    OnlineBoutique,
    /// `GET path` in a loop (benchmarks).
    Fixed { path: String },
    /// Tasks described in the spec (`[[load.tasks]]`).
    Custom(Arc<CustomWorkload>),
}

impl Workload {
    pub fn endpoint_names(&self) -> Vec<String> {
        match self {
            Workload::OnlineBoutique => online_boutique().endpoint_names.clone(),
            Workload::Fixed { path } => vec![format!("GET {path}")],
            Workload::Custom(custom) => custom.endpoint_names.clone(),
        }
    }

    /// Task names reported in the task counts.
    pub fn task_names(&self) -> Vec<String> {
        match self {
            Workload::OnlineBoutique => online_boutique()
                .tasks
                .iter()
                .map(|t| t.name.clone())
                .collect(),
            Workload::Fixed { .. } => vec!["get".to_owned()],
            Workload::Custom(custom) => custom.tasks.iter().map(|t| t.name.clone()).collect(),
        }
    }

    /// The definition behind the Online Boutique mix or a custom workload (`None` for a fixed path).
    pub fn definition(&self) -> Option<&Arc<CustomWorkload>> {
        match self {
            Workload::OnlineBoutique => Some(online_boutique()),
            Workload::Custom(custom) => Some(custom),
            Workload::Fixed { .. } => None,
        }
    }

    /// The requests a user makes once when it starts, into `steps` (cleared first).
    pub fn on_start(&self, rng: &mut SmallRng, steps: &mut Vec<Step>) {
        steps.clear();
        if let Some(definition) = self.definition() {
            definition.on_start(rng, steps);
        }
    }

    /// Parses what can be parsed once; a fixed path must be a valid origin-form target.
    pub fn prepare(&self) -> Result<PreparedWorkload, InvalidPath> {
        let fixed = match self {
            Workload::OnlineBoutique | Workload::Custom(_) => None,
            Workload::Fixed { path } => {
                let uri = Uri::try_from(path.as_str()).map_err(|e| InvalidPath {
                    path: path.clone(),
                    reason: e.to_string(),
                })?;
                if uri.scheme().is_some() || !path.starts_with('/') {
                    return Err(InvalidPath {
                        path: path.clone(),
                        reason: "must be a path starting with /".into(),
                    });
                }
                Some(Step::get(0, uri))
            }
        };
        Ok(PreparedWorkload {
            workload: self.clone(),
            fixed,
        })
    }
}

/// Luhn check (the checkout form's card number must pass it).
pub fn luhn_valid(number: &str) -> bool {
    let digits: Vec<u8> = number
        .chars()
        .filter_map(|c| c.to_digit(10))
        .map(|d| d as u8)
        .collect();
    digits.len() >= 12 && boutique::services::payment::luhn_valid(&digits)
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;
    use crate::load::Values;

    fn form_of(step: &Step) -> String {
        String::from_utf8(step.body.as_ref().unwrap().bytes().to_vec()).unwrap()
    }

    #[test]
    fn the_definition_keeps_the_stored_names_and_the_testbeds_lists() {
        let mix = online_boutique();
        assert_eq!(
            mix.endpoint_names,
            endpoint::NAMES.map(str::to_owned).to_vec()
        );
        let names: Vec<&str> = mix.tasks.iter().map(|t| t.name.as_str()).collect();
        let weights: Vec<u32> = mix.tasks.iter().map(|t| t.weight).collect();
        assert_eq!(
            names,
            [
                "index",
                "setCurrency",
                "browseProduct",
                "addToCart",
                "viewCart",
                "checkout"
            ]
        );
        assert_eq!(weights, [1, 2, 10, 2, 3, 1]);
        assert_eq!(
            mix.critical_endpoint(),
            Some(endpoint::NAMES[endpoint::CHECKOUT])
        );
        assert!(mix.cookies);
        let list = |name: &str| {
            let (_, values) = mix.values.iter().find(|(n, _)| n == name).unwrap();
            values.clone()
        };
        let owned = |list: &[&str]| list.iter().map(|v| (*v).to_owned()).collect();
        assert_eq!(list("id"), Values::List(owned(&PRODUCT_IDS)));
        assert_eq!(list("currency"), Values::List(owned(&CURRENCIES)));
        assert_eq!(list("quantity"), Values::Range { from: 1, to: 10 });
        let mut rng = SmallRng::seed_from_u64(1);
        let mut steps = Vec::new();
        Workload::OnlineBoutique.on_start(&mut rng, &mut steps);
        assert_eq!(steps.len(), 1);
        assert_eq!(
            (steps[0].endpoint, steps[0].uri.path()),
            (endpoint::INDEX, "/")
        );
    }

    #[test]
    fn task_draws_follow_the_weights() {
        let prepared = Workload::OnlineBoutique.prepare().unwrap();
        let mut rng = SmallRng::seed_from_u64(3);
        let mut steps = Vec::new();
        let draws = 190_000;
        let mut counts = [0u32; 6];
        for _ in 0..draws {
            counts[prepared.next_task(&mut rng, &mut steps)] += 1;
        }
        for (weight, count) in [1u32, 2, 10, 2, 3, 1].into_iter().zip(counts) {
            let expected = f64::from(weight) / 19.0 * f64::from(draws);
            let error = (f64::from(count) - expected).abs() / expected;
            assert!(error < 0.05, "weight {weight}: {count} vs {expected}");
        }
    }

    #[test]
    fn checkout_adds_to_cart_first_and_posts_a_valid_card() {
        let prepared = Workload::OnlineBoutique.prepare().unwrap();
        let mut rng = SmallRng::seed_from_u64(1);
        let mut steps = Vec::new();
        while prepared.next_task(&mut rng, &mut steps) != 5 {}
        let endpoints: Vec<usize> = steps.iter().map(|s| s.endpoint).collect();
        assert_eq!(
            endpoints,
            vec![endpoint::PRODUCT, endpoint::ADD_TO_CART, endpoint::CHECKOUT]
        );
        let add = form_of(&steps[1]);
        let id = add
            .split("product_id=")
            .nth(1)
            .unwrap()
            .split('&')
            .next()
            .unwrap();
        let quantity: u32 = add.split("quantity=").nth(1).unwrap().parse().unwrap();
        assert!((1..=10).contains(&quantity), "{add}");
        assert_eq!(steps[0].uri, format!("/product/{id}").as_str());
        let checkout = form_of(&steps[2]);
        assert!(
            checkout.contains("credit_card_number=4432801561520454"),
            "{checkout}"
        );
        assert!(
            checkout.contains("email=someone%40example.com"),
            "{checkout}"
        );
        assert!(luhn_valid("4432801561520454"));
        assert!(!luhn_valid("4432801561520455"));
    }

    #[test]
    fn fixed_paths_are_checked_once() {
        let prepared = Workload::Fixed {
            path: "/x?y=1".into(),
        }
        .prepare()
        .unwrap();
        let mut rng = SmallRng::seed_from_u64(1);
        let mut steps = Vec::new();
        assert_eq!(prepared.next_task(&mut rng, &mut steps), 0);
        assert_eq!(steps.len(), 1);
        assert_eq!(steps[0].uri, "/x?y=1");
        assert!(Workload::Fixed { path: "x".into() }.prepare().is_err());
        assert!(
            Workload::Fixed {
                path: "http://h/x".into()
            }
            .prepare()
            .is_err()
        );
    }
}
