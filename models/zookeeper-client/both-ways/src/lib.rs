//! A user module written only against zookeeper-client 0.11.2's API (nodes, ACLs, errors),
//! as production code is. `models/etcd-client/both-ways.sh` checks that it compiles both
//! ways: against the real crate (no `--cfg madsim`) and against coordsim's drop-in.

use std::time::Duration;
use zookeeper_client::{
    Acl, Acls, AddWatchMode, AuthId, CheckWriteError, CheckWriter, Client, CreateMode,
    CreateSequence, Error, EventType, LockClient, LockOptions, LockPrefix, MultiReadResult,
    MultiReader, MultiWriteError, MultiWriteResult, MultiWriter, OwnedLockClient, Permission,
    PersistentWatcher, SessionId, SessionState, Stat, StateWatcher, WatchedEvent,
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

/// Waits until `path`'s data changes or the session ends; answers what happened.
pub async fn await_change(client: &Client, path: &str) -> Result<String, Error> {
    let (_, _, watcher) = client.get_and_watch_data(path).await?;
    let event: WatchedEvent = watcher.changed().await;
    Ok(match event.event_type {
        EventType::Session => format!("session {}", event.session_state),
        EventType::NodeDataChanged | EventType::NodeDeleted => {
            format!("{} at {}", event.path, event.zxid)
        }
        other => format!("{other}"),
    })
}

/// Follows the session until it ends; answers how many times it reconnected.
pub async fn follow(client: &Client) -> (SessionId, u32) {
    let mut watcher: StateWatcher = client.state_watcher();
    let mut reconnects = 0;
    loop {
        match watcher.changed().await {
            SessionState::SyncConnected => reconnects += 1,
            state if state.is_terminated() => return (client.session_id(), reconnects),
            _ => {}
        }
    }
}

/// Counts the events below `root` until `limit`, through a recursive watch.
pub async fn count_events(client: &Client, root: &str, limit: usize) -> Result<usize, Error> {
    let mut watcher: PersistentWatcher = client
        .watch(root, AddWatchMode::PersistentRecursive)
        .await?;
    let mut seen = 0;
    while seen < limit {
        let event = watcher.changed().await;
        if event.event_type == EventType::Session && event.session_state.is_terminated() {
            break;
        }
        seen += 1;
    }
    client.sync(root).await?;
    Ok(seen)
}

/// Moves `from`'s data to `to` atomically, fenced on `from`'s version.
pub async fn rename(client: &Client, from: &str, to: &str) -> Result<(), Error> {
    let (data, stat) = client.get_data(from).await?;
    let mut writer: MultiWriter<'_> = client.new_multi_writer();
    writer.add_check_version(from, stat.version)?;
    writer.add_create(
        to,
        &data,
        &CreateMode::Persistent.with_acls(Acls::anyone_all()),
    )?;
    writer.add_delete(from, None)?;
    match writer.commit().await {
        Ok(results) => {
            for result in results {
                if let MultiWriteResult::Create { path, .. } = result {
                    assert_eq!(path, to);
                }
            }
            Ok(())
        }
        Err(MultiWriteError::OperationFailed { index: 0, .. }) => Err(Error::BadVersion),
        Err(error) => Err(error.into()),
    }
}

/// Sets `path` unless `guard`'s version moved.
pub async fn guarded_set(
    client: &Client,
    guard: &str,
    version: i32,
    path: &str,
) -> Result<usize, Error> {
    let mut writer: CheckWriter<'_> = client.new_check_writer(guard, Some(version))?;
    writer.add_set_data(path, b"x", None)?;
    let results = writer
        .commit()
        .await
        .map_err(|error: CheckWriteError| Error::from(error))?;
    client
        .mkdir(
            "/tmp/a/b",
            &CreateMode::Persistent.with_acls(Acls::anyone_all()),
        )
        .await?;
    let _ = client.list_ephemerals("/").await?;
    let _ = client.count_descendants_number("/").await?;
    Ok(results.len())
}

/// Reads `node`'s data and `parent`'s children in one request; a missing node reads `None`.
pub async fn snapshot(
    client: &Client,
    parent: &str,
    node: &str,
) -> Result<(Option<Vec<u8>>, Vec<String>), Error> {
    let mut reader: MultiReader<'_> = client.new_multi_reader();
    reader.add_get_data(node)?;
    reader.add_get_children(parent)?;
    let (mut data, mut children) = (None, Vec::new());
    for result in reader.commit().await? {
        match result {
            MultiReadResult::Data { data: bytes, stat } => {
                assert!(stat.version >= 0);
                data = Some(bytes);
            }
            MultiReadResult::Children { children: names } => children = names,
            MultiReadResult::Error { err: Error::NoNode } => {}
            MultiReadResult::Error { err } => return Err(err),
            other => return Err(Error::UnexpectedError(format!("{other:?}"))),
        }
    }
    reader.abort();
    Ok((data, children))
}

/// Takes the lock under `dir` and, while it holds, records `who` as the leader through
/// writes the lock node guards; answers the lock's path.
pub async fn lead(client: &Client, dir: &str, who: &str) -> Result<String, Error> {
    let prefix = format!("{dir}/lock-");
    let options = LockOptions::new(Acls::anyone_all())
        .with_ancestor_options(CreateMode::Persistent.with_acls(Acls::anyone_all()))?;
    let lock: LockClient<'_> = client
        .lock(LockPrefix::new_shared(&prefix)?, b"", options)
        .await?;
    let leader = format!("{dir}/leader");
    let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let (_stat, _sequence): (Stat, CreateSequence) =
        lock.create(&leader, who.as_bytes(), &open).await?;
    let stat = lock.set_data(&leader, who.as_bytes(), Some(0)).await?;
    let mut writer: CheckWriter<'_> = lock.new_check_writer();
    writer.add_set_data(&leader, b"", Some(stat.version))?;
    writer.commit().await?;
    let owned: OwnedLockClient = lock.into_owned();
    let _ = owned.client().session_id();
    match owned.delete(&leader, None).await {
        // The lock node is gone (its session expired, or it was deleted).
        Err(Error::RuntimeInconsistent) => return Err(Error::RuntimeInconsistent),
        other => other?,
    }
    let mut writer = owned.new_check_writer();
    writer.add_create(&leader, who.as_bytes(), &open)?;
    writer.commit().await?;
    owned.set_data(&leader, b"done", None).await?;
    owned
        .create(
            &format!("{dir}/n-"),
            b"",
            &CreateMode::PersistentSequential.with_acls(Acls::anyone_all()),
        )
        .await?;
    Ok(owned.lock_path().to_string())
}
