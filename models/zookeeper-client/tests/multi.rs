#![cfg(madsim)]
//! zookeeper-client's `MultiWriter` and `CheckWriter` over the model's `multi`: all or
//! nothing, with the real client's results and errors.

mod common;

use common::{connect, note, run_once};
use zookeeper_client::{Acls, CreateMode, Error, MultiWriteResult};

#[test]
fn a_multi_commits_all_or_nothing_with_the_real_results_and_errors() {
    let notes = run_once(|notes| async move {
        let client = connect().await;
        let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
        client.create("/m", b"0", &open).await.unwrap();
        let mut writer = client.new_multi_writer();
        note(&notes, format!("empty {:?}", writer.commit().await));
        writer.add_check_version("/m", 0).unwrap();
        writer.add_create("/m/a", b"a", &open).unwrap();
        writer.add_set_data("/m", b"1", Some(0)).unwrap();
        writer.add_delete("/m/a", None).unwrap();
        for result in writer.commit().await.unwrap() {
            note(
                &notes,
                match result {
                    MultiWriteResult::Create { path, stat } => {
                        format!("created {path} invalid {}", stat.is_invalid())
                    }
                    MultiWriteResult::SetData { stat } => format!("set v{}", stat.version),
                    other => format!("{other:?}"),
                },
            );
        }
        writer.add_create("/m/b", b"", &open).unwrap();
        writer.add_set_data("/m", b"2", Some(0)).unwrap();
        let failed = writer.commit().await;
        note(&notes, format!("{failed:?}"));
        note(
            &notes,
            format!("rolled back {:?}", client.check_stat("/m/b").await.unwrap()),
        );
        let as_error: Error = failed.unwrap_err().into();
        note(&notes, format!("{as_error:?}"));
        let mut checked = client.new_check_writer("/m", Some(7)).unwrap();
        checked.add_create("/m/c", b"", &open).unwrap();
        let check_failed = checked.commit().await;
        note(&notes, format!("{check_failed:?}"));
        note(
            &notes,
            format!("{:?}", Error::from(check_failed.unwrap_err())),
        );
        let mut checked = client.new_check_writer("/m", Some(1)).unwrap();
        checked.add_create("/m/c", b"", &open).unwrap();
        note(
            &notes,
            format!("{:?}", checked.commit().await.map(|results| results.len())),
        );
        assert!(writer.add_delete("/", None).is_err());
        assert!(writer.add_create("/m/d", &[0xff], &open).is_err());
    });
    assert_eq!(
        notes,
        [
            "empty Ok([])",
            "Check",
            "created /m/a invalid true",
            "set v1",
            "Delete",
            "Err(OperationFailed { index: 1, source: BadVersion })",
            "rolled back None",
            "BadVersion",
            "Err(CheckFailed { source: BadVersion })",
            "RuntimeInconsistent",
            "Ok(1)",
        ]
    );
}
