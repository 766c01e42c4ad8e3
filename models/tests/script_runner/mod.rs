//! The one runner of data-driven interaction scripts (`tests/testdata/**/*.txt`), shared by
//! the Raft harness (`interaction/`) and the ZAB harness (`zab_interaction/`).
//!
//! A script is a list of blocks:
//!
//! ```text
//! # comment
//! command arg key=value
//! ----
//! expected output
//! (blank line)
//! ```
//!
//! Each command goes to the harness's `run`, and what it returns must equal the expected
//! output. With `REWRITE_SCRIPTS=1` the script is rewritten with the actual output instead of
//! failing (review the diff).

/// A node named in a script (`s1`, `c2`), as `NodeId` parses it.
pub fn node_id(text: &str) -> sim::NodeId {
    text.parse()
        .unwrap_or_else(|error| panic!("bad node {text}: {error}"))
}

/// Runs the script in `path` (relative to the crate) through `run`, comparing every block's
/// output; returns the output of each command, in order.
pub fn run_script(path: &str, mut run: impl FnMut(&str) -> String) -> Vec<String> {
    let full = format!("{}/{path}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{full}: {e}"));
    let rewrite = std::env::var("REWRITE_SCRIPTS").is_ok();
    let mut transcript = String::new();
    let mut failures = Vec::new();
    let mut blocks = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim().is_empty() || line.starts_with('#') {
            transcript.push_str(line);
            transcript.push('\n');
            continue;
        }
        let command = line.trim();
        let separator = lines.next().unwrap_or("");
        assert_eq!(
            separator, "----",
            "{path}: `{command}` must be followed by ----"
        );
        let mut expected = String::new();
        while let Some(next) = lines.peek() {
            if next.trim().is_empty() {
                break;
            }
            expected.push_str(lines.next().unwrap());
            expected.push('\n');
        }
        let actual = run(command);
        if actual != expected {
            failures.push(format!(
                "{path}: `{command}`\n--- expected\n{expected}--- actual\n{actual}"
            ));
        }
        transcript.push_str(command);
        transcript.push_str("\n----\n");
        transcript.push_str(&actual);
        blocks.push(actual);
    }
    if rewrite {
        std::fs::write(&full, transcript).expect("rewrite script");
    } else {
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }
    blocks
}
