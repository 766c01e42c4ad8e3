//! More of zookeeper-client's calls on [`Client`]: `list_ephemerals`,
//! `count_descendants_number` (each one model call) and `mkdir` (the real client's own
//! loop of creates, `src/client/mod.rs`, over this crate's `create`).

use super::error::{Error, Result, from_client};
use super::{Client, CreateMode, CreateOptions};
use std::future::Future;

impl Client {
    /// Counts descendants number for node with given path.
    ///
    /// # Notable errors
    /// * [Error::NoNode] if such node does not exist.
    pub fn count_descendants_number(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<usize>> + Send + use<> {
        let session = self.session.clone();
        let path = path.to_string();
        async move {
            let number = session
                .get_all_children_number(&path)
                .await
                .map_err(from_client)?;
            Ok(number as usize)
        }
    }

    /// Lists all ephemerals nodes that created by current session and starts with given
    /// path.
    ///
    /// # Notable behaviors
    /// * No [Error::NoNode] if node with give path does not exist.
    /// * Result will include given path if that node is ephemeral.
    pub fn list_ephemerals<'s>(
        &'s self,
        path: &str,
    ) -> impl Future<Output = Result<Vec<String>>> + Send + 's + use<'s> {
        let path = path.to_string();
        async move {
            self.session
                .get_ephemerals(&path)
                .await
                .map_err(from_client)
        }
    }

    /// Makes directories up to path. Treats it as `mkdir -p`.
    ///
    /// # Notable behaviors
    /// * No atomic, so it could fail with only partial directories created.
    /// * No [Error::NodeExists].
    ///
    /// # Notable errors
    /// * [Error::BadArguments] if [CreateMode] is ephemeral or sequential.
    /// * [Error::InvalidAcl] if acl is invalid or empty.
    pub async fn mkdir(&self, path: &str, options: &CreateOptions<'_>) -> Result<()> {
        match options.mode {
            CreateMode::Ephemeral | CreateMode::EphemeralSequential => {
                return Err(Error::BadArguments(&"directory node must not be ephemeral"));
            }
            CreateMode::PersistentSequential => {
                return Err(Error::BadArguments(
                    &"directory node must not be sequential",
                ));
            }
            CreateMode::Persistent | CreateMode::Container => {}
        }
        if options.acls.is_empty() {
            return Err(Error::InvalidAcl);
        }
        // zookeeper-client's `mkdir_internally`: create the whole path; on NoNode step back
        // to the parent, then forward again.
        let mut end = path.len();
        loop {
            match self.create(&path[..end], Default::default(), options).await {
                Ok(_) | Err(Error::NodeExists) => {
                    if end >= path.len() {
                        return Ok(());
                    } else if let Some(i) = path[end + 1..].find('/') {
                        end = end + 1 + i;
                    } else {
                        end = path.len();
                    }
                }
                Err(Error::NoNode) => match path[..end].rfind('/') {
                    Some(0) | None => return Err(Error::NoNode),
                    Some(i) => end = i,
                },
                Err(error) => return Err(error),
            }
        }
    }
}
