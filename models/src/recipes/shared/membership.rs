//! What the discovery recipes (ZooKeeper and etcd) share: their error, and how they record
//! what their clients believe — a member that it registered or unregistered, a discoverer
//! the view it reports to its caller.

use sim::{
    NodeContext,
    history::{Event, RecipeEvent, recipe::MembershipStep},
};
use std::fmt;

/// Why a discovery step did not complete.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DiscoveryError {
    /// The session (ZooKeeper) or lease (etcd) ended: a registration made through it is
    /// gone, a discoverer on it saw its last view. A new one is needed.
    SessionEnded,
    /// The store refused in a way the recipe does not retry.
    Store(String),
}

impl fmt::Display for DiscoveryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DiscoveryError::SessionEnded => f.write_str("the session or lease ended"),
            DiscoveryError::Store(message) => write!(f, "the store refused: {message}"),
        }
    }
}

impl std::error::Error for DiscoveryError {}

/// Records one client process's steps in one group, at its node.
#[derive(Clone)]
pub(crate) struct MembershipRecorder {
    context: NodeContext,
    process: u32,
    group: String,
}

impl MembershipRecorder {
    pub(crate) fn new(context: &NodeContext, process: u32, group: &str) -> Self {
        Self {
            context: context.clone(),
            process,
            group: group.to_string(),
        }
    }

    fn record(&self, step: MembershipStep) {
        self.context
            .history()
            .record(Event::Recipe(RecipeEvent::Membership {
                process: self.process,
                group: self.group.clone(),
                step,
            }));
    }

    pub(crate) fn registered(&self, member: &str) {
        self.record(MembershipStep::Registered {
            member: member.to_string(),
        });
    }

    pub(crate) fn unregistered(&self, member: &str) {
        self.record(MembershipStep::Unregistered {
            member: member.to_string(),
        });
    }

    /// The discoverer's view, as it hands it to its caller (`members` sorted).
    pub(crate) fn view(&self, members: &[String]) {
        self.record(MembershipStep::ViewChanged {
            members: members.to_vec(),
        });
    }
}
