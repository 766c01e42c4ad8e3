//! Every probe of a store against the model: the agreement tally and each disagreement's diff.
//! Used by `tests/probes.rs` and by `coordsim conformance`.

use crate::{PROBE_SEED, run};
use probe_format::{Agreement, Probe, ProbeError, Store, diff};
use std::path::{Path, PathBuf};

/// The folder the committed probes live in (`probes/`, one folder per store).
pub fn probes_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("probes")
}

/// The probe files of `store` under `dir`, sorted by name.
pub fn probe_files(dir: &Path, store: Store) -> Result<Vec<PathBuf>, ProbeError> {
    let folder = dir.join(store.name());
    let entries = std::fs::read_dir(&folder).map_err(|e| ProbeError {
        file: folder.display().to_string(),
        line: 0,
        field: "folder".into(),
        expected: format!("a readable folder of .probe files ({e})"),
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "probe"))
        .collect();
    files.sort();
    Ok(files)
}

/// Counts over one store's probes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Probe files.
    pub probes: usize,
    /// Steps in them.
    pub steps: usize,
    /// Steps the model answers as the real server did.
    pub agree: usize,
    /// Steps the model answers as their declared deviation says.
    pub declared: usize,
    /// Steps that disagree (or did not run).
    pub differ: usize,
}

/// One store's verdict: the tally, and each disagreement as `file: diff`.
#[derive(Clone, Debug, Default)]
pub struct Judgement {
    /// The counts.
    pub tally: Tally,
    /// One entry per step that disagrees (or probe that did not run).
    pub failures: Vec<String>,
    /// Each declared deviation: the probe, the step and its reason.
    pub deviations: Vec<String>,
}

/// Runs every probe of `store` under `dir` against the model with `seed`.
pub fn judge(dir: &Path, store: Store, seed: u64) -> Result<Judgement, ProbeError> {
    let mut judgement = Judgement::default();
    for file in probe_files(dir, store)? {
        let probe = Probe::load(&file)?;
        let tally = &mut judgement.tally;
        tally.probes += 1;
        tally.steps += probe.steps.len();
        for step in &probe.steps {
            if let Some(deviation) = &step.deviation {
                judgement.deviations.push(format!(
                    "{} (line {}: {}): {}",
                    probe.name, step.line, step.text, deviation.reason
                ));
            }
        }
        let answers = match run(&probe, seed) {
            Ok(answers) => answers,
            Err(error) => {
                tally.differ += probe.steps.len();
                judgement
                    .failures
                    .push(format!("{}: {error}", file.display()));
                continue;
            }
        };
        for (step, answer) in probe.steps.iter().zip(&answers) {
            match step.compare(answer) {
                Agreement::Agrees => tally.agree += 1,
                Agreement::Declared => tally.declared += 1,
                Agreement::Differs { expected } => {
                    tally.differ += 1;
                    judgement.failures.push(format!(
                        "{}:\n{}",
                        file.display(),
                        diff(step, &expected, answer)
                    ));
                }
            }
        }
    }
    Ok(judgement)
}

/// [`judge`] on the committed probes with [`PROBE_SEED`].
pub fn judge_committed(store: Store) -> Result<Judgement, ProbeError> {
    judge(&probes_dir(), store, PROBE_SEED)
}
