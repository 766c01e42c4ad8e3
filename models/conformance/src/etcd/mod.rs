//! etcd probes against the Raft store: a one-server cluster with etcd's defaults, one node per
//! probe client.

mod txn;

use crate::{Stepper, answer_in_world};
use models::etcd::{
    ChangeKind, EtcdClient, EtcdCluster, EtcdConfig, GetOptions, WatchFilterType, WatchItem,
    WatchOptions, WatchStream, kv_response, prefix_range_end,
};
use probe_format::{Probe, Roles, Step, StepKind};
use sim::{
    NodeId, Sim,
    history::{
        OpError, OpResult, Response,
        kv::{KeyValue, KvError, KvOperation, KvResponse, ReadConsistency, SortOrder, SortTarget},
    },
};
use std::{collections::BTreeMap, time::Duration};

/// How long a `next` waits when the step does not say.
const DEFAULT_WAIT_MS: u64 = 1000;

pub(crate) fn run(probe: &Probe, seed: u64) -> Result<Vec<Vec<String>>, String> {
    answer_in_world(probe, seed, |sim: Sim, clients| async move {
        let cluster = EtcdCluster::start(&sim, debian_etcd_config(&sim.servers()));
        State {
            clients: (0..clients)
                .map(|index| {
                    let node = NodeId::client(index);
                    Some(EtcdClient::new(&cluster, sim.node(node), index as u32))
                })
                .collect(),
            sim: sim.clone(),
            watches: BTreeMap::new(),
            pending: BTreeMap::new(),
            leases: Roles::new('l'),
        }
    })
}

/// The model configured with the timing of the etcd the probes were recorded against
/// (Debian's `etcd-server` with its defaults: `--heartbeat-interval 100`,
/// `--election-timeout 1000`), on which the shortest lease etcd grants (2 s) depends.
fn debian_etcd_config(servers: &[NodeId]) -> EtcdConfig {
    let mut config = EtcdConfig::new(servers);
    config.raft.heartbeat_interval = Duration::from_millis(100);
    // etcd's Raft draws each election timeout from [timeout, 2 × timeout).
    config.raft.election_timeout_min = Duration::from_millis(1_000);
    config.raft.election_timeout_max = Duration::from_millis(2_000);
    // The recorder starts etcd with `--experimental-watch-progress-notify-interval=1s`, so
    // that a probe sees a progress notification without waiting etcd's default 10 minutes.
    config.watch_progress_notify_interval = Duration::from_secs(1);
    config
}

impl Stepper for State {
    async fn step(&mut self, step: &Step) -> Vec<String> {
        self.answer(step).await
    }
}

struct State {
    sim: Sim,
    /// `None` while the client is away on its node running a step.
    clients: Vec<Option<EtcdClient>>,
    watches: BTreeMap<String, WatchStream>,
    /// Events a watch delivered beyond the one its `next` step handed out, each as its lines.
    pending: BTreeMap<String, std::collections::VecDeque<Vec<String>>>,
    leases: Roles,
}

/// What a step asks of the store, with lease roles resolved to ids.
enum Call {
    Op(KvOperation),
    Compact(u64),
    Watch {
        name: String,
        key: String,
        options: WatchOptions,
    },
    Next {
        name: String,
        within: Duration,
    },
    Cancel(String),
    /// A progress request on a watch.
    Progress(String),
    /// The probe itself is wrong for the model (a lease role never granted, a bad compare).
    Refused(String),
}

/// A step's raw outcome, before lease ids are named.
enum Outcome {
    Result(OpResult),
    Watching,
    Refused(String),
}

impl State {
    async fn answer(&mut self, step: &Step) -> Vec<String> {
        let StepKind::Client { client, .. } = step.kind else {
            let StepKind::Sleep { duration_ms } = step.kind else {
                unreachable!()
            };
            self.sim.sleep(Duration::from_millis(duration_ms)).await;
            return vec!["ok".to_string()];
        };
        let call = self.call_of(step);
        let index = client as usize - 1;
        let node = NodeId::client(index);
        let outcome = match call {
            Call::Watch { name, key, options } => {
                // The model's `watch`, like etcd's, returns once the server created the watch.
                let mut client = self.clients[index].take().expect("the client is home");
                let (stream, client) = self
                    .sim
                    .spawn(node, async move {
                        let stream = client.watch_with_options(&key, options).await;
                        (stream, client)
                    })
                    .await
                    .expect("the client node opens the watch");
                self.clients[index] = Some(client);
                self.watches.insert(name, stream);
                Outcome::Watching
            }
            Call::Next { name, .. } if self.pending.get(&name).is_some_and(|p| !p.is_empty()) => {
                let event = self.pending.get_mut(&name).and_then(|p| p.pop_front());
                return event.expect("a pending event");
            }
            Call::Next { name, within } => match self.watches.remove(&name) {
                None => Outcome::Refused(format!("no watch {name}")),
                Some(mut stream) => {
                    let (item, stream) = self
                        .sim
                        .spawn(node, async move {
                            let item = sim::time::timeout(within, stream.next()).await.ok();
                            (item, stream)
                        })
                        .await
                        .expect("the client node waits");
                    let compacted = matches!(item, Some(WatchItem::Compacted { .. }));
                    if !compacted {
                        self.watches.insert(name.clone(), stream);
                    }
                    // etcd may batch events into one response; `next` hands out one per
                    // step (README), the rest wait for the next steps.
                    let mut events = match item {
                        None => return vec!["none".to_string()],
                        Some(item) => self.render_events(item),
                    };
                    let first = events.remove(0);
                    self.pending.entry(name).or_default().extend(events);
                    return first;
                }
            },
            Call::Progress(name) => match self.watches.get(&name) {
                Some(stream) => {
                    stream.request_progress();
                    Outcome::Watching
                }
                None => Outcome::Refused(format!("no watch {name}")),
            },
            // Events received before the cancel still come first (they wait in `pending`).
            Call::Cancel(name) => match self.watches.get_mut(&name) {
                Some(stream) => {
                    stream.cancel();
                    Outcome::Watching
                }
                None => Outcome::Refused(format!("no watch {name}")),
            },
            call => self.run_on(index, node, call).await,
        };
        self.render(outcome)
    }

    /// Runs `call` on the client's node (the client goes there and comes back).
    async fn run_on(&mut self, index: usize, node: NodeId, call: Call) -> Outcome {
        let mut client = self.clients[index].take().expect("the client is home");
        let (outcome, client) = self
            .sim
            .spawn(node, async move {
                let outcome = match call {
                    Call::Op(operation) => Outcome::Result(client.execute(operation).await),
                    Call::Compact(revision) => Outcome::Result(client.compact(revision).await),
                    Call::Refused(why) => Outcome::Refused(why),
                    _ => unreachable!("watches are handled by the caller"),
                };
                (outcome, client)
            })
            .await
            .expect("the client node runs the step");
        self.clients[index] = Some(client);
        outcome
    }

    fn call_of(&mut self, step: &Step) -> Call {
        let lease = |roles: &Roles, role: &str| roles.id(role).map(|id| id as u64);
        let range_end = |step: &Step| {
            if step.flag("prefix") {
                Some(prefix_range_end(step.arg(0)))
            } else {
                step.named("range_end").map(str::to_string)
            }
        };
        match step.verb() {
            "put" => {
                let lease_id = match step.named("lease") {
                    None => None,
                    // A lease role the probe never granted: an id no server granted.
                    Some(role) => Some(lease(&self.leases, role).unwrap_or(UNGRANTED_LEASE)),
                };
                Call::Op(KvOperation::Put {
                    prev_kv: step.flag("prev_kv"),
                    key: step.arg(0).into(),
                    value: step.arg(1).into(),
                    lease: lease_id,
                })
            }
            "get" => Call::Op(get_options(step).operation(step.arg(0))),
            "delete" => Call::Op(KvOperation::Delete {
                prev_kv: step.flag("prev_kv"),
                key: step.arg(0).into(),
                range_end: range_end(step),
            }),
            "txn" => match txn::txn(step, &self.leases) {
                Ok(operation) => Call::Op(operation),
                Err(why) => Call::Refused(why),
            },
            "grant" => Call::Op(KvOperation::LeaseGrant {
                ttl_ms: step.arg_int(0).max(0) as u64 * 1000,
            }),
            "revoke" | "ttl" | "keepalive" => {
                let id = lease(&self.leases, step.arg(0)).unwrap_or(UNGRANTED_LEASE);
                Call::Op(match step.verb() {
                    "revoke" => KvOperation::LeaseRevoke { lease: id },
                    "ttl" => KvOperation::LeaseTimeToLive {
                        lease: id,
                        keys: step.flag("keys"),
                    },
                    _ => KvOperation::LeaseKeepAlive { lease: id },
                })
            }
            "leases" => Call::Op(KvOperation::LeaseLeases),
            "compact" => Call::Compact(step.arg_int(0).max(0) as u64),
            "watch" => {
                let mut options = WatchOptions::new()
                    .with_start_revision(step.named_int("rev").map_or(0, |r| r.max(0) as u64));
                if let Some(end) = range_end(step) {
                    options = options.with_range(end);
                }
                if step.flag("prev_kv") {
                    options = options.with_prev_key();
                }
                if step.flag("progress_notify") {
                    options = options.with_progress_notify();
                }
                let filters: Vec<WatchFilterType> = [
                    ("no_put", WatchFilterType::NoPut),
                    ("no_delete", WatchFilterType::NoDelete),
                ]
                .into_iter()
                .filter(|(flag, _)| step.flag(flag))
                .map(|(_, filter)| filter)
                .collect();
                if !filters.is_empty() {
                    options = options.with_filters(filters);
                }
                Call::Watch {
                    name: step.named("as").unwrap_or("w1").to_string(),
                    key: step.arg(0).to_string(),
                    options,
                }
            }
            "next" => Call::Next {
                name: step.arg(0).to_string(),
                within: Duration::from_millis(
                    step.named_int("within_ms")
                        .map_or(DEFAULT_WAIT_MS, |ms| ms.max(0) as u64),
                ),
            },
            "cancel" => Call::Cancel(step.arg(0).to_string()),
            "progress" => Call::Progress(step.arg(0).to_string()),
            other => Call::Refused(format!("verb {other} not run")),
        }
    }

    fn render(&mut self, outcome: Outcome) -> Vec<String> {
        match outcome {
            Outcome::Result(result @ OpResult::Ok { .. }) => match kv_response(&result) {
                Some(response) => self.response_lines(response),
                // A compaction: its header revision.
                None => match &result {
                    OpResult::Ok {
                        response: Response::Other { value },
                    } if value.get("revision").is_some() => {
                        vec![format!("ok rev={}", value["revision"])]
                    }
                    _ => vec!["ok".to_string()],
                },
            },
            Outcome::Result(OpResult::Fail { error }) => vec![error_line(&error)],
            Outcome::Result(OpResult::Unknown { reason }) => vec![format!("err Unknown: {reason}")],
            Outcome::Watching => vec!["ok".to_string()],
            Outcome::Refused(why) => vec![format!("probe: {why}")],
        }
    }

    /// A watch's item as events, each as its lines: `put KV` or `delete KEY mod=R`, then
    /// `  prev KV` when it carries its key's previous value; or the compaction that ended it.
    fn render_events(&mut self, item: WatchItem) -> Vec<Vec<String>> {
        match item {
            WatchItem::Changes(events) => events
                .iter()
                .map(|event| {
                    let mut lines = vec![match event.kind {
                        ChangeKind::Put => format!("put {}", self.kv(&event.kv)),
                        ChangeKind::Delete => {
                            format!("delete {} mod={}", event.kv.key, event.kv.mod_revision)
                        }
                    }];
                    if let Some(prev) = &event.prev_kv {
                        lines.push(format!("  prev {}", self.kv(prev)));
                    }
                    lines
                })
                .collect(),
            WatchItem::Compacted { compact_revision } => {
                vec![vec![format!(
                    "err compacted compact_rev={compact_revision}"
                )]]
            }
            WatchItem::Progress { revision } => vec![vec![format!("progress rev={revision}")]],
            WatchItem::Canceled => vec![vec!["canceled".to_string()]],
        }
    }

    fn response_lines(&mut self, response: &KvResponse) -> Vec<String> {
        match response {
            KvResponse::Get { revision, kvs } => {
                let mut lines = vec![format!("ok rev={revision} count={} more=false", kvs.len())];
                lines.extend(kvs.iter().map(|kv| format!("  {}", self.kv(kv))));
                lines
            }
            KvResponse::GetWithOptions {
                revision,
                kvs,
                count,
                more,
            } => {
                let mut lines = vec![format!("ok rev={revision} count={count} more={more}")];
                lines.extend(kvs.iter().map(|kv| format!("  {}", self.kv(kv))));
                lines
            }
            KvResponse::Put { revision, prev_kv } => {
                let mut lines = vec![format!("ok rev={revision}")];
                lines.extend(prev_kv.iter().map(|kv| format!("  prev {}", self.kv(kv))));
                lines
            }
            KvResponse::Delete {
                revision,
                deleted,
                prev_kvs,
            } => {
                let mut lines = vec![format!("ok rev={revision} deleted={deleted}")];
                lines.extend(prev_kvs.iter().map(|kv| format!("  prev {}", self.kv(kv))));
                lines
            }
            KvResponse::Txn {
                revision,
                succeeded,
                responses,
            } => {
                let mut lines = vec![format!("ok rev={revision} succeeded={succeeded}")];
                self.txn_lines(responses, 1, &mut lines);
                lines
            }
            KvResponse::LeaseGrant { lease, ttl_ms } => {
                let role = self.leases.name(*lease as i64);
                vec![format!("ok lease={role} ttl={}", ttl_ms / 1000)]
            }
            KvResponse::LeaseRevoke { revision } => vec![format!("ok rev={revision}")],
            KvResponse::LeaseLeases { leases } => {
                // Sorted by role: etcd lists by expiry (README).
                let mut roles: Vec<String> = leases
                    .iter()
                    .map(|id| self.leases.name(*id as i64))
                    .collect();
                roles.sort();
                vec![format!("ok leases={}", crate::render::list(&roles))]
            }
            KvResponse::LeaseKeepAlive { ttl_ms } => vec![format!("ok ttl={}", ttl_ms / 1000)],
            KvResponse::LeaseTimeToLive {
                remaining_ms,
                granted_ttl_ms,
                keys,
            } => {
                let mut line = format!(
                    "ok ttl={} granted={}",
                    remaining(*remaining_ms),
                    granted_ttl_ms / 1000
                );
                if let Some(keys) = keys {
                    line.push_str(&format!(" keys={}", crate::render::list(keys)));
                }
                vec![line]
            }
        }
    }

    /// An op's answer inside a transaction, as etcd's inner responses carry no header,
    /// indented by two spaces per `depth`: `put`, `get count=C` and its `KV` lines (one
    /// level deeper), `delete deleted=N`, `txn succeeded=B` and its ops' lines (one deeper).
    fn txn_lines(&mut self, responses: &[KvResponse], depth: usize, lines: &mut Vec<String>) {
        let indent = "  ".repeat(depth);
        for response in responses {
            match response {
                KvResponse::Put { .. } => lines.push(format!("{indent}put")),
                KvResponse::Get { kvs, .. } => {
                    lines.push(format!("{indent}get count={}", kvs.len()));
                    for kv in kvs {
                        let kv = self.kv(kv);
                        lines.push(format!("{indent}  {kv}"));
                    }
                }
                KvResponse::Delete { deleted, .. } => {
                    lines.push(format!("{indent}delete deleted={deleted}"))
                }
                KvResponse::Txn {
                    succeeded,
                    responses,
                    ..
                } => {
                    lines.push(format!("{indent}txn succeeded={succeeded}"));
                    self.txn_lines(responses, depth + 1, lines);
                }
                other => lines.push(format!("{indent}{other:?}")),
            }
        }
    }

    fn kv(&mut self, kv: &KeyValue) -> String {
        let lease = match kv.lease {
            None | Some(0) => "none".to_string(),
            Some(id) => self.leases.name(id as i64),
        };
        format!(
            "{}={} create={} mod={} version={} lease={lease}",
            kv.key, kv.value, kv.create_revision, kv.mod_revision, kv.version
        )
    }
}

/// A get's options, built as the recorder builds `etcd-client`'s (the same builder names).
fn get_options(step: &Step) -> GetOptions {
    let mut options = GetOptions::new();
    if step.flag("prefix") {
        options = options.with_prefix();
    } else if let Some(end) = step.named("range_end") {
        options = options.with_range(end);
    }
    let int = |name| step.named_int(name).unwrap_or(0);
    options = options
        .with_revision(int("rev"))
        .with_limit(int("limit"))
        .with_min_mod_revision(int("min_mod"))
        .with_max_mod_revision(int("max_mod"))
        .with_min_create_revision(int("min_create"))
        .with_max_create_revision(int("max_create"));
    if step.named("sort_target").is_some() || step.named("sort_order").is_some() {
        let target = match step.named("sort_target").unwrap_or("key") {
            "version" => SortTarget::Version,
            "create" => SortTarget::Create,
            "mod" => SortTarget::Mod,
            "value" => SortTarget::Value,
            _ => SortTarget::Key,
        };
        let order = match step.named("sort_order").unwrap_or("none") {
            "ascend" => SortOrder::Ascend,
            "descend" => SortOrder::Descend,
            _ => SortOrder::None,
        };
        options = options.with_sort(target, order);
    }
    if step.flag("serializable") {
        options = options.with_serializable();
    }
    if step.flag("keys_only") {
        options = options.with_keys_only();
    }
    if step.flag("count_only") {
        options = options.with_count_only();
    }
    options
}

/// A lease id no server grants (a probe's lease role that was never granted).
pub(super) const UNGRANTED_LEASE: u64 = 0x7fff_ffff_ffff_fff1;

/// A remaining TTL as the probes write it: `live` while the lease lives; `-1` (gone) and
/// `0` stay exact.
fn remaining(remaining_ms: i64) -> String {
    if remaining_ms > 0 {
        "live".to_string()
    } else {
        remaining_ms.to_string()
    }
}

pub(super) fn get(key: &str, range_end: Option<String>) -> KvOperation {
    KvOperation::Get {
        key: key.into(),
        range_end,
        revision: None,
        consistency: ReadConsistency::Linearizable,
    }
}

/// An etcd error as the probes write it: the gRPC code and etcd's message.
fn error_line(error: &OpError) -> String {
    let (code, message) = match error {
        OpError::Kv(KvError::EmptyKey) => (
            "InvalidArgument",
            "etcdserver: key is not provided".to_string(),
        ),
        OpError::Kv(KvError::LeaseNotFound { .. }) => (
            "NotFound",
            "etcdserver: requested lease not found".to_string(),
        ),
        OpError::Kv(KvError::Compacted { .. }) => (
            "OutOfRange",
            "etcdserver: mvcc: required revision has been compacted".to_string(),
        ),
        OpError::Kv(KvError::FutureRevision { .. }) => (
            "OutOfRange",
            "etcdserver: mvcc: required revision is a future revision".to_string(),
        ),
        OpError::Kv(KvError::EmptyTransaction) => {
            ("InvalidArgument", "empty transaction (model)".to_string())
        }
        OpError::Kv(KvError::DuplicateKey) => (
            "InvalidArgument",
            "etcdserver: duplicate key given in txn request".to_string(),
        ),
        OpError::Kv(KvError::Other { message }) => ("Unknown", message.clone()),
        other => ("Unknown", format!("{other:?}")),
    };
    format!("err {code}: {message}")
}
