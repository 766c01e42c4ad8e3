//! Code from outside the catalogue: the user's own `async` code, run on every client node of
//! a scenario, through the one run driver — the same phases, faults, checks, sweeps, replay
//! lines and shrinking as the catalogue's workloads.
//!
//! The code is production code: it runs until it is stopped. It is stopped at the end of the
//! recovery phase, when every workload's workers are told to stop: its future is dropped
//! there (an operation it had in flight stays open in the history, as a crashed client's
//! does). Store operations it makes through the models' clients (and the drop-in clients,
//! which use them) are in the history, so the store's checks judge them; the checks it
//! names besides ([`UserCode::with_check`]) judge what it records itself (recipe events,
//! writes to the fenced resource).
//!
//! A scenario that runs user code is built in Rust: it has no file form. It serializes as
//! its name, store and checks (so its digest and reports name it), and reading one back is
//! an error that says so.

mod beliefs;

pub use beliefs::{ElectionBeliefs, LockBeliefs};
/// The fenced resource user code writes to, and one process's connection to it.
pub use models::recipes::{FencedResource, ResourceClient, ResourceUnavailable};
pub use sim::history::recipe::ResourceVerdict;

use crate::store::Store;
use futures_util::future::{Either, select};
use serde::{Deserialize, Deserializer, Serialize, Serializer, ser::SerializeStruct};
use sim::{NodeContext, NodeId, Sim};
use std::{
    fmt,
    future::Future,
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

/// How often a running user program looks whether it has been told to stop, in simulated
/// time. The driver stops workers with a flag, not a signal; a tenth of a second is far
/// below every phase length, and the look is one timer per client.
const STOP_POLL: Duration = Duration::from_millis(100);

/// The program a client node runs: made once per client, from what that client gets.
#[derive(Clone)]
struct Program(Arc<dyn Fn(UserNode) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>);

// A scenario (and every outcome and sweep summary that keeps it) stays unwind-safe with user
// code in it, as it is without: the program is only called to make a client's future, and
// the driver already runs the whole world under `AssertUnwindSafe`, reporting a panic in it
// (the user's included) as a crashed run with its seed. Nothing the program holds is looked
// at after such a panic.
impl std::panic::RefUnwindSafe for Program {}
impl std::panic::UnwindSafe for Program {}

/// Whether the user code gets a fenced resource to write to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource {
    /// None.
    None,
    /// A fenced resource on `r1` ([`FencedResource`]), which rejects a write whose fencing
    /// token is lower than the highest it accepted.
    Fenced,
}

/// User code as a workload: a name, the store it runs on, the checks it asks for, and the
/// program every client node runs.
#[derive(Clone)]
pub struct UserCode {
    name: String,
    store: Store,
    checks: Vec<String>,
    resource: Resource,
    program: Program,
}

impl UserCode {
    /// `program`, named `name`, for the `store`; every client node runs it, with what it
    /// gets in a [`UserNode`].
    pub fn new<P, F>(name: impl Into<String>, store: Store, program: P) -> Self
    where
        P: Fn(UserNode) -> F + Send + Sync + 'static,
        F: Future<Output = ()> + Send + 'static,
    {
        Self {
            name: name.into(),
            store,
            checks: Vec::new(),
            resource: Resource::None,
            program: Program(Arc::new(move |node| Box::pin(program(node)))),
        }
    }

    /// With the check `name` (`coordsim list` names them) judging every run, besides the
    /// store's own checks. An unknown name is reported when the scenario is validated.
    pub fn with_check(mut self, name: impl Into<String>) -> Self {
        self.checks.push(name.into());
        self
    }

    /// With a fenced resource on `r1` for the code to write to ([`UserNode::resource`]).
    pub fn with_fenced_resource(mut self) -> Self {
        self.resource = Resource::Fenced;
        self
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The store it runs on.
    pub fn store(&self) -> Store {
        self.store
    }

    /// The resource it writes to, if any.
    pub fn resource(&self) -> Resource {
        self.resource
    }

    /// The checks it asks for, as the checker table names them (unknown names dropped:
    /// [`UserCode::validate`] reports them first).
    pub(crate) fn checks(&self) -> Vec<&'static str> {
        self.checks
            .iter()
            .filter_map(|name| checks::by_name(name).map(|check| check.name))
            .collect()
    }

    /// What is wrong with it, in one line.
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.name.trim().is_empty() {
            return Err("user code needs a name (it names the runs in reports)".into());
        }
        match self
            .checks
            .iter()
            .find(|name| checks::by_name(name).is_none())
        {
            Some(unknown) => Err(format!(
                "unknown check `{unknown}` (expected one that `coordsim list` names)"
            )),
            None => Ok(()),
        }
    }

    /// Runs the program on every client node until `stop` is set.
    pub(crate) fn start(
        &self,
        sim: &Sim,
        resource: Option<&FencedResource>,
        stop: &Arc<AtomicBool>,
    ) -> super::Workers {
        super::spawn_per_client(sim, |index, node, context| {
            let program = (self.program.0)(UserNode {
                index,
                node,
                context: context.clone(),
                resource: resource.cloned(),
                stop: stop.clone(),
            });
            let (stop, sim) = (stop.clone(), sim.clone());
            async move {
                let stopped = Box::pin(async move {
                    while !stop.load(Ordering::Relaxed) {
                        sim.sleep(STOP_POLL).await;
                    }
                });
                // Whichever ends first; the other is dropped (the program's in-flight
                // operation, if any, stays open in the history).
                match select(program, stopped).await {
                    Either::Left(((), _)) | Either::Right(((), _)) => {}
                }
            }
        })
    }
}

impl fmt::Debug for UserCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UserCode")
            .field("name", &self.name)
            .field("store", &self.store)
            .field("checks", &self.checks)
            .field("resource", &self.resource)
            .finish_non_exhaustive()
    }
}

/// Two user codes are the same when they are the same program under the same name, store,
/// checks and resource.
impl PartialEq for UserCode {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.store == other.store
            && self.checks == other.checks
            && self.resource == other.resource
            && Arc::ptr_eq(&self.program.0, &other.program.0)
    }
}

impl Eq for UserCode {}

impl Serialize for UserCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut fields = serializer.serialize_struct("UserCode", 4)?;
        fields.serialize_field("name", &self.name)?;
        fields.serialize_field("store", &self.store)?;
        fields.serialize_field("checks", &self.checks)?;
        fields.serialize_field(
            "resource",
            match self.resource {
                Resource::None => "none",
                Resource::Fenced => "fenced",
            },
        )?;
        fields.end()
    }
}

impl<'de> Deserialize<'de> for UserCode {
    fn deserialize<D: Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
        Err(serde::de::Error::custom(
            "a `user` workload is Rust code (scenarios::UserCode::new); it cannot be read from a file",
        ))
    }
}

/// What one client node's program gets.
#[derive(Clone)]
pub struct UserNode {
    index: usize,
    node: NodeId,
    context: NodeContext,
    resource: Option<FencedResource>,
    stop: Arc<AtomicBool>,
}

impl UserNode {
    /// The client's position among the clients, from 0.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The client node (`c1..`).
    pub fn id(&self) -> NodeId {
        self.node
    }

    /// The node's context: its clock, randomness and history recorder, and the world.
    pub fn context(&self) -> &NodeContext {
        &self.context
    }

    /// The fenced resource, if the code asked for one ([`UserCode::with_fenced_resource`]).
    pub fn resource(&self) -> Option<&FencedResource> {
        self.resource.as_ref()
    }

    /// This client's beliefs about the lock `name`, recorded for the recipe checks, as
    /// process `index()` (one locker per client node): for code over the models' own
    /// clients, numbered the same way. Code over a drop-in client records as its handle's
    /// process instead ([`UserNode::lock_as`]).
    pub fn lock(&self, name: &str) -> LockBeliefs {
        LockBeliefs::new(self.context.clone(), self.index as u32, name)
    }

    /// This client's beliefs about the lock `name`, recorded as history process `process`:
    /// for code over a drop-in client, which numbers its own processes, one per model
    /// client. Both drop-ins name a handle's process the same way:
    /// `node.lock_as(name, zookeeper_client::coordsim::history_process(&client))` (a
    /// ZooKeeper session, shared by its clones) and
    /// `node.lock_as(name, etcd_client::coordsim::history_process(&lock_client))` (an etcd
    /// handle: each clone its own). The checks that join a waiter's beliefs with its store
    /// calls (`recipe.no_orphan_waiter`, `recipe.holder_owns_node`) then find them under
    /// one process.
    pub fn lock_as(&self, name: &str, process: u32) -> LockBeliefs {
        LockBeliefs::new(self.context.clone(), process, name)
    }

    /// This client's beliefs in the election `name`, recorded for the recipe checks, as
    /// process `index()` (one candidate per client node).
    pub fn election(&self, name: &str) -> ElectionBeliefs {
        ElectionBeliefs::new(self.context.clone(), self.index as u32, name)
    }

    /// Whether the run has told the workers to stop (the program is dropped soon after:
    /// code that wants to finish cleanly, e.g. resign, may look).
    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}
