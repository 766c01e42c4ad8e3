//! etcd-client 0.21.1's transactions (`rpc/kv.rs`: `Compare`, `CompareOp`, `TxnOp`, `Txn`,
//! `TxnOpResponse`, `TxnResponse`), made into the model's `KvOperation::Txn` when sent: the
//! model's transaction (compares, branches, nested transactions, etcd's duplicate-key check)
//! does the work.

use super::error::text;
use super::error::{Error, Result};
use super::options::{DeleteOptions, GetOptions, PutOptions, prefix_end, revision_operand};
use super::responses::{DeleteResponse, GetResponse, PutResponse, ResponseHeader};
use sim::history::kv::{self as model, CompareTarget, KvOperation, KvResponse};

/// etcd's `Compare.CompareResult` (etcd-client's `CompareOp`): the same variant names.
pub use sim::history::kv::CompareOperator as CompareOp;

/// What a compare looks at, with its operand as etcd-client takes it.
#[derive(Debug, Clone)]
enum Operand {
    Version(i64),
    CreateRevision(i64),
    ModRevision(i64),
    Value(Vec<u8>),
    Lease(i64),
}

/// Transaction comparison.
#[derive(Debug, Clone)]
pub struct Compare {
    key: Vec<u8>,
    range_end: Option<RangeEnd>,
    cmp: CompareOp,
    operand: Operand,
}

/// A compare's range: etcd-client computes a prefix's end from the key at once.
#[derive(Debug, Clone)]
enum RangeEnd {
    Given(Vec<u8>),
    Prefix,
}

impl Compare {
    fn new(key: impl Into<Vec<u8>>, cmp: CompareOp, operand: Operand) -> Self {
        Self {
            key: key.into(),
            range_end: None,
            cmp,
            operand,
        }
    }

    /// Compares the version of the given key.
    #[inline]
    pub fn version(key: impl Into<Vec<u8>>, cmp: CompareOp, version: i64) -> Self {
        Self::new(key, cmp, Operand::Version(version))
    }

    /// Compares the creation revision of the given key.
    #[inline]
    pub fn create_revision(key: impl Into<Vec<u8>>, cmp: CompareOp, revision: i64) -> Self {
        Self::new(key, cmp, Operand::CreateRevision(revision))
    }

    /// Compares the last modified revision of the given key.
    #[inline]
    pub fn mod_revision(key: impl Into<Vec<u8>>, cmp: CompareOp, revision: i64) -> Self {
        Self::new(key, cmp, Operand::ModRevision(revision))
    }

    /// Compares the value of the given key.
    #[inline]
    pub fn value(key: impl Into<Vec<u8>>, cmp: CompareOp, value: impl Into<Vec<u8>>) -> Self {
        Self::new(key, cmp, Operand::Value(value.into()))
    }

    /// Compares the lease id of the given key.
    #[inline]
    pub fn lease(key: impl Into<Vec<u8>>, cmp: CompareOp, lease: i64) -> Self {
        Self::new(key, cmp, Operand::Lease(lease))
    }

    /// Sets the comparison to scan the range [key, end).
    #[inline]
    pub fn with_range(mut self, end: impl Into<Vec<u8>>) -> Self {
        self.range_end = Some(RangeEnd::Given(end.into()));
        self
    }

    /// Sets the comparison to scan all keys prefixed by the key.
    #[inline]
    pub fn with_prefix(mut self) -> Self {
        self.range_end = Some(RangeEnd::Prefix);
        self
    }

    /// The model's compare.
    fn model(self) -> Result<model::Compare> {
        let target = match self.operand {
            Operand::Version(version) => {
                CompareTarget::Version(revision_operand(version, "compared version")?)
            }
            Operand::CreateRevision(revision) => CompareTarget::CreateRevision(revision_operand(
                revision,
                "compared create revision",
            )?),
            Operand::ModRevision(revision) => {
                CompareTarget::ModRevision(revision_operand(revision, "compared mod revision")?)
            }
            Operand::Value(value) => CompareTarget::Value(text(value, "compared value")?),
            // The same 64 bits, as for a put's lease.
            Operand::Lease(lease) => CompareTarget::Lease(lease as u64),
        };
        let range_end = match &self.range_end {
            None => None,
            Some(RangeEnd::Prefix) => Some(prefix_end(&self.key)),
            Some(RangeEnd::Given(end)) => Some(text(end.clone(), "compare range end")?),
        };
        let compare = model::Compare::key(&text(self.key, "compared key")?, target, self.cmp);
        Ok(match range_end {
            Some(end) => compare.with_range(end),
            None => compare,
        })
    }
}

/// Transaction operation.
#[derive(Debug, Clone)]
pub struct TxnOp(Request);

#[derive(Debug, Clone)]
enum Request {
    Put(Vec<u8>, Vec<u8>, PutOptions),
    Get(Vec<u8>, GetOptions),
    Delete(Vec<u8>, DeleteOptions),
    Txn(Txn),
}

impl TxnOp {
    /// `Put` operation.
    #[inline]
    pub fn put(
        key: impl Into<Vec<u8>>,
        value: impl Into<Vec<u8>>,
        options: Option<PutOptions>,
    ) -> Self {
        TxnOp(Request::Put(
            key.into(),
            value.into(),
            options.unwrap_or_default(),
        ))
    }

    /// `Get` operation.
    #[inline]
    pub fn get(key: impl Into<Vec<u8>>, options: Option<GetOptions>) -> Self {
        TxnOp(Request::Get(key.into(), options.unwrap_or_default()))
    }

    /// `Delete` operation.
    #[inline]
    pub fn delete(key: impl Into<Vec<u8>>, options: Option<DeleteOptions>) -> Self {
        TxnOp(Request::Delete(key.into(), options.unwrap_or_default()))
    }

    /// `Txn` operation.
    #[inline]
    pub fn txn(txn: Txn) -> Self {
        TxnOp(Request::Txn(txn))
    }

    fn operation(self) -> Result<KvOperation> {
        match self.0 {
            Request::Put(key, value, options) => options.operation(key, value),
            Request::Get(key, options) => options.operation(key),
            Request::Delete(key, options) => options.operation(key),
            Request::Txn(txn) => txn.operation(),
        }
    }
}

/// Transaction of multiple operations.
///
/// etcd-client panics when `when`, `and_then` and `or_else` are called out of order or
/// twice; here the transaction remembers the first such misuse and `txn` answers it as
/// [`Error::InvalidArgs`] with etcd-client's panic message, since bad input must not panic.
#[derive(Debug, Default, Clone)]
pub struct Txn {
    compares: Vec<Compare>,
    success: Vec<TxnOp>,
    failure: Vec<TxnOp>,
    c_when: bool,
    c_then: bool,
    c_else: bool,
    misuse: Option<&'static str>,
}

impl Txn {
    /// Creates a new transaction.
    #[inline]
    pub const fn new() -> Self {
        Self {
            compares: Vec::new(),
            success: Vec::new(),
            failure: Vec::new(),
            c_when: false,
            c_then: false,
            c_else: false,
            misuse: None,
        }
    }

    fn refuse_if(&mut self, misused: bool, message: &'static str) {
        if misused && self.misuse.is_none() {
            self.misuse = Some(message);
        }
    }

    /// Takes a list of comparison. If all comparisons passed in succeed,
    /// the operations passed into `and_then()` will be executed. Or the operations
    /// passed into `or_else()` will be executed.
    #[inline]
    pub fn when(mut self, compares: impl Into<Vec<Compare>>) -> Self {
        self.refuse_if(self.c_when, "cannot call when twice");
        self.refuse_if(self.c_then, "cannot call when after and_then");
        self.refuse_if(self.c_else, "cannot call when after or_else");
        self.c_when = true;
        self.compares = compares.into();
        self
    }

    /// Takes a list of operations. The operations list will be executed, if the
    /// comparisons passed in `when()` succeed.
    #[inline]
    pub fn and_then(mut self, operations: impl Into<Vec<TxnOp>>) -> Self {
        self.refuse_if(self.c_then, "cannot call and_then twice");
        self.refuse_if(self.c_else, "cannot call and_then after or_else");
        self.c_then = true;
        self.success = operations.into();
        self
    }

    /// Takes a list of operations. The operations list will be executed, if the
    /// comparisons passed in `when()` fail.
    #[inline]
    pub fn or_else(mut self, operations: impl Into<Vec<TxnOp>>) -> Self {
        self.refuse_if(self.c_else, "cannot call or_else twice");
        self.c_else = true;
        self.failure = operations.into();
        self
    }

    /// The model's transaction.
    pub(super) fn operation(self) -> Result<KvOperation> {
        if let Some(misuse) = self.misuse {
            return Err(Error::InvalidArgs(misuse.to_string()));
        }
        let branch = |ops: Vec<TxnOp>| -> Result<Vec<KvOperation>> {
            ops.into_iter().map(TxnOp::operation).collect()
        };
        Ok(KvOperation::Txn {
            compares: self
                .compares
                .into_iter()
                .map(Compare::model)
                .collect::<Result<_>>()?,
            success: branch(self.success)?,
            failure: branch(self.failure)?,
        })
    }
}

/// Transaction operation response.
#[derive(Debug, Clone)]
pub enum TxnOpResponse {
    /// A put's.
    Put(PutResponse),
    /// A get's.
    Get(GetResponse),
    /// A delete's.
    Delete(DeleteResponse),
    /// A nested transaction's.
    Txn(TxnResponse),
}

impl TxnOpResponse {
    /// The response the model's `response` is, if it is one a transaction holds.
    pub(super) fn of(response: &KvResponse) -> Option<Self> {
        Some(match response {
            KvResponse::Put { revision, prev_kv } => {
                Self::Put(PutResponse::new(*revision, prev_kv.as_ref()))
            }
            KvResponse::Get { revision, kvs } => {
                Self::Get(GetResponse::new(*revision, kvs, kvs.len() as u64, false))
            }
            KvResponse::GetWithOptions {
                revision,
                kvs,
                count,
                more,
            } => Self::Get(GetResponse::new(*revision, kvs, *count, *more)),
            KvResponse::Delete {
                revision,
                deleted,
                prev_kvs,
            } => Self::Delete(DeleteResponse::new(*revision, *deleted, prev_kvs)),
            KvResponse::Txn {
                revision,
                succeeded,
                responses,
            } => Self::Txn(TxnResponse {
                header: Some(ResponseHeader::at(*revision)),
                succeeded: *succeeded,
                responses: responses.iter().filter_map(Self::of).collect(),
            }),
            _ => return None,
        })
    }
}

/// Response for `Txn` operation.
#[derive(Debug, Clone)]
pub struct TxnResponse {
    header: Option<ResponseHeader>,
    succeeded: bool,
    responses: Vec<TxnOpResponse>,
}

impl TxnResponse {
    /// Transaction response header.
    #[inline]
    pub fn header(&self) -> Option<&ResponseHeader> {
        self.header.as_ref()
    }

    /// Takes the header out of the response, leaving a [`None`] in its place.
    #[inline]
    pub fn take_header(&mut self) -> Option<ResponseHeader> {
        self.header.take()
    }

    /// Returns `true` if the compare evaluated to true or `false` otherwise.
    #[inline]
    pub const fn succeeded(&self) -> bool {
        self.succeeded
    }

    /// Returns responses of transaction operations.
    #[inline]
    pub fn op_responses(&self) -> Vec<TxnOpResponse> {
        self.responses.clone()
    }
}
