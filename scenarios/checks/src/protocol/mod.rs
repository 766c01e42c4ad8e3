//! Consensus-level properties, for any store whose servers record
//! [`sim::history::ProtocolEvent`]s: `term` is a Raft term or a ZAB epoch, `index` a Raft
//! log index or a ZAB zxid.
//!
//! These checkers trust the servers' own `BecameLeader`, `TermChanged` and `Applied` events
//! (recorded by the drivers in `models`). That is safe for what they judge: each event is a
//! server's claim about itself, and the properties are about those claims agreeing (two
//! servers claiming one term, two replicas claiming different entries at one index). A model
//! that forgot to record an event could hide from them; the client-side checkers in
//! [`crate::etcd`] and [`crate::zk`] (linearizability, durability) judge what clients
//! observed and do not depend on these events.

pub mod applied_in_order;
pub mod leader_stability;
pub mod leader_uniqueness;
pub mod observers_never_count;
pub mod replica_agreement;
pub mod replica_prefix;
pub mod resumes_held_state;
pub mod term_monotonicity;

use crate::{Check, CheckContext, Checked, Verdict, history::views::HistoryViews};
use sim::time::SimTime;
use std::time::Duration;

/// The protocol checks every run of either store gets: leader uniqueness, term
/// monotonicity, replica agreement and prefix agreement, in-order apply (which reads
/// [`crate::CheckContext::index_kind`]: give ZAB runs [`crate::IndexKind::Zxid`]), that a
/// restarted server resumes from a state it held, and that
/// no observer leads or counts in a quorum (nothing to judge in a run without observers).
pub const CHECKS: &[Check] = &[
    Check {
        name: "protocol.leader_uniqueness",
        judges: "terms",
        property: "leader uniqueness",
        run: |history, _| leader_uniqueness::check(history).verdict(),
    },
    Check {
        name: "protocol.term_monotonicity",
        judges: "term records",
        property: "term monotonicity",
        run: |history, _| term_monotonicity::check(history).verdict(),
    },
    Check {
        name: "protocol.replica_agreement",
        judges: "applications",
        property: "replica agreement",
        run: |history, _| replica_agreement::check(history).verdict(),
    },
    Check {
        name: "protocol.replica_prefix",
        judges: "neighbouring applications",
        property: "replica prefix agreement",
        run: |history, _| replica_prefix::check_views(history).verdict(),
    },
    Check {
        name: "protocol.applied_in_order",
        judges: "applications",
        property: "apply in log order",
        run: |history, context| applied_in_order::check(history, context.index_kind).verdict(),
    },
    Check {
        name: "protocol.resumes_held_state",
        judges: "restarts",
        property: "resume from a held state",
        run: |history, context| resumes_held_state::check(history, context.index_kind).verdict(),
    },
    Check {
        name: "protocol.observers_never_count",
        judges: "leaderships and quorums",
        property: "observers never vote",
        run: |history, _| observers_never_count::check(history).verdict(),
    },
];

/// Checks a scenario must ask for by name. Leader stability (a healthy cluster under a
/// flapping link: after the first election, at most one more before the final reads) is
/// not in [`CHECKS`]: crashes and partitions legitimately change leaders.
pub const OPTIONAL: &[Check] = &[Check {
    name: "protocol.leader_stability",
    property: "leader stability",
    judges: "leader elections",
    run: stability,
}];

fn stability(history: &HistoryViews<'_>, _: &CheckContext) -> Verdict {
    use sim::history::{Event, ProtocolEvent};
    let first = history.records().iter().find_map(|record| {
        matches!(
            record.event,
            Event::Protocol(ProtocolEvent::BecameLeader { .. })
        )
        .then_some(record.at)
    });
    let Some(first) = first else {
        return Checked::<leader_stability::LeaderChurn>::new(Vec::new(), 0).verdict();
    };
    let until = crate::history::final_reads_from(history).unwrap_or(SimTime::from_nanos(u64::MAX));
    leader_stability::check(history, first + Duration::from_millis(1), until, 1).verdict()
}
