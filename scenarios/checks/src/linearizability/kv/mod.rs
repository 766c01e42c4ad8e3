//! etcd's key-value API as a sequential specification: get / put / delete / transactions
//! with compares, with revisions where the client saw them.
//!
//! # Per-key partitioning, with revisions
//!
//! Every operation is split into one sub-operation per key it touches, and each key is
//! checked on its own. The split keeps what the client saw about that key: values,
//! versions, create and mod revisions, and the response's header revision `R`. Revisions
//! tie the keys back together: the store's revision only grows, so within one key the
//! linearization must see non-decreasing header revisions, strictly increasing ones for
//! changes to the key, and every read at `R` must follow the writes of revision ≤ `R` and
//! precede those above. Each key's state therefore carries a lower bound of the store
//! revision at that point of the linearization.
//!
//! The split is sound (a linearizable history passes) and loses only what crosses keys
//! without a revision to show it:
//! - a range read is checked as per-key reads at the same header revision, for every key the
//!   history writes or reads; a range delete's count is not checked;
//! - a transaction whose compares span several keys and that failed is not checked against
//!   those compares (one of them failed; which is unknown per key); if its outcome is also
//!   unknown, its effect on each key is unknown, and the key's state becomes unknown until
//!   the next read binds it;
//! - a write whose outcome is unknown gets an unknown revision, bound by the first read that
//!   shows it (not checked against the bound at its placement: keeping that bound would make
//!   each placement a different state and the search exponential in unknown writes).
//!
//! A get with etcd's range options is checked per key for what its answer shows of that key
//! (`range_options.rs`): a key it returned is read (without its value, if keys-only); a key
//! it left out is read as absent only where the options say it would have been returned
//! (no revision filter, and no limit cut it off before it in key order); a count of one key
//! is a read of whether it exists. A range's count is not checked.
//!
//! A put or delete with `prev_kv` is checked as a read of each key it writes just before the
//! write, at the write's revision (a `prev_kv` answered inside a transaction is not checked).
//!
//! A nested transaction (etcd 3.3+) runs at its outer transaction's revision: with a known
//! outcome, the ops of the branches that ran (each nested response says which) are checked
//! as if written in place (`nested_txn.rs`); the nested compares are not checked. A compare
//! over a key range is not split per key: it only makes the other compares not decide the
//! branch on their own.
//!
//! Left out (and counted in the report): serializable reads (not linearizable by design),
//! reads at a past revision, lease operations, definite failures, operations on keys ever
//! attached to a lease (lease expiry deletes them without a client operation), nested
//! transactions whose outcome is unknown (which branches they took is unknown), and
//! operations on keys that any left-out operation may have written (a read after a write the
//! checker cannot follow would otherwise look like a violation).

mod from_history;
mod model;
mod nested_txn;
mod range_options;

pub use from_history::from_history;
pub use model::{
    KeyAction, KeyCompare, KeyCompareTarget, KeyState, KvCall, KvInput, KvModel, KvOutput, Live,
    Presence, Revision, SeenKey,
};
