//! The verbs a probe may use, per store, with their arguments: the one table both the model
//! runner and the recorder read, so an unknown verb or argument is refused the same way on
//! both sides, when the file is read.

/// Which real server a probe is for (the folder it lives in).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Store {
    /// ZooKeeper 3.8 against the ZAB store.
    Zk,
    /// etcd 3.4 against the Raft store.
    Etcd,
}

impl Store {
    /// The folder name under `probes/`.
    pub fn name(self) -> &'static str {
        match self {
            Store::Zk => "zk",
            Store::Etcd => "etcd",
        }
    }

    /// The store a folder name names.
    pub fn from_name(name: &str) -> Option<Store> {
        match name {
            "zk" => Some(Store::Zk),
            "etcd" => Some(Store::Etcd),
            _ => None,
        }
    }
}

/// What an argument's value must look like.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueKind {
    /// Any word.
    Word,
    /// A whole number, possibly negative.
    Int,
    /// A lease role: `l1`, `l2`, …
    Lease,
    /// A watch role: `w1`, `w2`, …
    Watch,
    /// One of these words.
    OneOf(&'static [&'static str]),
}

/// One verb: its positional arguments, its `key=value` arguments and its bare flags.
#[derive(Debug)]
pub struct Verb {
    /// The verb as written.
    pub name: &'static str,
    /// Positional arguments, in order, all required.
    pub positional: &'static [(&'static str, ValueKind)],
    /// Optional `key=value` arguments.
    pub named: &'static [(&'static str, ValueKind)],
    /// Optional bare words.
    pub flags: &'static [&'static str],
}

const fn verb(
    name: &'static str,
    positional: &'static [(&'static str, ValueKind)],
    named: &'static [(&'static str, ValueKind)],
    flags: &'static [&'static str],
) -> Verb {
    Verb {
        name,
        positional,
        named,
        flags,
    }
}

use ValueKind::{Int, Lease, OneOf, Watch, Word};

const ZK: &[Verb] = &[
    verb("connect", &[], &[("timeout_ms", Int)], &[]),
    verb(
        "create",
        &[("path", Word)],
        &[("data", Word), ("mode", Word), ("acl", Word)],
        &[],
    ),
    verb(
        "create2",
        &[("path", Word)],
        &[("data", Word), ("mode", Word)],
        &[],
    ),
    verb("delete", &[("path", Word)], &[("version", Int)], &[]),
    verb(
        "set",
        &[("path", Word), ("data", Word)],
        &[("version", Int)],
        &[],
    ),
    verb("get", &[("path", Word)], &[("watch", Watch)], &[]),
    verb("exists", &[("path", Word)], &[("watch", Watch)], &[]),
    verb("children", &[("path", Word)], &[("watch", Watch)], &[]),
    verb("wait", &[("watch", Watch)], &[("within_ms", Int)], &[]),
    verb(
        "add_watch",
        &[("path", Word)],
        &[("mode", Word), ("watch", Watch)],
        &[],
    ),
    verb("remove_watch", &[("watch", Watch)], &[], &[]),
    verb("remove_watches", &[("path", Word)], &[("kind", Word)], &[]),
    verb("sync", &[("path", Word)], &[], &[]),
    verb("multi", &[("ops", Word)], &[], &[]),
    verb("multi_read", &[("ops", Word)], &[], &[]),
    verb("auth", &[("scheme", Word), ("credentials", Word)], &[], &[]),
    verb("get_acl", &[("path", Word)], &[], &[]),
    verb("ephemerals", &[("prefix", Word)], &[], &[]),
    verb("count", &[("path", Word)], &[], &[]),
    verb(
        "set_acl",
        &[("path", Word), ("acl", Word)],
        &[("version", Int)],
        &[],
    ),
    verb("close", &[], &[], &[]),
    verb("expire", &[], &[], &[]),
];

const ETCD: &[Verb] = &[
    verb(
        "put",
        &[("key", Word), ("value", Word)],
        &[("lease", Lease)],
        &["prev_kv"],
    ),
    verb(
        "get",
        &[("key", Word)],
        &[
            ("range_end", Word),
            ("rev", Int),
            ("limit", Int),
            ("sort_target", OneOf(SORT_TARGETS)),
            ("sort_order", OneOf(SORT_ORDERS)),
            ("min_mod", Int),
            ("max_mod", Int),
            ("min_create", Int),
            ("max_create", Int),
        ],
        &["prefix", "serializable", "keys_only", "count_only"],
    ),
    verb(
        "delete",
        &[("key", Word)],
        &[("range_end", Word)],
        &[
            "prefix",
            "prev_kv",
            "no_put",
            "no_delete",
            "progress_notify",
        ],
    ),
    verb(
        "txn",
        &[],
        &[("if", Word), ("then", Word), ("else", Word)],
        &[],
    ),
    verb("grant", &[("ttl_s", Int)], &[], &[]),
    verb("revoke", &[("lease", Lease)], &[], &[]),
    verb("ttl", &[("lease", Lease)], &[], &["keys"]),
    verb("keepalive", &[("lease", Lease)], &[], &[]),
    verb("leases", &[], &[], &[]),
    verb("compact", &[("rev", Int)], &[], &[]),
    verb(
        "watch",
        &[("key", Word)],
        &[("rev", Int), ("as", Watch)],
        &[
            "prefix",
            "prev_kv",
            "no_put",
            "no_delete",
            "progress_notify",
        ],
    ),
    verb("next", &[("watch", Watch)], &[("within_ms", Int)], &[]),
    verb("cancel", &[("watch", Watch)], &[], &[]),
    verb("progress", &[("watch", Watch)], &[], &[]),
];

/// The verbs of a store's probes.
pub fn verbs(store: Store) -> &'static [Verb] {
    match store {
        Store::Zk => ZK,
        Store::Etcd => ETCD,
    }
}

/// Whether `value` has the shape `kind` wants.
pub(crate) fn fits(kind: ValueKind, value: &str) -> bool {
    let role = |prefix: char| {
        value.strip_prefix(prefix).is_some_and(|n| {
            !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && !n.starts_with('0')
        })
    };
    match kind {
        ValueKind::Word => true,
        ValueKind::Int => value.parse::<i64>().is_ok(),
        ValueKind::Lease => role('l'),
        ValueKind::Watch => role('w'),
        ValueKind::OneOf(words) => words.contains(&value),
    }
}

/// What `kind` wants, for an error message.
pub(crate) fn wanted(kind: ValueKind) -> String {
    match kind {
        ValueKind::Word => "a word".into(),
        ValueKind::Int => "a whole number".into(),
        ValueKind::Lease => "a lease role such as l1".into(),
        ValueKind::Watch => "a watch role such as w1".into(),
        ValueKind::OneOf(words) => format!("one of {}", words.join(", ")),
    }
}

/// etcd's sort targets (`RangeRequest.SortTarget`), as a get's `sort_target` names them.
pub const SORT_TARGETS: &[&str] = &["key", "version", "create", "mod", "value"];

/// etcd's sort orders (`RangeRequest.SortOrder`), as a get's `sort_order` names them.
pub const SORT_ORDERS: &[&str] = &["none", "ascend", "descend"];
