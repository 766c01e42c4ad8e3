//! Runs a [`ZkServer`] on a simulated server node: connects its effects to sim's datagram
//! network (elections), FIFO connections (peers and clients), disk and local clock.
//!
//! Every task of a node shares one `ZkServer` behind a `RefCell` (a node's tasks run on one
//! thread, one at a time): a task that receives something feeds it to the server and
//! executes the effects at once, so a message costs one wake-up. The timer task sleeps
//! until the server's next deadline and is woken when a step moves that deadline earlier.
//! Disk syncs are group commits: one in flight at a time, covering every write before it.

use super::{
    children_order::ChildrenOrder,
    server::{ClientLink, ServerEffect, ZkPeerMessage, ZkServer, ZkServerConfig},
    tree::DataTree,
    wire::ClientMessage,
};
use crate::zab::{
    ConfigError, Effect, KnownBugs, Link, LinkDirection, Notification, PersistToken, ZabConfig,
    storage::ZabFiles,
};
use rand::{Rng, RngCore};
use sim::{
    NodeContext, NodeId, Sim,
    clock::LocalTime,
    net::{Connection, DatagramEndpoint, DatagramNetwork, StreamNetwork},
};
use std::{
    cell::{Cell, RefCell},
    collections::BTreeMap,
    rc::Rc,
    sync::Arc,
    time::Duration,
};

/// How to run an ensemble.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZkEnsembleConfig {
    /// The servers, voters first: clients may connect to any of them.
    pub servers: Vec<NodeId>,
    /// How many of `servers`, the last ones, are observers (ZooKeeper's `:observer`
    /// servers): they serve clients but vote in nothing. 0 by default.
    pub observers: usize,
    /// Heartbeat period (ZooKeeper's `tickTime`).
    pub tick: Duration,
    /// Liveness bound in ticks (ZooKeeper's `syncLimit`).
    pub sync_limit_ticks: u32,
    /// Leader's DIFF window before it sends a SNAP.
    pub diff_window: usize,
    /// Largest session timeout granted (ZooKeeper's `maxSessionTimeout`); `None` is
    /// ZooKeeper's default, 20 ticks. Ensembles set 4 s unless told otherwise, so that
    /// the catalogue's sessions of up to 4 s get what they ask with a 100 ms tick.
    pub max_session_timeout: Option<Duration>,
    /// The width of each parent's sequence counter (ZooKeeper's 32 bits, or fewer for a
    /// test in which it wraps); the servers name sequential nodes by it and the clients
    /// order them by it.
    pub sequence_width: super::SequenceWidth,
    /// Known bugs switched on.
    pub bugs: KnownBugs,
}

impl ZkEnsembleConfig {
    /// Defaults for `servers`.
    pub fn new(servers: Vec<NodeId>) -> Self {
        Self {
            servers,
            observers: 0,
            tick: Duration::from_millis(100),
            sync_limit_ticks: 5,
            diff_window: 500,
            max_session_timeout: Some(Duration::from_secs(4)),
            sequence_width: super::SequenceWidth::ZOOKEEPER,
            bugs: KnownBugs::none(),
        }
    }

    /// The voting servers: all but the last `observers`.
    pub fn voters(&self) -> &[NodeId] {
        &self.servers[..self.servers.len().saturating_sub(self.observers)]
    }

    /// The observers: the last `observers` servers.
    pub fn observer_servers(&self) -> &[NodeId] {
        &self.servers[self.servers.len().saturating_sub(self.observers)..]
    }

    /// The configuration of server `me`.
    pub fn server_config(&self, me: NodeId) -> ZkServerConfig {
        let mut zab = ZabConfig::new(me, self.voters().to_vec());
        zab.observers = self.observer_servers().to_vec();
        zab.tick = self.tick;
        zab.sync_limit_ticks = self.sync_limit_ticks;
        zab.diff_window = self.diff_window;
        zab.bugs = self.bugs.clone();
        let mut config = ZkServerConfig::new(zab);
        if let Some(max) = self.max_session_timeout {
            config.max_session_timeout = max;
        }
        config.sequence_width = self.sequence_width;
        config
    }
}

/// An ensemble's networks and configuration; start it on a world's servers.
#[derive(Clone)]
pub struct ZkEnsemble {
    config: Arc<ZkEnsembleConfig>,
    /// The order every server answers `getChildren` in, keyed by the world's seed.
    children_order: ChildrenOrder,
    peers: StreamNetwork<ZkPeerMessage>,
    election: DatagramNetwork<Notification>,
    clients: StreamNetwork<ClientMessage>,
}

impl ZkEnsemble {
    /// Creates the ensemble's networks in `sim`'s world; checks the configuration.
    pub fn new(sim: &Sim, config: ZkEnsembleConfig) -> Result<Self, ConfigError> {
        for &server in &config.servers {
            config.server_config(server).zab.validate()?;
        }
        if config.servers.is_empty() {
            return Err(ConfigError::EmptyEnsemble);
        }
        if let Some(&node) = config
            .servers
            .iter()
            .find(|node| !sim.config().contains(**node))
        {
            return Err(ConfigError::NotInWorld { node });
        }
        Ok(Self {
            config: Arc::new(config),
            children_order: ChildrenOrder::keyed(sim.seed().stream("zk-children-order").next_u64()),
            peers: sim.stream_network(),
            election: sim.datagram_network(),
            clients: sim.stream_network(),
        })
    }

    /// Starts every server's program (again after each restart).
    pub fn start(&self, sim: &Sim) {
        for &server in &self.config.servers {
            let ensemble = self.clone();
            sim.start(server, move |context| run_server(context, ensemble.clone()));
        }
    }

    /// The servers.
    pub fn servers(&self) -> &[NodeId] {
        &self.config.servers
    }

    /// The network clients connect over.
    pub fn client_network(&self) -> StreamNetwork<ClientMessage> {
        self.clients.clone()
    }

    /// A client configuration for this ensemble.
    pub fn client_config(&self, process: u32) -> super::ZkClientConfig {
        let mut config = super::ZkClientConfig::new(self.config.servers.clone(), process);
        config.sequence_width = self.config.sequence_width;
        config
    }

    /// Opens a client session from the client node `context`.
    pub async fn connect(
        &self,
        context: &NodeContext,
        config: super::ZkClientConfig,
    ) -> Result<super::ZkClient, super::ZkClientError> {
        super::ZkClient::connect(context, self.client_network(), config).await
    }
}

#[derive(Default)]
struct SyncState {
    requested: Option<PersistToken>,
    in_flight: bool,
}

struct Node {
    context: NodeContext,
    ensemble: ZkEnsemble,
    server: RefCell<ZkServer>,
    files: ZabFiles<DataTree>,
    election: DatagramEndpoint<Notification>,
    peer_links: RefCell<BTreeMap<Link, Connection<ZkPeerMessage>>>,
    client_links: RefCell<BTreeMap<ClientLink, Connection<ClientMessage>>>,
    sync: RefCell<SyncState>,
    timer_target: Cell<LocalTime>,
    timer_wake: async_channel::Sender<()>,
    buffer: RefCell<Vec<ServerEffect>>,
}

async fn run_server(context: NodeContext, ensemble: ZkEnsemble) {
    let me = context.id();
    let files = match ZabFiles::<DataTree>::open(context.disk()) {
        Ok(files) => files,
        Err(error) => {
            context
                .history()
                .note(format!("{me}: cannot open ZAB files: {error}"));
            return;
        }
    };
    let instance: u64 = context.rng("zk-server-instance").r#gen();
    let mut config = ensemble.config.server_config(me);
    config.children_order = ensemble.children_order;
    let server = match ZkServer::new(config, files.load(), instance) {
        Ok(server) => server,
        Err(error) => {
            context
                .history()
                .note(format!("{me}: bad configuration: {error}"));
            return;
        }
    };
    let (timer_wake, wake) = async_channel::bounded(1);
    let node = Rc::new(Node {
        election: ensemble.election.endpoint(me),
        ensemble: ensemble.clone(),
        server: RefCell::new(server),
        files,
        peer_links: RefCell::new(BTreeMap::new()),
        client_links: RefCell::new(BTreeMap::new()),
        sync: RefCell::new(SyncState::default()),
        timer_target: Cell::new(LocalTime::from_nanos(0)),
        timer_wake,
        buffer: RefCell::new(Vec::new()),
        context,
    });
    let peer_listener = ensemble.peers.listen(me);
    let client_listener = ensemble.clients.listen(me);
    sim::task::spawn_local(election_loop(node.clone()));
    {
        let node = node.clone();
        sim::task::spawn_local(async move {
            loop {
                let connection = peer_listener.accept().await;
                let link = Link(connection.id());
                let peer = connection.peer();
                node.peer_links
                    .borrow_mut()
                    .insert(link, connection.clone());
                sim::task::spawn_local(peer_reader(node.clone(), link, connection));
                node.step(|server, now| {
                    server.on_peer_link_up(now, link, peer, LinkDirection::Inbound)
                });
            }
        });
    }
    {
        let node = node.clone();
        sim::task::spawn_local(async move {
            loop {
                let connection = client_listener.accept().await;
                let link = ClientLink(connection.id());
                let client = connection.peer();
                node.client_links
                    .borrow_mut()
                    .insert(link, connection.clone());
                sim::task::spawn_local(client_reader(node.clone(), link, connection));
                node.step(|server, now| server.on_client_connected(now, link, client));
            }
        });
    }
    node.step(|server, now| server.start(now));
    timer_loop(node, wake).await;
}

impl Node {
    /// Feeds the server one input and executes its effects.
    fn step(self: &Rc<Self>, input: impl FnOnce(&mut ZkServer, LocalTime)) {
        let now = self.context.clock().now();
        let mut effects = self.buffer.take();
        {
            let mut server = self.server.borrow_mut();
            input(&mut server, now);
            server.swap_effects(&mut effects);
            if server.next_deadline() < self.timer_target.get() {
                let _ = self.timer_wake.try_send(());
            }
        }
        for effect in effects.drain(..) {
            self.execute(effect);
        }
        self.buffer.replace(effects);
    }

    fn execute(self: &Rc<Self>, effect: ServerEffect) {
        match effect {
            ServerEffect::Zab(effect) => match effect {
                Effect::Notify { to, notification } => self.election.send(to, notification),
                Effect::Connect { leader } => {
                    sim::task::spawn_local(connect_to_leader(self.clone(), leader));
                }
                Effect::Send { link, message } => {
                    if let Some(connection) = self.peer_links.borrow().get(&link) {
                        // A broken connection is reported by its reader.
                        let _ = connection.send(message);
                    }
                }
                Effect::Disconnect { link } => {
                    if let Some(connection) = self.peer_links.borrow_mut().remove(&link) {
                        connection.close();
                    }
                }
                Effect::Persist(write) => self.files.write(write),
                Effect::Sync { token } => self.request_sync(token),
                Effect::Record(event) => self.context.history().protocol(event),
                Effect::Reach(mark) => self.context.history().reach(mark),
                // The server layer consumes these itself.
                Effect::Serve(_) | Effect::Applied { .. } | Effect::App { .. } => {}
            },
            ServerEffect::ToClient { link, message } => {
                if let Some(connection) = self.client_links.borrow().get(&link) {
                    let _ = connection.send(message);
                }
            }
            ServerEffect::CloseClient { link } => {
                if let Some(connection) = self.client_links.borrow_mut().remove(&link) {
                    connection.close();
                }
            }
        }
    }

    fn request_sync(self: &Rc<Self>, token: PersistToken) {
        let mut sync = self.sync.borrow_mut();
        sync.requested = sync.requested.max(Some(token));
        if !sync.in_flight {
            sync.in_flight = true;
            sim::task::spawn_local(sync_disk(self.clone()));
        }
    }
}

async fn sync_disk(node: Rc<Node>) {
    loop {
        let target = node.sync.borrow().requested.expect("a sync was requested");
        node.context.disk().sync().await;
        node.step(|server, now| server.on_persisted(now, target));
        let mut sync = node.sync.borrow_mut();
        if sync.requested > Some(target) {
            continue;
        }
        sync.in_flight = false;
        return;
    }
}

async fn timer_loop(node: Rc<Node>, wake: async_channel::Receiver<()>) {
    use futures_util::future::select;
    let clock = node.context.clock().clone();
    // One sleep for the whole loop, moved when the deadline moves: a new sleep per wake-up
    // would add a madsim timer entry each time, which madsim cannot take back.
    let mut sleep = std::pin::pin!(clock.sleep_until(node.server.borrow().next_deadline()));
    loop {
        let deadline = node.server.borrow().next_deadline();
        node.timer_target.set(deadline);
        if sleep.deadline() != deadline {
            sleep.as_mut().get_mut().reset(deadline);
        }
        {
            let woken = std::pin::pin!(wake.recv());
            select(sleep.as_mut(), woken).await;
        }
        if clock.now() >= node.server.borrow().next_deadline() {
            node.step(|server, now| server.tick(now));
        }
    }
}

async fn election_loop(node: Rc<Node>) {
    loop {
        let datagram = node.election.recv().await;
        node.step(|server, now| server.on_notification(now, datagram.from, datagram.message));
    }
}

async fn connect_to_leader(node: Rc<Node>, leader: NodeId) {
    let me = node.context.id();
    let timeout = node.ensemble.config.tick * 2;
    match node.ensemble.peers.connect(me, leader, timeout).await {
        Ok(connection) => {
            let link = Link(connection.id());
            node.peer_links
                .borrow_mut()
                .insert(link, connection.clone());
            sim::task::spawn_local(peer_reader(node.clone(), link, connection));
            node.step(|server, now| {
                server.on_peer_link_up(now, link, leader, LinkDirection::Outbound)
            });
        }
        Err(_) => node.step(|server, now| server.on_connect_failed(now, leader)),
    }
}

async fn peer_reader(node: Rc<Node>, link: Link, connection: Connection<ZkPeerMessage>) {
    loop {
        match connection.recv().await {
            Ok(message) => {
                if !node.peer_links.borrow().contains_key(&link) {
                    return;
                }
                node.step(|server, now| server.on_peer_message(now, link, message));
            }
            Err(_) => {
                let known = node.peer_links.borrow_mut().remove(&link).is_some();
                if known {
                    node.step(|server, now| server.on_peer_link_down(now, link));
                }
                return;
            }
        }
    }
}

async fn client_reader(node: Rc<Node>, link: ClientLink, connection: Connection<ClientMessage>) {
    loop {
        match connection.recv().await {
            Ok(message) => {
                if !node.client_links.borrow().contains_key(&link) {
                    return;
                }
                node.step(|server, now| server.on_client_message(now, link, message));
            }
            Err(_) => {
                let known = node.client_links.borrow_mut().remove(&link).is_some();
                if known {
                    node.step(|server, now| server.on_client_closed(now, link));
                }
                return;
            }
        }
    }
}
