//! `coordsim run`: one run of a scenario (a catalogue name or a TOML/JSON file) with a seed,
//! through the run driver: every option, the plan it followed, the faults that fired, the
//! checks' verdicts, the metrics and the history digest.

use crate::cli::{
    CliError, Outputs, VariantArgs, exit_code, load_scenario, outcome_json, read_plan,
    violations_left_out,
};
use clap::Args;
use scenarios::{
    Failure, Outcome, ReplayCommand, Scenario, VIOLATIONS_SHOWN_PER_CHECK, driver, scenario::Store,
};
use sim::{Seed, fault::FaultKind};
use std::{path::PathBuf, process::ExitCode};
use tabled::{builder::Builder, settings::Style};

#[derive(Args, Debug)]
#[command(after_help = "\
Exit codes: 0 clean, 1 safety violation, 2 bad input, 3 liveness failure, 4 a model \
panicked, 5 the run reached its time limit. With --store zab,raft, the worse of the two \
runs' (safety, then crash, liveness, time limit, clean).

Examples:
  coordsim run --scenario raft_leader_killer --seed 7 --plan-out plan.json
  coordsim run --scenario raft_leader_killer --seed 7 --plan plan.json   # same history digest
  coordsim run --scenario my-scenario.toml --seed 0x2a --json
  coordsim run --scenario zk_queue_lock_expiry --seed 3 --bug recipe.no_fencing
  coordsim run --scenario zk_discovery_faults --seed 1 --store raft
  coordsim run --scenario etcd_election_faults --seed 2 --store zab,raft   # side by side")]
pub struct RunArgs {
    /// A catalogue scenario's name, or a scenario file (.toml or .json).
    #[arg(long, value_name = "NAME|FILE")]
    scenario: String,
    /// The seed: decimal or 0x hex.
    #[arg(long, default_value = "0", env = sim::env::SEED)]
    seed: Seed,
    /// Follow this JSON fault plan instead of the scenario's fault source.
    #[arg(long, value_name = "FILE")]
    plan: Option<PathBuf>,
    /// Write the plan the run followed here (JSON), to replay it with --plan.
    #[arg(long, value_name = "FILE")]
    plan_out: Option<PathBuf>,
    /// Write the history (JSON lines) here.
    #[arg(long, value_name = "FILE")]
    history_out: Option<PathBuf>,
    /// Print the outcome as JSON instead of text (with two stores, an object with one
    /// outcome per store).
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    variant: VariantArgs,
}

pub fn run(args: RunArgs) -> Result<ExitCode, CliError> {
    let loaded = load_scenario(&args.scenario)?;
    let bugs = args.variant.known_bugs()?;
    let plan = args.plan.as_deref().map(read_plan).transpose()?;
    let stores = args.variant.stores();
    let varied = |store: Option<Store>| -> Result<Scenario, CliError> {
        let mut scenario = VariantArgs::apply(&loaded, store, &bugs)?;
        if let (Some(plan), Some(path)) = (&plan, &args.plan) {
            scenario = scenario.with_plan(plan.clone());
            scenario
                .validate()
                .map_err(|error| CliError::bad_input(format!("{}: {error}", path.display())))?;
        }
        Ok(scenario)
    };
    let replay = |store: Option<Store>| {
        let mut command = args
            .variant
            .add_flags(ReplayCommand::run(&args.scenario), store);
        if let Some(path) = &args.plan {
            command = command.option("--plan", path.display());
        }
        command.seed(args.seed)
    };
    if let [first, second] = stores[..] {
        if args.plan_out.is_some() || args.history_out.is_some() {
            return Err(CliError::bad_input(
                "--plan-out and --history-out take one store (expected --store zab or --store raft with them)",
            ));
        }
        let scenarios = [varied(Some(first))?, varied(Some(second))?];
        return Ok(side_by_side(
            &scenarios,
            args.seed,
            &[replay(Some(first)), replay(Some(second))],
            args.json,
        ));
    }
    let store = stores.first().copied();
    crate::cli::execute(
        &varied(store)?,
        args.seed,
        &replay(store),
        &Outputs {
            plan: args.plan_out.as_deref(),
            history: args.history_out.as_deref(),
            json: args.json,
        },
    )
}

/// The same scenario on two stores with one seed (and so one plan: the plan is generated
/// from the seed and the world, which the stores share), printed side by side; the exit
/// code is the worse run's.
fn side_by_side(
    scenarios: &[Scenario; 2],
    seed: Seed,
    replays: &[ReplayCommand; 2],
    json: bool,
) -> ExitCode {
    let outcomes = [
        driver::run_replayed_by(&scenarios[0], seed, &replays[0].to_string()),
        driver::run_replayed_by(&scenarios[1], seed, &replays[1].to_string()),
    ];
    let stores = [
        scenarios[0].store.to_string(),
        scenarios[1].store.to_string(),
    ];
    if json {
        let object: serde_json::Map<String, serde_json::Value> = stores
            .iter()
            .zip(&outcomes)
            .map(|(store, outcome)| (store.clone(), outcome_json(outcome)))
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&object).expect("outcomes serialize")
        );
    } else {
        for scenario in scenarios {
            println!("scenario ({}): {scenario}", scenario.store);
        }
        let mut table = Builder::default();
        table.push_record(["", stores[0].as_str(), stores[1].as_str()]);
        let mut row = |name: &str, value: &dyn Fn(&Outcome) -> String| {
            table.push_record([name.to_string(), value(&outcomes[0]), value(&outcomes[1])]);
        };
        row("verdict", &|o| match &o.failure {
            None => "clean".into(),
            Some(failure) => format!("FAILED, {}", failure.kind()),
        });
        row("scenario digest", &|o| o.scenario_digest.to_string());
        row("history digest", &|o| {
            o.history_digest
                .map_or_else(|| "none (crashed)".into(), |digest| digest.to_string())
        });
        let same_plan = outcomes[0].fault_plan == outcomes[1].fault_plan;
        row("fault plan", &|o| {
            format!(
                "{} faults{}",
                o.fault_plan.faults.len(),
                if same_plan {
                    ", the same"
                } else {
                    ", DIFFERENT"
                }
            )
        });
        for kind in FaultKind::FAULTS {
            if outcomes.iter().any(|o| o.fault_counts.fired(kind) > 0) {
                row(&format!("fired: {}", kind.name()), &|o| {
                    o.fault_counts.fired(kind).to_string()
                });
            }
        }
        row("operations", &|o| o.metrics.operations.to_string());
        row("acknowledged", &|o| o.metrics.acknowledged.to_string());
        row("failed", &|o| o.metrics.failed.to_string());
        row("unknown", &|o| o.metrics.unknown.to_string());
        row(
            "linearizability check: unknown applied / not / both ways",
            &|o| {
                let resolved = o.checks.iter().find_map(|tally| tally.resolved);
                resolved.map_or_else(
                    || "not resolved".into(),
                    |r| format!("{} / {} / {}", r.took_effect, r.did_not, r.ambiguous),
                )
            },
        );
        row("server leaders elected", &|o| {
            o.metrics.leaders_elected.to_string()
        });
        if outcomes
            .iter()
            .any(|o| o.metrics.snapshots_taken + o.metrics.snapshots_installed > 0)
        {
            row("snapshots taken", &|o| {
                o.metrics.snapshots_taken.to_string()
            });
            row("snapshots installed", &|o| {
                o.metrics.snapshots_installed.to_string()
            });
        }
        row("history records", &|o| o.metrics.records.to_string());
        row("ended at (ms)", &|o| o.metrics.ended_at_ms.to_string());
        row("violations", &|o| {
            let mut checks: Vec<&str> = Vec::new();
            for violation in &o.violations {
                if !checks.contains(&violation.check.as_str()) {
                    checks.push(&violation.check);
                }
            }
            if checks.is_empty() {
                "none".into()
            } else {
                format!("{}: {}", o.violations.len(), checks.join(", "))
            }
        });
        let mut table = table.build();
        table.with(Style::sharp());
        println!("seed {seed} ({})\n{table}", seed.value());
        for ((store, outcome), replay) in stores.iter().zip(&outcomes).zip(replays) {
            if let Some(failure) = &outcome.failure {
                println!("{store}: {failure}");
            }
            for (check, group) in outcome.violations_by_check() {
                println!("{store}: {check}: {} violations", group.len());
                for violation in group.iter().take(VIOLATIONS_SHOWN_PER_CHECK) {
                    println!("{store}:   {violation}");
                }
                if group.len() > VIOLATIONS_SHOWN_PER_CHECK {
                    println!(
                        "{store}:   … and {} more",
                        group.len() - VIOLATIONS_SHOWN_PER_CHECK
                    );
                }
            }
            if let Some(left_out) = violations_left_out(outcome) {
                println!("{store}: {left_out}");
            }
            println!("{store} replays with: {replay}");
        }
    }
    let worst = outcomes
        .iter()
        .max_by_key(|outcome| severity(outcome))
        .expect("two outcomes");
    exit_code(worst)
}

/// How bad a run's end is, for the worse of two: safety, then crash, liveness, time limit,
/// clean.
fn severity(outcome: &Outcome) -> u8 {
    match outcome.failure {
        None => 0,
        Some(Failure::TimeLimit { .. }) => 1,
        Some(Failure::Liveness { .. }) => 2,
        Some(Failure::Crash { .. }) => 3,
        Some(Failure::Safety) => 4,
    }
}
