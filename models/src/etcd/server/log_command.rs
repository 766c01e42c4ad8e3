//! What the store puts in a Raft log entry: a command and, for a client's write, the
//! identity the client stamped on it, digested together once when proposed.

use crate::{etcd::command::StoreCommand, raft::driver::RaftCommand};
use sim::{digest::StableHasher, history::RequestRef};
use std::sync::Arc;

/// What a Raft log entry of the store carries: a command and, for a client's write, the
/// identity the client stamped on it. Shared, so AppendEntries clone cheaply, and digested
/// once when proposed, since every replica records the digest of every entry it applies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogCommand(Arc<DigestedCommand>);

#[derive(Debug, PartialEq, Eq)]
struct DigestedCommand {
    command: StoreCommand,
    request: Option<RequestRef>,
    digest: u64,
}

impl LogCommand {
    /// Wraps the server's own `command` (no client asked for it) for the log.
    pub fn new(command: StoreCommand) -> Self {
        Self::requested(command, None)
    }

    /// Wraps `command`, proposed for the client write `request` names, for the log.
    pub fn requested(command: StoreCommand, request: Option<RequestRef>) -> Self {
        let digest = match request {
            None => command.digest(),
            // The request is digested with the command, so that replicas that agree on an
            // entry's digest agree on the request it names (what the checker relies on).
            Some(request) => {
                let mut hasher = StableHasher::new();
                hasher.write_u64(command.digest());
                hasher.write_u64(request.client);
                hasher.write_u64(request.sequence);
                hasher.finish().0
            }
        };
        Self(Arc::new(DigestedCommand {
            command,
            request,
            digest,
        }))
    }
}

impl std::ops::Deref for LogCommand {
    type Target = StoreCommand;

    fn deref(&self) -> &StoreCommand {
        &self.0.command
    }
}

impl RaftCommand for LogCommand {
    fn digest(&self) -> u64 {
        self.0.digest
    }

    fn request(&self) -> Option<RequestRef> {
        self.0.request
    }
}
