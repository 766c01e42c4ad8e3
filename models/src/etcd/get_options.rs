//! The options of a get, named as `etcd-client` 0.21's `GetOptions` names them, so that code
//! written against that crate reads the same against the model.

use super::mvcc::prefix_range_end;
use sim::history::kv::{KvOperation, RangeOptions, ReadConsistency, SortOrder, SortTarget};

/// Options for [`super::EtcdClient::get_with_options`]: `etcd-client` 0.21's `GetOptions`
/// (the same builder names; numbers are `i64` as there, a negative or zero one meaning "not
/// set" as etcd reads it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GetOptions {
    range: RangeChoice,
    revision: Option<u64>,
    consistency: ReadConsistency,
    options: RangeOptions,
}

/// Which keys: `etcd-client`'s `KeyRange`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
enum RangeChoice {
    #[default]
    SingleKey,
    Before(String),
    Prefix,
    FromKey,
}

/// A number etcd reads as "not set" when zero or less.
fn positive(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

impl GetOptions {
    /// No options: a plain get of one key.
    pub fn new() -> Self {
        Self::default()
    }

    /// The keys in `[key, end_key)`.
    pub fn with_range(mut self, end_key: impl Into<String>) -> Self {
        self.range = RangeChoice::Before(end_key.into());
        self
    }

    /// Every key ≥ the key.
    pub fn with_from_key(mut self) -> Self {
        self.range = RangeChoice::FromKey;
        self
    }

    /// Every key that starts with the key.
    pub fn with_prefix(mut self) -> Self {
        self.range = RangeChoice::Prefix;
        self
    }

    /// At most `limit` keys (0 or less: no limit).
    pub fn with_limit(mut self, limit: i64) -> Self {
        self.options.limit = positive(limit);
        self
    }

    /// Read as of `revision` (0 or less: the newest).
    pub fn with_revision(mut self, revision: i64) -> Self {
        self.revision = Some(positive(revision)).filter(|revision| *revision > 0);
        self
    }

    /// Sort on `target` in `order`. As `etcd-client` does, ascending by key is sent as no
    /// order (the server's default order), so that the server does not fetch the whole
    /// range to sort it.
    pub fn with_sort(mut self, target: SortTarget, order: SortOrder) -> Self {
        self.options.sort_order = match (target, order) {
            (SortTarget::Key, SortOrder::Ascend) => SortOrder::None,
            (_, order) => order,
        };
        self.options.sort_target = target;
        self
    }

    /// A serializable (member-local, possibly stale) read.
    pub fn with_serializable(mut self) -> Self {
        self.consistency = ReadConsistency::Serializable;
        self
    }

    /// Keys without their values.
    pub fn with_keys_only(mut self) -> Self {
        self.options.keys_only = true;
        self
    }

    /// Only the count of keys in the range.
    pub fn with_count_only(mut self) -> Self {
        self.options.count_only = true;
        self
    }

    /// Leave out keys modified before `revision`.
    pub fn with_min_mod_revision(mut self, revision: i64) -> Self {
        self.options.min_mod_revision = positive(revision);
        self
    }

    /// Leave out keys modified after `revision`.
    pub fn with_max_mod_revision(mut self, revision: i64) -> Self {
        self.options.max_mod_revision = positive(revision);
        self
    }

    /// Leave out keys created before `revision`.
    pub fn with_min_create_revision(mut self, revision: i64) -> Self {
        self.options.min_create_revision = positive(revision);
        self
    }

    /// Leave out keys created after `revision`.
    pub fn with_max_create_revision(mut self, revision: i64) -> Self {
        self.options.max_create_revision = positive(revision);
        self
    }

    /// The operation a get of `key` with these options sends: a plain
    /// [`KvOperation::Get`] when no range option is set (so that its history reads as any
    /// other get), else [`KvOperation::GetWithOptions`].
    pub fn operation(self, key: &str) -> KvOperation {
        let range_end = match self.range {
            RangeChoice::SingleKey => None,
            RangeChoice::Before(end) => Some(end),
            RangeChoice::Prefix => Some(prefix_range_end(key)),
            RangeChoice::FromKey => Some("\0".to_string()),
        };
        if self.options == RangeOptions::default() {
            return KvOperation::Get {
                key: key.into(),
                range_end,
                revision: self.revision,
                consistency: self.consistency,
            };
        }
        KvOperation::GetWithOptions {
            key: key.into(),
            range_end,
            revision: self.revision,
            consistency: self.consistency,
            options: self.options,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_range_option_is_a_plain_get_and_ascending_by_key_is_no_option() {
        let plain = GetOptions::new()
            .with_prefix()
            .with_revision(4)
            .operation("a");
        assert_eq!(
            plain,
            KvOperation::Get {
                key: "a".into(),
                range_end: Some("b".into()),
                revision: Some(4),
                consistency: ReadConsistency::Linearizable,
            }
        );
        let ascending_by_key = GetOptions::new()
            .with_sort(SortTarget::Key, SortOrder::Ascend)
            .operation("a");
        assert!(matches!(ascending_by_key, KvOperation::Get { .. }));
        let limited = GetOptions::new()
            .with_limit(2)
            .with_from_key()
            .operation("a");
        let KvOperation::GetWithOptions {
            range_end, options, ..
        } = limited
        else {
            panic!("a get with options: {limited:?}");
        };
        assert_eq!(range_end.as_deref(), Some("\0"));
        assert_eq!(options.limit, 2);
        assert_eq!(GetOptions::new().with_limit(-1), GetOptions::new());
    }
}
