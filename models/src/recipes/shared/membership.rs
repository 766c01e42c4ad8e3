//! What the discovery recipes (ZooKeeper and etcd) share: how they record what their
//! clients believe — a member that it registered or unregistered, a discoverer the view it
//! reports to its caller.

use sim::{
    NodeContext,
    history::{Event, RecipeEvent, recipe::MembershipStep},
};

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
