//! The ZooKeeper probes through `zookeeper-client` 0.11, one session per client role `cN`.

mod multi;
mod raw;
mod render;
mod watches;

use crate::{Failure, server::zk_port};
use probe_format::{Probe, Roles, Step, StepKind};
use std::time::Duration;
use tokio::time::timeout;
use watches::Watch;
use zookeeper_client::{Acls, AddWatchMode, Client, CreateMode};

/// How long one operation may take before the step answers `err Timeout`.
const OP_LIMIT: Duration = Duration::from_secs(10);
/// How long `wait` waits when the step does not say.
const WAIT_DEFAULT_MS: i64 = 1000;

/// One probe's clients, sessions and watches.
struct Run {
    clients: Vec<Option<Client>>,
    sessions: Roles,
    // A Vec, not a map: a handful of watches, looked up by role.
    watches: Vec<(String, Watch)>,
}

/// Runs the probe's steps against the ZooKeeper on zk_port(); one answer per step.
pub async fn run(probe: &Probe) -> Result<Vec<Vec<String>>, Failure> {
    let mut run = Run {
        clients: (0..10).map(|_| None).collect(),
        sessions: Roles::new('s'),
        watches: Vec::new(),
    };
    let mut answers = Vec::new();
    for step in &probe.steps {
        let answer = match step.kind {
            StepKind::Sleep { duration_ms } => {
                tokio::time::sleep(Duration::from_millis(duration_ms)).await;
                vec!["ok".to_string()]
            }
            StepKind::Client { client, verb } => run.step(step, client as usize, verb).await?,
        };
        answers.push(answer);
    }
    for client in run.clients.iter_mut() {
        close(client.take()).await;
    }
    Ok(answers)
}

/// Runs one client operation with OP_LIMIT; a timeout is the step's answer.
async fn limited<T>(
    operation: impl Future<Output = Result<T, zookeeper_client::Error>>,
) -> Result<T, zookeeper_client::Error> {
    timeout(OP_LIMIT, operation)
        .await
        .unwrap_or(Err(zookeeper_client::Error::Timeout))
}

/// Closes a session and waits until the server has closed it (its ephemerals are gone then).
async fn close(client: Option<Client>) {
    let Some(client) = client else { return };
    let mut state = client.state_watcher();
    // The crate sends closeSession when the last handle of the client is dropped.
    drop(client);
    let _ = timeout(OP_LIMIT, async {
        while !state.peek_state().is_terminated() {
            state.changed().await;
        }
    })
    .await;
}

/// Expires a session from outside, the classic way: a second client attaches to it with its
/// id and password and closes it; the first client learns on its next connection that the
/// session is gone. The first client may win the session back before the second one's
/// handshake completes (its connect then never finishes: seen in about one run in three on
/// Debian's 3.8.0), so the second one tries again, up to ten times. Answers once the first client's state is terminal:
/// `ok state=Expired`.
async fn expire(client: &Client) -> String {
    const ATTEMPTS: usize = 10;
    const ATTEMPT_LIMIT: Duration = Duration::from_secs(3);
    let address = format!("127.0.0.1:{}", zk_port());
    let mut state = client.state_watcher();
    for _ in 0..ATTEMPTS {
        if state.peek_state().is_terminated() {
            break;
        }
        let connector = Client::connector().with_session(client.session().clone());
        let attempt = timeout(ATTEMPT_LIMIT, connector.connect(&address)).await;
        if let Ok(Ok(other)) = attempt {
            close(Some(other)).await;
        }
        let _ = timeout(ATTEMPT_LIMIT, async {
            while !state.peek_state().is_terminated() {
                state.changed().await;
            }
        })
        .await;
    }
    format!("ok state={}", client.state())
}

fn mode(step: &Step) -> Result<CreateMode, Failure> {
    Ok(match step.named("mode").unwrap_or("persistent") {
        "persistent" => CreateMode::Persistent,
        "ephemeral" => CreateMode::Ephemeral,
        "persistent_sequential" => CreateMode::PersistentSequential,
        "ephemeral_sequential" => CreateMode::EphemeralSequential,
        "container" => CreateMode::Container,
        other => {
            return Err(Failure::bad_step(
                step,
                "mode",
                format!(
                    "persistent, ephemeral, persistent_sequential, ephemeral_sequential or container, not `{other}`"
                ),
            ));
        }
    })
}

fn version(step: &Step) -> Option<i32> {
    step.named_int("version").map(|v| v as i32)
}

impl Run {
    fn client(&self, step: &Step, index: usize) -> Result<&Client, Failure> {
        self.clients[index].as_ref().ok_or_else(|| {
            Failure::bad_step(
                step,
                "client",
                format!("`c{index} connect` before c{index} is used"),
            )
        })
    }

    /// Keeps a watch under the step's `watch=wK` role; `wait` reads its events.
    fn keep_watch(&mut self, step: &Step, watch: Watch) {
        let Some(role) = step.named("watch") else {
            return;
        };
        self.watches.retain(|(r, _)| r != role);
        self.watches.push((role.to_string(), watch));
    }

    async fn wait(&mut self, step: &Step) -> Vec<String> {
        let within =
            Duration::from_millis(step.named_int("within_ms").unwrap_or(WAIT_DEFAULT_MS) as u64);
        let role = step.arg(0);
        match self.watches.iter_mut().find(|(r, _)| r == role) {
            Some((_, watch)) => vec![watch.wait(within).await],
            // A watch whose operation failed was never set: it waits in vain.
            None => {
                tokio::time::sleep(within).await;
                vec!["none".to_string()]
            }
        }
    }

    async fn remove_watch(&mut self, step: &Step) -> Result<Vec<String>, Failure> {
        let role = step.arg(0);
        let removed = match self.watches.iter_mut().find(|(r, _)| r == role) {
            Some((_, watch)) => watch.remove().await,
            None => None,
        };
        removed.map(|line| vec![line]).ok_or_else(|| {
            Failure::bad_step(
                step,
                "watch",
                format!(
                    "a watch that is set and not waited on until it fired (zookeeper-client has no watcher left to remove `{role}` by)"
                ),
            )
        })
    }

    /// One client step's answer.
    async fn step(
        &mut self,
        step: &Step,
        index: usize,
        verb: &str,
    ) -> Result<Vec<String>, Failure> {
        let one = |line: String| Ok(vec![line]);
        let err = |e: &zookeeper_client::Error| Ok(vec![render::error(e)]);
        match verb {
            "connect" => {
                let mut connector = Client::connector();
                if let Some(ms) = step.named_int("timeout_ms") {
                    connector = connector.with_session_timeout(Duration::from_millis(ms as u64));
                }
                let address = format!("127.0.0.1:{}", zk_port());
                match limited(connector.connect(&address)).await {
                    Ok(client) => {
                        let line = format!(
                            "ok session={} timeout_ms={}",
                            self.sessions.name(client.session_id().0),
                            client.session_timeout().as_millis()
                        );
                        close(self.clients[index].replace(client)).await;
                        one(line)
                    }
                    Err(e) => err(&e),
                }
            }
            "close" => {
                self.client(step, index)?;
                close(self.clients[index].take()).await;
                one("ok".to_string())
            }
            "remove_watches" => {
                let kind = match step.named("kind").unwrap_or("any") {
                    "children" => 1,
                    "data" => 2,
                    "any" => 3,
                    other => {
                        return Err(Failure::bad_step(
                            step,
                            "kind",
                            format!("children, data or any, not `{other}`"),
                        ));
                    }
                };
                let port = zk_port();
                let path = step.arg(0).to_string();
                let asked =
                    tokio::task::spawn_blocking(move || raw::remove_watches(port, &path, kind));
                one(match asked.await {
                    Ok(Ok(0)) => "ok".to_string(),
                    // KeeperException.Code.NOWATCHER.
                    Ok(Ok(-121)) => "err NoWatcher".to_string(),
                    Ok(Ok(code)) => format!("err Other (code {code})"),
                    Ok(Err(e)) => format!("err Other ({e})"),
                    Err(e) => format!("err Other ({e})"),
                })
            }
            "expire" => {
                let client = self.client(step, index)?.clone();
                one(expire(&client).await)
            }
            "wait" => Ok(self.wait(step).await),
            "remove_watch" => self.remove_watch(step).await,
            _ => self.operation(step, index, verb).await,
        }
    }

    /// A step on a connected client.
    async fn operation(
        &mut self,
        step: &Step,
        index: usize,
        verb: &str,
    ) -> Result<Vec<String>, Failure> {
        let client = self.client(step, index)?.clone();
        let one = |line: String| Ok(vec![line]);
        let err = |e: &zookeeper_client::Error| Ok(vec![render::error(e)]);
        let path = step.args.first().map(String::as_str).unwrap_or("/");
        let watched = step.named("watch").is_some();
        match verb {
            // zookeeper-client 0.11 always sends create2 (its `create` answers the new node's
            // Stat too): `create` shows the path, `create2` the path and the Stat.
            "create" | "create2" => {
                let acl = render::parse_acl(step.named("acl").unwrap_or("open"))
                    .map_err(|expected| Failure::bad_step(step, "acl", expected))?;
                let options = mode(step)?.with_acls(Acls::new(&acl));
                let data = step.named("data").unwrap_or("").as_bytes();
                match limited(client.create(path, data, &options)).await {
                    Ok((stat, sequence)) => {
                        let sequential = matches!(
                            step.named("mode"),
                            Some("persistent_sequential" | "ephemeral_sequential")
                        );
                        let created = match sequential {
                            true => format!("ok path={path}{sequence}"),
                            false => format!("ok path={path}"),
                        };
                        match verb {
                            "create2" => one(format!(
                                "{created} {}",
                                render::stat(&stat, &mut self.sessions)
                            )),
                            _ => one(created),
                        }
                    }
                    Err(e) => err(&e),
                }
            }
            "delete" => match limited(client.delete(path, version(step))).await {
                Ok(()) => one("ok".to_string()),
                Err(e) => err(&e),
            },
            "set" => {
                let data = step.arg(1).as_bytes();
                match limited(client.set_data(path, data, version(step))).await {
                    Ok(stat) => one(format!("ok {}", render::stat(&stat, &mut self.sessions))),
                    Err(e) => err(&e),
                }
            }
            "get" if watched => match limited(client.get_and_watch_data(path)).await {
                Ok((data, stat, watcher)) => {
                    self.keep_watch(step, Watch::Set(watcher));
                    one(self.data_line(&data, &stat))
                }
                Err(e) => err(&e),
            },
            "get" => match limited(client.get_data(path)).await {
                Ok((data, stat)) => one(self.data_line(&data, &stat)),
                Err(e) => err(&e),
            },
            "exists" if watched => match limited(client.check_and_watch_stat(path)).await {
                Ok((stat, watcher)) => {
                    self.keep_watch(step, Watch::Set(watcher));
                    one(self.exists_line(stat.as_ref()))
                }
                Err(e) => err(&e),
            },
            "exists" => match limited(client.check_stat(path)).await {
                Ok(stat) => one(self.exists_line(stat.as_ref())),
                Err(e) => err(&e),
            },
            "children" if watched => match limited(client.get_and_watch_children(path)).await {
                Ok((children, stat, watcher)) => {
                    self.keep_watch(step, Watch::Set(watcher));
                    one(self.children_line(children, &stat))
                }
                Err(e) => err(&e),
            },
            "children" => match limited(client.get_children(path)).await {
                Ok((children, stat)) => one(self.children_line(children, &stat)),
                Err(e) => err(&e),
            },
            "add_watch" => {
                let mode = match step.named("mode").unwrap_or("persistent") {
                    "persistent" => AddWatchMode::Persistent,
                    "persistent_recursive" => AddWatchMode::PersistentRecursive,
                    other => {
                        return Err(Failure::bad_step(
                            step,
                            "mode",
                            format!("persistent or persistent_recursive, not `{other}`"),
                        ));
                    }
                };
                match limited(client.watch(path, mode)).await {
                    Ok(watcher) => {
                        self.keep_watch(step, Watch::persistent(watcher));
                        one("ok".to_string())
                    }
                    Err(e) => err(&e),
                }
            }
            "sync" => match limited(client.sync(path)).await {
                Ok(()) => one("ok".to_string()),
                Err(e) => err(&e),
            },
            "multi" => multi::run(&client, step, &mut self.sessions).await,
            "multi_read" => multi::run_read(&client, step, &mut self.sessions).await,
            "auth" => {
                let credentials = step.arg(1).as_bytes();
                match limited(client.auth(step.arg(0), credentials)).await {
                    Ok(()) => one("ok".to_string()),
                    Err(e) => err(&e),
                }
            }
            "get_acl" => match limited(client.get_acl(path)).await {
                Ok((acl, stat)) => one(format!(
                    "ok {} {}",
                    render::acl(&acl),
                    render::stat(&stat, &mut self.sessions)
                )),
                Err(e) => err(&e),
            },
            "set_acl" => {
                let acl = render::parse_acl(step.arg(1))
                    .map_err(|expected| Failure::bad_step(step, "acl", expected))?;
                match limited(client.set_acl(path, &acl, version(step))).await {
                    Ok(stat) => one(format!("ok {}", render::stat(&stat, &mut self.sessions))),
                    Err(e) => err(&e),
                }
            }
            "ephemerals" => match limited(client.list_ephemerals(path)).await {
                Ok(mut paths) => {
                    // Compared sorted: the server answers in its hash order (README).
                    paths.sort();
                    one(format!("ok paths=[{}]", paths.join(",")))
                }
                Err(e) => err(&e),
            },
            "count" => match limited(client.count_descendants_number(path)).await {
                Ok(number) => one(format!("ok number={number}")),
                Err(e) => err(&e),
            },
            other => Err(Failure::bad_step(
                step,
                "verb",
                format!("a ZooKeeper verb, not `{other}`"),
            )),
        }
    }

    fn data_line(&mut self, data: &[u8], stat: &zookeeper_client::Stat) -> String {
        format!(
            "ok data={} {}",
            String::from_utf8_lossy(data),
            render::stat(stat, &mut self.sessions)
        )
    }

    fn exists_line(&mut self, stat: Option<&zookeeper_client::Stat>) -> String {
        match stat {
            Some(stat) => format!("ok {}", render::stat(stat, &mut self.sessions)),
            None => "ok none".to_string(),
        }
    }

    /// Children sorted: the server answers in its hash order (README, "Normalisation").
    fn children_line(
        &mut self,
        mut children: Vec<String>,
        stat: &zookeeper_client::Stat,
    ) -> String {
        children.sort();
        format!(
            "ok children=[{}] {}",
            children.join(","),
            render::stat(stat, &mut self.sessions)
        )
    }
}
