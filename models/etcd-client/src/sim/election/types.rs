//! The election client's options and responses (etcd-client 0.21.1 `src/rpc/election.rs`),
//! with etcd-client's names and accessors.

use crate::sim::error::{Error, Result};
use crate::sim::responses::{KeyValue, ResponseHeader};

/// `bytes` as text, for the `*_str` accessors.
fn utf8(bytes: &[u8]) -> Result<&str> {
    std::str::from_utf8(bytes).map_err(|error| Error::InvalidArgs(error.to_string()))
}

/// Leader key of election (etcd-client's `LeaderKey`): what holds a leadership.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaderKey {
    pub(super) name: Vec<u8>,
    pub(super) key: Vec<u8>,
    pub(super) rev: i64,
    pub(super) lease: i64,
}

impl LeaderKey {
    /// Creates a new leader key.
    pub const fn new() -> Self {
        Self {
            name: Vec::new(),
            key: Vec::new(),
            rev: 0,
            lease: 0,
        }
    }
    /// The election identifier that corresponds to the leadership key.
    pub fn with_name(mut self, name: impl Into<Vec<u8>>) -> Self {
        self.name = name.into();
        self
    }
    /// An opaque key representing the ownership of the election.
    pub fn with_key(mut self, key: impl Into<Vec<u8>>) -> Self {
        self.key = key.into();
        self
    }
    /// The creation revision of the key.
    pub const fn with_rev(mut self, rev: i64) -> Self {
        self.rev = rev;
        self
    }
    /// The lease ID of the election leader.
    pub const fn with_lease(mut self, lease: i64) -> Self {
        self.lease = lease;
        self
    }
    /// The name in byte. name is the election identifier that corresponds to the leadership
    /// key.
    pub fn name(&self) -> &[u8] {
        &self.name
    }
    /// The name in string.
    pub fn name_str(&self) -> Result<&str> {
        utf8(self.name())
    }
    /// The name in string, unchecked.
    ///
    /// # Safety
    /// The bytes of the name must be valid UTF-8.
    pub unsafe fn name_str_unchecked(&self) -> &str {
        // SAFETY: the caller promises UTF-8, as etcd-client's caller does.
        unsafe { std::str::from_utf8_unchecked(self.name()) }
    }
    /// The key in byte. key is an opaque key representing the ownership of the election. If
    /// the key is deleted, then leadership is lost.
    pub fn key(&self) -> &[u8] {
        &self.key
    }
    /// The key in string.
    pub fn key_str(&self) -> Result<&str> {
        utf8(self.key())
    }
    /// The key in string, unchecked.
    ///
    /// # Safety
    /// The bytes of the key must be valid UTF-8.
    pub unsafe fn key_str_unchecked(&self) -> &str {
        // SAFETY: the caller promises UTF-8, as etcd-client's caller does.
        unsafe { std::str::from_utf8_unchecked(self.key()) }
    }
    /// The creation revision of the key. It can be used to test for ownership of an
    /// election during transactions by testing the key's creation revision matches rev.
    pub const fn rev(&self) -> i64 {
        self.rev
    }
    /// The lease ID of the election leader.
    pub const fn lease(&self) -> i64 {
        self.lease
    }
}

/// Options for `proclaim` operation (etcd-client's `ProclaimOptions`).
#[derive(Debug, Default, Clone)]
pub struct ProclaimOptions {
    pub(super) leader: Option<LeaderKey>,
}

impl ProclaimOptions {
    /// No options.
    pub const fn new() -> Self {
        Self { leader: None }
    }
    /// The leadership hold on the election.
    pub fn with_leader(mut self, leader: LeaderKey) -> Self {
        self.leader = Some(leader);
        self
    }
}

/// Options for `resign` operation (etcd-client's `ResignOptions`).
#[derive(Debug, Default, Clone)]
pub struct ResignOptions {
    pub(super) leader: Option<LeaderKey>,
}

impl ResignOptions {
    /// No options.
    pub const fn new() -> Self {
        Self { leader: None }
    }
    /// The leadership to relinquish by resignation.
    pub fn with_leader(mut self, leader: LeaderKey) -> Self {
        self.leader = Some(leader);
        self
    }
}

/// Response for `Campaign` operation (etcd-client's `CampaignResponse`).
#[derive(Debug, Clone)]
pub struct CampaignResponse {
    pub(super) header: ResponseHeader,
    pub(super) leader: Option<LeaderKey>,
}

impl CampaignResponse {
    /// Get response header (of the campaign's first transaction, as etcd's).
    pub fn header(&self) -> Option<&ResponseHeader> {
        Some(&self.header)
    }
    /// Describes the resources used for holding leadership of the election.
    pub fn leader(&self) -> Option<&LeaderKey> {
        self.leader.as_ref()
    }
    /// Takes the leader out of the response, leaving a [`None`] in its place.
    pub fn take_leader(&mut self) -> Option<LeaderKey> {
        self.leader.take()
    }
}

/// Response for `Proclaim` operation (etcd-client's `ProclaimResponse`).
#[derive(Debug, Clone)]
pub struct ProclaimResponse {
    pub(super) header: ResponseHeader,
}

impl ProclaimResponse {
    /// Gets response header.
    pub fn header(&self) -> Option<&ResponseHeader> {
        Some(&self.header)
    }
}

/// Response for `Leader` operation, and each message of an [`super::ObserveStream`]
/// (etcd-client's `LeaderResponse`).
#[derive(Debug, Clone)]
pub struct LeaderResponse {
    pub(super) header: ResponseHeader,
    pub(super) kv: Option<KeyValue>,
}

impl LeaderResponse {
    /// Gets response header.
    pub fn header(&self) -> Option<&ResponseHeader> {
        Some(&self.header)
    }
    /// The key-value pair representing the latest leader update.
    pub fn kv(&self) -> Option<&KeyValue> {
        self.kv.as_ref()
    }
    /// Takes the kv out of the response, leaving a [`None`] in its place.
    pub fn take_kv(&mut self) -> Option<KeyValue> {
        self.kv.take()
    }
}

/// Response for `Resign` operation (etcd-client's `ResignResponse`).
#[derive(Debug, Clone)]
pub struct ResignResponse {
    pub(super) header: ResponseHeader,
}

impl ResignResponse {
    /// Gets response header.
    pub fn header(&self) -> Option<&ResponseHeader> {
        Some(&self.header)
    }
}
