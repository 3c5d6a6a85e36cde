//! `tolerant tune --verify`: the current config and the top candidates as one experiment (placeholder).
