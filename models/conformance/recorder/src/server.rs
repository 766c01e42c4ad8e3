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

/// The ports are `base + 181` (ZooKeeper's client port; not Debian's 2181, so a running system
/// server is left alone), `base + 379` (etcd's client port) and `base + 380` (etcd's peer port: a
/// one-member cluster still listens on one). The base is 22000, or `CONFORMANCE_PORT_BASE` when set,
/// so that two recorders on one machine (two worktrees) do not meet on one server.
const DEFAULT_PORT_BASE: u16 = 22000;

fn port_base() -> u16 {
    // `main` checked the setting before any server started.
    checked_port_base().unwrap_or(DEFAULT_PORT_BASE)
}

/// The port base `CONFORMANCE_PORT_BASE` sets, or why it is not one.
pub fn checked_port_base() -> Result<u16, String> {
    port_base_from(std::env::var("CONFORMANCE_PORT_BASE").ok().as_deref())
}

/// The base `setting` names (the default when it is unset), or why it is not one.
fn port_base_from(setting: Option<&str>) -> Result<u16, String> {
    let Some(setting) = setting else {
        return Ok(DEFAULT_PORT_BASE);
    };
    setting
        .parse::<u16>()
        .ok()
        .filter(|base| *base <= 65000)
        .ok_or_else(|| {
            format!("CONFORMANCE_PORT_BASE: expected a number from 0 to 65000, not `{setting}`")
        })
}

/// ZooKeeper's client port.
pub fn zk_port() -> u16 {
    port_base() + 181
}

/// etcd's client port.
pub fn etcd_port() -> u16 {
    port_base() + 379
}

fn etcd_peer_port() -> u16 {
    port_base() + 380
}
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
    let zk_port = zk_port();
    // Debian's zoo.cfg, with a data folder and a port of our own. The admin server (an HTTP
    // console on 8080) is switched off so that it cannot collide with anything on the machine.
    let text = format!(
        "tickTime=2000\ninitLimit=10\nsyncLimit=5\ndataDir={}\nclientPort={zk_port}\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n",
        dir.join("data").display()
    );
    fs::write(&config, text).map_err(|e| e.to_string())?;
    let label = format!("ZooKeeper on 127.0.0.1:{zk_port}");
    port_free(zk_port, &label)?;
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
        four_letter_word(zk_port, b"srvr").is_some_and(|answer| answer.contains("Mode:"))
    })?;
    Ok(server)
}

/// Starts a one-member etcd 3.4 with its defaults (election timeout 1000 ms, so the minimum lease
/// TTL is 2 s) and waits until its client port accepts connections.
pub fn start_etcd() -> Result<Server, String> {
    let dir = fresh_dir("etcd")?;
    let (etcd_port, etcd_peer_port) = (etcd_port(), etcd_peer_port());
    let client_url = format!("http://127.0.0.1:{etcd_port}");
    let peer_url = format!("http://127.0.0.1:{etcd_peer_port}");
    let label = format!("etcd on 127.0.0.1:{etcd_port}");
    port_free(etcd_port, &label)?;
    port_free(
        etcd_peer_port,
        &format!("etcd's peer port 127.0.0.1:{etcd_peer_port}"),
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
            .arg(format!("--initial-cluster=probe={peer_url}"))
            // Progress notifications every second instead of every 10 minutes, so that a
            // probe can see one (the model's conformance config says the same).
            .arg("--experimental-watch-progress-notify-interval=1s"),
    )?;
    wait_until(&mut server, || port_open(etcd_port))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_port_base_is_the_setting_and_a_bad_one_is_named() {
        assert_eq!(port_base_from(None), Ok(22000));
        assert_eq!(port_base_from(Some("23000")), Ok(23000));
        for bad in ["65100", "many", ""] {
            let message = port_base_from(Some(bad)).unwrap_err();
            assert!(
                message.contains("expected a number from 0 to 65000"),
                "{message}"
            );
        }
    }
}
