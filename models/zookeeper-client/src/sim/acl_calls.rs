//! zookeeper-client's ACL calls on [`Client`]: `get_acl`, `set_acl`, `auth`.

use super::error::{Error, Result, from_client};
use super::{Acl, Client, Stat};
use std::future::Future;

impl Client {
    /// Gets acl and stat for node with given path.
    ///
    /// # Notable errors
    /// * [Error::NoNode] if such node does not exist.
    pub fn get_acl<'s>(
        &'s self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<Acl>, Stat)>> + Send + 's + use<'s> {
        let session = self.session.clone();
        let path = path.to_string();
        async move {
            let (acl, _aversion, stat) = session.get_acl(&path).await.map_err(from_client)?;
            Ok((
                acl.iter().map(Acl::from_model).collect(),
                Stat::from_model(&stat),
            ))
        }
    }

    /// Sets acl for node with given path and returns updated stat.
    ///
    /// # Notable errors
    /// * [Error::NoNode] if such node does not exist.
    /// * [Error::BadVersion] if such node exists but has different acl version.
    pub fn set_acl<'s>(
        &'s self,
        path: &str,
        acl: &[Acl],
        expected_acl_version: Option<i32>,
    ) -> impl Future<Output = Result<Stat>> + Send + 's + use<'s> {
        let session = self.session.clone();
        let path = path.to_string();
        let acl: Vec<_> = acl.iter().map(Acl::to_model).collect();
        async move {
            let (_aversion, stat) = session
                .set_acl(&path, acl, expected_acl_version)
                .await
                .map_err(from_client)?;
            Ok(Stat::from_model(&stat))
        }
    }

    /// Authenticates session using given scheme and auth identication. This affects only
    /// subsequent operations.
    ///
    /// # Errors
    /// * [Error::AuthFailed] if authentication failed.
    /// * Other terminal session errors.
    pub fn auth<'s>(
        &'s self,
        scheme: &str,
        auth: &[u8],
    ) -> impl Future<Output = Result<()>> + Send + 's + use<'s> {
        let session = self.session.clone();
        let scheme = scheme.to_string();
        let auth = String::from_utf8(auth.to_vec()).map_err(|_| {
            Error::BadArguments(&"auth is not UTF-8 (coordsim's model takes `user:password` text)")
        });
        async move { session.add_auth(&scheme, &auth?).await.map_err(from_client) }
    }
}
