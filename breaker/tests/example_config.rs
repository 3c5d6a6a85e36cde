//! The example config shipped in `examples/breaker.toml` parses, validates and says what its comments say.

use std::time::Duration;

use breaker::{BreakerConfig, Mode, Probes};

#[test]
fn example_config_parses_and_matches_its_comments() {
    let text = include_str!("../examples/breaker.toml");
    let config =
        BreakerConfig::from_toml_str(text).unwrap_or_else(|e| panic!("examples/breaker.toml: {e}"));
    assert_eq!(config.mode(), Mode::Enforce);
    assert_eq!(config.trip().consecutive_failures(), Some(5));
    let rate = config.trip().failure_rate().expect("failure_rate");
    assert_eq!(
        (rate.threshold(), rate.window(), rate.min_calls()),
        (0.5, Duration::from_secs(2), 20)
    );
    let last = config.trip().last_calls().expect("last_calls");
    assert_eq!(
        (last.threshold(), last.calls(), last.min_calls()),
        (0.5, 100, 20)
    );
    let slow = config.trip().slow_call().expect("slow_call");
    assert_eq!(
        (slow.duration(), slow.rate()),
        (Duration::from_secs(1), 0.5)
    );
    assert_eq!(config.open().base(), Duration::from_secs(30));
    assert_eq!(config.open().backoff(), 2.0);
    assert_eq!(config.open().max(), Duration::from_secs(300));
    assert_eq!(config.open().seed(), Some(42));
    assert_eq!(config.half_open().probes(), Probes::limited(1).expect("1"));
    assert_eq!(config.half_open().successes_to_close(), 2);
    // Every key of the example survives a round trip: nothing in the file is silently ignored.
    assert_eq!(
        BreakerConfig::from_toml_str(&config.to_toml_string()).expect("round trip"),
        config
    );
}
