//! Number formatting for tables: four significant digits, intervals as `mean ± half-width`.

use crate::stats::Summary;

/// `value` with four significant digits (scientific below 0.001).
pub fn number(value: f64) -> String {
    if !value.is_finite() {
        return value.to_string();
    }
    if value == 0.0 {
        return "0".to_owned();
    }
    let magnitude = value.abs().log10().floor() as i32;
    if magnitude < -3 {
        return format!("{value:.3e}");
    }
    let decimals = (3 - magnitude).clamp(0, 6) as usize;
    format!("{value:.decimals$}")
}

/// `mean ± half-width` (or the mean alone with n = 1).
pub fn mean_and_half_width(summary: &Summary) -> String {
    match summary.half_width {
        Some(half_width) => format!("{} ± {}", number(summary.mean), number(half_width)),
        None => format!("{} (n = 1)", number(summary.mean)),
    }
}

/// `[low, high]`, or a dash without an interval.
pub fn interval(summary: &Summary) -> String {
    match summary.interval() {
        Some((low, high)) => format!("[{}, {}]", number(low), number(high)),
        None => "–".to_owned(),
    }
}

/// A fault rate as a percentage, e.g. `25 %`.
pub fn percent(rate: f64) -> String {
    let value = rate * 100.0;
    if (value - value.round()).abs() < 1e-9 {
        format!("{} %", value.round())
    } else {
        format!("{} %", number(value))
    }
}

/// Escapes `|` for a markdown table cell.
pub fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}
