//! Properties of the coordination recipes, judged from what their clients believed and what
//! the fenced resource received ([`crate::history::locks`], [`crate::history::elections`],
//! [`crate::history::membership`], [`crate::history::pubsub`]): mutual exclusion as the
//! clients believed it, mutual exclusion at the resource, the herd effect, leader uniqueness
//! as the clients believed it, discovery views converging, pub/sub delivery, read/write
//! exclusion, and the other ZooKeeper primitives (queue, counter, barrier, configuration,
//! rendezvous).

pub mod barrier;
pub mod config_fresh;
pub mod config_versions;
pub mod counter;
pub mod discovery_converges;
pub mod fenced_writes;
pub mod herd_effect;
pub mod holder_not_refused;
pub mod holder_owns_node;
pub mod leader_uniqueness;
pub mod mutual_exclusion;
pub mod no_acquire_while_held;
pub mod no_lost_wakeup;
pub mod no_orphan_waiter;
pub mod pubsub_delivery;
pub mod queue_semantics;
pub mod rendezvous;
pub mod rw_exclusion;
pub mod rw_reader_waits;

use crate::Check;

/// The lock checks. Which of them a scenario runs is its workload's choice
/// (`scenarios::workload::Workload::checks`): `recipe.no_orphan_waiter`,
/// `recipe.holder_owns_node` and `recipe.no_lost_wakeup` read ZooKeeper lines and judge
/// nothing on etcd's histories, so only the ZooKeeper lock workloads bring them (and the
/// ZooKeeper election `recipe.no_lost_wakeup`: its candidates wait in the same line).
pub const LOCK_CHECKS: &[Check] = &[
    Check {
        name: "recipe.mutual_exclusion",
        judges: "exclusive holds",
        property: "mutual exclusion (as believed)",
        run: |history, _| mutual_exclusion::check(history).verdict(),
    },
    Check {
        name: "recipe.fenced_writes",
        judges: "accepted writes with a token",
        property: "mutual exclusion at the resource",
        run: |history, _| fenced_writes::check(history).verdict(),
    },
    Check {
        name: "recipe.no_orphan_waiter",
        judges: "waits that saw their own node",
        property: "no waiter behind its own session's node",
        run: |history, _| no_orphan_waiter::check_views(history).verdict(),
    },
    Check {
        name: "recipe.holder_owns_node",
        judges: "acquisitions read back",
        property: "a holder holds by its own session's node",
        run: |history, _| holder_owns_node::check_views(history).verdict(),
    },
    Check {
        name: "recipe.no_lost_wakeup",
        judges: "waits whose line cleared",
        property: "no lost wake-up",
        run: |history, _| no_lost_wakeup::check_views(history).verdict(),
    },
    // The election scenarios name these two as well (as they name `recipe.fenced_writes`).
    Check {
        name: "recipe.holder_not_refused",
        judges: "resource writes with a token",
        property: "the resource refuses only stale writers",
        run: |history, _| holder_not_refused::check(history).verdict(),
    },
    Check {
        name: "recipe.no_acquire_while_held",
        judges: "holds and leaderships",
        property: "no acquisition while held",
        run: |history, _| no_acquire_while_held::check(history).verdict(),
    },
];

/// The herd bound (brought by the lock and election workloads; the herd lock's scenarios
/// skip it, with the reason) and the discovery and pub/sub properties (brought by their
/// workloads). The last two allow the watch settle time for notifications in flight at the
/// end.
pub const OPTIONAL: &[Check] = &[
    Check {
        name: "recipe.herd_effect",
        judges: "departures from a line",
        property: "no herd effect",
        run: |history, _| herd_effect::check(history).verdict(),
    },
    Check {
        name: "recipe.discovery_converges",
        judges: "discoverers' views after the heal",
        property: "discovery converges",
        run: |history, context| discovery_converges::check(history, context.watch_settle).verdict(),
    },
    Check {
        name: "recipe.pubsub_delivery",
        judges: "subscriptions",
        property: "pub/sub delivery",
        run: |history, context| pubsub_delivery::check(history, context.watch_settle).verdict(),
    },
];

/// The read/write lock checks: the read/write lock scenarios run these instead of
/// `recipe.mutual_exclusion` (readers share the lock). `recipe.rw_exclusion` is among them:
/// a scenario that pauses holders past their session timeout expects it to fire.
pub const RW_LOCK_CHECKS: &[Check] = &[
    Check {
        name: "recipe.rw_exclusion",
        judges: "holds",
        property: "read/write exclusion (as believed)",
        run: |history, _| rw_exclusion::check(history).verdict(),
    },
    Check {
        name: "recipe.rw_reader_waits_only_for_writers",
        judges: "reader wake-ups",
        property: "readers wait only for writers",
        run: |history, _| rw_reader_waits::check(history).verdict(),
    },
];

/// The election checks (the election workload brings them with `recipe.fenced_writes`,
/// which judges the leaders' writes). A scenario that pauses leaders past their session
/// timeout skips `recipe.leader_uniqueness`, with the reason: it is expected to fire.
pub const ELECTION_CHECKS: &[Check] = &[Check {
    name: "recipe.leader_uniqueness",
    judges: "leaderships",
    property: "leader uniqueness (as believed)",
    run: |history, _| leader_uniqueness::check(history).verdict(),
}];

/// The checks of the other ZooKeeper recipes (queue, counter, barrier, configuration
/// versions and freshness, rendezvous): each judges its own recipe's records and passes on
/// histories without them.
pub const PRIMITIVE_CHECKS: &[Check] = &[
    Check {
        name: "recipe.queue_semantics",
        judges: "queue items",
        property: "queue semantics",
        run: |history, _| queue_semantics::check(history).verdict(),
    },
    Check {
        name: "recipe.counter",
        judges: "increments and reads",
        property: "counter",
        run: |history, _| counter::check(history).verdict(),
    },
    Check {
        name: "recipe.barrier",
        judges: "gate attempts",
        property: "double barrier",
        run: |history, _| barrier::check(history).verdict(),
    },
    Check {
        name: "recipe.config_versions",
        judges: "configuration reads",
        property: "configuration versions",
        run: |history, _| config_versions::check(history).verdict(),
    },
    Check {
        name: "recipe.config_fresh",
        judges: "reads after a publish",
        property: "configuration reads are fresh",
        run: |history, _| config_fresh::check(history).verdict(),
    },
    Check {
        name: "recipe.rendezvous",
        judges: "rendezvous steps",
        property: "rendezvous",
        run: |history, context| rendezvous::check(history, context.watch_settle).verdict(),
    },
];
