"""What a ZooKeeper server itself answers for malformed paths, past any client's checks.

The client crates (zookeeper-client for Rust, the Java client) refuse `a`, `/a/`, `/a//b`,
`/a/./b` before sending, so the probes (probes/zk/path_*.probe) cannot show the server's own
answers. This sends the requests raw (jute over TCP) to a server you started, e.g. one made from
Debian's zoo.cfg with another clientPort, and prints the error codes (0 ok, -101 NoNode,
-110 NodeExists, -8 BadArguments). It creates /a first; use a fresh server.

    python3 raw_paths.py PORT
"""
import socket
import struct
import sys

sock = socket.create_connection(("127.0.0.1", int(sys.argv[1])))


def send(body):
    sock.sendall(struct.pack(">i", len(body)) + body)


def receive():
    (length,) = struct.unpack(">i", sock.recv(4))
    data = b""
    while len(data) < length:
        data += sock.recv(length - len(data))
    return data


def ustring(text):
    data = text.encode()
    return struct.pack(">i", len(data)) + data


# ConnectRequest: protocol 0, last zxid 0, timeout 10000 ms, session 0, 16-byte password, not read-only.
send(struct.pack(">iqiq", 0, 0, 10000, 0) + struct.pack(">i", 16) + b"\0" * 16 + b"\0")
receive()
xid = 0


def request(op_code, body):
    """The error code of one request (ReplyHeader: xid, zxid, err)."""
    global xid
    xid += 1
    send(struct.pack(">ii", xid, op_code) + body)
    while True:
        reply = receive()
        reply_xid, _, err = struct.unpack(">iqi", reply[:16])
        if reply_xid == xid:
            return err


OPEN_ACL = struct.pack(">ii", 1, 31) + ustring("world") + ustring("anyone")


def create(path):
    return request(1, ustring(path) + struct.pack(">i", 0) + OPEN_ACL + struct.pack(">i", 0))


def delete(path):
    return request(2, ustring(path) + struct.pack(">i", -1))


def exists(path):
    return request(3, ustring(path) + b"\0")


def get(path):
    return request(4, ustring(path) + b"\0")


print("create /a", create("/a"))
for path in ["a", "/a/", "/a//x", "/a/./x", "/a/../x"]:
    print(f"exists {path} {exists(path)}  get {path} {get(path)}  delete {path} {delete(path)}")
for path in ["b", "/a/", "/a//b", "/a/./b", "/a/../b"]:
    print(f"create {path} {create(path)}")
print("delete /zookeeper", delete("/zookeeper"))
