//! zookeeper-client's ACL types (`src/acl.rs`): the same names, constructors and accessors.

use std::borrow::Cow;

/// Permission expresses rights accessors should have to operate on attached node
/// (zookeeper-client's `Permission`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Permission(i32);

#[rustfmt::skip]
impl Permission {
    /// Permission to get data from a node and list its children.
    pub const READ:     Permission = Permission(1);
    /// Permission to set data for a node.
    pub const WRITE:    Permission = Permission(2);
    /// Permission to create a child node.
    pub const CREATE:   Permission = Permission(4);
    /// Permission to delete a child node.
    pub const DELETE:   Permission = Permission(8);
    /// Permission to set ACL permissions.
    pub const ADMIN:    Permission = Permission(16);
    /// Permission to do all above.
    pub const ALL:      Permission = Permission(31);
    /// Permission to do none of above.
    pub const NONE:     Permission = Permission(0);
}

impl Permission {
    /// Test whether this permission has given permission. Same as `self & perm == perm`.
    pub fn has(self, perm: Permission) -> bool {
        (self.0 & perm.0) == perm.0
    }

    pub(crate) fn into_raw(self) -> i32 {
        self.0
    }

    pub(crate) fn from_raw(raw: i32) -> Permission {
        Permission(raw)
    }
}

impl std::ops::BitAnd for Permission {
    type Output = Self;

    /// Compute common permission between the two.
    fn bitand(self, rhs: Self) -> Self::Output {
        Permission(self.0 & rhs.0)
    }
}

impl std::ops::BitOr for Permission {
    type Output = Self;

    /// Compute sum permission of the two.
    fn bitor(self, rhs: Self) -> Self::Output {
        Permission(self.0 | rhs.0)
    }
}

impl std::fmt::Display for Permission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if *self == Permission::ALL {
            return f.write_str("ALL");
        } else if *self == Permission::NONE {
            return f.write_str("NONE");
        }
        [
            (Permission::READ, "READ"),
            (Permission::WRITE, "WRITE"),
            (Permission::CREATE, "CREATE"),
            (Permission::DELETE, "DELETE"),
            (Permission::ADMIN, "ADMIN"),
        ]
        .into_iter()
        .filter(|(perm, _)| self.has(*perm))
        .enumerate()
        .try_for_each(|(i, (_, name))| {
            if i == 0 {
                f.write_str(name)
            } else {
                write!(f, "|{name}")
            }
        })
    }
}

/// Acl expresses node permission for node accessors (zookeeper-client's `Acl`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Acl {
    permission: Permission,
    auth_id: AuthId,
}

/// AuthId represents authenticated identity and expresses authentication requirement in
/// [Acl] (zookeeper-client's `AuthId`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthId {
    scheme: Cow<'static, str>,
    id: Cow<'static, str>,
}

impl AuthId {
    /// Constructs an auth id with specified id under given scheme.
    pub fn new(scheme: &str, id: &str) -> AuthId {
        AuthId {
            scheme: Cow::Owned(scheme.to_string()),
            id: Cow::Owned(id.to_string()),
        }
    }

    /// Const alternative to [AuthId::new].
    pub const fn new_const(scheme: &'static str, id: &'static str) -> AuthId {
        AuthId {
            scheme: Cow::Borrowed(scheme),
            id: Cow::Borrowed(id),
        }
    }

    /// Returns the scheme this auth id serve for.
    pub fn scheme(&self) -> &str {
        &self.scheme
    }

    /// Returns the identity this auth id represent for.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Auth id that could represent anyone in access.
    pub const fn anyone() -> AuthId {
        Self::new_const("world", "anyone")
    }

    /// Auth id that could only represent one that has same authes.
    pub const fn authed() -> AuthId {
        Self::new_const("auth", "")
    }
}

/// AuthUser represents display info for authenticated identity (zookeeper-client's
/// `AuthUser`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthUser {
    scheme: String,
    user: String,
}

impl AuthUser {
    /// Constructs an auth user with auth scheme and user name.
    pub fn new(scheme: &str, user: &str) -> AuthUser {
        AuthUser {
            scheme: scheme.to_string(),
            user: user.to_string(),
        }
    }

    /// Returns authed scheme.
    pub fn scheme(&self) -> &str {
        &self.scheme
    }

    /// Returns authed user name.
    pub fn user(&self) -> &str {
        &self.user
    }
}

static ANYONE_ALL: [Acl; 1] = [Acl::new_const(Permission::ALL, "world", "anyone")];
static ANYONE_READ: [Acl; 1] = [Acl::new_const(Permission::READ, "world", "anyone")];
static CREATOR_ALL: [Acl; 1] = [Acl::new_const(Permission::ALL, "auth", "")];

impl Acl {
    /// Constructs an acl with specified permission for given auth id.
    pub fn new(permission: Permission, auth_id: AuthId) -> Acl {
        Acl {
            permission,
            auth_id,
        }
    }

    /// Const alternative to [Acl::new].
    pub const fn new_const(permission: Permission, scheme: &'static str, id: &'static str) -> Acl {
        Acl {
            permission,
            auth_id: AuthId::new_const(scheme, id),
        }
    }

    /// Returns the permission this auth id has.
    pub fn permission(&self) -> Permission {
        self.permission
    }

    /// Returns the auth id this acl serve for.
    pub fn auth_id(&self) -> &AuthId {
        &self.auth_id
    }

    /// Returns the scheme this auth id serve for.
    pub fn scheme(&self) -> &str {
        self.auth_id.scheme()
    }

    /// Returns the identity this auth id represent for.
    pub fn id(&self) -> &str {
        self.auth_id.id()
    }

    /// The model's entry.
    pub(crate) fn to_model(&self) -> sim::history::zk::Acl {
        let perms = sim::history::zk::Perms(self.permission.into_raw() as u32);
        sim::history::zk::Acl::new(perms, self.scheme(), self.id())
    }

    /// An entry of the model's, as the real client decodes one.
    pub(crate) fn from_model(acl: &sim::history::zk::Acl) -> Acl {
        Acl::new(
            Permission::from_raw(acl.perms.0 as i32),
            AuthId::new(&acl.scheme, &acl.id),
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AclsInner<'a> {
    AnyoneAll,
    AnyoneRead,
    CreatorAll,
    Acls { acls: &'a [Acl] },
}

/// List of [Acl]s to carry different permissions for different auth identities
/// (zookeeper-client's `Acls`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Acls<'a> {
    inner: AclsInner<'a>,
}

impl<'a> Acls<'a> {
    /// Wraps list of [Acl] as [Acls]. See also [Acls::from].
    pub fn new(acls: &'a [Acl]) -> Self {
        Self {
            inner: AclsInner::Acls { acls },
        }
    }

    /// Returns acls that expresses anyone can have full permissions over nodes created by
    /// this session.
    pub const fn anyone_all() -> Acls<'static> {
        Acls {
            inner: AclsInner::AnyoneAll,
        }
    }

    /// Returns acls that expresses anyone can read nodes created by this session.
    pub const fn anyone_read() -> Acls<'static> {
        Acls {
            inner: AclsInner::AnyoneRead,
        }
    }

    /// Returns acls that expresses anyone who has same auth as creator can have full
    /// permissions over nodes created by this session.
    pub const fn creator_all() -> Acls<'static> {
        Acls {
            inner: AclsInner::CreatorAll,
        }
    }

    /// The model's ACL of these entries (the open ACL is the model's `Open`).
    pub(crate) fn to_model(self) -> models::zk::NodeAcl {
        models::zk::NodeAcl::from_entries(self.iter().map(Acl::to_model).collect())
    }
}

impl<'a> std::ops::Deref for Acls<'a> {
    type Target = [Acl];

    fn deref(&self) -> &'a [Acl] {
        match self.inner {
            AclsInner::AnyoneAll => &ANYONE_ALL,
            AclsInner::AnyoneRead => &ANYONE_READ,
            AclsInner::CreatorAll => &CREATOR_ALL,
            AclsInner::Acls { acls } => acls,
        }
    }
}

impl<'a> From<&'a [Acl]> for Acls<'a> {
    fn from(acls: &'a [Acl]) -> Self {
        Self::new(acls)
    }
}
