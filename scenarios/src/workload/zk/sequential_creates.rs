//! `zk_sequential_creates` on the ZAB store: every client node creates sequential nodes
//! under one parent, back to back, with protection (a GUID in the name, so a create whose
//! reply was lost is found instead of made twice), persistent and ephemeral by turns, the
//! way queue and lock recipes do. The sequential-names check judges the names; what each
//! create asked and got is in the history. A client whose session expired opens another.
//! After the heal, the `zk_mix` audit.

use crate::workload::{Pending, Workers, ZkMix, spawn_per_client};
use models::zk::{ZkClient, ZkClientError, ZkEnsemble};
use serde::{Deserialize, Serialize};
use sim::{NodeContext, Sim, history::zk::CreateMode};
use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

/// The parent of the sequential nodes.
pub const SEQUENCE_PARENT: &str = "/seq";

/// Parameters of `zk_sequential_creates`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ZkSequentialCreates {
    /// Session timeout the clients ask for, milliseconds.
    pub session_timeout_ms: u64,
}

impl Default for ZkSequentialCreates {
    fn default() -> Self {
        Self {
            session_timeout_ms: 2_000,
        }
    }
}

impl ZkSequentialCreates {
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.session_timeout_ms == 0 {
            return Err("a session timeout of 0 ms (expected a positive timeout)".into());
        }
        Ok(())
    }

    pub(crate) fn start(
        &self,
        sim: &Sim,
        ensemble: &ZkEnsemble,
        stop: &Arc<AtomicBool>,
    ) -> Workers {
        spawn_per_client(sim, |_, _, context| {
            let (ensemble, stop) = (ensemble.clone(), stop.clone());
            let timeout = Duration::from_millis(self.session_timeout_ms);
            async move { create_until_stopped(&ensemble, &context, timeout, &stop).await }
        })
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

async fn create_until_stopped(
    ensemble: &ZkEnsemble,
    context: &NodeContext,
    session_timeout: Duration,
    stop: &AtomicBool,
) {
    let mut config = ensemble.client_config(context.id().ordinal() as u32);
    config.session_timeout = session_timeout;
    let mut session: Option<ZkClient> = None;
    let mut parent_exists = false;
    let mut creates = 0u64;
    while !stop.load(Ordering::SeqCst) {
        let zk = match &session {
            Some(zk) if !zk.is_expired() => zk.clone(),
            _ => match ensemble.connect(context, config.clone()).await {
                Ok(zk) => {
                    session = Some(zk.clone());
                    zk
                }
                Err(_) => continue,
            },
        };
        if !parent_exists {
            // Whoever creates it first, it is there once anyone got an answer.
            parent_exists = matches!(
                zk.create(SEQUENCE_PARENT, "", CreateMode::Persistent).await,
                Ok(_) | Err(ZkClientError::Api(_))
            );
            continue;
        }
        creates += 1;
        let mode = if creates.is_multiple_of(2) {
            CreateMode::EphemeralSequential
        } else {
            CreateMode::PersistentSequential
        };
        let prefix = format!("{SEQUENCE_PARENT}/n-");
        let _ = zk
            .create_protected(&prefix, &context.id().to_string(), mode)
            .await;
    }
}
