//! The etcd probes through `etcd-client` 0.21, one client per role `cN`.

mod txn;
mod watch;

use crate::{Failure, server::etcd_port};
use etcd_client::{
    Client, CompactionOptions, DeleteOptions, Error, GetOptions, KeyValue, PutOptions, SortOrder,
    SortTarget,
};
use probe_format::{Probe, Roles, Step, StepKind};
use std::time::Duration;
use tokio::time::timeout;
use watch::Watch;

/// How long one operation may take before the step answers `err Timeout`.
const OP_LIMIT: Duration = Duration::from_secs(10);
/// How long the server may take to elect itself and serve a read after its port opened.
const READY_LIMIT: Duration = Duration::from_secs(30);
/// How long `next` waits when the step does not say.
const NEXT_DEFAULT_MS: i64 = 1000;
/// The id a lease role names when the probe never granted it: an id no server granted.
const NEVER_GRANTED: i64 = 0x0c00_0d51_0000_0001;

/// One probe's clients, leases and watches.
struct Run {
    clients: Vec<Option<Client>>,
    leases: Roles,
    watches: Vec<(String, Watch)>,
}

fn address() -> String {
    format!("127.0.0.1:{}", etcd_port())
}

/// Waits until the one-member cluster has elected itself and serves a linearizable read
/// (a read changes no revision).
async fn wait_ready() -> Result<(), Failure> {
    let unready = || {
        Failure::Server(format!(
            "etcd on {} did not serve a read within {} s",
            address(),
            READY_LIMIT.as_secs()
        ))
    };
    timeout(READY_LIMIT, async {
        loop {
            if let Ok(mut client) = Client::connect([address()], None).await
                && client.get("coordsim-ready", None).await.is_ok()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .map_err(|_| unready())
}

/// Runs the probe's steps against the etcd on etcd_port(); one answer per step.
pub async fn run(probe: &Probe) -> Result<Vec<Vec<String>>, Failure> {
    wait_ready().await?;
    let mut run = Run {
        clients: (0..10).map(|_| None).collect(),
        leases: Roles::new('l'),
        watches: Vec::new(),
    };
    let mut answers = Vec::new();
    for step in &probe.steps {
        let answer = match step.kind {
            StepKind::Sleep { duration_ms } => {
                tokio::time::sleep(Duration::from_millis(duration_ms)).await;
                vec!["ok".to_string()]
            }
            StepKind::Client { client, verb } => {
                let mut client = run.client(client as usize).await?;
                match timeout(OP_LIMIT, run.step(&mut client, step, verb)).await {
                    Ok(answer) => answer?,
                    Err(_) => vec!["err Timeout".to_string()],
                }
            }
        };
        answers.push(answer);
    }
    Ok(answers)
}

/// A key-value: `KEY=VALUE create=R mod=R version=V lease=lK|none`.
fn kv(kv: &KeyValue, leases: &mut Roles) -> String {
    let lease = match kv.lease() {
        0 => "none".to_string(),
        id => leases.name(id),
    };
    format!(
        "{}={} create={} mod={} version={} lease={lease}",
        String::from_utf8_lossy(kv.key()),
        String::from_utf8_lossy(kv.value()),
        kv.create_revision(),
        kv.mod_revision(),
        kv.version()
    )
}

/// The id a lease role names (NEVER_GRANTED for a role the probe never granted); a number
/// stands for itself (`0`: no lease).
fn lease_id(role: &str, leases: &Roles) -> i64 {
    role.parse()
        .ok()
        .or_else(|| leases.id(role))
        .unwrap_or(NEVER_GRANTED)
}

/// An error: `err CODE: MESSAGE` with the gRPC code and etcd's message.
fn error(error: &Error) -> Vec<String> {
    vec![match error {
        Error::GRpcStatus(status) => format!("err {:?}: {}", status.code(), status.message()),
        other => format!("err Other ({other})"),
    }]
}

fn revision(header: Option<&etcd_client::ResponseHeader>) -> i64 {
    header.map(|h| h.revision()).unwrap_or(-1)
}

/// A range's end from `prefix` or `range_end=K`.
enum Range<'a> {
    One,
    Prefix,
    To(&'a str),
}

fn range(step: &Step) -> Range<'_> {
    match (step.flag("prefix"), step.named("range_end")) {
        (true, _) => Range::Prefix,
        (false, Some(end)) => Range::To(end),
        (false, None) => Range::One,
    }
}

/// A get's range options: `limit`, `sort_target`/`sort_order`, `keys_only`, `count_only` and
/// the revision filters, as the model's runner reads them (a bound left out is not sent).
fn range_options(step: &Step, mut options: GetOptions) -> GetOptions {
    if let Some(limit) = step.named_int("limit") {
        options = options.with_limit(limit);
    }
    if let Some(revision) = step.named_int("min_mod") {
        options = options.with_min_mod_revision(revision);
    }
    if let Some(revision) = step.named_int("max_mod") {
        options = options.with_max_mod_revision(revision);
    }
    if let Some(revision) = step.named_int("min_create") {
        options = options.with_min_create_revision(revision);
    }
    if let Some(revision) = step.named_int("max_create") {
        options = options.with_max_create_revision(revision);
    }
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
    if step.flag("keys_only") {
        options = options.with_keys_only();
    }
    if step.flag("count_only") {
        options = options.with_count_only();
    }
    options
}

impl Run {
    /// Client `cN`, connected on first use.
    async fn client(&mut self, index: usize) -> Result<Client, Failure> {
        if self.clients[index].is_none() {
            let client = Client::connect([address()], None)
                .await
                .map_err(|e| Failure::Server(format!("etcd on {}: {e}", address())))?;
            self.clients[index] = Some(client);
        }
        Ok(self.clients[index].clone().expect("connected above"))
    }

    fn lease(&self, step: &Step, key: &str) -> Option<i64> {
        step.named(key).map(|role| lease_id(role, &self.leases))
    }

    async fn step(
        &mut self,
        client: &mut Client,
        step: &Step,
        verb: &str,
    ) -> Result<Vec<String>, Failure> {
        let key = step.args.first().map(String::as_str).unwrap_or("");
        Ok(match verb {
            "put" => {
                let mut options = PutOptions::new();
                if let Some(id) = self.lease(step, "lease") {
                    options = options.with_lease(id);
                }
                if step.flag("prev_kv") {
                    options = options.with_prev_key();
                }
                match client.put(key, step.arg(1), Some(options)).await {
                    Ok(put) => {
                        let mut lines = vec![format!("ok rev={}", revision(put.header()))];
                        if let Some(prev) = put.prev_key() {
                            lines.push(format!("  prev {}", kv(prev, &mut self.leases)));
                        }
                        lines
                    }
                    Err(e) => error(&e),
                }
            }
            "get" => {
                let mut options = GetOptions::new();
                options = match range(step) {
                    Range::One => options,
                    Range::Prefix => options.with_prefix(),
                    Range::To(end) => options.with_range(end),
                };
                if let Some(rev) = step.named_int("rev") {
                    options = options.with_revision(rev);
                }
                if step.flag("serializable") {
                    options = options.with_serializable();
                }
                match client.get(key, Some(range_options(step, options))).await {
                    Ok(get) => {
                        let mut lines = vec![format!(
                            "ok rev={} count={} more={}",
                            revision(get.header()),
                            get.count(),
                            get.more()
                        )];
                        for pair in get.kvs() {
                            lines.push(format!("  {}", kv(pair, &mut self.leases)));
                        }
                        lines
                    }
                    Err(e) => error(&e),
                }
            }
            "delete" => {
                let mut options = DeleteOptions::new();
                options = match range(step) {
                    Range::One => options,
                    Range::Prefix => options.with_prefix(),
                    Range::To(end) => options.with_range(end),
                };
                if step.flag("prev_kv") {
                    options = options.with_prev_key();
                }
                match client.delete(key, Some(options)).await {
                    Ok(delete) => {
                        let mut lines = vec![format!(
                            "ok rev={} deleted={}",
                            revision(delete.header()),
                            delete.deleted()
                        )];
                        for prev in delete.prev_kvs() {
                            lines.push(format!("  prev {}", kv(prev, &mut self.leases)));
                        }
                        lines
                    }
                    Err(e) => error(&e),
                }
            }
            "txn" => {
                let request = txn::build(step, &self.leases)?;
                match client.txn(request).await {
                    Ok(response) => {
                        let mut lines = vec![format!(
                            "ok rev={} succeeded={}",
                            revision(response.header()),
                            response.succeeded()
                        )];
                        lines.extend(txn::answer_lines(response.op_responses(), &mut self.leases));
                        lines
                    }
                    Err(e) => error(&e),
                }
            }
            // Physical: etcd answers a compaction before it has dropped the old revisions from
            // its index, and a watch made in between would still see them; waiting for it makes
            // the answers the same on every run.
            "compact" => match client
                .compact(
                    step.arg_int(0),
                    Some(CompactionOptions::new().with_physical()),
                )
                .await
            {
                Ok(response) => vec![format!("ok rev={}", revision(response.header()))],
                Err(e) => error(&e),
            },
            "grant" | "revoke" | "ttl" | "keepalive" => self.lease_step(client, step, verb).await,
            "leases" => match client.leases().await {
                Ok(list) => {
                    // Sorted by role: etcd lists by expiry (README).
                    let mut roles: Vec<String> = list
                        .leases()
                        .iter()
                        .map(|status| self.leases.name(status.id()))
                        .collect();
                    roles.sort();
                    vec![format!("ok leases=[{}]", roles.join(","))]
                }
                Err(e) => error(&e),
            },
            "watch" | "next" | "cancel" | "progress" => self.watch_step(client, step, verb).await?,
            other => {
                return Err(Failure::bad_step(
                    step,
                    "verb",
                    format!("an etcd verb, not `{other}`"),
                ));
            }
        })
    }

    async fn lease_step(&mut self, client: &mut Client, step: &Step, verb: &str) -> Vec<String> {
        let id = || lease_id(step.arg(0), &self.leases);
        match verb {
            "grant" => match client.lease_grant(step.arg_int(0), None).await {
                Ok(grant) => vec![format!(
                    "ok lease={} ttl={}",
                    self.leases.name(grant.id()),
                    grant.ttl()
                )],
                Err(e) => error(&e),
            },
            "revoke" => match client.lease_revoke(id()).await {
                Ok(revoke) => vec![format!("ok rev={}", revision(revoke.header()))],
                Err(e) => error(&e),
            },
            "ttl" => match client
                .lease_time_to_live(
                    id(),
                    step.flag("keys")
                        .then(|| etcd_client::LeaseTimeToLiveOptions::new().with_keys()),
                )
                .await
            {
                Ok(ttl) => {
                    // Real time passes on the server: a live lease's remaining TTL is `live`.
                    let remaining = match ttl.ttl() {
                        t if t >= 1 && t <= ttl.granted_ttl() => "live".to_string(),
                        t => t.to_string(),
                    };
                    let mut line = format!("ok ttl={remaining} granted={}", ttl.granted_ttl());
                    if step.flag("keys") {
                        // Sorted: etcd answers in its map order (README).
                        let mut keys: Vec<String> = ttl
                            .keys()
                            .iter()
                            .map(|key| String::from_utf8_lossy(key).into_owned())
                            .collect();
                        keys.sort();
                        line.push_str(&format!(" keys=[{}]", keys.join(",")));
                    }
                    vec![line]
                }
                Err(e) => error(&e),
            },
            _ => match client.lease_keep_alive(id()).await {
                // The crate reads the first keep-alive's answer itself and keeps only the lease
                // id; a second keep-alive on the same stream shows the TTL the server grants.
                Ok((mut keeper, mut stream)) => {
                    let answer = match keeper.keep_alive().await {
                        Ok(()) => stream.message().await,
                        Err(e) => Err(e),
                    };
                    match answer {
                        Ok(Some(response)) => vec![format!("ok ttl={}", response.ttl())],
                        Ok(None) => vec!["err Other (keep-alive stream closed)".to_string()],
                        Err(e) => error(&e),
                    }
                }
                // The crate turns a keep-alive answered with TTL 0 (the lease is gone) into this
                // error, and only that answer (etcd-client 0.21, LeaseClient::keep_alive).
                Err(Error::LeaseKeepAliveError(message)) if message == "lease not found" => {
                    vec!["ok ttl=0".to_string()]
                }
                Err(e) => error(&e),
            },
        }
    }
}
