//! Per-request random draws that are reproducible from a seed and the request's position in the sequence.
//!
//! Why not one shared RNG behind a lock: every request would contend on it, and the draws a request gets would
//! depend on how many draws earlier requests happened to make. Instead each request takes the next index from an
//! atomic counter and gets its own small stream, SplitMix64 seeded with `seed` and that index. Request `n` under
//! seed `s` always sees the same numbers, on every platform and build, whatever other requests did; the only shared
//! write on the hot path is the counter's `fetch_add`.
//!
//! SplitMix64 (Steele, Lea, Flood 2014) passes BigCrush and is the generator `rand` itself uses to expand seeds;
//! it is plenty for Bernoulli draws and jitter.

/// Golden-ratio increment of SplitMix64.
const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// The random stream of one request.
#[derive(Debug, Clone)]
pub struct RequestRng {
    state: u64,
}

impl RequestRng {
    /// The stream of request number `request_index` under `seed`.
    pub fn new(seed: u64, request_index: u64) -> Self {
        // Mix the index through one SplitMix64 round so neighbouring requests start far apart.
        let mut start = RequestRng {
            state: seed ^ request_index.wrapping_mul(0xD1B5_4A32_D192_ED03),
        };
        RequestRng {
            state: start.next_u64(),
        }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN_GAMMA);
        let mut mixed = self.state;
        mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        mixed ^ (mixed >> 31)
    }

    /// A uniform draw from `[0, 1)` with 53 bits of precision.
    pub fn next_unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// `true` with probability `rate` (`rate` 0 never fires, `rate` 1 always does).
    pub fn fires(&mut self, rate: f64) -> bool {
        self.next_unit() < rate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_and_index_give_the_same_stream() {
        let mut first = RequestRng::new(42, 7);
        let mut second = RequestRng::new(42, 7);
        for _ in 0..100 {
            assert_eq!(first.next_u64(), second.next_u64());
        }
    }

    #[test]
    fn neighbouring_indices_and_seeds_differ() {
        assert_ne!(
            RequestRng::new(42, 7).next_u64(),
            RequestRng::new(42, 8).next_u64()
        );
        assert_ne!(
            RequestRng::new(42, 7).next_u64(),
            RequestRng::new(43, 7).next_u64()
        );
    }

    #[test]
    fn unit_draws_stay_in_range_and_average_one_half() {
        let mut sum = 0.0;
        for index in 0..10_000 {
            let draw = RequestRng::new(1, index).next_unit();
            assert!((0.0..1.0).contains(&draw));
            sum += draw;
        }
        let mean = sum / 10_000.0;
        // sd of the mean of 10 000 uniforms is 0.00289; 5 sigma.
        assert!((mean - 0.5).abs() < 0.0145, "mean {mean}");
    }

    #[test]
    fn rate_zero_never_fires_and_rate_one_always_does() {
        for index in 0..1_000 {
            assert!(!RequestRng::new(9, index).fires(0.0));
            assert!(RequestRng::new(9, index).fires(1.0));
        }
    }
}
