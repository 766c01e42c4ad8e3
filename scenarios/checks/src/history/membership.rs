//! Group membership as clients observed it: each member's registrations (from when it
//! registered to when it, or its session, let go), and each discoverer's views.
//!
//! Reads, all recorded at the client node:
//! - the discovery recipes' `RecipeEvent::Membership` records: a member's `Registered` once
//!   the store acknowledged its node or key, its `Unregistered` once the delete was
//!   acknowledged; a discoverer's `ViewChanged`, the view it handed its caller;
//! - what ties a registration to a session: the latest `ZkEvent::SessionEstablished` the
//!   ZooKeeper client library recorded for the member's process, or the latest lease grant
//!   acknowledged to it (etcd; its `Invoke`/`Complete`), before it registered;
//! - how that session ended, as clients were told or the store applied it: a ZooKeeper
//!   session's `ZkEvent::SessionExpired`/`SessionClosed` (what the client library was told
//!   by a server), an etcd lease's committed expiry (`ProtocolEvent::SessionExpired`, the
//!   one fact servers report: see [`crate::etcd`]) or an acknowledged revoke
//!   ([`super::leases`]);
//! - client crashes, from the fault records (a crashed process renews nothing: its session
//!   or lease runs out by itself), and when the run healed.
//!
//! A registration is *certainly live* from its `Registered` record until the first of
//! these ends; *certainly gone* once one of them is certain; in between (a revoke whose
//! answer was lost, a crashed member whose ZooKeeper session has not yet had a timeout to
//! run out after the crash and the heal), either.

use super::{
    healed_at,
    leases::{LeaseFacts, leases},
};
use sim::{
    NodeId,
    history::{
        Event, History, OpResult, Operation, RecipeEvent, Record, Response,
        kv::{KvOperation, KvResponse},
        recipe::MembershipStep,
        zk::ZkEvent,
    },
    time::SimTime,
};
use std::{
    collections::{BTreeMap, BTreeSet},
    time::Duration,
};

/// A client process: the node and the logical process on it.
pub type Process = (NodeId, u32);

/// What a member's registration lived by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attachment {
    /// A ZooKeeper session, with its negotiated timeout.
    ZkSession {
        /// The session id.
        session: u64,
        /// Its timeout, milliseconds.
        timeout_ms: u64,
    },
    /// An etcd lease.
    Lease {
        /// The lease id.
        lease: u64,
    },
}

/// Why a registration ended (or may have).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndReason {
    /// The member unregistered, and the store acknowledged it.
    Unregistered,
    /// A server told the member's ZooKeeper client its session expired or was closed.
    SessionEnded,
    /// The etcd lease expired (committed) or its revoke was acknowledged.
    LeaseEnded,
    /// A revoke of the lease was sent and its answer lost: it may have ended there.
    MaybeRevoked,
    /// The member's node crashed: its session or lease runs out by itself.
    Crashed,
}

/// How a registration ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegistrationEnd {
    /// The first moment it may have ended.
    pub at: SimTime,
    /// Why, at that moment.
    pub why: EndReason,
    /// From when it is certainly gone (`None`: never certain in this history).
    pub certain_from: Option<SimTime>,
}

/// One registration of a member in a group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registration {
    /// The group.
    pub group: String,
    /// The member's name.
    pub member: String,
    /// Who registered.
    pub process: Process,
    /// What it lived by (`None`: no session or lease was seen for the process).
    pub attachment: Option<Attachment>,
    /// When the member recorded it.
    pub from: SimTime,
    /// How it ended, if it did.
    pub end: Option<RegistrationEnd>,
}

impl Registration {
    /// Whether it is certainly live at every moment of `[from, until]`.
    pub(crate) fn certainly_live_over(&self, from: SimTime, until: SimTime) -> bool {
        self.from <= from && self.end.is_none_or(|end| end.at > until)
    }

    /// Whether it is certainly gone at every moment from `from` on.
    pub(crate) fn certainly_gone_from(&self, from: SimTime) -> bool {
        self.end
            .and_then(|end| end.certain_from)
            .is_some_and(|gone| gone <= from)
    }

    /// Ends it at `at` for `why` (certainly gone from `certain_from`; `None`: not in this
    /// history), unless an end it already has came first; the earliest certainty wins.
    fn end_at(&mut self, at: SimTime, why: EndReason, certain_from: Option<SimTime>) {
        self.end = Some(match self.end {
            None => RegistrationEnd {
                at,
                why,
                certain_from,
            },
            Some(end) => RegistrationEnd {
                at: end.at.min(at),
                why: if at < end.at { why } else { end.why },
                certain_from: match (end.certain_from, certain_from) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                },
            },
        });
    }
}

/// Every registration, in the order they were recorded.
pub fn registrations(history: &History) -> Vec<Registration> {
    let mut reading = RegistrationReading {
        healed: healed_at(history),
        ..RegistrationReading::default()
    };
    for record in history.records() {
        reading.read(record);
    }
    let mut registrations = reading.registrations;
    add_lease_ends(&mut registrations, &leases(history));
    registrations
}

/// The registrations as the records go by, with what ties them to sessions and leases.
/// Ends known from the records are set as they come; lease ends are added after.
#[derive(Default)]
struct RegistrationReading {
    healed: Option<SimTime>,
    /// Each process's latest session or lease.
    attachments: BTreeMap<Process, Attachment>,
    /// Lease grants invoked and not yet acknowledged, by operation.
    lease_grants: BTreeMap<sim::history::OpId, Process>,
    /// The registrations not yet ended, by process, group and member.
    open: BTreeMap<(Process, String, String), usize>,
    registrations: Vec<Registration>,
}

impl RegistrationReading {
    fn read(&mut self, record: &Record) {
        match (&record.event, record.node) {
            (
                Event::Zk(ZkEvent::SessionEstablished {
                    process,
                    session,
                    timeout_ms,
                    ..
                }),
                Some(node),
            ) => {
                self.attachments.insert(
                    (node, *process),
                    Attachment::ZkSession {
                        session: *session,
                        timeout_ms: *timeout_ms,
                    },
                );
            }
            (
                Event::Invoke {
                    client,
                    process,
                    op_id,
                    operation: Operation::Kv(KvOperation::LeaseGrant { .. }),
                },
                _,
            ) => {
                self.lease_grants.insert(*op_id, (*client, *process));
            }
            (
                Event::Complete {
                    op_id,
                    result:
                        OpResult::Ok {
                            response: Response::Kv(KvResponse::LeaseGrant { lease, .. }),
                        },
                },
                _,
            ) => {
                if let Some(process) = self.lease_grants.remove(op_id) {
                    self.attachments
                        .insert(process, Attachment::Lease { lease: *lease });
                }
            }
            (
                Event::Zk(
                    ZkEvent::SessionExpired { process, session }
                    | ZkEvent::SessionClosed { process, session },
                ),
                Some(node),
            ) => self.session_ended((node, *process), *session, record.at),
            (
                Event::Recipe(RecipeEvent::Membership {
                    process,
                    group,
                    step,
                }),
                Some(node),
            ) => self.membership((node, *process), group, step, record.at),
            (Event::Fault(fault), _) => {
                if let Some(crashed) = fault.crashed() {
                    self.crashed(crashed, record.at);
                }
            }
            _ => {}
        }
    }

    /// A server told `process` its ZooKeeper session `session` ended.
    fn session_ended(&mut self, process: Process, session: u64, at: SimTime) {
        for (key, index) in &self.open {
            let registration = &mut self.registrations[*index];
            if key.0 == process
                && matches!(registration.attachment,
                    Some(Attachment::ZkSession { session: s, .. }) if s == session)
            {
                registration.end_at(at, EndReason::SessionEnded, Some(at));
            }
        }
        let registrations = &self.registrations;
        self.open
            .retain(|_, index| registrations[*index].end.is_none());
    }

    /// A member registered or unregistered (a discoverer's view is read elsewhere).
    fn membership(&mut self, process: Process, group: &str, step: &MembershipStep, at: SimTime) {
        match step {
            MembershipStep::Registered { member } => {
                let key = (process, group.to_string(), member.clone());
                // Registered again without an end: the newer belief replaces the older.
                if let Some(index) = self.open.remove(&key) {
                    self.registrations[index].end_at(at, EndReason::Unregistered, Some(at));
                }
                self.open.insert(key, self.registrations.len());
                self.registrations.push(Registration {
                    group: group.to_string(),
                    member: member.clone(),
                    process,
                    attachment: self.attachments.get(&process).copied(),
                    from: at,
                    end: None,
                });
            }
            MembershipStep::Unregistered { member } => {
                let key = (process, group.to_string(), member.clone());
                if let Some(index) = self.open.remove(&key) {
                    self.registrations[index].end_at(at, EndReason::Unregistered, Some(at));
                }
            }
            MembershipStep::ViewChanged { .. } => {}
        }
    }

    /// The client node `crashed` crashed: its processes' registrations may end from `at`.
    fn crashed(&mut self, crashed: NodeId, at: SimTime) {
        for (key, index) in &self.open {
            if key.0.0 != crashed {
                continue;
            }
            let registration = &mut self.registrations[*index];
            // A ZooKeeper session runs out a timeout after its last ping, and no sooner
            // than a timeout after a leader can hear of it (the heal).
            let certain = match registration.attachment {
                Some(Attachment::ZkSession { timeout_ms, .. }) => {
                    Some(at.max(self.healed.unwrap_or(at)) + millis(timeout_ms))
                }
                // A lease's committed expiry is in the history (added after).
                _ => None,
            };
            registration.end_at(at, EndReason::Crashed, certain);
        }
        self.open.retain(|key, _| key.0.0 != crashed);
    }
}

/// Ends each lease-bound registration when its lease ended (expired or revoked), or may
/// have (a revoke whose answer was lost), after it began.
fn add_lease_ends(registrations: &mut [Registration], leases: &BTreeMap<u64, LeaseFacts>) {
    for registration in registrations {
        let Some(Attachment::Lease { lease }) = registration.attachment else {
            continue;
        };
        let Some(facts) = leases.get(&lease) else {
            continue;
        };
        let from = registration.from;
        if let Some(ended) = facts.ended_at().filter(|at| *at >= from) {
            registration.end_at(ended, EndReason::LeaseEnded, Some(ended));
        }
        if let Some(maybe) = facts
            .maybe_revoked_at
            .iter()
            .copied()
            .filter(|at| *at >= from)
            .min()
        {
            registration.end_at(maybe, EndReason::MaybeRevoked, None);
        }
    }
}

fn millis(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// Whether a discoverer could still be watching when the run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiscovererState {
    /// Nothing says it stopped.
    Live,
    /// Its ZooKeeper session ended after its last view (it was told): the recipe stopped
    /// discovering (`OnStoppedDiscovering`), and starts again, if at all, with a new view.
    Stopped,
    /// Its node crashed after its last view.
    Crashed,
}

/// A discoverer's views of one group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Discoverer {
    /// The group.
    pub group: String,
    /// Who.
    pub process: Process,
    /// Every view it reported, with when.
    pub views: Vec<(SimTime, Vec<String>)>,
    /// Whether it may still be watching.
    pub state: DiscovererState,
}

impl Discoverer {
    /// Its last view, with when it reported it.
    pub fn last_view(&self) -> &(SimTime, Vec<String>) {
        self.views.last().expect("a discoverer has reported a view")
    }
}

/// Every discoverer (a process that reported a view of a group), by group and process.
pub fn discoverers(history: &History) -> Vec<Discoverer> {
    let mut sessions: BTreeMap<Process, u64> = BTreeMap::new();
    let mut by_process: BTreeMap<(String, Process), Discoverer> = BTreeMap::new();
    // The session each discoverer's last view was read through.
    let mut view_session: BTreeMap<(String, Process), Option<u64>> = BTreeMap::new();
    for record in history.records() {
        match (&record.event, record.node) {
            (
                Event::Zk(ZkEvent::SessionEstablished {
                    process, session, ..
                }),
                Some(node),
            ) => {
                sessions.insert((node, *process), *session);
            }
            (
                Event::Zk(
                    ZkEvent::SessionExpired { process, session }
                    | ZkEvent::SessionClosed { process, session },
                ),
                Some(node),
            ) => {
                for (key, discoverer) in &mut by_process {
                    if key.1 == (node, *process)
                        && view_session.get(key) == Some(&Some(*session))
                        && discoverer.state == DiscovererState::Live
                    {
                        discoverer.state = DiscovererState::Stopped;
                    }
                }
            }
            (
                Event::Recipe(RecipeEvent::Membership {
                    process,
                    group,
                    step: MembershipStep::ViewChanged { members },
                }),
                Some(node),
            ) => {
                let key = (group.clone(), (node, *process));
                let discoverer = by_process.entry(key.clone()).or_insert_with(|| Discoverer {
                    group: group.clone(),
                    process: (node, *process),
                    views: Vec::new(),
                    state: DiscovererState::Live,
                });
                discoverer.views.push((record.at, members.clone()));
                discoverer.state = DiscovererState::Live;
                view_session.insert(key, sessions.get(&(node, *process)).copied());
            }
            (Event::Fault(fault), _) => {
                if let Some(crashed) = fault.crashed() {
                    for ((_, (node, _)), discoverer) in &mut by_process {
                        if *node == crashed {
                            discoverer.state = DiscovererState::Crashed;
                        }
                    }
                }
            }
            _ => {}
        }
    }
    by_process.into_values().collect()
}

/// What a live discoverer of a group must see over a window of time: every member with a
/// registration certainly live throughout, and nothing outside those and the members whose
/// liveness is uncertain somewhere in it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Expected {
    /// Members certainly registered throughout the window.
    pub must_see: BTreeSet<String>,
    /// Members that may be seen or not (registered, or maybe, at some moment of the window).
    pub may_see: BTreeSet<String>,
}

/// What discoverers of `group` must see over `[from, until]`, from `registrations`.
pub fn expected(
    registrations: &[Registration],
    group: &str,
    from: SimTime,
    until: SimTime,
) -> Expected {
    let mut expected = Expected::default();
    for registration in registrations
        .iter()
        .filter(|r| r.group == group && r.from <= until)
    {
        if registration.certainly_live_over(from, until) {
            expected.must_see.insert(registration.member.clone());
        } else if !registration.certainly_gone_from(from) {
            expected.may_see.insert(registration.member.clone());
        }
    }
    let must_see = expected.must_see.clone();
    expected.may_see.retain(|member| !must_see.contains(member));
    expected
}
