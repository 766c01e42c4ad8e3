//! Exact traces of the sans-IO ZAB core: election, discovery, each sync mode, broadcast, and
//! the known-bug switches. The state machine is a plain sequence of numbers.

use models::zab::{
    AckKind, Effect, KnownBugs, Link, LinkDirection, LogEntry, Notification, PeerMessage,
    PeerState, PersistToken, PersistentState, Serving, StateMachine, SyncMode, Vote, Write, ZabBug,
    ZabConfig, ZabCore, Zxid,
};
use sim::{NodeId, clock::LocalTime, history::ProtocolEvent};
use std::{
    collections::{BTreeMap, VecDeque},
    sync::Arc,
};

#[derive(Clone, Debug, Default, PartialEq)]
struct Sequence {
    applied: Vec<u64>,
}

impl StateMachine for Sequence {
    type Txn = u64;
    type Snapshot = Vec<u64>;
    type Output = usize;

    fn apply(&mut self, _zxid: Zxid, txn: &u64) -> usize {
        self.applied.push(*txn);
        self.applied.len()
    }

    fn snapshot(&self) -> Vec<u64> {
        self.applied.clone()
    }

    fn restore(snapshot: &Vec<u64>) -> Self {
        Self {
            applied: snapshot.clone(),
        }
    }

    fn digest(txn: &u64) -> u64 {
        *txn
    }
}

type Core = ZabCore<Sequence, ()>;
type Message = PeerMessage<Sequence, ()>;

const S1: NodeId = NodeId::server(0);
const S2: NodeId = NodeId::server(1);
const S3: NodeId = NodeId::server(2);

fn ms(millis: u64) -> LocalTime {
    LocalTime::from_millis(millis)
}

fn config(me: NodeId, size: usize) -> ZabConfig {
    ZabConfig::new(me, (0..size).map(NodeId::server).collect())
}

fn entry(epoch: u32, counter: u32, txn: u64) -> LogEntry<u64> {
    LogEntry {
        zxid: Zxid::new(epoch, counter),
        txn: Arc::new(txn),
    }
}

fn disk(epoch: u32, log: Vec<LogEntry<u64>>) -> PersistentState<Sequence> {
    PersistentState {
        accepted_epoch: Some(epoch),
        current_epoch: Some(epoch),
        snapshot: None,
        log,
    }
}

fn looking(round: u64, epoch: u32, zxid: Zxid, leader: NodeId) -> Notification {
    Notification {
        round,
        state: PeerState::Looking,
        vote: Vote {
            epoch,
            zxid,
            leader,
        },
    }
}

fn send(link: u64, message: Message) -> Effect<Sequence, ()> {
    Effect::Send {
        link: Link(link),
        message,
    }
}

fn sync(token: u64) -> Effect<Sequence, ()> {
    Effect::Sync {
        token: PersistToken(token),
    }
}

fn applied(zxid: Zxid, txn: u64, length: usize) -> [Effect<Sequence, ()>; 2] {
    [
        Effect::Record(ProtocolEvent::Applied {
            index: zxid.as_u64(),
            term: u64::from(zxid.epoch),
            digest: txn,
        }),
        Effect::Applied {
            zxid,
            txn: Arc::new(txn),
            output: length,
        },
    ]
}

/// Election, discovery, DIFF sync, establishment and one broadcast round, every output
/// spelled out: s3 leads a fresh three-server ensemble with s1 (s2 stays down).
#[test]
fn fresh_ensemble_elects_discovers_syncs_and_broadcasts() {
    let mut s1 = Core::new(config(S1, 3)).unwrap();
    let mut s3 = Core::new(config(S3, 3)).unwrap();
    let zero = Zxid::ZERO;

    // Election: each votes for itself, s1 adopts s3's better vote (higher server id).
    s1.start(ms(0));
    assert_eq!(
        s1.take_effects(),
        vec![
            Effect::Notify {
                to: S2,
                notification: looking(1, 0, zero, S1)
            },
            Effect::Notify {
                to: S3,
                notification: looking(1, 0, zero, S1)
            },
        ]
    );
    s3.start(ms(0));
    assert_eq!(s3.take_effects().len(), 2);
    s1.on_notification(ms(1), S3, looking(1, 0, zero, S3));
    assert_eq!(
        s1.take_effects(),
        vec![
            Effect::Notify {
                to: S2,
                notification: looking(1, 0, zero, S3)
            },
            Effect::Notify {
                to: S3,
                notification: looking(1, 0, zero, S3)
            },
        ]
    );
    s3.on_notification(ms(1), S1, looking(1, 0, zero, S1));
    assert_eq!(s3.take_effects(), vec![], "a worse vote changes nothing");
    s3.on_notification(ms(2), S1, looking(1, 0, zero, S3));
    assert_eq!(s3.take_effects(), vec![]);
    // A quorum agrees; both wait finalize_wait (40 ms) for a better vote, then decide.
    s1.tick(ms(30));
    s3.tick(ms(30));
    assert_eq!(s1.take_effects(), vec![]);
    assert_eq!(s3.take_effects(), vec![]);
    s1.tick(ms(41));
    assert_eq!(s1.take_effects(), vec![Effect::Connect { leader: S3 }]);
    assert_eq!(s1.role_name(), "following");
    s3.tick(ms(42));
    assert_eq!(s3.take_effects(), vec![]);
    assert_eq!(s3.role_name(), "leading");

    // Discovery: FOLLOWERINFO from a quorum gives epoch 1, persisted before NEWEPOCH.
    s1.on_link_up(ms(43), Link(7), S3, LinkDirection::Outbound);
    assert_eq!(
        s1.take_effects(),
        vec![send(7, Message::FollowerInfo { accepted_epoch: 0 })]
    );
    s3.on_link_up(ms(44), Link(7), S1, LinkDirection::Inbound);
    s3.on_message(ms(44), Link(7), Message::FollowerInfo { accepted_epoch: 0 });
    assert_eq!(
        s3.take_effects(),
        vec![Effect::Persist(Write::AcceptedEpoch(1)), sync(1)]
    );
    s3.on_persisted(ms(45), PersistToken(1));
    assert_eq!(
        s3.take_effects(),
        vec![send(7, Message::NewEpoch { epoch: 1 })]
    );
    s1.on_message(ms(46), Link(7), Message::NewEpoch { epoch: 1 });
    assert_eq!(
        s1.take_effects(),
        vec![Effect::Persist(Write::AcceptedEpoch(1)), sync(1)],
        "the follower persists the new epoch before acknowledging it"
    );
    s1.on_persisted(ms(47), PersistToken(1));
    let ack_epoch = Message::AckEpoch {
        current_epoch: 0,
        last_zxid: zero,
        epoch_ends: vec![],
    };
    assert_eq!(s1.take_effects(), vec![send(7, ack_epoch.clone())]);

    // Synchronization: a quorum acknowledged the epoch; the leader makes it current and
    // sends an (empty) DIFF and NEWLEADER.
    s3.on_message(ms(48), Link(7), ack_epoch);
    assert_eq!(
        s3.take_effects(),
        vec![
            Effect::Persist(Write::CurrentEpoch(1)),
            sync(2),
            send(
                7,
                Message::Sync {
                    mode: SyncMode::Diff,
                    entries: vec![]
                }
            ),
            send(
                7,
                Message::NewLeader {
                    epoch: 1,
                    last_zxid: zero
                }
            ),
        ]
    );
    s1.on_message(
        ms(49),
        Link(7),
        Message::Sync {
            mode: SyncMode::Diff,
            entries: vec![],
        },
    );
    assert_eq!(s1.take_effects(), vec![]);
    s1.on_message(
        ms(49),
        Link(7),
        Message::NewLeader {
            epoch: 1,
            last_zxid: zero,
        },
    );
    assert_eq!(
        s1.take_effects(),
        vec![Effect::Persist(Write::CurrentEpoch(1)), sync(2)],
        "NEWLEADER is acknowledged only once durable"
    );
    s1.on_persisted(ms(50), PersistToken(2));
    assert_eq!(
        s1.take_effects(),
        vec![
            Effect::Record(ProtocolEvent::TermChanged { term: 1 }),
            send(
                7,
                Message::Ack {
                    kind: AckKind::NewLeader,
                    zxid: zero
                }
            ),
        ]
    );
    s3.on_message(
        ms(51),
        Link(7),
        Message::Ack {
            kind: AckKind::NewLeader,
            zxid: zero,
        },
    );
    assert_eq!(
        s3.take_effects(),
        vec![],
        "the leader's own current epoch is not durable yet"
    );
    s3.on_persisted(ms(52), PersistToken(2));
    assert_eq!(
        s3.take_effects(),
        vec![
            Effect::Record(ProtocolEvent::TermChanged { term: 1 }),
            send(7, Message::UpToDate { committed: zero }),
            Effect::Record(ProtocolEvent::BecameLeader { term: 1 }),
            Effect::Serve(Serving::AsLeader { epoch: 1 }),
        ]
    );
    s1.on_message(ms(53), Link(7), Message::UpToDate { committed: zero });
    assert_eq!(
        s1.take_effects(),
        vec![Effect::Serve(Serving::AsFollower {
            leader: S3,
            epoch: 1
        })]
    );

    // Broadcast: PROPOSAL, persist before ACK, COMMIT after a quorum of durable copies.
    let first = Zxid::new(1, 1);
    assert_eq!(s3.propose(ms(60), 7), Ok(first));
    assert_eq!(
        s3.take_effects(),
        vec![
            Effect::Persist(Write::Append(entry(1, 1, 7))),
            sync(3),
            send(7, Message::Proposal(entry(1, 1, 7))),
        ]
    );
    s1.on_message(ms(61), Link(7), Message::Proposal(entry(1, 1, 7)));
    assert_eq!(
        s1.take_effects(),
        vec![Effect::Persist(Write::Append(entry(1, 1, 7))), sync(3)]
    );
    s1.on_persisted(ms(62), PersistToken(3));
    assert_eq!(
        s1.take_effects(),
        vec![send(
            7,
            Message::Ack {
                kind: AckKind::Proposals,
                zxid: first
            }
        )]
    );
    s3.on_message(
        ms(63),
        Link(7),
        Message::Ack {
            kind: AckKind::Proposals,
            zxid: first,
        },
    );
    assert_eq!(
        s3.take_effects(),
        vec![],
        "one durable copy (s1's) is not a quorum: the leader's own is still pending"
    );
    s3.on_persisted(ms(64), PersistToken(3));
    let mut expected = vec![send(7, Message::Commit { zxid: first })];
    expected.extend(applied(first, 7, 1));
    assert_eq!(s3.take_effects(), expected);
    s1.on_message(ms(65), Link(7), Message::Commit { zxid: first });
    assert_eq!(s1.take_effects(), Vec::from(applied(first, 7, 1)));
    assert_eq!(s1.machine(), s3.machine());
}

/// Delivers effects between cores: notifications and connection messages in FIFO order,
/// syncs completed at once unless a node's disk is held.
struct Cluster {
    cores: BTreeMap<NodeId, Core>,
    now: LocalTime,
    next_link: u64,
    /// link → (dialer, acceptor)
    links: BTreeMap<Link, (NodeId, NodeId)>,
    queue: VecDeque<Delivery>,
    /// Every connection message delivered: (from, to, message).
    trace: Vec<(NodeId, NodeId, Message)>,
    held_disks: Vec<NodeId>,
    down: Vec<NodeId>,
    /// Every protocol event recorded: (node, event).
    records: Vec<(NodeId, ProtocolEvent)>,
}

enum Delivery {
    Notification(NodeId, NodeId, Notification),
    Message(NodeId, Link, Message),
    Persisted(NodeId, PersistToken),
    LinkDown(NodeId, Link),
}

impl Cluster {
    fn new(cores: Vec<Core>) -> Self {
        let mut cluster = Self {
            cores: cores.into_iter().map(|core| (core.me(), core)).collect(),
            now: ms(0),
            next_link: 0,
            links: BTreeMap::new(),
            queue: VecDeque::new(),
            trace: Vec::new(),
            held_disks: Vec::new(),
            down: Vec::new(),
            records: Vec::new(),
        };
        let nodes: Vec<NodeId> = cluster.cores.keys().copied().collect();
        for node in nodes {
            cluster.core(node).start(ms(0));
            cluster.collect(node);
        }
        cluster
    }

    fn core(&mut self, node: NodeId) -> &mut Core {
        self.cores.get_mut(&node).expect("node in cluster")
    }

    fn collect(&mut self, node: NodeId) {
        for effect in self.core(node).take_effects() {
            match effect {
                Effect::Notify { to, notification }
                    if self.cores.contains_key(&to) && !self.down.contains(&to) =>
                {
                    self.queue
                        .push_back(Delivery::Notification(node, to, notification));
                }
                Effect::Connect { leader } => {
                    let now = self.now;
                    if self.cores.contains_key(&leader) && !self.down.contains(&leader) {
                        self.next_link += 1;
                        let link = Link(self.next_link);
                        self.links.insert(link, (node, leader));
                        self.core(node)
                            .on_link_up(now, link, leader, LinkDirection::Outbound);
                        self.core(leader)
                            .on_link_up(now, link, node, LinkDirection::Inbound);
                        self.collect(leader);
                    } else {
                        self.core(node).on_connect_failed(now, leader);
                    }
                    self.collect(node);
                }
                Effect::Send { link, message } => {
                    if let Some(&(a, b)) = self.links.get(&link) {
                        let to = if a == node { b } else { a };
                        self.trace.push((node, to, message.clone()));
                        self.queue.push_back(Delivery::Message(to, link, message));
                    }
                }
                Effect::Disconnect { link } => {
                    if let Some((a, b)) = self.links.remove(&link) {
                        let other = if a == node { b } else { a };
                        self.queue.push_back(Delivery::LinkDown(other, link));
                    }
                }
                Effect::Sync { token } if !self.held_disks.contains(&node) => {
                    self.queue.push_back(Delivery::Persisted(node, token));
                }
                Effect::Record(event) => self.records.push((node, event)),
                _ => {}
            }
        }
    }

    /// Delivers until nothing is in flight.
    fn settle(&mut self) {
        while let Some(delivery) = self.queue.pop_front() {
            let now = self.now;
            let node = match delivery {
                Delivery::Notification(from, to, notification) => {
                    self.core(to).on_notification(now, from, notification);
                    to
                }
                Delivery::Message(to, link, message) => {
                    if !self.links.contains_key(&link) {
                        continue;
                    }
                    self.core(to).on_message(now, link, message);
                    to
                }
                Delivery::Persisted(node, token) => {
                    self.core(node).on_persisted(now, token);
                    node
                }
                Delivery::LinkDown(node, link) => {
                    self.core(node).on_link_down(now, link);
                    node
                }
            };
            if self.down.contains(&node) {
                self.core(node).take_effects();
            } else {
                self.collect(node);
            }
        }
    }

    /// Advances the clock in 10 ms steps, ticking and settling.
    fn run_for(&mut self, millis: u64) {
        for _ in 0..millis / 10 {
            self.now = self.now + std::time::Duration::from_millis(10);
            let nodes: Vec<NodeId> = self.cores.keys().copied().collect();
            for node in nodes {
                if !self.down.contains(&node) {
                    let now = self.now;
                    self.core(node).tick(now);
                    self.collect(node);
                }
            }
            self.settle();
        }
    }

    fn leader(&self) -> Option<NodeId> {
        self.cores
            .iter()
            .find(|(node, core)| {
                !self.down.contains(node) && matches!(core.serving(), Serving::AsLeader { .. })
            })
            .map(|(node, _)| *node)
    }

    /// The sync message `leader` sent `follower`.
    fn sync_sent(&self, leader: NodeId, follower: NodeId) -> (SyncMode<Vec<u64>>, Vec<Zxid>) {
        self.trace
            .iter()
            .rev()
            .find_map(|(from, to, message)| match message {
                Message::Sync { mode, entries } if *from == leader && *to == follower => Some((
                    mode.clone(),
                    entries.iter().map(|entry| entry.zxid).collect(),
                )),
                _ => None,
            })
            .expect("a sync was sent")
    }

    fn zxids(&self, node: NodeId) -> Vec<Zxid> {
        self.cores[&node].log().iter().map(|e| e.zxid).collect()
    }
}

/// s3 (newer epoch) leads; s1's history is a prefix of s3's: DIFF with the missing entries.
#[test]
fn diff_sends_the_entries_a_follower_lacks() {
    let s3 = Core::restore(
        config(S3, 3),
        disk(1, vec![entry(1, 1, 10), entry(1, 2, 20), entry(1, 3, 30)]),
    )
    .unwrap();
    let s1 = Core::restore(config(S1, 3), disk(1, vec![entry(1, 1, 10)])).unwrap();
    let mut cluster = Cluster::new(vec![s1, s3]);
    cluster.run_for(200);
    assert_eq!(cluster.leader(), Some(S3));
    assert_eq!(
        cluster.sync_sent(S3, S1),
        (SyncMode::Diff, vec![Zxid::new(1, 2), Zxid::new(1, 3)])
    );
    assert_eq!(cluster.zxids(S1), cluster.zxids(S3));
    // The whole initial history is committed once established, on both.
    assert_eq!(cluster.cores[&S1].machine().applied, vec![10, 20, 30]);
    assert_eq!(cluster.cores[&S3].machine().applied, vec![10, 20, 30]);
    assert_eq!(cluster.cores[&S3].current_epoch(), 2);
}

/// s1 holds (1,3), proposed in epoch 1 but never committed; s3 moved on in epoch 2 from
/// (1,2). s1 must drop (1,3) (TRUNC to the last shared zxid) before taking (2,1).
#[test]
fn trunc_drops_an_uncommitted_proposal_of_an_old_epoch() {
    let s3 = Core::restore(
        config(S3, 3),
        disk(2, vec![entry(1, 1, 10), entry(1, 2, 20), entry(2, 1, 99)]),
    )
    .unwrap();
    let s1 = Core::restore(
        config(S1, 3),
        disk(1, vec![entry(1, 1, 10), entry(1, 2, 20), entry(1, 3, 666)]),
    )
    .unwrap();
    let mut cluster = Cluster::new(vec![s1, s3]);
    cluster.run_for(200);
    assert_eq!(cluster.leader(), Some(S3));
    assert_eq!(
        cluster.sync_sent(S3, S1),
        (
            SyncMode::Trunc {
                to: Zxid::new(1, 2)
            },
            vec![Zxid::new(2, 1)]
        )
    );
    assert_eq!(cluster.zxids(S1), cluster.zxids(S3));
    assert_eq!(cluster.cores[&S1].machine().applied, vec![10, 20, 99]);
}

/// Known bug zab.diff_without_trunc (ZOOKEEPER-1154): the same histories get a DIFF from
/// (1,3), so s1 keeps the uncommitted 666 and applies it.
#[test]
fn diff_without_trunc_keeps_the_stale_proposal() {
    let mut bugged = config(S3, 3);
    bugged.bugs = KnownBugs::only(ZabBug::DiffWithoutTrunc);
    let s3 = Core::restore(
        bugged,
        disk(2, vec![entry(1, 1, 10), entry(1, 2, 20), entry(2, 1, 99)]),
    )
    .unwrap();
    let s1 = Core::restore(
        config(S1, 3),
        disk(1, vec![entry(1, 1, 10), entry(1, 2, 20), entry(1, 3, 666)]),
    )
    .unwrap();
    let mut cluster = Cluster::new(vec![s1, s3]);
    cluster.run_for(200);
    assert_eq!(
        cluster.sync_sent(S3, S1),
        (SyncMode::Diff, vec![Zxid::new(2, 1)])
    );
    assert_eq!(cluster.cores[&S1].machine().applied, vec![10, 20, 666, 99]);
    assert_eq!(cluster.cores[&S3].machine().applied, vec![10, 20, 99]);
}

/// A follower behind the leader's snapshot gets SNAP: the leader's applied state and the
/// entries after it.
#[test]
fn snap_ships_the_state_when_the_follower_is_behind_the_snapshot() {
    let s3 = Core::restore(
        config(S3, 3),
        PersistentState {
            accepted_epoch: Some(1),
            current_epoch: Some(1),
            snapshot: Some((Zxid::new(1, 3), vec![10, 20, 30])),
            log: vec![entry(1, 4, 40), entry(1, 5, 50)],
        },
    )
    .unwrap();
    let s1 = Core::restore(config(S1, 3), disk(1, vec![entry(1, 1, 10)])).unwrap();
    let mut cluster = Cluster::new(vec![s1, s3]);
    cluster.run_for(200);
    assert_eq!(cluster.leader(), Some(S3));
    assert_eq!(
        cluster.sync_sent(S3, S1),
        (
            SyncMode::Snap {
                zxid: Zxid::new(1, 3),
                snapshot: vec![10, 20, 30]
            },
            vec![Zxid::new(1, 4), Zxid::new(1, 5)]
        )
    );
    assert_eq!(
        cluster.cores[&S1].machine().applied,
        vec![10, 20, 30, 40, 50]
    );
}

/// A follower further behind than the DIFF window gets SNAP from an established leader, and
/// every later proposal after it; the cluster keeps committing.
#[test]
fn late_follower_beyond_the_diff_window_is_snapped_and_then_broadcast_to() {
    let mut configs: Vec<ZabConfig> = (0..3).map(|i| config(NodeId::server(i), 3)).collect();
    for config in &mut configs {
        config.diff_window = 2;
    }
    let cores: Vec<Core> = configs.into_iter().map(|c| Core::new(c).unwrap()).collect();
    let mut cluster = Cluster::new(cores);
    cluster.down.push(S1);
    cluster.run_for(300);
    let leader = cluster.leader().expect("s2 and s3 elect a leader");
    let now = cluster.now;
    for value in 1..=5 {
        cluster.core(leader).propose(now, value).unwrap();
        cluster.collect(leader);
        cluster.settle();
    }
    // s1 comes back with an empty log.
    cluster.down.clear();
    let restarted = Core::new(config(S1, 3)).unwrap();
    cluster.cores.insert(S1, restarted);
    cluster.core(S1).start(now);
    cluster.collect(S1);
    cluster.run_for(300);
    let (mode, entries) = cluster.sync_sent(leader, S1);
    assert!(matches!(mode, SyncMode::Snap { zxid, .. } if zxid == Zxid::new(1, 5)));
    assert_eq!(entries, vec![]);
    let now = cluster.now;
    cluster.core(leader).propose(now, 6).unwrap();
    cluster.collect(leader);
    cluster.settle();
    for node in [S1, S2, S3] {
        assert_eq!(
            cluster.cores[&node].machine().applied,
            vec![1, 2, 3, 4, 5, 6],
            "{node}"
        );
    }
}

/// Ensembles of every size from 1 to 7, even ones included, elect a leader of epoch 1 and
/// commit on every server.
#[test]
fn ensembles_of_one_to_seven_servers_commit() {
    for size in 1usize..=7 {
        let cores: Vec<Core> = (0..size)
            .map(|i| Core::new(config(NodeId::server(i), size)).unwrap())
            .collect();
        let mut cluster = Cluster::new(cores);
        cluster.run_for(300);
        let leader = cluster
            .leader()
            .unwrap_or_else(|| panic!("size {size}: no leader"));
        assert_eq!(
            leader,
            NodeId::server(size - 1),
            "highest id wins a fresh election"
        );
        let now = cluster.now;
        for value in 0..3 {
            cluster.core(leader).propose(now, value).unwrap();
            cluster.collect(leader);
        }
        cluster.settle();
        for core in cluster.cores.values() {
            assert_eq!(core.machine().applied, vec![0, 1, 2], "size {size}");
            assert_eq!(core.current_epoch(), 1);
        }
    }
}

/// Without a quorum of durable copies nothing commits; a leader that loses its quorum steps
/// down within sync_limit.
#[test]
fn no_commit_without_a_quorum_and_the_leader_steps_down() {
    let cores: Vec<Core> = (0..3)
        .map(|i| Core::new(config(NodeId::server(i), 3)).unwrap())
        .collect();
    let mut cluster = Cluster::new(cores);
    cluster.run_for(300);
    let leader = cluster.leader().unwrap();
    // Followers' disks stop syncing: they never ACK.
    cluster.held_disks = vec![S1, S2];
    let now = cluster.now;
    cluster.core(leader).propose(now, 1).unwrap();
    cluster.collect(leader);
    cluster.settle();
    assert_eq!(cluster.cores[&leader].committed(), Zxid::ZERO);
    assert!(cluster.cores[&leader].machine().applied.is_empty());
    // Followers go silent (crash): within sync_limit (500 ms) the leader gives up.
    cluster.down = vec![S1, S2];
    cluster.run_for(700);
    assert_eq!(cluster.cores[&leader].role_name(), "looking");
}

/// Known bug zab.ack_newleader_before_persist (ZOOKEEPER-3911): the follower ACKs NEWLEADER
/// before asking for the synced history to be made durable.
#[test]
fn ack_newleader_before_persist_acknowledges_first() {
    let mut bugged = config(S1, 3);
    bugged.bugs = KnownBugs::only(ZabBug::AckNewLeaderBeforePersist);
    let mut s1 = Core::new(bugged).unwrap();
    s1.start(ms(0));
    s1.on_notification(ms(1), S3, looking(1, 0, Zxid::ZERO, S3));
    s1.tick(ms(50));
    s1.on_link_up(ms(51), Link(1), S3, LinkDirection::Outbound);
    s1.on_message(ms(52), Link(1), Message::NewEpoch { epoch: 1 });
    s1.on_persisted(ms(53), PersistToken(1));
    s1.on_message(
        ms(54),
        Link(1),
        Message::Sync {
            mode: SyncMode::Diff,
            entries: vec![entry(0, 1, 5)],
        },
    );
    s1.take_effects();
    s1.on_message(
        ms(55),
        Link(1),
        Message::NewLeader {
            epoch: 1,
            last_zxid: Zxid::new(0, 1),
        },
    );
    assert_eq!(
        s1.take_effects(),
        vec![
            Effect::Persist(Write::CurrentEpoch(1)),
            send(
                1,
                Message::Ack {
                    kind: AckKind::NewLeader,
                    zxid: Zxid::new(0, 1)
                }
            ),
            sync(2),
        ]
    );
}

/// Known bug zab.epoch_not_persisted (ZOOKEEPER-335): no epoch is written; after a restart
/// the epoch is re-derived from the log, so a restarted ensemble reuses epoch 1.
#[test]
fn epoch_not_persisted_reuses_an_epoch_after_restart() {
    let bugged = |me| {
        let mut config = config(me, 3);
        config.bugs = KnownBugs::only(ZabBug::EpochNotPersisted);
        Core::new(config).unwrap()
    };
    let mut cluster = Cluster::new(vec![bugged(S1), bugged(S2), bugged(S3)]);
    cluster.run_for(300);
    assert_eq!(cluster.leader(), Some(S3));
    assert_eq!(cluster.cores[&S3].current_epoch(), 1);
    // Nothing was logged in epoch 1. Restart s1 and s2 from their (empty) disks.
    let restarted = |me| {
        let mut config = config(me, 3);
        config.bugs = KnownBugs::only(ZabBug::EpochNotPersisted);
        Core::restore(config, PersistentState::default()).unwrap()
    };
    let mut again = Cluster::new(vec![restarted(S1), restarted(S2)]);
    again.run_for(300);
    assert_eq!(again.leader(), Some(S2));
    assert_eq!(
        again.cores[&S2].current_epoch(),
        1,
        "a second leader of epoch 1"
    );

    // The correct model persisted the epochs: the same restart moves to epoch 2.
    let mut cluster = Cluster::new(
        [S1, S2, S3]
            .map(|me| Core::new(config(me, 3)).unwrap())
            .into(),
    );
    cluster.run_for(300);
    let durable = |core: &Core| PersistentState::<Sequence> {
        accepted_epoch: Some(core.accepted_epoch()),
        current_epoch: Some(core.current_epoch()),
        snapshot: None,
        log: vec![],
    };
    let mut again = Cluster::new(vec![
        Core::restore(config(S1, 3), durable(&cluster.cores[&S1])).unwrap(),
        Core::restore(config(S2, 3), durable(&cluster.cores[&S2])).unwrap(),
    ]);
    again.run_for(300);
    assert_eq!(again.leader(), Some(S2));
    assert_eq!(again.cores[&S2].current_epoch(), 2);
}

/// Known bug zab.last_processed_zxid_on_diff (ZOOKEEPER-2355): the DIFF's transactions are
/// marked processed before being applied, so the follower never applies them.
#[test]
fn last_processed_zxid_on_diff_skips_the_diff() {
    let s3 = Core::restore(
        config(S3, 3),
        disk(1, vec![entry(1, 1, 10), entry(1, 2, 20), entry(1, 3, 30)]),
    )
    .unwrap();
    let mut bugged = config(S1, 3);
    bugged.bugs = KnownBugs::only(ZabBug::LastProcessedZxidOnDiff);
    let s1 = Core::restore(bugged, disk(1, vec![entry(1, 1, 10)])).unwrap();
    let mut cluster = Cluster::new(vec![s1, s3]);
    cluster.run_for(200);
    assert_eq!(cluster.leader(), Some(S3));
    assert_eq!(cluster.zxids(S1), cluster.zxids(S3), "logged, but...");
    assert_eq!(cluster.cores[&S3].machine().applied, vec![10, 20, 30]);
    assert_eq!(
        cluster.cores[&S1].machine().applied,
        Vec::<u64>::new(),
        "...never applied"
    );
}

/// A leader of a stale epoch is refused: a follower that accepted a newer epoch goes back
/// to election instead of acknowledging.
#[test]
fn follower_refuses_an_older_epoch() {
    let mut s1 = Core::restore(
        config(S1, 3),
        PersistentState {
            accepted_epoch: Some(5),
            current_epoch: Some(4),
            snapshot: None,
            log: vec![],
        },
    )
    .unwrap();
    s1.start(ms(0));
    assert_eq!(
        s1.take_effects()[0],
        Effect::Record(ProtocolEvent::TermChanged { term: 4 })
    );
    s1.on_notification(ms(1), S3, looking(1, 9, Zxid::ZERO, S3));
    s1.tick(ms(50));
    s1.on_link_up(ms(51), Link(1), S3, LinkDirection::Outbound);
    s1.take_effects();
    s1.on_message(ms(52), Link(1), Message::NewEpoch { epoch: 3 });
    let effects = s1.take_effects();
    assert_eq!(effects[0], Effect::Disconnect { link: Link(1) });
    assert_eq!(s1.role_name(), "looking");
}

#[test]
fn bad_configurations_are_typed_errors() {
    use models::zab::ConfigError;
    assert_eq!(
        Core::new(ZabConfig::new(S1, vec![])).unwrap_err(),
        ConfigError::EmptyEnsemble
    );
    assert_eq!(
        Core::new(ZabConfig::new(S1, vec![S2, S3])).unwrap_err(),
        ConfigError::NotAMember { me: S1 }
    );
    assert_eq!(
        Core::new(ZabConfig::new(S1, vec![S1, S1])).unwrap_err(),
        ConfigError::Duplicate { server: S1 }
    );
    assert_eq!(
        Core::new(ZabConfig::new(S1, vec![S1, NodeId::client(0)])).unwrap_err(),
        ConfigError::NotAServer {
            node: NodeId::client(0)
        }
    );
    assert_eq!(
        "zab.nope".parse::<ZabBug>().unwrap_err().to_string(),
        "unknown ZAB bug `zab.nope` (expected one of: zab.epoch_not_persisted, zab.diff_without_trunc, zab.last_processed_zxid_on_diff, zab.ack_newleader_before_persist, zab.sync_not_quorum, zab.reconnect_ignores_last_zxid, zab.setcurrentepoch_on_uptodate, zab.fle_nontransitive_order, zab.snap_zxid_below_log_tail)"
    );
    for bug in ZabBug::ALL {
        assert_eq!(bug.name().parse::<ZabBug>(), Ok(bug));
    }
}

/// s1 follows s3 into epoch 1 up to the NEWLEADER of a synced history ending at (0, 1);
/// returns s1 with the effects of the NEWLEADER taken.
fn follower_at_new_leader(bugs: KnownBugs) -> (Core, Vec<Effect<Sequence, ()>>) {
    let mut config = config(S1, 3);
    config.bugs = bugs;
    let mut s1 = Core::new(config).unwrap();
    s1.start(ms(0));
    s1.on_notification(ms(1), S3, looking(1, 0, Zxid::ZERO, S3));
    s1.tick(ms(50));
    s1.on_link_up(ms(51), Link(1), S3, LinkDirection::Outbound);
    s1.on_message(ms(52), Link(1), Message::NewEpoch { epoch: 1 });
    s1.on_persisted(ms(53), PersistToken(1));
    s1.on_message(
        ms(54),
        Link(1),
        Message::Sync {
            mode: SyncMode::Diff,
            entries: vec![entry(0, 1, 5)],
        },
    );
    s1.take_effects();
    s1.on_message(
        ms(55),
        Link(1),
        Message::NewLeader {
            epoch: 1,
            last_zxid: Zxid::new(0, 1),
        },
    );
    let effects = s1.take_effects();
    (s1, effects)
}

/// Known bug zab.setcurrentepoch_on_uptodate (ZOOKEEPER-1282): the correct follower writes
/// the new current epoch with the synced history and ACKs NEWLEADER once both are durable;
/// the buggy one ACKs with its old current epoch still in memory and on disk, and takes
/// the new one only on UPTODATE. A crash between the two leaves it with epoch 0 on disk.
#[test]
fn setcurrentepoch_on_uptodate_acks_newleader_with_the_old_epoch() {
    let ack_newleader = || {
        send(
            1,
            Message::Ack {
                kind: AckKind::NewLeader,
                zxid: Zxid::new(0, 1),
            },
        )
    };
    let (mut correct, effects) = follower_at_new_leader(KnownBugs::none());
    assert_eq!(
        effects,
        vec![Effect::Persist(Write::CurrentEpoch(1)), sync(2)]
    );
    assert_eq!(correct.current_epoch(), 1);
    correct.on_persisted(ms(56), PersistToken(2));
    assert_eq!(
        correct.take_effects(),
        vec![
            Effect::Record(ProtocolEvent::TermChanged { term: 1 }),
            ack_newleader()
        ]
    );

    let (mut bugged, effects) =
        follower_at_new_leader(KnownBugs::only(ZabBug::SetCurrentEpochOnUpToDate));
    assert_eq!(effects, vec![sync(2)], "no current epoch written");
    bugged.on_persisted(ms(56), PersistToken(2));
    assert_eq!(bugged.take_effects(), vec![ack_newleader()]);
    assert_eq!(bugged.current_epoch(), 0, "acknowledged with the old epoch");
    bugged.on_message(
        ms(57),
        Link(1),
        Message::UpToDate {
            committed: Zxid::new(0, 1),
        },
    );
    let [record, applied] = applied(Zxid::new(0, 1), 5, 1);
    assert_eq!(
        bugged.take_effects(),
        vec![
            Effect::Persist(Write::CurrentEpoch(1)),
            sync(3),
            record,
            applied,
            Effect::Serve(Serving::AsFollower {
                leader: S3,
                epoch: 1
            }),
        ]
    );
    assert_eq!(bugged.current_epoch(), 1);
}

/// A looking server of epoch `epoch` with an empty log, in round 1, its own notifications
/// taken.
fn looking_server(me: NodeId, epoch: u32, bugs: KnownBugs) -> Core {
    let mut config = config(me, 3);
    config.bugs = bugs;
    let mut core = Core::restore(config, disk(epoch, vec![])).unwrap();
    core.start(ms(0));
    core.take_effects();
    core
}

/// Known bug zab.fle_nontransitive_order (ZOOKEEPER-1419): s2 (epoch 2) and s3 (epoch 1)
/// have equal (empty) logs. Correctly, s2's vote is the better one: s3 adopts it and s2
/// keeps its own. With the bug, s3's vote also beats s2's (equal zxids, higher id), so s2
/// adopts s3's vote while s3 adopts s2's: each tells everyone the other's vote, and the
/// votes swap instead of agreeing.
#[test]
fn fle_nontransitive_order_swaps_votes_between_epochs() {
    let s2_vote = looking(1, 2, Zxid::ZERO, S2);
    let s3_vote = looking(1, 1, Zxid::ZERO, S3);
    let told = |notification: Notification, to: [NodeId; 2]| -> Vec<Effect<Sequence, ()>> {
        to.into_iter()
            .map(|to| Effect::Notify { to, notification })
            .collect()
    };
    for bugs in [
        KnownBugs::none(),
        KnownBugs::only(ZabBug::FleNontransitiveOrder),
    ] {
        let buggy = bugs.has(ZabBug::FleNontransitiveOrder);
        let mut s2 = looking_server(S2, 2, bugs.clone());
        let mut s3 = looking_server(S3, 1, bugs);
        s3.on_notification(ms(1), S2, s2_vote);
        assert_eq!(
            s3.take_effects(),
            told(looking(1, 2, Zxid::ZERO, S2), [S1, S2]),
            "the newer epoch wins (bug: {buggy})"
        );
        s2.on_notification(ms(1), S3, s3_vote);
        if buggy {
            assert_eq!(
                s2.take_effects(),
                told(looking(1, 1, Zxid::ZERO, S3), [S1, S3]),
                "the older epoch's vote wins by id"
            );
        } else {
            assert_eq!(s2.take_effects(), vec![], "an older epoch's vote loses");
        }
    }
}

/// Known bug zab.snap_zxid_below_log_tail (ZOOKEEPER-2832): s1 logged (1,3), never
/// committed; the leader of epoch 3 sends it a SNAP at (1,2) and (2,1) after it. The
/// correct follower replaces its snapshot and empties its log on disk; the buggy one only
/// replaces the snapshot, so once it restarts from that disk (the log read on from the
/// snapshot's zxid, as ZooKeeper loads it) the dead (1,3) is back in its history.
#[test]
fn snap_zxid_below_log_tail_keeps_the_dead_entry_on_disk() {
    let old_log = vec![entry(1, 1, 10), entry(1, 2, 20), entry(1, 3, 666)];
    let snapshot = (Zxid::new(1, 2), vec![10, 20]);
    for bugs in [
        KnownBugs::none(),
        KnownBugs::only(ZabBug::SnapZxidBelowLogTail),
    ] {
        let buggy = bugs.has(ZabBug::SnapZxidBelowLogTail);
        let mut config = config(S1, 3);
        config.bugs = bugs;
        let mut s1 = Core::restore(config.clone(), disk(1, old_log.clone())).unwrap();
        s1.start(ms(0));
        s1.on_notification(ms(1), S3, looking(1, 2, Zxid::new(2, 1), S3));
        s1.tick(ms(50));
        s1.on_link_up(ms(51), Link(1), S3, LinkDirection::Outbound);
        s1.on_message(ms(52), Link(1), Message::NewEpoch { epoch: 3 });
        s1.on_persisted(ms(53), PersistToken(1));
        s1.take_effects();
        s1.on_message(
            ms(54),
            Link(1),
            Message::Sync {
                mode: SyncMode::Snap {
                    zxid: snapshot.0,
                    snapshot: snapshot.1.clone(),
                },
                entries: vec![entry(2, 1, 99)],
            },
        );
        let written = if buggy {
            Write::ReplaceSnapshot {
                zxid: snapshot.0,
                snapshot: snapshot.1.clone(),
            }
        } else {
            Write::InstallSnapshot {
                zxid: snapshot.0,
                snapshot: snapshot.1.clone(),
            }
        };
        assert_eq!(
            s1.take_effects(),
            vec![
                Effect::Persist(written),
                Effect::Record(ProtocolEvent::SnapshotInstalled {
                    index: snapshot.0.as_u64(),
                    term: 1
                }),
                Effect::Persist(Write::Append(entry(2, 1, 99))),
            ]
        );
        assert_eq!(s1.log(), &[entry(2, 1, 99)], "in memory, both are right");
        // What the disk holds after those writes, and the server restarted from it.
        let disk_log = if buggy {
            [old_log.clone(), vec![entry(2, 1, 99)]].concat()
        } else {
            vec![entry(2, 1, 99)]
        };
        let restarted = Core::restore(
            config,
            PersistentState {
                accepted_epoch: Some(3),
                current_epoch: Some(1),
                snapshot: Some(snapshot.clone()),
                log: disk_log,
            },
        )
        .unwrap();
        let expected = if buggy {
            vec![Zxid::new(1, 3), Zxid::new(2, 1)]
        } else {
            vec![Zxid::new(2, 1)]
        };
        let zxids: Vec<Zxid> = restarted.log().iter().map(|e| e.zxid).collect();
        assert_eq!(zxids, expected, "bug: {buggy}");
    }
}

// ----- Even-sized ensembles and observers ---------------------------------------------------

/// Cores for `alive` of an ensemble of `voters` voters (`s1..`) and `observers` observers
/// (after them); servers not alive never start.
fn ensemble(voters: usize, observers: usize, alive: &[usize]) -> Vec<Core> {
    alive
        .iter()
        .map(|&index| Core::new(observer_config(NodeId::server(index), voters, observers)).unwrap())
        .collect()
}

fn observer_config(me: NodeId, voters: usize, observers: usize) -> ZabConfig {
    let mut config = config(me, voters);
    config.observers = (voters..voters + observers).map(NodeId::server).collect();
    config
}

/// Proposes `values` at the established leader and delivers everything.
fn propose_all(cluster: &mut Cluster, leader: NodeId, values: impl IntoIterator<Item = u64>) {
    let now = cluster.now;
    for value in values {
        cluster.core(leader).propose(now, value).unwrap();
        cluster.collect(leader);
    }
    cluster.settle();
}

/// A quorum is a strict majority of the voters: 2 voters need both, 4 need 3, 6 need 4.
/// With that many up they elect and commit; with one fewer nobody leads — 6 voters
/// tolerate 2 failures, as 5 do.
#[test]
fn even_ensembles_need_a_strict_majority() {
    for (size, quorum) in [(2usize, 2usize), (4, 3), (6, 4)] {
        assert_eq!(config(S1, size).quorum(), quorum);
        // The highest ids up, so that the highest live one leads.
        let up: Vec<usize> = (size - quorum..size).collect();
        let mut cluster = Cluster::new(ensemble(size, 0, &up));
        cluster.run_for(400);
        let leader = cluster
            .leader()
            .unwrap_or_else(|| panic!("{size} voters, {quorum} up: no leader"));
        propose_all(&mut cluster, leader, [1, 2]);
        for core in cluster.cores.values() {
            assert_eq!(core.machine().applied, vec![1, 2], "{size} voters");
        }
        let short: Vec<usize> = (size - quorum + 1..size).collect();
        let mut cluster = Cluster::new(ensemble(size, 0, &short));
        cluster.run_for(2_000);
        assert_eq!(cluster.leader(), None, "{size} voters, {} up", quorum - 1);
        assert!(
            !cluster
                .records
                .iter()
                .any(|(_, event)| matches!(event, ProtocolEvent::BecameLeader { .. })),
            "{size} voters, {} up: somebody was established",
            quorum - 1
        );
    }
}

/// Six voters with two crashed after the election keep committing; a third crash stops
/// commits and the leader steps down within sync_limit.
#[test]
fn six_voters_tolerate_two_crashes_not_three() {
    let mut cluster = Cluster::new(ensemble(6, 0, &[0, 1, 2, 3, 4, 5]));
    cluster.run_for(400);
    let leader = cluster.leader().expect("a leader");
    assert_eq!(leader, NodeId::server(5));
    cluster.down = vec![S1, S2];
    cluster.run_for(700);
    assert_eq!(cluster.leader(), Some(leader), "two down: still leading");
    propose_all(&mut cluster, leader, [7]);
    assert_eq!(cluster.cores[&leader].machine().applied, vec![7]);
    cluster.down.push(S3);
    propose_all(&mut cluster, leader, [8]);
    assert_eq!(
        cluster.cores[&leader].machine().applied,
        vec![7],
        "three down: 8 cannot commit"
    );
    cluster.run_for(700);
    assert_eq!(cluster.cores[&leader].role_name(), "looking");
}

const S4: NodeId = NodeId::server(3);
const S5: NodeId = NodeId::server(4);

/// `s1..s3` vote and `s4..s5` observe. The voters elect s3 (an observer never leads,
/// though it has the highest ids); the observers ask the voters whom they follow and observe
/// s3; their FOLLOWERINFO, ACKEPOCH and NEWLEADER ACK count in no quorum; in broadcast they
/// get no PROPOSAL or COMMIT, only an INFORM per committed transaction, and ACK nothing;
/// every QuorumCounted record names voters only.
#[test]
fn observers_learn_committed_transactions_and_never_vote() {
    let mut cluster = Cluster::new(ensemble(3, 2, &[0, 1, 2, 3, 4]));
    cluster.run_for(1_500);
    assert_eq!(cluster.leader(), Some(S3));
    for observer in [S4, S5] {
        assert_eq!(cluster.cores[&observer].role_name(), "observing");
        assert_eq!(
            cluster.cores[&observer].serving(),
            Serving::AsObserver {
                leader: S3,
                epoch: 1
            }
        );
    }
    assert_eq!(cluster.cores[&S1].role_name(), "following");
    cluster.trace.clear();
    cluster.records.clear();
    propose_all(&mut cluster, S3, [10, 20]);
    for node in [S1, S2, S3, S4, S5] {
        assert_eq!(
            cluster.cores[&node].machine().applied,
            vec![10, 20],
            "{node}"
        );
    }
    let to_observers: Vec<&Message> = cluster
        .trace
        .iter()
        .filter(|(_, to, _)| [S4, S5].contains(to))
        .map(|(_, _, message)| message)
        .collect();
    assert_eq!(to_observers.len(), 4, "{to_observers:?}");
    assert!(
        to_observers
            .iter()
            .all(|message| matches!(message, Message::Inform(_))),
        "{to_observers:?}"
    );
    assert!(
        !cluster
            .trace
            .iter()
            .any(|(from, _, message)| [S4, S5].contains(from)
                && matches!(message, Message::Ack { .. })),
        "an observer acknowledged a transaction"
    );
    // Each INFORM went out after the commit it reports: the followers' ACKs came first.
    let first_inform = cluster
        .trace
        .iter()
        .position(|(_, _, message)| matches!(message, Message::Inform(_)))
        .unwrap();
    let first_commit = cluster
        .trace
        .iter()
        .position(|(_, _, message)| matches!(message, Message::Commit { .. }))
        .unwrap();
    assert!(first_commit < first_inform);
}

/// Every quorum the leader counted, from the election on, named voters only; the observers
/// recorded that they observe.
#[test]
fn quorum_records_name_voters_only() {
    let mut cluster = Cluster::new(ensemble(3, 2, &[0, 1, 2, 3, 4]));
    cluster.run_for(1_500);
    propose_all(&mut cluster, S3, [1]);
    let observing: Vec<NodeId> = cluster
        .records
        .iter()
        .filter(|(_, event)| *event == ProtocolEvent::StartedObserving)
        .map(|(node, _)| *node)
        .collect();
    assert_eq!(observing, vec![S4, S5]);
    let quorums: Vec<(sim::history::QuorumStage, Vec<NodeId>)> = cluster
        .records
        .iter()
        .filter_map(|(node, event)| match event {
            ProtocolEvent::QuorumCounted { stage, servers, .. } => {
                assert_eq!(*node, S3);
                Some((*stage, servers.clone()))
            }
            _ => None,
        })
        .collect();
    use sim::history::QuorumStage::*;
    let stages: Vec<_> = quorums.iter().map(|(stage, _)| *stage).collect();
    assert_eq!(stages, vec![NewEpoch, AckEpoch, NewLeader, Commit]);
    for (stage, servers) in &quorums {
        assert!(servers.len() >= 2, "{stage:?}: {servers:?}");
        assert!(
            servers.iter().all(|server| [S1, S2, S3].contains(server)),
            "{stage:?} counted {servers:?}"
        );
    }
}

/// Observers alone are no quorum: one voter and two observers up elect nobody.
#[test]
fn observers_make_no_quorum() {
    let mut cluster = Cluster::new(ensemble(3, 2, &[0, 3, 4]));
    cluster.run_for(3_000);
    assert_eq!(cluster.leader(), None);
    for node in [S1, S4, S5] {
        assert_eq!(cluster.cores[&node].role_name(), "looking", "{node}");
    }
}

/// With every observer gone (down from the start, or crashed later for longer than
/// sync_limit) the voters elect, stay established and keep committing.
#[test]
fn voters_keep_committing_without_their_observers() {
    let mut cluster = Cluster::new(ensemble(3, 2, &[0, 1, 2]));
    cluster.run_for(400);
    assert_eq!(cluster.leader(), Some(S3));
    propose_all(&mut cluster, S3, [1]);
    assert_eq!(cluster.cores[&S1].machine().applied, vec![1]);

    let mut cluster = Cluster::new(ensemble(3, 2, &[0, 1, 2, 3, 4]));
    cluster.run_for(1_500);
    assert_eq!(cluster.leader(), Some(S3));
    cluster.down = vec![S4, S5];
    cluster.run_for(1_000);
    assert_eq!(
        cluster.leader(),
        Some(S3),
        "losing the observers cost the leader"
    );
    propose_all(&mut cluster, S3, [2, 3]);
    assert_eq!(cluster.cores[&S2].machine().applied, vec![2, 3]);
}

/// An observer that comes back is synced as a follower would be: DIFF when its history is a
/// prefix of the leader's, TRUNC when it holds an entry the leader lacks, SNAP when it is
/// further behind than the DIFF window. Afterwards it applies what the leader commits.
#[test]
fn a_rejoining_observer_catches_up_by_the_right_sync_mode() {
    // DIFF: the leader's history extends the observer's.
    let leader_log = vec![entry(1, 1, 10), entry(1, 2, 20), entry(1, 3, 30)];
    let s3 = Core::restore(observer_config(S3, 3, 1), disk(1, leader_log.clone())).unwrap();
    let s2 = Core::restore(observer_config(S2, 3, 1), disk(1, leader_log.clone())).unwrap();
    let s4 = Core::restore(observer_config(S4, 3, 1), disk(1, vec![entry(1, 1, 10)])).unwrap();
    let mut cluster = Cluster::new(vec![s2, s3, s4]);
    cluster.run_for(1_500);
    assert_eq!(cluster.leader(), Some(S3));
    assert_eq!(
        cluster.sync_sent(S3, S4),
        (SyncMode::Diff, vec![Zxid::new(1, 2), Zxid::new(1, 3)])
    );
    propose_all(&mut cluster, S3, [40]);
    assert_eq!(cluster.cores[&S4].machine().applied, vec![10, 20, 30, 40]);

    // TRUNC: the observer holds (1,3), which the voters' history of epoch 2 does not.
    let voters_log = vec![entry(1, 1, 10), entry(1, 2, 20), entry(2, 1, 99)];
    let s3 = Core::restore(observer_config(S3, 3, 1), disk(2, voters_log.clone())).unwrap();
    let s2 = Core::restore(observer_config(S2, 3, 1), disk(2, voters_log)).unwrap();
    let s4 = Core::restore(
        observer_config(S4, 3, 1),
        disk(1, vec![entry(1, 1, 10), entry(1, 2, 20), entry(1, 3, 666)]),
    )
    .unwrap();
    let mut cluster = Cluster::new(vec![s2, s3, s4]);
    cluster.run_for(1_500);
    assert_eq!(cluster.leader(), Some(S3));
    assert_eq!(
        cluster.sync_sent(S3, S4),
        (
            SyncMode::Trunc {
                to: Zxid::new(1, 2)
            },
            vec![Zxid::new(2, 1)]
        )
    );
    assert_eq!(cluster.zxids(S4), cluster.zxids(S3));
    assert_eq!(cluster.cores[&S4].machine().applied, vec![10, 20, 99]);

    // SNAP: the observer is down while the voters commit more than the DIFF window.
    let mut cores = ensemble(3, 1, &[0, 1, 2, 3]);
    for core in &mut cores {
        let mut config = core.config().clone();
        config.diff_window = 2;
        *core = Core::new(config).unwrap();
    }
    let mut cluster = Cluster::new(cores);
    cluster.run_for(1_500);
    assert_eq!(cluster.leader(), Some(S3));
    cluster.down = vec![S4];
    propose_all(&mut cluster, S3, 1..=5);
    let mut config = observer_config(S4, 3, 1);
    config.diff_window = 2;
    cluster.cores.insert(S4, Core::new(config).unwrap());
    cluster.down.clear();
    let now = cluster.now;
    cluster.core(S4).start(now);
    cluster.collect(S4);
    cluster.run_for(1_500);
    let (mode, entries) = cluster.sync_sent(S3, S4);
    assert!(
        matches!(mode, SyncMode::Snap { zxid, .. } if zxid == Zxid::new(1, 5)),
        "{mode:?}"
    );
    assert_eq!(entries, vec![]);
    assert_eq!(cluster.cores[&S4].role_name(), "observing");
    propose_all(&mut cluster, S3, [6]);
    assert_eq!(cluster.cores[&S4].machine().applied, vec![1, 2, 3, 4, 5, 6]);
}

#[test]
fn an_ensemble_of_observers_only_is_a_typed_error() {
    use models::zab::ConfigError;
    let mut config = ZabConfig::new(S4, vec![]);
    config.observers = vec![S4];
    assert_eq!(Core::new(config).unwrap_err(), ConfigError::NoVoters);
    let mut config = observer_config(S4, 3, 1);
    config.observers.push(S1);
    assert_eq!(
        Core::new(config).unwrap_err(),
        ConfigError::Duplicate { server: S1 }
    );
}

/// Observers do not keep a leader in power: with both other voters gone, a leader whose
/// observers still answer its pings steps down within sync_limit, and nothing commits.
#[test]
fn observers_do_not_keep_a_leader_in_power() {
    let mut cluster = Cluster::new(ensemble(3, 2, &[0, 1, 2, 3, 4]));
    cluster.run_for(1_500);
    assert_eq!(cluster.leader(), Some(S3));
    cluster.down = vec![S1, S2];
    propose_all(&mut cluster, S3, [1]);
    assert_eq!(cluster.cores[&S3].committed(), Zxid::ZERO);
    cluster.run_for(700);
    assert_eq!(cluster.cores[&S3].role_name(), "looking");
    assert!(cluster.cores[&S4].machine().applied.is_empty());
}
