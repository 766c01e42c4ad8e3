//! The comparison as an SVG (plotters, SVG backend): hand-off latency p50 and watch
//! notifications per release against the client count (log scale), one line per lock.

use super::report::Row;
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

/// One panel: what it plots of a row, its title, its y axis and where its legend goes
/// (where the lines are not).
struct Panel {
    title: &'static str,
    y_axis: &'static str,
    value: fn(&Row) -> Option<f64>,
    legend: SeriesLabelPosition,
}

/// The SVG document.
pub(super) fn svg(rows: &[Row]) -> Result<String, String> {
    let mut document = String::new();
    {
        let root = SVGBackend::with_string(&mut document, SIZE_PX).into_drawing_area();
        root.fill(&WHITE).map_err(drawing)?;
        let (left, right) = root.split_horizontally(SIZE_PX.0 / 2);
        draw(
            &left,
            rows,
            Panel {
                title: "hand-off latency, p50",
                y_axis: "simulated ms (release → next acquisition)",
                value: |row| row.handoff_latency_p50_ms.all_seeds,
                legend: SeriesLabelPosition::LowerRight,
            },
        )?;
        draw(
            &right,
            rows,
            Panel {
                title: "watch notifications per release",
                y_axis: "notifications reaching waiters",
                value: |row| row.notifications_per_release.all_seeds,
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
    // One line per lock, in the rows' order, its points by client count.
    let mut lines: Vec<(String, BTreeMap<usize, f64>)> = Vec::new();
    for row in rows {
        let label = row.label();
        let index = match lines.iter().position(|(known, _)| *known == label) {
            Some(index) => index,
            None => {
                lines.push((label, BTreeMap::new()));
                lines.len() - 1
            }
        };
        if let Some(value) = (panel.value)(row) {
            lines[index].1.insert(row.clients, value);
        }
    }
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
        .flat_map(|(_, points)| points.values().copied())
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
    for (index, (label, points)) in lines.iter().enumerate() {
        let colour = COLOURS[index % COLOURS.len()];
        // The last line is narrower than the others, so that, drawn over another (the
        // queue lock and the mutex both wake one waiter per release), both show.
        let width = if index + 1 == lines.len() { 2 } else { 4 };
        let points: Vec<(f64, f64)> = points
            .iter()
            .map(|(clients, value)| (*clients as f64, *value))
            .collect();
        chart
            .draw_series(LineSeries::new(points.clone(), colour.stroke_width(width)))
            .map_err(drawing)?
            .label(label.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(width))
            });
        chart
            .draw_series(
                points
                    .into_iter()
                    .map(|point| Circle::new(point, width + 2, colour.filled())),
            )
            .map_err(drawing)?;
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
