//! ZooKeeper probes against the ZAB store: a one-server ensemble configured as Debian's
//! ZooKeeper 3.8 is (`tickTime=2000`: session timeouts between 4 and 40 s), one node per
//! probe client.

use crate::{Stepper, answer_in_world, render::list};
use models::zk::{WriteOp, ZkClient, ZkClientError, ZkEnsemble, ZkEnsembleConfig};
use probe_format::{Probe, Roles, Step, StepKind, ZkStat};
use sim::{
    NodeId, Sim,
    history::zk::{
        AddWatchMode, CreateMode, Stat, WatchEventType, WatcherType, ZkError, ZkResponse,
    },
};
use std::{collections::BTreeMap, time::Duration};

mod acl;
mod multi_read;
mod watches;

use acl::{acl_entries, node_acl, render_acl};
use multi_read::{multi_read_ops, multi_read_pieces};
use watches::{ProbeWatch, remove_watches_raw, session_state, wait_for};

/// Debian's `zoo.cfg`: `tickTime=2000`.
const TICK: Duration = Duration::from_millis(2000);
/// `zookeeper-client`'s default session timeout (`DEFAULT_SESSION_TIMEOUT`, 6 s).
const DEFAULT_SESSION_TIMEOUT_MS: u64 = 6000;
/// How long a `wait` waits when the step does not say.
const DEFAULT_WAIT_MS: u64 = 1000;
/// How long `expire` waits for the client to learn of its expiry (the recorder's `OP_LIMIT`).
const EXPIRE_PATIENCE_MS: u64 = 10_000;

pub(crate) fn run(probe: &Probe, seed: u64) -> Result<Vec<Vec<String>>, String> {
    answer_in_world(probe, seed, |sim: Sim, _clients| async move {
        let mut config = ZkEnsembleConfig::new(sim.servers());
        config.tick = TICK;
        // ZooKeeper's default bounds (2 and 20 ticks), as Debian's zoo.cfg leaves them.
        config.max_session_timeout = None;
        let ensemble = ZkEnsemble::new(&sim, config).expect("a valid ensemble");
        ensemble.start(&sim);
        State {
            sim: sim.clone(),
            ensemble,
            clients: BTreeMap::new(),
            watches: BTreeMap::new(),
            sessions: Roles::new('s'),
        }
    })
}

impl Stepper for State {
    async fn step(&mut self, step: &Step) -> Vec<String> {
        self.answer(step).await
    }
}

struct State {
    sim: Sim,
    ensemble: ZkEnsemble,
    clients: BTreeMap<u32, ZkClient>,
    watches: BTreeMap<String, ProbeWatch>,
    sessions: Roles,
}

impl State {
    async fn answer(&mut self, step: &Step) -> Vec<String> {
        let StepKind::Client { client, verb } = step.kind else {
            let StepKind::Sleep { duration_ms } = step.kind else {
                unreachable!()
            };
            self.sim.sleep(Duration::from_millis(duration_ms)).await;
            return vec!["ok".to_string()];
        };
        let node = NodeId::client(client as usize - 1);
        if verb == "connect" {
            return self.connect(client, node, step).await;
        }
        let Some(zk) = self.clients.get(&client).cloned() else {
            return vec![format!("err probe: c{client} is not connected")];
        };
        if verb == "expire" {
            return self.expire(&zk, node).await;
        }
        if verb == "remove_watches" {
            return self.remove_watches(node, step).await;
        }
        let step = step.clone();
        let watch = match verb {
            "wait" | "remove_watch" => self.watches.remove(step.arg(0)),
            _ => None,
        };
        let (raw, new_watch) = self
            .sim
            .spawn(node, async move { call(&zk, &step, watch).await })
            .await
            .expect("the client node runs the step");
        if let Some((name, watch)) = new_watch {
            self.watches.insert(name, watch);
        }
        raw.render(&mut self.sessions)
    }

    /// Expires the client's session by the model's own means: the client is cut off until
    /// the servers expire its session (a session timeout, checked every tick), then heard
    /// again; it learns of the expiry when it reconnects. (The recorder closes the session
    /// from a second client; both end it with one transaction.) Answers once the client's
    /// state is terminal.
    async fn expire(&mut self, zk: &ZkClient, node: NodeId) -> Vec<String> {
        let nemesis = self.sim.nemesis();
        nemesis.isolate(node);
        self.sim.sleep(zk.session_timeout() + TICK * 2).await;
        nemesis.heal();
        let poll = Duration::from_millis(100);
        for _ in 0..EXPIRE_PATIENCE_MS / 100 {
            if zk.is_expired() || zk.is_closed() || zk.is_auth_failed() {
                break;
            }
            self.sim.sleep(poll).await;
        }
        vec![format!("ok state={}", session_state(zk))]
    }

    /// `removeWatches` as is, on a session of its own (the recorder's `remove_watches`).
    async fn remove_watches(&mut self, node: NodeId, step: &Step) -> Vec<String> {
        let kind = match step.named("kind").unwrap_or("any") {
            "children" => WatcherType::Children,
            "data" => WatcherType::Data,
            "any" => WatcherType::Any,
            _ => return vec!["probe: unknown kind".to_string()],
        };
        let network = self.ensemble.client_network();
        let server = self.ensemble.servers()[0];
        let path = step.arg(0).to_string();
        let answer = self
            .sim
            .spawn(node, async move {
                remove_watches_raw(network, node, server, &path, kind).await
            })
            .await
            .expect("the client node asks");
        match answer {
            Some(Ok(_)) => vec!["ok".to_string()],
            Some(Err(error)) => vec![format!("err {}", api_error_name(&error))],
            None => vec!["err ConnectionLoss".to_string()],
        }
    }

    async fn connect(&mut self, client: u32, node: NodeId, step: &Step) -> Vec<String> {
        let mut config = self.ensemble.client_config(client - 1);
        let timeout_ms = step
            .named_int("timeout_ms")
            .map_or(DEFAULT_SESSION_TIMEOUT_MS, |ms| ms.max(0) as u64);
        config.session_timeout = Duration::from_millis(timeout_ms);
        let ensemble = self.ensemble.clone();
        let context = self.sim.node(node);
        let connected = self
            .sim
            .spawn(
                node,
                async move { ensemble.connect(&context, config).await },
            )
            .await
            .expect("the client node connects");
        match connected {
            Ok(zk) => {
                let session = self.sessions.name(zk.session_id().unwrap_or(0) as i64);
                let negotiated_ms = zk.session_timeout().as_millis();
                self.clients.insert(client, zk);
                vec![format!("ok session={session} timeout_ms={negotiated_ms}")]
            }
            Err(error) => vec![Raw::Error(error).render(&mut self.sessions).remove(0)],
        }
    }
}

/// An answer before its session ids are named.
enum Raw {
    Ok(Vec<Piece>),
    Error(ZkClientError),
    Event(WatchEventType, String),
    NoEvent,
    /// The watch's session ended before it fired: `zookeeper-client` hands the watcher the
    /// terminal session state instead.
    SessionEnded(&'static str),
}

/// One part of an answer line.
enum Piece {
    Text(String),
    Stat(Stat),
    /// Starts a new line.
    Line,
}

impl Raw {
    fn render(self, sessions: &mut Roles) -> Vec<String> {
        match self {
            Raw::Ok(pieces) => {
                let mut lines = vec!["ok".to_string()];
                for piece in pieces {
                    match piece {
                        Piece::Line => lines.push(String::new()),
                        Piece::Text(text) => push_word(&mut lines, &text),
                        Piece::Stat(stat) => push_word(&mut lines, &render_stat(&stat, sessions)),
                    }
                }
                lines
            }
            Raw::Error(error) => vec![format!("err {}", error_name(&error))],
            Raw::Event(kind, path) => vec![format!("event {kind:?} {path}")],
            Raw::NoEvent => vec!["none".to_string()],
            Raw::SessionEnded(state) => vec![format!("event Session state={state}")],
        }
    }
}

fn push_word(lines: &mut [String], word: &str) {
    let line = lines.last_mut().expect("at least one line");
    if !line.is_empty() {
        line.push(' ');
    }
    line.push_str(word);
}

/// The model's Stat as the probes write it (`probe_format::ZkStat`, as the recorder does).
fn render_stat(stat: &Stat, sessions: &mut Roles) -> String {
    let wide = |value: u64| value as i64;
    ZkStat {
        czxid: wide(stat.czxid),
        mzxid: wide(stat.mzxid),
        pzxid: wide(stat.pzxid),
        version: stat.version,
        cversion: stat.cversion,
        aversion: stat.aversion,
        ephemeral_owner: wide(stat.ephemeral_owner),
        data_length: stat.data_length as i32,
        num_children: stat.num_children as i32,
    }
    .render(sessions)
}

/// ZooKeeper's name for an error code (`KeeperException.Code`), as the probes write it.
fn error_name(error: &ZkClientError) -> String {
    match error {
        ZkClientError::Api(error) => api_error_name(error),
        ZkClientError::ConnectionLoss => "ConnectionLoss".into(),
        ZkClientError::SessionExpired => "SessionExpired".into(),
        ZkClientError::AuthFailed => "AuthFailed".into(),
        ZkClientError::Closed => "ClientClosed".into(),
        other => format!("Other({other})"),
    }
}

fn api_error_name(error: &ZkError) -> String {
    match error {
        ZkError::NoNode => "NoNode".into(),
        ZkError::NodeExists => "NodeExists".into(),
        ZkError::BadVersion => "BadVersion".into(),
        ZkError::NotEmpty => "NotEmpty".into(),
        ZkError::NoChildrenForEphemerals => "NoChildrenForEphemerals".into(),
        ZkError::BadArguments => "BadArguments".into(),
        ZkError::SessionExpired => "SessionExpired".into(),
        ZkError::NoAuth => "NoAuth".into(),
        ZkError::InvalidAcl => "InvalidACL".into(),
        ZkError::AuthFailed => "AuthFailed".into(),
        ZkError::NoWatcher => "NoWatcher".into(),
        ZkError::MultiFailed { index, error } => {
            format!("{} index={index}", api_error_name(error))
        }
    }
}

/// Runs one client step on its node: the raw answer, and a watch it set (with its name).
async fn call(
    zk: &ZkClient,
    step: &Step,
    watch: Option<ProbeWatch>,
) -> (Raw, Option<(String, ProbeWatch)>) {
    let path = || step.arg(0);
    let version = || step.named_int("version").map(|v| v as i32);
    let watch_name = step.named("watch").map(str::to_string);
    let raw = |result: Result<Vec<Piece>, ZkClientError>| match result {
        Ok(pieces) => Raw::Ok(pieces),
        Err(error) => Raw::Error(error),
    };
    let StepKind::Client { verb, .. } = step.kind else {
        unreachable!("sleep is not a client step")
    };
    match verb {
        "create" => {
            let mode = match create_mode(step.named("mode").unwrap_or("persistent")) {
                Some(mode) => mode,
                None => {
                    return (
                        Raw::Ok(vec![Piece::Text("probe: unknown mode".into())]),
                        None,
                    );
                }
            };
            let acl = match step.named("acl").map(node_acl) {
                None => zk.create_acl(),
                Some(Some(acl)) => acl,
                Some(None) => return (Raw::Ok(vec![Piece::Text("probe: bad acl".into())]), None),
            };
            let data = step.named("data").unwrap_or("");
            let result = zk.create_with_acl(path(), data, mode, acl).await;
            (
                raw(result.map(|path| vec![Piece::Text(format!("path={path}"))])),
                None,
            )
        }
        "create2" => {
            let Some(mode) = create_mode(step.named("mode").unwrap_or("persistent")) else {
                return (
                    Raw::Ok(vec![Piece::Text("probe: unknown mode".into())]),
                    None,
                );
            };
            let data = step.named("data").unwrap_or("");
            let result = zk.create2(path(), data, mode).await;
            (
                raw(result.map(|(path, stat)| {
                    vec![Piece::Text(format!("path={path}")), Piece::Stat(stat)]
                })),
                None,
            )
        }
        "delete" => (
            raw(zk.delete(path(), version()).await.map(|()| vec![])),
            None,
        ),
        "set" => {
            let result = zk.set_data(path(), step.arg(1), version()).await;
            (raw(result.map(|stat| vec![Piece::Stat(stat)])), None)
        }
        "get" => match watch_name {
            Some(name) => match zk.get_data_watch(path()).await {
                Ok((data, stat, watch)) => (
                    Raw::Ok(vec![Piece::Text(format!("data={data}")), Piece::Stat(stat)]),
                    Some((name, ProbeWatch::OneShot(watch))),
                ),
                Err(error) => (Raw::Error(error), None),
            },
            None => {
                let result = zk.get_data(path()).await;
                (
                    raw(result.map(|(data, stat)| {
                        vec![Piece::Text(format!("data={data}")), Piece::Stat(stat)]
                    })),
                    None,
                )
            }
        },
        "exists" => {
            let (result, watch) = match watch_name {
                Some(name) => match zk.exists_watch(path()).await {
                    Ok((stat, watch)) => (Ok(stat), Some((name, ProbeWatch::OneShot(watch)))),
                    Err(error) => (Err(error), None),
                },
                None => (zk.exists(path()).await, None),
            };
            let pieces = result.map(|stat| match stat {
                Some(stat) => vec![Piece::Stat(stat)],
                None => vec![Piece::Text("none".into())],
            });
            (raw(pieces), watch)
        }
        "children" => {
            let (result, watch) = match watch_name {
                Some(name) => match zk.get_children_watch(path()).await {
                    Ok((children, stat, watch)) => (
                        Ok((children, stat)),
                        Some((name, ProbeWatch::OneShot(watch))),
                    ),
                    Err(error) => (Err(error), None),
                },
                None => (zk.get_children(path()).await, None),
            };
            let pieces = result.map(|(mut children, stat)| {
                // Compared sorted: the real server answers in its hash order (README).
                children.sort();
                vec![
                    Piece::Text(format!("children={}", list(&children))),
                    Piece::Stat(stat),
                ]
            });
            (raw(pieces), watch)
        }
        "wait" => {
            let within = Duration::from_millis(
                step.named_int("within_ms")
                    .map_or(DEFAULT_WAIT_MS, |ms| ms.max(0) as u64),
            );
            let Some(watch) = watch else {
                // Never set (its read failed) or fired already: a watch is one-shot, so
                // nothing comes within the wait (README).
                sim::time::sleep(within).await;
                return (Raw::NoEvent, None);
            };
            wait_for(zk, watch, within, step.arg(0).to_string()).await
        }
        "add_watch" => {
            let mode = match step.named("mode").unwrap_or("persistent") {
                "persistent" => AddWatchMode::Persistent,
                "persistent_recursive" => AddWatchMode::PersistentRecursive,
                _ => {
                    return (
                        Raw::Ok(vec![Piece::Text("probe: unknown mode".into())]),
                        None,
                    );
                }
            };
            match zk.watch(path(), mode).await {
                Ok(watcher) => (
                    Raw::Ok(vec![]),
                    watch_name.map(|name| (name, ProbeWatch::Persistent(watcher))),
                ),
                Err(error) => (Raw::Error(error), None),
            }
        }
        "remove_watch" => {
            let result = match watch {
                Some(ProbeWatch::OneShot(watch)) => watch.remove().await,
                Some(ProbeWatch::Persistent(watcher)) => watcher.remove().await,
                // The recorder refuses this step: the client crate has no watcher left.
                None => return (Raw::Ok(vec![Piece::Text("probe: no watch".into())]), None),
            };
            (raw(result.map(|()| vec![])), None)
        }
        "sync" => (raw(zk.sync(path()).await.map(|()| vec![])), None),
        "multi" => match multi_ops(step.arg(0), zk) {
            Some(ops) => {
                let result = zk.multi(ops).await;
                (raw(result.map(multi_pieces)), None)
            }
            None => (
                Raw::Ok(vec![Piece::Text("probe: bad multi op".into())]),
                None,
            ),
        },
        "multi_read" => match multi_read_ops(step.arg(0)) {
            Some(ops) => {
                let result = zk.multi_read(ops).await;
                (raw(result.map(multi_read_pieces)), None)
            }
            None => (
                Raw::Ok(vec![Piece::Text("probe: bad multi_read op".into())]),
                None,
            ),
        },
        "auth" => (
            raw(zk.add_auth(step.arg(0), step.arg(1)).await.map(|()| vec![])),
            None,
        ),
        "get_acl" => {
            let result = zk.get_acl(path()).await;
            (
                raw(result.map(|(acl, _aversion, stat)| {
                    vec![
                        Piece::Text(format!("acl={}", render_acl(&acl))),
                        Piece::Stat(stat),
                    ]
                })),
                None,
            )
        }
        "set_acl" => match acl_entries(step.arg(1)) {
            Some(acl) => {
                let result = zk.set_acl(path(), acl, version()).await;
                (
                    raw(result.map(|(_aversion, stat)| vec![Piece::Stat(stat)])),
                    None,
                )
            }
            None => (Raw::Ok(vec![Piece::Text("probe: bad acl".into())]), None),
        },
        "ephemerals" => {
            let result = zk.get_ephemerals(path()).await;
            (
                raw(result.map(|mut paths| {
                    // Compared sorted: the real server answers in its hash order.
                    paths.sort();
                    vec![Piece::Text(format!("paths={}", list(&paths)))]
                })),
                None,
            )
        }
        "count" => {
            let result = zk.get_all_children_number(path()).await;
            (
                raw(result.map(|number| vec![Piece::Text(format!("number={number}"))])),
                None,
            )
        }
        "close" => (raw(zk.close().await.map(|()| vec![])), None),
        other => (
            Raw::Ok(vec![Piece::Text(format!("probe: verb {other} not run"))]),
            None,
        ),
    }
}

fn create_mode(mode: &str) -> Option<CreateMode> {
    Some(match mode {
        "persistent" => CreateMode::Persistent,
        "ephemeral" => CreateMode::Ephemeral,
        "persistent_sequential" => CreateMode::PersistentSequential,
        "ephemeral_sequential" => CreateMode::EphemeralSequential,
        "container" => CreateMode::Container,
        _ => return None,
    })
}

/// `create:PATH:DATA:MODE`, `delete:PATH:VERSION`, `set:PATH:DATA:VERSION`,
/// `check:PATH:VERSION`, separated by `;`.
fn multi_ops(text: &str, zk: &ZkClient) -> Option<Vec<WriteOp>> {
    let version = |v: &str| -> Option<Option<i32>> {
        let v: i32 = v.parse().ok()?;
        Some((v >= 0).then_some(v))
    };
    text.split(';')
        .map(|op| {
            let parts: Vec<&str> = op.split(':').collect();
            Some(match parts.as_slice() {
                ["create", path, data, mode] => WriteOp::Create {
                    path: path.to_string(),
                    data: data.to_string(),
                    mode: create_mode(mode)?,
                    acl: zk.create_acl(),
                },
                ["delete", path, v] => WriteOp::Delete {
                    path: path.to_string(),
                    version: version(v)?,
                },
                ["set", path, data, v] => WriteOp::SetData {
                    path: path.to_string(),
                    data: data.to_string(),
                    version: version(v)?,
                },
                ["check", path, v] => WriteOp::Check {
                    path: path.to_string(),
                    version: version(v)?,
                },
                _ => return None,
            })
        })
        .collect()
}

fn multi_pieces(results: Vec<ZkResponse>) -> Vec<Piece> {
    let mut pieces = Vec::new();
    for result in results {
        pieces.push(Piece::Line);
        match result {
            // Each op's line is indented by two spaces (README).
            ZkResponse::Created { path } => {
                pieces.push(Piece::Text(format!("  create path={path}")))
            }
            ZkResponse::Deleted => pieces.push(Piece::Text("  delete".into())),
            ZkResponse::Checked => pieces.push(Piece::Text("  check".into())),
            ZkResponse::Stat { stat } => {
                pieces.push(Piece::Text("  set".into()));
                pieces.push(Piece::Stat(stat));
            }
            other => pieces.push(Piece::Text(format!("{other:?}"))),
        }
    }
    pieces
}
