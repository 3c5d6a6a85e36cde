//! The soak's clients and the one server it plays: websocket readers (and non-readers) on the dashboard, a
//! push-ingest client, and the flapping Prometheus source the sweep's controller scrapes. Each loop is bounded by
//! the soak's deadline and every request by a timeout.

pub mod prometheus;
pub mod push;
pub mod websockets;
