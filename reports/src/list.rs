//! `coordsim list`: what there is to run and judge — the catalogue's scenarios, the
//! known-bug variants (with the known-bug table's row where a variant has one), the checks
//! and the fault kinds — as text tables or one JSON object.

use crate::cli::CliError;
use clap::Args;
use scenarios::suggest;
use scenarios::{KnownBug, catalogue, known_bug_table, scenario::Store};
use serde::Serialize;
use sim::fault::FaultKind;
use std::{io::Write, process::ExitCode};
use tabled::{
    Table, Tabled,
    settings::{Style, Width, object::Columns},
};

#[derive(Args, Debug)]
#[command(after_help = "\
The scenarios are grouped by store, then by workload (the recipe a scenario exercises). A \
FILTER keeps what contains it (case aside): scenarios by name, store or workload; variants \
by name or scenario; checks and fault kinds by name. A FILTER that keeps nothing is bad \
input, naming the nearest scenarios.

Examples:
  coordsim list
  coordsim list lock
  coordsim list --json | jq '.known_bugs[] | select(.scenario != null)'")]
pub struct ListArgs {
    /// Keep only what contains this (`lock`, `raft`, `zk_queue`).
    filter: Option<String>,
    /// Print one JSON object (`scenarios`, `known_bugs`, `checks`, `fault_kinds`) instead
    /// of tables.
    #[arg(long)]
    json: bool,
}

/// A catalogue scenario.
#[derive(Serialize, Tabled)]
struct ScenarioRow {
    name: String,
    store: String,
    workload: &'static str,
    description: String,
}

/// A scenario in the text listing, its workload named on the first row of its group.
#[derive(Tabled)]
struct GroupedScenarioRow<'a> {
    workload: &'static str,
    name: &'a str,
    description: &'a str,
}

/// A known-bug variant and, if the known-bug table has it, where it shows itself.
#[derive(Serialize, Tabled)]
struct KnownBugRow {
    variant: &'static str,
    /// The stores it runs on.
    #[tabled(display = "stores")]
    stores: Vec<String>,
    #[tabled(display = "or_dash")]
    scenario: Option<&'static str>,
    #[tabled(display = "or_dash")]
    check: Option<&'static str>,
    /// The known-bug table's seed bound.
    #[tabled(display = "or_dash")]
    seeds: Option<u64>,
    #[tabled(display = "or_dash")]
    source: Option<&'static str>,
}

/// A check.
#[derive(Serialize, Tabled)]
struct CheckRow {
    name: &'static str,
    property: &'static str,
}

/// A fault kind.
#[derive(Serialize, Tabled)]
struct FaultKindRow {
    name: &'static str,
    description: &'static str,
}

/// Everything `list` prints.
#[derive(Serialize)]
struct Listing {
    scenarios: Vec<ScenarioRow>,
    known_bugs: Vec<KnownBugRow>,
    checks: Vec<CheckRow>,
    fault_kinds: Vec<FaultKindRow>,
}

fn stores(stores: &[String]) -> String {
    stores.join(", ")
}

fn or_dash<T: std::fmt::Display>(value: &Option<T>) -> String {
    value
        .as_ref()
        .map_or_else(|| "-".to_string(), ToString::to_string)
}

/// Everything there is to list.
fn listing() -> Listing {
    let scenarios = catalogue::all()
        .into_iter()
        .map(|scenario| ScenarioRow {
            store: scenario.store.to_string(),
            workload: scenario.workload.kind(),
            name: scenario.name,
            description: scenario.description,
        })
        .collect();
    let table = known_bug_table();
    let known_bugs = KnownBug::all()
        .map(|bug| {
            let case = table.iter().find(|case| case.bug == bug);
            KnownBugRow {
                variant: bug.name(),
                stores: [Store::Zab, Store::Raft]
                    .into_iter()
                    .filter(|store| bug.runs_on(*store))
                    .map(|store| store.to_string())
                    .collect(),
                scenario: case.map(|case| case.scenario),
                check: case.map(|case| case.check),
                seeds: case.map(|case| case.seeds),
                source: case.map(|case| case.source),
            }
        })
        .collect();
    let checks = checks::all()
        .map(|check| CheckRow {
            name: check.name,
            property: check.property,
        })
        .collect();
    let fault_kinds = FaultKind::ALL
        .into_iter()
        .map(|kind| FaultKindRow {
            name: kind.name(),
            description: kind.describe(),
        })
        .collect();
    Listing {
        scenarios,
        known_bugs,
        checks,
        fault_kinds,
    }
}

/// Columns of free text are wrapped to this many characters.
const TEXT_WIDTH: usize = 70;

pub fn run(args: ListArgs) -> Result<ExitCode, CliError> {
    let mut listing = listing();
    if let Some(filter) = &args.filter {
        listing = filtered(listing, filter)?;
    }
    let text = if args.json {
        serde_json::to_string_pretty(&listing).expect("the listing serializes") + "\n"
    } else {
        text(&listing)
    };
    // A reader that stops early (`coordsim list | head`) is not an error.
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    Ok(ExitCode::SUCCESS)
}

/// The rows of `listing` that contain `filter`; none at all is bad input.
fn filtered(listing: Listing, filter: &str) -> Result<Listing, CliError> {
    let wanted = filter.to_lowercase();
    let has = |text: &str| text.to_lowercase().contains(&wanted);
    let names: Vec<String> = listing
        .scenarios
        .iter()
        .map(|row| row.name.clone())
        .collect();
    let kept = Listing {
        scenarios: (listing.scenarios.into_iter())
            .filter(|row| has(&row.name) || has(&row.store) || has(row.workload))
            .collect(),
        known_bugs: (listing.known_bugs.into_iter())
            .filter(|row| has(row.variant) || row.scenario.is_some_and(has))
            .collect(),
        checks: (listing.checks.into_iter())
            .filter(|row| has(row.name))
            .collect(),
        fault_kinds: (listing.fault_kinds.into_iter())
            .filter(|row| has(row.name))
            .collect(),
    };
    let empty = kept.scenarios.is_empty()
        && kept.known_bugs.is_empty()
        && kept.checks.is_empty()
        && kept.fault_kinds.is_empty();
    if empty {
        return Err(CliError::bad_input(format!(
            "nothing listed contains `{filter}` ({})",
            suggest::expected(filter, names.iter().map(String::as_str), "`coordsim list`")
        )));
    }
    Ok(kept)
}

/// The listing as text: the scenarios grouped by store and workload, then a table for each
/// of the other kinds (a kind the filter emptied is left out).
fn text(listing: &Listing) -> String {
    let section = |title: &str, count: usize, table: Table, text_columns: &[usize]| {
        let mut table = table;
        table.with(Style::sharp());
        for &column in text_columns {
            table.modify(
                Columns::one(column),
                Width::wrap(TEXT_WIDTH).keep_words(true),
            );
        }
        format!("{title} ({count})\n{table}\n\n")
    };
    let mut text = String::new();
    for store in [Store::Zab, Store::Raft, Store::Ledger] {
        let mut rows: Vec<&ScenarioRow> = (listing.scenarios.iter())
            .filter(|row| row.store == store.to_string())
            .collect();
        if rows.is_empty() {
            continue;
        }
        // By workload, each workload's scenarios in catalogue order.
        rows.sort_by_key(|row| row.workload);
        let grouped: Vec<GroupedScenarioRow> = rows
            .iter()
            .enumerate()
            .map(|(index, row)| GroupedScenarioRow {
                workload: if index > 0 && rows[index - 1].workload == row.workload {
                    ""
                } else {
                    row.workload
                },
                name: &row.name,
                description: &row.description,
            })
            .collect();
        text.push_str(&section(
            &format!("Scenarios on {store}, by workload (coordsim run --scenario NAME)"),
            rows.len(),
            Table::new(&grouped),
            &[2],
        ));
    }
    let sections = [
        (!listing.known_bugs.is_empty()).then(|| {
            section(
                "Known-bug variants (--bug VARIANT; scenario, check and seeds from the \
                 known-bug table)",
                listing.known_bugs.len(),
                Table::new(&listing.known_bugs),
                &[5],
            )
        }),
        (!listing.checks.is_empty()).then(|| {
            section(
                "Checks (checks = [...] in a scenario)",
                listing.checks.len(),
                Table::new(&listing.checks),
                &[1],
            )
        }),
        (!listing.fault_kinds.is_empty()).then(|| {
            section(
                "Fault kinds (plans and swarm kinds)",
                listing.fault_kinds.len(),
                Table::new(&listing.fault_kinds),
                &[1],
            )
        }),
    ];
    text.extend(sections.into_iter().flatten());
    text
}
