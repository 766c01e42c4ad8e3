//! A data-driven interaction harness for the ZAB core, in the style of the Raft harness
//! (`tests/interaction/`) and etcd-io/raft's `rafttest` interaction files; scripts are in
//! `tests/testdata/zab/`, in the format `tests/script_runner` reads (`REWRITE_SCRIPTS=1`
//! writes the actual output into the script instead of failing: review the diff).
//!
//! Each command runs against in-memory cores s1..sN over the [`Sequence`] state machine
//! (transactions are numbers); its output is what the cores did, one rendered effect per
//! line.
//!
//! The world it models: election notifications are datagrams, each delivered (or dropped)
//! once; `CONNECT` asks for a FIFO connection to the leader, opened when delivered; messages
//! on a connection arrive in order, and a dropped one breaks the connection (both ends are
//! told, as TCP would). Each server's disk keeps what was synced: writes (`Persist` effects)
//! are volatile until `persist`, which syncs them all and reports the last `Sync` token the
//! core asked for; a crash loses what was not synced, and a restart loads what was. A crash
//! drops what was in flight to the server; what it sent before crashing still arrives, and
//! then each peer sees the connection close. Every server has its own local clock, moved
//! only by `tick`.
//!
//! Rendering: zxids in ZooKeeper's hex form (`0x100000002` is epoch 1, counter 2); log
//! entries as `zxid:txn`; a run of writes followed by the core's `Sync` as one `persist tN:`
//! line (`write:` for writes no sync has been asked for yet). Timers are not effects of the
//! ZAB core (`next_deadline` is a query), so nothing about them is printed.
//!
//! Commands:
//! - `add-nodes N [observers=M] [bugs=zab.a,zab.b] [diff-window=K]` — voting servers s1..sN
//!   and observers s(N+1)..s(N+M) (`ZabConfig::observers`), with empty disks, not started,
//!   with these known bugs and this DIFF window (`ZabConfig::diff_window`).
//! - `start sX...` — boot (`ZabCore::start`): the server starts an election.
//! - `tick sX... [ms=M]` — advance each server's clock by M ms (default: to its next
//!   deadline: a re-sent notification, the end of `finalize_wait`, a heartbeat, a timeout)
//!   and tick it.
//! - `deliver [from=sX] [to=sY] [drop]` — deliver (or drop) what is in flight, once, in order.
//! - `stabilize` — persist every disk and deliver everything, again and again, until nothing
//!   is left to do (ticks are never taken).
//! - `persist sX...` — sync sX's disk: its writes become durable and the core hears of its
//!   last sync token.
//! - `propose sX txn` — the leader sX proposes the transaction `txn` (a number).
//! - `crash sX` — lose sX's volatile state and unsynced writes; its connections break.
//! - `restart sX` — rebuild sX from its disk (not started: `start sX` next).
//! - `status sX...` — role, epochs, last logged, committed and applied zxids, log, state.
//! - `disk sX...` — what sX's disk holds durably.

use crate::{script_runner::node_id, zab_sequence::Sequence};
use models::zab::{
    AckKind, Effect, Link, LinkDirection, LogEntry, Notification, PeerMessage, PeerState,
    PersistToken, PersistentState, Serving, SyncMode, Write, ZabBug, ZabConfig, ZabCore, Zxid,
};
use sim::{
    NodeId,
    clock::LocalTime,
    history::{ProtocolEvent, QuorumStage},
};
use std::{
    collections::{BTreeMap, BTreeSet},
    fmt::Write as _,
    time::Duration,
};

type Core = ZabCore<Sequence, ()>;
type Message = PeerMessage<Sequence, ()>;
type Disk = PersistentState<Sequence>;

/// Something on the wire from one server to another.
enum Wire {
    /// An election notification (datagram).
    Notify(Notification),
    /// A request to open a connection to the receiver (the sender dials).
    Connect,
    /// A message on an open connection.
    Message { link: Link, message: Message },
    /// The connection broke or was closed by the sender's end.
    Closed { link: Link },
}

struct InFlight {
    from: NodeId,
    to: NodeId,
    wire: Wire,
}

struct Node {
    /// `None` while crashed.
    core: Option<Core>,
    config: ZabConfig,
    /// What survives a crash.
    durable: Disk,
    /// Writes issued but not yet synced, in order.
    unsynced: Vec<Write<Sequence>>,
    /// The last sync token the core asked for and has not heard of.
    requested: Option<PersistToken>,
    now: LocalTime,
}

impl Node {
    fn core(&mut self) -> &mut Core {
        self.core.as_mut().expect("the server is crashed")
    }
}

/// The harness: servers, connections and what is in flight.
pub struct Interaction {
    nodes: BTreeMap<NodeId, Node>,
    in_flight: Vec<InFlight>,
    /// Every connection ever opened: (dialer, acceptor).
    link_ends: BTreeMap<Link, (NodeId, NodeId)>,
    open_links: BTreeSet<Link>,
    next_link: u64,
}

fn hex(zxid: Zxid) -> String {
    format!("{:#x}", zxid.as_u64())
}

fn render_entries(entries: &[LogEntry<u64>]) -> String {
    let parts: Vec<String> = entries
        .iter()
        .map(|entry| format!("{}:{}", hex(entry.zxid), entry.txn))
        .collect();
    format!("[{}]", parts.join(", "))
}

fn render_zxids(zxids: &[Zxid]) -> String {
    let parts: Vec<String> = zxids.iter().map(|zxid| hex(*zxid)).collect();
    format!("[{}]", parts.join(", "))
}

fn render_numbers(numbers: &[u64]) -> String {
    let parts: Vec<String> = numbers.iter().map(u64::to_string).collect();
    format!("[{}]", parts.join(", "))
}

fn render_notification(notification: &Notification) -> String {
    let state = match notification.state {
        PeerState::Looking => "looking",
        PeerState::Following => "following",
        PeerState::Leading => "leading",
    };
    let vote = notification.vote;
    format!(
        "NOTIFY round={} {state} vote=({} epoch={} zxid={})",
        notification.round,
        vote.leader,
        vote.epoch,
        hex(vote.zxid)
    )
}

fn render_message(message: &Message) -> String {
    match message {
        Message::FollowerInfo { accepted_epoch } => {
            format!("FOLLOWERINFO accepted_epoch={accepted_epoch}")
        }
        Message::NewEpoch { epoch } => format!("NEWEPOCH epoch={epoch}"),
        Message::AckEpoch {
            current_epoch,
            last_zxid,
            epoch_ends,
        } => format!(
            "ACKEPOCH current_epoch={current_epoch} last={} epoch_ends={}",
            hex(*last_zxid),
            render_zxids(epoch_ends)
        ),
        Message::Sync { mode, entries } => match mode {
            SyncMode::Diff => format!("DIFF entries={}", render_entries(entries)),
            SyncMode::Trunc { to } => {
                format!("TRUNC to={} entries={}", hex(*to), render_entries(entries))
            }
            SyncMode::Snap { zxid, snapshot } => format!(
                "SNAP zxid={} state={} entries={}",
                hex(*zxid),
                render_numbers(snapshot),
                render_entries(entries)
            ),
        },
        Message::NewLeader { epoch, last_zxid } => {
            format!("NEWLEADER epoch={epoch} last={}", hex(*last_zxid))
        }
        Message::Ack { kind, zxid } => match kind {
            AckKind::NewLeader => format!("ACK newleader zxid={}", hex(*zxid)),
            AckKind::Proposals => format!("ACK zxid={}", hex(*zxid)),
        },
        Message::UpToDate { committed } => format!("UPTODATE committed={}", hex(*committed)),
        Message::Proposal(entry) => format!("PROPOSAL {} txn={}", hex(entry.zxid), entry.txn),
        Message::Commit { zxid } => format!("COMMIT {}", hex(*zxid)),
        Message::Inform(entry) => format!("INFORM {} txn={}", hex(entry.zxid), entry.txn),
        Message::Ping => "PING".to_string(),
        Message::App(()) => "APP".to_string(),
    }
}

fn render_wire(wire: &Wire) -> String {
    match wire {
        Wire::Notify(notification) => render_notification(notification),
        Wire::Connect => "CONNECT".to_string(),
        Wire::Message { message, .. } => render_message(message),
        Wire::Closed { link } => format!("link {} closed", link.0),
    }
}

fn render_write(write: &Write<Sequence>) -> String {
    match write {
        Write::AcceptedEpoch(epoch) => format!("accepted_epoch={epoch}"),
        Write::CurrentEpoch(epoch) => format!("current_epoch={epoch}"),
        Write::Append(entry) => format!("append {}:{}", hex(entry.zxid), entry.txn),
        Write::TruncateLog { keep } => format!("truncate log to {keep} entries"),
        Write::ReplaceSnapshot { zxid, snapshot } => format!(
            "snapshot {}={} (log left as it is)",
            hex(*zxid),
            render_numbers(snapshot)
        ),
        Write::InstallSnapshot { zxid, snapshot } => format!(
            "snapshot {}={} (log emptied)",
            hex(*zxid),
            render_numbers(snapshot)
        ),
    }
}

/// What the disk holds after `write` (as `models::zab::storage::ZabFiles::write` does it).
fn apply_write(disk: &mut Disk, write: Write<Sequence>) {
    match write {
        Write::AcceptedEpoch(epoch) => disk.accepted_epoch = Some(epoch),
        Write::CurrentEpoch(epoch) => disk.current_epoch = Some(epoch),
        Write::Append(entry) => disk.log.push(entry),
        Write::TruncateLog { keep } => disk.log.truncate(keep),
        Write::ReplaceSnapshot { zxid, snapshot } => disk.snapshot = Some((zxid, snapshot)),
        Write::InstallSnapshot { zxid, snapshot } => {
            disk.snapshot = Some((zxid, snapshot));
            disk.log.clear();
        }
    }
}

fn render_disk(disk: &Disk) -> String {
    let epoch = |epoch: Option<u32>| epoch.map_or("none".to_string(), |e| e.to_string());
    let snapshot = disk
        .snapshot
        .as_ref()
        .map_or("none".to_string(), |(zxid, state)| {
            format!("{}={}", hex(*zxid), render_numbers(state))
        });
    format!(
        "accepted_epoch={} current_epoch={} snapshot={snapshot} log={}",
        epoch(disk.accepted_epoch),
        epoch(disk.current_epoch),
        render_entries(&disk.log)
    )
}

fn render_record(event: &ProtocolEvent) -> Option<String> {
    Some(match event {
        // The `Applied` effect that follows says it.
        ProtocolEvent::Applied { .. } => return None,
        ProtocolEvent::TermChanged { term } => format!("entered epoch {term}"),
        ProtocolEvent::BecameLeader { term } => format!("became leader of epoch {term}"),
        ProtocolEvent::SteppedDown { term } => format!("stepped down from epoch {term}"),
        ProtocolEvent::SnapshotInstalled { index, .. } => {
            format!("installed a snapshot at {index:#x}")
        }
        ProtocolEvent::StartedObserving => "started as an observer".to_string(),
        ProtocolEvent::QuorumCounted {
            term,
            stage,
            index,
            servers,
        } => {
            let stage = match stage {
                QuorumStage::NewEpoch => "FOLLOWERINFO",
                QuorumStage::AckEpoch => "ACKEPOCH",
                QuorumStage::NewLeader => "NEWLEADER",
                QuorumStage::Commit => "commit",
            };
            let servers: Vec<String> = servers.iter().map(NodeId::to_string).collect();
            format!(
                "counted a quorum for {stage} in epoch {term} at {index:#x}: {}",
                servers.join(", ")
            )
        }
        other => format!("recorded {other:?}"),
    })
}

fn render_serving(serving: Serving) -> String {
    match serving {
        Serving::AsLeader { epoch } => format!("serves as leader of epoch {epoch}"),
        Serving::AsFollower { leader, epoch } => {
            format!("serves as follower of {leader} in epoch {epoch}")
        }
        Serving::AsObserver { leader, epoch } => {
            format!("serves as observer of {leader} in epoch {epoch}")
        }
        Serving::Stopped => "stops serving".to_string(),
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
            link_ends: BTreeMap::new(),
            open_links: BTreeSet::new(),
            next_link: 0,
        }
    }

    fn node(&mut self, id: NodeId) -> &mut Node {
        self.nodes.get_mut(&id).expect("known node")
    }

    fn other_end(&self, link: Link, me: NodeId) -> NodeId {
        let (dialer, acceptor) = self.link_ends[&link];
        if dialer == me { acceptor } else { dialer }
    }

    /// Closes `link` (if open) and tells the ends in `tell` that it closed.
    fn close_link(&mut self, link: Link, tell: &[NodeId]) {
        if !self.open_links.remove(&link) {
            return;
        }
        for &to in tell {
            let from = self.other_end(link, to);
            self.in_flight.push(InFlight {
                from,
                to,
                wire: Wire::Closed { link },
            });
        }
    }

    /// Runs the effects `id` produced, rendering them into `out`.
    fn collect(&mut self, id: NodeId, out: &mut String) {
        let effects = self.node(id).core().take_effects();
        let mut writes: Vec<String> = Vec::new();
        let flush = |writes: &mut Vec<String>, out: &mut String| {
            if !writes.is_empty() {
                writeln!(out, "{id} write: {}", writes.join(", ")).unwrap();
                writes.clear();
            }
        };
        for effect in effects {
            match effect {
                Effect::Persist(write) => {
                    writes.push(render_write(&write));
                    self.node(id).unsynced.push(write);
                    continue;
                }
                Effect::Sync { token } => {
                    if writes.is_empty() {
                        writeln!(out, "{id} persist t{}", token.0).unwrap();
                    } else {
                        writeln!(out, "{id} persist t{}: {}", token.0, writes.join(", ")).unwrap();
                        writes.clear();
                    }
                    self.node(id).requested = Some(token);
                    continue;
                }
                _ => flush(&mut writes, out),
            }
            match effect {
                Effect::Persist(_) | Effect::Sync { .. } => unreachable!("handled above"),
                Effect::Notify { to, notification } => {
                    writeln!(out, "{id}->{to} {}", render_notification(&notification)).unwrap();
                    self.in_flight.push(InFlight {
                        from: id,
                        to,
                        wire: Wire::Notify(notification),
                    });
                }
                Effect::Connect { leader } => {
                    writeln!(out, "{id}->{leader} CONNECT").unwrap();
                    self.in_flight.push(InFlight {
                        from: id,
                        to: leader,
                        wire: Wire::Connect,
                    });
                }
                Effect::Send { link, message } => {
                    let to = self.other_end(link, id);
                    writeln!(out, "{id}->{to} {}", render_message(&message)).unwrap();
                    self.in_flight.push(InFlight {
                        from: id,
                        to,
                        wire: Wire::Message { link, message },
                    });
                }
                Effect::Disconnect { link } => {
                    let to = self.other_end(link, id);
                    writeln!(out, "{id} closes link {} to {to}", link.0).unwrap();
                    self.close_link(link, &[to]);
                }
                // Coverage marks count runs' reach; the scripts show the sync itself.
                Effect::Reach(_) => {}
                Effect::Record(event) => {
                    if let Some(text) = render_record(&event) {
                        writeln!(out, "{id} {text}").unwrap();
                    }
                }
                Effect::Serve(serving) => {
                    writeln!(out, "{id} {}", render_serving(serving)).unwrap();
                }
                Effect::Applied { zxid, txn, .. } => {
                    writeln!(out, "{id} applied {} txn={txn}", hex(zxid)).unwrap();
                }
                Effect::App { from, .. } => {
                    writeln!(out, "{id} got an app message from {from}").unwrap();
                }
            }
        }
        flush(&mut writes, out);
    }

    /// Delivers (or drops) one item, rendering what happened into `out`.
    fn deliver_one(&mut self, item: InFlight, drop: bool, out: &mut String) {
        let InFlight { from, to, wire } = item;
        if let Wire::Message { link, .. } = &wire
            && !self.open_links.contains(link)
        {
            writeln!(
                out,
                "lost {from}->{to} (link {} closed) {}",
                link.0,
                render_wire(&wire)
            )
            .unwrap();
            return;
        }
        if self.nodes[&to].core.is_none() {
            writeln!(
                out,
                "lost {from}->{to} ({to} crashed) {}",
                render_wire(&wire)
            )
            .unwrap();
            return;
        }
        if drop {
            writeln!(out, "dropped {from}->{to} {}", render_wire(&wire)).unwrap();
            match wire {
                Wire::Connect if self.nodes[&from].core.is_some() => {
                    let now = self.nodes[&from].now;
                    self.node(from).core().on_connect_failed(now, to);
                    self.collect(from, out);
                }
                Wire::Message { link, .. } => {
                    writeln!(out, "link {} between {from} and {to} breaks", link.0).unwrap();
                    self.close_link(link, &[from, to]);
                }
                _ => {}
            }
            return;
        }
        let now = self.nodes[&to].now;
        match wire {
            Wire::Notify(notification) => {
                self.node(to)
                    .core()
                    .on_notification(now, from, notification);
                self.collect(to, out);
            }
            Wire::Connect => {
                if self.nodes[&from].core.is_none() {
                    writeln!(out, "lost {from}->{to} ({from} crashed) CONNECT").unwrap();
                    return;
                }
                self.next_link += 1;
                let link = Link(self.next_link);
                self.link_ends.insert(link, (from, to));
                self.open_links.insert(link);
                writeln!(out, "link {} opens: {from} connected to {to}", link.0).unwrap();
                self.node(to)
                    .core()
                    .on_link_up(now, link, from, LinkDirection::Inbound);
                self.collect(to, out);
                let dialer_now = self.nodes[&from].now;
                self.node(from)
                    .core()
                    .on_link_up(dialer_now, link, to, LinkDirection::Outbound);
                self.collect(from, out);
            }
            Wire::Message { link, message } => {
                self.node(to).core().on_message(now, link, message);
                self.collect(to, out);
            }
            Wire::Closed { link } => {
                writeln!(out, "{to} sees link {} to {from} close", link.0).unwrap();
                self.node(to).core().on_link_down(now, link);
                self.collect(to, out);
            }
        }
    }

    /// Syncs `id`'s disk; false if it had nothing to sync.
    fn persist(&mut self, id: NodeId, out: &mut String) -> bool {
        let node = self.node(id);
        if node.core.is_none() || (node.unsynced.is_empty() && node.requested.is_none()) {
            return false;
        }
        for write in std::mem::take(&mut node.unsynced) {
            apply_write(&mut node.durable, write);
        }
        match node.requested.take() {
            Some(token) => {
                writeln!(out, "{id} durable through t{}", token.0).unwrap();
                let now = node.now;
                node.core().on_persisted(now, token);
                self.collect(id, out);
            }
            None => writeln!(out, "{id} durable (no sync asked for)").unwrap(),
        }
        true
    }

    /// Runs one command and returns what happened.
    pub fn run(&mut self, command: &str) -> String {
        let mut out = String::new();
        let mut words = command.split_whitespace();
        let verb = words.next().expect("a command");
        let args: Vec<&str> = words.collect();
        let nodes: Vec<NodeId> = args
            .iter()
            .filter(|arg| !arg.contains('=') && arg.starts_with('s'))
            .map(|arg| node_id(arg))
            .collect();
        match verb {
            "add-nodes" => self.add_nodes(&args, &mut out),
            "start" => {
                for id in nodes {
                    let node = self.node(id);
                    let now = node.now;
                    node.core().start(now);
                    self.collect(id, &mut out);
                }
            }
            "tick" => {
                for id in nodes {
                    let node = self.node(id);
                    node.now = match keyed(&args, "ms") {
                        Some(ms) => node.now + Duration::from_millis(ms.parse().expect("ms")),
                        None => node.core().next_deadline().max(node.now),
                    };
                    let now = node.now;
                    node.core().tick(now);
                    self.collect(id, &mut out);
                }
            }
            "deliver" => {
                let from = keyed(&args, "from").map(node_id);
                let to = keyed(&args, "to").map(node_id);
                let drop = args.contains(&"drop");
                let (chosen, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.in_flight)
                    .into_iter()
                    .partition(|item| {
                        from.is_none_or(|x| x == item.from) && to.is_none_or(|x| x == item.to)
                    });
                self.in_flight = rest;
                for item in chosen {
                    self.deliver_one(item, drop, &mut out);
                }
            }
            "stabilize" => self.stabilize(&mut out),
            "persist" => {
                for id in nodes {
                    self.persist(id, &mut out);
                }
            }
            "propose" => {
                let id = node_id(args[0]);
                let txn: u64 = args[1].parse().expect("a transaction (a number)");
                let node = self.node(id);
                let now = node.now;
                match node.core().propose(now, txn) {
                    Ok(zxid) => writeln!(out, "{id} proposed {} txn={txn}", hex(zxid)).unwrap(),
                    Err(error) => writeln!(out, "{id} refused: {error}").unwrap(),
                }
                self.collect(id, &mut out);
            }
            "crash" => self.crash(nodes, &mut out),
            "restart" => self.restart(nodes, &mut out),
            "status" => self.status(nodes, &mut out),
            "disk" => {
                for id in nodes {
                    writeln!(out, "{id} disk: {}", render_disk(&self.nodes[&id].durable)).unwrap();
                }
            }
            other => panic!("unknown command {other}"),
        }
        if out.is_empty() {
            out.push_str("ok\n");
        }
        out
    }

    /// `add-nodes N [observers=M] [bugs=…] [diff-window=…]`: N voters (and M observers) with empty disks.
    fn add_nodes(&mut self, args: &[&str], out: &mut String) {
        let count: usize = args[0].parse().expect("a node count");
        let bugs: Vec<ZabBug> = keyed(args, "bugs")
            .map(|list| {
                list.split(',')
                    .map(|name| name.parse().expect("a bug name"))
                    .collect()
            })
            .unwrap_or_default();
        let observer_count: usize =
            keyed(args, "observers").map_or(0, |text| text.parse().expect("an observer count"));
        let ensemble: Vec<NodeId> = (0..count).map(NodeId::server).collect();
        let observers: Vec<NodeId> = (count..count + observer_count)
            .map(NodeId::server)
            .collect();
        for &id in ensemble.iter().chain(&observers) {
            let mut config = ZabConfig::new(id, ensemble.clone());
            config.observers = observers.clone();
            config.bugs = bugs.iter().copied().collect();
            if let Some(window) = keyed(args, "diff-window") {
                config.diff_window = window.parse().expect("a DIFF window");
            }
            let core = Core::new(config.clone()).expect("a valid configuration");
            self.nodes.insert(
                id,
                Node {
                    core: Some(core),
                    config,
                    durable: Disk::default(),
                    unsynced: Vec::new(),
                    requested: None,
                    now: LocalTime::from_millis(0),
                },
            );
        }
        writeln!(out, "ok").unwrap();
    }

    /// `stabilize`: every node persists and every message in flight is delivered, round after round, until nothing is left to do.
    fn stabilize(&mut self, out: &mut String) {
        for round in 0.. {
            assert!(round < 100, "stabilize: still busy after 100 rounds");
            let ids: Vec<NodeId> = self.nodes.keys().copied().collect();
            let mut busy = false;
            for id in ids {
                busy |= self.persist(id, out);
            }
            for item in std::mem::take(&mut self.in_flight) {
                busy = true;
                self.deliver_one(item, false, out);
            }
            if !busy {
                break;
            }
        }
    }

    /// `crash sX …`: each node loses its core and what it had not synced; its links close.
    fn crash(&mut self, nodes: Vec<NodeId>, out: &mut String) {
        for id in nodes {
            let node = self.node(id);
            node.core = None;
            node.unsynced.clear();
            node.requested = None;
            writeln!(out, "{id} crashed; disk: {}", render_disk(&node.durable)).unwrap();
            self.in_flight.retain(|item| item.to != id);
            let links: Vec<Link> = self
                .open_links
                .iter()
                .copied()
                .filter(|link| {
                    let (dialer, acceptor) = self.link_ends[link];
                    dialer == id || acceptor == id
                })
                .collect();
            for link in links {
                let other = self.other_end(link, id);
                self.close_link(link, &[other]);
            }
        }
    }

    /// `restart sX …`: each crashed node restores its core from its disk.
    fn restart(&mut self, nodes: Vec<NodeId>, out: &mut String) {
        for id in nodes {
            let node = self.node(id);
            assert!(node.core.is_none(), "restart {id}: it is not crashed");
            let core = Core::restore(node.config.clone(), node.durable.clone())
                .expect("a valid configuration");
            node.core = Some(core);
            writeln!(
                out,
                "{id} restarted from disk: {}",
                render_disk(&node.durable)
            )
            .unwrap();
        }
    }

    /// `status sX …`: each node's role, epochs, zxids, log and applied transactions.
    fn status(&mut self, nodes: Vec<NodeId>, out: &mut String) {
        for id in nodes {
            match self.nodes[&id].core.as_ref() {
                None => writeln!(out, "{id} crashed").unwrap(),
                Some(core) => writeln!(
                    out,
                    "{id} {} accepted_epoch={} current_epoch={} last={} committed={} applied={} log={} state={}",
                    core.role_name(),
                    core.accepted_epoch(),
                    core.current_epoch(),
                    hex(core.last_logged()),
                    hex(core.committed()),
                    hex(core.last_applied()),
                    render_entries(core.log()),
                    render_numbers(&core.machine().applied)
                )
                .unwrap(),
            }
        }
    }
}

/// One `sX applied zxid txn=T` line of a transcript.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppliedLine {
    /// Which command block (0-based) printed it.
    pub block: usize,
    /// The server.
    pub node: String,
    /// The zxid, as ZooKeeper packs it (`epoch << 32 | counter`).
    pub zxid: u64,
    /// The transaction.
    pub txn: u64,
}

/// What a script run printed, block by block.
pub struct Transcript {
    /// The output of each command, in order.
    pub blocks: Vec<String>,
}

fn parse_hex(text: &str) -> u64 {
    let digits = text.strip_prefix("0x").expect("a 0x zxid");
    u64::from_str_radix(digits, 16).expect("a hex zxid")
}

impl Transcript {
    /// Every line, with the block that printed it.
    pub fn lines(&self) -> impl Iterator<Item = (usize, &str)> {
        self.blocks
            .iter()
            .enumerate()
            .flat_map(|(block, text)| text.lines().map(move |line| (block, line)))
    }

    /// Every transaction applied, in order.
    pub fn applied(&self) -> Vec<AppliedLine> {
        self.lines()
            .filter_map(|(block, line)| {
                let mut words = line.split_whitespace();
                let (Some(node), Some("applied"), Some(zxid), Some(txn)) =
                    (words.next(), words.next(), words.next(), words.next())
                else {
                    return None;
                };
                Some(AppliedLine {
                    block,
                    node: node.to_string(),
                    zxid: parse_hex(zxid),
                    txn: txn.strip_prefix("txn=")?.parse().ok()?,
                })
            })
            .collect()
    }

    /// The transactions `node` applied, in order.
    pub fn applied_by(&self, node: &str) -> Vec<u64> {
        self.applied()
            .into_iter()
            .filter(|applied| applied.node == node)
            .map(|applied| applied.txn)
            .collect()
    }

    /// Pairs of applies of one zxid with different transactions (replicas disagree).
    pub fn divergent_applies(&self) -> Vec<(AppliedLine, AppliedLine)> {
        let applied = self.applied();
        let mut divergent = Vec::new();
        for (position, first) in applied.iter().enumerate() {
            for later in &applied[position + 1..] {
                if later.zxid == first.zxid && later.txn != first.txn {
                    divergent.push((first.clone(), later.clone()));
                }
            }
        }
        divergent
    }

    /// The servers that became leader of `epoch`, in order.
    pub fn leaders_of_epoch(&self, epoch: u32) -> Vec<String> {
        let needle = format!(" became leader of epoch {epoch}");
        self.lines()
            .filter(|(_, line)| line.ends_with(&needle))
            .map(|(_, line)| line.split_whitespace().next().unwrap().to_string())
            .collect()
    }

    /// What `from` sent `to` of one kind (`DIFF`, `TRUNC`, `NOTIFY`…): the rest of each line.
    pub fn sent(&self, from: &str, to: &str, kind: &str) -> Vec<String> {
        let prefix = format!("{from}->{to} {kind}");
        self.lines()
            .filter_map(|(_, line)| line.strip_prefix(&prefix))
            .map(|rest| rest.trim().to_string())
            .collect()
    }

    /// The last `status` line of `node` (without the node's name).
    pub fn last_status(&self, node: &str) -> String {
        let prefix = format!("{node} ");
        self.lines()
            .filter_map(|(_, line)| line.strip_prefix(&prefix))
            .filter(|rest| rest.contains(" accepted_epoch=") && rest.contains(" log="))
            .last()
            .unwrap_or_else(|| panic!("no status of {node}"))
            .to_string()
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
