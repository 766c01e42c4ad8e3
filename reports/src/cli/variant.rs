//! The arguments that vary a scenario: another store, known-bug variants switched on
//! (`run`, `sweep`, `replay`), and the store choice `compare-locks` shares.

use super::CliError;
use clap::{Args, ValueEnum};
use scenarios::{KnownBug, ReplayCommand, Scenario, scenario::Store};

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

    /// `command` with the flags that reproduce `store` and the bugs (` --store raft --bug
    /// x`), none if none were given.
    pub fn add_flags(&self, command: ReplayCommand, store: Option<Store>) -> ReplayCommand {
        let mut command = command;
        if let Some(store) = store {
            command = command.option("--store", store);
        }
        for bug in &self.bugs {
            command = command.option("--bug", bug);
        }
        command
    }
}
