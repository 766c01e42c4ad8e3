//! The front page's commands run as it says they do.
//!
//! Every line of README.md's fenced code blocks that starts with `coordsim ` (or with
//! `cargo run --release -p coordsim -- `) runs with this test's `coordsim`, in order, in one
//! scratch directory (so a file one command writes, such as `shrunk-plan.json`, is there for
//! the next), with small seed counts, and must exit with the code the README gives after it
//! (`# exit 1`), or 0. A renamed command or flag exits 2 and fails the test. The nested
//! READMEs list every catalogue scenario and every check, and the scenario file the README
//! shows is the one in `scenarios/examples/`.

mod common;

use common::{Ran, coordsim, coordsim_in, scratch};
use std::path::{Path, PathBuf};

const README: &str = include_str!("../../README.md");

/// The workspace root: relative paths the README shows are relative to it.
fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("reports sits in the workspace")
        .to_path_buf()
}

fn read(relative: &str) -> String {
    std::fs::read_to_string(workspace().join(relative))
        .unwrap_or_else(|error| panic!("{relative}: {error}"))
}

/// A command the README shows, as it will be run.
#[derive(Debug)]
struct Shown {
    /// The line as the README shows it.
    line: String,
    /// The arguments after `coordsim`.
    args: Vec<String>,
    /// Where `> FILE` sends its output, if anywhere.
    stdout_to: Option<String>,
    /// The exit code the README gives (`# exit N`), or 0.
    expected_code: i32,
}

/// The lines of `text`'s fenced shell blocks (```` ```sh ````), with `\`-continued lines
/// joined. (Other blocks show output, Rust or TOML, which are not commands.)
fn code_lines(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut block: Option<&str> = None;
    let mut pending = String::new();
    for line in text.lines() {
        if let Some(fence) = line.trim_start().strip_prefix("```") {
            block = match block {
                Some(_) => None,
                None => Some(fence.trim()),
            };
            continue;
        }
        if block != Some("sh") {
            continue;
        }
        match line.trim_end().strip_suffix('\\') {
            Some(head) => pending.push_str(head),
            None => {
                pending.push_str(line);
                lines.push(std::mem::take(&mut pending).trim().to_string());
            }
        }
    }
    lines
}

/// The `coordsim` commands among the README's code lines.
fn shown_commands(text: &str) -> Vec<Shown> {
    const PREFIXES: [&str; 2] = ["coordsim ", "cargo run --release -p coordsim -- "];
    let mut shown = Vec::new();
    for line in code_lines(text) {
        let command = line.strip_prefix("$ ").unwrap_or(&line);
        let Some(rest) = PREFIXES
            .iter()
            .find_map(|prefix| command.strip_prefix(prefix))
        else {
            continue;
        };
        let (words, comment) = match rest.split_once(" #") {
            Some((words, comment)) => (words, comment),
            None => (rest, ""),
        };
        let expected_code = comment
            .split_once("exit ")
            .map(|(_, code)| {
                let digits: String = code.chars().take_while(char::is_ascii_digit).collect();
                digits.parse().expect("`# exit N` gives a number")
            })
            .unwrap_or(0);
        let mut args: Vec<String> = words.split_whitespace().map(String::from).collect();
        let stdout_to = args.iter().position(|word| word == ">").map(|at| {
            let file = args.get(at + 1).expect("a file after `>`").clone();
            args.truncate(at);
            file
        });
        for word in &args {
            assert!(
                !word.contains(['|', '[', ']', '<', '>', '"', '\'']) && word != "...",
                "the README shows `{line}`: a placeholder or shell syntax the test cannot run \
                 (show a command that runs as it is)"
            );
        }
        shown.push(Shown {
            line: line.clone(),
            args,
            stdout_to,
            expected_code,
        });
    }
    shown
}

/// `shown`'s arguments made small: `--seeds N` becomes 2, `compare-locks` compares 2 clients
/// over 1 seed, and a path that exists in the workspace is given in full.
fn small(shown: &Shown) -> Vec<String> {
    let mut args = shown.args.clone();
    if let Some(at) = args.iter().position(|word| word == "--seeds") {
        args[at + 1] = "2".into();
    }
    if args.first().map(String::as_str) == Some("compare-locks") {
        for (flag, value) in [("--clients", "2"), ("--seeds", "1")] {
            match args.iter().position(|word| word == flag) {
                Some(at) => args[at + 1] = value.into(),
                None => args.extend([flag.to_string(), value.to_string()]),
            }
        }
    }
    for word in &mut args {
        let path = workspace().join(&*word);
        if !word.starts_with('-') && word.contains('/') && path.exists() {
            *word = path.display().to_string();
        }
    }
    args
}

fn describe(ran: &Ran) -> String {
    let tail = |text: &str| {
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    };
    format!(
        "exit {}\nstdout (end):\n{}\nstderr:\n{}",
        ran.code,
        tail(&ran.stdout),
        ran.stderr
    )
}

#[test]
fn every_command_the_readme_shows_runs_and_exits_as_it_says() {
    let shown = shown_commands(README);
    let names: Vec<&str> = shown
        .iter()
        .filter_map(|command| command.args.first().map(String::as_str))
        .collect();
    for expected in ["list", "run", "replay", "sweep", "compare-locks"] {
        assert!(
            names.contains(&expected),
            "the README shows no `coordsim {expected}`: {names:?}"
        );
    }
    assert!(
        shown.iter().any(|command| command.expected_code != 0),
        "the README shows no failing run"
    );
    let directory = scratch("readme");
    for command in &shown {
        let args = small(command);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let ran = coordsim_in(&directory, &args);
        assert_eq!(
            ran.code,
            command.expected_code,
            "`{}` (run as `coordsim {}`) exits {}, the README says {}\n{}",
            command.line,
            args.join(" "),
            ran.code,
            command.expected_code,
            describe(&ran)
        );
        if let Some(file) = &command.stdout_to {
            std::fs::write(directory.join(file), &ran.stdout).expect("a scratch file");
        }
    }
}

#[test]
fn the_readme_shows_the_two_commands_that_ci_runs() {
    let lines = code_lines(README);
    let ci = read(".ci/run");
    for command in [
        "cargo test --workspace",
        "cargo run --release -p coordsim -- compare-locks",
    ] {
        assert!(
            lines.iter().any(|line| line == command),
            "the README does not show `{command}` on its own line"
        );
        // `.ci/run` runs each command through `step`, which times it.
        assert!(
            ci.lines().any(|line| line
                .strip_prefix("step ")
                .unwrap_or(line)
                .starts_with(command)),
            ".ci/run does not run `{command}`"
        );
    }
}

#[test]
fn the_scenario_file_the_readme_shows_is_the_example_file() {
    let path = "scenarios/examples/queue_lock_under_faults.toml";
    // The first TOML block after the sentence that names the file.
    let block: String = README
        .split_once(&format!("[{path}]"))
        .map(|(_, rest)| rest)
        .and_then(|rest| rest.split("```toml\n").nth(1))
        .and_then(|rest| rest.split("```").next())
        .expect("a TOML block in the README after the example file's name")
        .to_string();
    assert!(README.contains(path), "the README names {path}");
    assert_eq!(
        block,
        read(path),
        "the README's TOML block differs from {path}"
    );
}

#[test]
fn the_nested_readmes_name_every_scenario_and_every_check() {
    let listed = coordsim(&["list", "--json"]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let listing: serde_json::Value = serde_json::from_str(&listed.stdout).expect("JSON");
    for (list, file) in [
        ("scenarios", "scenarios/README.md"),
        ("checks", "scenarios/checks/README.md"),
    ] {
        let text = read(file);
        let names: Vec<&str> = listing[list]
            .as_array()
            .expect("a list")
            .iter()
            .map(|item| item["name"].as_str().expect("a name"))
            .collect();
        assert!(names.len() > 10, "{list}: {names:?}");
        let missing: Vec<&&str> = names
            .iter()
            .filter(|name| !text.contains(&format!("| `{name}` |")))
            .collect();
        assert!(missing.is_empty(), "{file} has no row for {missing:?}");
    }
}
