//! `coordsim conformance`: the models against the answers real ZooKeeper and etcd gave to the
//! conformance probes (`models/conformance/`): the agreement table, each declared deviation
//! with its reason, and each disagreement as a diff of its step.

use crate::cli::CliError;
use clap::{Args, ValueEnum};
use conformance::{Judgement, judge, probes_dir};
use probe_format::Store;
use std::{path::PathBuf, process::ExitCode};
use tabled::{Table, Tabled, settings::Style};

#[derive(Args, Debug)]
pub struct ConformanceArgs {
    /// Only this store's probes.
    #[arg(long, value_enum)]
    store: Option<StoreName>,
    /// The probes folder (with `zk/` and `etcd/` in it); the committed probes by default.
    #[arg(long, value_name = "DIR")]
    probes: Option<PathBuf>,
    /// The seed of the worlds the probes run in.
    #[arg(long, default_value_t = conformance::PROBE_SEED)]
    seed: u64,
    /// Also list every declared deviation with its reason.
    #[arg(long)]
    deviations: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum StoreName {
    Zk,
    Etcd,
}

#[derive(Tabled)]
struct Row {
    store: &'static str,
    probes: usize,
    steps: usize,
    agree: usize,
    #[tabled(rename = "declared deviations")]
    declared: usize,
    differ: usize,
}

/// Exit 0 when every step agrees or declares its deviation, 1 when one differs, 2 on a
/// malformed probe file (one line naming the file, the probe and the field).
pub fn run(args: ConformanceArgs) -> Result<ExitCode, CliError> {
    let dir = args.probes.unwrap_or_else(probes_dir);
    let stores = match args.store {
        Some(StoreName::Zk) => vec![Store::Zk],
        Some(StoreName::Etcd) => vec![Store::Etcd],
        None => vec![Store::Zk, Store::Etcd],
    };
    let mut judged: Vec<(Store, Judgement)> = Vec::new();
    for store in stores {
        let judgement = judge(&dir, store, args.seed)
            .map_err(|error| CliError::bad_input(error.to_string()))?;
        // No probes judged nothing: not a green.
        if judgement.tally.probes == 0 {
            return Err(CliError::bad_input(format!(
                "no .probe files in {}",
                dir.join(store.name()).display()
            )));
        }
        judged.push((store, judgement));
    }
    let rows: Vec<Row> = judged
        .iter()
        .map(|(store, judgement)| Row {
            store: match store {
                Store::Zk => "ZooKeeper 3.8",
                Store::Etcd => "etcd 3.4",
            },
            probes: judgement.tally.probes,
            steps: judgement.tally.steps,
            agree: judgement.tally.agree,
            declared: judgement.tally.declared,
            differ: judgement.tally.differ,
        })
        .collect();
    println!("{}", Table::new(rows).with(Style::markdown()));
    if args.deviations {
        for (store, judgement) in &judged {
            println!("\n{} declared deviations:", store.name());
            for deviation in &judgement.deviations {
                println!("- {deviation}");
            }
        }
    }
    let failures: Vec<&String> = judged.iter().flat_map(|(_, j)| &j.failures).collect();
    for failure in &failures {
        println!("\n{}", failure.trim_end());
    }
    Ok(if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
