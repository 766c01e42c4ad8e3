//! `coordsim run`: one run of a scenario (a catalogue name or a TOML/JSON file) with a seed,
//! through the run driver: every option, the plan it followed, the faults that fired, the
//! checks' verdicts, the metrics and the history digest.

use crate::CliError;
use clap::{Args, ValueEnum};
use scenarios::{Failure, KnownBug, Outcome, Scenario, catalogue, driver, scenario::Store};
use sim::{Seed, fault::FaultKind, fault::FaultPlan};
use std::{
    path::{Path, PathBuf},
    process::ExitCode,
};
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

/// How `run` and `sweep` change a scenario: another store, known bugs switched on.
#[derive(Args, Debug, Clone)]
pub struct VariantArgs {
    /// Run on this store instead of the scenario's, where its workload runs on both
    /// (discovery, the queue lock / etcd mutex, elections); `run --store zab,raft` runs
    /// both with the same seed and plan and prints them side by side.
    #[arg(long, value_name = "zab|raft|zab,raft", value_delimiter = ',')]
    pub store: Vec<StoreChoice>,
    /// Switch this known-bug variant on, besides the scenario's own (repeatable; `coordsim
    /// list` lists them).
    #[arg(long = "bug", value_name = "VARIANT")]
    pub bugs: Vec<String>,
}

/// A consensus store to run on (`run`, `sweep`, `replay`) or to compare the locks of
/// (`compare-locks`: the herd and queue locks on ZAB, etcd's mutex on Raft).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum StoreChoice {
    /// The ZAB store (ZooKeeper-like).
    Zab,
    /// The Raft store (etcd-like).
    Raft,
}

impl StoreChoice {
    /// The store.
    pub(crate) fn store(self) -> Store {
        match self {
            StoreChoice::Zab => Store::Zab,
            StoreChoice::Raft => Store::Raft,
        }
    }
}

impl VariantArgs {
    /// The stores asked for, each once, in the order given; empty for the scenario's own.
    pub fn stores(&self) -> Vec<Store> {
        let mut stores: Vec<Store> = Vec::new();
        for choice in &self.store {
            if !stores.contains(&choice.store()) {
                stores.push(choice.store());
            }
        }
        stores
    }

    /// The known-bug variants asked for; an unknown one is bad input naming the variants.
    pub fn known_bugs(&self) -> Result<Vec<KnownBug>, CliError> {
        self.bugs
            .iter()
            .map(|name| {
                name.parse::<KnownBug>()
                    .map_err(|error| CliError::bad_input(format!("--bug: {error}")))
            })
            .collect()
    }

    /// `scenario` on `store` (if given) with `bugs` switched on besides its own; a store its
    /// workload does not run on, or a variant that does not run on the store, is bad input.
    pub fn apply(
        scenario: &Scenario,
        store: Option<Store>,
        bugs: &[KnownBug],
    ) -> Result<Scenario, CliError> {
        let mut varied = match store {
            Some(store) => scenario
                .on_store(store)
                .map_err(|error| CliError::bad_input(format!("--store {store}: {error}")))?,
            None => scenario.clone(),
        };
        for &bug in bugs {
            if !bug.runs_on(varied.store) {
                let there: Vec<&str> = KnownBug::all()
                    .filter(|known| known.runs_on(varied.store))
                    .map(KnownBug::name)
                    .collect();
                return Err(CliError::bad_input(format!(
                    "--bug {bug}: not a variant of anything that runs on the {} store of `{}` \
                     (expected one of: {})",
                    varied.store,
                    varied.name,
                    there.join(", ")
                )));
            }
            if !varied.bugs.contains(&bug) {
                varied.bugs.push(bug);
            }
        }
        varied
            .validate()
            .map_err(|error| CliError::bad_input(error.to_string()))?;
        Ok(varied)
    }

    /// The flags that reproduce `store` and the bugs, for replay commands (` --store raft
    /// --bug x`), empty if none were given.
    pub fn flags(&self, store: Option<Store>) -> String {
        let mut flags = String::new();
        if let Some(store) = store {
            flags.push_str(&format!(" --store {store}"));
        }
        for bug in &self.bugs {
            flags.push_str(&format!(" --bug {bug}"));
        }
        flags
    }
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
        let mut command = format!(
            "cargo run --release -p coordsim -- run --scenario {}{}",
            args.scenario,
            args.variant.flags(store)
        );
        if let Some(path) = &args.plan {
            command.push_str(&format!(" --plan {}", path.display()));
        }
        command.push_str(&format!(" --seed {}", args.seed));
        command
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
    execute(
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
    replays: &[String; 2],
    json: bool,
) -> ExitCode {
    let outcomes = [
        driver::run(&scenarios[0], seed),
        driver::run(&scenarios[1], seed),
    ];
    let stores = [
        scenarios[0].store.to_string(),
        scenarios[1].store.to_string(),
    ];
    if json {
        let object: serde_json::Map<String, serde_json::Value> = stores
            .iter()
            .zip(&outcomes)
            .map(|(store, outcome)| {
                (
                    store.clone(),
                    serde_json::to_value(outcome).expect("an outcome serializes"),
                )
            })
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
        row("leaders elected", &|o| {
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
            for violation in &outcome.violations {
                println!("{store}: {violation}");
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

/// A catalogue scenario by name, or a scenario file.
pub fn load_scenario(name_or_file: &str) -> Result<Scenario, CliError> {
    if let Some(scenario) = catalogue::get(name_or_file) {
        return Ok(scenario);
    }
    let path = Path::new(name_or_file);
    if !path.exists() {
        let names: Vec<String> = catalogue::all().into_iter().map(|s| s.name).collect();
        return Err(CliError::bad_input(format!(
            "no scenario `{name_or_file}` (expected a scenario file or one of: {})",
            names.join(", ")
        )));
    }
    Scenario::load(path).map_err(|error| CliError::bad_input(error.to_string()))
}

/// A JSON fault plan from `path`.
pub fn read_plan(path: &Path) -> Result<FaultPlan, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| CliError::bad_input(format!("cannot read {}: {error}", path.display())))?;
    serde_json::from_str(&text).map_err(|error| {
        CliError::bad_input(format!(
            "{}:{}: expected a fault plan ({{\"faults\": [{{\"at_ms\": …, \"fault\": …}}]}}): {error}",
            path.display(),
            error.line()
        ))
    })
}

/// Where a run's outputs go.
pub struct Outputs<'a> {
    /// The plan followed, as JSON.
    pub plan: Option<&'a Path>,
    /// The history, as JSON lines.
    pub history: Option<&'a Path>,
    /// The outcome as JSON on stdout instead of text.
    pub json: bool,
}

/// Runs `scenario` with `seed`, prints the outcome, writes the outputs; the exit code says
/// how the run ended.
pub fn execute(
    scenario: &Scenario,
    seed: Seed,
    replay: &str,
    outputs: &Outputs<'_>,
) -> Result<ExitCode, CliError> {
    let outcome = driver::run(scenario, seed);
    report(scenario, &outcome, replay, outputs)?;
    Ok(exit_code(&outcome))
}

/// Prints `outcome` (text, or JSON if asked) with the command that replays it, and writes
/// the outputs asked for.
pub fn report(
    scenario: &Scenario,
    outcome: &Outcome,
    replay: &str,
    outputs: &Outputs<'_>,
) -> Result<(), CliError> {
    if outputs.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&outcome).expect("an outcome serializes")
        );
    } else {
        println!("scenario:        {scenario}");
        println!("{outcome}");
        println!("replay with:     {replay}");
    }
    if let Some(path) = outputs.plan {
        let json = serde_json::to_string_pretty(&outcome.fault_plan).expect("a plan serializes");
        write(path, &json)?;
        eprintln!("plan written to {}", path.display());
    }
    if let (Some(path), Some(history)) = (outputs.history, &outcome.history) {
        write(path, &history.to_json_lines())?;
        eprintln!("history written to {}", path.display());
    }
    Ok(())
}

/// Writes `text` to `path`; a failure is bad input (exit 2) naming the path.
pub fn write(path: &Path, text: &str) -> Result<(), CliError> {
    std::fs::write(path, text)
        .map_err(|error| CliError::bad_input(format!("cannot write {}: {error}", path.display())))
}

/// How a run ended, as the process's exit code: 0 clean, 1 safety, 3 liveness, 4 crash,
/// 5 time limit (2 is bad input).
pub fn exit_code(outcome: &Outcome) -> ExitCode {
    ExitCode::from(failure_code(outcome.failure.as_ref()))
}

/// The exit code of a run that ended in `failure` (`None`: clean).
pub fn failure_code(failure: Option<&Failure>) -> u8 {
    match failure {
        None => 0,
        Some(Failure::Safety) => 1,
        Some(Failure::Liveness { .. }) => 3,
        Some(Failure::Crash { .. }) => 4,
        Some(Failure::TimeLimit { .. }) => 5,
    }
}
