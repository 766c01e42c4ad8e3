#![cfg(madsim)]
//! zookeeper-client's `MultiReader` over the model's `multiRead`: each read answered on its
//! own, as ZooKeeper 3.8 answers them (models/conformance/probes/zk/multi_read.probe).

mod common;

use common::{connect, note, run_once};
use zookeeper_client::{Acls, CreateMode, Error, MultiReadResult};

fn shown(result: MultiReadResult) -> String {
    match result {
        MultiReadResult::Data { data, stat } => {
            format!(
                "data {} v{}",
                String::from_utf8(data).unwrap(),
                stat.version
            )
        }
        MultiReadResult::Children { mut children } => {
            children.sort();
            format!("children {children:?}")
        }
        MultiReadResult::Error { err } => format!("error {err:?}"),
        other => format!("{other:?}"),
    }
}

#[test]
fn a_multi_read_answers_each_read_on_its_own() {
    let notes = run_once(|notes| async move {
        let client = connect().await;
        let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
        client.create("/r", b"0", &open).await.unwrap();
        client.create("/r/a", b"1", &open).await.unwrap();
        client.create("/r/b", b"", &open).await.unwrap();
        client.set_data("/r/a", b"2", None).await.unwrap();
        let mut reader = client.new_multi_reader();
        note(&notes, format!("empty {:?}", reader.commit().await));
        reader.add_get_data("/r/a").unwrap();
        reader.add_get_children("/r").unwrap();
        reader.add_get_data("/missing").unwrap();
        reader.add_get_children("/missing").unwrap();
        reader.add_get_data("/r").unwrap();
        for result in reader.commit().await.unwrap() {
            note(&notes, shown(result));
        }
        // commit took the reads: a second commit sends nothing.
        note(&notes, format!("again {:?}", reader.commit().await));
        reader.add_get_data("/r").unwrap();
        reader.abort();
        note(&notes, format!("aborted {:?}", reader.commit().await));
    });
    assert_eq!(
        notes,
        [
            "empty Ok([])",
            "data 2 v1",
            "children [\"a\", \"b\"]",
            "error NoNode",
            "error NoNode",
            "data 0 v0",
            "again Ok([])",
            "aborted Ok([])",
        ]
    );
}

#[test]
fn a_multi_read_refuses_a_bad_path_when_it_is_added_and_answers_no_auth_in_its_slot() {
    let notes = run_once(|notes| async move {
        let client = connect().await;
        let mut reader = client.new_multi_reader();
        for path in ["r", "/r/", "/r//a", "/r/./a", ""] {
            note(
                &notes,
                format!(
                    "{path}: {}",
                    matches!(reader.add_get_data(path), Err(Error::BadArguments(_)))
                ),
            );
        }
        assert!(matches!(
            reader.add_get_children("/r/"),
            Err(Error::BadArguments(_))
        ));
        let other = connect().await;
        other.auth("digest", b"bob:secret").await.unwrap();
        let mine = CreateMode::Persistent.with_acls(Acls::creator_all());
        other.create("/secret", b"x", &mine).await.unwrap();
        reader.add_get_data("/secret").unwrap();
        reader.add_get_children("/").unwrap();
        for result in reader.commit().await.unwrap() {
            note(&notes, shown(result));
        }
    });
    assert_eq!(
        notes,
        [
            "r: true",
            "/r/: true",
            "/r//a: true",
            "/r/./a: true",
            ": true",
            "error NoAuth",
            "children [\"secret\", \"zookeeper\"]",
        ]
    );
}
