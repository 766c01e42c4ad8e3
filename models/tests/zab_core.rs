//! Tests of the sans-IO ZAB core that the scripts in `tests/testdata/zab/` (run by
//! `zab_scripts.rs`) do not cover: SNAP from a leader's snapshot, ensembles of 1 to 7 and the
//! quorums of even ones, observers in elections, syncs and failures, a stale epoch refused,
//! and configuration errors. The state machine is a plain sequence of numbers.

mod zab_sequence;

use models::zab::{
    Effect, Link, LinkDirection, LogEntry, Notification, PeerMessage, PeerState, PersistToken,
    PersistentState, Serving, SyncMode, Vote, ZabBug, ZabConfig, ZabCore, Zxid,
};
use sim::{NodeId, clock::LocalTime, history::ProtocolEvent};
use std::{
    collections::{BTreeMap, VecDeque},
    sync::Arc,
};

use zab_sequence::Sequence;

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

/// Delivers effects between cores: notifications and connection messages in FIFO order,
/// syncs completed at once.
struct Cluster {
    cores: BTreeMap<NodeId, Core>,
    now: LocalTime,
    next_link: u64,
    /// link → (dialer, acceptor)
    links: BTreeMap<Link, (NodeId, NodeId)>,
    queue: VecDeque<Delivery>,
    /// Every connection message delivered: (from, to, message).
    trace: Vec<(NodeId, NodeId, Message)>,
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
                Effect::Sync { token } => {
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

    fn zxids(&self, node: NodeId) -> Vec<Zxid> {
        self.cores[&node].log().iter().map(|e| e.zxid).collect()
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
    assert_eq!(
        cluster.zxids(S1),
        cluster.zxids(S3),
        "the entries after the snapshot"
    );
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
