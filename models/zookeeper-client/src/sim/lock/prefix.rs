//! The lock's prefix and options (zookeeper-client 0.11.2, `src/client/mod.rs`:
//! `LockOptions`, `LockPrefix`, `LockPrefixKind`), and the path helpers they use (its
//! `util::split_path`, `util::validate_path`).

use super::super::{Acls, Client, CreateMode, CreateOptions, Error, Result};
use std::sync::atomic::{AtomicU64, Ordering};

/// Options to cover [Acls] for lock path and [CreateOptions] for ancestor nodes if they don't
/// exist (zookeeper-client's `LockOptions`).
#[derive(Clone, Debug)]
pub struct LockOptions<'a> {
    pub(super) acls: Acls<'a>,
    pub(super) parent: Option<CreateOptions<'a>>,
}

impl<'a> LockOptions<'a> {
    /// Options with `acls` for the lock node and no ancestor creation (zookeeper-client's
    /// `LockOptions::new`).
    pub fn new(acls: Acls<'a>) -> Self {
        Self { acls, parent: None }
    }

    /// Creates ancestor nodes if not exist using given options.
    ///
    /// # Notable errors
    /// * [Error::BadArguments] if [CreateMode] is ephemeral or sequential.
    /// * [Error::InvalidAcl] if acl is invalid or empty.
    pub fn with_ancestor_options(mut self, options: CreateOptions<'a>) -> Result<Self> {
        validate_as_directory(&options)?;
        self.parent = Some(options);
        Ok(self)
    }
}

impl<'a> From<Acls<'a>> for LockOptions<'a> {
    fn from(acls: Acls<'a>) -> Self {
        LockOptions::new(acls)
    }
}

/// Which contenders a lock's line holds, and how a lost create is found again.
#[derive(Clone, Copy)]
pub(super) enum LockPrefixKind<'a> {
    Curator { lock_name: &'a str },
    Custom { lock_name: &'a str },
    Shared { prefix: &'a str },
}

impl LockPrefixKind<'_> {
    pub(super) fn filter(&self, name: &str) -> bool {
        match self {
            Self::Curator { lock_name } => name.contains(lock_name),
            Self::Custom { lock_name } => name.contains(lock_name),
            Self::Shared { prefix } => name.starts_with(prefix),
        }
    }

    pub(super) fn is_unique(&self) -> bool {
        matches!(self, Self::Curator { .. })
    }
}

#[derive(Debug)]
enum LockPrefixInner<'a> {
    Curator { dir: &'a str, name: &'a str },
    Custom { prefix: String, name: &'a str },
    Shared { prefix: &'a str },
}

/// Prefix pattern for lock path creation (zookeeper-client's `LockPrefix`).
///
/// This struct carries path prefix for ephemeral lock path, name filter for candidate contenders
/// and hint to find created lock path in case of [Error::ConnectionLoss].
#[derive(Debug)]
pub struct LockPrefix<'a> {
    inner: LockPrefixInner<'a>,
}

impl<'a> LockPrefix<'a> {
    /// Apache Curator compatible unique prefix pattern, the final lock path will be
    /// `{dir}/_c_{uuid}-{name}{ephemeral_sequence}`.
    ///
    /// # Notable lock names
    /// * `latch-` for `LeaderLatch`.
    /// * `lock-` for `LeaderSelector` and `InterProcessMutex`.
    pub fn new_curator(dir: &'a str, name: &'a str) -> Result<Self> {
        validate_path(dir, TrailingSlash::Refused)?;
        if name.find('/').is_some() {
            return Err(Error::BadArguments(&"lock name must not contain /"));
        }
        Ok(Self {
            inner: LockPrefixInner::Curator { dir, name },
        })
    }

    /// Shared path prefix, the final lock path will be `{prefix}{ephemeral_sequence}`.
    ///
    /// # CAUTION
    /// All contenders share same prefix, so concurrent contenders must not share same session
    /// client. Otherwise, the lock could be ruined in case of [Error::ConnectionLoss] as there is
    /// no way to differentiate contenders using same session.
    pub fn new_shared(prefix: &'a str) -> Result<Self> {
        validate_path(prefix, TrailingSlash::Allowed)?;
        Ok(Self {
            inner: LockPrefixInner::Shared { prefix },
        })
    }

    /// Custom path prefix, the final lock path will be `{prefix}{ephemeral_sequence}`.
    ///
    /// # CAUTION
    /// Don't reuse same prefix among clients with same session. See [LockPrefix::new_shared] for
    /// details.
    pub fn new_custom(prefix: String, name: &'a str) -> Result<Self> {
        validate_path(&prefix, TrailingSlash::Allowed)?;
        if !name.is_empty() {
            let (_dir, _tree, this) = split_path(&prefix);
            if !this.contains(name) {
                return Err(Error::BadArguments(
                    &"lock path prefix must contain lock name",
                ));
            }
        }
        Ok(Self {
            inner: LockPrefixInner::Custom { prefix, name },
        })
    }

    pub(super) fn kind(&self) -> LockPrefixKind<'a> {
        match &self.inner {
            LockPrefixInner::Curator { name, .. } => LockPrefixKind::Curator { lock_name: name },
            LockPrefixInner::Shared { prefix } => {
                let (_parent, _tree, name) = split_path(prefix);
                LockPrefixKind::Shared { prefix: name }
            }
            LockPrefixInner::Custom { name, .. } => LockPrefixKind::Custom { lock_name: name },
        }
    }

    pub(super) fn into_path(self, client: &Client) -> String {
        match self.inner {
            LockPrefixInner::Curator { dir, name } => {
                format!("{}/_c_{}-{}", dir, unique_id(client), name)
            }
            LockPrefixInner::Shared { prefix } => prefix.to_string(),
            LockPrefixInner::Custom { prefix, .. } => prefix,
        }
    }
}

/// Whether a path may end in `/` (a sequential prefix may: the server appends the number).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum TrailingSlash {
    Allowed,
    Refused,
}

/// Checks `path` as zookeeper-client's `util::validate_path` does (without a chroot), with
/// its messages.
pub(crate) fn validate_path(path: &str, trailing: TrailingSlash) -> Result<()> {
    if path.is_empty() {
        return Err(Error::BadArguments(&"path cannot be empty"));
    }
    if !path.starts_with('/') {
        return Err(Error::BadArguments(&"path must start with '/'"));
    }
    if path.len() == 1 {
        return Ok(());
    }
    let mut last_chars = ['/', '/', '/'];
    for c in path.chars().skip(1) {
        let u = u32::from(c);
        let invalid = [
            0x0000..=0x001f,
            0x007f..=0x009f,
            0xd800..=0xf8ff,
            0xfff0..=0xffff,
        ]
        .into_iter()
        .any(|range| range.contains(&u));
        if invalid {
            return Err(Error::BadArguments(&"unsupported characters in path"));
        }
        if c == '/' {
            if last_chars[2] == '/' {
                return Err(Error::BadArguments(&"empty node is not allowed in path"));
            } else if (last_chars[1] == '/' && last_chars[2] == '.')
                || (last_chars[0] == '/' && last_chars[1] == '.' && last_chars[2] == '.')
            {
                return Err(Error::BadArguments(&"relative path is not allowed"));
            }
        }
        last_chars = [last_chars[1], last_chars[2], c];
    }
    if last_chars[2] == '/' && trailing == TrailingSlash::Refused {
        return Err(Error::BadArguments(&"path must not end with '/'"));
    }
    Ok(())
}

/// Splits path to `(parent, tree, name)` where `tree` has trailing slash but `parent` does not
/// have (zookeeper-client's `util::split_path`; `path` is a validated absolute path).
pub(super) fn split_path(path: &str) -> (&str, &str, &str) {
    let last_slash = path.rfind('/').unwrap_or(0);
    if last_slash == 0 {
        ("/", "/", &path[1..])
    } else {
        (
            &path[..last_slash],
            &path[..last_slash + 1],
            &path[last_slash + 1..],
        )
    }
}

/// The run's count of Curator prefixes made, so no two are alike.
struct LockUuids(AtomicU64);

/// A UUID-shaped id for a Curator prefix: this session's id and the run's count of such
/// prefixes, where zookeeper-client takes `Uuid::new_v4()`. Unique as a random UUID is, and
/// the same in every replay of a seed (no randomness from outside the simulation).
fn unique_id(client: &Client) -> String {
    let count = match ::sim::Sim::current() {
        Some(sim) => {
            if sim.service::<LockUuids>().is_none() {
                sim.provide(LockUuids(AtomicU64::new(0)));
            }
            sim.service::<LockUuids>()
                .map_or(0, |uuids| uuids.0.fetch_add(1, Ordering::Relaxed))
        }
        None => 0,
    };
    let session = client.session_id().0 as u64;
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        session >> 32,
        (session >> 16) & 0xffff,
        session & 0xffff,
        (count >> 48) & 0xffff,
        count & 0xffff_ffff_ffff
    )
}

/// Checks options for an ancestor directory as zookeeper-client's
/// `CreateOptions::validate_as_directory` does, with its messages.
fn validate_as_directory(options: &CreateOptions<'_>) -> Result<()> {
    if options.acls.is_empty() {
        return Err(Error::InvalidAcl);
    }
    match options.mode {
        CreateMode::Ephemeral | CreateMode::EphemeralSequential => {
            Err(Error::BadArguments(&"directory node must not be ephemeral"))
        }
        CreateMode::PersistentSequential => Err(Error::BadArguments(
            &"directory node must not be sequential",
        )),
        CreateMode::Persistent | CreateMode::Container => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bad_arguments<T: std::fmt::Debug>(result: Result<T>) -> &'static str {
        match result {
            Err(Error::BadArguments(message)) => message,
            other => panic!("expected BadArguments, got {other:?}"),
        }
    }

    #[test]
    fn prefixes_refuse_what_zookeeper_client_refuses_with_its_messages() {
        assert_eq!(
            bad_arguments(LockPrefix::new_curator("/locks", "a/b")),
            "lock name must not contain /"
        );
        assert_eq!(
            bad_arguments(LockPrefix::new_curator("/locks/", "lock-")),
            "path must not end with '/'"
        );
        assert_eq!(
            bad_arguments(LockPrefix::new_shared("locks/n-")),
            "path must start with '/'"
        );
        assert_eq!(
            bad_arguments(LockPrefix::new_custom("/locks/x-1-".into(), "y-")),
            "lock path prefix must contain lock name"
        );
        assert!(LockPrefix::new_shared("/locks/").is_ok());
        assert!(LockPrefix::new_custom("/locks/x-1-".into(), "x-").is_ok());
    }

    #[test]
    fn ancestors_must_be_plain_directories_with_acls() {
        let options = LockOptions::new(Acls::anyone_all());
        let ephemeral = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
        assert_eq!(
            bad_arguments(options.clone().with_ancestor_options(ephemeral)),
            "directory node must not be ephemeral"
        );
        let sequential = CreateMode::PersistentSequential.with_acls(Acls::anyone_all());
        assert_eq!(
            bad_arguments(options.clone().with_ancestor_options(sequential)),
            "directory node must not be sequential"
        );
        let no_acls = CreateMode::Persistent.with_acls(Acls::new(&[]));
        assert!(matches!(
            options.with_ancestor_options(no_acls),
            Err(Error::InvalidAcl)
        ));
    }

    #[test]
    fn paths_split_as_zookeeper_clients_util_splits_them() {
        assert_eq!(split_path("/a"), ("/", "/", "a"));
        assert_eq!(split_path("/a/b/c-"), ("/a/b", "/a/b/", "c-"));
    }
}
