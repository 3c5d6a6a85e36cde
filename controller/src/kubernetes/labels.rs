//! The labels and annotation Tolerant's Kubernetes objects carry, and the DNS-1123 label rule names follow.

use super::error::{KubeError, invalid};

/// The label every target pod carries: its service's name (`checkout`).
pub const NAME_LABEL: &str = "app.kubernetes.io/name";

/// `app.kubernetes.io/part-of` of the testbed's objects.
pub const TESTBED_PART: &str = "tolerant-testbed";

/// The annotation a pod fault's lease is recorded in.
pub const FAULT_ANNOTATION: &str = "tolerant.dev/fault";

/// The default selector: every pod that names its service.
pub const DEFAULT_SELECTOR: &str = NAME_LABEL;

/// A DNS-1123 label: 1 to 63 of `a-z 0-9 -`, starting and ending alphanumeric.
pub fn check_label(field: &str, value: &str) -> Result<(), KubeError> {
    let alphanumeric = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    let ok = !value.is_empty()
        && value.len() <= 63
        && value.chars().all(|c| alphanumeric(c) || c == '-')
        && value.starts_with(alphanumeric)
        && value.ends_with(alphanumeric);
    if ok {
        Ok(())
    } else {
        Err(invalid(
            field,
            format!(
                "`{value}` is not a DNS-1123 label (1 to 63 of a-z, 0-9 and `-`, alphanumeric at both ends)"
            ),
        ))
    }
}
