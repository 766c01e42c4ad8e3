//! ACL arguments and answers: `open`, `read`, `creator` or `scheme:id:perms` lists.

use crate::render::list;
use models::zk::NodeAcl;
use sim::history::zk::{Acl, Perms};

/// `open`, `read`, `creator`, or a list of `scheme:id:perms` entries.
pub(super) fn node_acl(text: &str) -> Option<NodeAcl> {
    match text {
        "open" => Some(NodeAcl::Open),
        "creator" => Some(NodeAcl::creator_all()),
        _ => acl_entries(text).map(NodeAcl::from_entries),
    }
}

pub(super) fn acl_entries(text: &str) -> Option<Vec<Acl>> {
    match text {
        "open" => return Some(vec![Acl::open()]),
        "read" => return Some(vec![Acl::new(Perms::READ, "world", "anyone")]),
        "creator" => return Some(vec![Acl::creator_all()]),
        _ => {}
    }
    text.split(',')
        .map(|entry| {
            // The id may hold ':' itself (digest ids are `user:hash`): perms are last.
            let (scheme, rest) = entry.split_once(':')?;
            let (id, perms) = rest.rsplit_once(':')?;
            Some(Acl::new(perms_of(perms)?, scheme, id))
        })
        .collect()
}

const PERM_LETTERS: [(char, Perms); 5] = [
    ('c', Perms::CREATE),
    ('d', Perms::DELETE),
    ('r', Perms::READ),
    ('w', Perms::WRITE),
    ('a', Perms::ADMIN),
];

fn perms_of(letters: &str) -> Option<Perms> {
    let mut bits = 0;
    for letter in letters.chars() {
        let (_, perm) = PERM_LETTERS.iter().find(|(l, _)| *l == letter)?;
        bits |= perm.0;
    }
    Some(Perms(bits))
}

pub(super) fn render_acl(acl: &[Acl]) -> String {
    let entries: Vec<String> = acl
        .iter()
        .map(|entry| {
            let letters: String = PERM_LETTERS
                .iter()
                .filter(|(_, perm)| entry.perms.0 & perm.0 != 0)
                .map(|(letter, _)| *letter)
                .collect();
            format!("{}:{}:{letters}", entry.scheme, entry.id)
        })
        .collect();
    list(&entries)
}
