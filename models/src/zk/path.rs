//! Znode path rules, and where each lives. Checked against ZooKeeper 3.8.0 with requests
//! that skip the Java client's own check:
//!
//! | path | client (`zookeeper-client` 0.11) | server: reads | `create` | `delete` | `setData`, `setACL` |
//! |---|---|---|---|---|---|
//! | `/a//x` | BadArguments | NoNode (`exists`: none) | NoNode (parent `/a/`) | NoNode | BadArguments |
//! | `/a/./x` | BadArguments | NoNode | NoNode (parent `/a/.`) | NoNode | BadArguments |
//! | `/a/` | BadArguments (allowed for a sequential create) | NoNode | BadArguments | NoNode | BadArguments |
//! | `/a/.`, `/a/..` | sent as they are | NoNode | BadArguments | NoNode | BadArguments |
//!
//! - The client ([`validate_request`]) is `zookeeper-client`'s `util::validate_path`: it
//!   checks empty segments and `.`/`..` segments only where a `/` follows them.
//! - The server checks a full path only where ZooKeeper's `PrepRequestProcessor` does
//!   ([`validate`], `PathUtils.validatePath`): a create's final path, `setData`, `setACL`
//!   and a multi's `check`. A create and a delete first only split the path at its last `/`
//!   ([`split_request`]: `validatePathForCreate`, `getParentPathAndValidate`) and look the
//!   parent up; reads (`FinalRequestProcessor`) only look the path up.

use sim::history::zk::ZkError;

/// Characters ZooKeeper refuses in a path (`PathUtils.validatePath`; `zookeeper-client`
/// refuses the same ranges and NUL).
fn is_refused_char(c: char) -> bool {
    matches!(u32::from(c), 0x0000..=0x001f | 0x007f..=0x009f | 0xd800..=0xf8ff | 0xfff0..=0xffff)
}

/// Whether `path` holds a refused character. Every request's path is checked, and almost
/// every path is ASCII: its bytes are its characters, with no decoding.
fn has_refused_char(path: &str) -> bool {
    if path.is_ascii() {
        path.bytes().any(|byte| is_refused_char(char::from(byte)))
    } else {
        path.chars().any(is_refused_char)
    }
}

/// The server's full check (`PathUtils.validatePath`): absolute, no trailing `/` (except
/// the root), no empty segment, no `.` or `..` segment, no refused character. Anything
/// else is `BadArguments`.
pub fn validate(path: &str) -> Result<(), ZkError> {
    if !path.starts_with('/') {
        return Err(ZkError::BadArguments);
    }
    if path == "/" {
        return Ok(());
    }
    if path.ends_with('/') || has_refused_char(path) {
        return Err(ZkError::BadArguments);
    }
    for segment in path[1..].split('/') {
        if segment.is_empty() || segment == "." || segment == ".." {
            return Err(ZkError::BadArguments);
        }
    }
    Ok(())
}

/// The client's check before sending (`zookeeper-client` 0.11, `util::validate_path`):
/// absolute; no refused character; no empty segment; a `.` or `..` segment only at the end
/// (the crate looks for one only where a `/` follows it); no trailing `/` unless
/// `trailing_slash` allows it (a sequential create, whose path is a prefix).
pub fn validate_request(path: &str, trailing_slash: TrailingSlash) -> Result<(), ZkError> {
    if !path.starts_with('/') {
        return Err(ZkError::BadArguments);
    }
    if path == "/" {
        return Ok(());
    }
    if has_refused_char(path) {
        return Err(ZkError::BadArguments);
    }
    // Every segment but the last, as each next one is found (no list of them).
    let mut segments = path[1..].split('/');
    let mut last = segments.next().expect("split yields one segment at least");
    for next in segments {
        if last.is_empty() || last == "." || last == ".." {
            return Err(ZkError::BadArguments);
        }
        last = next;
    }
    if last.is_empty() && trailing_slash == TrailingSlash::Refused {
        return Err(ZkError::BadArguments);
    }
    Ok(())
}

/// The client's check of a create's path: a sequential create's path may end with `/`.
pub fn validate_create_request(path: &str, sequential: bool) -> Result<(), ZkError> {
    let trailing_slash = if sequential {
        TrailingSlash::Allowed
    } else {
        TrailingSlash::Refused
    };
    validate_request(path, trailing_slash)
}

/// Whether a path may end with `/`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrailingSlash {
    /// A sequential create's prefix: `/queue/` becomes `/queue/0000000003`.
    Allowed,
    /// Every other path.
    Refused,
}

/// A create's or a delete's first check at the server: the parent to look up, the path
/// cut at its last `/` (`/` for a top-level node and for the root itself);
/// `BadArguments` for a path without `/` or with NUL (ZooKeeper's `validatePathForCreate`
/// and `getParentPathAndValidate`, which also refuses to delete the root).
pub fn split_request(path: &str) -> Result<&str, ZkError> {
    match path.rfind('/') {
        None => Err(ZkError::BadArguments),
        Some(_) if path.contains('\0') => Err(ZkError::BadArguments),
        Some(0) => Ok("/"),
        Some(index) => Ok(&path[..index]),
    }
}

/// The parent of a valid path other than the root (`/a/b` → `/a`, `/a` → `/`).
pub fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(index) => &path[..index],
    }
}

/// A valid path and each of its ancestors, up to the root (`/a/b` → `/a/b`, `/a`, `/`):
/// where a recursive watch on any of them sees a change to `path`.
pub fn path_and_ancestors(path: &str) -> impl Iterator<Item = &str> {
    let mut next = Some(path);
    std::iter::from_fn(move || {
        let current = next?;
        next = (current != "/").then(|| parent(current));
        Some(current)
    })
}

/// The last segment of a valid path (`/a/b` → `b`).
pub fn name(path: &str) -> &str {
    match path.rfind('/') {
        Some(index) => &path[index + 1..],
        None => path,
    }
}

/// `parent` + `/` + `child`.
pub fn join(parent: &str, child: &str) -> String {
    if parent == "/" {
        format!("/{child}")
    } else {
        format!("{parent}/{child}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_servers_full_check() {
        for good in ["/", "/a", "/a/b", "/a-b/c_d.e", "/a/.b", "/a/..b", "/路径"] {
            assert_eq!(validate(good), Ok(()), "{good}");
        }
        for bad in [
            "", "a", "a/b", "/a/", "//", "/a//b", "/a/./b", "/a/..", "/.", "/a\0b", "/a\u{7f}",
        ] {
            assert_eq!(validate(bad), Err(ZkError::BadArguments), "{bad:?}");
        }
    }

    #[test]
    fn the_clients_check_is_zookeeper_clients() {
        use TrailingSlash::{Allowed, Refused};
        // As `zookeeper-client` 0.11's own tests (`util.rs`).
        for good in [
            "/",
            "/abc",
            "/abc/efg",
            "/abc/.a./efg",
            "/abc/..a/efg",
            "/abc/路径/efg",
        ] {
            assert_eq!(validate_request(good, Refused), Ok(()), "{good}");
        }
        for bad in [
            "",
            "a",
            "/abc//efg",
            "/abc/./efg",
            "/abc/../efg",
            "/abc/",
            "/a\0",
        ] {
            assert_eq!(
                validate_request(bad, Refused),
                Err(ZkError::BadArguments),
                "{bad:?}"
            );
        }
        assert_eq!(validate_request("/abc/", Allowed), Ok(()));
        assert_eq!(validate_request("//", Allowed), Err(ZkError::BadArguments));
        // A dot segment at the end goes to the server (which answers NoNode or BadArguments).
        assert_eq!(validate_request("/a/.", Refused), Ok(()));
        assert_eq!(validate_request("/a/..", Refused), Ok(()));
    }

    #[test]
    fn refused_characters_are_found_in_ascii_and_other_paths() {
        for refused in [
            "/a\0",
            "/\u{1f}",
            "/a\u{7f}",
            "/a\u{85}b",
            "/路\u{e000}",
            "/\u{fff0}",
        ] {
            assert!(has_refused_char(refused), "{refused:?}");
            assert_eq!(validate(refused), Err(ZkError::BadArguments), "{refused:?}");
        }
        for accepted in ["/a b~", "/é", "/路径", "/\u{a0}", "/\u{f900}"] {
            assert!(!has_refused_char(accepted), "{accepted:?}");
        }
    }

    #[test]
    fn parents_names_and_joins() {
        assert_eq!(parent("/a"), "/");
        assert_eq!(parent("/a/b/c"), "/a/b");
        assert_eq!(name("/a/b/c"), "c");
        assert_eq!(join("/", "x"), "/x");
        assert_eq!(join("/a", "x"), "/a/x");
        assert_eq!(split_request("/a//x"), Ok("/a/"));
        assert_eq!(split_request("/a"), Ok("/"));
        assert_eq!(split_request("a"), Err(ZkError::BadArguments));
        assert_eq!(split_request("/"), Ok("/"));
        assert_eq!(split_request("/a\0"), Err(ZkError::BadArguments));
    }
}
