//! Injection agent: per-request HTTP faults with leases, a control API, a tower layer and a sidecar proxy.
