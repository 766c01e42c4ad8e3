//! Access control lists (ZooKeeper's `ZooDefs`, `PrepRequestProcessor.fixupACL`,
//! `ZooKeeperServer.checkACL` and the `digest` / `ip` authentication providers).
//!
//! Every znode has an ACL; a node created without one gets `world:anyone` with every
//! permission, kept as [`NodeAcl::Open`] so that checking it costs nothing and shares no
//! allocation. A connection's ids are its client's simulated IPv4 address (scheme `ip`) and
//! whatever `addAuth` added (scheme `digest`: `user:base64(sha1(user:password))`, the
//! password never stored). Writes are checked by the leader against its prepared tree, with
//! the ids the forwarding server sent along (ZooKeeper's `QuorumPacket.authinfo`); reads by
//! the server that answers them. The `super` digest is not modelled.

use base64::Engine;
use sha1::{Digest, Sha1};
use sim::{
    NodeId, NodeKind,
    history::zk::{Acl, Perms, ZkError},
};
use std::{net::Ipv4Addr, sync::Arc};

/// A scheme a connection can be authenticated by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AuthScheme {
    /// `digest`: a user and password, kept as `user:base64(sha1(user:password))`.
    Digest,
    /// `ip`: the client's address, given to every connection.
    Ip,
}

impl AuthScheme {
    /// The scheme's name in ACL entries.
    pub fn name(self) -> &'static str {
        match self {
            AuthScheme::Digest => "digest",
            AuthScheme::Ip => "ip",
        }
    }
}

/// An id a connection is authenticated as (ZooKeeper's `Id` in a connection's `authInfo`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AuthId {
    /// The scheme.
    pub scheme: AuthScheme,
    /// The id: `user:hash` for `digest`, a dotted address for `ip`.
    pub id: String,
}

/// The ids a connection is authenticated as, shared by every request it sends.
pub type AuthIds = Arc<[AuthId]>;

/// A znode's ACL, as the data tree keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum NodeAcl {
    /// `world:anyone` with every permission (ZooKeeper's `OPEN_ACL_UNSAFE`).
    #[default]
    Open,
    /// Any other list (validated, `auth` entries expanded, duplicates removed).
    List(Arc<[Acl]>),
}

impl NodeAcl {
    /// The ACL of `entries` as stored: the open ACL is always [`NodeAcl::Open`].
    pub fn from_entries(entries: Vec<Acl>) -> Self {
        if entries.len() == 1 && entries[0] == Acl::open() {
            NodeAcl::Open
        } else {
            NodeAcl::List(entries.into())
        }
    }

    /// ZooKeeper's `CREATOR_ALL_ACL`: everything for the ids of the session that creates
    /// the node (it must have authenticated, or the create fails with `InvalidACL`).
    pub fn creator_all() -> Self {
        NodeAcl::List(Arc::from(vec![Acl::creator_all()]))
    }

    /// Whether this is the open ACL.
    pub fn is_open(&self) -> bool {
        matches!(self, NodeAcl::Open)
    }

    /// The entries.
    pub fn entries(&self) -> Vec<Acl> {
        match self {
            NodeAcl::Open => vec![Acl::open()],
            NodeAcl::List(entries) => entries.to_vec(),
        }
    }

    /// ZooKeeper's `checkACL`: whether one entry matching `ids` grants a bit of `wanted`.
    pub fn check(&self, wanted: Perms, ids: &[AuthId]) -> Result<(), ZkError> {
        let NodeAcl::List(entries) = self else {
            return Ok(());
        };
        // An empty list allows everything, as in ZooKeeper (a valid ACL is never empty).
        if entries.is_empty() {
            return Ok(());
        }
        let granted = entries.iter().any(|entry| {
            entry.perms.grants_any(wanted)
                && match entry.scheme.as_str() {
                    "world" => entry.id == "anyone",
                    "digest" => ids
                        .iter()
                        .any(|id| id.scheme == AuthScheme::Digest && id.id == entry.id),
                    "ip" => ids
                        .iter()
                        .any(|id| id.scheme == AuthScheme::Ip && ip_matches(&id.id, &entry.id)),
                    _ => false,
                }
        });
        if granted {
            Ok(())
        } else {
            Err(ZkError::NoAuth)
        }
    }

    /// `getACL`'s answer: to a session without ADMIN, digest hashes are hidden (`user:x`),
    /// as ZooKeeper's `FinalRequestProcessor` does.
    pub fn shown_to(&self, ids: &[AuthId]) -> Vec<Acl> {
        let mut entries = self.entries();
        if self.check(Perms::ADMIN, ids).is_err() {
            for entry in &mut entries {
                if entry.scheme == "digest"
                    && let Some((user, _)) = entry.id.split_once(':')
                {
                    entry.id = format!("{user}:x");
                }
            }
        }
        entries
    }
}

/// ZooKeeper's `fixupACL`: checks a requested ACL and expands `auth` entries into the
/// session's authenticated (`digest`) ids. `InvalidACL` for an empty list, an unknown
/// scheme, an id its scheme rejects, or `auth` without an authenticated id.
pub fn fixup(requested: &NodeAcl, ids: &[AuthId]) -> Result<NodeAcl, ZkError> {
    let NodeAcl::List(entries) = requested else {
        return Ok(NodeAcl::Open);
    };
    if entries.is_empty() {
        return Err(ZkError::InvalidAcl);
    }
    let mut fixed: Vec<Acl> = Vec::with_capacity(entries.len());
    let mut push = |entry: Acl| {
        if !fixed.contains(&entry) {
            fixed.push(entry);
        }
    };
    for entry in entries.iter() {
        match entry.scheme.as_str() {
            "world" if entry.id == "anyone" => push(entry.clone()),
            "auth" => {
                // Only `digest` ids are "authenticated" (ZooKeeper's `isAuthenticated`);
                // the `ip` id every connection has does not count.
                let mut expanded = false;
                for id in ids.iter().filter(|id| id.scheme == AuthScheme::Digest) {
                    expanded = true;
                    push(Acl::new(entry.perms, id.scheme.name(), &id.id));
                }
                if !expanded {
                    return Err(ZkError::InvalidAcl);
                }
            }
            "digest" if entry.id.split(':').count() == 2 => push(entry.clone()),
            "ip" if parse_ip_pattern(&entry.id).is_some() => push(entry.clone()),
            _ => return Err(ZkError::InvalidAcl),
        }
    }
    Ok(NodeAcl::from_entries(fixed))
}

/// ZooKeeper's `DigestAuthenticationProvider.generateDigest`: `user:password` becomes
/// `user:base64(sha1(user:password))`.
pub fn generate_digest(user_password: &str) -> String {
    let user = user_password.split(':').next().unwrap_or_default();
    let hash = Sha1::digest(user_password.as_bytes());
    format!(
        "{user}:{}",
        base64::engine::general_purpose::STANDARD.encode(hash)
    )
}

/// `addAuth(scheme, auth)`: the id it adds to the connection. Only `digest` is accepted
/// (`ip` ids come with the connection); anything else is `AuthFailed`, as are credentials
/// without a `:`.
pub fn authenticate(scheme: &str, auth: &str) -> Result<AuthId, ZkError> {
    match scheme {
        "digest" if auth.contains(':') => Ok(AuthId {
            scheme: AuthScheme::Digest,
            id: generate_digest(auth),
        }),
        _ => Err(ZkError::AuthFailed),
    }
}

/// A node's simulated IPv4 address: `10.<kind>.<n / 256>.<n % 256>` with `n` its one-based
/// number and kind 0 for servers, 1 for clients, 2 for resources (`c1` is `10.1.0.1`).
pub fn simulated_address(node: NodeId) -> Ipv4Addr {
    let kind = match node.kind() {
        NodeKind::Server => 0,
        NodeKind::Client => 1,
        NodeKind::Resource => 2,
    };
    let number = node.ordinal() + 1;
    Ipv4Addr::new(10, kind, (number / 256) as u8, (number % 256) as u8)
}

/// The ids a connection from `client` starts with: its `ip` id.
pub fn connection_ids(client: NodeId) -> AuthIds {
    Arc::from(vec![AuthId {
        scheme: AuthScheme::Ip,
        id: dotted_decimal(simulated_address(client)),
    }])
}

/// `address` as `Ipv4Addr`'s `Display` writes it (`10.1.0.17`), without the formatting
/// machinery, which cost more than the rest of a connection's setup (every client
/// reconnect asks).
fn dotted_decimal(address: Ipv4Addr) -> String {
    let mut text = String::with_capacity(15);
    for (position, octet) in address.octets().into_iter().enumerate() {
        if position > 0 {
            text.push('.');
        }
        if octet >= 100 {
            text.push(char::from(b'0' + octet / 100));
        }
        if octet >= 10 {
            text.push(char::from(b'0' + octet / 10 % 10));
        }
        text.push(char::from(b'0' + octet % 10));
    }
    text
}

/// An `ip` ACL id: an IPv4 address and prefix bits (32 when absent). IPv6 is not modelled.
fn parse_ip_pattern(pattern: &str) -> Option<(u32, u32)> {
    let (address, bits) = match pattern.split_once('/') {
        Some((address, bits)) => (address, bits.parse::<u32>().ok()?),
        None => (pattern, 32),
    };
    if bits > 32 {
        return None;
    }
    let address: Ipv4Addr = address.parse().ok()?;
    Some((u32::from(address), bits))
}

/// ZooKeeper's `IPAuthenticationProvider.matches`: `address` within `pattern`'s prefix.
fn ip_matches(address: &str, pattern: &str) -> bool {
    let (Some((network, bits)), Ok(address)) =
        (parse_ip_pattern(pattern), address.parse::<Ipv4Addr>())
    else {
        return false;
    };
    let mask = if bits == 0 {
        0
    } else {
        u32::MAX << (32 - bits)
    };
    u32::from(address) & mask == network & mask
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotted_decimal_writes_what_ipv4_display_writes() {
        for octets in [
            [10, 1, 0, 17],
            [0, 0, 0, 0],
            [255, 255, 255, 255],
            [10, 2, 1, 9],
        ] {
            let address = Ipv4Addr::from(octets);
            assert_eq!(dotted_decimal(address), address.to_string());
        }
        for number in 0..=255u8 {
            let address = Ipv4Addr::new(number, 100 - number / 3, number / 7, 9);
            assert_eq!(dotted_decimal(address), address.to_string());
        }
    }

    fn digest_id(user_password: &str) -> AuthId {
        authenticate("digest", user_password).unwrap()
    }

    #[test]
    fn digests_are_stored_as_zookeeper_stores_them() {
        // The superDigest of ZooKeeper's `QuorumPeerMainMultiAddressTest` ("password is
        // 'test'").
        assert_eq!(
            generate_digest("super:test"),
            "super:D/InIHSb7yEEbrWz8b9l71RjZJU="
        );
        let id = digest_id("alice:secret");
        assert_eq!(id.scheme, AuthScheme::Digest);
        assert!(id.id.starts_with("alice:") && !id.id.contains("secret"));
        assert_eq!(authenticate("digest", "no-colon"), Err(ZkError::AuthFailed));
        assert_eq!(authenticate("kerberos", "a:b"), Err(ZkError::AuthFailed));
    }

    #[test]
    fn ip_ids_match_by_prefix() {
        assert_eq!(simulated_address(NodeId::client(0)).to_string(), "10.1.0.1");
        assert_eq!(
            simulated_address(NodeId::server(299)).to_string(),
            "10.0.1.44"
        );
        assert!(ip_matches("10.1.0.1", "10.1.0.1"));
        assert!(ip_matches("10.1.0.7", "10.1.0.0/24"));
        assert!(!ip_matches("10.0.0.7", "10.1.0.0/16"));
        assert!(ip_matches("192.168.1.1", "0.0.0.0/0"));
        assert!(!ip_matches("10.1.0.2", "10.1.0.1"));
    }

    #[test]
    fn checks_need_a_wanted_bit_from_a_matching_entry() {
        let alice = digest_id("alice:pw");
        let acl = NodeAcl::from_entries(vec![
            Acl::new(Perms::READ, "world", "anyone"),
            Acl::new(Perms::ALL, "digest", &alice.id),
            Acl::new(Perms::WRITE.union(Perms::CREATE), "ip", "10.1.0.0/24"),
        ]);
        let nobody: Vec<AuthId> = Vec::new();
        let c1 = connection_ids(NodeId::client(0));
        assert_eq!(acl.check(Perms::READ, &nobody), Ok(()));
        assert_eq!(acl.check(Perms::WRITE, &nobody), Err(ZkError::NoAuth));
        assert_eq!(acl.check(Perms::WRITE, &c1), Ok(()));
        assert_eq!(acl.check(Perms::ADMIN, &c1), Err(ZkError::NoAuth));
        assert_eq!(acl.check(Perms::ADMIN, &[alice.clone()]), Ok(()));
        // READ | ADMIN (getACL): either bit will do.
        assert_eq!(acl.check(Perms::READ.union(Perms::ADMIN), &nobody), Ok(()));
        let admin_only = NodeAcl::from_entries(vec![Acl::new(Perms::ADMIN, "ip", "10.1.0.1")]);
        assert_eq!(
            admin_only.check(Perms::READ.union(Perms::ADMIN), &c1),
            Ok(())
        );
        assert_eq!(admin_only.check(Perms::READ, &c1), Err(ZkError::NoAuth));
        assert_eq!(NodeAcl::Open.check(Perms::ALL, &nobody), Ok(()));
        // Without ADMIN, digest hashes are hidden.
        let shown = acl.shown_to(&c1);
        assert!(shown.iter().any(|entry| entry.id == "alice:x"));
        assert!(
            acl.shown_to(&[alice.clone()])
                .iter()
                .any(|entry| entry.id == alice.id)
        );
    }

    #[test]
    fn fixup_expands_auth_and_rejects_malformed_acls() {
        let alice = digest_id("alice:pw");
        let ip_only = connection_ids(NodeId::client(0));
        let both: Vec<AuthId> = ip_only.iter().cloned().chain([alice.clone()]).collect();
        assert_eq!(
            fixup(&NodeAcl::creator_all(), &both),
            Ok(NodeAcl::from_entries(vec![Acl::new(
                Perms::ALL,
                "digest",
                &alice.id
            )]))
        );
        // `auth` needs an authenticated id: the ip id does not count.
        assert_eq!(
            fixup(&NodeAcl::creator_all(), &ip_only),
            Err(ZkError::InvalidAcl)
        );
        let invalid = |entries: Vec<Acl>| fixup(&NodeAcl::List(entries.into()), &both);
        assert_eq!(invalid(vec![]), Err(ZkError::InvalidAcl));
        assert_eq!(
            invalid(vec![Acl::new(Perms::ALL, "kerberos", "alice")]),
            Err(ZkError::InvalidAcl)
        );
        assert_eq!(
            invalid(vec![Acl::new(Perms::ALL, "digest", "alice")]),
            Err(ZkError::InvalidAcl)
        );
        assert_eq!(
            invalid(vec![Acl::new(Perms::ALL, "ip", "10.1.0.0/33")]),
            Err(ZkError::InvalidAcl)
        );
        assert_eq!(
            invalid(vec![Acl::new(Perms::ALL, "world", "someone")]),
            Err(ZkError::InvalidAcl)
        );
        // Duplicates go; the open ACL is stored as `Open`.
        assert_eq!(invalid(vec![Acl::open(), Acl::open()]), Ok(NodeAcl::Open));
    }
}
