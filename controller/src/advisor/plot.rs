//! The front as an SVG scatter (plotters' SVG backend, as the reports' charts): every feasible candidate in
//! grey, the Pareto front in blue, the recommendation in green and the team's current config in orange.

use plotters::prelude::*;

/// A point to draw: rejection cost (x) and caller-seconds saved (y), per hour.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrontPoint {
    pub rejection_cost: f64,
    pub saved_s: f64,
}

/// What the chart shows.
#[derive(Debug, Clone, Default)]
pub struct FrontChart {
    pub others: Vec<FrontPoint>,
    pub front: Vec<FrontPoint>,
    pub recommended: Option<FrontPoint>,
    pub current: Option<FrontPoint>,
}

const SIZE: (u32, u32) = (860, 520);
const BLUE: RGBColor = RGBColor(0, 114, 178);
const GREEN: RGBColor = RGBColor(0, 158, 115);
const ORANGE: RGBColor = RGBColor(213, 94, 0);
const GREY: RGBColor = RGBColor(190, 190, 190);

/// An error of the plotting backend, as text.
#[derive(Debug, thiserror::Error)]
#[error("plotting the front: {0}")]
pub struct PlotError(String);

impl FrontChart {
    /// The chart as an SVG document.
    pub fn to_svg(&self) -> Result<String, PlotError> {
        let all: Vec<FrontPoint> = self
            .others
            .iter()
            .chain(&self.front)
            .chain(self.recommended.iter())
            .chain(self.current.iter())
            .copied()
            .filter(|p| p.rejection_cost.is_finite() && p.saved_s.is_finite())
            .collect();
        let span = |values: Vec<f64>| {
            let low = values.iter().copied().fold(0.0_f64, f64::min);
            let high = values.iter().copied().fold(0.0_f64, f64::max);
            let room = ((high - low) * 0.08).max(1.0);
            (low - room * 0.25, high + room)
        };
        let (x_low, x_high) = span(all.iter().map(|p| p.rejection_cost).collect());
        let (y_low, y_high) = span(all.iter().map(|p| p.saved_s).collect());
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
            root.fill(&WHITE).map_err(|e| PlotError(e.to_string()))?;
            let mut chart = ChartBuilder::on(&root)
                .caption(
                    "Candidates: cost of rejections against caller-seconds saved (per hour)",
                    ("sans-serif", 22),
                )
                .margin(14)
                .x_label_area_size(46)
                .y_label_area_size(70)
                .build_cartesian_2d(x_low..x_high, y_low..y_high)
                .map_err(|e| PlotError(e.to_string()))?;
            chart
                .configure_mesh()
                .x_desc("cost of requests rejected that would have succeeded")
                .y_desc("caller-seconds saved")
                .label_style(("sans-serif", 17))
                .draw()
                .map_err(|e| PlotError(e.to_string()))?;
            let xy = |p: &FrontPoint| (p.rejection_cost, p.saved_s);
            chart
                .draw_series(
                    self.others
                        .iter()
                        .map(|p| Circle::new(xy(p), 3, GREY.filled())),
                )
                .map_err(|e| PlotError(e.to_string()))?
                .label("candidate")
                .legend(|(x, y)| Circle::new((x + 8, y), 4, GREY.filled()));
            chart
                .draw_series(LineSeries::new(
                    self.front.iter().map(xy),
                    BLUE.stroke_width(2),
                ))
                .map_err(|e| PlotError(e.to_string()))?;
            chart
                .draw_series(
                    self.front
                        .iter()
                        .map(|p| Circle::new(xy(p), 5, BLUE.filled())),
                )
                .map_err(|e| PlotError(e.to_string()))?
                .label("Pareto front")
                .legend(|(x, y)| Circle::new((x + 8, y), 5, BLUE.filled()));
            if let Some(point) = &self.recommended {
                chart
                    .draw_series(std::iter::once(Circle::new(
                        xy(point),
                        9,
                        GREEN.stroke_width(3),
                    )))
                    .map_err(|e| PlotError(e.to_string()))?
                    .label("recommended")
                    .legend(|(x, y)| Circle::new((x + 8, y), 6, GREEN.stroke_width(3)));
            }
            if let Some(point) = &self.current {
                chart
                    .draw_series(std::iter::once(TriangleMarker::new(
                        xy(point),
                        9,
                        ORANGE.filled(),
                    )))
                    .map_err(|e| PlotError(e.to_string()))?
                    .label("current")
                    .legend(|(x, y)| TriangleMarker::new((x + 8, y), 7, ORANGE.filled()));
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .label_font(("sans-serif", 17))
                .position(SeriesLabelPosition::LowerRight)
                .draw()
                .map_err(|e| PlotError(e.to_string()))?;
            root.present().map_err(|e| PlotError(e.to_string()))?;
        }
        Ok(svg)
    }
}
