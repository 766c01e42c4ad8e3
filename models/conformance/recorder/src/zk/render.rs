//! ZooKeeper answers as the probe files write them (models/conformance/README.md): stats
//! through `probe_format::ZkStat`, ACLs as `scheme:id:perms`, errors by ZooKeeper's names.

use probe_format::{Roles, ZkStat};
use zookeeper_client::{Acl, AuthId, Error, Permission, Stat};

/// A Stat as the probes write it (`probe_format::ZkStat`).
pub fn stat(stat: &Stat, sessions: &mut Roles) -> String {
    ZkStat {
        czxid: stat.czxid,
        mzxid: stat.mzxid,
        pzxid: stat.pzxid,
        version: stat.version,
        cversion: stat.cversion,
        aversion: stat.aversion,
        ephemeral_owner: stat.ephemeral_owner,
        data_length: stat.data_length,
        num_children: stat.num_children,
    }
    .render(sessions)
}

/// An error as `err KIND`, with ZooKeeper's name for the code (KeeperException.Code's names).
/// The client crate's own conditions keep the crate's names (`ClientClosed`, `Timeout`).
pub fn error(error: &Error) -> String {
    let kind = match error {
        Error::NoNode => "NoNode",
        Error::NodeExists => "NodeExists",
        Error::BadVersion => "BadVersion",
        Error::NotEmpty => "NotEmpty",
        Error::NoChildrenForEphemerals => "NoChildrenForEphemerals",
        Error::BadArguments(_) => "BadArguments",
        Error::NoAuth => "NoAuth",
        Error::InvalidAcl => "InvalidACL",
        Error::AuthFailed => "AuthFailed",
        Error::SessionExpired => "SessionExpired",
        Error::ConnectionLoss => "ConnectionLoss",
        Error::ClientClosed => "ClientClosed",
        Error::Timeout => "Timeout",
        Error::Unimplemented => "Unimplemented",
        Error::NoWatcher => "NoWatcher",
        other => return format!("err Other ({other})"),
    };
    format!("err {kind}")
}

/// Permissions as ZooKeeper's CLI writes them: a subset of `cdrwa`, in that order.
fn perms(permission: Permission) -> String {
    [
        (Permission::CREATE, 'c'),
        (Permission::DELETE, 'd'),
        (Permission::READ, 'r'),
        (Permission::WRITE, 'w'),
        (Permission::ADMIN, 'a'),
    ]
    .iter()
    .filter(|(bit, _)| permission.has(*bit))
    .map(|(_, letter)| *letter)
    .collect()
}

/// An ACL list: `acl=[world:anyone:cdrwa,digest:bob:HASH:r]`.
pub fn acl(acls: &[Acl]) -> String {
    let entries: Vec<String> = acls
        .iter()
        .map(|acl| format!("{}:{}:{}", acl.scheme(), acl.id(), perms(acl.permission())))
        .collect();
    format!("acl=[{}]", entries.join(","))
}

/// Reads an ACL argument: `open`, `read`, `creator`, or `scheme:id:perms,…` (the id may hold
/// colons, as digest ids do: the scheme ends at the first colon, the perms start after the last).
pub fn parse_acl(text: &str) -> Result<Vec<Acl>, String> {
    let anyone = || AuthId::new("world", "anyone");
    match text {
        "open" => return Ok(vec![Acl::new(Permission::ALL, anyone())]),
        "read" => return Ok(vec![Acl::new(Permission::READ, anyone())]),
        "creator" => return Ok(vec![Acl::new(Permission::ALL, AuthId::new("auth", ""))]),
        _ => {}
    }
    text.split(',')
        .filter(|entry| !entry.is_empty())
        .map(|entry| {
            let (scheme, rest) = entry.split_once(':').ok_or("scheme:id:perms")?;
            let (id, letters) = rest.rsplit_once(':').ok_or("scheme:id:perms")?;
            let mut permission = Permission::NONE;
            for letter in letters.chars() {
                permission = permission
                    | match letter {
                        'c' => Permission::CREATE,
                        'd' => Permission::DELETE,
                        'r' => Permission::READ,
                        'w' => Permission::WRITE,
                        'a' => Permission::ADMIN,
                        _ => return Err("perms made of the letters cdrwa"),
                    };
            }
            Ok(Acl::new(permission, AuthId::new(scheme, id)))
        })
        .collect::<Result<Vec<Acl>, &str>>()
        .map_err(|expected| format!("open, read, creator or a list of {expected}, not `{text}`"))
}
