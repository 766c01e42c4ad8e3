//! Properties of the coordination recipes, judged from what their clients believed and what
//! the fenced resource received ([`crate::history::locks`]): mutual exclusion as the clients
//! believed it, mutual exclusion at the resource, and the herd effect.

pub mod barrier;
pub mod config_versions;
pub mod counter;
pub mod fenced_writes;
pub mod herd_effect;
pub mod mutual_exclusion;
pub mod queue_semantics;

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
/// design.
pub const OPTIONAL: &[Check] = &[Check {
    name: "recipe.herd_effect",
    property: "no herd effect",
    run: |history, context| boxed(herd_effect::check(history, context.herd_bound_per_release)),
}];

/// The checks of the other ZooKeeper recipes (queue, counter, barrier, configuration):
/// each judges its own recipe's records and passes on histories without them.
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
];
