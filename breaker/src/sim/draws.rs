//! The seeded draws of a simulation: independent streams, each draw a pure function of (seed, stream, index).

use crate::core::policy::splitmix64;

/// Independent streams of seeded draws.
pub(super) const STREAM_SHARE: u64 = 0x5348_4152_4500_0000;
pub(super) const STREAM_FAILURE: u64 = 0x4641_494c_0000_0000;
pub(super) const STREAM_THINK: u64 = 0x5448_494e_4b00_0000;
pub(super) const STREAM_START: u64 = 0x5354_4152_5400_0000;

/// A uniform draw in [0, 1): a pure function of (seed, stream, index), so both passes see the same draws.
pub(crate) fn unit(seed: u64, stream: u64, index: u64) -> f64 {
    let bits = splitmix64(seed ^ splitmix64(stream ^ splitmix64(index)));
    (bits >> 11) as f64 / (1u64 << 53) as f64
}
