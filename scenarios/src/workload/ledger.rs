//! `ledger`: each client appends to the demo ledger; after the heal, each client gets one
//! append acknowledged.

use super::{Pending, Workers, spawn_per_client};
use models::ledger::Ledger;
use serde::{Deserialize, Serialize};
use sim::Sim;
use std::sync::{Arc, atomic::AtomicBool};

/// Parameters of `ledger`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LedgerAppends {
    /// Appends each client makes during the fault phase (fewer if the phase ends first).
    pub appends_per_client: u32,
    /// For testing the run driver's crash reports: each client panics at this append, as
    /// a model whose assertion fails would.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub panic_at_append: Option<u32>,
}

impl Default for LedgerAppends {
    fn default() -> Self {
        Self {
            appends_per_client: 50,
            panic_at_append: None,
        }
    }
}

impl LedgerAppends {
    pub(super) fn validate(&self) -> Result<(), String> {
        Ok(())
    }

    pub(super) fn start(&self, sim: &Sim, ledger: &Ledger, stop: &Arc<AtomicBool>) -> Workers {
        spawn_per_client(sim, |_, _, context| {
            let (ledger, stop) = (ledger.clone(), stop.clone());
            let (appends, panic_at) = (self.appends_per_client, self.panic_at_append);
            async move { ledger.run_client(context, appends, panic_at, stop).await }
        })
    }

    pub(super) async fn finish(
        &self,
        sim: &Sim,
        ledger: &Ledger,
        pending: &Pending,
    ) -> Result<(), String> {
        for client in sim.clients() {
            pending.set(format!("{client}: an append after the heal"));
            let (ledger, context) = (ledger.clone(), sim.node(client));
            sim.spawn(client, async move {
                ledger.append_until_acknowledged(context, 0).await
            })
            .await
            .map_err(|_| format!("{client}'s append task died"))?;
        }
        Ok(())
    }
}
