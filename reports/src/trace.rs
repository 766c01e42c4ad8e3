//! The trace of a run: its outcome and every history record, as one JSON object
//! (`{"outcome": …, "records": […]}`), written as it is serialized (a long history is tens
//! of megabytes). `coordsim replay --trace` and the testing API write it.

use scenarios::Outcome;
use serde::Serialize;
use sim::history::{History, Record};
use std::{io::Write, path::Path};

/// Writes `outcome` and `history` to `path`; the error names the file.
pub fn write(path: &Path, outcome: &Outcome, history: &History) -> Result<(), String> {
    #[derive(Serialize)]
    struct Trace<'a> {
        outcome: &'a Outcome,
        records: &'a [Record],
    }
    let cannot = |error: std::io::Error| format!("cannot write {}: {error}", path.display());
    let file = std::fs::File::create(path).map_err(cannot)?;
    let mut writer = std::io::BufWriter::new(file);
    serde_json::to_writer(
        &mut writer,
        &Trace {
            outcome,
            records: history.records(),
        },
    )
    .map_err(|error| cannot(error.into()))?;
    writer.write_all(b"\n").map_err(cannot)?;
    writer.flush().map_err(cannot)
}
