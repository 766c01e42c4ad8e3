//! The HTML timeline of a run (`coordsim replay --timeline`): one self-contained page (no
//! network; CSS and JavaScript inline, from `page.html`) with the run's data embedded as
//! JSON and drawn on a `<canvas>`, so that a run of tens of thousands of records stays
//! usable (only what is in view is drawn).
//!
//! Lanes: the world (partitions, clogs, network conditions), then one per server (its
//! leaderships with their terms or epochs), client (ZooKeeper sessions and etcd leases;
//! lock holds and election leaderships with their tokens; operations) and resource. Faults
//! that act on one node (crashes, pauses, clock drift, isolation) shade its lane; every
//! record is a tick on its node's lane; phases and violations are vertical lines. The page
//! opens zoomed to the violation (the records `--around` it on each side), or to the whole
//! run when there is none.
//!
//! Every span is read from the history with the checks' own readers (`checks::history`):
//! what the timeline shows is what the checks judged.

use crate::describe::{Focus, FocusKind, describe_record, describe_value, first_timed_violation};
use checks::history::{
    elections,
    faults::fired_faults,
    healed_at, leaders, leases,
    lock_waits::{Lines, WaitEnd, line_waits},
    locks,
};
use scenarios::{Outcome, Scenario, scenario::Store};
use serde::Serialize;
use sim::{
    NodeId,
    fault::Fault,
    history::{
        Event, FaultOutcome, History, OpResult, Operation, PhaseEvent, Record, Response,
        kv::{KvOperation, KvResponse},
        zk::ZkEvent,
    },
    time::SimTime,
};
use std::collections::BTreeMap;

const PAGE: &str = include_str!("page.html");

/// The page's data, embedded as JSON (read by `page.html`'s script).
#[derive(Serialize)]
struct Data {
    title: String,
    /// The outcome as `coordsim run` prints it.
    outcome: String,
    /// Simulated time at the end of the run, nanoseconds.
    end_ns: u64,
    lanes: Vec<Lane>,
    spans: Vec<Span>,
    marks: Vec<Mark>,
    /// Every record: [time in nanoseconds, lane, category, the record on one line].
    records: Vec<(u64, usize, Category, String)>,
    focus: Option<FocusData>,
}

#[derive(Serialize)]
struct Lane {
    name: String,
    kind: LaneKind,
    /// Whether the evidence of the violation the page opens at names this node: its lane
    /// is marked.
    violated: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum LaneKind {
    /// Faults that act on the network as a whole.
    World,
    Server,
    Client,
    Resource,
}

/// Something that lasts, on one row of a lane (`row` -1: shades the whole lane).
#[derive(Serialize)]
struct Span {
    lane: usize,
    row: i8,
    from_ns: u64,
    /// `None`: still going at the end of the run.
    to_ns: Option<u64>,
    kind: SpanKind,
    label: String,
}

#[derive(Clone, Copy, Serialize)]
#[serde(rename_all = "snake_case")]
enum SpanKind {
    Leader,
    Session,
    Lease,
    Lock,
    SharedLock,
    /// A wait in a lock's (or an election's) line, from the request to the acquisition or
    /// giving up.
    LockWait,
    Election,
    OpOk,
    OpFail,
    OpUnknown,
    Partition,
    Clog,
    Network,
    Crash,
    Pause,
    Isolated,
    ClockDrift,
    ClockStep,
    Skipped,
}

/// An instant that concerns every lane: a phase of the run, a violation.
#[derive(Serialize)]
struct Mark {
    at_ns: u64,
    kind: MarkKind,
    label: String,
}

#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
enum MarkKind {
    Phase,
    Violation,
}

/// What a record is about, for its tick's colour.
#[derive(Clone, Copy, Serialize)]
#[serde(rename_all = "snake_case")]
enum Category {
    Operation,
    Protocol,
    Recipe,
    Session,
    Fault,
    Other,
}

#[derive(Serialize)]
struct FocusData {
    at_ns: u64,
    kind: FocusKind,
    label: String,
    /// The view the page opens with: the records `around` the focus on each side.
    from_ns: u64,
    to_ns: u64,
    /// The record the focus is on.
    record: usize,
}

/// The page for a replayed run: `outcome` of `scenario`, its `history`, opened on `focus`
/// with `around` records on each side in view.
pub fn render(
    title: &str,
    scenario: &Scenario,
    outcome: &Outcome,
    history: &History,
    focus: Option<&Focus>,
    around: usize,
) -> String {
    let data = data(title, scenario, outcome, history, focus, around);
    // `<` only occurs inside JSON strings, where `\u003c` means the same: the data cannot
    // close its <script> element.
    let json = serde_json::to_string(&data)
        .expect("the timeline's data serializes")
        .replace('<', "\\u003c");
    PAGE.replacen("__TITLE__", &escape(title), 1)
        .replacen("__DATA__", &json, 1)
}

/// Whether `evidence` names the node `name` (`c1`, `s2`, `r1`: `NodeId`'s `Display`, which
/// every check's evidence uses) as a whole word: `c1` in `c1/0` or `(c1,` but not in `c12`.
fn names_node(evidence: &str, name: &str) -> bool {
    evidence.match_indices(name).any(|(at, _)| {
        let before = evidence[..at].chars().next_back();
        let after = evidence[at + name.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The page's data: one lane per node (and the network's), the spans drawn on them, the
/// marks across them, every record, and where the page opens.
fn data(
    title: &str,
    scenario: &Scenario,
    outcome: &Outcome,
    history: &History,
    focus: Option<&Focus>,
    around: usize,
) -> Data {
    let records = history.records();
    let end_ns = records
        .last()
        .map_or(0, |record| record.at.as_nanos())
        .max(SimTime::from_millis(outcome.metrics.ended_at_ms).as_nanos());
    let (lanes, lane_of) = lanes(scenario, outcome, records);
    // Every node the history names has a lane; anything else goes on the network lane.
    let lane = |node: NodeId| lane_of.get(&node).copied().unwrap_or(0);
    let mut spans = Vec::new();
    leader_spans(history, scenario.store, &lane, &mut spans);
    session_spans(history, &lane, &mut spans);
    lease_spans(history, &lane, &mut spans);
    recipe_spans(history, &lane, &mut spans);
    operation_spans(history, &lane, &mut spans);
    fault_spans(history, &lane, &mut spans);
    Data {
        title: title.to_string(),
        outcome: outcome.to_string(),
        end_ns,
        lanes,
        spans,
        marks: marks(records, outcome),
        records: rows(records, &lane),
        focus: focus.map(|focus| focus_data(focus, records, around, end_ns)),
    }
}

/// The lanes: the network's, then every node the scenario has or the history names, in
/// order (those the evidence of the violation the page opens at names are marked); and
/// each node's lane.
fn lanes(
    scenario: &Scenario,
    outcome: &Outcome,
    records: &[Record],
) -> (Vec<Lane>, BTreeMap<NodeId, usize>) {
    let mut nodes: Vec<NodeId> = (0..scenario.servers)
        .map(NodeId::server)
        .chain((0..scenario.clients).map(NodeId::client))
        .chain(records.iter().filter_map(|record| record.node))
        .chain(records.iter().filter_map(|record| match &record.event {
            Event::Fault(fault) => fault.target,
            _ => None,
        }))
        .collect();
    nodes.sort();
    nodes.dedup();
    // The violation the page opens at (the earliest with a time, as the focus is): the
    // nodes its evidence names have their lanes marked.
    let first_violation = first_timed_violation(outcome)
        .map(|(_, violation)| violation)
        .or(outcome.violations.first());
    let mut lanes = vec![Lane {
        name: "network".into(),
        kind: LaneKind::World,
        violated: false,
    }];
    let mut lane_of: BTreeMap<NodeId, usize> = BTreeMap::new();
    for node in nodes {
        lane_of.insert(node, lanes.len());
        lanes.push(Lane {
            name: node.to_string(),
            kind: match node.kind() {
                sim::NodeKind::Server => LaneKind::Server,
                sim::NodeKind::Client => LaneKind::Client,
                sim::NodeKind::Resource => LaneKind::Resource,
            },
            violated: first_violation
                .is_some_and(|violation| names_node(&violation.evidence, &node.to_string())),
        });
    }
    (lanes, lane_of)
}

/// The store's leaders, with their terms (epochs for ZAB).
fn leader_spans(
    history: &History,
    store: Store,
    lane: &impl Fn(NodeId) -> usize,
    spans: &mut Vec<Span>,
) {
    let term = match store {
        Store::Zab => "epoch",
        Store::Raft | Store::Ledger => "term",
    };
    for leadership in leaders::leaderships(history) {
        spans.push(Span {
            lane: lane(leadership.node),
            row: 0,
            from_ns: leadership.from.as_nanos(),
            to_ns: leadership.until.map(SimTime::as_nanos),
            kind: SpanKind::Leader,
            label: format!("leader, {term} {}", leadership.term),
        });
    }
}

/// The recipes' lock holds, waits in line and election leaderships.
fn recipe_spans(history: &History, lane: &impl Fn(NodeId) -> usize, spans: &mut Vec<Span>) {
    for hold in locks::holds(history) {
        let (node, process) = hold.holder;
        let shared = hold.mode == sim::history::recipe::LockMode::Shared;
        spans.push(Span {
            lane: lane(node),
            row: 1,
            from_ns: hold.from.as_nanos(),
            to_ns: hold.until.map(SimTime::as_nanos),
            kind: if shared {
                SpanKind::SharedLock
            } else {
                SpanKind::Lock
            },
            label: format!(
                "{}holds {} token {} (process {process}; {:?})",
                if shared { "reader " } else { "" },
                hold.lock,
                hold.token,
                hold.end
            ),
        });
    }
    for wait in line_waits(history, Lines::LocksAndElections) {
        let (node, process) = wait.waiter;
        let (to_ns, end) = match wait.end {
            WaitEnd::Acquired { token, at } => {
                (Some(at.as_nanos()), format!("acquired with token {token}"))
            }
            WaitEnd::GaveUp { at } => (Some(at.as_nanos()), "gave up".to_string()),
            WaitEnd::Unfinished => (Some(wait.until.as_nanos()), "unfinished".to_string()),
        };
        spans.push(Span {
            lane: lane(node),
            row: 1,
            from_ns: wait.requested_at.as_nanos(),
            to_ns,
            kind: SpanKind::LockWait,
            label: format!("waits in line for {} (process {process}; {end})", wait.lock),
        });
    }
    for leadership in elections::leaderships(history) {
        let (node, process) = leadership.leader;
        spans.push(Span {
            lane: lane(node),
            row: 1,
            from_ns: leadership.from.as_nanos(),
            to_ns: leadership.until.map(SimTime::as_nanos),
            kind: SpanKind::Election,
            label: format!(
                "leads {} token {} (process {process}; {:?})",
                leadership.election, leadership.token, leadership.end
            ),
        });
    }
}

/// Client operations, from invocation to completion, by how they ended.
fn operation_spans(history: &History, lane: &impl Fn(NodeId) -> usize, spans: &mut Vec<Span>) {
    for operation in history.operations() {
        let (to_ns, kind, result) = match operation.completion {
            Some((at, OpResult::Ok { .. })) => (Some(at.as_nanos()), SpanKind::OpOk, "ok"),
            Some((at, OpResult::Fail { .. })) => (Some(at.as_nanos()), SpanKind::OpFail, "failed"),
            Some((at, OpResult::Unknown { .. })) => {
                (Some(at.as_nanos()), SpanKind::OpUnknown, "unknown")
            }
            None => (None, SpanKind::OpUnknown, "never completed"),
        };
        let text = describe_value(
            &serde_json::to_value(operation.operation).expect("operations serialize"),
        );
        spans.push(Span {
            lane: lane(operation.client),
            row: 2,
            from_ns: operation.invoked_at.as_nanos(),
            to_ns,
            kind,
            label: format!("{} {text}: {result}", operation.op_id),
        });
    }
}

/// The marks across every lane: phases, and violations that have a time.
fn marks(records: &[Record], outcome: &Outcome) -> Vec<Mark> {
    let mut marks = Vec::new();
    for record in records {
        if let Event::Phase(phase) = &record.event {
            let label = match phase {
                PhaseEvent::FaultPhaseEnded => "fault phase ended",
                PhaseEvent::Healed => "healed",
                PhaseEvent::FinalReads => "final reads",
                PhaseEvent::TimeLimitReached => "time limit",
                PhaseEvent::Started { .. } | PhaseEvent::Completed => continue,
            };
            marks.push(Mark {
                at_ns: record.at.as_nanos(),
                kind: MarkKind::Phase,
                label: label.into(),
            });
        }
    }
    for violation in &outcome.violations {
        if let Some(at_ms) = violation.at_ms {
            marks.push(Mark {
                at_ns: SimTime::from_millis(at_ms).as_nanos(),
                kind: MarkKind::Violation,
                label: format!("{}: {}", violation.check, violation.evidence),
            });
        }
    }
    marks
}

/// Where the page opens: the focus, with the records `around` it in view.
fn focus_data(focus: &Focus, records: &[Record], around: usize, end_ns: u64) -> FocusData {
    let window = focus.window(records.len(), around);
    let (first, last) = (
        records[window.start].at.as_nanos(),
        records[window.end - 1].at.as_nanos(),
    );
    // At least a two-hundredth of the run (and a millisecond) in view, centred on the
    // focus, so that a burst of records at one instant still shows its surroundings.
    let at_ns = focus.at.as_nanos();
    let half = (at_ns - first.min(at_ns))
        .max(last.max(at_ns) - at_ns)
        .max(end_ns / 400)
        .max(500_000)
        * 6
        / 5;
    FocusData {
        at_ns,
        kind: focus.kind,
        label: focus.what.clone(),
        from_ns: at_ns.saturating_sub(half),
        to_ns: at_ns + half,
        record: focus.record,
    }
}

/// Every record as the page lists it: time, lane, category, the record on one line.
fn rows(
    records: &[Record],
    lane: &impl Fn(NodeId) -> usize,
) -> Vec<(u64, usize, Category, String)> {
    records
        .iter()
        .map(|record| {
            let category = match &record.event {
                Event::Invoke { .. } | Event::Complete { .. } | Event::Kv(_) => Category::Operation,
                Event::Protocol(_) => Category::Protocol,
                Event::Recipe(_) => Category::Recipe,
                Event::Zk(_) => Category::Session,
                Event::Fault(_) => Category::Fault,
                Event::Phase(_) | Event::Note { .. } => Category::Other,
            };
            let lane = record.node.map_or(0, lane);
            (
                record.at.as_nanos(),
                lane,
                category,
                describe_record(record),
            )
        })
        .collect()
}

/// ZooKeeper sessions as their clients saw them: from established until the client was
/// told it expired, closed it, gave it up, crashed, or the run ended.
fn session_spans(history: &History, lane: &impl Fn(NodeId) -> usize, spans: &mut Vec<Span>) {
    let mut open: BTreeMap<(NodeId, u64), usize> = BTreeMap::new();
    for record in history.records() {
        let Some(node) = record.node else {
            if let Event::Fault(fault) = &record.event
                && let Some(crashed) = fault.crashed()
            {
                let ended: Vec<(NodeId, u64)> = open
                    .keys()
                    .filter(|(node, _)| *node == crashed)
                    .copied()
                    .collect();
                for key in ended {
                    let index = open.remove(&key).expect("open");
                    spans[index].to_ns = Some(record.at.as_nanos());
                    spans[index].label.push_str(" (the client crashed)");
                }
            }
            continue;
        };
        let Event::Zk(event) = &record.event else {
            continue;
        };
        let (session, ending) = match event {
            ZkEvent::SessionEstablished {
                session,
                timeout_ms,
                server,
                process,
            } => {
                open.insert((node, *session), spans.len());
                spans.push(Span {
                    lane: lane(node),
                    row: 0,
                    from_ns: record.at.as_nanos(),
                    to_ns: None,
                    kind: SpanKind::Session,
                    label: format!(
                        "session {session:#x} (process {process}, timeout {timeout_ms} ms, via {server})"
                    ),
                });
                continue;
            }
            ZkEvent::SessionExpired { session, .. } => (session, "told it expired"),
            ZkEvent::SessionClosed { session, .. } => (session, "closed"),
            ZkEvent::SessionAbandoned { session, .. } => (session, "given up by the client"),
            _ => continue,
        };
        if let Some(index) = open.remove(&(node, *session)) {
            spans[index].to_ns = Some(record.at.as_nanos());
            spans[index].label.push_str(&format!(": {ending}"));
        }
    }
}

/// etcd leases, on the lane of the client that was granted them: from the grant until the
/// lease expired or was revoked (as `checks::history::leases` reads it).
fn lease_spans(history: &History, lane: &impl Fn(NodeId) -> usize, spans: &mut Vec<Span>) {
    let facts = leases::leases(history);
    for operation in history.operations() {
        let (
            Operation::Kv(KvOperation::LeaseGrant { .. }),
            Some((
                at,
                OpResult::Ok {
                    response: Response::Kv(KvResponse::LeaseGrant { lease, ttl_ms }),
                },
            )),
        ) = (operation.operation, operation.completion)
        else {
            continue;
        };
        let ended = facts.get(lease).and_then(|facts| facts.ended_at());
        spans.push(Span {
            lane: lane(operation.client),
            row: 0,
            from_ns: at.as_nanos(),
            to_ns: ended.map(SimTime::as_nanos),
            kind: SpanKind::Lease,
            label: format!("lease {lease:#x} (ttl {ttl_ms} ms)"),
        });
    }
}

/// Faults as spans, from the faults that fired (as `checks::history::faults` reads them)
/// until their inverse, the next fault of their kind, a heal-all, or the driver's heal.
/// Crashes, pauses, clock faults and the node a partition cuts off shade that node's lane;
/// partitions, clogs and network conditions are on the network lane. Skipped faults are
/// marks.
fn fault_spans(history: &History, lane: &impl Fn(NodeId) -> usize, spans: &mut Vec<Span>) {
    let healed = healed_at(history);
    let world = |row: i8, from: SimTime, kind, label: String| Span {
        lane: 0,
        row,
        from_ns: from.as_nanos(),
        to_ns: None,
        kind,
        label,
    };
    let node_span = |node: NodeId, from: SimTime, kind, label: String| Span {
        lane: lane(node),
        row: -1,
        from_ns: from.as_nanos(),
        to_ns: None,
        kind,
        label,
    };
    let mut open = OpenFaultSpans {
        open: BTreeMap::new(),
        spans,
    };
    for fired in fired_faults(history) {
        if let Some(healed) = healed.filter(|healed| *healed <= fired.at) {
            open.close_all(healed);
        }
        let at = fired.at;
        let label = match fired.target {
            Some(target) => format!("{} -> {target}", fired.fault),
            None => fired.fault.to_string(),
        };
        match (fired.fault, fired.target) {
            (Fault::Partition { .. }, target) => {
                open.close(Open::Partition, at);
                open.close(Open::Isolated, at);
                open.start(
                    Open::Partition,
                    world(0, at, SpanKind::Partition, label.clone()),
                );
                if let Some(target) = target {
                    open.start(
                        Open::Isolated,
                        node_span(target, at, SpanKind::Isolated, label),
                    );
                }
            }
            (Fault::Heal, _) => {
                open.close(Open::Partition, at);
                open.close(Open::Isolated, at);
            }
            (Fault::Clog { from, to }, _) => {
                open.start(Open::Clog(*from, *to), world(1, at, SpanKind::Clog, label))
            }
            (Fault::Unclog { from, to }, _) => open.close(Open::Clog(*from, *to), at),
            (Fault::Loss { .. } | Fault::Latency { .. } | Fault::Duplication { .. }, _) => {
                let key = match fired.fault {
                    Fault::Loss { .. } => Open::Loss,
                    Fault::Latency { .. } => Open::Latency,
                    _ => Open::Duplication,
                };
                open.close(key, at);
                open.start(key, world(2, at, SpanKind::Network, label));
            }
            (Fault::Crash { .. }, Some(node)) => open.start(
                Open::Crash(node),
                node_span(node, at, SpanKind::Crash, label),
            ),
            (Fault::Restart { .. }, Some(node)) => open.close(Open::Crash(node), at),
            (Fault::Pause { .. }, Some(node)) => open.start(
                Open::Pause(node),
                node_span(node, at, SpanKind::Pause, label),
            ),
            (Fault::Resume { .. }, Some(node)) => open.close(Open::Pause(node), at),
            (Fault::ClockDrift { drift_ppm, .. }, Some(node)) => {
                open.close(Open::Drift(node), at);
                if *drift_ppm != 0 {
                    open.start(
                        Open::Drift(node),
                        node_span(node, at, SpanKind::ClockDrift, label),
                    );
                }
            }
            (Fault::ClockStep { .. }, Some(node)) => open.spans.push(Span {
                to_ns: Some(at.as_nanos()),
                ..node_span(node, at, SpanKind::ClockStep, label)
            }),
            (Fault::HealAll, _) => open.close_all(at),
            _ => {}
        }
    }
    if let Some(healed) = healed {
        open.close_all(healed);
    }
    for record in history.records() {
        if let Event::Fault(fault) = &record.event
            && let FaultOutcome::Skipped { reason } = &fault.outcome
        {
            spans.push(Span {
                lane: 0,
                row: 0,
                from_ns: record.at.as_nanos(),
                to_ns: Some(record.at.as_nanos()),
                kind: SpanKind::Skipped,
                label: format!("{} skipped: {reason}", fault.fault),
            });
        }
    }
}

/// What an open fault span waits for to end.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Open {
    Partition,
    Isolated,
    Clog(NodeId, NodeId),
    Loss,
    Latency,
    Duplication,
    Crash(NodeId),
    Pause(NodeId),
    Drift(NodeId),
}

/// The fault spans drawn so far, and which of them are still open.
struct OpenFaultSpans<'s> {
    open: BTreeMap<Open, usize>,
    spans: &'s mut Vec<Span>,
}

impl OpenFaultSpans<'_> {
    /// Draws `span`, open until what `key` names ends it.
    fn start(&mut self, key: Open, span: Span) {
        self.open.insert(key, self.spans.len());
        self.spans.push(span);
    }

    /// Ends the span `key` names, if one is open, at `at`.
    fn close(&mut self, key: Open, at: SimTime) {
        if let Some(index) = self.open.remove(&key) {
            self.spans[index].to_ns = Some(at.as_nanos());
        }
    }

    /// Ends every open span at `at`.
    fn close_all(&mut self, at: SimTime) {
        for index in std::mem::take(&mut self.open).into_values() {
            self.spans[index].to_ns = Some(at.as_nanos());
        }
    }
}
