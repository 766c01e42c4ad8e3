//! Reading a results file run by run: sweep results (`coordsim sweep --out`, whose `runs`
//! may hold a hundred thousand outcomes) or one outcome (`coordsim run --json`), without
//! holding the file or its runs. `coordsim sweep merge` and `coordsim replay --from` read
//! through it.
//!
//! The top-level object is scanned here: every field but `runs` is small and is kept as a
//! JSON value; `runs` is handed out one element at a time, each parsed by serde on its own.
//! Any JSON layout and field order is read, not only the one the writer uses.

use crate::cli::CliError;
use scenarios::Outcome;
use serde_json::{Map, Value};
use std::{
    fs::File,
    io::{self, BufRead, BufReader},
    path::{Path, PathBuf},
};

/// A results file being read, positioned in its `runs` array (or past the whole object, if
/// it has none).
pub(crate) struct RunsReader {
    path: PathBuf,
    /// What the file should be, for error messages ("expected sweep results (…)").
    expected: &'static str,
    scanner: Scanner<BufReader<File>>,
    /// The top-level fields other than `runs` read so far.
    fields: Map<String, Value>,
    place: Place,
    /// One value's bytes, reused from run to run.
    value_bytes: Vec<u8>,
}

/// Where the reader is in the top-level object.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    /// Inside `runs`, before its first element.
    AtFirstRun,
    /// Inside `runs`, after an element.
    AfterRun,
    /// Past `runs`, before the fields that follow it.
    AfterRuns,
    /// Past the closing brace.
    End,
}

/// The top-level fields of a file read to its end, `runs` left out.
pub(crate) struct TopLevel {
    /// Every field but `runs`.
    pub(crate) fields: Map<String, Value>,
    /// Whether the file has a `runs` array (sweep results) or not (one outcome).
    pub(crate) has_runs: bool,
}

impl RunsReader {
    /// Opens `path` and reads up to its first run (or to its end, if it has no `runs`).
    /// `expected` names what the file should be, for error messages.
    pub(crate) fn open(path: &Path, expected: &'static str) -> Result<Self, CliError> {
        let file = crate::cli::open_file(path)?;
        let mut reader = Self {
            path: path.to_path_buf(),
            expected,
            scanner: Scanner::new(BufReader::with_capacity(1 << 16, file)),
            fields: Map::new(),
            place: Place::End,
            value_bytes: Vec::new(),
        };
        reader.expect_byte(b'{', "a JSON object")?;
        reader.read_fields(FieldsFrom::First)?;
        Ok(reader)
    }

    /// The next run, in file order; `None` after the last one (or if the file has no runs).
    pub(crate) fn next_run(&mut self) -> Result<Option<Outcome>, CliError> {
        if !self.at_another_run()? {
            return Ok(None);
        }
        self.skip_whitespace()?;
        let first_line = self.scanner.line;
        self.read_value()?;
        serde_json::from_slice(&self.value_bytes)
            .map(Some)
            .map_err(|error| self.error_at(first_line + error.line() - 1, &error))
    }

    /// Reads the rest of the file (skipping any runs left) and gives its top-level fields.
    pub(crate) fn finish(mut self) -> Result<TopLevel, CliError> {
        let has_runs = self.place != Place::End;
        while self.at_another_run()? {
            self.read_value()?;
        }
        if self.place == Place::AfterRuns {
            self.read_fields(FieldsFrom::AfterAField)?;
        }
        if let Some(byte) = self.skip_whitespace()? {
            return Err(self.unexpected(byte, "nothing after the closing brace"));
        }
        Ok(TopLevel {
            fields: self.fields,
            has_runs,
        })
    }

    /// An error about the file as a whole (no line), naming what it should be.
    pub(crate) fn error(&self, detail: impl std::fmt::Display) -> CliError {
        CliError::bad_input(format!(
            "{}: {}: {detail}",
            self.path.display(),
            self.expected
        ))
    }

    /// Moves past the separator before the next run; false (and past `]`) if there is none.
    fn at_another_run(&mut self) -> Result<bool, CliError> {
        let first = match self.place {
            Place::AtFirstRun => true,
            Place::AfterRun => false,
            Place::AfterRuns | Place::End => return Ok(false),
        };
        match self.skip_whitespace()? {
            Some(b']') => {
                self.scanner.bump();
                self.place = Place::AfterRuns;
                Ok(false)
            }
            Some(b',') if !first => {
                self.scanner.bump();
                self.place = Place::AfterRun;
                Ok(true)
            }
            Some(_) if first => {
                self.place = Place::AfterRun;
                Ok(true)
            }
            Some(byte) => Err(self.unexpected(byte, "`,` or `]` after a run")),
            None => Err(self.end_of_file()),
        }
    }

    /// Reads `"key": value` pairs into `fields` until the closing brace, or up to the
    /// opening bracket of `runs`.
    fn read_fields(&mut self, from: FieldsFrom) -> Result<(), CliError> {
        let mut first = from == FieldsFrom::First;
        loop {
            match self.skip_whitespace()? {
                Some(b'}') => {
                    self.scanner.bump();
                    self.place = Place::End;
                    return Ok(());
                }
                Some(b',') if !first => {
                    self.scanner.bump();
                }
                Some(_) if first => {}
                Some(byte) => return Err(self.unexpected(byte, "`,` or `}` after a field")),
                None => return Err(self.end_of_file()),
            }
            first = false;
            let key = self.read_key()?;
            self.expect_byte(b':', "`:` after a field name")?;
            if key == "runs" {
                self.expect_byte(b'[', "`runs` as an array")?;
                self.place = Place::AtFirstRun;
                return Ok(());
            }
            self.skip_whitespace()?;
            let value_line = self.scanner.line;
            self.read_value()?;
            let value: Value = serde_json::from_slice(&self.value_bytes)
                .map_err(|error| self.error_at(value_line + error.line() - 1, &error))?;
            self.fields.insert(key, value);
        }
    }

    fn read_key(&mut self) -> Result<String, CliError> {
        let line = self.scanner.line;
        match self.skip_whitespace()? {
            Some(b'"') => {}
            Some(byte) => return Err(self.unexpected(byte, "a field name")),
            None => return Err(self.end_of_file()),
        }
        self.read_value()?;
        serde_json::from_slice(&self.value_bytes).map_err(|error| self.error_at(line, &error))
    }

    fn read_value(&mut self) -> Result<(), CliError> {
        self.value_bytes.clear();
        match self.scanner.value_into(&mut self.value_bytes) {
            Ok(true) => Ok(()),
            Ok(false) => Err(self.end_of_file()),
            Err(error) => Err(self.io_error(&error)),
        }
    }

    fn expect_byte(&mut self, wanted: u8, what: &str) -> Result<(), CliError> {
        match self.skip_whitespace()? {
            Some(byte) if byte == wanted => {
                self.scanner.bump();
                Ok(())
            }
            Some(byte) => Err(self.unexpected(byte, what)),
            None => Err(self.end_of_file()),
        }
    }

    fn skip_whitespace(&mut self) -> Result<Option<u8>, CliError> {
        self.scanner
            .skip_whitespace()
            .map_err(|error| self.io_error(&error))
    }

    fn error_at(&self, line: usize, detail: &dyn std::fmt::Display) -> CliError {
        CliError::bad_input(format!(
            "{}:{line}: {}: {detail}",
            self.path.display(),
            self.expected
        ))
    }

    fn unexpected(&self, byte: u8, what: &str) -> CliError {
        let found = char::from(byte).escape_default();
        self.error_at(
            self.scanner.line,
            &format!("expected {what}, found `{found}`"),
        )
    }

    fn end_of_file(&self) -> CliError {
        self.error_at(self.scanner.line, &"the file ends inside the JSON")
    }

    fn io_error(&self, error: &io::Error) -> CliError {
        CliError::bad_input(format!("cannot read {}: {error}", self.path.display()))
    }
}

/// Where [`RunsReader::read_fields`] starts: at the first field (an empty object allowed),
/// or after a field (or after `runs`), where a `,` or the closing brace comes next.
#[derive(Clone, Copy, PartialEq, Eq)]
enum FieldsFrom {
    First,
    AfterAField,
}

/// Moves through JSON text a value at a time, copying each value's bytes without parsing
/// it, and counts lines for error messages.
struct Scanner<R> {
    input: R,
    /// The line of the next byte, from 1.
    line: usize,
}

impl<R: BufRead> Scanner<R> {
    fn new(input: R) -> Self {
        Self { input, line: 1 }
    }

    /// The next byte that is not JSON whitespace, left unread; `None` at the end.
    fn skip_whitespace(&mut self) -> io::Result<Option<u8>> {
        loop {
            let chunk = self.input.fill_buf()?;
            let Some(&first) = chunk.first() else {
                return Ok(None);
            };
            if !first.is_ascii_whitespace() {
                return Ok(Some(first));
            }
            if first == b'\n' {
                self.line += 1;
            }
            self.input.consume(1);
        }
    }

    /// Moves past the byte [`Self::skip_whitespace`] just saw (never a line break).
    fn bump(&mut self) {
        self.input.consume(1);
    }

    /// Appends the next value's bytes (after whitespace) to `out`: an object or array to
    /// its matching close, a string to its closing quote, anything else up to the next
    /// delimiter. False if the input ends inside the value.
    fn value_into(&mut self, out: &mut Vec<u8>) -> io::Result<bool> {
        let Some(first) = self.skip_whitespace()? else {
            return Ok(false);
        };
        let scalar = !matches!(first, b'{' | b'[' | b'"');
        let mut value = ValueEnd::default();
        loop {
            let chunk = self.input.fill_buf()?;
            if chunk.is_empty() {
                // A number, `true`, `false` or `null` may end the input; nothing else may.
                return Ok(scalar && !out.is_empty());
            }
            let mut used = 0;
            let mut ended = false;
            for &byte in chunk {
                if scalar && (matches!(byte, b',' | b'}' | b']') || byte.is_ascii_whitespace()) {
                    ended = true;
                    break;
                }
                used += 1;
                if byte == b'\n' {
                    self.line += 1;
                }
                if !scalar && value.ends_after(byte) {
                    ended = true;
                    break;
                }
            }
            out.extend_from_slice(&chunk[..used]);
            self.input.consume(used);
            if ended {
                return Ok(true);
            }
        }
    }
}

/// Follows an object, array or string byte by byte to find where it ends.
#[derive(Default)]
struct ValueEnd {
    depth: usize,
    in_string: bool,
    escaped: bool,
}

impl ValueEnd {
    /// Takes the next byte of the value; true if it was the value's last.
    fn ends_after(&mut self, byte: u8) -> bool {
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if byte == b'\\' {
                self.escaped = true;
            } else if byte == b'"' {
                self.in_string = false;
                return self.depth == 0;
            }
            return false;
        }
        match byte {
            b'"' => self.in_string = true,
            b'{' | b'[' => self.depth += 1,
            b'}' | b']' => {
                self.depth = self.depth.saturating_sub(1);
                return self.depth == 0;
            }
            _ => {}
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file_with(name: &str, text: &str) -> PathBuf {
        let directory =
            std::env::temp_dir().join(format!("coordsim-reader-{}", std::process::id()));
        std::fs::create_dir_all(&directory).unwrap();
        let path = directory.join(name);
        std::fs::File::create(&path)
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        path
    }

    /// The values of `text`'s top level as the scanner cuts them, one per call.
    fn scanned(text: &str) -> Vec<String> {
        let mut scanner = Scanner::new(text.as_bytes());
        let mut values = Vec::new();
        loop {
            let mut out = Vec::new();
            if !scanner.value_into(&mut out).unwrap() {
                return values;
            }
            values.push(String::from_utf8(out).unwrap());
            // Past the delimiter between values.
            if scanner.skip_whitespace().unwrap().is_some() {
                scanner.bump();
            }
        }
    }

    #[test]
    fn values_are_cut_at_their_own_end_whatever_they_hold() {
        assert_eq!(
            scanned(r#"{"a": "}", "b": [1, {"c": "\"]"}]} , 12 ,"x\\" , true"#),
            [
                r#"{"a": "}", "b": [1, {"c": "\"]"}]}"#,
                "12",
                r#""x\\""#,
                "true"
            ]
        );
    }

    #[test]
    fn fields_around_runs_are_kept_in_any_order_and_runs_are_skipped_on_finish() {
        let path = file_with(
            "fields.json",
            "{\n \"interrupted\": false,\n \"runs\": [ {\"not\": \"read\"} , [] ],\n \"seeds\": {\"count\": 2}\n}\n",
        );
        let reader = RunsReader::open(&path, "expected a test file").unwrap();
        let top = reader.finish().unwrap();
        assert!(top.has_runs);
        assert_eq!(top.fields["interrupted"], Value::Bool(false));
        assert_eq!(top.fields["seeds"]["count"], 2);
        assert!(!top.fields.contains_key("runs"));
    }

    #[test]
    fn an_object_without_runs_is_read_whole_and_has_no_runs() {
        let path = file_with(
            "outcome.json",
            "{\"seed\": 5, \"history\": {\"records\": []}}",
        );
        let mut reader = RunsReader::open(&path, "expected a test file").unwrap();
        assert!(reader.next_run().unwrap().is_none());
        let top = reader.finish().unwrap();
        assert!(!top.has_runs);
        assert_eq!(top.fields["seed"], 5);
        assert_eq!(top.fields.len(), 2);
    }

    #[test]
    fn bad_files_are_one_error_naming_the_line_and_what_was_expected() {
        let cases = [
            (
                "[]",
                ":1: expected a test file: expected a JSON object, found `[`",
            ),
            (
                "{\"runs\": 3}",
                ":1: expected a test file: expected `runs` as an array, found `3`",
            ),
            (
                "{\"a\": 1\n\n \"b\": 2}",
                ":3: expected a test file: expected `,` or `}` after a field",
            ),
            (
                "{\"runs\": [\n  {\"seed\": ",
                ":2: expected a test file: the file ends inside the JSON",
            ),
            (
                "{} x",
                ":1: expected a test file: expected nothing after the closing brace",
            ),
        ];
        for (text, wanted) in cases {
            let path = file_with("bad.json", text);
            let error = RunsReader::open(&path, "expected a test file")
                .and_then(|mut reader| {
                    while reader.next_run()?.is_some() {}
                    reader.finish()
                })
                .err()
                .unwrap_or_else(|| panic!("{text:?} was read"));
            assert!(
                error.message().contains(wanted),
                "{text:?}: {}",
                error.message()
            );
        }
    }
}
