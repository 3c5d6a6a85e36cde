//! The soak's two plots from its CSV, drawn with the report's charts (`controller::report::Chart`): RSS in MiB
//! and open descriptors of each process over time, as 10-second means (a point a second would be a smear).

use std::path::{Path, PathBuf};

use anyhow::Context;
use controller::report::{Chart, Point, Series};

use crate::sample::{PROCESSES, read_csv};

/// Seconds per plotted point.
const BIN_S: f64 = 10.0;

/// Means of `values` per [`BIN_S`] of `times`, empty cells left out.
pub fn binned(times: &[Option<f64>], values: &[Option<f64>], scale: f64) -> Vec<Point> {
    let mut bins: std::collections::BTreeMap<u64, (f64, f64)> = Default::default();
    for (t, value) in times.iter().zip(values) {
        if let (Some(t), Some(value)) = (t, value) {
            let bin = bins.entry((t / BIN_S) as u64).or_default();
            *bin = (bin.0 + value * scale, bin.1 + 1.0);
        }
    }
    (bins.into_iter())
        .map(|(bin, (sum, n))| Point {
            x: (bin as f64 + 0.5) * BIN_S / 60.0,
            y: sum / n,
            interval: None,
        })
        .collect()
}

/// Writes `rss.svg` and `fds.svg` into `out`; returns their paths.
pub fn plots(csv: &Path, out: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let columns = read_csv(csv)?;
    let mut written = Vec::new();
    for (file, unit, title, y_label, scale) in [
        (
            "rss.svg",
            "rss_kib",
            "Resident memory per process",
            "RSS (MiB)",
            1.0 / 1024.0,
        ),
        (
            "fds.svg",
            "fds",
            "Open descriptors per process",
            "descriptors",
            1.0,
        ),
    ] {
        let series = (PROCESSES.iter())
            .filter(|process| **process != "soak")
            .map(|process| Series {
                name: process.to_string(),
                points: binned(
                    &columns["t_s"],
                    &columns[&format!("{process}_{unit}")],
                    scale,
                ),
            })
            .collect();
        let chart = Chart {
            title,
            x_label: "minutes since the soak started",
            y_label,
            series,
            diagonal: false,
            y_from_zero: true,
            shaded: Vec::new(),
        };
        let svg = chart
            .to_svg()?
            .context("nothing to plot: the CSV has no samples")?;
        let path = out.join(file);
        std::fs::write(&path, svg).with_context(|| format!("writing {}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ten_seconds_make_one_point_and_gaps_are_skipped() {
        let times: Vec<Option<f64>> = (0..25).map(|t| Some(f64::from(t))).collect();
        let mut values: Vec<Option<f64>> = (0..25).map(|t| Some(f64::from(t))).collect();
        values[20..].iter_mut().for_each(|v| *v = None);
        let points = binned(&times, &values, 2.0);
        assert_eq!(points.len(), 2);
        assert_eq!(points[0].y, 9.0);
        assert_eq!(points[1].y, 29.0);
    }
}
