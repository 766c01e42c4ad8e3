//! Code written against etcd-client's watch API gets etcd's errors for bad input, never a
//! panic: keys that are not UTF-8, a negative start revision, a watch id in use, no server.

mod watch_support;

use etcd_client::{Error, WatchOptions};
use sim::fault::{Fault, FaultPlan, ScheduledFault};
use watch_support::{attempt_once, message_within, sleep_ms};

#[test]
fn a_key_or_range_end_that_is_not_utf8_is_invalid_args() {
    let errors = attempt_once("dropin-watch-utf8", None, |mut client, _| async move {
        let key = client.watch(vec![0xff, 0xfe], None).await.err();
        let end = client
            .watch("a", Some(WatchOptions::new().with_range(vec![0xff])))
            .await
            .err();
        [key, end].map(|error| error.map(|e| e.to_string()))
    });
    for (error, what) in errors.iter().zip(["key", "range end"]) {
        let error = error.as_deref().expect("an error");
        assert!(error.starts_with("invalid arguments: "), "{error}");
        assert!(error.contains(what) && error.contains("UTF-8"), "{error}");
    }
}

#[test]
fn a_negative_start_revision_is_invalid_args() {
    let error = attempt_once("dropin-watch-negative", None, |mut client, _| async move {
        let options = WatchOptions::new().with_start_revision(-3);
        client.watch("a", Some(options)).await.err()
    });
    assert!(
        matches!(&error, Some(Error::InvalidArgs(message)) if message.contains("-3")),
        "{error:?}"
    );
}

#[test]
fn a_watch_id_in_use_on_the_stream_is_refused_created_and_canceled() {
    let answers = attempt_once(
        "dropin-watch-duplicate",
        None,
        |mut client, node| async move {
            let mine = WatchOptions::new().with_watch_id(7);
            let mut stream = client.watch("a", Some(mine.clone())).await.expect("watch");
            stream.watch("b", Some(mine)).await.expect("sent");
            // An id nobody watches: etcd does not answer.
            stream.cancel(42).await.expect("sent");
            let mut answers = Vec::new();
            while let Some(answer) = message_within(&node, &mut stream, 1_000).await {
                answers.push((answer.watch_id(), answer.created(), answer.canceled()));
            }
            answers
        },
    );
    assert_eq!(answers, [(7, true, false), (-1, true, true)]);
}

#[test]
fn a_watch_no_server_answers_is_unavailable() {
    let crash = |server: &str| {
        ScheduledFault::at(
            1,
            Fault::Crash {
                node: server.parse().unwrap(),
            },
        )
    };
    let plan = FaultPlan::new(vec![crash("s1"), crash("s2"), crash("s3")]);
    let error = attempt_once(
        "dropin-watch-unavailable",
        Some(plan),
        |mut client, node| async move {
            sleep_ms(&node, 100).await;
            client.watch("a", None).await.err().map(|e| e.to_string())
        },
    );
    let error = error.expect("an error");
    // tonic's Display of `Code::Unavailable`.
    assert!(
        error.contains("The service is currently unavailable"),
        "{error}"
    );
}
