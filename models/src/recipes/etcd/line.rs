//! A client's place in line under an etcd prefix, as etcd's mutex and election both wait
//! (`Mutex.Lock` and `Election.Campaign`): its key `prefix/<lease id>` under the session's
//! lease, put if absent; the wait for the deletion of every key created before it
//! ([`super::keys`]); **then the check that its own key still exists** — the lease may have
//! expired while it waited, and whoever came after it may hold the token now. A client that
//! gives up deletes its key, so that it does not keep the others waiting until its lease
//! expires. The fencing token is the key's create revision.

use crate::etcd::EtcdClient;
use crate::recipes::etcd::held::EtcdKey;
use crate::recipes::etcd::keys::{
    KeyInLine, normalized_prefix, own_key, put_if_absent, read_key, wait_for_deletes,
};
use crate::recipes::etcd::session::EtcdSession;
use crate::recipes::shared::bugs::{RecipeBug, RecipeBugs};
use crate::recipes::shared::error::RecipeError;
use crate::recipes::shared::held::Held;
use crate::recipes::shared::recorder::{TokenRecorder, TokenSteps};
use sim::NodeContext;
use std::{future::Future, time::Duration};

/// One session's place in the line of a mutex or an election (steps `S`) under a prefix.
pub(crate) struct KeyLine<S> {
    /// The recipe's known-bug variants.
    pub(crate) bugs: RecipeBugs,
    /// The line's prefix, ending in `/`.
    pub(crate) prefix: String,
    /// The session's key in line.
    pub(crate) key: String,
    pub(crate) context: NodeContext,
    pub(crate) recorder: TokenRecorder<S>,
    /// The session's lease, which the key is put under.
    pub(crate) lease: u64,
}

impl<S: TokenSteps> KeyLine<S> {
    /// The line under `prefix` for `session`, joined by the client process `process` on
    /// `context`'s node.
    pub(crate) fn new(
        context: &NodeContext,
        process: u32,
        session: &EtcdSession,
        prefix: &str,
    ) -> Self {
        let prefix = normalized_prefix(prefix);
        Self {
            bugs: RecipeBugs::default(),
            key: own_key(&prefix, session.lease()),
            recorder: TokenRecorder::new(context, process, prefix.trim_end_matches('/')),
            prefix,
            context: context.clone(),
            lease: session.lease(),
        }
    }

    /// Puts the key with `value` if absent; where it stands in line.
    pub(crate) async fn join(
        &self,
        client: &mut EtcdClient,
        value: &str,
    ) -> Result<KeyInLine, RecipeError> {
        put_if_absent(client, &self.context, &self.key, value, self.lease)
            .await
            .map_err(|_| RecipeError::SessionEnded)
    }

    /// Waits until no key created before `my_revision` is left, then checks that the key
    /// is still the one put at `my_revision`; the token. `no_check` is the recipe's
    /// known-bug variant that leaves the check out.
    pub(crate) async fn wait_for_turn(
        &self,
        client: &mut EtcdClient,
        my_revision: u64,
        no_check: RecipeBug,
    ) -> Result<u64, RecipeError> {
        wait_for_deletes(client, &self.context, &self.prefix, my_revision, |key| {
            self.recorder.woken(key)
        })
        .await;
        if self.bugs.has(no_check) {
            return Ok(my_revision);
        }
        // The post-wait check: the lease may have expired while we waited, deleting our key.
        match read_key(client, &self.context, &self.key).await {
            Some(kv) if kv.create_revision == my_revision => Ok(my_revision),
            _ => Err(RecipeError::SessionEnded),
        }
    }

    /// Runs `steps` (the way to the head of the line) for at most `patience`, unless the
    /// session is already over. Like etcd's, it does not watch the session meanwhile: the
    /// post-wait check is what catches a lease that expired.
    pub(crate) async fn within(
        &self,
        session: &EtcdSession,
        patience: Duration,
        steps: impl Future<Output = Result<u64, RecipeError>>,
    ) -> Result<u64, RecipeError> {
        if session.is_done() {
            return Err(RecipeError::SessionEnded);
        }
        self.context
            .clock()
            .timeout(patience, steps)
            .await
            .unwrap_or(Err(RecipeError::TimedOut))
    }

    /// Ends a wait: on `Ok(token)` records `won(token)` and hands over the held token; on
    /// an error records that the client gave up and deletes its key (leaving the line).
    pub(crate) async fn end_wait(
        &self,
        client: &mut EtcdClient,
        waited: Result<u64, RecipeError>,
        won: impl FnOnce(u64) -> S,
    ) -> Result<Held<S, EtcdKey>, RecipeError> {
        match waited {
            Ok(token) => {
                self.recorder.record(won(token));
                Ok(Held::new(
                    token,
                    &self.recorder,
                    self.context.sim().now(),
                    self.bugs,
                    EtcdKey {
                        key: self.key.clone(),
                    },
                ))
            }
            Err(error) => {
                self.recorder.gave_up(&error);
                let _ = client.delete(&self.key).await;
                Err(error)
            }
        }
    }
}
