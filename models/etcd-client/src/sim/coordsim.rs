//! What coordsim's tests need from a handle that etcd-client has no call for. Not in
//! etcd-client: code that uses it compiles only under `--cfg madsim`, so keep it in test
//! harnesses (`tests/`), never in the code under test. The zookeeper-client drop-in has the
//! same accessor, `zookeeper_client::coordsim::history_process`.

use super::{Client, ElectionClient, KvClient, LeaseClient, LockClient};

/// A handle whose calls are recorded under one history process: [`Client`] (its own KV
/// calls: `put`, `get`, `delete`, `txn`, `compact`), [`KvClient`], [`LockClient`],
/// [`ElectionClient`] and [`LeaseClient`]. Sealed: only this crate's handles are.
pub trait RecordedHandle: sealed::Sealed {
    /// The process (see [`history_process`]).
    #[doc(hidden)]
    fn process(&self) -> u32;
}

mod sealed {
    /// Keeps [`super::RecordedHandle`] to this crate's handles.
    pub trait Sealed {}
}

macro_rules! recorded_handle {
    ($($handle:ty),*) => {$(
        impl sealed::Sealed for $handle {}
        impl RecordedHandle for $handle {
            fn process(&self) -> u32 {
                self.history_process()
            }
        }
    )*};
}

recorded_handle!(Client, KvClient, LockClient, ElectionClient, LeaseClient);

/// The history process `handle`'s calls are recorded as: one per handle (each clone, and
/// each handle `Client::lock_client` and its siblings make, is another). A test harness
/// records its lock beliefs as the process of the handle that takes the lock
/// (`coordsim::testing::UserNode::lock_as`), as it does with the zookeeper-client drop-in,
/// so that a check joining beliefs with calls finds both under one process.
///
/// `Client`'s lock, election and lease shortcuts (`Client::lock`, `campaign`, ...) each go
/// through a handle of their own, made for the call: to name the process of a lock, take
/// it through one `LockClient` (`Client::lock_client`).
pub fn history_process(handle: &impl RecordedHandle) -> u32 {
    handle.process()
}
