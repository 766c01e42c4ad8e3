//! Properties of the ZooKeeper-like store, judged from what clients observed: operations and
//! their results (`Invoke`/`Complete` with `sim::history::zk` operations), session events
//! and watch deliveries (`Event::Zk`), all recorded by the client library at the client
//! node. Two checkers also read server records, and say why in their docs:
//! `zk.write_durability` reads the replicas' `Applied` events, and `zk.ephemeral_lifetime`
//! takes a session's end as the earliest of what its client was told (`SessionExpired`,
//! `SessionClosed`) and the leader applying the committed expiry.

pub mod ephemeral_lifetime;
pub mod linearizable;
pub mod sequential_names;
pub mod session_consistency;
pub mod sync_then_read;
pub mod watch_delivery;
pub mod watch_order;
pub mod write_durability;

use crate::Check;

/// The ZooKeeper-store checks every run of the ZAB store gets (add
/// [`crate::protocol::CHECKS`] for the consensus level).
pub const CHECKS: &[Check] = &[
    Check {
        name: "zk.write_durability",
        judges: "acknowledged writes",
        property: "acknowledged write durability",
        run: |history, _| write_durability::check_views(history).verdict(),
    },
    Check {
        name: "zk.sync_then_read",
        judges: "reads after a sync",
        property: "sync then read sees prior acknowledged writes",
        run: |history, _| sync_then_read::check_views(history).verdict(),
    },
    Check {
        name: "zk.session_consistency",
        judges: "session operations",
        property: "session consistency",
        run: |history, _| session_consistency::check_views(history).verdict(),
    },
    Check {
        name: "zk.ephemeral_lifetime",
        judges: "reads after a sync",
        property: "ephemeral exists iff session alive",
        run: |history, _| ephemeral_lifetime::check_views(history).verdict(),
    },
    Check {
        name: "zk.sequential_names",
        judges: "sequential creates",
        property: "sequential names unique and increasing",
        run: |history, context| {
            sequential_names::check_views(history, context.sequence_counter_bits).verdict()
        },
    },
    Check {
        name: "zk.watch_delivery",
        judges: "watch registrations",
        property: "watch fires exactly once",
        run: |history, context| {
            watch_delivery::check_views(history, context.watch_settle).verdict()
        },
    },
    Check {
        name: "zk.watch_order",
        judges: "watch registrations and deliveries",
        property: "watch order",
        run: |history, _| watch_order::check_views(history).verdict(),
    },
    Check {
        name: "zk.linearizable",
        judges: "operations",
        property: "linearizability",
        run: |history, _| linearizable::check_views(history),
    },
];
