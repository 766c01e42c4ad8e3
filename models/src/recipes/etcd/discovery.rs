//! Service discovery on etcd (the seeds' gocorex `EtcdDiscovery`; etcd's `naming/endpoints`):
//!
//! - a member *registers* by putting `<group>/<member>` = its value, attached to its
//!   session's lease ([`EtcdSession`]): the key lives as long as the lease, so a member that
//!   dies drops out when its lease expires; it *unregisters* by deleting the key;
//!   [`EtcdRegistration::lost`] tells it when its session is over;
//! - a discoverer reads the prefix (linearizable) and reports the view
//!   (`OnStartedDiscovering`), then watches the prefix **from the read's revision + 1**:
//!   every change after the read, and none before it, arrives in revision order, so the
//!   view it maintains from puts and deletes is the store's at each revision it has seen
//!   (`OnServiceChanged`). The watch stream resumes after a reconnect from the revision
//!   after the last one it delivered; if that revision was compacted, the discoverer reads
//!   the prefix again and watches from there.

use crate::etcd::{ChangeKind, EtcdClient, WatchItem, WatchStream, kv_response, prefix_range_end};
use crate::recipes::etcd::session::EtcdSession;
use crate::recipes::shared::error::RecipeError;
use crate::recipes::shared::membership::MembershipRecorder;
use futures_util::FutureExt;
use sim::{
    NodeContext,
    history::{
        OpError, OpResult,
        kv::{KvError, KvResponse},
        recipe::LossReason,
    },
};
use std::{collections::BTreeSet, time::Duration};

/// Pause before retrying a request the store did not answer.
const RETRY: Duration = Duration::from_millis(50);

/// A member's registration: its key, attached to its session's lease.
pub struct EtcdRegistration {
    key: String,
    member: String,
    recorder: MembershipRecorder,
    context: NodeContext,
}

impl EtcdRegistration {
    /// Registers `member` with `value` in `group` under `session`'s lease, through the
    /// caller's `client`, as the client on `context`'s node. Retries until the store
    /// acknowledges the put (a put repeated after an unknown outcome writes the same key,
    /// value and lease again) or the session is over. Records the registration.
    pub async fn register(
        client: &mut EtcdClient,
        context: &NodeContext,
        session: &EtcdSession,
        group: &str,
        member: &str,
        value: &str,
    ) -> Result<Self, RecipeError> {
        let group = group.trim_end_matches('/');
        let key = format!("{group}/{member}");
        loop {
            if session.is_done() {
                return Err(RecipeError::SessionEnded);
            }
            match client.put_with_lease(&key, value, session.lease()).await {
                OpResult::Ok { .. } => break,
                OpResult::Fail {
                    error: OpError::Kv(KvError::LeaseNotFound { .. }),
                } => return Err(RecipeError::SessionEnded),
                _ => context.clock().sleep(RETRY).await,
            }
        }
        let recorder = MembershipRecorder::new(context, client.process(), group);
        recorder.registered(member);
        Ok(Self {
            key,
            member: member.to_string(),
            recorder,
            context: context.clone(),
        })
    }

    /// Completes when the session is over (the lease is gone, or was not renewed for a
    /// TTL): the key went, or may have gone, with the lease.
    pub async fn lost(&self, session: &EtcdSession) -> LossReason {
        session.done().await
    }

    /// Unregisters: deletes the key (retried until the store answers) and records it. A
    /// session over first fails with [`RecipeError::SessionEnded`]: the key goes with its
    /// lease.
    pub async fn unregister(
        self,
        client: &mut EtcdClient,
        session: &EtcdSession,
    ) -> Result<(), RecipeError> {
        loop {
            if let OpResult::Ok { .. } = client.delete(&self.key).await {
                self.recorder.unregistered(&self.member);
                return Ok(());
            }
            if session.is_done() {
                return Err(RecipeError::SessionEnded);
            }
            self.context.clock().sleep(RETRY).await;
        }
    }
}

/// A discoverer: the group's members as of the last revision its watch delivered.
pub struct EtcdDiscoverer {
    prefix: String,
    recorder: MembershipRecorder,
    context: NodeContext,
    view: BTreeSet<String>,
    watch: WatchStream,
}

impl EtcdDiscoverer {
    /// Starts discovering `group` through the caller's `client`, as the client on
    /// `context`'s node: reads the members, records the first view
    /// (`OnStartedDiscovering`) and watches from the revision after the read.
    pub async fn start(client: &mut EtcdClient, context: &NodeContext, group: &str) -> Self {
        let group = group.trim_end_matches('/');
        let prefix = format!("{group}/");
        let (view, watch) = read_and_watch(client, context, &prefix).await;
        let discoverer = Self {
            prefix,
            recorder: MembershipRecorder::new(context, client.process(), group),
            context: context.clone(),
            view,
            watch,
        };
        discoverer.recorder.view(&discoverer.view());
        discoverer
    }

    /// The members, sorted.
    fn view(&self) -> Vec<String> {
        self.view.iter().cloned().collect()
    }

    /// Waits until the members change, and reports the new view (`OnServiceChanged`,
    /// recorded), with every change that has arrived by then applied. It cannot fail: the
    /// watch needs no session. A watch whose next revision was compacted away is replaced by a new read
    /// and a watch from after it (through `client`).
    pub async fn changed(&mut self, client: &mut EtcdClient) -> Vec<String> {
        let before = self.view.clone();
        loop {
            let first = self.watch.next().await;
            if self.apply(client, first).await {
                // Apply whatever else has already arrived, so that a caller slower than the
                // changes gets one view of all of them rather than a backlog of old views.
                while let Some(item) = self.watch.next().now_or_never() {
                    if !self.apply(client, item).await {
                        break;
                    }
                }
            }
            if self.view != before {
                let view = self.view();
                self.recorder.view(&view);
                return view;
            }
        }
    }

    /// Applies one watch item to the view; `false` if the watch was compacted and replaced
    /// by a new read and watch (the view is then the read's).
    async fn apply(&mut self, client: &mut EtcdClient, item: WatchItem) -> bool {
        match item {
            WatchItem::Changes(changes) => {
                for change in changes {
                    let Some(member) = change.kv.key.strip_prefix(&self.prefix) else {
                        continue;
                    };
                    match change.kind {
                        ChangeKind::Put => self.view.insert(member.to_string()),
                        ChangeKind::Delete => self.view.remove(member),
                    };
                }
                true
            }
            // Not asked for: this watch never requests progress or cancels.
            WatchItem::Progress { .. } | WatchItem::Canceled => true,
            WatchItem::Compacted { .. } => {
                let (view, watch) = read_and_watch(client, &self.context, &self.prefix).await;
                std::mem::replace(&mut self.watch, watch).close();
                self.view = view;
                false
            }
        }
    }
}

/// The members under `prefix` (linearizable read, retried until answered) and a watch of
/// the prefix from the revision after that read.
async fn read_and_watch(
    client: &mut EtcdClient,
    context: &NodeContext,
    prefix: &str,
) -> (BTreeSet<String>, WatchStream) {
    loop {
        if let Some(KvResponse::Get { revision, kvs }) =
            kv_response(&client.get_prefix(prefix).await)
        {
            let members = kvs
                .iter()
                .filter_map(|kv| kv.key.strip_prefix(prefix).map(str::to_string))
                .collect();
            let watch = client
                .watch(prefix, Some(prefix_range_end(prefix)), revision + 1)
                .await;
            return (members, watch);
        }
        context.clock().sleep(RETRY).await;
    }
}
