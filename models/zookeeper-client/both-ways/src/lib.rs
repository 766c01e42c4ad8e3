//! A user module written only against zookeeper-client 0.11.2's API (nodes, ACLs, errors),
//! as production code is. `models/etcd-client/both-ways.sh` checks that it compiles both
//! ways: against the real crate (no `--cfg madsim`) and against coordsim's drop-in.

use std::time::Duration;
use zookeeper_client::{
    Acl, Acls, AuthId, Client, CreateMode, CreateSequence, Error, Permission, Stat,
};

/// Connects with a session timeout of `timeout`.
pub async fn connect(cluster: &str, timeout: Duration) -> Result<Client, Error> {
    Client::connector()
        .with_session_timeout(timeout)
        .with_connection_timeout(timeout / 4)
        .connect(cluster)
        .await
}

/// Registers `name` as an ephemeral sequential member under `group` (made if missing) and
/// lists the group; answers the member's sequence and who is listed.
pub async fn join(
    client: &Client,
    group: &str,
    name: &str,
) -> Result<(CreateSequence, Vec<String>), Error> {
    let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
    match client.create(group, b"", &open).await {
        Ok(_) | Err(Error::NodeExists) => {}
        Err(error) => return Err(error),
    }
    let member = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    let prefix = format!("{group}/member-");
    let (_stat, sequence) = client.create(&prefix, name.as_bytes(), &member).await?;
    let mut members = client.list_children(group).await?;
    members.sort();
    Ok((sequence, members))
}

/// Bumps a counter node with a compare-and-set on its version; answers the new stat.
pub async fn bump(client: &Client, path: &str) -> Result<Stat, Error> {
    loop {
        let (data, stat) = client.get_data(path).await?;
        let count: u64 = String::from_utf8_lossy(&data).parse().unwrap_or(0);
        match client
            .set_data(path, (count + 1).to_string().as_bytes(), Some(stat.version))
            .await
        {
            Err(Error::BadVersion) => continue,
            other => return other,
        }
    }
}

/// Locks a node down to read-only for everyone, unless it is gone.
pub async fn freeze(client: &Client, path: &str) -> Result<Option<Stat>, Error> {
    let Some(stat) = client.check_stat(path).await? else {
        return Ok(None);
    };
    let read_only = [Acl::new(Permission::READ, AuthId::anyone())];
    let (acl, _) = client.get_acl(path).await?;
    if acl == read_only {
        return Ok(Some(stat));
    }
    client
        .set_acl(path, &read_only, Some(stat.aversion))
        .await
        .map(Some)
}

/// Deletes `path` and its children (one level), whatever their versions.
pub async fn remove(client: &Client, path: &str) -> Result<(), Error> {
    let (children, _) = client.get_children(path).await?;
    for child in children {
        match client.delete(&format!("{path}/{child}"), None).await {
            Ok(()) | Err(Error::NoNode) => {}
            Err(error) => return Err(error),
        }
    }
    client.delete(path, None).await
}

/// Authenticates as `user`.
pub async fn login(client: &Client, user: &str, password: &str) -> Result<(), Error> {
    client
        .auth("digest", format!("{user}:{password}").as_bytes())
        .await
}
