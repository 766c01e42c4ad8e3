//! etcd's election, as in `go.etcd.io/etcd/client/v3/concurrency` (`Election`; the seeds'
//! gocorex election wraps it with `OnStartedLeading` / `OnStoppedLeading` / `OnNewLeader`):
//!
//! - [`EtcdElection::campaign`] puts `prefix/<lease id>` = the candidate's identity under the
//!   session's lease if absent (a key already there with another value is proclaimed over);
//!   the key with the lowest create revision leads; every other candidate waits for the
//!   deletion of every key with a lower create revision ([`super::keys`]), **then checks
//!   that its own key still exists** — its lease may have expired while it waited (the fix
//!   for etcd-io/etcd#11051 and #19597; [`RecipeBug::EtcdElectionNoPostwaitCheck`] leaves it
//!   out);
//! - [`EtcdElection::proclaim`] replaces the leader's value only if its key still has its
//!   create revision (a transaction), so a deposed leader cannot announce;
//! - [`EtcdElection::resign`] deletes the leader's key on the same condition;
//! - [`EtcdElection::leader`] and [`EtcdLeaderObserver`] read the key with the lowest create
//!   revision under the prefix, and watch it from the read's revision;
//! - the fencing token is the leader's key's create revision.

use crate::etcd::{EtcdClient, WatchStream};
use crate::recipes::etcd::keys::{
    backoff, normalized_prefix, own_key, put_if_absent, read_key, read_prefix, wait_for_deletes,
};
use crate::recipes::etcd::session::EtcdSession;
use crate::recipes::shared::bugs::{RecipeBug, RecipeBugs};
use crate::recipes::shared::election::{ElectionError, ElectionRecorder};
use sim::{
    NodeContext,
    history::{
        OpError, OpResult, Response,
        kv::{Compare, CompareOperator, CompareTarget, KeyValue, KvError, KvOperation, KvResponse},
        recipe::{ElectionStep, LossReason},
    },
};
use std::time::Duration;

/// An election under `prefix`, entered through one session. Its requests go through the
/// caller's client, one per client process for its whole life (as with etcd's
/// `clientv3.Client`): the client numbers its watches, and a process's watches must not
/// share numbers.
pub struct EtcdElection {
    bugs: RecipeBugs,
    prefix: String,
    key: String,
    context: NodeContext,
    recorder: ElectionRecorder,
    lease: u64,
}

impl EtcdElection {
    /// The election at `prefix` for `session`, entered by the client process `process` on
    /// `context`'s node.
    pub fn new(context: &NodeContext, process: u32, session: &EtcdSession, prefix: &str) -> Self {
        let prefix = normalized_prefix(prefix);
        Self {
            bugs: RecipeBugs::default(),
            key: own_key(&prefix, session.lease()),
            prefix: prefix.clone(),
            context: context.clone(),
            recorder: ElectionRecorder::new(context, process, prefix.trim_end_matches('/')),
            lease: session.lease(),
        }
    }

    /// With the known-bug variants `bugs` switched on.
    pub fn with_bugs(mut self, bugs: RecipeBugs) -> Self {
        self.bugs = bugs;
        self
    }

    /// Campaigns announcing `identity`, for at most `patience`, until it leads
    /// (`OnStartedLeading`). On giving up it deletes its key, leaving the line. Like etcd's
    /// `Campaign`, it does not watch the session while it waits: the post-wait check is what
    /// catches a lease that expired meanwhile.
    pub async fn campaign(
        &mut self,
        client: &mut EtcdClient,
        session: &EtcdSession,
        identity: &str,
        patience: Duration,
    ) -> Result<EtcdLeadership, ElectionError> {
        self.recorder.record(ElectionStep::Campaigned);
        let clock = self.context.clock().clone();
        let result = if session.is_done() {
            Err(ElectionError::SessionEnded)
        } else {
            clock
                .timeout(patience, self.try_campaign(client, identity))
                .await
                .unwrap_or(Err(ElectionError::TimedOut))
        };
        match result {
            Ok(token) => {
                self.recorder.record(ElectionStep::Gained { token });
                Ok(EtcdLeadership {
                    token,
                    recorder: self.recorder.clone(),
                    bugs: self.bugs,
                })
            }
            Err(error) => {
                self.recorder.gave_up(&error);
                // Leave the line: a candidate that gave up must not keep the others waiting
                // until its lease expires.
                let _ = client.delete(&self.key).await;
                Err(error)
            }
        }
    }

    /// The campaign's steps; the token on success.
    async fn try_campaign(
        &self,
        client: &mut EtcdClient,
        identity: &str,
    ) -> Result<u64, ElectionError> {
        let mine = put_if_absent(client, &self.context, &self.key, identity, self.lease)
            .await
            .map_err(|_| ElectionError::SessionEnded)?;
        let my_revision = mine.create_revision;
        if mine.value != identity {
            // Our key from an earlier campaign of this session, announcing something else.
            self.replace_value(client, my_revision, identity).await?;
        }
        wait_for_deletes(client, &self.context, &self.prefix, my_revision, |key| {
            self.recorder.woken(key)
        })
        .await;
        if self.bugs.has(RecipeBug::EtcdElectionNoPostwaitCheck) {
            return Ok(my_revision);
        }
        // The post-wait check: the lease may have expired while we waited, deleting our key;
        // whoever came after us may lead now.
        match read_key(client, &self.context, &self.key).await {
            Some(kv) if kv.create_revision == my_revision => Ok(my_revision),
            _ => Err(ElectionError::SessionEnded),
        }
    }

    /// Announces `value` as the leader's (etcd's `Proclaim`), if `leadership` is still ours:
    /// its key still has the create revision it had when we won. If it is not, the leader
    /// has learned it lost (recorded): the caller must stop acting as leader. A request the
    /// store did not answer fails with [`ElectionError::Store`] (the value may or may not
    /// have been replaced; the leadership itself is unaffected).
    pub async fn proclaim(
        &self,
        client: &mut EtcdClient,
        leadership: &EtcdLeadership,
        value: &str,
    ) -> Result<(), ElectionError> {
        let result = self.replace_value(client, leadership.token, value).await;
        match &result {
            Err(ElectionError::NotLeader) => leadership
                .recorder
                .lost(leadership.token, LossReason::NodeDeleted),
            Err(ElectionError::SessionEnded) => leadership
                .recorder
                .lost(leadership.token, LossReason::LeaseExpired),
            _ => {}
        }
        result
    }

    /// Puts `value` at our key if its create revision is still `token`.
    async fn replace_value(
        &self,
        client: &mut EtcdClient,
        token: u64,
        value: &str,
    ) -> Result<(), ElectionError> {
        let result = client
            .txn(
                vec![still_ours(&self.key, token)],
                vec![KvOperation::Put {
                    prev_kv: false,
                    key: self.key.clone(),
                    value: value.to_string(),
                    lease: Some(self.lease),
                }],
                Vec::new(),
            )
            .await;
        match result {
            OpResult::Ok {
                response: Response::Kv(KvResponse::Txn { succeeded, .. }),
            } => {
                if succeeded {
                    Ok(())
                } else {
                    Err(ElectionError::NotLeader)
                }
            }
            OpResult::Fail {
                error: OpError::Kv(KvError::LeaseNotFound { .. }),
            } => Err(ElectionError::SessionEnded),
            other => Err(ElectionError::Store(format!("{other:?}"))),
        }
    }

    /// Resigns (etcd's `Resign`): the leader stops believing it leads (recorded first), then
    /// deletes its key if it is still the one it won with (retried until the store answers,
    /// or the session is over), so the next candidate takes over.
    pub async fn resign(
        &mut self,
        client: &mut EtcdClient,
        leadership: EtcdLeadership,
        session: &EtcdSession,
    ) {
        self.recorder.record(ElectionStep::Resigned {
            token: leadership.token,
        });
        while !session.is_done() {
            let result = client
                .txn(
                    vec![still_ours(&self.key, leadership.token)],
                    vec![KvOperation::Delete {
                        prev_kv: false,
                        key: self.key.clone(),
                        range_end: None,
                    }],
                    Vec::new(),
                )
                .await;
            if let OpResult::Ok { .. } = result {
                return;
            }
            backoff(&self.context).await;
        }
    }

    /// Who leads now (etcd's `Leader`): the value of the key with the lowest create revision
    /// under the prefix, if any. Records nothing: [`EtcdLeaderObserver`] reports changes.
    pub async fn leader(&self, client: &mut EtcdClient) -> Option<String> {
        let (_, kvs) = read_prefix(client, &self.context, &self.prefix).await;
        first_created(kvs).map(|kv| kv.value)
    }
}

/// The compare "`key` still has create revision `token`": the key is the one we won with.
fn still_ours(key: &str, token: u64) -> Compare {
    Compare {
        key: key.to_string(),
        target: CompareTarget::CreateRevision(token),
        operator: CompareOperator::Equal,
    }
}

/// The key created first: the leader's.
fn first_created(kvs: Vec<KeyValue>) -> Option<KeyValue> {
    kvs.into_iter().min_by_key(|kv| kv.create_revision)
}

/// Follows who leads an election (etcd's `Observe`; gocorex's `OnNewLeader`), for a client
/// that need not campaign: reads the prefix, and watches the leader's key (or, with no
/// leader, the prefix) from the read's revision until it changes. The watch outlives a
/// [`next`](Self::next) whose patience ran out: the next call goes on waiting on it.
pub struct EtcdLeaderObserver {
    prefix: String,
    context: NodeContext,
    recorder: ElectionRecorder,
    /// The leader's key as last reported: its name, create revision and value.
    reported: Option<(String, u64, String)>,
    /// The watch for the next change, once the current leader was reported.
    watching: Option<WatchStream>,
}

impl EtcdLeaderObserver {
    /// An observer of the election at `prefix`, as client process `process` on `context`'s
    /// node.
    pub fn new(context: &NodeContext, process: u32, prefix: &str) -> Self {
        let prefix = normalized_prefix(prefix);
        Self {
            context: context.clone(),
            recorder: ElectionRecorder::new(context, process, prefix.trim_end_matches('/')),
            prefix,
            reported: None,
            watching: None,
        }
    }

    /// Waits, for at most `patience`, until someone leads with a key or value other than the
    /// one last reported (at once, the first time, if someone leads) and reports the
    /// leader's value. Like etcd's `Observe`, it never reports "no leader": it waits for
    /// one. Records what it observed.
    pub async fn next(
        &mut self,
        client: &mut EtcdClient,
        patience: Duration,
    ) -> Result<String, ElectionError> {
        let clock = self.context.clock().clone();
        let deadline = clock.now() + patience;
        loop {
            if let Some(watch) = &mut self.watching {
                // Any change (or a compaction) means: read again.
                let left = deadline.saturating_duration_since(clock.now());
                if clock.timeout(left, watch.next()).await.is_err() {
                    return Err(ElectionError::TimedOut);
                }
                if let Some(watch) = self.watching.take() {
                    watch.close();
                }
            }
            if clock.now() >= deadline {
                return Err(ElectionError::TimedOut);
            }
            let (revision, kvs) = read_prefix(client, &self.context, &self.prefix).await;
            let first = first_created(kvs);
            // Watch the leader's key (or, with none, any key under the prefix) from the read.
            self.watching = Some(match &first {
                Some(kv) => client.watch(&kv.key, None, revision + 1),
                None => client.watch(
                    &self.prefix,
                    Some(crate::etcd::prefix_range_end(&self.prefix)),
                    revision + 1,
                ),
            });
            if let Some(kv) = first {
                let leader = (kv.key, kv.create_revision, kv.value.clone());
                if self.reported.as_ref() != Some(&leader) {
                    self.reported = Some(leader);
                    self.recorder.observed(Some(kv.value.clone()));
                    return Ok(kv.value);
                }
            }
        }
    }

    /// Stops watching.
    pub fn close(mut self) {
        if let Some(watch) = self.watching.take() {
            watch.close();
        }
    }
}

/// An etcd leadership: the leader's fencing token.
pub struct EtcdLeadership {
    token: u64,
    recorder: ElectionRecorder,
    bugs: RecipeBugs,
}

impl EtcdLeadership {
    /// The fencing token: the leader's key's create revision.
    pub fn token(&self) -> u64 {
        self.token
    }

    /// Completes when the leader must stop trusting that it leads (`OnStoppedLeading`): its
    /// session is over. Records the loss.
    pub async fn lost(&self, session: &EtcdSession) -> LossReason {
        if self.bugs.has(RecipeBug::TrustLocalStateAfterExpiry) {
            // The bug: the leader never looks; its belief lasts until it resigns.
            return std::future::pending().await;
        }
        let why = session.done().await;
        self.recorder.lost(self.token, why);
        why
    }
}
