//! coordsim's half of the side-by-side benchmark against Porcupine
//! (`benches/porcupine/compare.sh`): every `etcd_NNN.log` in a directory (a copy of
//! Porcupine's `test_data/jepsen/`), parsed once, then checked `COORDSIM_ROUNDS` times
//! (default 1) with the default options of `coordsim check-history`. It prints each log's
//! verdict once, in the form of Porcupine's half (`etcd_000.log false`), so the script can
//! require both sides to judge every log the same way.
//!
//! Argument: the directory. Exit 2 on bad input, 1 if a verdict is unknown.

use checks::linearizability::{CheckOptions, Verdict, check, jepsen};
use std::{path::PathBuf, process::ExitCode};

fn logs(directory: &str) -> Result<Vec<PathBuf>, String> {
    let entries = std::fs::read_dir(directory).map_err(|error| format!("{directory}: {error}"))?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with("etcd_") && name.ends_with(".log"))
        })
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(format!(
            "{directory}: no etcd_NNN.log (expected Porcupine's test_data/jepsen)"
        ));
    }
    Ok(paths)
}

fn rounds() -> Result<usize, String> {
    match std::env::var("COORDSIM_ROUNDS") {
        Err(_) => Ok(1),
        Ok(text) => text
            .parse()
            .ok()
            .filter(|&rounds| rounds > 0)
            .ok_or_else(|| format!("COORDSIM_ROUNDS={text:?}: expected a positive number")),
    }
}

fn main() -> ExitCode {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let [directory] = arguments.as_slice() else {
        eprintln!("usage: jepsen_logs DIRECTORY (a copy of Porcupine's test_data/jepsen)");
        return ExitCode::from(2);
    };
    let (paths, rounds) = match (logs(directory), rounds()) {
        (Ok(paths), Ok(rounds)) => (paths, rounds),
        (Err(error), _) | (_, Err(error)) => {
            eprintln!("{error}");
            return ExitCode::from(2);
        }
    };
    // A log with no operation (etcd_095.log) is left out on both sides: an empty history
    // is bad input to `check-history`.
    let mut names = Vec::with_capacity(paths.len());
    let mut histories = Vec::with_capacity(paths.len());
    for path in &paths {
        let name = path
            .file_name()
            .and_then(|name| name.to_str())
            .unwrap_or("?");
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) => {
                eprintln!("{}: {error}", path.display());
                return ExitCode::from(2);
            }
        };
        if !text.lines().any(|line| line.contains(":invoke")) {
            println!("{name} skipped: no operations");
            continue;
        }
        match jepsen::read_etcd_log(&text) {
            Ok(parsed) => {
                names.push(name);
                histories.push(parsed);
            }
            Err(error) => {
                eprintln!("{}: {error}", path.display());
                return ExitCode::from(2);
            }
        }
    }
    let options = CheckOptions::default();
    let (mut linearizable, mut unknown) = (0, 0);
    for round in 0..rounds {
        for (name, (model, history)) in names.iter().zip(&histories) {
            let verdict = check(model, history, &options).verdict;
            if round == 0 {
                let ok = match verdict {
                    Verdict::Ok => {
                        linearizable += 1;
                        "true"
                    }
                    Verdict::Violation(_) => "false",
                    Verdict::Unknown(_) => {
                        unknown += 1;
                        "unknown"
                    }
                };
                println!("{name} {ok}");
            }
        }
    }
    println!(
        "{} logs, {linearizable} linearizable, {rounds} rounds",
        histories.len()
    );
    if unknown > 0 {
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}
