//! Names for ids that differ from run to run: sessions and leases by role, in the order a
//! probe first meets them.

/// Role names for one kind of id (`s1`, `s2`, … for sessions; `l1`, … for leases).
#[derive(Clone, Debug)]
pub struct Roles {
    prefix: char,
    // A Vec, not a map: a probe meets a handful of ids, and the order is the point.
    seen: Vec<i64>,
}

impl Roles {
    /// Roles named `{prefix}1`, `{prefix}2`, …
    pub fn new(prefix: char) -> Roles {
        Roles {
            prefix,
            seen: Vec::new(),
        }
    }

    /// The role of `id`, naming it if it is new.
    pub fn name(&mut self, id: i64) -> String {
        let index = match self.seen.iter().position(|&seen| seen == id) {
            Some(index) => index,
            None => {
                self.seen.push(id);
                self.seen.len() - 1
            }
        };
        format!("{}{}", self.prefix, index + 1)
    }

    /// The id a role names, if it was met (`l2` → the second lease granted).
    pub fn id(&self, role: &str) -> Option<i64> {
        let index: usize = role.strip_prefix(self.prefix)?.parse().ok()?;
        self.seen.get(index.checked_sub(1)?).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::Roles;

    #[test]
    fn roles_follow_first_appearance() {
        let mut sessions = Roles::new('s');
        assert_eq!(sessions.name(0x7000_0001), "s1");
        assert_eq!(sessions.name(42), "s2");
        assert_eq!(sessions.name(0x7000_0001), "s1");
        assert_eq!(sessions.id("s2"), Some(42));
        assert_eq!(sessions.id("s3"), None);
        assert_eq!(sessions.id("l1"), None);
    }
}
