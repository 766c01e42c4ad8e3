#![cfg(madsim)]
//! ACLs and authentication through the drop-in: `get_acl`/`set_acl`, `auth` with the
//! `digest` scheme, `Acls::creator_all`, and the errors the real client answers (`NoAuth`,
//! `InvalidAcl`, `BadVersion`, and `AuthFailed`, after which the session is done).

mod common;

use common::{connect, note, run_once};
use zookeeper_client::{Acl, Acls, AuthId, CreateMode, Permission};

#[test]
fn acls_and_auth_answer_as_the_real_client() {
    let notes = run_once(|notes| async move {
        let client = connect().await;
        let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
        client.create("/a", b"", &open).await.unwrap();
        let (acl, stat) = client.get_acl("/a").await.unwrap();
        note(
            &notes,
            format!(
                "{} {}:{} aversion {}",
                acl[0].permission(),
                acl[0].scheme(),
                acl[0].id(),
                stat.aversion
            ),
        );
        let read_only = [Acl::new(Permission::READ, AuthId::anyone())];
        note(
            &notes,
            format!(
                "{:?}",
                client.set_acl("/a", &read_only, Some(3)).await.map(drop)
            ),
        );
        let stat = client.set_acl("/a", &read_only, Some(0)).await.unwrap();
        note(&notes, format!("aversion {}", stat.aversion));
        note(
            &notes,
            format!("{:?}", client.set_data("/a", b"x", None).await.map(drop)),
        );
        let creator = CreateMode::Persistent.with_acls(Acls::creator_all());
        note(
            &notes,
            format!(
                "{:?}",
                client.create("/mine", b"", &creator).await.map(drop)
            ),
        );
        client.auth("digest", b"alice:secret").await.unwrap();
        client.create("/mine", b"", &creator).await.unwrap();
        let (acl, _) = client.get_acl("/mine").await.unwrap();
        note(
            &notes,
            format!("{} {}", acl[0].permission(), acl[0].scheme()),
        );
        let stranger = connect().await;
        note(
            &notes,
            format!("{:?}", stranger.get_data("/mine").await.map(drop)),
        );
        note(&notes, format!("{:?}", stranger.auth("nosuch", b"x").await));
        note(
            &notes,
            format!(
                "{:?} {:?}",
                stranger.state(),
                stranger.get_data("/a").await.map(drop)
            ),
        );
    });
    assert_eq!(
        notes,
        [
            "ALL world:anyone aversion 0",
            "Err(BadVersion)",
            "aversion 1",
            "Err(NoAuth)",
            "Err(InvalidAcl)",
            "ALL digest",
            "Err(NoAuth)",
            "Err(AuthFailed)",
            "AuthFailed Err(AuthFailed)",
        ]
    );
}
