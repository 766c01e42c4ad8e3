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

use crate::{Check, boxed};

/// The lock checks every lock scenario gets. `recipe.mutual_exclusion` is among them: a
/// scenario that pauses holders past their session timeout expects it to fire.
/// `recipe.no_orphan_waiter` and `recipe.holder_owns_node` read ZooKeeper sessions and pass
/// on etcd's histories.
pub const LOCK_CHECKS: &[Check] = &[
    Check {
        name: "recipe.mutual_exclusion",
        property: "mutual exclusion (as believed)",
        run: |history, _| boxed(mutual_exclusion::check(history)),
    },
    Check {
        name: "recipe.fenced_writes",
        property: "mutual exclusion at the resource",
        run: |history, _| boxed(fenced_writes::check(history)),
    },
    Check {
        name: "recipe.no_orphan_waiter",
        property: "no waiter behind its own session's node",
        run: |history, _| boxed(no_orphan_waiter::check(history)),
    },
    Check {
        name: "recipe.holder_owns_node",
        property: "a holder holds by its own session's node",
        run: |history, _| boxed(holder_owns_node::check(history)),
    },
    Check {
        name: "recipe.no_lost_wakeup",
        property: "no lost wake-up",
        run: |history, _| boxed(no_lost_wakeup::check(history)),
    },
    // The election scenarios name these two as well (as they name `recipe.fenced_writes`).
    Check {
        name: "recipe.holder_not_refused",
        property: "the resource refuses only stale writers",
        run: |history, _| boxed(holder_not_refused::check(history)),
    },
    Check {
        name: "recipe.no_acquire_while_held",
        property: "no acquisition while held",
        run: |history, _| boxed(no_acquire_while_held::check(history)),
    },
];

/// Checks a scenario names to use them: the herd-effect bound, which the herd lock breaks by
/// design; the discovery and pub/sub properties, which only their workloads record events
/// for. Both of these allow the watch settle time for notifications in flight at the end.
pub const OPTIONAL: &[Check] = &[
    Check {
        name: "recipe.herd_effect",
        property: "no herd effect",
        run: |history, _| boxed(herd_effect::check(history)),
    },
    Check {
        name: "recipe.discovery_converges",
        property: "discovery converges",
        run: |history, context| boxed(discovery_converges::check(history, context.watch_settle)),
    },
    Check {
        name: "recipe.pubsub_delivery",
        property: "pub/sub delivery",
        run: |history, context| boxed(pubsub_delivery::check(history, context.watch_settle)),
    },
];

/// The read/write lock checks: the read/write lock scenarios run these instead of
/// `recipe.mutual_exclusion` (readers share the lock). `recipe.rw_exclusion` is among them:
/// a scenario that pauses holders past their session timeout expects it to fire.
pub const RW_LOCK_CHECKS: &[Check] = &[
    Check {
        name: "recipe.rw_exclusion",
        property: "read/write exclusion (as believed)",
        run: |history, _| boxed(rw_exclusion::check(history)),
    },
    Check {
        name: "recipe.rw_reader_waits_only_for_writers",
        property: "readers wait only for writers",
        run: |history, _| boxed(rw_reader_waits::check(history)),
    },
];

/// The election checks every election scenario gets (with `recipe.fenced_writes`, which
/// judges the leaders' writes). `recipe.leader_uniqueness` is among them: a scenario that
/// pauses leaders past their session timeout expects it to fire.
pub const ELECTION_CHECKS: &[Check] = &[Check {
    name: "recipe.leader_uniqueness",
    property: "leader uniqueness (as believed)",
    run: |history, _| boxed(leader_uniqueness::check(history)),
}];

/// The checks of the other ZooKeeper recipes (queue, counter, barrier, configuration
/// versions and freshness, rendezvous): each judges its own recipe's records and passes on
/// histories without them.
pub const PRIMITIVE_CHECKS: &[Check] = &[
    Check {
        name: "recipe.queue_semantics",
        property: "queue semantics",
        run: |history, _| boxed(queue_semantics::check(history)),
    },
    Check {
        name: "recipe.counter",
        property: "counter",
        run: |history, _| boxed(counter::check(history)),
    },
    Check {
        name: "recipe.barrier",
        property: "double barrier",
        run: |history, _| boxed(barrier::check(history)),
    },
    Check {
        name: "recipe.config_versions",
        property: "configuration versions",
        run: |history, _| boxed(config_versions::check(history)),
    },
    Check {
        name: "recipe.config_fresh",
        property: "configuration reads are fresh",
        run: |history, _| boxed(config_fresh::check(history)),
    },
    Check {
        name: "recipe.rendezvous",
        property: "rendezvous",
        run: |history, context| boxed(rendezvous::check(history, context.watch_settle)),
    },
];
