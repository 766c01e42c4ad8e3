//! A get with etcd's range options, per key: what its answer shows of each key it covers.

use super::from_history::{KeyPart, MISMATCH, covered, plain, seen};
use super::{KeyAction, KvCall, KvModel, KvOutput};
use sim::history::kv::{KeyValue, KvResponse, RangeOptions, SortOrder, SortTarget};

/// A get with range options: one part per checked key whose state the answer shows.
/// - A key the answer holds is read; without its value when keys-only.
/// - A key it does not hold is read as absent only when it would have been in the answer:
///   no revision filter left it out, and either the limit cut nothing (`more` is false) or
///   the answer is in key order and the key comes before its last key (so the cut came
///   after it). Otherwise the answer says nothing of it, and it gets no part.
/// - A count-only get shows no key: a get of one key is a read of its count (0 or 1);
///   over a range it is left out (a range's count is not checked per key).
/// - The count of a get of one key is checked too (etcd counts before the limit and filters).
pub(super) fn split_get_with_options(
    model: &mut KvModel,
    key: &str,
    range_end: Option<&str>,
    options: &RangeOptions,
    response: Option<&KvResponse>,
    universe: &[&String],
) -> Result<Vec<KeyPart>, &'static str> {
    if options.count_only && range_end.is_some() {
        return Err("count-only read of a range (a range's count is not checked per key)");
    }
    let answer = match response {
        None => None,
        Some(KvResponse::GetWithOptions {
            revision,
            kvs,
            count,
            more,
        }) => Some((*revision, kvs.as_slice(), *count, *more)),
        Some(_) => return Err(MISMATCH),
    };
    let mut parts = Vec::new();
    for covered_key in covered(universe, key, range_end) {
        let count = |count: u64| range_end.is_none().then_some(count);
        if options.count_only {
            let output = answer.map(|(revision, _, answered, _)| KvOutput {
                revision,
                succeeded: true,
                reads: Vec::new(),
                deleted: None,
                count: count(answered),
            });
            let input = plain(model, covered_key, KvCall::GetWithOptions, Vec::new());
            parts.push((input, output));
            continue;
        }
        let output = match answer {
            // An unknown outcome of a read changes nothing: read, nothing seen.
            None => None,
            Some((revision, kvs, answered, more)) => {
                let mut found = seen(model, kvs, covered_key);
                if options.keys_only
                    && let Some(found) = &mut found
                {
                    found.value = None;
                }
                if found.is_none() && !absence_shown(covered_key, kvs, more, options) {
                    continue;
                }
                Some(KvOutput {
                    revision,
                    succeeded: true,
                    reads: vec![found],
                    deleted: None,
                    count: count(answered),
                })
            }
        };
        let input = plain(
            model,
            covered_key,
            KvCall::GetWithOptions,
            vec![KeyAction::Read],
        );
        parts.push((input, output));
    }
    Ok(parts)
}

/// Whether an answer that does not hold `key` shows that `key` is absent.
fn absence_shown(key: &str, kvs: &[KeyValue], more: bool, options: &RangeOptions) -> bool {
    if options.filters() {
        return false;
    }
    if !more {
        return true;
    }
    // Cut by the limit: only a key-ordered answer says which keys came before the cut.
    let Some(last) = kvs.last() else {
        return false;
    };
    match (options.sort_target, options.sort_order) {
        (SortTarget::Key, SortOrder::None | SortOrder::Ascend) => key < last.key.as_str(),
        (SortTarget::Key, SortOrder::Descend) => key > last.key.as_str(),
        _ => false,
    }
}
