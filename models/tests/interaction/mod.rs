//! A data-driven interaction harness for the Raft core, in the style of etcd-io/raft's
//! `rafttest` interaction files.
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
//! The harness runs each command against a set of in-memory cores and compares what they
//! did (rendered effects; `SetTimer` is left out) with the expected output. Run with
//! `REWRITE_SCRIPTS=1` to print the actual transcript instead of failing (then review it).
//!
//! Commands:
//! - `add-nodes N [bugs=a,b] [max-entries=K]` — servers s1..sN with fixed timeouts.
//! - `campaign sX` — fire sX's election timer (PreVote first unless the bug disables it).
//! - `tick sX [ms=M]` — advance sX's clock by M ms (default: to its armed timer) and tick.
//! - `deliver [from=sX] [to=sY] [drop]` — deliver (or drop) queued messages once.
//! - `duplicate from=sX to=sY` — the network keeps a delayed copy of those messages.
//! - `release` — the delayed copies arrive (are queued for delivery again).
//! - `persist sX...` — make sX's writes durable and release its held messages.
//! - `propose sX value` — propose a command.
//! - `read-index sX id` — ask for a linearizable read.
//! - `crash sX` / `restart sX` — lose volatile state / restart from durable state.
//! - `status sX...` — term, role, commit, applied, log.

use crate::script_runner::node_id;
use models::raft::{
    AppendOutcome, DurableWrite, Effect, Entry, EntryPayload, HardState, Message, Observation,
    PersistId, RaftBug, RaftConfig, RaftCore, ReadRequestId, ScriptedTimeouts,
};
use sim::{NodeId, clock::LocalTime};
use std::{collections::BTreeMap, fmt::Write, time::Duration};

type Command = String;

struct Node {
    core: Option<RaftCore<Command>>,
    config: RaftConfig,
    /// What survives a crash.
    durable_hard_state: HardState,
    durable_log: Vec<Entry<Command>>,
    /// Writes issued but not yet durable, in order.
    unsynced: Vec<(PersistId, DurableWrite<Command>)>,
    /// Messages waiting for a write to be durable.
    held: Vec<(PersistId, NodeId, Message<Command>)>,
    now: LocalTime,
    armed_timer: Option<LocalTime>,
    /// The durable log as the volatile writes would leave it (what the core sees).
    volatile_log: Vec<Entry<Command>>,
    volatile_hard_state: HardState,
}

/// The harness: nodes and in-flight messages.
pub struct Interaction {
    nodes: BTreeMap<NodeId, Node>,
    in_flight: Vec<(NodeId, NodeId, Message<Command>)>,
    delayed: Vec<(NodeId, NodeId, Message<Command>)>,
}

fn render_entry(entry: &Entry<Command>) -> String {
    match &entry.payload {
        EntryPayload::Noop => format!("{}/{} noop", entry.index, entry.term),
        EntryPayload::Command(command) => format!("{}/{} {}", entry.index, entry.term, command),
    }
}

fn render_entries(entries: &[Entry<Command>]) -> String {
    let parts: Vec<String> = entries.iter().map(render_entry).collect();
    format!("[{}]", parts.join(", "))
}

fn render_message(message: &Message<Command>) -> String {
    match message {
        Message::PreVote {
            term,
            last_log_index,
            last_log_term,
        } => format!("PreVote term={term} last={last_log_index}/{last_log_term}"),
        Message::PreVoteResponse { term, granted } => {
            format!("PreVoteResponse term={term} granted={granted}")
        }
        Message::RequestVote {
            term,
            last_log_index,
            last_log_term,
        } => format!("RequestVote term={term} last={last_log_index}/{last_log_term}"),
        Message::RequestVoteResponse { term, granted } => {
            format!("RequestVoteResponse term={term} granted={granted}")
        }
        Message::AppendEntries {
            term,
            prev_log_index,
            prev_log_term,
            entries,
            leader_commit,
        } => format!(
            "AppendEntries term={term} prev={prev_log_index}/{prev_log_term} entries={} commit={leader_commit}",
            render_entries(entries)
        ),
        Message::AppendEntriesResponse { term, outcome } => match outcome {
            AppendOutcome::Accepted { match_index } => {
                format!("AppendEntriesResponse term={term} accepted match={match_index}")
            }
            AppendOutcome::Rejected {
                rejected_prev_index,
                retry_hint,
            } => format!(
                "AppendEntriesResponse term={term} rejected prev={rejected_prev_index} hint={retry_hint}"
            ),
        },
        Message::Heartbeat {
            term,
            commit,
            read_round,
        } => format!("Heartbeat term={term} commit={commit} round={read_round}"),
        Message::HeartbeatResponse { term, read_round } => {
            format!("HeartbeatResponse term={term} round={read_round}")
        }
        // The harness sets no snapshot threshold: its logs are never compacted.
        Message::InstallSnapshot { term, snapshot } => format!(
            "InstallSnapshot term={term} snapshot={}/{}",
            snapshot.index, snapshot.term
        ),
    }
}

fn render_write(write: &DurableWrite<Command>) -> String {
    let mut parts = Vec::new();
    if let Some(hard_state) = &write.hard_state {
        let vote = hard_state
            .voted_for
            .map_or("none".to_string(), |node| node.to_string());
        parts.push(format!("term={} vote={vote}", hard_state.term));
    }
    if let Some(index) = write.truncate_after {
        parts.push(format!("truncate-after={index}"));
    }
    if !write.append.is_empty() {
        parts.push(format!("append={}", render_entries(&write.append)));
    }
    parts.join(" ")
}

fn apply_write(
    hard_state: &mut HardState,
    log: &mut Vec<Entry<Command>>,
    write: &DurableWrite<Command>,
) {
    if let Some(new) = write.hard_state {
        *hard_state = new;
    }
    if let Some(index) = write.truncate_after {
        log.truncate(index as usize);
    }
    log.extend(write.append.iter().cloned());
}

impl Node {
    fn core(&mut self) -> &mut RaftCore<Command> {
        self.core.as_mut().expect("node is crashed")
    }
}

impl Default for Interaction {
    fn default() -> Self {
        Self::new()
    }
}

impl Interaction {
    /// An empty harness.
    pub fn new() -> Self {
        Self {
            nodes: BTreeMap::new(),
            in_flight: Vec::new(),
            delayed: Vec::new(),
        }
    }

    fn boot(
        config: &RaftConfig,
        now: LocalTime,
        hard_state: HardState,
        log: Vec<Entry<Command>>,
    ) -> RaftCore<Command> {
        // Every node uses the same fixed timeout: nothing campaigns unless a script says so.
        let jitter = ScriptedTimeouts::new([], Duration::from_millis(1_000));
        RaftCore::restore(config.clone(), Box::new(jitter), now, hard_state, None, log)
    }

    /// Runs the effects `node` produced, rendering them into `out`.
    fn collect(&mut self, node: NodeId, out: &mut String) {
        let effects = {
            let entry = self.nodes.get_mut(&node).expect("known node");
            entry.core().take_effects()
        };
        for effect in effects {
            let entry = self.nodes.get_mut(&node).expect("known node");
            match effect {
                Effect::Send { to, message } => {
                    writeln!(out, "{node}->{to} {}", render_message(&message)).unwrap();
                    self.in_flight.push((node, to, message));
                }
                Effect::Persist { id, write } => {
                    writeln!(out, "{node} persist {id}: {}", render_write(&write)).unwrap();
                    apply_write(
                        &mut entry.volatile_hard_state,
                        &mut entry.volatile_log,
                        &write,
                    );
                    entry.unsynced.push((id, write));
                }
                Effect::SendAfterPersist { after, to, message } => {
                    writeln!(
                        out,
                        "{node}->{to} after {after}: {}",
                        render_message(&message)
                    )
                    .unwrap();
                    entry.held.push((after, to, message));
                }
                Effect::Apply { entry: applied } => {
                    writeln!(out, "{node} apply {}", render_entry(&applied)).unwrap();
                }
                Effect::ReadReady {
                    request,
                    read_index,
                } => {
                    writeln!(out, "{node} read {request} ready at index {read_index}").unwrap();
                }
                Effect::ReadRejected {
                    request,
                    leader_hint,
                } => {
                    let hint = leader_hint.map_or("none".to_string(), |n| n.to_string());
                    writeln!(out, "{node} read {request} rejected (leader {hint})").unwrap();
                }
                Effect::SetTimer { at } => entry.armed_timer = Some(at),
                Effect::SnapshotDue { index } => {
                    writeln!(out, "{node} snapshot due at {index}").unwrap();
                }
                Effect::RestoreSnapshot { snapshot } => {
                    writeln!(
                        out,
                        "{node} restores snapshot {}/{}",
                        snapshot.index, snapshot.term
                    )
                    .unwrap();
                }
                Effect::Observe(observation) => {
                    let text = match observation {
                        Observation::BecameLeader { term } => {
                            format!("became leader of term {term}")
                        }
                        Observation::SteppedDown { term } => {
                            format!("stepped down from term {term}")
                        }
                        Observation::TermPersisted { term } => format!("term {term} is durable"),
                        Observation::SnapshotTaken { index, term } => {
                            format!("took a snapshot at {index}/{term}")
                        }
                    };
                    writeln!(out, "{node} {text}").unwrap();
                }
            }
        }
    }

    /// Runs one command and returns what happened.
    pub fn run(&mut self, command: &str) -> String {
        let mut out = String::new();
        let mut words = command.split_whitespace();
        let verb = words.next().expect("a command");
        let args: Vec<&str> = words.collect();
        match verb {
            "add-nodes" => self.add_nodes(&args, &mut out),
            "campaign" | "tick" => {
                let id = node_id(args[0]);
                let node = self.nodes.get_mut(&id).expect("known node");
                node.now = match keyed(&args, "ms") {
                    Some(ms) => node.now + Duration::from_millis(ms.parse().expect("ms")),
                    None => node.armed_timer.expect("a timer is armed").max(node.now),
                };
                let now = node.now;
                node.core().tick(now);
                self.collect(id, &mut out);
            }
            "deliver" => self.deliver(&args, &mut out),
            "duplicate" => {
                let from = keyed(&args, "from").map(node_id);
                let to = keyed(&args, "to").map(node_id);
                for (f, t, message) in &self.in_flight {
                    if from.is_none_or(|x| x == *f) && to.is_none_or(|x| x == *t) {
                        writeln!(out, "delayed copy of {f}->{t} {}", render_message(message))
                            .unwrap();
                        self.delayed.push((*f, *t, message.clone()));
                    }
                }
            }
            "release" => {
                for (f, t, message) in std::mem::take(&mut self.delayed) {
                    writeln!(out, "released {f}->{t} {}", render_message(&message)).unwrap();
                    self.in_flight.push((f, t, message));
                }
            }
            "persist" => self.persist(&args, &mut out),
            "propose" => {
                let id = node_id(args[0]);
                let node = self.nodes.get_mut(&id).expect("known node");
                let now = node.now;
                match node.core().propose(now, args[1].to_string()) {
                    Ok(slot) => {
                        writeln!(out, "{id} proposed at {}/{}", slot.index, slot.term).unwrap()
                    }
                    Err(error) => writeln!(out, "{id} refused: {error:?}").unwrap(),
                }
                self.collect(id, &mut out);
            }
            "read-index" => {
                let id = node_id(args[0]);
                let request = ReadRequestId(args[1].parse().expect("a read id"));
                let node = self.nodes.get_mut(&id).expect("known node");
                let now = node.now;
                node.core().read_index(now, request);
                self.collect(id, &mut out);
            }
            "crash" => self.crash(&args, &mut out),
            "restart" => self.restart(&args, &mut out),
            "status" => self.status(&args, &mut out),
            other => panic!("unknown command {other}"),
        }
        if out.is_empty() {
            out.push_str("ok\n");
        }
        out
    }

    /// `add-nodes N [bugs=…] [max-entries=…]`: N voters, booted with empty durable state.
    fn add_nodes(&mut self, args: &[&str], out: &mut String) {
        let count: usize = args[0].parse().expect("a node count");
        let bugs: Vec<RaftBug> = keyed(args, "bugs")
            .map(|list| {
                list.split(',')
                    .map(|name| name.parse().expect("a bug name"))
                    .collect()
            })
            .unwrap_or_default();
        let voters: Vec<NodeId> = (0..count).map(NodeId::server).collect();
        for &id in &voters {
            let mut config = RaftConfig::new(id, voters.clone()).with_bugs(bugs.clone());
            if let Some(max) = keyed(args, "max-entries") {
                config.max_entries_per_append = max.parse().expect("a count");
            }
            let now = LocalTime::from_millis(0);
            let core = Self::boot(&config, now, HardState::default(), Vec::new());
            self.nodes.insert(
                id,
                Node {
                    core: Some(core),
                    config,
                    durable_hard_state: HardState::default(),
                    durable_log: Vec::new(),
                    unsynced: Vec::new(),
                    held: Vec::new(),
                    now,
                    armed_timer: None,
                    volatile_log: Vec::new(),
                    volatile_hard_state: HardState::default(),
                },
            );
            self.collect(id, &mut String::new());
        }
        writeln!(out, "ok").unwrap();
    }

    /// `deliver [from=…] [to=…] [drop]`: the messages in flight that match, stepped into their receivers (or dropped).
    fn deliver(&mut self, args: &[&str], out: &mut String) {
        let from = keyed(args, "from").map(node_id);
        let to = keyed(args, "to").map(node_id);
        let drop = args.contains(&"drop");
        let (chosen, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.in_flight)
            .into_iter()
            .partition(|(f, t, _)| from.is_none_or(|x| x == *f) && to.is_none_or(|x| x == *t));
        self.in_flight = rest;
        for (f, t, message) in chosen {
            if drop {
                writeln!(out, "dropped {f}->{t} {}", render_message(&message)).unwrap();
                continue;
            }
            let node = self.nodes.get_mut(&t).expect("known node");
            let Some(core) = node.core.as_mut() else {
                writeln!(out, "lost {f}->{t} (crashed) {}", render_message(&message)).unwrap();
                continue;
            };
            core.step(node.now, f, message);
            self.collect(t, out);
        }
    }

    /// `persist sX …`: each node's unsynced writes made durable, the messages held for them sent.
    fn persist(&mut self, args: &[&str], out: &mut String) {
        for name in args {
            let id = node_id(name);
            let node = self.nodes.get_mut(&id).expect("known node");
            let Some(&(last, _)) = node.unsynced.last() else {
                continue;
            };
            for (_, write) in std::mem::take(&mut node.unsynced) {
                apply_write(&mut node.durable_hard_state, &mut node.durable_log, &write);
            }
            let now = node.now;
            let released: Vec<_> = std::mem::take(&mut node.held);
            for (after, to, message) in released {
                if after <= last {
                    self.in_flight.push((id, to, message));
                } else {
                    self.nodes
                        .get_mut(&id)
                        .unwrap()
                        .held
                        .push((after, to, message));
                }
            }
            writeln!(out, "{id} durable through {last}").unwrap();
            self.nodes
                .get_mut(&id)
                .unwrap()
                .core()
                .on_persisted(now, last);
            self.collect(id, out);
        }
    }

    /// `crash sX`: the node loses its core, what it had not synced, and the messages to it.
    fn crash(&mut self, args: &[&str], out: &mut String) {
        let id = node_id(args[0]);
        let node = self.nodes.get_mut(&id).expect("known node");
        node.core = None;
        node.unsynced.clear();
        node.held.clear();
        node.volatile_log = node.durable_log.clone();
        node.volatile_hard_state = node.durable_hard_state;
        self.in_flight.retain(|(_, to, _)| *to != id);
        writeln!(
            out,
            "{id} crashed; durable log {}",
            render_entries(&node.durable_log)
        )
        .unwrap();
    }

    /// `restart sX`: the node boots again from what is durable.
    fn restart(&mut self, args: &[&str], out: &mut String) {
        let id = node_id(args[0]);
        let node = self.nodes.get_mut(&id).expect("known node");
        let core = Self::boot(
            &node.config,
            node.now,
            node.durable_hard_state,
            node.durable_log.clone(),
        );
        node.core = Some(core);
        node.armed_timer = None;
        writeln!(
            out,
            "{id} restarted at term {}",
            node.durable_hard_state.term
        )
        .unwrap();
        self.collect(id, &mut String::new());
    }

    /// `status sX …`: each node's term, role, commit, applied index and log.
    fn status(&mut self, args: &[&str], out: &mut String) {
        for name in args {
            let id = node_id(name);
            let node = self.nodes.get_mut(&id).expect("known node");
            match node.core.as_ref() {
                None => writeln!(out, "{id} crashed").unwrap(),
                Some(core) => {
                    let log: Vec<Entry<Command>> = (1..=core.log().last_index())
                        .map(|index| core.log().get(index).unwrap().clone())
                        .collect();
                    writeln!(
                        out,
                        "{id} term={} role={:?} commit={} applied={} log={}",
                        core.term(),
                        core.role(),
                        core.commit_index(),
                        core.applied_index(),
                        render_entries(&log)
                    )
                    .unwrap();
                }
            }
        }
    }
}

/// One `sX apply i/t …` line of a transcript.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppliedLine {
    /// Which command block (0-based) printed it.
    pub block: usize,
    /// The node.
    pub node: String,
    /// Log index.
    pub index: u64,
    /// Entry term.
    pub term: u64,
}

/// What a script run printed, block by block.
pub struct Transcript {
    /// The output of each command, in order.
    pub blocks: Vec<String>,
}

impl Transcript {
    /// Every apply, in order.
    pub fn applied(&self) -> Vec<AppliedLine> {
        let mut applied = Vec::new();
        for (block, text) in self.blocks.iter().enumerate() {
            for line in text.lines() {
                let mut words = line.split_whitespace();
                let (Some(node), Some("apply"), Some(slot)) =
                    (words.next(), words.next(), words.next())
                else {
                    continue;
                };
                let (index, term) = slot.split_once('/').expect("index/term");
                applied.push(AppliedLine {
                    block,
                    node: node.to_string(),
                    index: index.parse().unwrap(),
                    term: term.parse().unwrap(),
                });
            }
        }
        applied
    }

    /// Pairs of applies of the same index with different terms (State Machine Safety).
    pub fn divergent_applies(&self) -> Vec<(AppliedLine, AppliedLine)> {
        let applied = self.applied();
        let mut divergent = Vec::new();
        for (position, first) in applied.iter().enumerate() {
            for later in &applied[position + 1..] {
                if later.index == first.index && later.term != first.term {
                    divergent.push((first.clone(), later.clone()));
                }
            }
        }
        divergent
    }
}

/// Runs the script in `path` (relative to the crate), comparing every block's output.
pub fn run_script(path: &str) -> Transcript {
    let mut interaction = Interaction::new();
    let blocks = crate::script_runner::run_script(path, |command| interaction.run(command));
    Transcript { blocks }
}

/// The value of the argument `name=value` among `args`, if given.
fn keyed<'a>(args: &[&'a str], name: &str) -> Option<&'a str> {
    args.iter().find_map(|arg| {
        arg.strip_prefix(name)
            .and_then(|rest| rest.strip_prefix('='))
    })
}
