//! The election client's calls one by one, answered as etcd's v3election service answers
//! them: keys `<name>/<lease hex>`, the leader key's revision, proclaim and resign on a
//! leader key, etcd's errors, and the observe stream.

mod common;

use common::{run_once, run_once_with, sleep_ms};
use etcd_client::{ProclaimOptions, ResignOptions};
use scenarios::scenario::CampaignCheck;
use std::sync::{Arc, Mutex};

#[test]
fn election_calls_answer_as_etcd_does() {
    let notes = run_once(|mut client, notes| async move {
        let note = |line: String| notes.lock().unwrap().push(line);
        let none = client.leader("job").await.expect_err("no leader yet");
        note(format!("no leader: {none}"));
        let lease = client.lease_grant(10, None).await.expect("granted");
        let won = client.campaign("job", "first", lease.id()).await;
        let leader = won.expect("leads").leader().expect("a leader key").clone();
        note(format!(
            "key is name/lease hex: {} rev>0: {} lease: {} name: {}",
            leader.key_str().unwrap() == format!("job/{:x}", lease.id()),
            leader.rev() > 0,
            leader.lease() == lease.id(),
            leader.name_str().unwrap(),
        ));
        let proclaimed = ProclaimOptions::new().with_leader(leader.clone());
        client
            .proclaim("second", Some(proclaimed))
            .await
            .expect("proclaimed");
        let now = client.leader("job").await.expect("a leader");
        note(format!(
            "leader: {}",
            now.kv().unwrap().value_str().unwrap()
        ));
        // The same lease campaigns again: its key is found, and its value proclaimed.
        let again = client
            .campaign("job", "third", lease.id())
            .await
            .expect("leads");
        let same = again.leader().unwrap().rev() == leader.rev();
        let now = client.leader("job").await.expect("a leader");
        note(format!(
            "again: same rev {same}, leader {}",
            now.kv().unwrap().value_str().unwrap()
        ));
        let missing = client.proclaim("x", None).await.expect_err("no leader key");
        note(format!("proclaim without leader: {missing}"));
        let resigned = ResignOptions::new().with_leader(leader.clone());
        client.resign(Some(resigned)).await.expect("resigned");
        let deposed = ProclaimOptions::new().with_leader(leader.clone());
        let deposed = client
            .proclaim("x", Some(deposed))
            .await
            .expect_err("resigned");
        note(format!("proclaim after resign: {deposed}"));
        client.lease_revoke(lease.id()).await.expect("revoked");
        let gone = client
            .campaign("job", "x", lease.id())
            .await
            .expect_err("gone");
        note(format!("campaign with a gone lease: {gone}"));
        let bad = client
            .campaign(vec![0xff], "x", 0)
            .await
            .expect_err("not UTF-8");
        note(format!("non-UTF-8 name: {bad}"));
    });
    assert!(notes[0].contains("election: no leader"), "{notes:?}");
    assert_eq!(
        notes[1],
        "key is name/lease hex: true rev>0: true lease: true name: job"
    );
    assert_eq!(notes[2], "leader: second");
    assert_eq!(notes[3], "again: same rev true, leader third");
    assert!(notes[4].contains("field must be provided"), "{notes:?}");
    assert!(notes[5].contains("election: not leader"), "{notes:?}");
    assert!(
        notes[6].contains("etcdserver: requested lease not found"),
        "{notes:?}"
    );
    assert!(notes[7].contains("invalid arguments"), "{notes:?}");
}

#[test]
fn observe_reports_each_leader_value() {
    let notes = run_once(|mut client, notes| async move {
        let note = |line: String| notes.lock().unwrap().push(line);
        let mut observed = client.observe("job").await.expect("observing");
        let lease = client.lease_grant(10, None).await.expect("granted");
        let won = client
            .campaign("job", "a", lease.id())
            .await
            .expect("leads");
        let leader = won.leader().unwrap().clone();
        let proclaimed = ProclaimOptions::new().with_leader(leader.clone());
        client
            .proclaim("b", Some(proclaimed))
            .await
            .expect("proclaimed");
        for _ in 0..2 {
            let message = observed.message().await.expect("a message").expect("open");
            note(message.kv().unwrap().value_str().unwrap().to_string());
        }
    });
    assert_eq!(notes, vec!["a".to_string(), "b".to_string()]);
}

/// A campaigner waits behind a leader that holds for 8 s; its own lease (2 s, never kept
/// alive) expires at about 2 s. What its campaign had answered by 5 s.
fn waiter_whose_lease_expires(check: CampaignCheck) -> Vec<String> {
    run_once_with(Some(check), |mut client, notes| async move {
        let leader_lease = client.lease_grant(30, None).await.expect("granted");
        client
            .campaign("job", "leader", leader_lease.id())
            .await
            .expect("leads");
        let lease = client.lease_grant(2, None).await.expect("granted");
        let answer: Arc<Mutex<Option<String>>> = Arc::default();
        let mut waiter = client.election_client();
        let written = answer.clone();
        madsim::task::spawn(async move {
            let result = waiter.campaign("job", "waiter", lease.id()).await;
            let text = result.map_or_else(|error| error.to_string(), |_| "leads".into());
            *written.lock().unwrap() = Some(text);
        });
        sleep_ms(5_000).await;
        let by_then = answer.lock().unwrap().clone();
        notes.lock().unwrap().push(format!("{by_then:?}"));
    })
}

#[test]
fn the_fix_ends_a_campaign_whose_own_key_went_without_waiting_for_the_leader() {
    let fixed = waiter_whose_lease_expires(CampaignCheck::RecheckOwnKey);
    assert!(fixed[0].contains("election: not leader"), "{fixed:?}");
    // Upstream waits on, behind a leader that is still there.
    let upstream = waiter_whose_lease_expires(CampaignCheck::Upstream);
    assert_eq!(upstream, vec!["None".to_string()]);
}
