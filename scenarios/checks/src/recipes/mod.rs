//! Properties of the coordination recipes, judged from what their clients believed and what
//! the fenced resource received ([`crate::history::locks`], [`crate::history::elections`],
//! [`crate::history::membership`], [`crate::history::pubsub`]): mutual exclusion as the
//! clients believed it, mutual exclusion at the resource, the herd effect, leader uniqueness
//! as the clients believed it, discovery views converging, and pub/sub delivery.

pub mod discovery_converges;
pub mod fenced_writes;
pub mod herd_effect;
pub mod leader_uniqueness;
pub mod mutual_exclusion;
pub mod pubsub_delivery;

use crate::{Check, boxed};

/// The lock checks every lock scenario gets. `recipe.mutual_exclusion` is among them: a
/// scenario that pauses holders past their session timeout expects it to fire.
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
];

/// Checks a scenario names to use them: the herd-effect bound, which the herd lock breaks by
/// design; the discovery and pub/sub properties, which only their workloads record events
/// for. Both of these allow the watch settle time for notifications in flight at the end.
pub const OPTIONAL: &[Check] = &[
    Check {
        name: "recipe.herd_effect",
        property: "no herd effect",
        run: |history, context| boxed(herd_effect::check(history, context.herd_bound_per_release)),
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

/// The election checks every election scenario gets (with `recipe.fenced_writes`, which
/// judges the leaders' writes). `recipe.leader_uniqueness` is among them: a scenario that
/// pauses leaders past their session timeout expects it to fire.
pub const ELECTION_CHECKS: &[Check] = &[Check {
    name: "recipe.leader_uniqueness",
    property: "leader uniqueness (as believed)",
    run: |history, _| boxed(leader_uniqueness::check(history)),
}];
