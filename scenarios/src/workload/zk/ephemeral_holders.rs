//! `zk_ephemeral_holders` on the ZAB store: every client node holds one session and one
//! ephemeral node named after it (`/holders/c1`, …), the way a group member or a lock holder
//! does, and every round (`round_ms` of simulated time) writes its own node, syncs, and
//! looks at every holder's node: what each holder saw of the others is in the history, so
//! a test can tell when a node vanished and whose session owned it. A holder whose session
//! expired stops (its node went with the session, and it makes no other); a lost
//! connection only costs it a round. After the heal, the `zk_mix` audit.

use crate::workload::{Pending, Workers, ZkMix};
use models::zk::{ZkClient, ZkClientError, ZkEnsemble};
use serde::{Deserialize, Serialize};
use sim::{NodeContext, NodeId, Sim, history::zk::CreateMode};
use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

/// The parent of the holders' nodes.
const HOLDERS: &str = "/holders";

/// The ephemeral node `client` holds.
pub fn holder_path(client: NodeId) -> String {
    format!("{HOLDERS}/{client}")
}

/// Parameters of `zk_ephemeral_holders`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ZkEphemeralHolders {
    /// Session timeout the holders ask for, milliseconds.
    pub session_timeout_ms: u64,
    /// A holder starts a round this often, milliseconds of simulated time.
    pub round_ms: u64,
}

impl Default for ZkEphemeralHolders {
    fn default() -> Self {
        Self {
            session_timeout_ms: 2_000,
            round_ms: 200,
        }
    }
}

impl ZkEphemeralHolders {
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.session_timeout_ms == 0 || self.round_ms == 0 {
            return Err("expected a positive session timeout and round".into());
        }
        Ok(())
    }

    pub(crate) fn start(
        &self,
        sim: &Sim,
        ensemble: &ZkEnsemble,
        stop: &Arc<AtomicBool>,
    ) -> Workers {
        let holders = sim.clients();
        holders
            .iter()
            .map(|&node| {
                let (ensemble, context, stop) = (ensemble.clone(), sim.node(node), stop.clone());
                let (holders, parameters) = (holders.clone(), self.clone());
                sim.spawn(node, async move {
                    hold(&ensemble, &context, &parameters, &holders, &stop).await
                })
            })
            .collect()
    }

    pub(crate) async fn finish(
        &self,
        sim: &Sim,
        ensemble: &ZkEnsemble,
        pending: &Pending,
    ) -> Result<(), String> {
        ZkMix::default().finish(sim, ensemble, pending).await
    }
}

/// One holder: a session, its node, then rounds until its session ends or the workload
/// stops.
async fn hold(
    ensemble: &ZkEnsemble,
    context: &NodeContext,
    parameters: &ZkEphemeralHolders,
    holders: &[NodeId],
    stop: &AtomicBool,
) {
    let round = Duration::from_millis(parameters.round_ms);
    let mut config = ensemble.client_config(context.id().ordinal() as u32);
    config.session_timeout = Duration::from_millis(parameters.session_timeout_ms);
    let zk = loop {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        // No quorum yet: try again (the connect itself waits a while).
        if let Ok(zk) = ensemble.connect(context, config.clone()).await {
            break zk;
        }
    };
    let own = holder_path(context.id());
    for (path, mode) in [
        (HOLDERS, CreateMode::Persistent),
        (&own, CreateMode::Ephemeral),
    ] {
        // Only this session creates `own`: if an attempt whose reply was lost did create
        // it, the next one finds it there, ours.
        loop {
            match zk
                .create(path, context.id().to_string().as_str(), mode)
                .await
            {
                Ok(_) | Err(ZkClientError::Api(_)) => break,
                Err(ZkClientError::ConnectionLoss) if !stop.load(Ordering::SeqCst) => {
                    sim::time::sleep(round).await;
                }
                Err(_) => return,
            }
        }
    }
    let mut rounds = 0u64;
    while !stop.load(Ordering::SeqCst) {
        rounds += 1;
        if let Err(ZkClientError::SessionExpired | ZkClientError::Closed) =
            look_around(&zk, &own, rounds, holders).await
        {
            return;
        }
        sim::time::sleep(round).await;
    }
}

/// A round: write our node, sync, look at every holder's node. Stops at the first error.
async fn look_around(
    zk: &ZkClient,
    own: &str,
    round: u64,
    holders: &[NodeId],
) -> Result<(), ZkClientError> {
    zk.set_data(own, &round.to_string(), None).await?;
    zk.sync("/").await?;
    for &holder in holders {
        zk.exists(&holder_path(holder)).await?;
    }
    Ok(())
}
