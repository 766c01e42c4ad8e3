//! A leader-elected worker written against etcd-client's election API (grant a lease, keep
//! it alive with the keeper/stream pair, campaign, write to a fenced resource while
//! leading, resign) runs in a coordsim world; the recipe checks judge what it believes.
//!
//! etcd-io/etcd#11051 reproduced: a campaigner paused while it waits in `Campaign` (its
//! lease expires, its key goes) comes back to a `Campaign` that returns leadership — next
//! to the real leader. `recipe.leader_uniqueness` fires; the fenced resource keeps the
//! writes safe; the same seeds with the fix switched on (`tuning.campaign_check =
//! recheck_own_key`, etcd-io/etcd#22387) pass.

mod common;

use common::{connect, judged, sleep_ms, violations};
use etcd_client::{Client, LeaderKey, ResignOptions};
use models::etcd::CampaignCheck;
use scenarios::{
    Outcome, Scenario, driver,
    scenario::Store,
    workload::{UserCode, UserNode},
};
use sim::{
    fault::{FaultSource, PauseClients, PausedClient},
    history::recipe::LossReason,
    report::for_each_seed,
    this_test,
};
use std::sync::{
    Arc,
    atomic::{AtomicBool, AtomicU64, Ordering},
};

/// The lease TTL the workers ask for, seconds (the store's minimum).
const TTL_S: i64 = 2;
/// How long a leader leads before it resigns, milliseconds.
const HOLD_MS: u64 = 4_000;
/// How many seeds the #11051 test sweeps.
const SEEDS: u64 = 6;

/// Keeps `lease` alive in a task of its own, as a worker does with etcd-client's pair;
/// `alive` turns false when the server says the lease is gone.
async fn keep_alive(client: &mut Client, lease: i64) -> Option<Arc<AtomicBool>> {
    let (mut keeper, mut stream) = client.lease_keep_alive(lease).await.ok()?;
    let alive = Arc::new(AtomicBool::new(true));
    let flag = alive.clone();
    madsim::task::spawn(async move {
        loop {
            if keeper.keep_alive().await.is_err() {
                break;
            }
            match stream.message().await {
                Ok(Some(answer)) if answer.ttl() > 0 => sleep_ms(TTL_S as u64 * 1000 / 3).await,
                _ => break,
            }
        }
        flag.store(false, Ordering::Relaxed);
    });
    Some(alive)
}

/// Leads until `HOLD_MS` passed (writing to the fenced resource, fenced by the leader key's
/// revision) or the lease is gone; then resigns. What it believes is recorded.
async fn lead(node: &UserNode, client: &mut Client, leader: LeaderKey, alive: &AtomicBool) {
    let beliefs = node.election("job");
    let token = leader.rev() as u64;
    beliefs.gained(token);
    let mut resource = node
        .resource()
        .map(|resource| resource.client(node.context(), node.index() as u32));
    for round in 0..HOLD_MS / 200 {
        if !alive.load(Ordering::Relaxed) {
            beliefs.lost(token, LossReason::LeaseExpired);
            return;
        }
        if let Some(resource) = resource.as_mut() {
            let _ = resource.write(Some(token), format!("round {round}")).await;
        }
        sleep_ms(200).await;
    }
    beliefs.resigned(token);
    let _ = client
        .resign(Some(ResignOptions::new().with_leader(leader)))
        .await;
}

/// The worker: a lease, its keep-alive, a campaign, leadership; again. Counts the
/// campaigns refused with `election: not leader` in `refused`.
async fn worker(node: UserNode, refused: Arc<AtomicU64>) {
    let mut client = connect().await;
    let beliefs = node.election("job");
    loop {
        let Ok(granted) = client.lease_grant(TTL_S, None).await else {
            sleep_ms(100).await;
            continue;
        };
        let Some(alive) = keep_alive(&mut client, granted.id()).await else {
            continue;
        };
        beliefs.campaigned();
        let mut election = client.election_client();
        let name = format!("worker-{}", node.index());
        match election.campaign("job", name, granted.id()).await {
            Ok(answer) => {
                let leader = answer.leader().expect("a campaign answers its leader key");
                lead(&node, &mut client, leader.clone(), &alive).await;
            }
            Err(error) => {
                if error.to_string().contains("election: not leader") {
                    refused.fetch_add(1, Ordering::Relaxed);
                }
                beliefs.gave_up(&error.to_string());
            }
        }
        let _ = client.lease_revoke(granted.id()).await;
        sleep_ms(300).await;
    }
}

/// Three workers; the campaigner that waited longest is paused for longer than its TTL
/// while the first leader leads.
fn paused_waiter(check: CampaignCheck, refused: &Arc<AtomicU64>) -> Scenario {
    let refused = refused.clone();
    let code = UserCode::new("dropin-election", Store::Raft, move |node| {
        worker(node, refused.clone())
    })
    .with_check("recipe.leader_uniqueness")
    .with_check("recipe.fenced_writes")
    .with_fenced_resource();
    let mut scenario = Scenario::of_user_code(code, 3, 3);
    // One pause, at 1 s (the next would end after the 8 s fault phase).
    scenario.faults = FaultSource::PauseClients(PauseClients {
        interval_ms: 1_000,
        pause_ms: 3_500,
        whom: PausedClient::Waiter,
    });
    scenario.tuning.campaign_check = Some(check);
    scenario
}

/// The outcomes of seeds `1..=SEEDS` (each shown to `each` first, whose failed assertion
/// prints the line that replays that seed of `test`), and how many campaigns were refused.
fn sweep(
    check: CampaignCheck,
    test: (&str, &str, &str),
    mut each: impl FnMut(&Outcome),
) -> (Vec<Outcome>, u64) {
    let refused = Arc::new(AtomicU64::new(0));
    let scenario = paused_waiter(check, &refused);
    let mut outcomes = Vec::new();
    for_each_seed(1..=SEEDS, test, |seed| {
        let outcome = driver::run(&scenario, seed);
        each(&outcome);
        outcomes.push(outcome);
    });
    (outcomes, refused.load(Ordering::Relaxed))
}

#[test]
fn upstream_campaign_after_lease_expiry_breaks_leader_uniqueness_etcd_11051() {
    let test =
        this_test!("upstream_campaign_after_lease_expiry_breaks_leader_uniqueness_etcd_11051");
    let (outcomes, _) = sweep(CampaignCheck::Upstream, test, |outcome| {
        assert_eq!(
            violations(outcome, "recipe.fenced_writes"),
            0,
            "{outcome:?}"
        );
        assert!(judged(outcome, "recipe.fenced_writes") > 0, "{outcome:?}");
        // Every election key is leased, and etcd.linearizable leaves leased keys out: it
        // judges nothing here, and must find nothing.
        assert_eq!(violations(outcome, "etcd.linearizable"), 0, "{outcome:?}");
    });
    let fired: Vec<u64> = outcomes
        .iter()
        .filter(|outcome| violations(outcome, "recipe.leader_uniqueness") > 0)
        .map(|outcome| outcome.seed.value())
        .collect();
    assert!(
        !fired.is_empty(),
        "two leaders at once within {SEEDS} seeds: {:?}",
        outcomes.iter().map(|o| &o.violations).collect::<Vec<_>>()
    );
    eprintln!("etcd-io/etcd#11051 found with seeds {fired:?} of 1..={SEEDS}");
}

#[test]
fn the_fix_switch_rechecks_the_own_key_and_the_same_seeds_pass() {
    let test = this_test!("the_fix_switch_rechecks_the_own_key_and_the_same_seeds_pass");
    let (_, refused) = sweep(CampaignCheck::RecheckOwnKey, test, |outcome| {
        assert!(outcome.is_clean(), "{outcome:?}");
        assert!(
            judged(outcome, "recipe.leader_uniqueness") > 0,
            "{outcome:?}"
        );
        assert!(judged(outcome, "recipe.fenced_writes") > 0, "{outcome:?}");
    });
    // The switch is what made them pass: campaigners whose key was gone were refused.
    assert!(
        refused > 0,
        "no campaign was refused with `election: not leader`"
    );
}
