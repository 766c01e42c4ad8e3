//! `cN multi OP;OP;…` (and `cN multi_read`, below): ops `create:PATH:DATA:MODE`, `delete:PATH:VERSION`,
//! `set:PATH:DATA:VERSION`, `check:PATH:VERSION` (`-1` is any version). The answer is `ok` and
//! one line per op (`  create path=P`, `  delete`, `  set STAT`, `  check`), or
//! `err KIND index=I` naming the first op that failed (0-based).

use super::{OP_LIMIT, render};
use crate::Failure;
use probe_format::{Roles, Step};
use zookeeper_client::{
    Acls, Client, CreateMode, MultiReadResult, MultiWriteError, MultiWriteResult,
};

/// Runs the step's ops as one multi.
pub async fn run(
    client: &Client,
    step: &Step,
    sessions: &mut Roles,
) -> Result<Vec<String>, Failure> {
    let mut writer = client.new_multi_writer();
    let text = step.arg(0);
    let bad = |expected: &str| Failure::bad_step(step, "ops", format!("{expected}, in `{text}`"));
    for (index, op) in text.split(';').filter(|op| !op.is_empty()).enumerate() {
        let words: Vec<&str> = op.split(':').collect();
        let version = |word: &str| -> Result<i32, Failure> {
            word.parse()
                .map_err(|_| bad("a whole-number version (-1 for any)"))
        };
        let any = |v: i32| (v >= 0).then_some(v);
        // A path the crate refuses is refused before anything is sent: the op's index names it.
        let added = match words.as_slice() {
            ["create", path, data, mode] => {
                let mode = match *mode {
                    "persistent" => CreateMode::Persistent,
                    "ephemeral" => CreateMode::Ephemeral,
                    "persistent_sequential" => CreateMode::PersistentSequential,
                    "ephemeral_sequential" => CreateMode::EphemeralSequential,
                    _ => return Err(bad("a create mode")),
                };
                writer.add_create(path, data.as_bytes(), &mode.with_acls(Acls::anyone_all()))
            }
            ["delete", path, v] => writer.add_delete(path, any(version(v)?)),
            ["set", path, data, v] => writer.add_set_data(path, data.as_bytes(), any(version(v)?)),
            ["check", path, v] => writer.add_check_version(path, version(v)?),
            _ => {
                return Err(bad(
                    "ops create:PATH:DATA:MODE, delete:PATH:VERSION, set:PATH:DATA:VERSION or check:PATH:VERSION",
                ));
            }
        };
        if let Err(e) = added {
            return Ok(vec![format!("{} index={index}", render::error(&e))]);
        }
    }
    let outcome = match tokio::time::timeout(OP_LIMIT, writer.commit()).await {
        Ok(outcome) => outcome,
        Err(_) => return Ok(vec!["err Timeout".to_string()]),
    };
    match outcome {
        Ok(results) => {
            let mut lines = vec!["ok".to_string()];
            for result in results {
                lines.push(match result {
                    MultiWriteResult::Check => "  check".to_string(),
                    MultiWriteResult::Delete => "  delete".to_string(),
                    MultiWriteResult::Create { path, .. } => format!("  create path={path}"),
                    MultiWriteResult::SetData { stat } => {
                        format!("  set {}", render::stat(&stat, sessions))
                    }
                    other => format!("  {other:?}"),
                });
            }
            Ok(lines)
        }
        Err(MultiWriteError::OperationFailed { index, source }) => {
            Ok(vec![format!("{} index={index}", render::error(&source))])
        }
        Err(MultiWriteError::RequestFailed { source }) => Ok(vec![render::error(&source)]),
    }
}

/// `cN multi_read OP;OP;…` through `MultiReader`: ops `get:PATH` and `children:PATH`. The
/// answer is `ok` and one line per op (`  get data=D STAT`, `  children children=[a,b]`
/// sorted, `  err KIND` for a read that failed on its own), or `err KIND index=I` when the
/// crate refuses an op's path before sending.
pub async fn run_read(
    client: &Client,
    step: &Step,
    sessions: &mut Roles,
) -> Result<Vec<String>, Failure> {
    let mut reader = client.new_multi_reader();
    let text = step.arg(0);
    for (index, op) in text.split(';').filter(|op| !op.is_empty()).enumerate() {
        let added = match op.split_once(':') {
            Some(("get", path)) => reader.add_get_data(path),
            Some(("children", path)) => reader.add_get_children(path),
            _ => {
                return Err(Failure::bad_step(
                    step,
                    "ops",
                    format!("ops get:PATH or children:PATH, in `{text}`"),
                ));
            }
        };
        if let Err(e) = added {
            return Ok(vec![format!("{} index={index}", render::error(&e))]);
        }
    }
    let outcome = match tokio::time::timeout(OP_LIMIT, reader.commit()).await {
        Ok(outcome) => outcome,
        Err(_) => return Ok(vec!["err Timeout".to_string()]),
    };
    match outcome {
        Ok(results) => {
            let mut lines = vec!["ok".to_string()];
            for result in results {
                lines.push(match result {
                    MultiReadResult::Data { data, stat } => format!(
                        "  get data={} {}",
                        String::from_utf8_lossy(&data),
                        render::stat(&stat, sessions)
                    ),
                    MultiReadResult::Children { mut children } => {
                        // Compared sorted: the server answers in its hash order (README).
                        children.sort();
                        format!("  children children=[{}]", children.join(","))
                    }
                    MultiReadResult::Error { err } => format!("  {}", render::error(&err)),
                    other => format!("  {other:?}"),
                });
            }
            Ok(lines)
        }
        Err(e) => Ok(vec![render::error(&e)]),
    }
}
