//! etcd's election, as in `go.etcd.io/etcd/client/v3/concurrency` (`Election`; the seeds'
//! gocorex election wraps it with `OnStartedLeading` / `OnStoppedLeading` / `OnNewLeader`):
//!
//! - [`EtcdElection::campaign`] puts `prefix/<lease id>` = the candidate's identity under the
//!   session's lease if absent (a key already there with another value is proclaimed over);
//!   the key with the lowest create revision leads; every other candidate waits for the
//!   deletion of every key with a lower create revision ([`super::line`]), **then checks
//!   that its own key still exists** — its lease may have expired while it waited (the fix
//!   for etcd-io/etcd#11051 and #19597; [`RecipeBug::EtcdElectionNoPostwaitCheck`] leaves it
//!   out, as upstream's `Election.Campaign` does today: `client/v3/concurrency/election.go`,
//!   v3.5.33 commit 9f4b1254, and main; the open fix is etcd-io/etcd#22387. The drop-in
//!   etcd-client's `ElectionClient` reproduces upstream by default);
//! - [`EtcdElection::proclaim`] replaces the leader's value only if its key still has its
//!   create revision (a transaction), so a deposed leader cannot announce;
//! - [`EtcdElection::resign`] deletes the leader's key on the same condition;
//! - [`EtcdElection::leader`] and [`EtcdLeaderObserver`] read the key with the lowest create
//!   revision under the prefix, and watch it from the read's revision;
//! - the fencing token is the leader's key's create revision.

use crate::etcd::{EtcdClient, WatchStream};
use crate::recipes::etcd::held::EtcdLeadership;
use crate::recipes::etcd::keys::{normalized_prefix, read_prefix};
use crate::recipes::etcd::line::KeyLine;
use crate::recipes::etcd::session::EtcdSession;
use crate::recipes::shared::bugs::{RecipeBug, RecipeBugs};
use crate::recipes::shared::error::RecipeError;
use crate::recipes::shared::recorder::ElectionRecorder;
use sim::{
    NodeContext,
    history::{
        OpResult, Response,
        kv::{Compare, CompareOperator, CompareTarget, KeyValue, KvOperation, KvResponse},
        recipe::{ElectionStep, LossReason},
    },
};
use std::time::Duration;

/// An election under `prefix`, entered through one session. Its requests go through the
/// caller's client, one per client process for its whole life (as with etcd's
/// `clientv3.Client`): the client numbers its watches, and a process's watches must not
/// share numbers.
pub struct EtcdElection {
    line: KeyLine<ElectionStep>,
}

impl EtcdElection {
    /// The election at `prefix` for `session`, entered by the client process `process` on
    /// `context`'s node.
    pub fn new(context: &NodeContext, process: u32, session: &EtcdSession, prefix: &str) -> Self {
        Self {
            line: KeyLine::new(context, process, session, prefix),
        }
    }

    /// With the known-bug variants `bugs` switched on.
    pub fn with_bugs(mut self, bugs: RecipeBugs) -> Self {
        self.line.bugs = bugs;
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
    ) -> Result<EtcdLeadership, RecipeError> {
        self.line.recorder.record(ElectionStep::Campaigned);
        let waited = self
            .line
            .within(session, patience, self.try_campaign(client, identity))
            .await;
        self.line
            .end_wait(client, waited, |token| ElectionStep::Gained { token })
            .await
    }

    /// The campaign's steps; the token on success.
    async fn try_campaign(
        &self,
        client: &mut EtcdClient,
        identity: &str,
    ) -> Result<u64, RecipeError> {
        let mine = self.line.join(client, identity).await?;
        if mine.value != identity {
            // Our key from an earlier campaign of this session, announcing something else.
            self.replace_value(client, mine.create_revision, identity)
                .await?;
        }
        self.line
            .wait_for_turn(
                client,
                mine.create_revision,
                RecipeBug::EtcdElectionNoPostwaitCheck,
            )
            .await
    }

    /// Announces `value` as the leader's (etcd's `Proclaim`), if `leadership` is still ours:
    /// its key still has the create revision it had when we won. If it is not, the leader
    /// has learned it lost (recorded): the caller must stop acting as leader. A request the
    /// store did not answer fails with [`RecipeError::Store`] (the value may or may not
    /// have been replaced; the leadership itself is unaffected).
    pub async fn proclaim(
        &self,
        client: &mut EtcdClient,
        leadership: &EtcdLeadership,
        value: &str,
    ) -> Result<(), RecipeError> {
        let result = self.replace_value(client, leadership.token(), value).await;
        match &result {
            Err(RecipeError::NotLeader) => leadership.record_lost(LossReason::NodeDeleted),
            Err(RecipeError::SessionEnded) => leadership.record_lost(LossReason::LeaseExpired),
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
    ) -> Result<(), RecipeError> {
        let result = client
            .txn(
                vec![still_ours(&self.line.key, token)],
                vec![KvOperation::Put {
                    prev_kv: false,
                    key: self.line.key.clone(),
                    value: value.to_string(),
                    lease: Some(self.line.lease),
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
                    Err(RecipeError::NotLeader)
                }
            }
            other => Err(RecipeError::from_etcd(other)),
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
        let delete = KvOperation::Txn {
            compares: vec![still_ours(&leadership.hold.key, leadership.token())],
            success: vec![KvOperation::Delete {
                prev_kv: false,
                key: leadership.hold.key.clone(),
                range_end: None,
            }],
            failure: Vec::new(),
        };
        leadership
            .let_go(client, &self.line.context, session, delete)
            .await;
    }

    /// Who leads now (etcd's `Leader`): the value of the key with the lowest create revision
    /// under the prefix, if any. Records nothing: [`EtcdLeaderObserver`] reports changes.
    pub async fn leader(&self, client: &mut EtcdClient) -> Option<String> {
        let (_, kvs) = read_prefix(client, &self.line.context, &self.line.prefix).await;
        first_created(kvs).map(|kv| kv.value)
    }
}

/// The compare "`key` still has create revision `token`": the key is the one we won with.
fn still_ours(key: &str, token: u64) -> Compare {
    Compare {
        key: key.to_string(),
        target: CompareTarget::CreateRevision(token),
        operator: CompareOperator::Equal,
        range_end: None,
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
    ) -> Result<String, RecipeError> {
        let clock = self.context.clock().clone();
        let deadline = clock.now() + patience;
        loop {
            if let Some(watch) = &mut self.watching {
                // Any change (or a compaction) means: read again.
                let left = deadline.saturating_duration_since(clock.now());
                if clock.timeout(left, watch.next()).await.is_err() {
                    return Err(RecipeError::TimedOut);
                }
                if let Some(watch) = self.watching.take() {
                    watch.close();
                }
            }
            if clock.now() >= deadline {
                return Err(RecipeError::TimedOut);
            }
            let (revision, kvs) = read_prefix(client, &self.context, &self.prefix).await;
            let first = first_created(kvs);
            // Watch the leader's key (or, with none, any key under the prefix) from the read.
            self.watching = Some(match &first {
                Some(kv) => client.watch(&kv.key, None, revision + 1).await,
                None => {
                    client
                        .watch(
                            &self.prefix,
                            Some(crate::etcd::prefix_range_end(&self.prefix)),
                            revision + 1,
                        )
                        .await
                }
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
