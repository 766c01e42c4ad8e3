//! `zk_script` on the ZAB store: an exact trace of client steps, the client half of a
//! scripted plan (the scenario's fault plan is the other half). Each step names its client
//! node and the simulated time it starts at, so it lines up with the faults of the plan: a
//! client connects through the servers it names, writes, syncs, reads, creates with
//! protection, each step once, retried through lost connections until answered, or sent
//! without waiting. A client node runs its steps in order; a step whose time has passed
//! (the one before took longer) starts at once. Everything a step does reaches the history
//! through the ZooKeeper client (operations, sessions); a step that cannot run (no session)
//! is noted there. After the heal, the `zk_mix` audit.
//!
//! ```toml
//! [[workload.steps]]
//! at_ms = 1000
//! client = "c1"
//! op = "connect"
//! servers = ["s3"]
//! session_timeout_ms = 2000
//!
//! [[workload.steps]]
//! at_ms = 1000
//! client = "c1"
//! op = "set_data"
//! path = "/x"
//! data = "1"
//! wait = "answer"
//! ```

use crate::workload::{Pending, Workers, ZkMix};
use models::zk::{ZkClient, ZkClientError, ZkEnsemble};
use serde::{Deserialize, Serialize};
use sim::{NodeContext, NodeId, Sim, history::zk::CreateMode, time::SimTime};
use std::{
    collections::BTreeMap,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

/// Parameters of `zk_script`: the steps.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZkScript {
    /// Every client's steps; each client node runs its own in the order listed.
    pub steps: Vec<ZkStep>,
}

/// One client step at a simulated time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ZkStep {
    /// When the step starts, milliseconds since the world started (later if the client's
    /// previous step is still running).
    pub at_ms: u64,
    /// The client node that runs it.
    pub client: NodeId,
    /// What it does.
    #[serde(flatten)]
    pub op: ZkStepOp,
    /// Whether and how long the client waits for the outcome before its next step.
    #[serde(default, skip_serializing_if = "is_default")]
    pub wait: Wait,
}

impl ZkStep {
    /// `op` by `client` at `at_ms`, waiting for its reply.
    pub(crate) fn at(at_ms: u64, client: NodeId, op: ZkStepOp) -> Self {
        Self {
            at_ms,
            client,
            op,
            wait: Wait::Reply,
        }
    }

    /// The same step, waiting as `wait` says.
    pub(crate) fn waiting(mut self, wait: Wait) -> Self {
        self.wait = wait;
        self
    }
}

fn is_default(wait: &Wait) -> bool {
    *wait == Wait::default()
}

/// What a step does.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum ZkStepOp {
    /// Opens a new session (the client node's earlier one, if any, is dropped, not closed).
    Connect {
        /// The servers it may use (all of them if empty).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        servers: Vec<NodeId>,
        /// The session timeout it asks for, milliseconds.
        session_timeout_ms: u64,
    },
    /// `create`.
    Create {
        /// Path (the prefix, for a sequential mode).
        path: String,
        /// Data.
        #[serde(default)]
        data: String,
        /// Mode.
        mode: CreateMode,
    },
    /// A protected create (a GUID in the name): after a lost connection the client looks for
    /// its node before trying again.
    CreateProtected {
        /// Path (the prefix, for a sequential mode).
        path: String,
        /// Data.
        #[serde(default)]
        data: String,
        /// Mode.
        mode: CreateMode,
    },
    /// `setData`, any version.
    SetData {
        /// Path.
        path: String,
        /// Data.
        data: String,
    },
    /// `getData`.
    GetData {
        /// Path.
        path: String,
    },
    /// `exists`.
    Exists {
        /// Path.
        path: String,
    },
    /// `getChildren`.
    GetChildren {
        /// Path.
        path: String,
    },
    /// `sync`: the client's server catches up with the leader.
    Sync {
        /// Path.
        path: String,
    },
}

/// How a step waits for its outcome.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Wait {
    /// One attempt; the client waits for its outcome (a lost connection leaves it unknown).
    #[default]
    Reply,
    /// Attempts until one gets a definite answer (acknowledged or refused), 100 ms apart:
    /// a lost connection leaves an attempt's outcome unknown, so it is tried again. Gives up
    /// when the session ends or the workload stops.
    Answer,
    /// One attempt, sent without waiting for anything: the next step starts at its own
    /// time, and the outcome reaches the history whenever it comes (if ever).
    Nothing,
}

/// How long an `answer` step waits between attempts.
const RETRY_PAUSE: Duration = Duration::from_millis(100);

impl ZkScript {
    pub(crate) fn validate(&self, servers: usize, clients: usize) -> Result<(), String> {
        let mut last_at: BTreeMap<NodeId, u64> = BTreeMap::new();
        for (index, step) in self.steps.iter().enumerate() {
            let problem = |what: String| Err(format!("steps[{index}]: {what}"));
            if step.client.is_server() || step.client.ordinal() >= clients {
                return problem(format!(
                    "client {} is not a client node of the scenario (c1..c{clients})",
                    step.client
                ));
            }
            if let Some(&previous) = last_at.get(&step.client)
                && step.at_ms < previous
            {
                return problem(format!(
                    "{} at {} ms after its step at {previous} ms (expected each client's steps \
                     in time order)",
                    step.client, step.at_ms
                ));
            }
            let connected = last_at.insert(step.client, step.at_ms).is_some();
            if !connected && !matches!(step.op, ZkStepOp::Connect { .. }) {
                return problem(format!(
                    "{}'s first step is not a connect (expected a session before any operation)",
                    step.client
                ));
            }
            if let ZkStepOp::Connect {
                servers: named,
                session_timeout_ms,
            } = &step.op
            {
                if let Some(node) = named
                    .iter()
                    .find(|node| !node.is_server() || node.ordinal() >= servers)
                {
                    return problem(format!(
                        "connects through {node}, not a server of the scenario (s1..s{servers})"
                    ));
                }
                if *session_timeout_ms == 0 {
                    return problem("a session timeout of 0 ms (expected a positive one)".into());
                }
                if step.wait != Wait::Reply {
                    return problem(
                        "a connect waits for its session (expected no `wait` on it)".into(),
                    );
                }
            }
        }
        if self.steps.is_empty() {
            return Err("no steps (expected at least one client step)".into());
        }
        Ok(())
    }

    /// Starts one process per client node with steps; each runs them in order.
    pub(crate) fn start(
        &self,
        sim: &Sim,
        ensemble: &ZkEnsemble,
        stop: &Arc<AtomicBool>,
    ) -> Workers {
        let mut by_client: BTreeMap<NodeId, Vec<ZkStep>> = BTreeMap::new();
        for step in &self.steps {
            by_client.entry(step.client).or_default().push(step.clone());
        }
        by_client
            .into_iter()
            .map(|(node, steps)| {
                let (ensemble, context, stop) = (ensemble.clone(), sim.node(node), stop.clone());
                sim.spawn(node, async move {
                    run_steps(&ensemble, &context, steps, &stop).await
                })
            })
            .collect()
    }

    /// After the heal: the `zk_mix` audit by every client node.
    pub(crate) async fn finish(
        &self,
        sim: &Sim,
        ensemble: &ZkEnsemble,
        pending: &Pending,
    ) -> Result<(), String> {
        ZkMix::default().finish(sim, ensemble, pending).await
    }
}

async fn run_steps(
    ensemble: &ZkEnsemble,
    context: &NodeContext,
    steps: Vec<ZkStep>,
    stop: &AtomicBool,
) {
    let process = context.id().ordinal() as u32;
    let mut session: Option<ZkClient> = None;
    for step in steps {
        let start = SimTime::from_millis(step.at_ms);
        sim::time::sleep(start.saturating_duration_since(sim::time::now())).await;
        if stop.load(Ordering::SeqCst) {
            return;
        }
        if let ZkStepOp::Connect {
            servers,
            session_timeout_ms,
        } = &step.op
        {
            let mut config = ensemble.client_config(process);
            if !servers.is_empty() {
                config.servers = servers.clone();
            }
            config.session_timeout = Duration::from_millis(*session_timeout_ms);
            session = ensemble.connect(context, config).await.ok();
            if session.is_none() {
                context.history().note(format!(
                    "{}: no session at step {:?}",
                    context.id(),
                    step.op
                ));
            }
            continue;
        }
        let Some(zk) = session.clone().filter(|zk| !zk.is_expired()) else {
            context.history().note(format!(
                "{}: skipped {:?}: no live session",
                context.id(),
                step.op
            ));
            continue;
        };
        match step.wait {
            Wait::Reply => {
                let _ = attempt(&zk, &step.op).await;
            }
            Wait::Nothing => {
                let op = step.op.clone();
                sim::task::spawn_local(async move {
                    let _ = attempt(&zk, &op).await;
                });
            }
            Wait::Answer => {
                while let Err(ZkClientError::ConnectionLoss) = attempt(&zk, &step.op).await {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    sim::time::sleep(RETRY_PAUSE).await;
                }
            }
        }
    }
}

/// One attempt at a step (not a connect); only its error matters to the script, the
/// history has the rest.
async fn attempt(zk: &ZkClient, op: &ZkStepOp) -> Result<(), ZkClientError> {
    match op {
        ZkStepOp::Connect { .. } => unreachable!("a connect is not an attempt"),
        ZkStepOp::Create { path, data, mode } => zk.create(path, data, *mode).await.map(drop),
        ZkStepOp::CreateProtected { path, data, mode } => {
            zk.create_protected(path, data, *mode).await.map(drop)
        }
        ZkStepOp::SetData { path, data } => zk.set_data(path, data, None).await.map(drop),
        ZkStepOp::GetData { path } => zk.get_data(path).await.map(drop),
        ZkStepOp::Exists { path } => zk.exists(path).await.map(drop),
        ZkStepOp::GetChildren { path } => zk.get_children(path).await.map(drop),
        ZkStepOp::Sync { path } => zk.sync(path).await,
    }
}

#[cfg(test)]
mod tests {
    use crate::scenario::{Format, Scenario};

    fn scenario(steps: &str) -> Result<Scenario, crate::ScenarioError> {
        let text = format!(
            "name = \"s\"\nstore = \"zab\"\nservers = 3\nclients = 2\n\
             fault_phase_ms = 100\nliveness_bound_ms = 100\n\n\
             [workload]\nkind = \"zk_script\"\n{steps}"
        );
        Scenario::parse(&text, Format::Toml)
    }

    #[test]
    fn steps_read_as_a_trace_and_name_real_nodes_in_time_order() {
        let good = "[[workload.steps]]\nat_ms = 10\nclient = \"c2\"\nop = \"connect\"\n\
                    servers = [\"s3\"]\nsession_timeout_ms = 1000\n\
                    [[workload.steps]]\nat_ms = 10\nclient = \"c2\"\nop = \"set_data\"\n\
                    path = \"/x\"\ndata = \"1\"\nwait = \"answer\"\n";
        let parsed = scenario(good).unwrap();
        let crate::workload::Workload::ZkScript(script) = &parsed.workload else {
            panic!("not a script: {parsed:?}");
        };
        assert_eq!(script.steps.len(), 2);
        assert_eq!(script.steps[1].wait, super::Wait::Answer);
        for (bad, expected) in [
            (good.replace("c2", "c3"), "not a client node"),
            (
                good.replacen("op = \"connect\"", "op = \"sync\"\npath = \"/\"", 1)
                    .replacen("servers = [\"s3\"]\nsession_timeout_ms = 1000\n", "", 1),
                "first step is not a connect",
            ),
            (good.replace("s3", "s4"), "not a server"),
            (
                good.replacen("at_ms = 10", "at_ms = 20", 1),
                "in time order",
            ),
            (
                good.replacen(
                    "session_timeout_ms = 1000",
                    "session_timeout_ms = 1000\nwait = \"nothing\"",
                    1,
                ),
                "expected no `wait`",
            ),
        ] {
            let error = scenario(&bad).unwrap_err();
            assert!(error.to_string().contains(expected), "{error}");
        }
    }
}
