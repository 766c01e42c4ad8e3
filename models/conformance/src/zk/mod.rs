//! ZooKeeper probes against the ZAB store: a one-server ensemble configured as Debian's
//! ZooKeeper 3.8 is (`tickTime=2000`: session timeouts between 4 and 40 s), one node per
//! probe client.

use crate::{
    Stepper, answer_in_world,
    render::{list, zxid},
};
use models::zk::{
    NodeAcl, PersistentWatcher, Watch, WriteOp, ZkClient, ZkClientError, ZkEnsemble,
    ZkEnsembleConfig,
};
use probe_format::{Probe, Roles, Step, StepKind};
use sim::{
    NodeId, Sim,
    history::zk::{
        Acl, AddWatchMode, CreateMode, Perms, Stat, WatchEventType, ZkError, ZkResponse,
    },
};
use std::{collections::BTreeMap, time::Duration};

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

/// A watch a step set (`watch=wK`).
enum ProbeWatch {
    /// Set by a read: fires once.
    OneShot(Watch),
    /// Set by `add_watch`: fires until removed.
    Persistent(PersistentWatcher),
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

fn render_stat(stat: &Stat, sessions: &mut Roles) -> String {
    let owner = if stat.ephemeral_owner == 0 {
        "none".to_string()
    } else {
        sessions.name(stat.ephemeral_owner as i64)
    };
    format!(
        "stat=(czxid={} mzxid={} pzxid={} version={} cversion={} aversion={} owner={owner} len={} children={})",
        zxid(stat.czxid),
        zxid(stat.mzxid),
        zxid(stat.pzxid),
        stat.version,
        stat.cversion,
        stat.aversion,
        stat.data_length,
        stat.num_children,
    )
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

/// Waits up to `within` for the watch's next event. A one-shot watch that has not fired,
/// and a persistent watch always, is handed back to stay set.
async fn wait_for(
    zk: &ZkClient,
    watch: ProbeWatch,
    within: Duration,
    name: String,
) -> (Raw, Option<(String, ProbeWatch)>) {
    let fired = match &watch {
        ProbeWatch::OneShot(one_shot) => sim::time::timeout(within, one_shot.wait()).await,
        ProbeWatch::Persistent(watcher) => sim::time::timeout(within, watcher.changed()).await,
    };
    let stays = matches!(
        (&watch, &fired),
        (ProbeWatch::Persistent(_), Ok(Ok(_))) | (_, Err(_))
    );
    let keep = stays.then_some((name, watch));
    match fired {
        Ok(Ok(event)) => (Raw::Event(event.event, event.path), keep),
        Ok(Err(_lost)) => (Raw::SessionEnded(session_state(zk)), None),
        // Nothing yet: it stays set, and a later `wait` may see it fire.
        Err(_elapsed) => (Raw::NoEvent, keep),
    }
}

/// The client's session state by `zookeeper-client`'s name for it (`SessionState`).
fn session_state(zk: &ZkClient) -> &'static str {
    if zk.is_expired() {
        "Expired"
    } else if zk.is_closed() {
        "Closed"
    } else if zk.is_auth_failed() {
        "AuthFailed"
    } else if zk.is_connected() {
        "SyncConnected"
    } else {
        "Disconnected"
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

/// `open`, `read`, `creator`, or a list of `scheme:id:perms` entries.
fn node_acl(text: &str) -> Option<NodeAcl> {
    match text {
        "open" => Some(NodeAcl::Open),
        "creator" => Some(NodeAcl::creator_all()),
        _ => acl_entries(text).map(NodeAcl::from_entries),
    }
}

fn acl_entries(text: &str) -> Option<Vec<Acl>> {
    match text {
        "open" => return Some(vec![Acl::open()]),
        "read" => return Some(vec![Acl::new(Perms::READ, "world", "anyone")]),
        "creator" => return Some(vec![Acl::creator_all()]),
        _ => {}
    }
    text.split(',')
        .map(|entry| {
            // The id may hold ':' itself (digest ids are `user:hash`): perms are last.
            let (scheme, rest) = entry.split_once(':')?;
            let (id, perms) = rest.rsplit_once(':')?;
            Some(Acl::new(perms_of(perms)?, scheme, id))
        })
        .collect()
}

const PERM_LETTERS: [(char, Perms); 5] = [
    ('c', Perms::CREATE),
    ('d', Perms::DELETE),
    ('r', Perms::READ),
    ('w', Perms::WRITE),
    ('a', Perms::ADMIN),
];

fn perms_of(letters: &str) -> Option<Perms> {
    let mut bits = 0;
    for letter in letters.chars() {
        let (_, perm) = PERM_LETTERS.iter().find(|(l, _)| *l == letter)?;
        bits |= perm.0;
    }
    Some(Perms(bits))
}

fn render_acl(acl: &[Acl]) -> String {
    let entries: Vec<String> = acl
        .iter()
        .map(|entry| {
            let letters: String = PERM_LETTERS
                .iter()
                .filter(|(_, perm)| entry.perms.0 & perm.0 != 0)
                .map(|(letter, _)| *letter)
                .collect();
            format!("{}:{}:{letters}", entry.scheme, entry.id)
        })
        .collect();
    list(&entries)
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
