//! Workloads: the Online Boutique task mix (the stock Locust file's tasks and weights) and a fixed
//! single-URL loop for benchmarks.

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue};
use http::{Method, Uri};
use rand::Rng;
use rand::rngs::SmallRng;

use super::custom::CustomWorkload;
use super::session::Body;

/// Online Boutique product ids (the catalogue's nine products): the testbed's own list.
pub use boutique::data::PRODUCT_IDS;

/// Currencies the stock load generator picks from: the testbed's own list.
pub use boutique::data::LOAD_GENERATOR_CURRENCIES as CURRENCIES;

/// The checkout form the stock load generator posts: a Luhn-valid VISA number and a future expiry.
pub const CHECKOUT_FORM: &str = "email=someone%40example.com\
&street_address=1600+Amphitheatre+Parkway&zip_code=94043&city=Mountain+View&state=CA\
&country=United+States&credit_card_number=4432801561520454\
&credit_card_expiration_month=1&credit_card_expiration_year=2039&credit_card_cvv=672";

/// A user task of the Online Boutique mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Task {
    Index,
    SetCurrency,
    BrowseProduct,
    AddToCart,
    ViewCart,
    Checkout,
}

impl Task {
    pub const ALL: [Task; 6] = [
        Task::Index,
        Task::SetCurrency,
        Task::BrowseProduct,
        Task::AddToCart,
        Task::ViewCart,
        Task::Checkout,
    ];

    /// Weights of the stock Locust file.
    pub fn weight(self) -> u32 {
        match self {
            Task::Index => 1,
            Task::SetCurrency => 2,
            Task::BrowseProduct => 10,
            Task::AddToCart => 2,
            Task::ViewCart => 3,
            Task::Checkout => 1,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Task::Index => "index",
            Task::SetCurrency => "setCurrency",
            Task::BrowseProduct => "browseProduct",
            Task::AddToCart => "addToCart",
            Task::ViewCart => "viewCart",
            Task::Checkout => "checkout",
        }
    }

    /// Picks a task with probability proportional to its weight.
    pub fn pick(rng: &mut SmallRng) -> Task {
        let total: u32 = Task::ALL.iter().map(|t| t.weight()).sum();
        let mut draw = rng.random_range(0..total);
        for task in Task::ALL {
            if draw < task.weight() {
                return task;
            }
            draw -= task.weight();
        }
        Task::BrowseProduct
    }
}

/// Endpoints of the Online Boutique workload (index = the endpoint id used in the stats).
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

/// One HTTP request a task makes.
#[derive(Debug, Clone)]
pub struct Step {
    pub endpoint: usize,
    pub method: Method,
    /// Origin-form request target (path and query).
    pub uri: Uri,
    pub body: Option<Body>,
    /// Headers besides the session's own (a custom workload's `headers`).
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// Statuses that count as success (a custom workload's `expect`); `None` = any status below 400.
    pub expect: Option<std::sync::Arc<[u16]>>,
}

impl Step {
    fn get(endpoint: usize, uri: Uri) -> Self {
        Step {
            endpoint,
            method: Method::GET,
            uri,
            body: None,
            headers: Vec::new(),
            expect: None,
        }
    }

    fn post(endpoint: usize, uri: &'static str, form: String) -> Self {
        Step {
            endpoint,
            method: Method::POST,
            uri: Uri::from_static(uri),
            body: Some(Body::Form(Bytes::from(form))),
            headers: Vec::new(),
            expect: None,
        }
    }
}

/// `/product/{id}` for a catalogue id (ids are ASCII alphanumerics, always a valid path).
fn product_uri(id: &str) -> Uri {
    Uri::try_from(format!("/product/{id}")).unwrap_or_else(|_| Uri::from_static("/"))
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
        if let Workload::Custom(custom) = &self.workload {
            return custom.next_task(rng, steps);
        }
        let task = Task::pick(rng);
        boutique_steps(task, rng, steps);
        Task::ALL.iter().position(|t| *t == task).unwrap_or(0)
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
    /// The Online Boutique mix against the frontend; `on_start` visits `/`.
    OnlineBoutique,
    /// `GET path` in a loop (benchmarks).
    Fixed { path: String },
    /// Tasks described in the spec (`[[load.tasks]]`).
    Custom(std::sync::Arc<CustomWorkload>),
}

impl Workload {
    pub fn endpoint_names(&self) -> Vec<String> {
        match self {
            Workload::OnlineBoutique => endpoint::NAMES.iter().map(|n| (*n).to_owned()).collect(),
            Workload::Fixed { path } => vec![format!("GET {path}")],
            Workload::Custom(custom) => custom.endpoint_names.clone(),
        }
    }

    /// Task names reported in the task counts.
    pub fn task_names(&self) -> Vec<String> {
        match self {
            Workload::OnlineBoutique => Task::ALL.iter().map(|t| t.name().to_owned()).collect(),
            Workload::Fixed { .. } => vec!["get".to_owned()],
            Workload::Custom(custom) => custom.tasks.iter().map(|t| t.name.clone()).collect(),
        }
    }

    /// The requests a user makes once when it starts.
    pub fn on_start(&self) -> Vec<Step> {
        match self {
            Workload::OnlineBoutique => vec![Step::get(endpoint::INDEX, Uri::from_static("/"))],
            Workload::Fixed { .. } | Workload::Custom(_) => Vec::new(),
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

fn boutique_steps(task: Task, rng: &mut SmallRng, steps: &mut Vec<Step>) {
    let product = |rng: &mut SmallRng| PRODUCT_IDS[rng.random_range(0..PRODUCT_IDS.len())];
    let add_to_cart = |rng: &mut SmallRng, steps: &mut Vec<Step>| {
        let id = product(rng);
        let quantity = rng.random_range(1..=10);
        steps.push(Step::get(endpoint::PRODUCT, product_uri(id)));
        steps.push(Step::post(
            endpoint::ADD_TO_CART,
            "/cart",
            format!("product_id={id}&quantity={quantity}"),
        ));
    };
    match task {
        Task::Index => steps.push(Step::get(endpoint::INDEX, Uri::from_static("/"))),
        Task::SetCurrency => {
            let currency = CURRENCIES[rng.random_range(0..CURRENCIES.len())];
            steps.push(Step::post(
                endpoint::SET_CURRENCY,
                "/setCurrency",
                format!("currency_code={currency}"),
            ));
        }
        Task::BrowseProduct => steps.push(Step::get(endpoint::PRODUCT, product_uri(product(rng)))),
        Task::AddToCart => add_to_cart(rng, steps),
        Task::ViewCart => steps.push(Step::get(endpoint::VIEW_CART, Uri::from_static("/cart"))),
        Task::Checkout => {
            add_to_cart(rng, steps);
            steps.push(Step::post(
                endpoint::CHECKOUT,
                "/cart/checkout",
                CHECKOUT_FORM.to_owned(),
            ));
        }
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

    #[test]
    fn checkout_card_is_a_valid_visa() {
        assert!(luhn_valid("4432801561520454"));
        assert!(!luhn_valid("4432801561520455"));
        assert!(CHECKOUT_FORM.contains("credit_card_number=4432801561520454"));
    }

    #[test]
    fn task_draws_follow_the_weights() {
        let mut rng = SmallRng::seed_from_u64(3);
        let draws = 190_000;
        let mut counts = [0u32; 6];
        for _ in 0..draws {
            let task = Task::pick(&mut rng);
            counts[Task::ALL.iter().position(|t| *t == task).unwrap()] += 1;
        }
        for (task, count) in Task::ALL.iter().zip(counts) {
            let expected = f64::from(task.weight()) / 19.0 * f64::from(draws);
            let error = (f64::from(count) - expected).abs() / expected;
            assert!(error < 0.05, "{task:?}: {count} vs {expected}");
        }
    }

    #[test]
    fn checkout_adds_to_cart_first() {
        let mut rng = SmallRng::seed_from_u64(1);
        let mut steps = Vec::new();
        boutique_steps(Task::Checkout, &mut rng, &mut steps);
        let endpoints: Vec<usize> = steps.iter().map(|s| s.endpoint).collect();
        assert_eq!(
            endpoints,
            vec![endpoint::PRODUCT, endpoint::ADD_TO_CART, endpoint::CHECKOUT]
        );
        let add = String::from_utf8(steps[1].body.as_ref().unwrap().bytes().to_vec()).unwrap();
        let quantity: u32 = add.split("quantity=").nth(1).unwrap().parse().unwrap();
        assert!((1..=10).contains(&quantity));
        assert_eq!(steps[0].uri, format!("/product/{}", &add[11..21]).as_str());
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
