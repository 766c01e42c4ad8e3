//! Znode path rules (ZooKeeper's `PathUtils.validatePath`).

use sim::history::zk::ZkError;

/// Checks that `path` names a znode: absolute, no trailing `/` (except the root), no empty
/// segment, no `.` or `..` segment, no NUL. Anything else is `BadArguments`.
pub fn validate(path: &str) -> Result<(), ZkError> {
    if !path.starts_with('/') {
        return Err(ZkError::BadArguments);
    }
    if path == "/" {
        return Ok(());
    }
    if path.ends_with('/') || path.contains('\0') {
        return Err(ZkError::BadArguments);
    }
    for segment in path[1..].split('/') {
        if segment.is_empty() || segment == "." || segment == ".." {
            return Err(ZkError::BadArguments);
        }
    }
    Ok(())
}

/// Checks a create path: for sequential modes the path is a prefix that the sequence number
/// completes, so `/queue/` is fine (it becomes `/queue/0000000003`), as in ZooKeeper.
pub fn validate_create(path: &str, sequential: bool) -> Result<(), ZkError> {
    if sequential {
        validate(&format!("{path}1"))
    } else if path == "/" {
        // The root always exists.
        Err(ZkError::NodeExists)
    } else {
        validate(path)
    }
}

/// The parent of a valid path other than the root (`/a/b` → `/a`, `/a` → `/`).
pub fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(index) => &path[..index],
    }
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
    fn valid_and_invalid_paths() {
        for good in ["/", "/a", "/a/b", "/a-b/c_d.e", "/a/.b"] {
            assert_eq!(validate(good), Ok(()), "{good}");
        }
        for bad in [
            "", "a", "a/b", "/a/", "//", "/a//b", "/a/./b", "/a/..", "/.", "/a\0b",
        ] {
            assert_eq!(validate(bad), Err(ZkError::BadArguments), "{bad:?}");
        }
        assert_eq!(validate_create("/q/", true), Ok(()));
        assert_eq!(validate_create("/q/", false), Err(ZkError::BadArguments));
        assert_eq!(validate_create("/", false), Err(ZkError::NodeExists));
        assert_eq!(validate_create("//", true), Err(ZkError::BadArguments));
    }

    #[test]
    fn parents_names_and_joins() {
        assert_eq!(parent("/a"), "/");
        assert_eq!(parent("/a/b/c"), "/a/b");
        assert_eq!(name("/a/b/c"), "c");
        assert_eq!(join("/", "x"), "/x");
        assert_eq!(join("/a", "x"), "/a/x");
    }
}
