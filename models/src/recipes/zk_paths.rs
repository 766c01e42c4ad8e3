//! Path helpers the ZooKeeper recipes share.

use crate::zk::{ZkClient, ZkClientError};
use sim::history::zk::{CreateMode, ZkError};

/// Creates every missing ancestor of `path` as an empty persistent node (Curator's
/// `creatingParentsIfNeeded`). A parent created meanwhile by someone else is fine; a lost
/// connection is retried, since creating a persistent empty node twice is harmless.
pub(crate) async fn ensure_parents(zk: &ZkClient, path: &str) -> Result<(), ZkClientError> {
    let mut prefix = String::new();
    let parts: Vec<&str> = path.split('/').filter(|part| !part.is_empty()).collect();
    for part in &parts[..parts.len().saturating_sub(1)] {
        prefix.push('/');
        prefix.push_str(part);
        loop {
            match zk.create(&prefix, "", CreateMode::Persistent).await {
                Ok(_) | Err(ZkClientError::Api(ZkError::NodeExists)) => break,
                Err(ZkClientError::ConnectionLoss) => continue,
                Err(error) => return Err(error),
            }
        }
    }
    Ok(())
}

/// The sequence number ZooKeeper appended to a sequential node's `name`: its last ten
/// characters, read as ZooKeeper writes them (`%010d` of a signed 32-bit counter).
pub(crate) fn sequence_of(name: &str) -> Option<i64> {
    let start = name.len().checked_sub(10)?;
    name.get(start..)?
        .trim_start_matches('0')
        .parse()
        .ok()
        .or_else(|| {
            name.get(start..)
                .filter(|digits| digits.bytes().all(|b| b == b'0'))
                .map(|_| 0)
        })
}

#[cfg(test)]
mod tests {
    use super::sequence_of;

    #[test]
    fn sequence_numbers_are_the_last_ten_digits() {
        assert_eq!(sequence_of("_c_ab-lock-0000000012"), Some(12));
        assert_eq!(sequence_of("lock-0000000000"), Some(0));
        assert_eq!(sequence_of("lock-2147483647"), Some(2_147_483_647));
        assert_eq!(sequence_of("short"), None);
    }
}
