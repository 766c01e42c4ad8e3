#![allow(dead_code)] // each test file uses some of these
//! What the `coordsim` tests share: running the binary with none of coordsim's environment
//! variables set, scratch files and directories.

use std::{path::PathBuf, process::Command};

/// What one `coordsim` invocation came to.
pub struct Ran {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// The `coordsim` command with `args`, and none of coordsim's environment variables.
fn command(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_coordsim"));
    command.args(args);
    for variable in [
        sim::env::SEED,
        sim::env::SEEDS,
        sim::env::SEED_BASE,
        sim::env::HISTORY_DIR,
        sim::env::JOB_COMPLETION_INDEX,
    ] {
        command.env_remove(variable);
    }
    command
}

/// Runs `command` to its end.
fn ran(mut command: Command) -> Ran {
    let output = command.output().expect("coordsim runs");
    Ran {
        code: output.status.code().expect("an exit code"),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Runs `coordsim` with `args` and `env` (and no other coordsim variable).
pub fn coordsim_with(args: &[&str], env: &[(&str, &str)]) -> Ran {
    let mut command = command(args);
    command.envs(env.iter().copied());
    ran(command)
}

/// Runs `coordsim` with `args` in `directory` (relative paths in `args` are read and
/// written there).
pub fn coordsim_in(directory: &std::path::Path, args: &[&str]) -> Ran {
    let mut command = command(args);
    command.current_dir(directory);
    ran(command)
}

/// Runs `coordsim` with `args`.
pub fn coordsim(args: &[&str]) -> Ran {
    coordsim_with(args, &[])
}

/// A fresh scratch directory for one test.
pub fn scratch(test: &str) -> PathBuf {
    let directory = std::env::temp_dir().join(format!("coordsim-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&directory);
    std::fs::create_dir_all(&directory).expect("a scratch directory");
    directory
}

/// Asserts that a run was bad input: exit code 2 and one line on stderr containing
/// `expected`.
pub fn assert_bad_input(ran: &Ran, expected: &str) {
    assert_eq!(ran.code, 2, "{}{}", ran.stdout, ran.stderr);
    assert_eq!(ran.stderr.lines().count(), 1, "one line: {}", ran.stderr);
    assert!(
        ran.stderr.contains(expected),
        "expected `{expected}` in: {}",
        ran.stderr
    );
}

/// Runs `coordsim` with `args`: (exit code, stdout, stderr).
pub fn coordsim_output(args: &[&str]) -> (i32, String, String) {
    let ran = coordsim(args);
    (ran.code, ran.stdout, ran.stderr)
}

/// A path named `name` in this test binary's scratch directory (created, not emptied:
/// the tests of one binary run in parallel and name their files apart).
pub fn temporary_path(name: &str) -> String {
    let directory = std::env::temp_dir().join(format!("coordsim-tests-{}", std::process::id()));
    std::fs::create_dir_all(&directory).expect("a scratch directory");
    directory.join(name).display().to_string()
}

/// [`temporary_path`] with `text` written to it.
pub fn temporary(name: &str, text: &str) -> String {
    let path = temporary_path(name);
    std::fs::write(&path, text).expect("a scratch file");
    path
}
