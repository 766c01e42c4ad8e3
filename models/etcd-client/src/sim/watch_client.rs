//! etcd-client 0.21.1's `WatchClient` (`rpc/watch.rs`): opens [`WatchStream`]s.

use super::{error::Result, new_client, watch::WatchOptions, watch_stream::WatchStream};
use models::etcd::EtcdCluster;
use sim::NodeContext;
use std::sync::Arc;

/// Client for watch operations (etcd-client's `WatchClient`). Each stream it opens is a
/// process of its own in the history, as the stream can run beside other calls.
#[derive(Clone)]
pub struct WatchClient {
    cluster: Arc<EtcdCluster>,
    /// The node it sends from.
    context: NodeContext,
}

impl WatchClient {
    pub(super) fn new(cluster: Arc<EtcdCluster>, context: NodeContext) -> Self {
        Self { cluster, context }
    }

    /// Limits the maximum size of a decoded message (etcd-client's
    /// `WatchClient::max_decoding_message_size`). The simulated stream has no message size,
    /// so there is nothing to limit: it returns the client unchanged.
    pub fn max_decoding_message_size(self, _limit: usize) -> Self {
        self
    }

    /// Watches for events happening or that have happened (etcd-client's
    /// `WatchClient::watch`). The stream's first message is the `created` response; more
    /// watches can share the stream ([`WatchStream::watch`]). Unlike etcd-client's, the
    /// stream survives a broken connection: it reconnects to any server and resumes after
    /// the last revision it delivered, as the model's watch does.
    ///
    /// Errors: [`Error::InvalidArgs`](super::Error::InvalidArgs) for a key or range end that is not UTF-8 or a negative
    /// start revision; an `Unavailable` [`Error::GRpcStatus`](super::Error::GRpcStatus) when no server answered the
    /// create within the client's operation timeout.
    pub async fn watch(
        &mut self,
        key: impl Into<Vec<u8>>,
        options: Option<WatchOptions>,
    ) -> Result<WatchStream> {
        let client = new_client(&self.cluster, &self.context);
        WatchStream::open(client, options.unwrap_or_default().with_key(key)).await
    }
}
