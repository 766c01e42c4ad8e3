//! `conformance-recorder --store zk|etcd [--only NAME] PROBE_DIR`: runs each probe in PROBE_DIR
//! against a freshly started real server (ZooKeeper 3.8 or etcd 3.4 from Debian's packages)
//! through the real client crate, and rewrites the probe's recorded answers with what the server
//! said, normalised as `models/conformance/README.md` says. Declared deviations stay as they are.
//!
//! Exit codes: 0 when every probe ran; 1 when a server could not be started or a probe could not
//! run; 2 for bad input (arguments, or a malformed probe file: the `ProbeError` line).

// The recorder talks to real servers over real sockets: madsim's simulated tokio would never
// reach them. The repository's .cargo/config.toml sets `--cfg madsim`; record.sh builds with
// RUSTFLAGS set so that it does not apply here.
#[cfg(madsim)]
compile_error!("build the recorder without `--cfg madsim` (record.sh sets RUSTFLAGS)");

mod etcd;
mod server;
mod zk;

use probe_format::{Probe, ProbeError, Step, Store};
use std::{
    path::{Path, PathBuf},
    process::ExitCode,
};

/// Why a probe could not be recorded.
pub enum Failure {
    /// The probe asks for what no server can be asked (a multi op or a compare that does not
    /// read, a client used before it connects): bad input, exit code 2. Its `file` is filled in
    /// by `main`.
    BadStep(ProbeError),
    /// The server could not be started or reached: exit code 1.
    Server(String),
}

impl Failure {
    /// A step whose `field` is not what `expected` says.
    pub fn bad_step(step: &Step, field: &str, expected: impl Into<String>) -> Failure {
        Failure::BadStep(ProbeError {
            file: String::new(),
            line: step.line,
            field: field.to_string(),
            expected: expected.into(),
        })
    }
}

/// What the command line asks for.
struct Args {
    store: Store,
    only: Option<String>,
    dir: PathBuf,
}

const USAGE: &str = "usage: conformance-recorder --store zk|etcd [--only NAME] PROBE_DIR";

/// Reads the command line's `words` (without the program's name).
fn parse_args(mut words: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut store = None;
    let mut only = None;
    let mut dir = None;
    while let Some(word) = words.next() {
        match word.as_str() {
            "--store" => {
                let name = words.next().unwrap_or_default();
                store = Some(Store::from_name(&name).ok_or_else(|| {
                    format!("--store: expected zk or etcd, not `{name}`; {USAGE}")
                })?);
            }
            "--only" => {
                only = Some(
                    words
                        .next()
                        .ok_or_else(|| format!("--only: expected a probe name; {USAGE}"))?,
                )
            }
            _ if word.starts_with("--") => {
                return Err(format!("unknown option `{word}`; {USAGE}"));
            }
            _ if dir.is_none() => dir = Some(PathBuf::from(word)),
            _ => {
                return Err(format!(
                    "one PROBE_DIR expected, `{word}` is a second; {USAGE}"
                ));
            }
        }
    }
    Ok(Args {
        store: store.ok_or_else(|| format!("--store zk|etcd is required; {USAGE}"))?,
        only,
        dir: dir.ok_or_else(|| format!("PROBE_DIR is required; {USAGE}"))?,
    })
}

/// The probe files of `dir`, by name (one order on every machine).
fn probe_files(dir: &Path, only: Option<&str>) -> Result<Vec<PathBuf>, String> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: expected a folder of .probe files ({e})", dir.display()))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "probe"))
        .filter(|path| only.is_none_or(|name| path.file_stem().is_some_and(|s| s == name)))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(match only {
            Some(name) => format!("{}: expected a probe named `{name}`", dir.display()),
            None => format!("{}: expected at least one .probe file", dir.display()),
        });
    }
    Ok(files)
}

/// Runs one probe against a fresh server; its answers, one per step.
fn record(probe: &Probe) -> Result<Vec<Vec<String>>, Failure> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::Server(e.to_string()))?;
    // The server is dropped (stopped) at the end of this function, also when a step panics.
    match probe.store {
        Store::Zk => {
            let server = server::start_zookeeper().map_err(Failure::Server)?;
            let answers = runtime.block_on(zk::run(probe));
            drop(runtime);
            drop(server);
            answers
        }
        Store::Etcd => {
            let server = server::start_etcd().map_err(Failure::Server)?;
            let answers = runtime.block_on(etcd::run(probe));
            drop(runtime);
            drop(server);
            answers
        }
    }
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    if let Err(message) = server::checked_port_base() {
        eprintln!("{message}");
        return ExitCode::from(2);
    }
    let files = match probe_files(&args.dir.join(""), args.only.as_deref()) {
        Ok(files) => files,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    // Read every file first: a malformed one stops the run before any server starts.
    let mut probes = Vec::new();
    for file in &files {
        match Probe::load(file) {
            Ok(probe) if probe.store == args.store => probes.push((file, probe)),
            Ok(probe) => {
                eprintln!(
                    "{}: expected a probe for --store {}, it is in a {} folder",
                    file.display(),
                    args.store.name(),
                    probe.store.name()
                );
                return ExitCode::from(2);
            }
            Err(error) => {
                eprintln!("{error}");
                return ExitCode::from(2);
            }
        }
    }
    let (mut steps, mut changed) = (0, 0);
    for (file, probe) in &probes {
        let answers = match record(probe) {
            Ok(answers) => answers,
            Err(Failure::BadStep(mut error)) => {
                error.file = file.display().to_string();
                eprintln!("{error}");
                return ExitCode::from(2);
            }
            Err(Failure::Server(message)) => {
                eprintln!("{}: {message}", probe.name);
                return ExitCode::from(1);
            }
        };
        let differing = probe
            .steps
            .iter()
            .zip(&answers)
            .filter(|(step, answer)| &step.answer != *answer)
            .count();
        if let Err(e) = std::fs::write(file, probe.rewritten(&answers)) {
            eprintln!("{}: could not rewrite ({e})", file.display());
            return ExitCode::from(1);
        }
        println!(
            "{:<48} {:>3} steps {:>3} changed",
            probe.name,
            probe.steps.len(),
            differing
        );
        steps += probe.steps.len();
        changed += differing;
    }
    println!(
        "{}: {} probes recorded live, {steps} steps, {changed} answers changed from the files",
        args.store.name(),
        probes.len()
    );
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(line: &str) -> Result<Args, String> {
        parse_args(line.split_whitespace().map(String::from))
    }

    #[test]
    fn the_command_line_names_a_store_a_folder_and_maybe_one_probe() {
        let args = parsed("--store etcd --only lease_grant probes/etcd").unwrap();
        assert_eq!(args.store, Store::Etcd);
        assert_eq!(args.only.as_deref(), Some("lease_grant"));
        assert_eq!(args.dir, PathBuf::from("probes/etcd"));
        assert!(parsed("probes/zk --store zk").unwrap().only.is_none());
    }

    #[test]
    fn a_bad_command_line_is_one_line_naming_what_was_expected() {
        for (line, expected) in [
            (
                "--store zoo probes",
                "--store: expected zk or etcd, not `zoo`",
            ),
            ("--store zk", "PROBE_DIR is required"),
            ("probes", "--store zk|etcd is required"),
            ("--store zk a b", "one PROBE_DIR expected, `b` is a second"),
            ("--store zk --verbose a", "unknown option `--verbose`"),
            ("--store zk a --only", "--only: expected a probe name"),
        ] {
            let message = parsed(line)
                .err()
                .unwrap_or_else(|| panic!("`{line}` parsed"));
            assert!(message.contains(expected), "`{line}`: {message}");
            assert!(message.contains(USAGE), "`{line}`: {message}");
            assert!(!message.contains('\n'), "`{line}`: {message}");
        }
    }

    #[test]
    fn probe_files_are_the_folder_s_probes_by_name_or_the_one_asked_for() {
        let dir = std::env::temp_dir().join(format!("recorder-files-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for name in ["b.probe", "a.probe", "notes.md"] {
            std::fs::write(dir.join(name), "").unwrap();
        }
        let names = |files: Vec<PathBuf>| -> Vec<String> {
            files
                .iter()
                .map(|file| file.file_name().unwrap().to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(
            names(probe_files(&dir, None).unwrap()),
            ["a.probe", "b.probe"]
        );
        assert_eq!(names(probe_files(&dir, Some("b")).unwrap()), ["b.probe"]);
        let missing = probe_files(&dir, Some("c")).unwrap_err();
        assert!(missing.contains("expected a probe named `c`"), "{missing}");
        let empty = dir.join("empty");
        std::fs::create_dir_all(&empty).unwrap();
        let none = probe_files(&empty, None).unwrap_err();
        assert!(none.contains("expected at least one .probe file"), "{none}");
        let absent = probe_files(&dir.join("absent"), None).unwrap_err();
        assert!(
            absent.contains("expected a folder of .probe files"),
            "{absent}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
