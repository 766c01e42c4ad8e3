//! The command line that replays a run, as every command and failure report prints it:
//! one type, so that every replay line starts the same way and quotes what needs quoting.

use sim::Seed;
use std::fmt;

/// How a replay line starts: the command that works from a clone of the repository, with
/// nothing installed (the README's commands start the same way).
pub const PREFIX: &str = "cargo run --release -p coordsim --";

/// A `coordsim` command line: a subcommand and its arguments, in the order given. It
/// prints as [`PREFIX`], the subcommand and the arguments; an argument with a space or a
/// shell metacharacter in it is single-quoted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayCommand {
    subcommand: &'static str,
    arguments: Vec<String>,
}

impl ReplayCommand {
    /// `coordsim <subcommand>`, with no arguments yet.
    pub fn new(subcommand: &'static str) -> Self {
        Self {
            subcommand,
            arguments: Vec::new(),
        }
    }

    /// `coordsim run --scenario <scenario>`: the run of a scenario, before its seed.
    pub fn run(scenario: &str) -> Self {
        Self::new("run").option("--scenario", scenario)
    }

    /// With `--<flag> <value>` added.
    pub fn option(mut self, flag: &str, value: impl fmt::Display) -> Self {
        self.arguments.push(flag.to_string());
        self.arguments.push(value.to_string());
        self
    }

    /// With `flag` (one that takes no value, or a positional argument) added.
    pub fn argument(mut self, argument: impl fmt::Display) -> Self {
        self.arguments.push(argument.to_string());
        self
    }

    /// With `--seed <seed>` added.
    pub fn seed(self, seed: Seed) -> Self {
        self.option("--seed", seed)
    }
}

impl fmt::Display for ReplayCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{PREFIX} {}", self.subcommand)?;
        for argument in &self.arguments {
            write!(f, " {}", quoted(argument))?;
        }
        Ok(())
    }
}

/// `text` as one shell word: as it is if it is plain, else single-quoted.
fn quoted(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c));
    if plain {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replay_line_starts_with_the_prefix_and_keeps_the_order() {
        let command = ReplayCommand::run("raft_leader_killer")
            .option("--bug", "raft.volatile_vote")
            .seed(Seed::new(7));
        assert_eq!(
            command.to_string(),
            "cargo run --release -p coordsim -- run --scenario raft_leader_killer \
             --bug raft.volatile_vote --seed 0x7"
        );
    }

    #[test]
    fn a_path_with_a_space_is_quoted() {
        let command = ReplayCommand::run("my scenarios/it's.toml").argument("--shrink");
        assert_eq!(
            command.to_string(),
            format!("{PREFIX} run --scenario 'my scenarios/it'\\''s.toml' --shrink")
        );
    }
}
