//! The loaders: a scenario by catalogue name or file, a fault plan file, any text file.
//! A path that does not exist is "file not found: PATH"; a name that is no scenario
//! suggests the nearest names.

use super::CliError;
use scenarios::{Scenario, catalogue, suggest};
use sim::fault::FaultPlan;
use std::path::Path;

/// A catalogue scenario by name, or a scenario file (`.toml` or `.json`, or any path with a
/// `/` in it).
pub fn load_scenario(name_or_file: &str) -> Result<Scenario, CliError> {
    if let Some(scenario) = catalogue::get(name_or_file) {
        return Ok(scenario);
    }
    let path = Path::new(name_or_file);
    let looks_like_a_path = name_or_file.contains(std::path::MAIN_SEPARATOR)
        || name_or_file.contains('/')
        || name_or_file.ends_with(".toml")
        || name_or_file.ends_with(".json");
    if path.exists() {
        return Scenario::load(path).map_err(|error| CliError::bad_input(error.to_string()));
    }
    if looks_like_a_path {
        return Err(CliError::bad_input(format!(
            "file not found: {name_or_file}"
        )));
    }
    let names: Vec<String> = catalogue::all().into_iter().map(|s| s.name).collect();
    Err(CliError::bad_input(format!(
        "no scenario `{name_or_file}` (expected a catalogue name or a scenario file: {})",
        suggest::expected(
            name_or_file,
            names.iter().map(String::as_str),
            "`coordsim list`"
        )
    )))
}

/// The text of the file at `path`; a path that does not exist is "file not found".
pub fn read_file(path: &Path) -> Result<String, CliError> {
    std::fs::read_to_string(path).map_err(|error| cannot_read(path, &error))
}

/// Opens `path` to read it bit by bit; a failure is bad input naming the path, as
/// [`read_file`]'s.
pub fn open_file(path: &Path) -> Result<std::fs::File, CliError> {
    std::fs::File::open(path).map_err(|error| cannot_read(path, &error))
}

fn cannot_read(path: &Path, error: &std::io::Error) -> CliError {
    CliError::bad_input(match error.kind() {
        std::io::ErrorKind::NotFound => format!("file not found: {}", path.display()),
        _ => format!("cannot read {}: {error}", path.display()),
    })
}

/// A JSON fault plan from `path`.
pub fn read_plan(path: &Path) -> Result<FaultPlan, CliError> {
    let text = read_file(path)?;
    serde_json::from_str(&text).map_err(|error| {
        CliError::bad_input(format!(
            "{}:{}: expected a fault plan ({{\"faults\": [{{\"at_ms\": …, \"fault\": …}}]}}): {error}",
            path.display(),
            error.line()
        ))
    })
}
