//! etcd's range options applied to the keys of a range, in etcd 3.4's order (release-3.4
//! `etcdserver/apply.go` `applierV3backend.Range`; the count from `mvcc/kvstore_txn.go`
//! `rangeKeys`).

use sim::history::kv::{KeyValue, RangeOptions, SortOrder, SortTarget};
use std::cmp::Ordering;

/// What a range with options answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RangeAnswer {
    /// The keys, in the order asked for.
    pub kvs: Vec<KeyValue>,
    /// How many keys the range holds.
    pub count: u64,
    /// Whether the limit left keys out.
    pub more: bool,
}

/// Applies `options` to `in_range`, the range's live keys in key order, as etcd 3.4 does:
/// - the count is every key of the range (`rangeKeys`: the index's total, before the limit
///   and the filters); a count-only range answers it with no keys;
/// - with a sort order or a revision filter set, etcd fetches the whole range, filters,
///   sorts, then cuts at `limit`; otherwise it fetches `limit + 1` keys in key order (one
///   extra for `more`), and only then sorts. So a sort order of NONE with a target other than
///   KEY (which etcd sorts ASCEND: "sort ASCEND by default only when target is not 'KEY'")
///   sorts only the first `limit + 1` keys of the range;
/// - `more` says the sorted, filtered keys were more than `limit`;
/// - keys-only blanks the values.
///
/// Keys that tie on the sort target keep their key order, in both directions: Go's
/// `sort.Sort` is not stable in general, but on the short slices it is given here (fewer
/// than 12 keys) it is an insertion sort, which is.
pub fn apply_range_options(in_range: Vec<KeyValue>, options: &RangeOptions) -> RangeAnswer {
    let count = in_range.len() as u64;
    if options.count_only {
        return RangeAnswer {
            kvs: Vec::new(),
            count,
            more: false,
        };
    }
    let mut kvs = in_range;
    let fetches_all = options.sort_order != SortOrder::None || options.filters();
    if options.limit > 0 && !fetches_all {
        kvs.truncate(
            usize::try_from(options.limit)
                .unwrap_or(usize::MAX)
                .saturating_add(1),
        );
    }
    kvs.retain(|kv| in_window(kv, options));
    let order = match (options.sort_order, options.sort_target) {
        (SortOrder::None, SortTarget::Key) => SortOrder::None,
        (SortOrder::None, _) => SortOrder::Ascend,
        (order, _) => order,
    };
    match order {
        SortOrder::None => {}
        SortOrder::Ascend => kvs.sort_by(|a, b| by_target(options.sort_target, a, b)),
        SortOrder::Descend => kvs.sort_by(|a, b| by_target(options.sort_target, b, a)),
    }
    let mut more = false;
    if options.limit > 0 && kvs.len() as u64 > options.limit {
        kvs.truncate(options.limit as usize);
        more = true;
    }
    if options.keys_only {
        for kv in &mut kvs {
            kv.value.clear();
        }
    }
    RangeAnswer { kvs, count, more }
}

/// Whether `kv` passes the revision filters (each `0` is no bound).
fn in_window(kv: &KeyValue, options: &RangeOptions) -> bool {
    let above = |value: u64, bound: u64| bound == 0 || value >= bound;
    let below = |value: u64, bound: u64| bound == 0 || value <= bound;
    above(kv.mod_revision, options.min_mod_revision)
        && below(kv.mod_revision, options.max_mod_revision)
        && above(kv.create_revision, options.min_create_revision)
        && below(kv.create_revision, options.max_create_revision)
}

/// etcd's `kvSortBy…` `Less`, as an ordering.
fn by_target(target: SortTarget, a: &KeyValue, b: &KeyValue) -> Ordering {
    match target {
        SortTarget::Key => a.key.cmp(&b.key),
        SortTarget::Version => a.version.cmp(&b.version),
        SortTarget::Create => a.create_revision.cmp(&b.create_revision),
        SortTarget::Mod => a.mod_revision.cmp(&b.mod_revision),
        SortTarget::Value => a.value.cmp(&b.value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys a..e: `a` created at 2 … `e` at 6, each at version 1, values in reverse order.
    fn keys() -> Vec<KeyValue> {
        ["a", "b", "c", "d", "e"]
            .iter()
            .enumerate()
            .map(|(index, key)| KeyValue {
                key: key.to_string(),
                value: format!("v{}", 5 - index),
                create_revision: 2 + index as u64,
                mod_revision: 2 + index as u64,
                version: 1,
                lease: None,
            })
            .collect()
    }

    fn names(answer: &RangeAnswer) -> Vec<&str> {
        answer.kvs.iter().map(|kv| kv.key.as_str()).collect()
    }

    #[test]
    fn a_limit_cuts_in_key_order_and_says_more_with_the_whole_count() {
        let options = RangeOptions {
            limit: 2,
            ..RangeOptions::default()
        };
        let answer = apply_range_options(keys(), &options);
        assert_eq!(names(&answer), ["a", "b"]);
        assert_eq!((answer.count, answer.more), (5, true));
        let options = RangeOptions {
            limit: 5,
            ..RangeOptions::default()
        };
        assert!(!apply_range_options(keys(), &options).more);
    }

    #[test]
    fn sort_order_none_with_another_target_sorts_ascending_after_a_limit_in_key_order() {
        // etcd fetches limit + 1 = 3 keys in key order (a, b, c), sorts them by value
        // ascending (c=v3, b=v4, a=v5) and keeps 2.
        let options = RangeOptions {
            limit: 2,
            sort_target: SortTarget::Value,
            ..RangeOptions::default()
        };
        let answer = apply_range_options(keys(), &options);
        assert_eq!(names(&answer), ["c", "b"]);
        assert!(answer.more);
        // Asked ASCEND, it sorts the whole range first: e=v1, d=v2.
        let options = RangeOptions {
            sort_order: SortOrder::Ascend,
            ..options
        };
        assert_eq!(names(&apply_range_options(keys(), &options)), ["e", "d"]);
    }

    #[test]
    fn filters_apply_before_the_limit_and_leave_the_count_alone() {
        let options = RangeOptions {
            limit: 1,
            min_create_revision: 4,
            max_mod_revision: 5,
            ..RangeOptions::default()
        };
        let answer = apply_range_options(keys(), &options);
        assert_eq!(names(&answer), ["c"]);
        assert_eq!((answer.count, answer.more), (5, true));
    }

    #[test]
    fn descending_keys_only_and_count_only() {
        let options = RangeOptions {
            sort_order: SortOrder::Descend,
            keys_only: true,
            ..RangeOptions::default()
        };
        let answer = apply_range_options(keys(), &options);
        assert_eq!(names(&answer), ["e", "d", "c", "b", "a"]);
        assert!(answer.kvs.iter().all(|kv| kv.value.is_empty()));
        let options = RangeOptions {
            count_only: true,
            limit: 1,
            ..RangeOptions::default()
        };
        let answer = apply_range_options(keys(), &options);
        assert_eq!((answer.kvs.len(), answer.count, answer.more), (0, 5, false));
    }
}
