//! `coordsim sweep merge`: the shards' results back together, as one sweep over all the
//! seeds would have written them. The files are streamed, twice: once to check that they
//! are shards of one sweep holding every seed once, then to write the runs in seed order
//! (each file's runs are in seed order already, so the merge holds one run per file).

use super::{
    MergeArgs, SeedRange,
    reader::RunsReader,
    results::{ResultsWriter, SweepHeader, SweepResults, SweepTally},
};
use crate::cli::CliError;
use scenarios::{Outcome, ReplayCommand};
use sim::{Seed, report::FailureReport};
use std::{
    cmp::Reverse,
    collections::BinaryHeap,
    path::{Path, PathBuf},
    process::ExitCode,
};

/// What a shard's file should be, for error messages.
const EXPECTED: &str = "expected sweep results (`coordsim sweep --out`: {\"scenario\": …, \
                        \"runs\": [...]})";

/// `coordsim sweep merge`.
pub(super) fn merge(args: &MergeArgs) -> Result<ExitCode, CliError> {
    let first = read_shards(&args.files)?;
    let range = first.seeds;
    let scenario = first.scenario;
    let scenario_digest = first.scenario_digest;
    println!(
        "merged {} files: `{scenario}` (digest {scenario_digest}), {} seeds from {}",
        args.files.len(),
        range.count,
        range.from
    );
    let header = SweepHeader {
        scenario: &scenario,
        scenario_digest,
        seeds: range,
        shard: None,
        declared_marks: &first.declared_marks,
    };
    let mut writer = args
        .out
        .as_deref()
        .map(|path| ResultsWriter::create(path, &header))
        .transpose()?;
    let mut tally = SweepTally::new(&first.declared_marks);
    let mut runs = RunsInSeedOrder::open(&args.files, range)?;
    while let Some(run) = runs.next_run()? {
        tally.add(&run);
        if let Some(writer) = writer.as_mut() {
            writer.add(&run)?;
        }
        if !run.is_clean() {
            println!(
                "\n{}\n{run}",
                FailureReport::new(run.seed, scenario.clone()).with_command(format!(
                    "{} (with the sweep's --store/--bug flags, if it had any: the scenario \
                     digest says which ran)",
                    ReplayCommand::run(&scenario).seed(run.seed)
                ))
            );
        }
    }
    tally.print(range.count as usize, first.interrupted);
    if let Some(writer) = writer {
        writer.finish(first.interrupted, &tally.evidence)?;
    }
    Ok(tally.exit_code(first.interrupted))
}

/// Reads every file through once: each must be sweep results of the same scenario (and
/// digest) and seed range, with its runs in seed order, and together they must hold every
/// seed of the range once. The first file's fields, `interrupted` if any file was.
fn read_shards(files: &[PathBuf]) -> Result<SweepResults, CliError> {
    let mut first: Option<(&Path, SweepResults)> = None;
    let mut census: Option<SeedCensus> = None;
    for path in files {
        let mut reader = RunsReader::open(path, EXPECTED)?;
        let mut seeds: Vec<Seed> = Vec::new();
        while let Some(run) = reader.next_run()? {
            seeds.push(run.seed);
        }
        let top = reader.finish()?;
        let results: SweepResults = if top.has_runs {
            serde_json::from_value(top.fields.into()).map_err(|error| {
                CliError::bad_input(format!("{}: {EXPECTED}: {error}", path.display()))
            })?
        } else {
            return Err(CliError::bad_input(format!(
                "{}: {EXPECTED}: it has no `runs` (a single run's outcome?)",
                path.display()
            )));
        };
        match &mut first {
            None => first = Some((path, results)),
            Some((first_path, first)) => {
                same_sweep(first_path, first, path, &results)?;
                first.interrupted |= results.interrupted;
            }
        }
        let range = first.as_ref().expect("set above").1.seeds;
        census
            .get_or_insert_with(|| SeedCensus::new(range))
            .add_file(path, &seeds)?;
    }
    census.expect("clap requires a file").every_seed_once()?;
    Ok(first.expect("clap requires a file").1)
}

fn same_sweep(
    first_path: &Path,
    first: &SweepResults,
    path: &Path,
    part: &SweepResults,
) -> Result<(), CliError> {
    if part.scenario_digest != first.scenario_digest || part.scenario != first.scenario {
        return Err(CliError::bad_input(format!(
            "{}: scenario `{}` (digest {}), but {} has `{}` (digest {}) (expected shards \
             of one sweep)",
            path.display(),
            part.scenario,
            part.scenario_digest,
            first_path.display(),
            first.scenario,
            first.scenario_digest
        )));
    }
    if part.seeds != first.seeds {
        return Err(CliError::bad_input(format!(
            "{}: seeds {} from {}, but {} has {} from {} (expected shards of one sweep)",
            path.display(),
            part.seeds.count,
            part.seeds.from,
            first_path.display(),
            first.seeds.count,
            first.seeds.from
        )));
    }
    Ok(())
}

/// How many times each seed of the range was seen across the files, and the seeds outside it.
struct SeedCensus {
    range: SeedRange,
    times_seen: Vec<u32>,
    outside: Vec<String>,
}

impl SeedCensus {
    fn new(range: SeedRange) -> Self {
        Self {
            range,
            times_seen: vec![0; usize::try_from(range.count).unwrap_or(usize::MAX)],
            outside: Vec::new(),
        }
    }

    /// Counts a file's seeds, which must come in seed order (as a sweep writes them).
    fn add_file(&mut self, path: &Path, seeds: &[Seed]) -> Result<(), CliError> {
        let mut last: Option<(u64, Seed)> = None;
        for &seed in seeds {
            let Some(index) = self.range.index_of(seed) else {
                self.outside.push(format!("{seed} in {}", path.display()));
                continue;
            };
            if let Some((last_index, last_seed)) = last
                && index < last_index
            {
                return Err(CliError::bad_input(format!(
                    "{}: seed {seed} after {last_seed} (expected the runs in seed order, as \
                     `coordsim sweep` writes them)",
                    path.display()
                )));
            }
            last = Some((index, seed));
            self.times_seen[index as usize] += 1;
        }
        Ok(())
    }

    /// Checks that the files, together, hold every seed of the range once and no other.
    fn every_seed_once(&self) -> Result<(), CliError> {
        let range = self.range;
        if !self.outside.is_empty() {
            return Err(CliError::bad_input(format!(
                "seeds outside the sweep's range ({} from {}): {}",
                range.count,
                range.from,
                self.outside.join(", ")
            )));
        }
        let seeds_seen = |times: fn(u32) -> bool| -> Vec<Seed> {
            (0..range.count)
                .filter(|index| times(self.times_seen[*index as usize]))
                .map(|index| range.from.offset(index))
                .collect()
        };
        let duplicated = seeds_seen(|times| times > 1);
        let missing = seeds_seen(|times| times == 0);
        if duplicated.is_empty() && missing.is_empty() {
            return Ok(());
        }
        let mut problems = Vec::new();
        if !duplicated.is_empty() {
            problems.push(format!(
                "{} seeds duplicated: {}",
                duplicated.len(),
                listed(&duplicated)
            ));
        }
        if !missing.is_empty() {
            problems.push(format!(
                "{} seeds missing: {} (a shard left out, stopped at a failure or interrupted? \
                 sweep it again with --keep-going)",
                missing.len(),
                listed(&missing)
            ));
        }
        Err(CliError::bad_input(format!(
            "the files do not make one sweep of {} seeds from {}: {}",
            range.count,
            range.from,
            problems.join("; ")
        )))
    }
}

/// Up to ten seeds, then how many more.
fn listed(seeds: &[Seed]) -> String {
    let mut text: Vec<String> = seeds.iter().take(10).map(ToString::to_string).collect();
    if seeds.len() > 10 {
        text.push(format!("and {} more", seeds.len() - 10));
    }
    text.join(", ")
}

/// The runs of several files, each in seed order, merged into seed order: one run per file
/// is held, the next of each file.
struct RunsInSeedOrder {
    range: SeedRange,
    readers: Vec<RunsReader>,
    /// Each file's next run, if it has one left.
    next: Vec<Option<Outcome>>,
    /// (seed index, file) of every file's next run, lowest first.
    order: BinaryHeap<Reverse<(u64, usize)>>,
}

impl RunsInSeedOrder {
    /// Opens `files` (already checked by [`read_shards`]) and reads each one's first run.
    fn open(files: &[PathBuf], range: SeedRange) -> Result<Self, CliError> {
        let mut runs = Self {
            range,
            readers: Vec::new(),
            next: Vec::new(),
            order: BinaryHeap::new(),
        };
        for path in files {
            runs.readers.push(RunsReader::open(path, EXPECTED)?);
            runs.next.push(None);
            runs.read_next_of(runs.readers.len() - 1)?;
        }
        Ok(runs)
    }

    /// The run with the lowest seed not yet handed out.
    fn next_run(&mut self) -> Result<Option<Outcome>, CliError> {
        let Some(Reverse((_, file))) = self.order.pop() else {
            return Ok(None);
        };
        let run = self.next[file].take().expect("queued with its run");
        self.read_next_of(file)?;
        Ok(Some(run))
    }

    fn read_next_of(&mut self, file: usize) -> Result<(), CliError> {
        if let Some(run) = self.readers[file].next_run()? {
            let index = self.range.index_of(run.seed).ok_or_else(|| {
                self.readers[file].error(format!("seed {} changed since it was read", run.seed))
            })?;
            self.order.push(Reverse((index, file)));
            self.next[file] = Some(run);
        }
        Ok(())
    }
}
