//! ZooKeeper's wire protocol spoken by hand, for the one request `zookeeper-client` never sends
//! as is: a `removeWatches` the server cannot answer (the crate checks its own watchers first,
//! as Java's client does). One session of its own: connect, the request, close.
//!
//! Jute, big-endian, each packet behind its 4-byte length: `ConnectRequest` (protocol version,
//! last zxid seen, timeout, session id, password, read-only), then `RequestHeader` (xid, op
//! code) and `RemoveWatchesRequest` (path, watcher type), answered by `ReplyHeader` (xid,
//! zxid, error code).

use super::OP_LIMIT;
use std::{
    io::{Read, Write},
    net::TcpStream,
};

/// `ZooDefs.OpCode.removeWatches`.
const REMOVE_WATCHES: i32 = 18;
/// `ZooDefs.OpCode.closeSession`.
const CLOSE_SESSION: i32 = -11;

fn packet(body: &[u8]) -> Vec<u8> {
    let mut out = (body.len() as i32).to_be_bytes().to_vec();
    out.extend_from_slice(body);
    out
}

fn read_packet(stream: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut length = [0u8; 4];
    stream.read_exact(&mut length)?;
    let mut body = vec![0u8; i32::from_be_bytes(length).max(0) as usize];
    stream.read_exact(&mut body)?;
    Ok(body)
}

/// Sends a request with no body past `body` and answers its reply header's error code.
fn request(stream: &mut TcpStream, xid: i32, op: i32, body: &[u8]) -> std::io::Result<i32> {
    let mut out = xid.to_be_bytes().to_vec();
    out.extend_from_slice(&op.to_be_bytes());
    out.extend_from_slice(body);
    stream.write_all(&packet(&out))?;
    loop {
        let reply = read_packet(stream)?;
        let field = |at: usize| <[u8; 4]>::try_from(&reply[at..at + 4]).map(i32::from_be_bytes);
        let answered = field(0).map_err(std::io::Error::other)?;
        // Watch events (xid -1) and pings (-2) are not the answer.
        if answered == xid {
            return field(12).map_err(std::io::Error::other);
        }
    }
}

/// `removeWatches(path, kind)` on a fresh session (`kind`: 1 Children, 2 Data, 3 Any): the
/// error code the server answered (0 for none).
pub fn remove_watches(port: u16, path: &str, kind: i32) -> std::io::Result<i32> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(OP_LIMIT))?;
    let mut connect = Vec::new();
    connect.extend_from_slice(&0i32.to_be_bytes()); // protocol version
    connect.extend_from_slice(&0i64.to_be_bytes()); // last zxid seen
    connect.extend_from_slice(&6000i32.to_be_bytes()); // session timeout, ms
    connect.extend_from_slice(&0i64.to_be_bytes()); // session id: a new session
    connect.extend_from_slice(&16i32.to_be_bytes()); // password: 16 bytes
    connect.extend_from_slice(&[0u8; 16]);
    connect.push(0); // not read-only
    stream.write_all(&packet(&connect))?;
    read_packet(&mut stream)?;
    let mut body = (path.len() as i32).to_be_bytes().to_vec();
    body.extend_from_slice(path.as_bytes());
    body.extend_from_slice(&kind.to_be_bytes());
    let code = request(&mut stream, 1, REMOVE_WATCHES, &body)?;
    request(&mut stream, 2, CLOSE_SESSION, &[])?;
    Ok(code)
}
