//! Workloads: the Online Boutique task mix (the stock Locust file's tasks and weights) and a fixed
//! single-URL loop for benchmarks.

use bytes::Bytes;
use http::Method;
use rand::Rng;
use rand::rngs::SmallRng;

/// Online Boutique product ids (the catalogue's nine products).
pub const PRODUCT_IDS: [&str; 9] = [
    "0PUK6V6EV0",
    "1YMWWN1N4O",
    "2ZYFJ3GM2N",
    "66VCHSJNUP",
    "6E92ZMYYFZ",
    "9SIQT8TOJO",
    "L9ECAV7KIM",
    "LS4PSXUNUM",
    "OLJCESPC7Z",
];

/// Currencies the stock load generator picks from.
pub const CURRENCIES: [&str; 6] = ["EUR", "USD", "JPY", "CAD", "GBP", "TRY"];

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
    pub path: String,
    pub form: Option<Bytes>,
}

impl Step {
    fn get(endpoint: usize, path: impl Into<String>) -> Self {
        Step {
            endpoint,
            method: Method::GET,
            path: path.into(),
            form: None,
        }
    }

    fn post(endpoint: usize, path: &str, form: String) -> Self {
        Step {
            endpoint,
            method: Method::POST,
            path: path.to_owned(),
            form: Some(Bytes::from(form)),
        }
    }
}

/// What the virtual users do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Workload {
    /// The Online Boutique mix against the frontend; `on_start` visits `/`.
    OnlineBoutique,
    /// `GET path` in a loop (benchmarks).
    Fixed { path: String },
}

impl Workload {
    pub fn endpoint_names(&self) -> Vec<String> {
        match self {
            Workload::OnlineBoutique => endpoint::NAMES.iter().map(|n| (*n).to_owned()).collect(),
            Workload::Fixed { path } => vec![format!("GET {path}")],
        }
    }

    /// Task names reported in the task counts.
    pub fn task_names(&self) -> Vec<&'static str> {
        match self {
            Workload::OnlineBoutique => Task::ALL.iter().map(|t| t.name()).collect(),
            Workload::Fixed { .. } => vec!["get"],
        }
    }

    /// The requests a user makes once when it starts.
    pub fn on_start(&self) -> Vec<Step> {
        match self {
            Workload::OnlineBoutique => vec![Step::get(endpoint::INDEX, "/")],
            Workload::Fixed { .. } => Vec::new(),
        }
    }

    /// Draws the next task: its index in `task_names` and its requests, in order.
    pub fn next_task(&self, rng: &mut SmallRng) -> (usize, Vec<Step>) {
        match self {
            Workload::Fixed { path } => (0, vec![Step::get(0, path.clone())]),
            Workload::OnlineBoutique => {
                let task = Task::pick(rng);
                let index = Task::ALL.iter().position(|t| *t == task).unwrap_or(0);
                (index, boutique_steps(task, rng))
            }
        }
    }
}

fn boutique_steps(task: Task, rng: &mut SmallRng) -> Vec<Step> {
    let product = |rng: &mut SmallRng| PRODUCT_IDS[rng.random_range(0..PRODUCT_IDS.len())];
    let add_to_cart = |rng: &mut SmallRng| {
        let id = product(rng);
        let quantity = rng.random_range(1..=10);
        [
            Step::get(endpoint::PRODUCT, format!("/product/{id}")),
            Step::post(
                endpoint::ADD_TO_CART,
                "/cart",
                format!("product_id={id}&quantity={quantity}"),
            ),
        ]
    };
    match task {
        Task::Index => vec![Step::get(endpoint::INDEX, "/")],
        Task::SetCurrency => {
            let currency = CURRENCIES[rng.random_range(0..CURRENCIES.len())];
            vec![Step::post(
                endpoint::SET_CURRENCY,
                "/setCurrency",
                format!("currency_code={currency}"),
            )]
        }
        Task::BrowseProduct => vec![Step::get(
            endpoint::PRODUCT,
            format!("/product/{}", product(rng)),
        )],
        Task::AddToCart => add_to_cart(rng).to_vec(),
        Task::ViewCart => vec![Step::get(endpoint::VIEW_CART, "/cart")],
        Task::Checkout => {
            let mut steps = add_to_cart(rng).to_vec();
            steps.push(Step::post(
                endpoint::CHECKOUT,
                "/cart/checkout",
                CHECKOUT_FORM.to_owned(),
            ));
            steps
        }
    }
}

/// Luhn check (the checkout form's card number must pass it).
pub fn luhn_valid(number: &str) -> bool {
    let digits: Vec<u32> = number.chars().filter_map(|c| c.to_digit(10)).collect();
    if digits.len() < 12 {
        return false;
    }
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| {
            if i % 2 == 1 {
                let doubled = d * 2;
                if doubled > 9 { doubled - 9 } else { doubled }
            } else {
                d
            }
        })
        .sum();
    sum % 10 == 0
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
        let steps = boutique_steps(Task::Checkout, &mut rng);
        let endpoints: Vec<usize> = steps.iter().map(|s| s.endpoint).collect();
        assert_eq!(
            endpoints,
            vec![endpoint::PRODUCT, endpoint::ADD_TO_CART, endpoint::CHECKOUT]
        );
        let add = String::from_utf8(steps[1].form.clone().unwrap().to_vec()).unwrap();
        let quantity: u32 = add.split("quantity=").nth(1).unwrap().parse().unwrap();
        assert!((1..=10).contains(&quantity));
        assert_eq!(
            steps[0].path,
            format!("/product/{}", add[11..21].to_owned())
        );
    }
}
