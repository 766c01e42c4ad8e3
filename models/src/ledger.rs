//! A small replicated ledger that exercises every primitive of the world.
//!
//! Servers append client values to a log on their disk (synced before replying), gossip
//! heartbeats to each other over datagrams, and count their boots in a durable cell.
//! Clients connect over FIFO connections, append values with local-clock timeouts and record
//! every operation (completed, failed, or unknown) in the history. It is not a consensus
//! protocol: it is the `coordsim demo` command's store and the determinism tests' workload.

use rand::{Rng, seq::SliceRandom};
use sim::{
    NodeContext, NodeId, Sim,
    history::{OpError, OpResult, Operation, Response},
    net::{Connection, DatagramNetwork, StreamNetwork},
};
use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

/// A heartbeat between servers.
#[derive(Clone, Debug)]
pub struct Heartbeat {
    /// The sender's count of heartbeats sent in this incarnation.
    pub count: u64,
}

/// A message on a client connection.
#[derive(Clone, Debug)]
pub enum LedgerFrame {
    /// Client to server: append `value`.
    Append {
        /// The client's operation number.
        op: u64,
        /// The value.
        value: u64,
    },
    /// Server to client: appended, the log now has `length` entries.
    Appended {
        /// The operation number.
        op: u64,
        /// Log length after the append.
        length: u64,
    },
}

const HEARTBEAT_INTERVAL: Duration = Duration::from_millis(100);
const CONNECT_TIMEOUT: Duration = Duration::from_millis(500);
const REPLY_TIMEOUT: Duration = Duration::from_secs(1);

/// A running ledger: its servers and the networks to reach them.
#[derive(Clone)]
pub struct Ledger {
    ledger: StreamNetwork<LedgerFrame>,
    servers: Vec<NodeId>,
}

impl Ledger {
    /// Starts a ledger server on every server node of `sim`.
    pub fn start(sim: &Sim) -> Self {
        let gossip: DatagramNetwork<Heartbeat> = sim.datagram_network();
        let ledger: StreamNetwork<LedgerFrame> = sim.stream_network();
        let servers = sim.servers();
        for &server in &servers {
            let (gossip, ledger, servers) = (gossip.clone(), ledger.clone(), servers.clone());
            sim.start(server, move |context| {
                ledger_server(context, gossip.clone(), ledger.clone(), servers.clone())
            });
        }
        Self { ledger, servers }
    }

    /// A client on `context`'s node: up to `appends` appends, stopping early at `stop`.
    /// With `panic_at`, it panics at that append (to test how a run reports a model that
    /// panics).
    pub async fn run_client(
        &self,
        context: NodeContext,
        appends: u32,
        panic_at: Option<u32>,
        stop: Arc<AtomicBool>,
    ) {
        let mut client = LedgerClient::new(self, &context);
        let mut rng = context.rng("workload");
        for append in 0..appends {
            assert!(
                panic_at != Some(append),
                "{}: asked to panic at append {append}",
                context.id()
            );
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let value = u64::from(rng.r#gen::<u32>());
            if let OpResult::Fail { .. } = client.append(value).await {
                context.clock().sleep(Duration::from_millis(100)).await;
            }
            let pause_ms = rng.gen_range(10..100);
            context.clock().sleep(Duration::from_millis(pause_ms)).await;
        }
    }

    /// Appends until one append is acknowledged (after a heal, every client can).
    pub async fn append_until_acknowledged(&self, context: NodeContext, value: u64) {
        let mut client = LedgerClient::new(self, &context);
        while !matches!(client.append(value).await, OpResult::Ok { .. }) {
            context.clock().sleep(Duration::from_millis(100)).await;
        }
    }
}

async fn ledger_server(
    context: NodeContext,
    gossip: DatagramNetwork<Heartbeat>,
    ledger: StreamNetwork<LedgerFrame>,
    servers: Vec<NodeId>,
) {
    let disk = context.disk().clone();
    let log = disk
        .open_log::<u64>("ledger")
        .expect("the ledger file has one type");
    let boots = disk
        .open_cell::<u64>("boots")
        .expect("the boots file has one type");
    let boot = boots.get().unwrap_or(0) + 1;
    boots.set(boot);
    disk.sync().await;
    context.history().note(format!(
        "{} boot {boot} with {} durable ledger entries",
        context.id(),
        log.len()
    ));
    let listener = ledger.listen(context.id());
    let endpoint = gossip.endpoint(context.id());
    let sender = endpoint.clone();
    let clock = context.clock().clone();
    let me = context.id();
    sim::task::spawn_local(async move {
        let mut count = 0;
        loop {
            clock.sleep(HEARTBEAT_INTERVAL).await;
            count += 1;
            for &peer in servers.iter().filter(|&&peer| peer != me) {
                sender.send(peer, Heartbeat { count });
            }
        }
    });
    sim::task::spawn_local(async move {
        loop {
            let _heartbeat = endpoint.recv().await;
        }
    });
    loop {
        let connection = listener.accept().await;
        let (log, disk) = (log.clone(), disk.clone());
        sim::task::spawn_local(async move {
            while let Ok(LedgerFrame::Append { op, value }) = connection.recv().await {
                log.push(value);
                disk.sync().await;
                let length = log.len() as u64;
                if connection
                    .send(LedgerFrame::Appended { op, length })
                    .is_err()
                {
                    break;
                }
            }
        });
    }
}

/// One client's connection to the ledger, re-established on demand.
struct LedgerClient {
    ledger: Ledger,
    context: NodeContext,
    rng: rand_chacha::ChaCha8Rng,
    connection: Option<Connection<LedgerFrame>>,
}

impl LedgerClient {
    fn new(ledger: &Ledger, context: &NodeContext) -> Self {
        Self {
            ledger: ledger.clone(),
            context: context.clone(),
            rng: context.rng("ledger-servers"),
            connection: None,
        }
    }

    /// Appends `value`, recording the operation and how it ended.
    async fn append(&mut self, value: u64) -> OpResult {
        let history = self.context.history();
        let clock = self.context.clock().clone();
        let op_id = history.invoke(
            0,
            Operation::Other {
                name: "append".into(),
                argument: value.into(),
            },
        );
        let live = match self.connection.take().filter(|c| !c.is_broken()) {
            Some(live) => live,
            None => {
                let server = *self
                    .ledger
                    .servers
                    .choose(&mut self.rng)
                    .expect("at least one server");
                match self
                    .ledger
                    .ledger
                    .connect(self.context.id(), server, CONNECT_TIMEOUT)
                    .await
                {
                    Ok(fresh) => fresh,
                    Err(error) => {
                        let error = OpError::Other {
                            message: format!("connect to {server}: {error}"),
                        };
                        let result = OpResult::Fail { error };
                        history.complete(op_id, result.clone());
                        return result;
                    }
                }
            }
        };
        if let Err(broken) = live.send(LedgerFrame::Append { op: op_id.0, value }) {
            let error = OpError::Other {
                message: broken.to_string(),
            };
            let result = OpResult::Fail { error };
            history.complete(op_id, result.clone());
            return result;
        }
        let result = match clock.timeout(REPLY_TIMEOUT, live.recv()).await {
            Ok(Ok(LedgerFrame::Appended { op, length })) if op == op_id.0 => {
                self.connection = Some(live);
                OpResult::Ok {
                    response: Response::Other {
                        value: length.into(),
                    },
                }
            }
            Ok(Ok(other)) => OpResult::Unknown {
                reason: format!("unexpected frame {other:?}"),
            },
            Ok(Err(broken)) => OpResult::Unknown {
                reason: broken.to_string(),
            },
            Err(_) => OpResult::Unknown {
                reason: "no reply within the timeout".into(),
            },
        };
        history.complete(op_id, result.clone());
        result
    }
}
