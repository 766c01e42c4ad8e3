//! The comparison as an SVG (plotters, SVG backend): hand-off latency p50 and watch
//! notifications per release against the client count (log scale), one line per lock, each
//! with a band from the least to the greatest per-seed value. A caption under the panels
//! says how many seeds and which faults. Lines that coincide (the queue lock and the mutex
//! both wake one waiter per release) stay visible: each lock has its own marker, and its
//! points are set a little apart along the x axis.

use super::report::{Figure, Row};
use plotters::{coord::Shift, prelude::*};
use std::collections::BTreeMap;

/// Width and height of the picture, pixels.
const SIZE_PX: (u32, u32) = (1000, 450);

/// A line's colour, in the order the locks come.
const COLOURS: [RGBColor; 4] = [
    RGBColor(214, 39, 40),
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
];

/// Height of the caption strip under the panels, pixels.
const CAPTION_PX: u32 = 30;

/// How far apart, as a factor along the (log) x axis, the lines' points are set, so that
/// lines with the same values do not hide each other.
const DODGE: f64 = 0.06;

/// One panel: what it plots of a row, its title, its y axis and where its legend goes
/// (where the lines are not).
struct Panel {
    title: &'static str,
    y_axis: &'static str,
    figure: fn(&Row) -> &Figure,
    legend: SeriesLabelPosition,
}

/// One lock's points: client count -> (value over all seeds, least per-seed value,
/// greatest per-seed value).
type Points = BTreeMap<usize, (f64, f64, f64)>;

/// The SVG document, with `caption` (the seeds and the faults) under the panels.
pub(super) fn svg(rows: &[Row], caption: &str) -> Result<String, String> {
    let mut document = String::new();
    {
        let root = SVGBackend::with_string(&mut document, SIZE_PX).into_drawing_area();
        root.fill(&WHITE).map_err(drawing)?;
        let (panels, caption_area) = root.split_vertically(SIZE_PX.1 - CAPTION_PX);
        caption_area
            .titled(caption, ("sans-serif", 15))
            .map_err(drawing)?;
        let (left, right) = panels.split_horizontally(SIZE_PX.0 / 2);
        draw(
            &left,
            rows,
            Panel {
                title: "hand-off latency, p50",
                y_axis: "simulated ms (release → next acquisition)",
                figure: |row| &row.handoff_latency_p50_ms,
                legend: SeriesLabelPosition::LowerRight,
            },
        )?;
        draw(
            &right,
            rows,
            Panel {
                title: "watch notifications per release",
                y_axis: "notifications reaching waiters",
                figure: |row| &row.notifications_per_release,
                legend: SeriesLabelPosition::UpperLeft,
            },
        )?;
        root.present().map_err(drawing)?;
    }
    Ok(document)
}

fn drawing(error: impl std::fmt::Display) -> String {
    format!("cannot draw the plot: {error}")
}

fn draw(area: &DrawingArea<SVGBackend, Shift>, rows: &[Row], panel: Panel) -> Result<(), String> {
    let lines = lines_of(rows, &panel);
    // The client counts, in order: the x axis's ticks.
    let mut clients: Vec<f64> = rows.iter().map(|row| row.clients as f64).collect();
    clients.sort_by(f64::total_cmp);
    clients.dedup();
    let (x_min, x_max) = (
        clients.first().copied().unwrap_or(1.0),
        clients.last().copied().unwrap_or(1.0),
    );
    let y_max = lines
        .iter()
        .flat_map(|(_, points)| points.values().map(|(_, _, high)| *high))
        .fold(0.0, f64::max);
    let mut chart = ChartBuilder::on(area)
        .caption(panel.title, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d(
            (x_min / 1.3..x_max * 1.3)
                .log_scale()
                .with_key_points(clients),
            0.0..(y_max * 1.1).max(1.0),
        )
        .map_err(drawing)?;
    chart
        .configure_mesh()
        .x_desc("clients (log scale)")
        .y_desc(panel.y_axis)
        .light_line_style(WHITE)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y}"))
        .draw()
        .map_err(drawing)?;
    let middle = (lines.len() as f64 - 1.0) / 2.0;
    for (index, (label, points)) in lines.iter().enumerate() {
        let colour = COLOURS[index % COLOURS.len()];
        let dodge = (1.0 + DODGE).powf(index as f64 - middle);
        let at = |clients: usize| clients as f64 * dodge;
        // The band: least to greatest per-seed value, drawn first, under every line.
        let band: Vec<(f64, f64)> = points
            .iter()
            .map(|(clients, (_, _, high))| (at(*clients), *high))
            .chain(
                points
                    .iter()
                    .rev()
                    .map(|(clients, (_, low, _))| (at(*clients), *low)),
            )
            .collect();
        chart
            .draw_series(std::iter::once(Polygon::new(
                band,
                colour.mix(0.15).filled(),
            )))
            .map_err(drawing)?;
        let line: Vec<(f64, f64)> = points
            .iter()
            .map(|(clients, (value, _, _))| (at(*clients), *value))
            .collect();
        let series = chart
            .draw_series(LineSeries::new(line.clone(), colour.stroke_width(2)))
            .map_err(drawing)?
            .label(label.as_str());
        let stroke = move |(x, y): (i32, i32)| {
            EmptyElement::at((x + 10, y))
                + PathElement::new(vec![(-10, 0), (10, 0)], colour.stroke_width(2))
        };
        match Marker::of(index) {
            Marker::Circle => {
                series.legend(move |at| stroke(at) + Circle::new((0, 0), 5, colour.filled()))
            }
            Marker::Triangle => series
                .legend(move |at| stroke(at) + TriangleMarker::new((0, 0), 6, colour.filled())),
            Marker::Square => series
                .legend(move |at| stroke(at) + Rectangle::new([(-4, -4), (4, 4)], colour.filled())),
            Marker::Cross => {
                series.legend(move |at| stroke(at) + Cross::new((0, 0), 5, colour.stroke_width(2)))
            }
        };
        let drawn = match Marker::of(index) {
            Marker::Circle => {
                chart.draw_series(line.iter().map(|p| Circle::new(*p, 5, colour.filled())))
            }
            Marker::Triangle => chart.draw_series(
                line.iter()
                    .map(|p| TriangleMarker::new(*p, 6, colour.filled())),
            ),
            Marker::Square => chart.draw_series(line.iter().map(|p| {
                EmptyElement::at(*p) + Rectangle::new([(-4, -4), (4, 4)], colour.filled())
            })),
            Marker::Cross => chart.draw_series(
                line.iter()
                    .map(|p| Cross::new(*p, 5, colour.stroke_width(2))),
            ),
        };
        drawn.map_err(drawing)?;
    }
    chart
        .configure_series_labels()
        .position(panel.legend)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()
        .map_err(drawing)?;
    Ok(())
}

/// One line per lock, in the rows' order, its points by client count: the panel's figure
/// over all seeds, with the least and greatest per-seed value.
fn lines_of(rows: &[Row], panel: &Panel) -> Vec<(String, Points)> {
    let mut lines: Vec<(String, Points)> = Vec::new();
    for row in rows {
        let label = row.label();
        let index = match lines.iter().position(|(known, _)| *known == label) {
            Some(index) => index,
            None => {
                lines.push((label, BTreeMap::new()));
                lines.len() - 1
            }
        };
        let figure = (panel.figure)(row);
        if let Some(value) = figure.all_seeds {
            let low = figure.seed_min.unwrap_or(value).min(value);
            let high = figure.seed_max.unwrap_or(value).max(value);
            lines[index].1.insert(row.clients, (value, low, high));
        }
    }
    lines
}

/// A lock's marker, so that lines drawn over each other can be told apart.
enum Marker {
    Circle,
    Triangle,
    Square,
    Cross,
}

impl Marker {
    /// The `index`th lock's: a circle, a triangle, a square, a cross, in turn.
    fn of(index: usize) -> Self {
        match index % 4 {
            0 => Marker::Circle,
            1 => Marker::Triangle,
            2 => Marker::Square,
            _ => Marker::Cross,
        }
    }
}
