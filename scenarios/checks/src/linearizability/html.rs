//! The evidence of a violation as a self-contained HTML page: one lane per client,
//! operations as bars from invocation to return, the longest linearizable prefix numbered
//! in linearization order (green) and the operation that cannot be placed after it (red),
//! as Porcupine's visualization offers.
//!
//! The page opens with the drawing scrolled to the operation that cannot be placed, which
//! is outlined.
//!
//! Time is drawn by rank (each distinct call or return instant gets the next column), so
//! short operations stay readable next to long ones; an axis above the lanes gives every
//! other column's instant, and the exact times are in each bar's tooltip and in the text
//! below the drawing. A bar's label is cut to the bar's width (with `…`; the tooltip has it
//! whole), so labels never run over each other.

use super::{Evidence, Report, Verdict};
use std::{collections::BTreeMap, fmt::Write};

const LANE_HEIGHT: usize = 34;
const COLUMN_WIDTH: usize = 60;
const LEFT_MARGIN: usize = 140;
const TOP_MARGIN: usize = 48;
/// The axis's baseline, above the first lane.
const AXIS_Y: usize = 40;
/// Columns between two labelled instants on the axis (a label is up to ~11 characters).
const AXIS_LABEL_EVERY: usize = 2;
/// The width of one character of the 11 px monospace font, roughly, pixels.
const CHAR_WIDTH: f64 = 6.7;

fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            other => escaped.push(other),
        }
    }
    escaped
}

/// The page for a check's report (the drawing only when there is a violation).
pub fn render(title: &str, report: &Report) -> String {
    let mut page = String::new();
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{}</title>\n<style>\n\
         body {{ font-family: sans-serif; margin: 1.5em; }}\n\
         pre {{ background: #f6f6f6; padding: 1em; overflow-x: auto; }}\n\
         .legend span {{ display: inline-block; padding: 0 .6em; margin-right: .6em; border-radius: 3px; }}\n\
         </style></head><body>\n<h1>{}</h1>\n",
        escape(title),
        escape(title)
    );
    if let Verdict::Violation(evidence) = &report.verdict {
        page.push_str(
            "<p class=\"legend\"><span style=\"background:#8fd19e\">linearized (in order)</span>\
             <span style=\"background:#f08080\">cannot be placed next</span>\
             <span style=\"background:#d0d0d0\">not yet linearized</span>\
             <span style=\"border:1px dashed #888\">outcome unknown</span></p>\n",
        );
        // The drawing scrolls on its own, and the page opens with it scrolled to the
        // operation that cannot be placed (often far to the right of time zero).
        page.push_str(&svg(evidence));
        page.push_str(
            "<script>\nconst failing = document.getElementById(\"unplaceable\");\n\
             if (failing) failing.scrollIntoView({ block: \"nearest\", inline: \"center\" });\n</script>\n",
        );
    }
    let _ = write!(
        page,
        "<pre>{}</pre>\n</body></html>\n",
        escape(&report.to_string())
    );
    page
}

/// The drawing of one piece of evidence, as inline SVG: the lane names in a column of their
/// own, the operations beside it in a box that scrolls sideways (`#evidence`).
fn svg(evidence: &Evidence) -> String {
    let mut lanes: Vec<&str> = Vec::new();
    for operation in &evidence.operations {
        if !lanes.contains(&operation.lane.as_str()) {
            lanes.push(&operation.lane);
        }
    }
    // Unknown returns go one column past the last instant.
    let instants = instant_columns(evidence);
    let open_end = instants.len();
    let width = LEFT_MARGIN + (open_end + 1) * COLUMN_WIDTH + 20;
    let height = TOP_MARGIN + lanes.len() * LANE_HEIGHT + 10;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        "<div style=\"display: flex\"><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{LEFT_MARGIN}\" \
         height=\"{height}\" font-family=\"monospace\" font-size=\"11\" style=\"flex: none\">"
    );
    let _ = writeln!(
        svg,
        "<text x=\"4\" y=\"16\" font-weight=\"bold\">{}</text>\
         <text x=\"4\" y=\"{}\" fill=\"#555\">time (by instant)</text>",
        escape(&evidence.partition),
        AXIS_Y - 4
    );
    for (row, lane) in lanes.iter().enumerate() {
        let y = TOP_MARGIN + row * LANE_HEIGHT;
        let _ = writeln!(
            svg,
            "<text x=\"4\" y=\"{}\">{}</text>",
            y + 18,
            escape(lane)
        );
    }
    let drawing_width = width - LEFT_MARGIN;
    let _ = writeln!(
        svg,
        "</svg>\n<div id=\"evidence\" style=\"overflow-x: auto\">\
         <svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{drawing_width}\" height=\"{height}\" \
         viewBox=\"{LEFT_MARGIN} 0 {drawing_width} {height}\" font-family=\"monospace\" font-size=\"11\">"
    );
    // The axis: a tick at every instant, its time at every other one.
    let _ = writeln!(
        svg,
        "<line x1=\"{LEFT_MARGIN}\" y1=\"{AXIS_Y}\" x2=\"{}\" y2=\"{AXIS_Y}\" stroke=\"#999\"/>",
        width - 10
    );
    for (&at, &column) in &instants {
        let x = LEFT_MARGIN + column * COLUMN_WIDTH;
        let labelled = column % AXIS_LABEL_EVERY == 0;
        let _ = writeln!(
            svg,
            "<line x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{AXIS_Y}\" stroke=\"#999\"/>",
            AXIS_Y - if labelled { 6 } else { 3 }
        );
        if labelled {
            let _ = writeln!(
                svg,
                "<text x=\"{}\" y=\"{}\" fill=\"#555\">{}</text>",
                x + 2,
                AXIS_Y - 8,
                escape(&evidence.time_unit.format(at))
            );
        }
    }
    for row in 0..lanes.len() {
        let y = TOP_MARGIN + row * LANE_HEIGHT + LANE_HEIGHT - 2;
        let _ = writeln!(
            svg,
            "<line x1=\"{LEFT_MARGIN}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"#eee\"/>",
            width - 10
        );
    }
    draw_operations(&mut svg, evidence, &lanes, &instants);
    svg.push_str("</svg></div></div>\n");
    svg
}

/// Every distinct instant of `evidence`'s operations, by its rank: its column.
fn instant_columns(evidence: &Evidence) -> BTreeMap<u64, usize> {
    let mut instants: BTreeMap<u64, usize> = BTreeMap::new();
    for operation in &evidence.operations {
        instants.insert(operation.invoked_at, 0);
        if let Some(at) = operation.returned_at {
            instants.insert(at, 0);
        }
    }
    for (rank, column) in instants.values_mut().enumerate() {
        *column = rank;
    }
    instants
}

/// One bar per operation on its lane, from its invocation's column to its return's (or
/// past the last instant): numbered in the longest linearizable prefix, red where it
/// could not be placed, dashed if it never returned.
fn draw_operations(
    svg: &mut String,
    evidence: &Evidence,
    lanes: &[&str],
    instants: &BTreeMap<u64, usize>,
) {
    let open_end = instants.len();
    let order: BTreeMap<usize, usize> = evidence
        .longest_prefix
        .iter()
        .enumerate()
        .map(|(step, &index)| (index, step + 1))
        .collect();
    for (index, operation) in evidence.operations.iter().enumerate() {
        let row = lanes
            .iter()
            .position(|lane| *lane == operation.lane)
            .expect("every lane was collected");
        let start = instants[&operation.invoked_at];
        let end = operation.returned_at.map_or(open_end, |at| instants[&at]);
        let x = LEFT_MARGIN + start * COLUMN_WIDTH;
        let bar_width = ((end - start) * COLUMN_WIDTH).max(COLUMN_WIDTH / 2);
        let y = TOP_MARGIN + row * LANE_HEIGHT + 4;
        let unplaceable = evidence.unplaceable == Some(index);
        let (fill, label_prefix) = if unplaceable {
            ("#f08080", "✗ ".to_string())
        } else if let Some(step) = order.get(&index) {
            ("#8fd19e", format!("{step}. "))
        } else {
            ("#d0d0d0", String::new())
        };
        let dash = if operation.returned_at.is_none() {
            " stroke-dasharray=\"4 3\" fill-opacity=\"0.5\""
        } else {
            ""
        };
        let (id, stroke) = if unplaceable {
            (" id=\"unplaceable\"", "stroke=\"#c00\" stroke-width=\"3\"")
        } else {
            ("", "stroke=\"#555\"")
        };
        let label = fit(
            &format!("{label_prefix}{}", operation.description),
            bar_width,
        );
        let _ = writeln!(
            svg,
            "<g{id}><title>{}</title><rect x=\"{x}\" y=\"{y}\" width=\"{bar_width}\" height=\"{}\" rx=\"3\" \
             fill=\"{fill}\" {stroke}{dash}/><text x=\"{}\" y=\"{}\">{}</text></g>",
            escape(&evidence.describe(index)),
            LANE_HEIGHT - 10,
            x + 3,
            y + 15,
            escape(&label)
        );
    }
}

/// `text` cut to what fits in a bar `bar_width` pixels wide, with `…` where it was cut.
fn fit(text: &str, bar_width: usize) -> String {
    let room = ((bar_width.saturating_sub(6)) as f64 / CHAR_WIDTH) as usize;
    if text.chars().count() <= room {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(room.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::fit;

    #[test]
    fn a_label_is_cut_to_its_bar() {
        assert_eq!(fit("get(x) -> 1", 200), "get(x) -> 1");
        assert_eq!(
            fit("put(key/1, p0-25-47342) -> revision 63", 60),
            "put(key…"
        );
        assert!(fit("anything", 0).chars().count() <= 1);
    }
}
