//! What user code believes about its locks and elections, recorded for the recipe checks
//! (`recipe.mutual_exclusion`, `recipe.fenced_writes`, `recipe.leader_uniqueness`, ...):
//! the same events coordsim's own recipes record, so the same checks judge user recipes.
//!
//! A user recipe records what it *believes*, at the moment it starts to act on it: a lock
//! holder records `acquired` before it touches what the lock protects, and `released` after
//! it stopped. The checks compare beliefs with one another and with what the store and the
//! fenced resource recorded; they never trust a belief to be true.

use sim::{
    NodeContext,
    history::{
        Event, RecipeEvent,
        recipe::{ElectionStep, LockMode, LockStep, LossReason},
    },
};

/// One client's beliefs about the lock `name`.
#[derive(Clone, Debug)]
pub struct LockBeliefs {
    context: NodeContext,
    process: u32,
    name: String,
}

impl LockBeliefs {
    pub(super) fn new(context: NodeContext, process: u32, name: &str) -> Self {
        Self {
            context,
            process,
            name: name.to_string(),
        }
    }

    fn record(&self, step: LockStep) {
        self.context
            .history()
            .record(Event::Recipe(RecipeEvent::Lock {
                process: self.process,
                lock: self.name.clone(),
                step,
            }));
    }

    /// The client asked for the lock (acquisition latency runs from here).
    pub fn requested(&self) {
        self.record(LockStep::Requested {
            mode: LockMode::Exclusive,
        });
    }

    /// A watch on `watched` (the lock node, or the waiter's predecessor) fired and woke the
    /// waiting client: the herd-effect count (`recipe.herd_effect`, and `compare-locks`'
    /// notifications per release) is of these. Record it when the notification arrives,
    /// before looking at the line again.
    pub fn woken(&self, watched: &str) {
        self.record(LockStep::Woken {
            watched: watched.to_string(),
        });
    }

    /// The client believes it holds the lock, fenced by `token` (etcd: the lock key's create
    /// revision; ZooKeeper: the lock node's czxid).
    pub fn acquired(&self, token: u64) {
        self.record(LockStep::Acquired {
            token,
            mode: LockMode::Exclusive,
        });
    }

    /// The client let go of the lock it held with `token`, and knows it.
    pub fn released(&self, token: u64) {
        self.record(LockStep::Released { token });
    }

    /// The client learned that it no longer holds the lock it held with `token`, and how.
    pub fn lost(&self, token: u64, why: LossReason) {
        self.record(LockStep::Lost { token, why });
    }

    /// The client stopped trying, for `why`.
    pub fn gave_up(&self, why: &str) {
        self.record(LockStep::GaveUp {
            why: why.to_string(),
        });
    }
}

/// One client's beliefs in the election `name`.
#[derive(Clone, Debug)]
pub struct ElectionBeliefs {
    context: NodeContext,
    process: u32,
    name: String,
}

impl ElectionBeliefs {
    pub(super) fn new(context: NodeContext, process: u32, name: &str) -> Self {
        Self {
            context,
            process,
            name: name.to_string(),
        }
    }

    fn record(&self, step: ElectionStep) {
        self.context
            .history()
            .record(Event::Recipe(RecipeEvent::Election {
                process: self.process,
                election: self.name.clone(),
                step,
            }));
    }

    /// The client entered the election.
    pub fn campaigned(&self) {
        self.record(ElectionStep::Campaigned);
    }

    /// The client believes it leads, fenced by `token` (etcd: its key's create revision).
    pub fn gained(&self, token: u64) {
        self.record(ElectionStep::Gained { token });
    }

    /// The client resigned the leadership it held with `token`, and knows it.
    pub fn resigned(&self, token: u64) {
        self.record(ElectionStep::Resigned { token });
    }

    /// The client learned that it no longer leads (it held `token`), and how.
    pub fn lost(&self, token: u64, why: LossReason) {
        self.record(ElectionStep::Lost { token, why });
    }

    /// The client saw `leader` (a leader's value; `None`: no leader) lead.
    pub fn observed(&self, leader: Option<String>) {
        self.record(ElectionStep::Observed { leader });
    }

    /// The client stopped campaigning, for `why`.
    pub fn gave_up(&self, why: &str) {
        self.record(ElectionStep::GaveUp {
            why: why.to_string(),
        });
    }
}
