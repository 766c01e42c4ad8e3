//! Starting and stopping the real servers: a fresh one per probe, in a new empty data folder, on
//! loopback ports of its own, run with the defaults a Debian user gets.

use std::{
    fs,
    io::{Read, Write},
    net::{SocketAddr, TcpStream},
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

/// ZooKeeper's client port (standalone; not Debian's 2181, so a running system server is left alone).
pub const ZK_PORT: u16 = 22181;
/// etcd's client port.
pub const ETCD_PORT: u16 = 22379;
/// etcd's peer port (a one-member cluster still listens on one).
const ETCD_PEER_PORT: u16 = 22380;
/// How long a server may take to answer after it was started.
const START_LIMIT: Duration = Duration::from_secs(60);

/// Where Debian's `zookeeper` package puts its jar (its manifest names the other jars).
const ZK_CLASSPATH: &str = "/usr/share/java/zookeeper.jar";

/// A server this recorder started. Dropping it stops it (also when a probe panics) and removes
/// its data folder.
pub struct Server {
    /// Its name and port, for messages.
    pub label: String,
    child: Child,
    dir: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// A fresh data folder for one probe's server.
fn fresh_dir(store: &str) -> Result<PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("coordsim-probe-{store}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(dir.join("data")).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(dir)
}

/// Refuses a port that something else already listens on: the probes would talk to it.
fn port_free(port: u16, label: &str) -> Result<(), String> {
    match port_open(port) {
        true => Err(format!(
            "{label}: the port is in use by another process; stop it and record again"
        )),
        false => Ok(()),
    }
}

fn spawn(label: String, dir: PathBuf, command: &mut Command) -> Result<Server, String> {
    let log = fs::File::create(dir.join("server.log")).map_err(|e| e.to_string())?;
    let log_err = log.try_clone().map_err(|e| e.to_string())?;
    let child = command
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .spawn()
        .map_err(|e| format!("{label} did not start: {e}"))?;
    Ok(Server { label, child, dir })
}

/// Starts a standalone ZooKeeper 3.8 with Debian's defaults (tickTime 2000, so session timeouts
/// negotiate into 4000..40000 ms) and waits until it serves.
pub fn start_zookeeper() -> Result<Server, String> {
    let dir = fresh_dir("zk")?;
    let config = dir.join("zoo.cfg");
    // Debian's zoo.cfg, with a data folder and a port of our own. The admin server (an HTTP
    // console on 8080) is switched off so that it cannot collide with anything on the machine.
    let text = format!(
        "tickTime=2000\ninitLimit=10\nsyncLimit=5\ndataDir={}\nclientPort={ZK_PORT}\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n",
        dir.join("data").display()
    );
    fs::write(&config, text).map_err(|e| e.to_string())?;
    let label = format!("ZooKeeper on 127.0.0.1:{ZK_PORT}");
    port_free(ZK_PORT, &label)?;
    let mut server = spawn(
        label,
        dir,
        Command::new("java")
            .arg("-cp")
            .arg(ZK_CLASSPATH)
            .arg("org.apache.zookeeper.server.ZooKeeperServerMain")
            .arg(&config),
    )?;
    // `srvr` is the one four-letter word 3.8 allows by default; it answers only once the server
    // serves, and it opens no session, so it uses no zxid.
    wait_until(&mut server, || {
        four_letter_word(ZK_PORT, b"srvr").is_some_and(|answer| answer.contains("Mode:"))
    })?;
    Ok(server)
}

/// Starts a one-member etcd 3.4 with its defaults (election timeout 1000 ms, so the minimum lease
/// TTL is 2 s) and waits until its client port accepts connections.
pub fn start_etcd() -> Result<Server, String> {
    let dir = fresh_dir("etcd")?;
    let client_url = format!("http://127.0.0.1:{ETCD_PORT}");
    let peer_url = format!("http://127.0.0.1:{ETCD_PEER_PORT}");
    let label = format!("etcd on 127.0.0.1:{ETCD_PORT}");
    port_free(ETCD_PORT, &label)?;
    port_free(
        ETCD_PEER_PORT,
        &format!("etcd's peer port 127.0.0.1:{ETCD_PEER_PORT}"),
    )?;
    let data = dir.join("data");
    let mut server = spawn(
        label,
        dir,
        Command::new("etcd")
            .arg("--name=probe")
            .arg(format!("--data-dir={}", data.display()))
            .arg(format!("--listen-client-urls={client_url}"))
            .arg(format!("--advertise-client-urls={client_url}"))
            .arg(format!("--listen-peer-urls={peer_url}"))
            .arg(format!("--initial-advertise-peer-urls={peer_url}"))
            .arg(format!("--initial-cluster=probe={peer_url}")),
    )?;
    wait_until(&mut server, || port_open(ETCD_PORT))?;
    Ok(server)
}

/// Polls `ready` until it holds, the server exits or START_LIMIT passes.
fn wait_until(server: &mut Server, mut ready: impl FnMut() -> bool) -> Result<(), String> {
    let started = Instant::now();
    while started.elapsed() < START_LIMIT {
        if ready() {
            return Ok(());
        }
        if let Ok(Some(status)) = server.child.try_wait() {
            return Err(format!(
                "{} exited before it answered ({status}); its log: {}",
                server.label,
                server.dir.join("server.log").display()
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(format!(
        "{} did not answer within {} s",
        server.label,
        START_LIMIT.as_secs()
    ))
}

fn port_open(port: u16) -> bool {
    TcpStream::connect_timeout(
        &SocketAddr::from(([127, 0, 0, 1], port)),
        Duration::from_millis(200),
    )
    .is_ok()
}

fn four_letter_word(port: u16, word: &[u8]) -> Option<String> {
    let mut stream = TcpStream::connect_timeout(
        &SocketAddr::from(([127, 0, 0, 1], port)),
        Duration::from_millis(200),
    )
    .ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(1))).ok()?;
    stream.write_all(word).ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    Some(answer)
}
