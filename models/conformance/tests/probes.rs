//! Every conformance probe against the models: each step's answer must be the real server's
//! (recorded in the probe file) or the probe's declared deviation. A disagreement fails with
//! the step's diff; the agreement table is printed either way (`--nocapture`).

use conformance::{PROBE_SEED, run};
use probe_format::{Agreement, Probe, Store, diff};
use std::path::{Path, PathBuf};

fn probe_files(store: Store) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("probes")
        .join(store.name());
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "probe"))
        .collect();
    files.sort();
    files
}

/// Counts over one store's probes.
#[derive(Default)]
struct Tally {
    probes: usize,
    steps: usize,
    agree: usize,
    declared: usize,
    differ: usize,
}

fn judge(store: Store) -> (Tally, Vec<String>) {
    let mut tally = Tally::default();
    let mut failures = Vec::new();
    for file in probe_files(store) {
        let probe = Probe::load(&file).unwrap_or_else(|e| panic!("{e}"));
        tally.probes += 1;
        tally.steps += probe.steps.len();
        let answers = match run(&probe, PROBE_SEED) {
            Ok(answers) => answers,
            Err(error) => {
                tally.differ += probe.steps.len();
                failures.push(format!("{}: {error}", file.display()));
                continue;
            }
        };
        for (step, answer) in probe.steps.iter().zip(&answers) {
            match step.compare(answer) {
                Agreement::Agrees => tally.agree += 1,
                Agreement::Declared => tally.declared += 1,
                Agreement::Differs { expected } => {
                    tally.differ += 1;
                    failures.push(format!(
                        "{}:\n{}",
                        file.display(),
                        diff(step, &expected, answer)
                    ));
                }
            }
        }
    }
    (tally, failures)
}

fn check(store: Store, minimum_probes: usize) {
    let (tally, failures) = judge(store);
    println!(
        "{}: {} probes, {} steps: {} agree, {} declared deviations, {} differ",
        store.name(),
        tally.probes,
        tally.steps,
        tally.agree,
        tally.declared,
        tally.differ
    );
    assert!(
        tally.probes >= minimum_probes,
        "{} has {} probes; the suite wants at least {minimum_probes}",
        store.name(),
        tally.probes
    );
    assert!(
        failures.is_empty(),
        "{} of {} {} steps disagree with the real server:\n{}",
        tally.differ,
        tally.steps,
        store.name(),
        failures.join("\n")
    );
}

#[test]
fn zookeeper_probes_agree_with_the_real_server() {
    check(Store::Zk, 1);
}

#[test]
fn etcd_probes_agree_with_the_real_server() {
    check(Store::Etcd, 1);
}

/// Prints the model's answers to the probe file named by `PROBE` (for writing probes).
#[test]
#[ignore]
fn print_model_answers() {
    let Ok(path) = std::env::var("PROBE") else {
        return;
    };
    let probe = Probe::load(Path::new(&path)).unwrap_or_else(|e| panic!("{e}"));
    let answers = run(&probe, PROBE_SEED).unwrap_or_else(|e| panic!("{e}"));
    for (step, answer) in probe.steps.iter().zip(answers) {
        println!("{}\n{}\n", step.text, answer.join("\n"));
    }
}
