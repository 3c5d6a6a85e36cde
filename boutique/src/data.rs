//! Fixed shop data: the nine Online Boutique products, the currency rate table and the ads.

use crate::money::Money;
use crate::wire::{Ad, Product};

/// The nine product ids of the Online Boutique catalog.
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

/// The currencies the stock load generator switches between.
pub const LOAD_GENERATOR_CURRENCIES: [&str; 6] = ["EUR", "USD", "JPY", "CAD", "GBP", "TRY"];

/// The currency a session starts in.
pub const DEFAULT_CURRENCY: &str = "USD";

/// Units of each currency per euro (the Online Boutique table is euro-based).
pub const EUR_RATES: [(&str, f64); 33] = [
    ("EUR", 1.0),
    ("USD", 1.1305),
    ("JPY", 126.40),
    ("BGN", 1.9558),
    ("CZK", 25.592),
    ("DKK", 7.4609),
    ("GBP", 0.85970),
    ("HUF", 315.51),
    ("PLN", 4.3058),
    ("RON", 4.7653),
    ("SEK", 10.5640),
    ("CHF", 1.1360),
    ("ISK", 136.80),
    ("NOK", 9.8040),
    ("HRK", 7.4210),
    ("RUB", 74.4208),
    ("TRY", 6.1247),
    ("AUD", 1.6072),
    ("BRL", 4.2682),
    ("CAD", 1.5128),
    ("CNY", 7.5857),
    ("HKD", 8.8743),
    ("IDR", 15999.40),
    ("ILS", 4.0875),
    ("INR", 79.4320),
    ("KRW", 1275.05),
    ("MXN", 21.7999),
    ("MYR", 4.6289),
    ("NZD", 1.6679),
    ("PHP", 59.083),
    ("SGD", 1.5349),
    ("THB", 36.012),
    ("ZAR", 16.0583),
];

/// Units of `code` per euro, if the currency is supported.
pub fn eur_rate(code: &str) -> Option<f64> {
    EUR_RATES
        .iter()
        .find(|(known, _)| *known == code)
        .map(|(_, rate)| *rate)
}

/// Whether `code` is a supported currency.
pub fn is_supported_currency(code: &str) -> bool {
    eur_rate(code).is_some()
}

/// The catalog, in a stable order.
pub fn products() -> Vec<Product> {
    let product =
        |id: &str, name: &str, description: &str, cents: i64, categories: &[&str]| Product {
            id: id.to_owned(),
            name: name.to_owned(),
            description: description.to_owned(),
            picture: format!("/static/img/products/{}.jpg", id.to_lowercase()),
            price_usd: Money::from_cents("USD", cents),
            categories: categories.iter().map(|c| (*c).to_owned()).collect(),
        };
    vec![
        product(
            "OLJCESPC7Z",
            "Sunglasses",
            "Add a modern touch to your outfits with these sleek aviator sunglasses.",
            1999,
            &["accessories"],
        ),
        product(
            "66VCHSJNUP",
            "Tank Top",
            "Perfectly cropped cotton tank, with a scooped neckline.",
            1899,
            &["clothing", "tops"],
        ),
        product(
            "1YMWWN1N4O",
            "Watch",
            "This gold-tone stainless steel watch will work with most of your outfits.",
            10999,
            &["accessories"],
        ),
        product(
            "L9ECAV7KIM",
            "Loafers",
            "A neat addition to your summer wardrobe.",
            8999,
            &["footwear"],
        ),
        product(
            "2ZYFJ3GM2N",
            "Hairdryer",
            "This lightweight hairdryer has 3 heat and speed settings. It's perfect for travel.",
            2499,
            &["hair", "beauty"],
        ),
        product(
            "0PUK6V6EV0",
            "Candle Holder",
            "This small but intricate candle holder is an excellent gift.",
            1899,
            &["decor", "home"],
        ),
        product(
            "LS4PSXUNUM",
            "Salt & Pepper Shakers",
            "Add some flavor to your kitchen.",
            1849,
            &["kitchen"],
        ),
        product(
            "9SIQT8TOJO",
            "Bamboo Glass Jar",
            "This bamboo glass jar can hold 57 oz (1.7 l) and is perfect for any kitchen.",
            549,
            &["kitchen"],
        ),
        product(
            "6E92ZMYYFZ",
            "Mug",
            "A simple mug with a mustard interior.",
            899,
            &["kitchen"],
        ),
    ]
}

/// Ads by product category.
pub fn ads_by_category() -> Vec<(&'static str, Ad)> {
    let ad = |product: &str, text: &str| Ad {
        redirect_url: format!("/product/{product}"),
        text: text.to_owned(),
    };
    vec![
        ("clothing", ad("66VCHSJNUP", "Tank top for sale. 20% off.")),
        (
            "accessories",
            ad(
                "1YMWWN1N4O",
                "Watch for sale. Buy one, get second kit for free",
            ),
        ),
        (
            "footwear",
            ad(
                "L9ECAV7KIM",
                "Loafers for sale. Buy one, get second one for free",
            ),
        ),
        ("hair", ad("2ZYFJ3GM2N", "Hairdryer for sale. 50% off.")),
        (
            "decor",
            ad("0PUK6V6EV0", "Candle holder for sale. 30% off."),
        ),
        (
            "kitchen",
            ad("9SIQT8TOJO", "Bamboo glass jar for sale. 10% off."),
        ),
        (
            "kitchen",
            ad(
                "6E92ZMYYFZ",
                "Mug for sale. Buy two, get third one for free",
            ),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_holds_exactly_the_nine_online_boutique_ids() {
        let mut ids: Vec<String> = products().into_iter().map(|p| p.id).collect();
        ids.sort();
        assert_eq!(ids, PRODUCT_IDS.to_vec());
    }

    #[test]
    fn every_load_generator_currency_is_supported() {
        for code in LOAD_GENERATOR_CURRENCIES {
            assert!(is_supported_currency(code), "{code}");
        }
        assert!(!is_supported_currency("XXX"));
    }
}
