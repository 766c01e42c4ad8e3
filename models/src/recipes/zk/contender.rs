//! What a ZooKeeper lock or election keeps for its client, and how a client contends for
//! the token: it records that it asked, takes its way to the token (the herd lock's race
//! for one node, or a place in line, [`super::line`]), records that it won — the token is
//! its node's czxid — or that it gave up.

use crate::recipes::shared::bugs::RecipeBugs;
use crate::recipes::shared::error::RecipeError;
use crate::recipes::shared::held::Held;
use crate::recipes::shared::recorder::{TokenRecorder, TokenSteps};
use crate::recipes::zk::held::{NodeName, ZkNode};
use crate::recipes::zk::line::{CarriedJoin, Line, Waits};
use crate::zk::ZkClient;
use sim::NodeContext;
use std::future::Future;

/// One client's side of a ZooKeeper lock or election (steps `S`) at `path`.
pub(crate) struct Contender<S> {
    /// The recipe's known-bug variants.
    pub(crate) bugs: RecipeBugs,
    pub(crate) zk: ZkClient,
    /// The lock's or election's node.
    pub(crate) path: String,
    pub(crate) context: NodeContext,
    pub(crate) recorder: TokenRecorder<S>,
}

impl<S: TokenSteps> Contender<S> {
    /// The client of `zk`, on `context`'s node, contending at `path`.
    pub(crate) fn new(zk: &ZkClient, context: &NodeContext, path: &str) -> Self {
        Self {
            bugs: RecipeBugs::default(),
            zk: zk.clone(),
            path: path.to_string(),
            context: context.clone(),
            recorder: TokenRecorder::new(context, zk.process(), path),
        }
    }

    /// Records `asked`, then takes `steps` (the way to the token) and records that the
    /// client gave up if they fail.
    pub(crate) async fn contend(
        &self,
        asked: S,
        steps: impl Future<Output = Result<Held<S, ZkNode>, RecipeError>>,
    ) -> Result<Held<S, ZkNode>, RecipeError> {
        self.recorder.record(asked);
        let result = steps.await;
        if let Err(error) = &result {
            self.recorder.gave_up(error);
        }
        result
    }

    /// Records `won(token)` and hands over the token `token`, held by the node `node`.
    pub(crate) fn won(
        &self,
        token: u64,
        node: String,
        name: NodeName,
        won: impl FnOnce(u64) -> S,
    ) -> Held<S, ZkNode> {
        self.recorder.record(won(token));
        Held::new(
            token,
            &self.recorder,
            self.context.sim().now(),
            self.bugs,
            ZkNode::new(&self.zk, node, name),
        )
    }

    /// The line of `child_prefix` nodes under the path, waited in as `waits` says,
    /// carrying a join across sessions through `carried` if given.
    pub(crate) fn line<'a>(
        &'a self,
        child_prefix: &'a str,
        carried: Option<&'a CarriedJoin>,
        waits: Waits<'a>,
    ) -> Line<'a> {
        Line {
            zk: &self.zk,
            context: &self.context,
            parent: &self.path,
            child_prefix,
            bugs: self.bugs,
            carried,
            waits,
        }
    }
}
