//! The evidence of a sweep as tables (`coordsim sweep`, `coordsim sweep merge`): what each
//! check judged over the seeds, the vacuity report, and the coverage marks reached.

use scenarios::evidence::Evidence;
use tabled::{Table, Tabled, settings::Style};

#[derive(Tabled)]
struct CheckRow {
    check: String,
    judged: String,
    #[tabled(rename = "seeds judging")]
    seeds: String,
    verdict: &'static str,
}

#[derive(Tabled)]
struct MarkRow {
    mark: &'static str,
    declared: &'static str,
    #[tabled(rename = "seeds reached")]
    seeds: u64,
    times: u64,
}

/// Prints the checks' and marks' tables and, if any, the evidence's problems.
pub(crate) fn print(evidence: &Evidence) {
    let checks: Vec<CheckRow> = evidence
        .checks
        .iter()
        .map(|check| CheckRow {
            check: check.check.clone(),
            judged: format!("{} {}", check.judged, check.judges),
            seeds: format!("{} of {}", check.seeds_judged, check.seeds_run),
            verdict: match (check.seeds_judged, check.relied_on) {
                (0, true) => "VACUOUS (relied on)",
                (0, false) => "vacuous",
                _ => "judged",
            },
        })
        .collect();
    println!("\nchecks:\n{}", Table::new(checks).with(Style::psql()));
    for check in &evidence.checks {
        if let Some(resolved) = &check.resolved {
            println!("{}: {resolved}", check.check);
        }
    }
    if evidence.marks.is_empty() {
        println!("marks:           none declared, none reached");
    } else {
        let marks: Vec<MarkRow> = evidence
            .marks
            .iter()
            .map(|mark| MarkRow {
                mark: mark.mark.name(),
                declared: if mark.declared { "yes" } else { "no" },
                seeds: mark.seeds,
                times: mark.reached,
            })
            .collect();
        println!("marks:\n{}", Table::new(marks).with(Style::psql()));
    }
    for problem in evidence.problems() {
        println!("NO EVIDENCE: {problem}");
    }
}
