//! The fenced resource: a storage service on its own node that lock holders and leaders
//! write to over the network, the way a real critical section writes to a database or a
//! file server.
//!
//! With [`Fencing::On`] it keeps the highest fencing token it has accepted (durably, so a
//! restart does not forget it) and rejects a write whose token is lower: a client that
//! still believes it holds a lock it lost (a paused process, an expired session) cannot
//! overwrite what the new holder wrote (Kleppmann, "How to do distributed locking", 2016).
//! With [`Fencing::Off`] it accepts everything, which is what a resource that knows nothing
//! of the lock does. Either way it records every write it receives, with the writer, its
//! token and the verdict, at the resource node: the resource checkers judge those records.
//!
//! With [`RecipeBug::CheckNotAtomic`] (`resource.check_not_atomic`) it checks the token,
//! then writes the value to its disk and waits for that write to be durable, and only then
//! commits the write (raises the highest token, records the verdict): a second writer whose
//! write arrives in that gap passes the same check, and the later commit wins, whichever
//! token is higher. With [`RecipeBug::RejectsEqualToken`] (`resource.rejects_equal_token`)
//! it also rejects a token equal to the highest, refusing a holder's second write.

use crate::recipes::shared::bugs::{RecipeBug, RecipeBugs};
use serde::{Deserialize, Serialize};
use sim::{
    NodeContext, NodeId, Sim,
    history::{Event, RecipeEvent, ResourceVerdict},
    net::{Connection, StreamNetwork},
};
use std::time::Duration;

/// Whether the resource checks fencing tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fencing {
    /// Reject a write whose token is lower than the highest accepted.
    #[default]
    On,
    /// Accept every write.
    Off,
}

/// A message on a resource connection.
#[derive(Clone, Debug)]
pub enum ResourceFrame {
    /// Client to resource: write `value`, fenced by `token`.
    Write {
        /// The client's request number on this connection.
        request: u64,
        /// The writing client process.
        process: u32,
        /// Its fencing token (`None`: it sends none).
        token: Option<u64>,
        /// What it writes.
        value: String,
    },
    /// Resource to client: what became of write `request`.
    Written {
        /// The request number.
        request: u64,
        /// Accepted or rejected.
        verdict: ResourceVerdict,
    },
}

/// Why a write's fate is unknown to its writer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResourceUnavailable;

impl std::fmt::Display for ResourceUnavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the resource did not answer (the write may or may not have happened)")
    }
}

impl std::error::Error for ResourceUnavailable {}

const CONNECT_TIMEOUT: Duration = Duration::from_millis(300);
const REPLY_TIMEOUT: Duration = Duration::from_millis(500);

/// A running fenced resource.
#[derive(Clone)]
pub struct FencedResource {
    network: StreamNetwork<ResourceFrame>,
    node: NodeId,
}

impl FencedResource {
    /// Starts the resource `name` on `node` (a resource node, `r1..`); of `bugs`, only
    /// [`RecipeBug::CheckNotAtomic`] and [`RecipeBug::RejectsEqualToken`] are the resource's.
    pub fn start(sim: &Sim, node: NodeId, name: &str, fencing: Fencing, bugs: RecipeBugs) -> Self {
        let network: StreamNetwork<ResourceFrame> = sim.stream_network();
        let (listening, name) = (network.clone(), name.to_string());
        let check_and_write = if bugs.has(RecipeBug::CheckNotAtomic) {
            CheckAndWrite::TwoSteps
        } else {
            CheckAndWrite::Atomic
        };
        let stale_when = if bugs.has(RecipeBug::RejectsEqualToken) {
            StaleWhen::NotHigher
        } else {
            StaleWhen::Lower
        };
        sim.start(node, move |context| {
            serve(
                context,
                listening.clone(),
                name.clone(),
                (fencing, stale_when),
                check_and_write,
            )
        });
        Self { network, node }
    }

    /// A client of the resource for the client process `process` on `context`'s node.
    pub fn client(&self, context: &NodeContext, process: u32) -> ResourceClient {
        ResourceClient {
            resource: self.clone(),
            context: context.clone(),
            process,
            connection: None,
            next_request: 0,
        }
    }
}

/// Which tokens the resource takes for stale.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StaleWhen {
    /// Lower than the highest accepted (Kleppmann's rule).
    Lower,
    /// Not higher than the highest accepted: equal too (`resource.rejects_equal_token`).
    NotHigher,
}

/// How the resource checks a write's token and applies the write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CheckAndWrite {
    /// In one step: nothing runs on the node between the check and the write.
    Atomic,
    /// The check, then the value written durably to disk (an await: other writers' checks
    /// run meanwhile), then the commit (`resource.check_not_atomic`).
    TwoSteps,
}

async fn serve(
    context: NodeContext,
    network: StreamNetwork<ResourceFrame>,
    name: String,
    (fencing, stale_when): (Fencing, StaleWhen),
    check_and_write: CheckAndWrite,
) {
    let disk = context.disk().clone();
    let highest = disk
        .open_cell::<u64>("highest-token")
        .expect("the token file has one type");
    let data = disk
        .open_cell::<String>("data")
        .expect("the data file has one type");
    let listener = network.listen(context.id());
    loop {
        let connection = listener.accept().await;
        let (context, disk, highest, data, name) = (
            context.clone(),
            disk.clone(),
            highest.clone(),
            data.clone(),
            name.clone(),
        );
        sim::task::spawn_local(async move {
            while let Ok(ResourceFrame::Write {
                request,
                process,
                token,
                value,
            }) = connection.recv().await
            {
                // Atomic: check and write in one step (this task runs alone on the node
                // between awaits).
                let stale = match (fencing, token, highest.get()) {
                    (Fencing::On, Some(token), Some(seen)) => match stale_when {
                        StaleWhen::Lower => token < seen,
                        StaleWhen::NotHigher => token <= seen,
                    },
                    _ => false,
                };
                if !stale && check_and_write == CheckAndWrite::TwoSteps {
                    // The bug: the value goes durably to disk between the check and the
                    // commit, and other writers are checked against the old highest
                    // meanwhile. (The atomic resource keeps only the highest token: the
                    // records at the resource node are what is judged.)
                    data.set(value.clone());
                    disk.sync().await;
                }
                let verdict = if stale {
                    ResourceVerdict::RejectedStaleToken
                } else {
                    if let Some(token) = token
                        && highest.get().is_none_or(|seen| token > seen)
                    {
                        highest.set(token);
                    }
                    ResourceVerdict::Accepted
                };
                context
                    .history()
                    .record(Event::Recipe(RecipeEvent::ResourceWrite {
                        resource: name.clone(),
                        writer: connection.peer(),
                        process,
                        token,
                        value,
                        verdict,
                    }));
                // Durable before the reply: a restarted resource still rejects older tokens.
                disk.sync().await;
                if connection
                    .send(ResourceFrame::Written { request, verdict })
                    .is_err()
                {
                    break;
                }
            }
        });
    }
}

/// One client process's connection to the resource, re-established on demand.
pub struct ResourceClient {
    resource: FencedResource,
    context: NodeContext,
    process: u32,
    connection: Option<Connection<ResourceFrame>>,
    next_request: u64,
}

impl ResourceClient {
    /// Writes `value` fenced by `token`; the resource's verdict, or
    /// [`ResourceUnavailable`] if no answer came (the write may have happened).
    pub async fn write(
        &mut self,
        token: Option<u64>,
        value: String,
    ) -> Result<ResourceVerdict, ResourceUnavailable> {
        let connection = match &self.connection {
            Some(connection) if !connection.is_broken() => connection.clone(),
            _ => {
                let connection = self
                    .resource
                    .network
                    .connect(self.context.id(), self.resource.node, CONNECT_TIMEOUT)
                    .await
                    .map_err(|_| ResourceUnavailable)?;
                self.connection = Some(connection.clone());
                connection
            }
        };
        self.next_request += 1;
        let request = self.next_request;
        let sent = connection.send(ResourceFrame::Write {
            request,
            process: self.process,
            token,
            value,
        });
        if sent.is_err() {
            self.connection = None;
            return Err(ResourceUnavailable);
        }
        let reply = async {
            loop {
                match connection.recv().await {
                    Ok(ResourceFrame::Written {
                        request: answered,
                        verdict,
                    }) if answered == request => return Ok(verdict),
                    Ok(_) => {}
                    Err(_) => return Err(ResourceUnavailable),
                }
            }
        };
        match self.context.clock().timeout(REPLY_TIMEOUT, reply).await {
            Ok(Ok(verdict)) => Ok(verdict),
            _ => {
                // A late answer must not be read as the next write's.
                connection.close();
                self.connection = None;
                Err(ResourceUnavailable)
            }
        }
    }
}
