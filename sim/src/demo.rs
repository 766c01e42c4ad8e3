//! A small replicated-ledger workload that exercises every primitive of the world.
//!
//! Servers append client values to a log on their disk (synced before replying), gossip
//! heartbeats to each other over datagrams, and count their boots in a durable cell.
//! Clients connect over FIFO connections, append values with local-clock timeouts and record
//! every operation (completed, failed, or unknown) in the history. It is not a consensus
//! protocol: it is the `coordsim demo` command and the determinism tests' workload.

use crate::{
    history::{OpError, OpResult, Operation, Response},
    net::{Connection, DatagramNetwork, StreamNetwork},
    node::NodeId,
    world::{NodeContext, Sim},
};
use rand::{Rng, seq::SliceRandom};
use std::time::Duration;

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

/// How much work the demo does.
#[derive(Clone, Copy, Debug)]
pub struct DemoWorkload {
    /// Appends each client performs.
    pub appends_per_client: u32,
}

impl Default for DemoWorkload {
    fn default() -> Self {
        Self {
            appends_per_client: 50,
        }
    }
}

const HEARTBEAT_INTERVAL: Duration = Duration::from_millis(100);
const CONNECT_TIMEOUT: Duration = Duration::from_millis(500);
const REPLY_TIMEOUT: Duration = Duration::from_secs(1);

/// The demo scenario: start ledger servers, run the clients, wait for the fault phase to end.
pub async fn ledger_scenario(sim: Sim, workload: DemoWorkload) {
    let gossip: DatagramNetwork<Heartbeat> = sim.datagram_network();
    let ledger: StreamNetwork<LedgerFrame> = sim.stream_network();
    let servers = sim.servers();
    for &server in &servers {
        let (gossip, ledger, servers) = (gossip.clone(), ledger.clone(), servers.clone());
        sim.start(server, move |context| {
            ledger_server(context, gossip.clone(), ledger.clone(), servers.clone())
        });
    }
    let clients: Vec<_> = sim
        .clients()
        .into_iter()
        .map(|client| {
            let context = sim.node(client);
            let (ledger, servers) = (ledger.clone(), servers.clone());
            sim.spawn(client, ledger_client(context, ledger, servers, workload))
        })
        .collect();
    for client in clients {
        // A crashed client's task is gone; its unfinished operation stays open in the history.
        let _ = client.await;
    }
    sim.fault_phase_ended().await;
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
    madsim::task::spawn_local(async move {
        let mut count = 0;
        loop {
            clock.sleep(HEARTBEAT_INTERVAL).await;
            count += 1;
            for &peer in servers.iter().filter(|&&peer| peer != me) {
                sender.send(peer, Heartbeat { count });
            }
        }
    });
    madsim::task::spawn_local(async move {
        loop {
            let _heartbeat = endpoint.recv().await;
        }
    });
    loop {
        let connection = listener.accept().await;
        let (log, disk) = (log.clone(), disk.clone());
        madsim::task::spawn_local(async move {
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

async fn ledger_client(
    context: NodeContext,
    ledger: StreamNetwork<LedgerFrame>,
    servers: Vec<NodeId>,
    workload: DemoWorkload,
) {
    let mut rng = context.rng("workload");
    let history = context.history();
    let clock = context.clock().clone();
    let mut connection: Option<Connection<LedgerFrame>> = None;
    for _ in 0..workload.appends_per_client {
        let value = u64::from(rng.r#gen::<u32>());
        let op_id = history.invoke(
            0,
            Operation::Other {
                name: "append".into(),
                argument: value.into(),
            },
        );
        let live = match connection.take().filter(|c| !c.is_broken()) {
            Some(live) => live,
            None => {
                let server = *servers.choose(&mut rng).expect("at least one server");
                match ledger.connect(context.id(), server, CONNECT_TIMEOUT).await {
                    Ok(fresh) => fresh,
                    Err(error) => {
                        let error = OpError::Other {
                            message: format!("connect to {server}: {error}"),
                        };
                        history.complete(op_id, OpResult::Fail { error });
                        clock.sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                }
            }
        };
        if let Err(broken) = live.send(LedgerFrame::Append { op: op_id.0, value }) {
            let error = OpError::Other {
                message: broken.to_string(),
            };
            history.complete(op_id, OpResult::Fail { error });
            continue;
        }
        let result = match clock.timeout(REPLY_TIMEOUT, live.recv()).await {
            Ok(Ok(LedgerFrame::Appended { op, length })) if op == op_id.0 => {
                connection = Some(live);
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
        history.complete(op_id, result);
        let pause_ms = rng.gen_range(10..100);
        clock.sleep(Duration::from_millis(pause_ms)).await;
    }
}
