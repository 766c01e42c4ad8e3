//! A sweep's results as they stream in: [`SweepTally`] folds each run into the summary
//! (counts, faults, evidence, the first failure's exit code) and [`ResultsWriter`] writes it
//! to `--out` at once, so neither holds the runs. `coordsim sweep merge` writes its merged
//! runs through the same two, so a merge is byte-identical to the whole sweep.

use super::{SeedRange, Shard};
use crate::cli::{CliError, failure_code};
use scenarios::{Outcome, evidence::Evidence};
use serde::{Deserialize, Serialize};
use sim::{FaultCounts, Seed, coverage::Mark, digest::Digest};
use std::{
    fs::File,
    io::{BufWriter, Write},
    path::{Path, PathBuf},
    process::ExitCode,
};

/// The exit code of a sweep stopped by Ctrl-C before any seed failed (128 + SIGINT).
pub(super) const INTERRUPTED_CODE: u8 = 130;
/// Every seed ran clean, but a check the scenario relies on judged nothing in any seed, or
/// a mark it declares was reached in none.
const NO_EVIDENCE_CODE: u8 = 7;

/// What `coordsim sweep --out` writes and `coordsim sweep merge` reads and writes, but
/// `runs`: an array of `scenarios::Outcome` as it serializes (what `coordsim replay --from`
/// reads), sorted by seed, which readers take one at a time ([`super::reader`]). The file
/// lists the fields in this order except `interrupted` and `evidence`, which come after
/// `runs`: they are known only when the runs before them are written.
#[derive(Debug, Deserialize)]
pub(super) struct SweepResults {
    pub(super) scenario: String,
    pub(super) scenario_digest: Digest,
    pub(super) seeds: SeedRange,
    #[allow(dead_code)] // Read by users of the file; a merge has none.
    pub(super) shard: Option<Shard>,
    pub(super) interrupted: bool,
    /// The coverage marks the scenario declares.
    #[serde(default)]
    pub(super) declared_marks: Vec<Mark>,
    /// What the runs judged and reached (recomputed from `runs` on merge).
    #[serde(default)]
    #[allow(dead_code)] // Read by users of the file; merge recomputes it.
    pub(super) evidence: Evidence,
}

/// What is known of a sweep before its first run: the fields written ahead of `runs`.
#[derive(Serialize)]
pub(super) struct SweepHeader<'a> {
    pub(super) scenario: &'a str,
    pub(super) scenario_digest: Digest,
    pub(super) seeds: SeedRange,
    pub(super) shard: Option<Shard>,
    pub(super) declared_marks: &'a [Mark],
}

/// The summary of the runs so far, folded in one by one in seed order.
pub(super) struct SweepTally {
    runs: usize,
    fault_totals: FaultCounts,
    failures_by_kind: Vec<(&'static str, usize)>,
    failing_seeds: Vec<Seed>,
    first_failure_code: Option<u8>,
    pub(super) evidence: Evidence,
}

impl SweepTally {
    /// No runs yet, of a scenario that declares `declared_marks`.
    pub(super) fn new(declared_marks: &[Mark]) -> Self {
        Self {
            runs: 0,
            fault_totals: FaultCounts::default(),
            failures_by_kind: Vec::new(),
            failing_seeds: Vec::new(),
            first_failure_code: None,
            evidence: Evidence::declaring(declared_marks),
        }
    }

    /// Folds the next run (in seed order) in.
    pub(super) fn add(&mut self, run: &Outcome) {
        self.runs += 1;
        self.fault_totals.accumulate(&run.fault_counts);
        self.evidence.add(run);
        if let Some(failure) = &run.failure {
            match self
                .failures_by_kind
                .iter_mut()
                .find(|(kind, _)| *kind == failure.kind())
            {
                Some((_, count)) => *count += 1,
                None => self.failures_by_kind.push((failure.kind(), 1)),
            }
            self.failing_seeds.push(run.seed);
            self.first_failure_code
                .get_or_insert(failure_code(Some(failure)));
        }
    }

    /// The summary: how many seeds ran and how they ended, the faults that fired, the
    /// failing seeds. Nothing in it depends on timing, so it is the same for any number of
    /// jobs.
    pub(super) fn print(&self, planned: usize, interrupted: bool) {
        let failed: usize = self.failures_by_kind.iter().map(|(_, count)| count).sum();
        let kinds: Vec<String> = self
            .failures_by_kind
            .iter()
            .map(|(kind, count)| format!("{count} {kind}"))
            .collect();
        println!(
            "\nseeds run:       {} of {planned}{}",
            self.runs,
            if interrupted { " (interrupted)" } else { "" }
        );
        println!(
            "clean:           {}\nfailed:          {failed}{}",
            self.runs - failed,
            if kinds.is_empty() {
                String::new()
            } else {
                format!(" ({})", kinds.join(", "))
            }
        );
        if !self.failing_seeds.is_empty() {
            let failing: Vec<String> = self.failing_seeds.iter().map(Seed::to_string).collect();
            println!("failing seeds:   {}", failing.join(", "));
        }
        println!("faults fired:    {}", self.fault_totals);
        crate::evidence_table::print(&self.evidence);
    }

    /// The first failing run's exit code; 130 if Ctrl-C stopped a clean sweep; 7 if a
    /// check relied on judged nothing or a declared mark was missed; 0.
    pub(super) fn exit_code(&self, interrupted: bool) -> ExitCode {
        match self.first_failure_code {
            Some(code) => ExitCode::from(code),
            None if interrupted => ExitCode::from(INTERRUPTED_CODE),
            None if !self.evidence.problems().is_empty() => ExitCode::from(NO_EVIDENCE_CODE),
            None => ExitCode::SUCCESS,
        }
    }
}

/// Writes a sweep's results file run by run: the header, each run as it comes (one line
/// each), then `interrupted` and `evidence`.
pub(super) struct ResultsWriter {
    path: PathBuf,
    file: BufWriter<File>,
    runs_written: u64,
}

impl ResultsWriter {
    /// Creates `path` and writes the fields before `runs`.
    pub(super) fn create(path: &Path, header: &SweepHeader<'_>) -> Result<Self, CliError> {
        let file = File::create(path).map_err(|error| cannot_write(path, &error))?;
        let mut writer = Self {
            path: path.to_path_buf(),
            file: BufWriter::new(file),
            runs_written: 0,
        };
        let fields = pretty(header);
        // `{ … }` without its closing brace: `runs` and the rest follow.
        let open = fields
            .strip_suffix("\n}")
            .expect("a struct prints as an object");
        writer.put(&format!("{open},\n  \"runs\": ["))?;
        Ok(writer)
    }

    /// Writes the next run (in seed order), without its history.
    pub(super) fn add(&mut self, run: &Outcome) -> Result<(), CliError> {
        let json = serde_json::to_string(run).expect("an outcome serializes");
        let comma = if self.runs_written == 0 { "" } else { "," };
        self.runs_written += 1;
        self.put(&format!("{comma}\n    {json}"))
    }

    /// Writes the fields after `runs` and closes the file.
    pub(super) fn finish(mut self, interrupted: bool, evidence: &Evidence) -> Result<(), CliError> {
        let evidence = pretty(evidence).replace('\n', "\n  ");
        self.put(&format!(
            "\n  ],\n  \"interrupted\": {interrupted},\n  \"evidence\": {evidence}\n}}\n"
        ))?;
        self.file
            .flush()
            .map_err(|error| cannot_write(&self.path, &error))?;
        eprintln!("results written to {}", self.path.display());
        Ok(())
    }

    fn put(&mut self, text: &str) -> Result<(), CliError> {
        self.file
            .write_all(text.as_bytes())
            .map_err(|error| cannot_write(&self.path, &error))
    }
}

fn pretty(value: &impl Serialize) -> String {
    serde_json::to_string_pretty(value).expect("sweep results serialize")
}

fn cannot_write(path: &Path, error: &std::io::Error) -> CliError {
    CliError::bad_input(format!("cannot write {}: {error}", path.display()))
}
