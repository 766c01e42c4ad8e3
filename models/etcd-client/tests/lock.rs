//! A job guarded by etcd-client's lock API (a lease kept alive, `lock(name,
//! with_lease)`, writes to a fenced resource fenced by the lock key's create revision,
//! `unlock(key)`) runs in a coordsim world; the recipe checks judge what it believes.
//!
//! The lock is etcd v3.5.33's `Mutex.Lock`, which reads its own key after the wait: a
//! waiter paused past its TTL is refused with `mutex: session is expired` and exclusion
//! holds; a *holder* paused past its TTL still believes it holds when another acquires
//! (`recipe.mutual_exclusion` fires on that belief), and the fence keeps the writes safe.

mod common;

use common::{connect, judged, run_once, sleep_ms, violations};
use etcd_client::{Client, LockOptions, coordsim::history_process};
use scenarios::{
    Outcome, Scenario, driver,
    scenario::Store,
    workload::{LockBeliefs, UserCode, UserNode},
};
use sim::{
    fault::{FaultSource, LeaderKiller, PauseClients, PausedClient},
    history::recipe::LossReason,
    report::for_each_seed,
    this_test,
};
use std::sync::{
    Arc,
    atomic::{AtomicBool, AtomicU64, Ordering},
};

/// The lease TTL the lockers ask for, seconds.
const TTL_S: i64 = 2;

/// Keeps `lease` alive in a task; the flag turns false when the server says it is gone.
async fn keep_alive(client: &mut Client, lease: i64) -> Option<Arc<AtomicBool>> {
    let (mut keeper, mut stream) = client.lease_keep_alive(lease).await.ok()?;
    let alive = Arc::new(AtomicBool::new(true));
    let flag = alive.clone();
    madsim::task::spawn(async move {
        while keeper.keep_alive().await.is_ok() {
            match stream.message().await {
                Ok(Some(answer)) if answer.ttl() > 0 => sleep_ms(TTL_S as u64 * 1000 / 3).await,
                _ => break,
            }
        }
        flag.store(false, Ordering::Relaxed);
    });
    Some(alive)
}

/// Counts of what the lockers saw, over all seeds of a test.
#[derive(Default)]
struct Seen {
    acquired: AtomicU64,
    session_expired: AtomicU64,
}

/// Holds the lock for about `hold_ms`, writing to the fenced resource as `process`, unless
/// the lease goes; then unlocks. What it believes is recorded in `beliefs`.
async fn hold(
    node: &UserNode,
    (beliefs, process): (&LockBeliefs, u32),
    client: &mut Client,
    key: Vec<u8>,
    alive: &AtomicBool,
) {
    let Ok(read) = client.get(key.clone(), None).await else {
        let _ = client.unlock(key).await;
        beliefs.gave_up("could not read the lock key");
        return;
    };
    let Some(token) = read.kvs().first().map(|kv| kv.create_revision() as u64) else {
        beliefs.gave_up("the lock key is gone");
        return;
    };
    beliefs.acquired(token);
    let mut resource = node
        .resource()
        .map(|resource| resource.client(node.context(), process));
    for round in 0..5 {
        if !alive.load(Ordering::Relaxed) {
            beliefs.lost(token, LossReason::LeaseExpired);
            return;
        }
        if let Some(resource) = resource.as_mut() {
            let _ = resource.write(Some(token), format!("round {round}")).await;
        }
        sleep_ms(200).await;
    }
    beliefs.released(token);
    let _ = client.unlock(key).await;
}

/// The locker: a lease, its keep-alive, the lock, the job; again.
async fn locker(node: UserNode, seen: Arc<Seen>) {
    let mut client = connect().await;
    // One lock handle, whose history process the beliefs are recorded as (as with the
    // zookeeper-client drop-in): the checks then find beliefs and lock calls under one.
    let mut locks = client.lock_client();
    let process = history_process(&locks);
    let beliefs = node.lock_as("job", process);
    loop {
        let Ok(granted) = client.lease_grant(TTL_S, None).await else {
            sleep_ms(100).await;
            continue;
        };
        let Some(alive) = keep_alive(&mut client, granted.id()).await else {
            continue;
        };
        beliefs.requested();
        let options = LockOptions::new().with_lease(granted.id());
        match locks.lock("job", Some(options)).await {
            Ok(locked) => {
                seen.acquired.fetch_add(1, Ordering::Relaxed);
                let key = locked.key().to_vec();
                hold(&node, (&beliefs, process), &mut client, key, &alive).await;
            }
            Err(error) => {
                if error.to_string().contains("mutex: session is expired") {
                    seen.session_expired.fetch_add(1, Ordering::Relaxed);
                }
                beliefs.gave_up(&error.to_string());
            }
        }
        let _ = client.lease_revoke(granted.id()).await;
        sleep_ms(100).await;
    }
}

/// Three lockers under `faults`, over seeds 1..=`seeds` (each outcome shown to `each` first,
/// whose failed assertion prints the line that replays that seed of `test`).
fn sweep(
    faults: FaultSource,
    seeds: u64,
    test: (&str, &str, &str),
    mut each: impl FnMut(&Outcome),
) -> (Vec<Outcome>, Arc<Seen>) {
    let seen = Arc::new(Seen::default());
    let code = {
        let seen = seen.clone();
        UserCode::new("dropin-lock", Store::Raft, move |node| {
            locker(node, seen.clone())
        })
    }
    .with_check("recipe.mutual_exclusion")
    .with_check("recipe.fenced_writes")
    .with_fenced_resource();
    let mut scenario = Scenario::of_user_code(code, 3, 3);
    scenario.faults = faults;
    let mut outcomes = Vec::new();
    for_each_seed(1..=seeds, test, |seed| {
        let outcome = driver::run(&scenario, seed);
        each(&outcome);
        outcomes.push(outcome);
    });
    (outcomes, seen)
}

#[test]
fn the_lock_excludes_under_leader_crashes() {
    let faults = FaultSource::LeaderKiller(LeaderKiller::default());
    let test = this_test!("the_lock_excludes_under_leader_crashes");
    let (_, seen) = sweep(faults, 4, test, |outcome| {
        assert!(outcome.is_clean(), "{outcome:?}");
        assert!(
            judged(outcome, "recipe.mutual_exclusion") > 0,
            "{outcome:?}"
        );
        assert!(outcome.fault_counts.faults_fired() > 0, "{outcome:?}");
    });
    let acquired = seen.acquired.load(Ordering::Relaxed);
    assert!(
        acquired >= 8,
        "the lock was taken {acquired} times in 4 seeds"
    );
}

#[test]
fn a_paused_waiter_is_refused_with_session_expired_and_exclusion_holds() {
    let pause = PauseClients {
        interval_ms: 1_000,
        pause_ms: 3_500,
        whom: PausedClient::Waiter,
    };
    let test = this_test!("a_paused_waiter_is_refused_with_session_expired_and_exclusion_holds");
    let (_, seen) = sweep(FaultSource::PauseClients(pause), 4, test, |outcome| {
        assert!(outcome.is_clean(), "{outcome:?}");
        assert!(
            judged(outcome, "recipe.mutual_exclusion") > 0,
            "{outcome:?}"
        );
    });
    // v3.5's read of its own key after the wait is what refused them.
    assert!(seen.session_expired.load(Ordering::Relaxed) > 0);
}

#[test]
fn a_paused_holder_breaks_believed_exclusion_and_the_fence_saves_the_resource() {
    let pause = PauseClients {
        interval_ms: 1_000,
        pause_ms: 3_500,
        whom: PausedClient::Holder,
    };
    let test =
        this_test!("a_paused_holder_breaks_believed_exclusion_and_the_fence_saves_the_resource");
    let (outcomes, _) = sweep(FaultSource::PauseClients(pause), 4, test, |outcome| {
        assert_eq!(
            violations(outcome, "recipe.fenced_writes"),
            0,
            "{outcome:?}"
        );
        assert!(judged(outcome, "recipe.fenced_writes") > 0, "{outcome:?}");
    });
    let fired = outcomes
        .iter()
        .filter(|outcome| violations(outcome, "recipe.mutual_exclusion") > 0)
        .count();
    assert!(fired > 0, "a paused holder overlapped another in 4 seeds");
}

#[test]
fn lock_calls_answer_as_etcd_does() {
    let notes = run_once(|mut client, notes| async move {
        let note = |line: String| notes.lock().unwrap().push(line);
        let lease = client.lease_grant(10, None).await.expect("granted");
        let options = LockOptions::new().with_lease(lease.id());
        let locked = client
            .lock("job", Some(options.clone()))
            .await
            .expect("locked");
        let key = String::from_utf8(locked.key().to_vec()).unwrap();
        note(format!("key: {}", key == format!("job/{:x}", lease.id())));
        // Locking twice with the same lease is a no-op: the same key.
        let again = client.lock("job", Some(options)).await.expect("locked");
        note(format!("again: {}", again.key() == locked.key()));
        client.unlock(key.clone()).await.expect("unlocked");
        let there = client.get(key, None).await.expect("read").kvs().len();
        note(format!("after unlock: {there} keys"));
        client.lease_revoke(lease.id()).await.expect("revoked");
        let options = LockOptions::new().with_lease(lease.id());
        let gone = client.lock("job", Some(options)).await.expect_err("gone");
        note(format!("lock with a gone lease: {gone}"));
        let bad = client.unlock(vec![0xff]).await.expect_err("not UTF-8");
        note(format!("non-UTF-8 key: {bad}"));
        // No lease: etcd's session grants one of 60 s (and orphans it).
        let locked = client.lock("job", None).await.expect("locked");
        let read = client.get(locked.key(), None).await.expect("read");
        let lease = read.kvs()[0].lease();
        let ttl = client
            .lease_time_to_live(lease, None)
            .await
            .expect("answered");
        note(format!("no lease: leased for {} s", ttl.granted_ttl()));
    });
    assert_eq!(notes[0], "key: true");
    assert_eq!(notes[1], "again: true");
    assert_eq!(notes[2], "after unlock: 0 keys");
    assert!(
        notes[3].contains("etcdserver: requested lease not found"),
        "{notes:?}"
    );
    assert!(notes[4].contains("invalid arguments"), "{notes:?}");
    assert_eq!(notes[5], "no lease: leased for 60 s");
}
