//! The leader-elected worker under coordsim: three workers, each on its own client node,
//! campaign in one election on a 3-server Raft store; again and again, the candidate waiting
//! longest is paused past its lease's TTL. Every seed replays with the line a failure prints.
//!
//! - The worker that trusts `Campaign` is told it leads after its lease expired in the wait,
//!   next to the real leader (etcd-io/etcd#11051): `recipe.leader_uniqueness` fires.
//! - Its writes go through a fenced resource, so they stay safe: `recipe.fenced_writes`
//!   judges every accepted write and finds none from a deposed leader.
//! - The worker that reads its own key after `Campaign` passes the same seeds, and so does
//!   the trusting worker when the store runs upstream's open fix (etcd-io/etcd#22387).

use coordsim::testing::{
    CampaignCheck, ElectionBeliefs, FaultKind, FaultSource, LossReason, PauseClients, PausedClient,
    ResourceClient, Store, UserCode, UserNode, UserTest,
};
use leader_worker_example::{AfterCampaign, Ended, Leadership, Worker};
use std::time::Duration;

/// Seeds each test runs (`COORDSIM_SEEDS` overrides). The trusting worker is caught in
/// every one of them (10 of 10 when this was written; the test asks for at least one).
const SEEDS: u64 = 10;

/// The user's test harness: what the worker believes, recorded for the recipe checks, and
/// its work, written to the fenced resource with the leader key's revision as the token.
struct Recorded {
    beliefs: ElectionBeliefs,
    resource: ResourceClient,
}

impl Leadership for Recorded {
    fn campaigning(&mut self) {
        self.beliefs.campaigned();
    }
    fn gained(&mut self, fence: i64) {
        self.beliefs.gained(fence as u64);
    }
    async fn work(&mut self, fence: i64, round: u32) {
        // The verdict is the resource's: the checks read it from the history.
        let _ = self
            .resource
            .write(Some(fence as u64), format!("round {round}"))
            .await;
    }
    fn ended(&mut self, fence: i64, how: Ended) {
        match how {
            Ended::Resigned => self.beliefs.resigned(fence as u64),
            Ended::LeaseLost => self.beliefs.lost(fence as u64, LossReason::LeaseExpired),
        }
    }
}

impl Recorded {
    fn new(node: &UserNode) -> Self {
        Self {
            beliefs: node.election("jobs"),
            resource: node
                .resource()
                .expect("the code asked for a fenced resource")
                .client(node.context(), node.index() as u32),
        }
    }
}

/// The worker of client node `node`: four one-second rounds a term, a 2 s lease.
fn worker(node: &UserNode, after_campaign: AfterCampaign) -> Worker {
    Worker {
        election: "election/jobs".into(),
        name: format!("worker-{}", node.index()),
        ttl_s: 2,
        rounds: 4,
        round_interval: Duration::from_secs(1),
        after_campaign,
    }
}

/// One worker per client node, term after term until the run stops.
fn workers(name: &str, after_campaign: AfterCampaign) -> UserCode {
    UserCode::new(name, Store::Raft, move |node: UserNode| async move {
        let worker = worker(&node, after_campaign);
        let mut client = etcd_client::Client::connect(["s1:2379", "s2:2379", "s3:2379"], None)
            .await
            .expect("a coordsim run with a Raft store");
        let mut recorded = Recorded::new(&node);
        loop {
            if worker.term(&mut client, &mut recorded).await.is_err() {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    })
    .with_fenced_resource()
    .with_check("recipe.leader_uniqueness")
    .with_check("recipe.fenced_writes")
}

/// Every second, the candidate that has waited longest in `Campaign` paused for 3 s, past
/// its 2 s TTL: its lease expires while it waits.
fn pause_the_waiter() -> FaultSource {
    FaultSource::PauseClients(PauseClients {
        interval_ms: 1_000,
        pause_ms: 3_000,
        whom: PausedClient::Waiter,
    })
}

fn test_of(code: UserCode, name: &str) -> UserTest {
    UserTest::new(code)
        .faults(pause_the_waiter())
        .fault_phase_ms(12_000)
        .seeds(SEEDS)
        .for_test((env!("CARGO_PKG_NAME"), env!("CARGO_CRATE_NAME"), name))
}

#[test]
fn the_worker_that_trusts_campaign_is_caught() {
    let summary = test_of(
        workers("trusts-campaign", AfterCampaign::TrustCampaign),
        "the_worker_that_trusts_campaign_is_caught",
    )
    .run()
    .expect("a valid scenario");
    summary.assert_fired(&[FaultKind::Pause]);
    let caught = summary.assert_only_violations_of("recipe.leader_uniqueness");
    assert!(
        caught >= 1,
        "two leaders at once in none of {} seeds",
        summary.seeds.len()
    );
    eprintln!(
        "two workers believed they led at once in {caught} of {} seeds",
        summary.seeds.len()
    );
    // Only leader uniqueness fired: the fenced resource refused every write of a deposed
    // leader. Judged, not vacuous: every seed's accepted writes were checked.
    summary.assert_judged("recipe.fenced_writes");
}

#[test]
fn the_worker_that_checks_its_key_passes_the_same_seeds() {
    let summary = test_of(
        workers("checks-own-key", AfterCampaign::CheckOwnKey),
        "the_worker_that_checks_its_key_passes_the_same_seeds",
    )
    .run()
    .expect("a valid scenario");
    summary.assert_fired(&[FaultKind::Pause]);
    summary.assert_clean();
    summary.assert_judged("recipe.leader_uniqueness");
    summary.assert_judged("recipe.fenced_writes");
}

#[test]
fn the_trusting_worker_passes_with_upstreams_fix_switched_on() {
    let summary = test_of(
        workers("trusts-fixed-campaign", AfterCampaign::TrustCampaign),
        "the_trusting_worker_passes_with_upstreams_fix_switched_on",
    )
    .campaign_check(CampaignCheck::RecheckOwnKey)
    .run()
    .expect("a valid scenario");
    summary.assert_fired(&[FaultKind::Pause]);
    summary.assert_clean();
    summary.assert_judged("recipe.leader_uniqueness");
    summary.assert_judged("recipe.fenced_writes");
}
