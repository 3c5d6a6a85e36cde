//! The frontend's state and the calls a page makes through its breakers: currencies, cart, conversion, recommendations, an ad; each degrading to an empty answer.

use std::sync::Arc;

use futures::future::join_all;
use parking_lot::Mutex;
use rand::SeedableRng;
use rand::rngs::SmallRng;
use rand::seq::IndexedRandom;

use super::pages::ProductView;
use crate::client::{CallError, Dependency};
use crate::money::Money;
use crate::wire::{Ad, Ads, Cart, CartItem, ConvertRequest, Product, Recommendations};

/// How many recommended products a page looks up and shows (Online Boutique shows four).
const RECOMMENDATIONS_SHOWN: usize = 4;

/// The frontend's dependencies and a seeded random source for picking an ad.
#[derive(Debug, Clone)]
pub struct FrontendState {
    pub deps: FrontendDependencies,
    rng: Arc<Mutex<SmallRng>>,
}

/// The frontend's dependencies, by role.
#[derive(Debug, Clone)]
pub struct FrontendDependencies {
    pub catalog: Dependency,
    pub currency: Dependency,
    pub cart: Dependency,
    pub recommendation: Dependency,
    pub shipping: Dependency,
    pub checkout: Dependency,
    pub ad: Dependency,
}

impl FrontendState {
    /// A frontend calling `deps`, picking ads with `seed`.
    pub fn new(deps: FrontendDependencies, seed: u64) -> Self {
        FrontendState {
            deps,
            rng: Arc::new(Mutex::new(SmallRng::seed_from_u64(seed))),
        }
    }
}

impl FrontendState {
    pub(super) async fn currencies(&self) -> Vec<String> {
        self.deps
            .currency
            .get("/currencies")
            .await
            .unwrap_or_else(|error| {
                tracing::debug!(%error, "currencies unavailable");
                vec![]
            })
    }

    pub(super) async fn cart_items(&self, user_id: &str) -> Vec<CartItem> {
        match self
            .deps
            .cart
            .get::<Cart>(&format!("/carts/{user_id}"))
            .await
        {
            Ok(cart) => cart.items,
            Err(error) => {
                tracing::debug!(%error, "cart unavailable, showing it empty");
                vec![]
            }
        }
    }

    pub(super) async fn convert(&self, from: &Money, to_code: &str) -> Result<Money, CallError> {
        self.deps
            .currency
            .post(
                "/convert",
                &ConvertRequest {
                    from: from.clone(),
                    to_code: to_code.to_owned(),
                },
            )
            .await
    }

    /// A price in the user's currency; the USD price when conversion fails.
    pub(super) async fn price(&self, price_usd: &Money, currency: &str) -> Money {
        self.convert(price_usd, currency)
            .await
            .unwrap_or_else(|_| price_usd.clone())
    }

    pub(super) async fn recommendations(
        &self,
        user_id: &str,
        product_ids: &[String],
    ) -> Vec<ProductView> {
        let path = format!(
            "/recommendations?user_id={user_id}&product_ids={}",
            product_ids.join(",")
        );
        let ids = match self.deps.recommendation.get::<Recommendations>(&path).await {
            Ok(recommended) => recommended.product_ids,
            Err(error) => {
                tracing::debug!(%error, "recommendations unavailable");
                return vec![];
            }
        };
        let lookups = ids.iter().take(RECOMMENDATIONS_SHOWN).map(|id| {
            let path = format!("/products/{id}");
            async move { self.deps.catalog.get::<Product>(&path).await }
        });
        join_all(lookups)
            .await
            .into_iter()
            .filter_map(Result::ok)
            .map(|product| {
                let price = product.price_usd.display();
                ProductView::new(&product, price)
            })
            .collect()
    }

    pub(super) async fn ad(&self, categories: &[String]) -> Option<Ad> {
        let ads: Ads = self
            .deps
            .ad
            .get(&format!("/ads?context_keys={}", categories.join(",")))
            .await
            .ok()?;
        ads.ads.choose(&mut *self.rng.lock()).cloned()
    }
}
