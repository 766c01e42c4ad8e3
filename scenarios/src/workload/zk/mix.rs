//! `zk_mix` on the ZAB store: one client process per client node issuing a random mix of
//! ZooKeeper operations (plain and versioned writes, plain and synced reads, watches,
//! sequential and ephemeral creates, deletes, multis) through the faults — or, on the first
//! `readers` client nodes, only reads (plain and synced reads, watches, listings); after the
//! heal, an audit by every client: a fresh session syncs, reads everything, writes once and
//! closes.

use crate::workload::{Pending, Workers, spawn_per_client};
use models::zk::{WriteOp, ZkClient, ZkClientError, ZkEnsemble};
use rand::Rng;
use serde::{Deserialize, Serialize};
use sim::{NodeContext, Sim, history::zk::CreateMode};
use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

/// Keys the workload writes.
pub const KEYS: [&str; 3] = ["/k0", "/k1", "/k2"];

/// Parameters of `zk_mix`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ZkMix {
    /// Session timeout the clients ask for, milliseconds.
    pub session_timeout_ms: u64,
    /// The first this many client nodes only read. A reader never waits behind a write of
    /// its own, so a deposed leader that still serves it can answer it for as long as it
    /// thinks it leads (a writer there blocks on its first write, which cannot commit).
    pub readers: usize,
}

impl Default for ZkMix {
    fn default() -> Self {
        Self {
            session_timeout_ms: 1_500,
            readers: 0,
        }
    }
}

impl ZkMix {
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.session_timeout_ms == 0 {
            return Err("a session timeout of 0 ms (expected a positive timeout)".into());
        }
        Ok(())
    }

    pub(crate) fn validate_readers(&self, clients: usize) -> Result<(), String> {
        if self.readers > clients {
            return Err(format!(
                "{} readers among {clients} clients (expected at most one reader per client)",
                self.readers
            ));
        }
        Ok(())
    }

    /// Starts one process per client node; each runs until `stop`.
    pub(crate) fn start(
        &self,
        sim: &Sim,
        ensemble: &ZkEnsemble,
        stop: &Arc<AtomicBool>,
    ) -> Workers {
        spawn_per_client(sim, |process, _, context| {
            let (ensemble, stop) = (ensemble.clone(), stop.clone());
            let timeout = Duration::from_millis(self.session_timeout_ms);
            let reader = process < self.readers;
            async move { worker(ensemble, context, process as u32, timeout, reader, stop).await }
        })
    }

    /// After the heal: every client can open a session, sync, read everything and write.
    pub(crate) async fn finish(
        &self,
        sim: &Sim,
        ensemble: &ZkEnsemble,
        pending: &Pending,
    ) -> Result<(), String> {
        let timeout = Duration::from_millis(self.session_timeout_ms);
        let mut audits = Vec::new();
        for (index, node) in sim.clients().into_iter().enumerate() {
            let (ensemble, context, pending) = (ensemble.clone(), sim.node(node), pending.clone());
            let process = 1_000 + index as u32;
            audits.push((
                node,
                sim.spawn(node, async move {
                    // A failed step (a connection lost during the audit) is retried from
                    // the start: the bound decides when it is too late.
                    let mut attempt = 0;
                    let mut last_error = String::from("none yet");
                    loop {
                        attempt += 1;
                        pending.set(format!(
                            "{node}: audit (attempt {attempt}; the last failed with: {last_error})"
                        ));
                        match audit(&ensemble, &context, process, timeout).await {
                            Ok(()) => return,
                            Err(error) => last_error = error,
                        }
                    }
                }),
            ));
        }
        for (node, audit) in audits {
            audit
                .await
                .map_err(|_| format!("{node}'s audit task died"))?;
        }
        Ok(())
    }
}

async fn connect(
    ensemble: &ZkEnsemble,
    context: &NodeContext,
    process: u32,
    session_timeout: Duration,
) -> Option<ZkClient> {
    let mut config = ensemble.client_config(process);
    config.session_timeout = session_timeout;
    config.connect_patience = Duration::from_secs(20);
    ensemble.connect(context, config).await.ok()
}

/// Creates the workload's parents (idempotent).
async fn bootstrap(client: &ZkClient) -> Result<(), ZkClientError> {
    for path in KEYS.iter().copied().chain(["/q", "/e"]) {
        match client.create(path, "0", CreateMode::Persistent).await {
            Ok(_) | Err(ZkClientError::Api(_)) => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

async fn worker(
    ensemble: ZkEnsemble,
    context: NodeContext,
    process: u32,
    session_timeout: Duration,
    reader: bool,
    stop: Arc<AtomicBool>,
) {
    let mut rng = context.rng(&format!("zk-workload-{process}"));
    let mut client: Option<ZkClient> = None;
    let mut bootstrapped = false;
    let mut counter = 0u64;
    let mut watches = Vec::new();
    let mut spins = 0u64;
    let mut last_time = sim::time::now();
    while !stop.load(Ordering::SeqCst) {
        if sim::time::now() == last_time {
            spins += 1;
            assert!(
                spins < 100_000,
                "worker {process} spins at {last_time}: client {client:?} expired {:?} connected {:?}",
                client.as_ref().map(|c| c.is_expired()),
                client.as_ref().map(|c| c.is_connected())
            );
        } else {
            spins = 0;
            last_time = sim::time::now();
        }
        let zk = match &client {
            Some(zk) if !zk.is_expired() && !zk.is_closed() => zk.clone(),
            _ => match connect(&ensemble, &context, process, session_timeout).await {
                Some(zk) => {
                    client = Some(zk.clone());
                    zk
                }
                None => continue,
            },
        };
        if !bootstrapped {
            // A reader writes nothing, not even the parents.
            bootstrapped = reader || bootstrap(&zk).await.is_ok();
            continue;
        }
        counter += 1;
        let key = KEYS[rng.gen_range(0..KEYS.len())];
        let value = format!("{process}-{counter}");
        if reader {
            read(&zk, &mut rng, key, &mut watches).await;
            if watches.len() > 8 {
                watches.remove(0);
            }
            continue;
        }
        write(&zk, &mut rng, process, key, value, &mut watches).await;
        // Keep at most a few watches alive; dropping one does not unregister it.
        if watches.len() > 8 {
            watches.remove(0);
        }
    }
}

/// One operation of a writer: a write of `value` to `key` (plain, versioned, or in a
/// multi with a queue create), a plain or synced read, a data or children watch, a
/// protected sequential create, its own ephemeral node made or deleted, a synced look at
/// an ephemeral node, or a queue item taken.
async fn write(
    zk: &ZkClient,
    rng: &mut impl Rng,
    process: u32,
    key: &str,
    value: String,
    watches: &mut Vec<models::zk::Watch>,
) {
    match rng.gen_range(0..100) {
        0..=24 => {
            let _ = zk.set_data(key, &value, None).await;
        }
        25..=34 => {
            if let Ok((_, stat)) = zk.get_data(key).await {
                let _ = zk.set_data(key, &value, Some(stat.version)).await;
            }
        }
        35..=44 => {
            let _ = zk.get_data(key).await;
        }
        45..=54 => {
            if zk.sync("/").await.is_ok() {
                let _ = zk.get_data(key).await;
            }
        }
        55..=62 => {
            if let Ok((_, _, watch)) = zk.get_data_watch(key).await {
                watches.push(watch);
            }
        }
        63..=67 => {
            if let Ok((_, _, watch)) = zk.get_children_watch("/q").await {
                watches.push(watch);
            }
        }
        68..=75 => {
            let mode = if rng.gen_bool(0.5) {
                CreateMode::EphemeralSequential
            } else {
                CreateMode::PersistentSequential
            };
            let _ = zk.create_protected("/q/n-", &value, mode).await;
        }
        76..=81 => {
            let path = format!("/e/p{process}");
            if let Err(ZkClientError::Api(_)) =
                zk.create(&path, &value, CreateMode::Ephemeral).await
            {
                let _ = zk.delete(&path, None).await;
            }
        }
        82..=87 => {
            if zk.sync("/").await.is_ok() {
                let _ = zk.exists(&format!("/e/p{}", rng.gen_range(0..4))).await;
            }
        }
        88..=92 => {
            if let Ok((children, _)) = zk.get_children("/q").await
                && let Some(child) = children.first()
            {
                let _ = zk.delete(&format!("/q/{child}"), None).await;
            }
        }
        _ => {
            let _ = zk
                .multi(vec![
                    WriteOp::SetData {
                        path: key.into(),
                        data: value.clone(),
                        version: None,
                    },
                    WriteOp::Create {
                        path: "/q/m-".into(),
                        data: value,
                        mode: CreateMode::PersistentSequential,
                        acl: zk.create_acl(),
                    },
                ])
                .await;
        }
    }
}

/// One read of a reader: a plain or synced read of a key, a data watch, a synced look at
/// an ephemeral node, or a listing of the queue.
async fn read(zk: &ZkClient, rng: &mut impl Rng, key: &str, watches: &mut Vec<models::zk::Watch>) {
    match rng.gen_range(0..100) {
        0..=29 => {
            let _ = zk.get_data(key).await;
        }
        30..=64 => {
            if zk.sync("/").await.is_ok() {
                let _ = zk.get_data(key).await;
            }
        }
        65..=74 => {
            if let Ok((_, _, watch)) = zk.get_data_watch(key).await {
                watches.push(watch);
            }
        }
        75..=89 => {
            if zk.sync("/").await.is_ok() {
                let _ = zk.exists(&format!("/e/p{}", rng.gen_range(0..4))).await;
            }
        }
        _ => {
            let _ = zk.get_children("/q").await;
        }
    }
}

/// A fresh session that syncs and reads everything (synced reads are what the checkers
/// judge): every top-level node's data and children, and up to 20 children of each; then
/// writes once (its own node) to show the ensemble makes progress, and closes. Definite
/// answers (a node deleted meanwhile) are answers; only a lost connection or session fails.
async fn audit(
    ensemble: &ZkEnsemble,
    context: &NodeContext,
    process: u32,
    session_timeout: Duration,
) -> Result<(), String> {
    let zk = connect(ensemble, context, process, session_timeout)
        .await
        .ok_or("no session after heal")?;
    let answered = |result: Result<(), ZkClientError>| match result {
        Ok(()) | Err(ZkClientError::Api(_)) => Ok(()),
        Err(error) => Err(error.to_string()),
    };
    answered(zk.sync("/").await)?;
    let (top, _) = zk
        .get_children("/")
        .await
        .map_err(|error| error.to_string())?;
    for node in top.iter().filter(|node| *node != "zookeeper") {
        let path = format!("/{node}");
        answered(zk.get_data(&path).await.map(drop))?;
        let children = match zk.get_children(&path).await {
            Ok((children, _)) => children,
            Err(ZkClientError::Api(_)) => Vec::new(),
            Err(error) => return Err(error.to_string()),
        };
        for child in children.iter().take(20) {
            answered(zk.exists(&format!("{path}/{child}")).await.map(drop))?;
        }
    }
    let own = format!("/audit-{process}");
    match zk.create(&own, "audit", CreateMode::Persistent).await {
        Ok(_) => {}
        Err(ZkClientError::Api(_)) => zk
            .set_data(&own, "audit", None)
            .await
            .map(drop)
            .map_err(|error| error.to_string())?,
        Err(error) => return Err(error.to_string()),
    }
    zk.close().await.map_err(|error| error.to_string())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::scenario::{Format, Scenario};

    #[test]
    fn readers_are_some_of_the_clients() {
        let text = |readers: usize| {
            format!(
                "name = \"r\"\nstore = \"zab\"\nservers = 3\nclients = 2\n\
                 fault_phase_ms = 100\nliveness_bound_ms = 100\n\n\
                 [workload]\nkind = \"zk_mix\"\nreaders = {readers}\n"
            )
        };
        let scenario = Scenario::parse(&text(2), Format::Toml).unwrap();
        assert!(matches!(
            scenario.workload,
            crate::workload::Workload::ZkMix(super::ZkMix { readers: 2, .. })
        ));
        let error = Scenario::parse(&text(3), Format::Toml).unwrap_err();
        assert_eq!(error.field, "workload", "{error}");
        assert!(
            error.problem.contains("3 readers among 2 clients"),
            "{error}"
        );
    }
}
