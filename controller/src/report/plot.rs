//! SVG line charts with 95 % interval bars, drawn with plotters' SVG backend.
//!
//! Only the SVG backend is compiled (no `ttf` feature), so plotters lays text out with its built-in
//! size estimate and writes it as SVG `<text>` elements: the viewer's browser picks the font, and
//! nothing here needs fontconfig or a font file.

use plotters::prelude::*;

use super::ReportError;

/// Okabe–Ito colours: distinguishable, also for colour-blind readers.
const COLOURS: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
    RGBColor(240, 228, 66),
];

const SIZE: (u32, u32) = (860, 500);
/// Text size in the SVG: the results page shows a chart from about 60 % of [`SIZE`] (two columns in a wide
/// window, one at most 380 px tall in a narrow one), so 19 px stays at 11 px or more on screen.
const TEXT_PX: u32 = 19;
const CAPTION_PX: u32 = 22;

/// One point, with its 95 % interval when there is one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    pub interval: Option<(f64, f64)>,
}

/// A named line.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<Point>,
}

/// What a chart shows.
#[derive(Debug, Clone)]
pub struct Chart<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub series: Vec<Series>,
    /// Draw the line y = x (e.g. observed against injected failure).
    pub diagonal: bool,
    /// Start the y axis at zero when every value is positive.
    pub y_from_zero: bool,
    /// x ranges shaded behind the lines (the fault's on-periods), labelled "fault on".
    pub shaded: Vec<(f64, f64)>,
}

fn plot_error(error: impl std::fmt::Display) -> ReportError {
    ReportError::Plot(error.to_string())
}

/// Axis range covering `values` with a little room; never empty.
fn range(values: impl Iterator<Item = f64>, from_zero: bool) -> Option<(f64, f64)> {
    let (mut low, mut high) = values
        .filter(|v| v.is_finite())
        .fold(None, |acc: Option<(f64, f64)>, v| {
            Some(acc.map_or((v, v), |(l, h)| (l.min(v), h.max(v))))
        })?;
    if from_zero && low > 0.0 {
        low = 0.0;
    }
    if high == low {
        // One value (one failure rate, one condition): the axis runs from zero to a little past it, not
        // ±10 % around it (a 90–110 % axis for a single rate of 100 % says nothing).
        return Some(match low {
            v if v > 0.0 => (0.0, v * 1.1),
            v if v < 0.0 => (v * 1.1, 0.0),
            // A single zero of a quantity that cannot be negative (no breaker opened): 0 to 1, not −1 to 1.
            _ if from_zero => (0.0, 1.0),
            _ => (-1.0, 1.0),
        });
    }
    let span = high - low;
    let pad = if span > 0.0 {
        span * 0.06
    } else {
        low.abs().max(1.0) * 0.1
    };
    if !(from_zero && low == 0.0) {
        low -= pad;
    }
    high += pad;
    Some((low, high))
}

impl Chart<'_> {
    /// The chart as an SVG document; `None` when there is no point to draw.
    pub fn to_svg(&self) -> Result<Option<String>, ReportError> {
        let points = || self.series.iter().flat_map(|s| s.points.iter());
        let Some((x_low, x_high)) = range(points().map(|p| p.x), false) else {
            return Ok(None);
        };
        let y_values = points().flat_map(|p| {
            let (low, high) = p.interval.unwrap_or((p.y, p.y));
            [p.y, low, high]
        });
        let diagonal_from = if self.y_from_zero {
            x_low.max(0.0)
        } else {
            x_low
        };
        let diagonal = self
            .diagonal
            .then_some([diagonal_from, x_high])
            .into_iter()
            .flatten();
        let Some((y_low, y_high)) = range(y_values.chain(diagonal), self.y_from_zero) else {
            return Ok(None);
        };

        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
            root.fill(&WHITE).map_err(plot_error)?;
            let mut chart = ChartBuilder::on(&root)
                .caption(self.title, ("sans-serif", CAPTION_PX))
                .margin(14)
                .x_label_area_size(56)
                .y_label_area_size(90)
                .build_cartesian_2d(x_low..x_high, y_low..y_high)
                .map_err(plot_error)?;
            chart
                .configure_mesh()
                .x_desc(self.x_label)
                .y_desc(self.y_label)
                .label_style(("sans-serif", TEXT_PX))
                .axis_desc_style(("sans-serif", TEXT_PX))
                .light_line_style(RGBColor(235, 235, 235))
                .draw()
                .map_err(plot_error)?;

            let fault = RGBColor(125, 60, 152);
            let bands = self
                .shaded
                .iter()
                .map(|&(from, to)| (from.max(x_low), to.min(x_high)))
                .filter(|(from, to)| from < to)
                .map(|(from, to)| {
                    Rectangle::new([(from, y_low), (to, y_high)], fault.mix(0.12).filled())
                })
                .collect::<Vec<_>>();
            if !bands.is_empty() {
                chart
                    .draw_series(bands)
                    .map_err(plot_error)?
                    .label("fault on")
                    .legend(move |(x, y)| {
                        Rectangle::new([(x, y - 6), (x + 20, y + 6)], fault.mix(0.25).filled())
                    });
            }
            if self.diagonal {
                let grey = RGBColor(150, 150, 150);
                // Only the part inside both axes' ranges.
                let (from, to) = (x_low.max(y_low), x_high.min(y_high));
                chart
                    .draw_series(LineSeries::new(
                        [(from, from), (to, to)],
                        grey.stroke_width(1),
                    ))
                    .map_err(plot_error)?
                    .label("y = x")
                    .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], grey));
            }

            let cap = (x_high - x_low) * 0.006;
            for (i, series) in self.series.iter().enumerate() {
                let colour = COLOURS[i % COLOURS.len()];
                let line: Vec<(f64, f64)> = series.points.iter().map(|p| (p.x, p.y)).collect();
                chart
                    .draw_series(LineSeries::new(line.clone(), colour.stroke_width(2)))
                    .map_err(plot_error)?
                    .label(series.name.as_str())
                    .legend(move |(x, y)| {
                        PathElement::new([(x, y), (x + 20, y)], colour.stroke_width(2))
                    });
                chart
                    .draw_series(
                        line.iter()
                            .map(|&(x, y)| Circle::new((x, y), 3, colour.filled())),
                    )
                    .map_err(plot_error)?;
                let bars = series.points.iter().filter_map(|p| {
                    let (low, high) = p.interval?;
                    Some(PathElement::new(
                        [
                            (p.x - cap, low),
                            (p.x + cap, low),
                            (p.x, low),
                            (p.x, high),
                            (p.x - cap, high),
                            (p.x + cap, high),
                        ],
                        colour.stroke_width(1),
                    ))
                });
                chart.draw_series(bars).map_err(plot_error)?;
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .label_font(("sans-serif", TEXT_PX))
                .background_style(WHITE.mix(0.85))
                .border_style(RGBColor(180, 180, 180))
                .draw()
                .map_err(plot_error)?;
            root.present().map_err(plot_error)?;
        }
        Ok(Some(svg))
    }
}

/// A figure drawn as an SVG document, to be written next to the markdown.
#[derive(Debug, Clone, PartialEq)]
pub struct PlotFile {
    /// File name (no directory), as the markdown links it.
    pub file_name: String,
    pub title: String,
    pub svg: String,
}

#[cfg(test)]
mod axis_tests {
    use super::range;

    #[test]
    fn a_single_value_gets_an_axis_from_zero() {
        let close = |got: Option<(f64, f64)>, want: (f64, f64)| {
            let (low, high) = got.expect("range");
            assert!(
                (low - want.0).abs() < 1e-9 && (high - want.1).abs() < 1e-9,
                "{low} {high}"
            );
        };
        close(range([100.0].into_iter(), false), (0.0, 110.0));
        close(range([-4.0].into_iter(), false), (-4.4, 0.0));
        // "Breaker opens vs failure rate" with one condition and no open: 0..1, never a −1 on a count.
        assert_eq!(range([0.0].into_iter(), true), Some((0.0, 1.0)));
        assert_eq!(range([0.0, 0.0].into_iter(), true), Some((0.0, 1.0)));
        assert_eq!(range([0.0].into_iter(), false), Some((-1.0, 1.0)));
        let (low, high) = range([0.0, 100.0].into_iter(), false).expect("range");
        assert!(low < 0.0 && high > 100.0 && high < 110.0, "{low} {high}");
    }
}
