//! What the load driver saw in the seconds closed since the last live sample, gathered from the runner's closed
//! seconds until the live sample takes them.

use std::sync::Arc;

use controller::load;
use parking_lot::Mutex;

use crate::hub::{EndpointSample, OutcomeCounts, bucketize};

/// What the load driver saw in the seconds closed since the last live sample: its outcomes (timeouts
/// and connection errors included, unlike the frontend's counters) and the latest per-endpoint latency.
#[derive(Debug, Default)]
pub(super) struct LoadSeconds {
    pub(super) warmup: bool,
    pub(super) outcomes: OutcomeCounts,
    pub(super) endpoints: Vec<EndpointSample>,
    pub(super) cart_p95_us: Option<u64>,
}

impl LoadSeconds {
    /// Adds one closed second: outcomes add up (the sample's and each endpoint's), latency is the newest
    /// second's.
    fn add(&mut self, second: &load::SecondStats) {
        self.warmup = second.warmup;
        let mut endpoints = Vec::with_capacity(second.endpoints.len());
        self.cart_p95_us = None;
        for endpoint in &second.endpoints {
            self.outcomes.merge(&endpoint.outcomes);
            let name = load::endpoint::NAMES.get(endpoint.endpoint).map_or_else(
                || format!("endpoint {}", endpoint.endpoint),
                |n| (*n).to_owned(),
            );
            if endpoint.endpoint == load::endpoint::VIEW_CART {
                self.cart_p95_us = Some(endpoint.latency.p95_us);
            }
            // The seconds already gathered for this endpoint count too (its latency is the newest's).
            let mut outcomes = endpoint.outcomes;
            let mut requests = endpoint.latency.count;
            let mut buckets = latency_buckets(&endpoint.histogram_v2);
            if let Some(earlier) = self.endpoints.iter().find(|e| e.name == name) {
                outcomes.merge(&earlier.outcomes);
                requests += earlier.requests;
                if buckets.len() == earlier.buckets.len() {
                    buckets
                        .iter_mut()
                        .zip(&earlier.buckets)
                        .for_each(|(b, e)| *b += e);
                }
            }
            endpoints.push(EndpointSample {
                name,
                requests,
                outcomes,
                ok_p50_us: (endpoint.latency_ok.count > 0).then_some(endpoint.latency_ok.p50_us),
                failed_p50_us: (endpoint.latency_failed.count > 0)
                    .then_some(endpoint.latency_failed.p50_us),
                p50_us: endpoint.latency.p50_us,
                p95_us: endpoint.latency.p95_us,
                p99_us: endpoint.latency.p99_us,
                ok_p95_us: (endpoint.latency_ok.count > 0).then_some(endpoint.latency_ok.p95_us),
                failed_p95_us: (endpoint.latency_failed.count > 0)
                    .then_some(endpoint.latency_failed.p95_us),
                buckets,
            });
        }
        // An endpoint of an earlier gathered second that the newest one lacks keeps its counts (no latency).
        for earlier in self.endpoints.drain(..) {
            if !endpoints.iter().any(|e| e.name == earlier.name) {
                endpoints.push(EndpointSample {
                    ok_p50_us: None,
                    failed_p50_us: None,
                    ok_p95_us: None,
                    failed_p95_us: None,
                    ..earlier
                });
            }
        }
        self.endpoints = endpoints;
    }
}

/// Where the runner's closed seconds are gathered until the next live sample takes them, and the sink the
/// runner sends them to.
pub(super) fn collect_load_seconds() -> (Arc<Mutex<Option<LoadSeconds>>>, load::SecondSink) {
    let load_seconds = Arc::new(Mutex::new(None::<LoadSeconds>));
    let (live_seconds, mut closed_seconds) = tokio::sync::mpsc::unbounded_channel();
    {
        let load_seconds = Arc::clone(&load_seconds);
        tokio::spawn(async move {
            while let Some(second) = closed_seconds.recv().await {
                load_seconds
                    .lock()
                    .get_or_insert_with(LoadSeconds::default)
                    .add(&second);
            }
        });
    }
    (load_seconds, live_seconds)
}

/// Counts per latency bucket (see [`bucketize`]) of an HDR V2 histogram; empty when the bytes do not
/// decode.
pub(super) fn latency_buckets(histogram_v2: &[u8]) -> Vec<u64> {
    match load::deserialize_histogram(histogram_v2) {
        Ok(histogram) => bucketize(
            histogram
                .iter_recorded()
                .map(|step| (step.value_iterated_to(), step.count_at_value())),
        ),
        Err(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint_second(
        endpoint: usize,
        latencies_us: &[u64],
        ok: u64,
        timeout: u64,
    ) -> load::EndpointSecond {
        let mut histogram = load::new_histogram();
        for latency in latencies_us {
            histogram.record(*latency).unwrap();
        }
        load::EndpointSecond {
            endpoint,
            outcomes: OutcomeCounts {
                ok,
                timeout,
                ..load::OutcomeCounts::default()
            },
            latency: load::LatencySummary::of(&histogram),
            latency_ok: load::LatencySummary::default(),
            latency_failed: load::LatencySummary::default(),
            histogram_v2: load::serialize_histogram(&histogram),
            outcome_histograms_v2: None,
        }
    }

    /// Second `second`: two `GET /cart` that took 0.9 ms and 1.5 ms.
    fn cart_second(second: u64, warmup: bool) -> load::SecondStats {
        load::SecondStats {
            second,
            warmup,
            endpoints: vec![endpoint_second(
                load::endpoint::VIEW_CART,
                &[900, 1_500],
                2,
                0,
            )],
        }
    }

    /// Each endpoint's counts add up over the gathered seconds, so the endpoints' outcomes add up to the
    /// sample's: the live per-endpoint table counts what the outcomes chart counts.
    #[test]
    fn endpoint_outcomes_add_up_to_the_sample_s_over_gathered_seconds() {
        let mut seconds = LoadSeconds::default();
        seconds.add(&cart_second(3, false));
        seconds.add(&load::SecondStats {
            second: 4,
            warmup: false,
            endpoints: vec![
                endpoint_second(load::endpoint::CHECKOUT, &[30_000, 40_000], 1, 1),
                endpoint_second(load::endpoint::VIEW_CART, &[900], 1, 0),
            ],
        });
        seconds.add(&load::SecondStats {
            second: 5,
            warmup: false,
            endpoints: vec![endpoint_second(load::endpoint::CHECKOUT, &[35_000], 0, 1)],
        });
        let mut total = OutcomeCounts::default();
        seconds
            .endpoints
            .iter()
            .for_each(|e| total.merge(&e.outcomes));
        assert_eq!(total, seconds.outcomes);
        let of = |name: &str| {
            seconds
                .endpoints
                .iter()
                .find(|e| e.name == name)
                .unwrap_or_else(|| panic!("{name} kept"))
        };
        let checkout = of("POST /cart/checkout");
        assert_eq!((checkout.outcomes.ok, checkout.outcomes.timeout), (1, 2));
        assert_eq!(checkout.requests, 3);
        assert_eq!(checkout.buckets.iter().sum::<u64>(), 3);
        let cart = of("GET /cart");
        assert_eq!((cart.outcomes.ok, cart.requests), (3, 3));
        assert_eq!(
            cart.ok_p95_us, None,
            "no latency of its own in the newest second"
        );
    }

    #[test]
    fn load_seconds_add_outcomes_and_keep_the_newest_latency() {
        let mut seconds = LoadSeconds::default();
        seconds.add(&cart_second(3, true));
        seconds.add(&load::SecondStats {
            second: 4,
            warmup: false,
            endpoints: vec![endpoint_second(load::endpoint::CHECKOUT, &[30_000], 0, 1)],
        });
        assert!(!seconds.warmup);
        assert_eq!(seconds.outcomes.ok, 2);
        assert_eq!(seconds.outcomes.timeout, 1);
        // Latency is the newest second's: no GET /cart in it (its counts are kept).
        assert_eq!(seconds.cart_p95_us, None);
        assert_eq!(seconds.endpoints.len(), 2);
        let checkout = &seconds.endpoints[0];
        assert_eq!(checkout.name, "POST /cart/checkout");
        assert_eq!(checkout.requests, 1);
        // 30 ms falls in the (20 ms, 50 ms] bucket, index 5.
        let mut expected = vec![0; 13];
        expected[5] = 1;
        assert_eq!(checkout.buckets, expected);
    }

    #[test]
    fn a_cart_second_carries_its_p95() {
        let mut seconds = LoadSeconds::default();
        seconds.add(&cart_second(0, false));
        let p95 = seconds
            .cart_p95_us
            .expect("GET /cart completed in this second");
        assert!((1_400..=1_600).contains(&p95), "{p95}");
        assert_eq!(
            seconds.endpoints[0].buckets[0] + seconds.endpoints[0].buckets[1],
            2
        );
    }
}
