//! Node identities: servers `s1..sN`, clients `c1..cM` and resources `r1..rK`.

use serde::{Deserialize, Serialize};
use std::{fmt, str::FromStr};

/// Whether a node runs a store server or a client.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    /// A store server (`s1`, `s2`, ...).
    Server,
    /// A client (`c1`, `c2`, ...).
    Client,
    /// A resource the clients use besides the store (`r1`, ...): e.g. the fenced resource
    /// that lock holders write to. Swarm faults leave it alone; a plan may name it.
    Resource,
}

/// A node of the world, written `s1` (first server), `c3` (third client) or `r1` (first
/// resource).
///
/// Ordered servers first, then clients, then resources, each by number.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(try_from = "String")]
pub struct NodeId {
    kind: NodeKind,
    /// Zero-based: `s1` has ordinal 0.
    ordinal: u16,
}

impl NodeId {
    /// The server with zero-based `ordinal` (`server(0)` is `s1`).
    pub const fn server(ordinal: usize) -> Self {
        Self {
            kind: NodeKind::Server,
            ordinal: ordinal as u16,
        }
    }

    /// The client with zero-based `ordinal` (`client(0)` is `c1`).
    pub const fn client(ordinal: usize) -> Self {
        Self {
            kind: NodeKind::Client,
            ordinal: ordinal as u16,
        }
    }

    /// The resource with zero-based `ordinal` (`resource(0)` is `r1`).
    pub const fn resource(ordinal: usize) -> Self {
        Self {
            kind: NodeKind::Resource,
            ordinal: ordinal as u16,
        }
    }

    /// Server, client or resource.
    pub const fn kind(self) -> NodeKind {
        self.kind
    }

    /// Whether this is a server.
    pub const fn is_server(self) -> bool {
        matches!(self.kind, NodeKind::Server)
    }

    /// Zero-based position among nodes of the same kind.
    pub const fn ordinal(self) -> usize {
        self.ordinal as usize
    }

    /// A number that identifies the node across runs, for deriving per-node streams.
    pub(crate) fn stable_code(self) -> u64 {
        let kind = match self.kind {
            NodeKind::Server => 1u64,
            NodeKind::Client => 2u64,
            NodeKind::Resource => 3u64,
        };
        (kind << 32) | u64::from(self.ordinal)
    }
}

impl NodeId {
    /// Writes the name (`s1`, `c12`) into `buffer` and returns it: without the formatting
    /// machinery, because every history record names nodes and the history digest
    /// serializes each of them.
    fn name(self, buffer: &mut [u8; 6]) -> &str {
        buffer[0] = match self.kind {
            NodeKind::Server => b's',
            NodeKind::Client => b'c',
            NodeKind::Resource => b'r',
        };
        // The one-based number has at most five digits (u16::MAX + 1 = 65536).
        let mut number = u32::from(self.ordinal) + 1;
        let mut digits = [0u8; 5];
        let mut count = 0;
        while number > 0 {
            digits[count] = b'0' + (number % 10) as u8;
            number /= 10;
            count += 1;
        }
        for (slot, digit) in buffer[1..=count]
            .iter_mut()
            .zip(digits[..count].iter().rev())
        {
            *slot = *digit;
        }
        std::str::from_utf8(&buffer[..=count]).expect("ASCII letters and digits")
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name(&mut [0; 6]))
    }
}

impl Serialize for NodeId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name(&mut [0; 6]))
    }
}

impl fmt::Debug for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A node name not of the form `sN`, `cN` or `rN` with N ≥ 1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeIdParseError {
    input: String,
}

impl fmt::Display for NodeIdParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid node `{}`: expected sN (server), cN (client) or rN (resource) with N >= 1, e.g. s1, c2 or r1",
            self.input
        )
    }
}

impl std::error::Error for NodeIdParseError {}

impl FromStr for NodeId {
    type Err = NodeIdParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = || NodeIdParseError { input: text.into() };
        let mut chars = text.chars();
        let kind = match chars.next() {
            Some('s') => NodeKind::Server,
            Some('c') => NodeKind::Client,
            Some('r') => NodeKind::Resource,
            _ => return Err(error()),
        };
        let digits = chars.as_str();
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(error());
        }
        let number: u16 = digits.parse().map_err(|_| error())?;
        if number == 0 {
            return Err(error());
        }
        Ok(NodeId {
            kind,
            ordinal: number - 1,
        })
    }
}

impl TryFrom<String> for NodeId {
    type Error = NodeIdParseError;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        text.parse()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        assert_eq!(NodeId::server(0).to_string(), "s1");
        assert_eq!(NodeId::client(2).to_string(), "c3");
        assert_eq!("s5".parse::<NodeId>().unwrap(), NodeId::server(4));
        assert_eq!("c1".parse::<NodeId>().unwrap(), NodeId::client(0));
        assert_eq!(NodeId::server(9).to_string(), "s10");
        assert_eq!(NodeId::resource(0).to_string(), "r1");
        assert_eq!(NodeId::client(65_535).to_string(), "c65536");
        let json = serde_json::to_string(&NodeId::client(99)).unwrap();
        assert_eq!(json, "\"c100\"");
        assert_eq!(
            serde_json::from_str::<NodeId>(&json).unwrap(),
            NodeId::client(99)
        );
        for bad in ["", "s", "s0", "x1", "s-1", "s1x", "S1", "s99999"] {
            assert!(bad.parse::<NodeId>().is_err(), "{bad}");
        }
    }

    #[test]
    fn servers_sort_before_clients() {
        let mut nodes = vec![NodeId::client(0), NodeId::server(1), NodeId::server(0)];
        nodes.sort();
        assert_eq!(
            nodes,
            vec![NodeId::server(0), NodeId::server(1), NodeId::client(0)]
        );
    }
}
