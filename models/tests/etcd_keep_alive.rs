//! Lease keep-alives renew in the leader's lessor, as etcd's `LeaseRenew` does (see
//! `models/src/etcd/server/keep_alive.rs`): no log entry, "not applied" with the leader's
//! name from a follower, TTL 0 for a lease whose expiry is pending, a checkpoint cleared
//! through the log first, and no acknowledgement from a leader cut off from its quorum.
//! Each test sends frames to one chosen server, as a client connected to it would.

use models::etcd::{
    ClientFrame, ClientRequest, ClientResponse, EtcdClient, EtcdCluster, EtcdConfig, StoreCommand,
    kv_response,
};
use sim::{
    NodeId, RunEnd, Seed, Sim, World,
    fault::PartitionShape,
    history::{
        Event, ProtocolEvent,
        kv::{KvOperation, KvResponse},
    },
    time::SimTime,
};
use std::{future::Future, time::Duration};

const CLIENT: NodeId = NodeId::client(0);

/// Runs `body` on a healthy three-server cluster configured by `configure`, once it has had
/// a second to elect, and fails unless it finishes before the time limit.
fn with_cluster<F, Fut>(configure: fn(&mut EtcdConfig), body: F)
where
    F: FnOnce(Sim, EtcdCluster) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let outcome = World::builder()
        .seed(Seed::new(3))
        .servers(3)
        .clients(1)
        .time_limit(Duration::from_secs(60))
        .build()
        .expect("a valid world")
        .run(move |sim| async move {
            let mut config = EtcdConfig::new(&sim.servers());
            configure(&mut config);
            let cluster = EtcdCluster::start(&sim, config);
            sim.sleep(Duration::from_secs(1)).await;
            body(sim, cluster).await;
        });
    assert!(
        matches!(outcome.end, RunEnd::Completed { .. }),
        "the test was still going at the time limit: {outcome}"
    );
}

/// Sends `operation` to `server` on a fresh connection from the client node and returns the
/// answer, or `None` if none came within 3 s.
async fn ask(
    sim: &Sim,
    cluster: &EtcdCluster,
    server: NodeId,
    operation: KvOperation,
) -> Option<ClientResponse> {
    let network = cluster.client_network().clone();
    let clock = sim.node(CLIENT).clock().clone();
    sim.spawn(CLIENT, async move {
        let connection = network
            .connect(CLIENT, server, Duration::from_millis(500))
            .await
            .ok()?;
        let request = ClientFrame::Request {
            request_id: 1,
            request: ClientRequest::Kv(operation),
            write_id: None,
        };
        connection.send(request).ok()?;
        let answer = async {
            loop {
                if let Ok(ClientFrame::Response {
                    request_id: 1,
                    response,
                }) = connection.recv().await
                {
                    return Some(response);
                } else if connection.is_broken() {
                    return None;
                }
            }
        };
        let timeout = clock.sleep(Duration::from_secs(3));
        futures_select(answer, timeout).await
    })
    .await
    .expect("the client task finishes")
}

/// The first of `answer` and `timeout` (`None` on timeout).
async fn futures_select<A, T>(answer: A, timeout: T) -> Option<ClientResponse>
where
    A: Future<Output = Option<ClientResponse>>,
    T: Future<Output = ()>,
{
    let mut answer = std::pin::pin!(answer);
    let mut timeout = std::pin::pin!(timeout);
    std::future::poll_fn(|cx| {
        if let std::task::Poll::Ready(result) = answer.as_mut().poll(cx) {
            return std::task::Poll::Ready(result);
        }
        timeout.as_mut().poll(cx).map(|()| None)
    })
    .await
}

fn keep_alive(lease: u64) -> KvOperation {
    KvOperation::LeaseKeepAlive { lease }
}

/// Grants a lease of `ttl_ms` through a client; its id.
async fn grant(sim: &Sim, cluster: &EtcdCluster, ttl_ms: u64) -> u64 {
    let (cluster, context) = (cluster.clone(), sim.node(CLIENT));
    sim.spawn(CLIENT, async move {
        let mut client = EtcdClient::new(&cluster, context, 0);
        match kv_response(&client.lease_grant(ttl_ms).await) {
            Some(KvResponse::LeaseGrant { lease, .. }) => *lease,
            other => panic!("grant failed: {other:?}"),
        }
    })
    .await
    .expect("the grant finishes")
}

/// The leader, as the followers name it when they refuse a keep-alive (and the one server
/// that answers it with a TTL).
async fn leader(sim: &Sim, cluster: &EtcdCluster, lease: u64) -> NodeId {
    let mut renewed_by = Vec::new();
    let mut hints = Vec::new();
    for &server in cluster.servers() {
        match ask(sim, cluster, server, keep_alive(lease)).await {
            Some(ClientResponse::Kv(Ok(KvResponse::LeaseKeepAlive { ttl_ms }))) if ttl_ms > 0 => {
                renewed_by.push(server)
            }
            Some(ClientResponse::NotApplied { leader_hint }) => hints.push(leader_hint),
            other => panic!("{server} answered a keep-alive {other:?}"),
        }
    }
    assert_eq!(
        renewed_by.len(),
        1,
        "only the leader renews: {renewed_by:?}"
    );
    let leader = renewed_by[0];
    assert_eq!(
        hints,
        vec![Some(leader); 2],
        "each follower answers \"not applied\" and names the leader"
    );
    leader
}

/// `Applied` records of entries whose digest is `digest` (any, if `None`) since `since`.
fn applied_since(sim: &Sim, since: SimTime, digest: Option<u64>) -> usize {
    sim.history_snapshot()
        .records()
        .iter()
        .filter(|record| record.at >= since)
        .filter(|record| match &record.event {
            Event::Protocol(ProtocolEvent::Applied { digest: d, .. }) => {
                digest.is_none_or(|digest| digest == *d)
            }
            _ => false,
        })
        .count()
}

#[test]
fn the_leader_renews_without_a_log_entry_and_followers_name_it() {
    with_cluster(
        |_| {},
        |sim, cluster| async move {
            let lease = grant(&sim, &cluster, 2_000).await;
            let leader = leader(&sim, &cluster, lease).await;
            let before = sim.now();
            for _ in 0..5 {
                let answer = ask(&sim, &cluster, leader, keep_alive(lease)).await;
                assert_eq!(
                    answer,
                    Some(ClientResponse::Kv(Ok(KvResponse::LeaseKeepAlive {
                        ttl_ms: 2_000
                    })))
                );
            }
            assert_eq!(
                applied_since(&sim, before, None),
                0,
                "keep-alives are not logged"
            );
        },
    );
}

/// The lessor looks for expired leases only every 3 s here: a keep-alive of a lease past
/// its deadline waits for the expiry to be proposed and applied, and is answered TTL 0.
#[test]
fn a_keep_alive_of_an_expired_lease_waits_for_its_expiry_and_gets_ttl_zero() {
    with_cluster(
        |config| config.lease_check_interval = Duration::from_secs(3),
        |sim, cluster| async move {
            let lease = grant(&sim, &cluster, 1_000).await;
            let leader = leader(&sim, &cluster, lease).await;
            sim.sleep(Duration::from_millis(1_200)).await;
            let asked = sim.now();
            let answer = ask(&sim, &cluster, leader, keep_alive(lease)).await;
            assert_eq!(
                answer,
                Some(ClientResponse::Kv(Ok(KvResponse::LeaseKeepAlive {
                    ttl_ms: 0
                })))
            );
            let expired = sim
                .history_snapshot()
                .records()
                .iter()
                .filter(|record| {
                    matches!(
                        record.event,
                        Event::Protocol(ProtocolEvent::SessionExpired { session }) if session == lease
                    )
                })
                .map(|record| record.at)
                .min()
                .expect("the lease expired");
            assert!(
                expired > asked,
                "the keep-alive was sent before the expiry applied, and waited for it"
            );
        },
    );
}

/// Checkpoints every 300 ms: a keep-alive of a checkpointed lease first clears the
/// checkpoint through the log (one entry, applied by every replica); the next keep-alive,
/// sent at once, finds nothing to clear.
#[test]
fn a_keep_alive_clears_a_checkpoint_through_the_log_first() {
    with_cluster(
        |config| config.lease_checkpoint_interval = Duration::from_millis(300),
        |sim, cluster| async move {
            let lease = grant(&sim, &cluster, 2_000).await;
            let leader = leader(&sim, &cluster, lease).await;
            // A checkpoint of the lease's remaining time is applied meanwhile.
            sim.sleep(Duration::from_millis(700)).await;
            let clear = StoreCommand::LeaseCheckpoint {
                remaining: vec![(lease, 0)],
            }
            .digest();
            let before = sim.now();
            for _ in 0..2 {
                let answer = ask(&sim, &cluster, leader, keep_alive(lease)).await;
                assert_eq!(
                    answer,
                    Some(ClientResponse::Kv(Ok(KvResponse::LeaseKeepAlive {
                        ttl_ms: 2_000
                    })))
                );
            }
            // Every replica applies the first keep-alive's clear (the followers maybe a
            // heartbeat later); the second found nothing to clear.
            sim.sleep(Duration::from_millis(200)).await;
            assert_eq!(applied_since(&sim, before, Some(clear)), 3);
        },
    );
}

/// A leader cut off from the other servers (not from its client) still believes it leads
/// until its check-quorum timeout: its ReadIndex round gets no quorum, so it does not
/// acknowledge a keep-alive, and answers "not applied" once it steps down.
#[test]
fn a_leader_cut_off_from_its_quorum_does_not_acknowledge_keep_alives() {
    with_cluster(
        |_| {},
        |sim, cluster| async move {
            let lease = grant(&sim, &cluster, 2_000).await;
            let leader = leader(&sim, &cluster, lease).await;
            let others = cluster
                .servers()
                .iter()
                .copied()
                .filter(|server| *server != leader)
                .collect();
            sim.nemesis().partition(PartitionShape::Groups {
                groups: vec![vec![leader], others],
            });
            let answer = ask(&sim, &cluster, leader, keep_alive(lease)).await;
            assert!(
                matches!(answer, Some(ClientResponse::NotApplied { .. })),
                "the cut-off leader answered {answer:?}"
            );
            let stepped_down = sim.history_snapshot().records().iter().any(|record| {
                record.node == Some(leader)
                    && matches!(
                        record.event,
                        Event::Protocol(ProtocolEvent::SteppedDown { .. })
                    )
            });
            assert!(stepped_down, "the old leader stepped down meanwhile");
        },
    );
}
