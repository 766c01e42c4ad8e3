//! Leader election on ZooKeeper (ZooKeeper recipes, "Leader Election"; Curator's
//! `LeaderLatch`; the seeds' gocorex election): each candidate joins a line of protected
//! ephemeral-sequential children of the election node, its node's data the identity it
//! announces ([`super::line`]); the first in line (lowest sequence) leads; every other
//! candidate watches only its immediate predecessor, and lists again if it vanished before
//! the watch was set. The fencing token is the leader's node's `czxid`.
//!
//! A leader stops trusting its leadership when its node is deleted, its session ends, or its
//! connection is interrupted ([`ZkLeadership::lost`], as `ZkLockGuard::lost`). Anyone may
//! look up or follow who leads ([`ZkElection::leader`], [`ZkLeaderObserver`]): the first
//! node's data, watched so that its deletion (or a new first node) is noticed.

use crate::recipes::shared::bugs::RecipeBugs;
use crate::recipes::shared::error::RecipeError;
use crate::recipes::shared::recorder::ElectionRecorder;
use crate::recipes::zk::contender::Contender;
use crate::recipes::zk::held::{NodeName, ZkLeadership};
use crate::recipes::zk::line::{Line, Waits};
use crate::recipes::zk::paths::ensure_parents;
use crate::zk::{Watch, WatchLost, WatchedEvent, ZkClient, ZkClientError};
use futures_util::future::{BoxFuture, FutureExt};
use sim::{
    NodeContext,
    history::{recipe::ElectionStep, zk::ZkError},
};
use std::time::Duration;

/// The prefix of every candidate's node name (after the protection GUID).
const CHILD_PREFIX: &str = "candidate-";

/// An election whose candidates line up under `path`.
pub struct ZkElection {
    candidate: Contender<ElectionStep>,
}

impl ZkElection {
    /// The election at `path`, entered through `zk` by the client on `context`'s node.
    pub fn new(zk: &ZkClient, context: &NodeContext, path: &str) -> Self {
        Self {
            candidate: Contender::new(zk, context, path),
        }
    }

    /// With the known-bug variants `bugs` switched on.
    pub fn with_bugs(mut self, bugs: RecipeBugs) -> Self {
        self.candidate.bugs = bugs;
        self
    }

    fn line(&self) -> Line<'_> {
        self.candidate
            .line(CHILD_PREFIX, None, Waits::BehindPredecessor)
    }

    /// Enters the election announcing `identity` and waits, for at most `patience`, to lead
    /// (`OnStartedLeading`). On giving up, leaves the line.
    pub async fn campaign(
        &self,
        identity: &str,
        patience: Duration,
    ) -> Result<ZkLeadership, RecipeError> {
        let candidate = &self.candidate;
        let steps = async {
            let first = self
                .line()
                .wait_to_be_first(identity, patience, |watched| {
                    candidate.recorder.woken(watched)
                })
                .await?;
            Ok(
                candidate.won(first.czxid, first.node, NodeName::Unique, |token| {
                    ElectionStep::Gained { token }
                }),
            )
        };
        candidate.contend(ElectionStep::Campaigned, steps).await
    }

    /// Who leads now: the identity the first candidate in line announced, if any (Curator's
    /// `getLeader`). Records nothing: [`ZkLeaderObserver`] reports changes.
    pub async fn leader(&self) -> Result<Option<String>, RecipeError> {
        loop {
            match first_in_line(&self.line(), Watching::No).await {
                Ok((first, _)) => return Ok(first.map(|leader| leader.identity)),
                Err(ZkClientError::ConnectionLoss) => continue,
                Err(error) => return Err(RecipeError::from(error)),
            }
        }
    }
}

/// The first candidate in line: its node's name and the identity it announced.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Leader {
    node: String,
    identity: String,
}

/// Whether a look at the line leaves a watch that fires when its first candidate changes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Watching {
    Yes,
    No,
}

/// The first candidate in line, if any, and with [`Watching::Yes`] a watch that fires when
/// that may have changed: a data watch on the first node (it fires on its deletion), or, if
/// the line is empty, a child watch on the election node.
async fn first_in_line(
    line: &Line<'_>,
    watching: Watching,
) -> Result<(Option<Leader>, Option<Watch>), ZkClientError> {
    loop {
        let names = match line.in_order().await {
            Ok(names) => names,
            // No one ever campaigned: the election node does not exist yet.
            Err(ZkClientError::Api(ZkError::NoNode)) => Vec::new(),
            Err(error) => return Err(error),
        };
        let Some(first) = names.first() else {
            if watching == Watching::No {
                return Ok((None, None));
            }
            match line.zk.get_children_watch(line.parent).await {
                Ok((children, _, watch)) if children.is_empty() => {
                    return Ok((None, Some(watch)));
                }
                // Someone joined between the two reads.
                Ok(_) => continue,
                Err(ZkClientError::Api(ZkError::NoNode)) => {
                    // Create the election node so that a child watch can be set on it.
                    ensure_parents(line.zk, &line.path_of(CHILD_PREFIX)).await?;
                    continue;
                }
                Err(error) => return Err(error),
            }
        };
        let node = line.path_of(first);
        let read = match watching {
            Watching::Yes => line
                .zk
                .get_data_watch(&node)
                .await
                .map(|(data, _, watch)| (data, Some(watch))),
            Watching::No => line.zk.get_data(&node).await.map(|(data, _)| (data, None)),
        };
        match read {
            Ok((identity, watch)) => {
                return Ok((
                    Some(Leader {
                        node: first.clone(),
                        identity,
                    }),
                    watch,
                ));
            }
            // The first candidate left between the list and the read: list again.
            Err(ZkClientError::Api(ZkError::NoNode)) => continue,
            Err(error) => return Err(error),
        }
    }
}

/// Follows who leads an election (`OnNewLeader`), for a client that need not campaign. Its
/// watch outlives a [`next`](Self::next) whose patience ran out: the next call goes on
/// waiting on it.
pub struct ZkLeaderObserver {
    zk: ZkClient,
    path: String,
    context: NodeContext,
    recorder: ElectionRecorder,
    /// The leadership last reported: `Some(None)` after reporting that no one leads.
    reported: Option<Option<Leader>>,
    /// The watch that fires when the first in line may have changed, once the current one
    /// was reported.
    watching: Option<BoxFuture<'static, Result<WatchedEvent, WatchLost>>>,
}

impl ZkLeaderObserver {
    /// An observer of the election at `path`, through `zk`, on `context`'s node.
    pub fn new(zk: &ZkClient, context: &NodeContext, path: &str) -> Self {
        Self {
            zk: zk.clone(),
            path: path.to_string(),
            context: context.clone(),
            recorder: ElectionRecorder::new(context, zk.process(), path),
            reported: None,
            watching: None,
        }
    }

    /// Waits, for at most `patience`, until the leadership differs from the one last
    /// reported (at once, the first time) and reports it: the new leader's identity, or
    /// `None` if no one leads. A leader who resigned and won again is a new leadership.
    /// Records what it observed.
    pub async fn next(&mut self, patience: Duration) -> Result<Option<String>, RecipeError> {
        let clock = self.context.clock().clone();
        let deadline = clock.now() + patience;
        let line = Line {
            zk: &self.zk,
            context: &self.context,
            parent: &self.path,
            child_prefix: CHILD_PREFIX,
            // An observer only reads the line; it never joins it.
            bugs: RecipeBugs::default(),
            carried: None,
            waits: Waits::BehindPredecessor,
        };
        loop {
            if let Some(fired) = &mut self.watching {
                let left = deadline.saturating_duration_since(clock.now());
                match clock.timeout(left, fired).await {
                    Err(_) => return Err(RecipeError::TimedOut),
                    Ok(Err(_)) => {
                        self.watching = None;
                        return Err(RecipeError::SessionEnded);
                    }
                    Ok(Ok(_)) => self.watching = None,
                }
            }
            if clock.now() >= deadline {
                return Err(RecipeError::TimedOut);
            }
            let (first, watch) = match first_in_line(&line, Watching::Yes).await {
                Ok(found) => found,
                Err(ZkClientError::ConnectionLoss) => continue,
                Err(error) => return Err(RecipeError::from(error)),
            };
            self.watching = watch.map(|watch| watch.fired().boxed());
            if self.reported.as_ref() != Some(&first) {
                let identity = first.as_ref().map(|leader| leader.identity.clone());
                self.reported = Some(first);
                self.recorder.observed(identity.clone());
                return Ok(identity);
            }
        }
    }
}
