//! Online Boutique in Rust: ten services whose every dependency call goes through a breaker.
