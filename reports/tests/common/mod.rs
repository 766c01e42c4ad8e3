#![allow(dead_code)] // each test file uses some of these
//! What the `list`, `run --store/--bug` and `sweep` tests share: running the binary with
//! none of coordsim's environment variables set, and a scratch directory.

use std::{path::PathBuf, process::Command};

/// What one `coordsim` invocation came to.
pub struct Ran {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `coordsim` with `args` and `env` (and no other coordsim variable).
pub fn coordsim_with(args: &[&str], env: &[(&str, &str)]) -> Ran {
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
    command.envs(env.iter().copied());
    let output = command.output().expect("coordsim runs");
    Ran {
        code: output.status.code().expect("an exit code"),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
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
