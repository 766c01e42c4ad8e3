//! Resolving writes whose outcome the client never learned, from what the replicas applied.
//!
//! A black-box checker must try each such operation both ways — taken effect (somewhere
//! after its invocation) and not — and each one doubles the orders to search (etcd-io/etcd
//! #15598; Porcupine runs out of memory on long histories for the same reason). A coordsim
//! history also holds what the replicas did: every replica records each entry it applies
//! (`ProtocolEvent::Applied`), and an entry made for a client's write names the request,
//! which the client recorded when it sent it. ZooKeeper's entries name it by their
//! transaction header (session and xid; the client records `ZkEvent::RequestSent`); an etcd
//! model client stamps each write with its own number and a count of its writes, which the
//! server keeps in the entry (the client records `KvEvent::RequestSent`; a retry sends the
//! same stamp, so a write applied twice shows as two entries). Both checkers
//! (`zk.linearizable`, `etcd.linearizable`) resolve through this one function. So for each
//! write of unknown outcome:
//!
//! - **applied** (some replica applied one entry naming its request): it took effect, no
//!   later than when the first replica applied it. It becomes [`Outcome::TookEffect`]: the
//!   search must linearize it between its invocation and that time. Its result stays
//!   unknown (the model picks whatever result the state gives), and its *position* among the
//!   other operations is still searched against real time: the log's order is never used.
//! - **never applied** (sent, and no replica applied an entry naming it): it changed
//!   nothing anyone could observe. It is left out, and counted ([`DID_NOT_TAKE_EFFECT`]).
//! - **ambiguous** (never recorded as sent, an id shared by several operations, a request
//!   sent twice or applied as two entries): it stays [`Outcome::Unknown`] and is searched
//!   both ways, as before.
//!
//! Only unknown outcomes are resolved. An operation the client was told failed stays out of
//! the search as a failure, whatever the replicas did: a model that applies a write it
//! answered as failed is still caught by the read that sees the write.
//!
//! # Why relying on the replicas' records is safe
//!
//! The facts used are the ones the protocol checks verify on every run: `replica_agreement`
//! checks that every replica applied the same entry (same digest, and the request is part of
//! what is digested: ZooKeeper's transaction header, the etcd entry's stamp) at each index, `replica_prefix` and `applied_in_order` that
//! each replica applied a prefix of the one committed sequence, in order. A run whose
//! replicas disagree on what was applied fails those checks whatever this checker says. When
//! they pass, "some replica applied the entry naming this request" means the request is in
//! the committed log, so its change is in the state every later read is served from; and
//! "no replica applied it" means no replica's state, hence no read, ever reflected it.
//! Applying is after committing, so the first replica's apply time bounds when it took
//! effect. What the client was told (its reply) is never inferred.
//!
//! Imported histories (Jepsen, Porcupine: [`super::jepsen`]) carry no such records: their
//! operations are never resolved, and their verdicts are those of the plain search.

use super::model::{Model, OperationHistory, Outcome, Skipped};
use crate::history::applied_requests::{AppliedRequests, RequestFate};
use sim::history::OpId;
use std::collections::BTreeSet;

/// Why a write of unknown outcome is left out: no replica applied its request.
pub const DID_NOT_TAKE_EFFECT: &str =
    "outcome unknown, and no replica applied its request (did not take effect)";

/// Resolves `history`'s operations of unknown outcome from `requests` (operation ids are
/// the source history's `OpId`s), and keeps how many came out each way in
/// `history.resolved` (the check's report prints them). Each source operation may be
/// several checked operations (one per key or path): all share its fate.
pub(crate) fn resolve<M: Model>(
    model: &M,
    history: &mut OperationHistory<M::Input, M::Output>,
    requests: &AppliedRequests,
) {
    let mut left_out = BTreeSet::new();
    let mut took_effect = BTreeSet::new();
    let mut ambiguous = BTreeSet::new();
    history.operations.retain_mut(|operation| {
        if !matches!(operation.outcome, Outcome::Unknown) {
            return true;
        }
        match requests.fate(OpId(operation.id)) {
            RequestFate::Applied { at } if at.as_nanos() >= operation.invoked_at => {
                took_effect.insert(operation.id);
                operation.outcome = Outcome::TookEffect { by: at.as_nanos() };
                true
            }
            RequestFate::NeverApplied => {
                left_out.insert(operation.id);
                false
            }
            // Applied before it was invoked cannot be: leave it to the plain search. A read
            // of unknown outcome constrains nothing and is left out of the search anyway.
            RequestFate::Applied { .. } | RequestFate::Unknown(_) => {
                if !model.is_read_only(&operation.input) {
                    ambiguous.insert(operation.id);
                }
                true
            }
        }
    });
    for id in &left_out {
        history.skipped.push(Skipped {
            id: *id,
            reason: DID_NOT_TAKE_EFFECT,
        });
    }
    history.resolved = Some(Resolved {
        took_effect: took_effect.len(),
        did_not: left_out.len(),
        ambiguous: ambiguous.len(),
    });
}

/// How the source operations of unknown outcome came out. Reported by `check-history`, and
/// with the linearizability checks' tallies in every run's outcome (`coordsim run`, `sweep`,
/// `replay`, text and `--json`), summed over a sweep's seeds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Resolved {
    /// Applied: linearized by when they took effect.
    pub took_effect: usize,
    /// Never applied: left out.
    pub did_not: usize,
    /// Neither shown: searched both ways, as a black-box checker must (reads of unknown
    /// outcome, which constrain nothing, are not counted).
    pub ambiguous: usize,
}

impl std::ops::AddAssign for Resolved {
    /// The counts of two histories together (a sweep's seeds).
    fn add_assign(&mut self, other: Self) {
        self.took_effect += other.took_effect;
        self.did_not += other.did_not;
        self.ambiguous += other.ambiguous;
    }
}

impl std::fmt::Display for Resolved {
    /// `outcome unknown: 3 resolved as applied, 2 as not applied, 1 left ambiguous`, with
    /// what each means.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "outcome unknown, resolved from the replicas' applied log: {} as applied (took \
             effect), {} as not applied (left out), {} left ambiguous (searched both ways)",
            self.took_effect, self.did_not, self.ambiguous
        )
    }
}
