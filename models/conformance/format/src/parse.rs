//! Reading a probe file: steps, answers and declared deviations, checked against the verb
//! table when read, so that bad input is one line naming the file, the probe and the field.

use crate::verbs::{Store, Verb, fits, verbs, wanted};
use std::{fmt, path::Path};

/// One probe: a file's steps, in order.
#[derive(Clone, Debug)]
pub struct Probe {
    /// The probe's name: its file name without `.probe`.
    pub name: String,
    /// The store it probes (the folder it lives in).
    pub store: Store,
    /// What the probe shows (its `# about:` line, required).
    pub about: String,
    /// The lines before the first step (comments and the `about` line), kept for rewriting.
    pub header: Vec<String>,
    /// The steps.
    pub steps: Vec<Step>,
}

/// One step and what the real server answered.
#[derive(Clone, Debug)]
pub struct Step {
    /// Its line number in the file (1-based).
    pub line: usize,
    /// The step as written.
    pub text: String,
    /// Comment lines just before it.
    pub comments: Vec<String>,
    /// Who does what.
    pub kind: StepKind,
    /// Positional arguments (as many as the verb has).
    pub args: Vec<String>,
    /// `key=value` arguments, in the order written.
    pub named: Vec<(String, String)>,
    /// Bare flags.
    pub flags: Vec<String>,
    /// The real server's answer, normalised.
    pub answer: Vec<String>,
    /// A declared deviation, if the model answers otherwise on purpose.
    pub deviation: Option<Deviation>,
}

/// Who acts in a step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepKind {
    /// Client `client` (1 for `c1`) calls `verb`.
    Client {
        /// 1-based client number.
        client: u32,
        /// The verb.
        verb: &'static str,
    },
    /// Time passes: real time on a server, simulated time in a model.
    Sleep {
        /// How long.
        duration_ms: u64,
    },
}

/// A difference the model keeps on purpose, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deviation {
    /// Why, citing the server's code, an issue or a design decision.
    pub reason: String,
    /// What the model answers instead.
    pub model: Vec<String>,
}

/// A probe file that cannot be read: one line naming the file, the probe, the line and the
/// field, and what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeError {
    /// The file.
    pub file: String,
    /// Its line (0 when the file as a whole is wrong).
    pub line: usize,
    /// The field that is wrong (`verb`, `client`, an argument's name, `about`, `answer`, …).
    pub field: String,
    /// What was expected there.
    pub expected: String,
}

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let probe = Path::new(&self.file)
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_default();
        write!(
            f,
            "{}:{}: probe `{probe}`, field `{}`: expected {}",
            self.file, self.line, self.field, self.expected
        )
    }
}

impl std::error::Error for ProbeError {}

impl Step {
    /// The positional argument called `name` in the verb table.
    pub fn arg(&self, index: usize) -> &str {
        &self.args[index]
    }

    /// A `key=value` argument.
    pub fn named(&self, key: &str) -> Option<&str> {
        self.named
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// A whole-number `key=value` argument (checked when the file was read).
    pub fn named_int(&self, key: &str) -> Option<i64> {
        self.named(key).map(|v| v.parse().expect("checked on read"))
    }

    /// A whole-number positional argument (checked when the file was read).
    pub fn arg_int(&self, index: usize) -> i64 {
        self.args[index].parse().expect("checked on read")
    }

    /// Whether a bare flag is present.
    pub fn flag(&self, name: &str) -> bool {
        self.flags.iter().any(|f| f == name)
    }

    /// The verb, or `sleep`.
    pub fn verb(&self) -> &'static str {
        match self.kind {
            StepKind::Client { verb, .. } => verb,
            StepKind::Sleep { .. } => "sleep",
        }
    }
}

impl Probe {
    /// Reads a probe file; its store is the name of the folder it is in.
    pub fn load(path: &Path) -> Result<Probe, ProbeError> {
        let file = path.display().to_string();
        let whole = |field: &str, expected: String| ProbeError {
            file: file.clone(),
            line: 0,
            field: field.to_string(),
            expected,
        };
        let store = path
            .parent()
            .and_then(|dir| dir.file_name())
            .and_then(|name| Store::from_name(&name.to_string_lossy()))
            .ok_or_else(|| whole("store", "the file in a folder named zk or etcd".to_string()))?;
        let text = std::fs::read_to_string(path)
            .map_err(|e| whole("file", format!("a readable file ({e})")))?;
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        Probe::parse(&file, &name, store, &text)
    }

    /// Reads a probe from its text; `file` names it in errors.
    pub fn parse(file: &str, name: &str, store: Store, text: &str) -> Result<Probe, ProbeError> {
        let error = |line: usize, field: &str, expected: String| ProbeError {
            file: file.to_string(),
            line,
            field: field.to_string(),
            expected,
        };
        let lines: Vec<&str> = text.lines().collect();
        let mut header = Vec::new();
        let mut index = 0;
        // The header: comments and blank lines up to the first step.
        while index < lines.len()
            && (lines[index].starts_with('#') || lines[index].trim().is_empty())
        {
            if lines[index].starts_with('#') {
                header.push(lines[index].to_string());
            }
            index += 1;
        }
        let about = header
            .iter()
            .find_map(|line| line.strip_prefix("# about:"))
            .map(|about| about.trim().to_string())
            .filter(|about| !about.is_empty())
            .ok_or_else(|| {
                error(
                    1,
                    "about",
                    "a `# about: …` line saying what the probe shows".into(),
                )
            })?;
        let mut steps = Vec::new();
        let mut comments = Vec::new();
        while index < lines.len() {
            let line = lines[index];
            if line.trim().is_empty() {
                index += 1;
                continue;
            }
            if line.starts_with('#') {
                comments.push(line.to_string());
                index += 1;
                continue;
            }
            let line_number = index + 1;
            let mut step = read_step(line, line_number, store)
                .map_err(|(field, expected)| error(line_number, &field, expected))?;
            step.comments = std::mem::take(&mut comments);
            index += 1;
            if lines.get(index) != Some(&"----") {
                return Err(error(
                    index + 1,
                    "answer",
                    "`----` under the step, then its answer".into(),
                ));
            }
            index += 1;
            let mut answer = Vec::new();
            let mut deviation: Option<Deviation> = None;
            while index < lines.len() && !lines[index].trim().is_empty() {
                let line = lines[index];
                if let Some(reason) = line.strip_prefix("deviation:") {
                    if deviation.is_some() {
                        return Err(error(
                            index + 1,
                            "deviation",
                            "at most one deviation per step".into(),
                        ));
                    }
                    if reason.trim().is_empty() {
                        return Err(error(
                            index + 1,
                            "deviation",
                            "a reason after `deviation:`".into(),
                        ));
                    }
                    deviation = Some(Deviation {
                        reason: reason.trim().to_string(),
                        model: Vec::new(),
                    });
                } else if let Some(deviation) = &mut deviation {
                    deviation.model.push(line.to_string());
                } else {
                    answer.push(line.to_string());
                }
                index += 1;
            }
            if answer.is_empty() {
                return Err(error(
                    line_number + 1,
                    "answer",
                    "at least one line of answer under `----`".into(),
                ));
            }
            if deviation.as_ref().is_some_and(|d| d.model.is_empty()) {
                return Err(error(
                    line_number,
                    "deviation",
                    "the model's answer under the deviation's reason".into(),
                ));
            }
            step.answer = answer;
            step.deviation = deviation;
            steps.push(step);
        }
        if steps.is_empty() {
            return Err(error(0, "steps", "at least one step".into()));
        }
        Ok(Probe {
            name: name.to_string(),
            store,
            about,
            header,
            steps,
        })
    }
}

/// Reads one step line; on error, the field and what was expected.
fn read_step(line: &str, line_number: usize, store: Store) -> Result<Step, (String, String)> {
    let mut words = line.split_whitespace();
    let first = words.next().unwrap_or_default();
    let blank = |kind| Step {
        line: line_number,
        text: line.to_string(),
        comments: Vec::new(),
        kind,
        args: Vec::new(),
        named: Vec::new(),
        flags: Vec::new(),
        answer: Vec::new(),
        deviation: None,
    };
    if first == "sleep" {
        let duration_ms = words.next().and_then(|ms| ms.parse().ok()).ok_or((
            "sleep".to_string(),
            "`sleep MS`, a whole number of milliseconds".to_string(),
        ))?;
        if words.next().is_some() {
            return Err(("sleep".into(), "nothing after `sleep MS`".into()));
        }
        return Ok(blank(StepKind::Sleep { duration_ms }));
    }
    let client = first
        .strip_prefix('c')
        .and_then(|n| n.parse::<u32>().ok())
        .filter(|n| (1..=9).contains(n))
        .ok_or((
            "client".to_string(),
            format!("a client c1 … c9 or `sleep`, not `{first}`"),
        ))?;
    let verb_word = words
        .next()
        .ok_or(("verb".to_string(), "a verb after the client".to_string()))?;
    let table = verbs(store);
    let verb: &Verb = table.iter().find(|v| v.name == verb_word).ok_or_else(|| {
        let names: Vec<&str> = table.iter().map(|v| v.name).collect();
        (
            "verb".to_string(),
            format!(
                "one of {} for {} probes, not `{verb_word}`",
                names.join(", "),
                store.name()
            ),
        )
    })?;
    let mut step = blank(StepKind::Client {
        client,
        verb: verb.name,
    });
    for word in words {
        if step.args.len() < verb.positional.len() {
            let (name, kind) = verb.positional[step.args.len()];
            if !fits(kind, word) {
                return Err((name.to_string(), format!("{}, not `{word}`", wanted(kind))));
            }
            step.args.push(word.to_string());
        } else if let Some((key, value)) = word.split_once('=') {
            let (_, kind) = verb.named.iter().find(|(k, _)| *k == key).ok_or_else(|| {
                let keys: Vec<&str> = verb.named.iter().map(|(k, _)| *k).collect();
                (
                    key.to_string(),
                    format!("one of [{}] for `{}`", keys.join(", "), verb.name),
                )
            })?;
            if !fits(*kind, value) {
                return Err((key.to_string(), format!("{}, not `{value}`", wanted(*kind))));
            }
            if step.named.iter().any(|(k, _)| k == key) {
                return Err((key.to_string(), "each argument once".to_string()));
            }
            step.named.push((key.to_string(), value.to_string()));
        } else if verb.flags.contains(&word) {
            step.flags.push(word.to_string());
        } else {
            return Err((
                word.to_string(),
                format!(
                    "a `key=value` argument or one of the flags [{}] for `{}`",
                    verb.flags.join(", "),
                    verb.name
                ),
            ));
        }
    }
    if step.args.len() < verb.positional.len() {
        let (name, _) = verb.positional[step.args.len()];
        return Err((
            name.to_string(),
            format!(
                "`{}` takes {} positional argument(s)",
                verb.name,
                verb.positional.len()
            ),
        ));
    }
    Ok(step)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Probe, ProbeError> {
        Probe::parse("probes/zk/x.probe", "x", Store::Zk, text)
    }

    #[test]
    fn a_probe_reads_its_steps_answers_and_deviations() {
        let probe = parse(
            "# about: a test\n\nc1 connect\n----\nok session=s1\n\n# why\nc1 create /a data=x mode=ephemeral\n----\nok path=/a\ndeviation: because\nerr NoNode\n\nsleep 10\n----\nok\n",
        )
        .unwrap();
        assert_eq!(probe.about, "a test");
        assert_eq!(probe.steps.len(), 3);
        let create = &probe.steps[1];
        assert_eq!(
            create.kind,
            StepKind::Client {
                client: 1,
                verb: "create"
            }
        );
        assert_eq!(create.arg(0), "/a");
        assert_eq!(create.named("mode"), Some("ephemeral"));
        assert_eq!(create.comments, vec!["# why".to_string()]);
        assert_eq!(
            create.deviation.as_ref().unwrap().model,
            vec!["err NoNode".to_string()]
        );
        assert_eq!(probe.steps[2].kind, StepKind::Sleep { duration_ms: 10 });
        // Rewriting with the same answers gives the file back.
        let answers: Vec<Vec<String>> = probe.steps.iter().map(|s| s.answer.clone()).collect();
        let again = parse(&probe.rewritten(&answers)).unwrap();
        assert_eq!(again.steps[1].deviation, create.deviation);
    }

    #[test]
    fn bad_input_names_the_file_the_probe_the_line_and_the_field() {
        let cases = [
            ("c1 connect\n----\nok\n", "field `about`"),
            (
                "# about: a\nc1 frobnicate /a\n----\nok\n",
                "probes/zk/x.probe:2: probe `x`, field `verb`: expected one of connect",
            ),
            (
                "# about: a\nc1 delete /a version=x\n----\nok\n",
                "field `version`: expected a whole number, not `x`",
            ),
            (
                "# about: a\nc1 delete /a colour=red\n----\nok\n",
                "field `colour`",
            ),
            ("# about: a\nc1 delete\n----\nok\n", "field `path`"),
            ("# about: a\nc1 delete /a\nok\n", "field `answer`"),
            ("# about: a\nc1 delete /a\n----\n\n", "field `answer`"),
            ("# about: a\nc12 delete /a\n----\nok\n", "field `client`"),
            (
                "# about: a\nc1 get /a watch=x1\n----\nok\n",
                "a watch role such as w1",
            ),
        ];
        for (text, wanted) in cases {
            let message = parse(text).unwrap_err().to_string();
            assert!(message.contains(wanted), "{message:?} lacks {wanted:?}");
            assert!(!message.contains('\n'), "one line: {message:?}");
        }
    }

    #[test]
    fn a_sort_option_outside_etcds_names_is_bad_input() {
        let parse = |text| Probe::parse("probes/etcd/x.probe", "x", Store::Etcd, text);
        let message = parse("# about: a\nc1 get a sort_target=size\n----\nok\n")
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("field `sort_target`: expected one of key, version, create"),
            "{message}"
        );
        assert!(parse("# about: a\nc1 get a sort_order=descend keys_only\n----\nok\n").is_ok());
    }
}
