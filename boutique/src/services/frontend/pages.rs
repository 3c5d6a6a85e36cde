//! The frontend's HTML pages (askama templates in `boutique/templates/`).

use askama::Template;

use crate::wire::{Ad, Product};

/// One entry of the currency selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CurrencyOption {
    pub code: String,
    pub selected: bool,
}

/// What every page shows in its header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub currencies: Vec<CurrencyOption>,
    /// Items in the cart; `None` where the page does not know (the error page does not ask the cart
    /// service, as in Online Boutique: the header then shows no count rather than a wrong one).
    pub cart_size: Option<u32>,
}

impl Header {
    /// A header offering `codes`, with `current` selected (kept even if `codes` lacks it).
    pub fn new(codes: &[String], current: &str, cart_size: Option<u32>) -> Self {
        let mut currencies: Vec<CurrencyOption> = codes
            .iter()
            .map(|code| CurrencyOption {
                code: code.clone(),
                selected: code == current,
            })
            .collect();
        if !currencies.iter().any(|option| option.selected) {
            currencies.push(CurrencyOption {
                code: current.to_owned(),
                selected: true,
            });
        }
        Header {
            currencies,
            cart_size,
        }
    }
}

/// A product as a page shows it, with its price already in the user's currency.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProductView {
    pub id: String,
    pub name: String,
    pub description: String,
    pub price: String,
}

impl ProductView {
    /// A view of `product` priced with `price` (already formatted).
    pub fn new(product: &Product, price: String) -> Self {
        ProductView {
            id: product.id.clone(),
            name: product.name.clone(),
            description: product.description.clone(),
            price,
        }
    }
}

/// `GET /`.
#[derive(Debug, Template)]
#[template(path = "home.html")]
pub struct HomePage {
    pub header: Header,
    pub products: Vec<ProductView>,
    pub ad: Option<Ad>,
}

/// `GET /product/{id}`.
#[derive(Debug, Template)]
#[template(path = "product.html")]
pub struct ProductPage {
    pub header: Header,
    pub product: ProductView,
    pub recommendations: Vec<ProductView>,
    pub ad: Option<Ad>,
}

/// One line of the cart page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CartLine {
    pub product: ProductView,
    pub quantity: u32,
    pub line_total: String,
}

/// `GET /cart`.
#[derive(Debug, Template)]
#[template(path = "cart.html")]
pub struct CartPage {
    pub header: Header,
    pub lines: Vec<CartLine>,
    pub shipping_cost: String,
    pub total: String,
    pub recommendations: Vec<ProductView>,
    pub default_expiry_year: i32,
}

/// `POST /cart/checkout` when the order went through.
#[derive(Debug, Template)]
#[template(path = "order.html")]
pub struct OrderPage {
    pub header: Header,
    pub order_id: String,
    pub tracking_id: String,
    pub total: String,
    pub recommendations: Vec<ProductView>,
}

/// Any failure the user sees.
#[derive(Debug, Template)]
#[template(path = "error.html")]
pub struct ErrorPage {
    pub header: Header,
    pub status: u16,
    pub message: String,
    pub rejected_by: Option<String>,
}
