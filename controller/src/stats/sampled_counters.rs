//! Counters of the sampled `/metrics` (kept per label in every sample's `extra.metrics`) over a run's measured
//! window: picked by series name, summed over labels (replicas), their increase from second to second.

use std::collections::BTreeMap;

use crate::store::SampleRow;

/// The value of `name="…"` in a series' label text (what follows its `{`).
pub(super) fn label_value<'a>(labels: &'a str, name: &str) -> Option<&'a str> {
    let marker = format!("{name}=\"");
    let start = labels.find(&marker)? + marker.len();
    let end = labels[start..].find('"')?;
    Some(&labels[start..start + end])
}

/// The counters `select` picks in one sample (it maps a series name to the key its value is summed under),
/// summed over labels.
fn counters(sample: &SampleRow, select: &impl Fn(&str) -> Option<String>) -> BTreeMap<String, f64> {
    let mut counters = BTreeMap::new();
    let metrics = sample
        .collector
        .extra
        .as_ref()
        .and_then(|extra| extra.get("metrics"))
        .and_then(|metrics| metrics.as_object());
    for series in metrics.into_iter().flat_map(|m| m.values()) {
        for (name, value) in series.as_object().into_iter().flatten() {
            if let (Some(key), Some(value)) = (select(name), value.as_f64()) {
                *counters.entry(key).or_insert(0.0) += value;
            }
        }
    }
    counters
}

/// The increase over the seconds `measured` keeps of every counter `select` picks from the sampled `/metrics`
/// (summed under the key it names): from the last sample before them (or their first) to their last, step by
/// step, a counter that went down (a restart) counted from zero. Empty when no sample had the counters.
pub(super) fn counter_increases(
    samples: &[SampleRow],
    measured: impl Fn(i64) -> bool,
    select: impl Fn(&str) -> Option<String>,
) -> BTreeMap<String, f64> {
    let mut ordered: Vec<&SampleRow> = samples.iter().collect();
    ordered.sort_by_key(|sample| sample.second);
    let first = ordered.iter().position(|s| measured(s.second));
    let Some(first) = first else {
        return BTreeMap::new();
    };
    let from = first.saturating_sub(1);
    let kept: Vec<BTreeMap<String, f64>> = ordered[from..]
        .iter()
        .enumerate()
        .filter(|(i, s)| *i + from < first || measured(s.second))
        .map(|(_, s)| counters(s, &select))
        .collect();
    let mut increases: BTreeMap<String, f64> = BTreeMap::new();
    for pair in kept.windows(2) {
        for (key, &now) in &pair[1] {
            let before = pair[0].get(key).copied().unwrap_or(now);
            let increase = if now >= before { now - before } else { now };
            *increases.entry(key.clone()).or_insert(0.0) += increase;
        }
    }
    increases
}

/// A sample whose `/metrics` per label are `metrics` (warmup before second 2), as the sampler stores them.
#[cfg(test)]
pub(super) fn metrics_sample(second: i64, metrics: serde_json::Value) -> SampleRow {
    SampleRow {
        second,
        warmup: second < 2,
        outcomes: crate::load::OutcomeCounts::default(),
        collector: crate::store::CollectorSample {
            second: second as u64,
            extra: Some(serde_json::json!({ "metrics": metrics })),
            ..crate::store::CollectorSample::default()
        },
    }
}
