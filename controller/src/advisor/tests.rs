//! Hand-checkable advisor cases.
