//! The replicated state machine: the MVCC store and the lease table, changed only by
//! applying committed [`StoreCommand`]s, identically on every replica.

use super::{
    command::StoreCommand,
    lease::LeaseTable,
    mvcc::{KeyRange, MvccStore},
    range::apply_range_options,
};
use sim::history::kv::{
    Compare, CompareOperator, CompareTarget, KeyValue, KvError, KvOperation, KvResponse,
};
use std::cmp::Ordering;

/// What applying a command produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApplyOutcome {
    /// The answer for the client that proposed it (`None` for internal commands).
    pub result: ApplyResult,
    /// The revision whose changes this command made, if it changed keys (for watches).
    pub changed_revision: Option<u64>,
    /// What happened to leases (for the leader's lessor).
    pub lease_change: Option<LeaseChange>,
}

/// The client-visible result of a command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApplyResult {
    /// A key-value or lease operation.
    Kv(Result<KvResponse, KvError>),
    /// A compaction (the compaction revision).
    Compact(Result<u64, KvError>),
    /// An internal command (expiry, checkpoint): nobody waits for it.
    Internal,
}

/// A lease event the lessor must hear about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaseChange {
    /// Granted: lives `ttl_ms` from now. (Keep-alives are not applied: they renew in the
    /// leader's lessor, `Lessor::renew`.)
    Granted {
        /// Lease id.
        lease: u64,
        /// Time to live, milliseconds.
        ttl_ms: u64,
    },
    /// Revoked or expired.
    Removed {
        /// Lease id.
        lease: u64,
        /// Whether it expired (rather than being revoked by a client).
        expired: bool,
    },
}

/// Known etcd-store bugs that live in the state machine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CompactionTombstones {
    /// Delete events at the compaction revision stay watchable (correct).
    #[default]
    Kept,
    /// `etcd.compact_drops_tombstone`: they are dropped.
    Dropped,
}

/// The state machine.
#[derive(Clone, Debug, Default)]
pub struct StoreStateMachine {
    mvcc: MvccStore,
    leases: LeaseTable,
    tombstones: CompactionTombstones,
    /// The shortest TTL a lease is granted, milliseconds (whole seconds; see
    /// [`super::EtcdConfig::min_lease_ttl`]).
    min_lease_ttl_ms: u64,
}

impl StoreStateMachine {
    /// An empty store that grants leases at least `min_lease_ttl` (whole seconds).
    pub fn new(tombstones: CompactionTombstones, min_lease_ttl: std::time::Duration) -> Self {
        Self {
            tombstones,
            min_lease_ttl_ms: u64::try_from(min_lease_ttl.as_millis()).unwrap_or(u64::MAX),
            ..Self::default()
        }
    }

    /// The TTL a grant asking for `requested_ms` gets: whole seconds (etcd's API has no
    /// finer unit, so the model's millisecond TTLs are rounded up to the next second), and
    /// at least the minimum (etcd 3.4.23 `lease/lessor.go` `Grant`: `if l.ttl <
    /// le.minLeaseTTL { l.ttl = le.minLeaseTTL }`), which also turns a TTL of 0 into the
    /// minimum.
    pub fn granted_ttl_ms(&self, requested_ms: u64) -> u64 {
        requested_ms
            .div_ceil(1000)
            .saturating_mul(1000)
            .max(self.min_lease_ttl_ms)
    }

    /// The MVCC store.
    pub fn mvcc(&self) -> &MvccStore {
        &self.mvcc
    }

    /// The lease table.
    pub fn leases(&self) -> &LeaseTable {
        &self.leases
    }

    /// Serves a read (`Get`) from the current state.
    pub fn read(&self, operation: &KvOperation) -> Result<KvResponse, KvError> {
        match operation {
            KvOperation::Get {
                key,
                range_end,
                revision,
                ..
            } => {
                let range = KeyRange::new(key, range_end.as_deref());
                let kvs = self.mvcc.range(&range, *revision)?;
                Ok(KvResponse::Get {
                    revision: self.mvcc.revision(),
                    kvs,
                })
            }
            KvOperation::GetWithOptions {
                key,
                range_end,
                revision,
                options,
                ..
            } => {
                let range = KeyRange::new(key, range_end.as_deref());
                let answer = apply_range_options(self.mvcc.range(&range, *revision)?, options);
                Ok(KvResponse::GetWithOptions {
                    revision: self.mvcc.revision(),
                    kvs: answer.kvs,
                    count: answer.count,
                    more: answer.more,
                })
            }
            other => Err(KvError::Other {
                message: format!("not a read: {other:?}"),
            }),
        }
    }

    /// Applies the command of log entry `index`.
    pub fn apply(&mut self, index: u64, command: &StoreCommand) -> ApplyOutcome {
        let before = self.mvcc.revision();
        let mut lease_change = None;
        let result = match command {
            StoreCommand::Kv { operation } => ApplyResult::Kv(self.apply_kv(operation)),
            StoreCommand::LeaseGrant { ttl_ms } => {
                // As etcd's lessor, the granted TTL is decided when the grant is applied.
                let ttl_ms = self.granted_ttl_ms(*ttl_ms);
                self.leases.grant(index, ttl_ms);
                lease_change = Some(LeaseChange::Granted {
                    lease: index,
                    ttl_ms,
                });
                ApplyResult::Kv(Ok(KvResponse::LeaseGrant {
                    lease: index,
                    ttl_ms,
                }))
            }
            StoreCommand::LeaseRevoke { lease } => match self.revoke(*lease) {
                Some(revision) => {
                    lease_change = Some(LeaseChange::Removed {
                        lease: *lease,
                        expired: false,
                    });
                    ApplyResult::Kv(Ok(KvResponse::LeaseRevoke { revision }))
                }
                None => ApplyResult::Kv(Err(KvError::LeaseNotFound { lease: *lease })),
            },
            StoreCommand::LeaseExpire { lease } => {
                if self.revoke(*lease).is_some() {
                    lease_change = Some(LeaseChange::Removed {
                        lease: *lease,
                        expired: true,
                    });
                }
                ApplyResult::Internal
            }
            StoreCommand::LeaseCheckpoint { remaining } => {
                for (lease, remaining_ms) in remaining {
                    self.leases.checkpoint(*lease, *remaining_ms);
                }
                ApplyResult::Internal
            }
            StoreCommand::Compact { revision } => {
                let drop = self.tombstones == CompactionTombstones::Dropped;
                ApplyResult::Compact(self.mvcc.compact(*revision, drop).map(|()| *revision))
            }
        };
        let after = self.mvcc.revision();
        ApplyOutcome {
            result,
            changed_revision: (after > before).then_some(after),
            lease_change,
        }
    }

    /// Deletes the lease and its keys in one revision; `None` if it does not exist.
    fn revoke(&mut self, lease: u64) -> Option<u64> {
        let record = self.leases.remove(lease)?;
        self.mvcc.begin();
        for key in &record.keys {
            self.mvcc.delete(key);
        }
        Some(self.mvcc.commit())
    }

    fn apply_kv(&mut self, operation: &KvOperation) -> Result<KvResponse, KvError> {
        super::command::validate(operation)?;
        match operation {
            KvOperation::Put { .. } | KvOperation::Delete { .. } => {
                self.check_leases(&[operation])?;
                self.mvcc.begin();
                let response = self.write(operation);
                let revision = self.mvcc.commit();
                Ok(with_revision(response, revision))
            }
            KvOperation::Txn { .. } => {
                // As etcd's `applierV3backend.Txn`: every compare, nested transactions'
                // included, is decided on the store before the transaction writes anything
                // (`compareToPath`); then the ops of the branches that run are checked
                // (`checkRequests`), then run, in one revision.
                let path = self.path(operation);
                let ops = ops_that_run(operation, &path);
                self.check_leases(&ops)?;
                self.check_reads(&ops)?;
                self.mvcc.begin();
                let response = self.run_txn(operation, &path);
                let revision = self.mvcc.commit();
                Ok(with_revision(response?, revision))
            }
            other => Err(KvError::Other {
                message: format!("not a write: {other:?}"),
            }),
        }
    }

    /// Which branch each transaction takes, `operation`'s first, then its nested ones in
    /// the order they come in the branch that runs, depth first (etcd's `txnPath`).
    fn path(&self, operation: &KvOperation) -> TxnPath {
        let KvOperation::Txn {
            compares,
            success,
            failure,
        } = operation
        else {
            unreachable!("a path is taken through transactions");
        };
        let succeeded = compares.iter().all(|compare| self.holds(compare));
        let branch = if succeeded { success } else { failure };
        TxnPath {
            succeeded,
            nested: branch
                .iter()
                .filter(|op| matches!(op, KvOperation::Txn { .. }))
                .map(|op| self.path(op))
                .collect(),
        }
    }

    /// Runs the branch `path` chose, inside the open MVCC transaction.
    fn run_txn(&mut self, operation: &KvOperation, path: &TxnPath) -> Result<KvResponse, KvError> {
        let KvOperation::Txn {
            success, failure, ..
        } = operation
        else {
            unreachable!("only transactions are run as such");
        };
        let branch = if path.succeeded { success } else { failure };
        let mut nested = path.nested.iter();
        let mut responses = Vec::with_capacity(branch.len());
        for operation in branch {
            responses.push(match operation {
                // `check_reads` refused bad revisions up front: a read cannot fail here.
                KvOperation::Get { .. } | KvOperation::GetWithOptions { .. } => {
                    self.read(operation)?
                }
                KvOperation::Txn { .. } => {
                    let path = nested.next().expect("a path for every nested transaction");
                    self.run_txn(operation, path)?
                }
                _ => self.write(operation),
            });
        }
        Ok(KvResponse::Txn {
            revision: 0,
            succeeded: path.succeeded,
            responses,
        })
    }

    /// Refuses a transaction whose reads ask for a compacted or future revision before it
    /// writes anything.
    fn check_reads(&self, operations: &[&KvOperation]) -> Result<(), KvError> {
        for operation in operations {
            if let KvOperation::Get {
                revision: Some(revision),
                ..
            }
            | KvOperation::GetWithOptions {
                revision: Some(revision),
                ..
            } = operation
            {
                if *revision > self.mvcc.revision() {
                    return Err(KvError::FutureRevision {
                        current_revision: self.mvcc.revision(),
                    });
                }
                if *revision < self.mvcc.compact_revision() {
                    return Err(KvError::Compacted {
                        compact_revision: self.mvcc.compact_revision(),
                    });
                }
            }
        }
        Ok(())
    }

    fn check_leases(&self, operations: &[&KvOperation]) -> Result<(), KvError> {
        for operation in operations {
            if let KvOperation::Put {
                lease: Some(lease), ..
            } = operation
                && self.leases.get(*lease).is_none()
            {
                return Err(KvError::LeaseNotFound { lease: *lease });
            }
        }
        Ok(())
    }

    /// One write inside an open MVCC transaction.
    fn write(&mut self, operation: &KvOperation) -> KvResponse {
        match operation {
            KvOperation::Put {
                key,
                value,
                lease,
                prev_kv,
            } => {
                let prev_kv = if *prev_kv {
                    self.mvcc.get(key).cloned()
                } else {
                    None
                };
                let previous_lease = self.mvcc.put(key, value, *lease);
                if let Some(old) = previous_lease
                    && Some(old) != *lease
                {
                    self.leases.detach(old, key);
                }
                if let Some(lease) = lease {
                    self.leases.attach(*lease, key);
                }
                KvResponse::Put {
                    revision: 0,
                    prev_kv,
                }
            }
            KvOperation::Delete {
                key,
                range_end,
                prev_kv,
            } => {
                let range = KeyRange::new(key, range_end.as_deref());
                let deleted = self.mvcc.delete_range(&range);
                for kv in &deleted {
                    if let Some(lease) = kv.lease {
                        self.leases.detach(lease, &kv.key);
                    }
                }
                KvResponse::Delete {
                    revision: 0,
                    deleted: deleted.len() as u64,
                    prev_kvs: if *prev_kv { deleted } else { Vec::new() },
                }
            }
            _ => unreachable!("validated: only puts and deletes are written"),
        }
    }

    /// Whether `compare` holds: for one key, or for every key of its range; over a range
    /// with no key, as for a missing key (etcd 3.4 `etcdserver/apply.go` `applyCompare`).
    fn holds(&self, compare: &Compare) -> bool {
        let Some(range_end) = &compare.range_end else {
            return compare_holds(compare, self.mvcc.get(&compare.key));
        };
        let range = KeyRange::new(&compare.key, Some(range_end));
        let kvs = self.mvcc.range(&range, None).unwrap_or_default();
        if kvs.is_empty() {
            return compare_holds(compare, None);
        }
        kvs.iter().all(|kv| compare_holds(compare, Some(kv)))
    }
}

/// Which branch a transaction took, and the paths of the nested transactions of that
/// branch, in order.
struct TxnPath {
    succeeded: bool,
    nested: Vec<TxnPath>,
}

/// The ops a transaction runs along `path`, nested transactions' included (not the nested
/// transactions themselves), depth first.
fn ops_that_run<'a>(operation: &'a KvOperation, path: &TxnPath) -> Vec<&'a KvOperation> {
    let KvOperation::Txn {
        success, failure, ..
    } = operation
    else {
        return vec![operation];
    };
    let branch = if path.succeeded { success } else { failure };
    let mut nested = path.nested.iter();
    let mut ops = Vec::new();
    for operation in branch {
        match operation {
            KvOperation::Txn { .. } => {
                let path = nested.next().expect("a path for every nested transaction");
                ops.extend(ops_that_run(operation, path));
            }
            other => ops.push(other),
        }
    }
    ops
}

/// Whether `compare` holds on `kv` (`None`: the key is missing), as etcd's `compareKV`.
fn compare_holds(compare: &Compare, kv: Option<&KeyValue>) -> bool {
    let ordering = match &compare.target {
        // etcd: a value compare on a missing key is false whatever the operator.
        CompareTarget::Value(value) => match kv {
            Some(kv) => kv.value.as_str().cmp(value.as_str()),
            None => return false,
        },
        CompareTarget::Version(version) => kv.map_or(0, |kv| kv.version).cmp(version),
        CompareTarget::CreateRevision(revision) => {
            kv.map_or(0, |kv| kv.create_revision).cmp(revision)
        }
        CompareTarget::ModRevision(revision) => kv.map_or(0, |kv| kv.mod_revision).cmp(revision),
        CompareTarget::Lease(lease) => kv.and_then(|kv| kv.lease).unwrap_or(0).cmp(lease),
    };
    match compare.operator {
        CompareOperator::Equal => ordering == Ordering::Equal,
        CompareOperator::NotEqual => ordering != Ordering::Equal,
        CompareOperator::Greater => ordering == Ordering::Greater,
        CompareOperator::Less => ordering == Ordering::Less,
    }
}

/// Stamps a response inside a write transaction with the store revision after it (a read
/// in the transaction sees the transaction's own writes, so it is at that revision too);
/// a transaction's responses too, nested ones included.
fn with_revision(response: KvResponse, revision: u64) -> KvResponse {
    match response {
        KvResponse::Txn {
            succeeded,
            responses,
            ..
        } => KvResponse::Txn {
            revision,
            succeeded,
            responses: responses
                .into_iter()
                .map(|response| with_revision(response, revision))
                .collect(),
        },
        KvResponse::Put { prev_kv, .. } => KvResponse::Put { revision, prev_kv },
        KvResponse::Delete {
            deleted, prev_kvs, ..
        } => KvResponse::Delete {
            revision,
            deleted,
            prev_kvs,
        },
        KvResponse::Get { kvs, .. } => KvResponse::Get { revision, kvs },
        KvResponse::GetWithOptions {
            kvs, count, more, ..
        } => KvResponse::GetWithOptions {
            revision,
            kvs,
            count,
            more,
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::history::kv::KeyValue;

    fn put(key: &str, value: &str, lease: Option<u64>) -> KvOperation {
        KvOperation::Put {
            prev_kv: false,
            key: key.into(),
            value: value.into(),
            lease,
        }
    }

    fn get(key: &str) -> KvOperation {
        KvOperation::Get {
            key: key.into(),
            range_end: None,
            revision: None,
            consistency: Default::default(),
        }
    }

    fn kv(operation: KvOperation) -> StoreCommand {
        StoreCommand::Kv { operation }
    }

    fn result(outcome: ApplyOutcome) -> Result<KvResponse, KvError> {
        match outcome.result {
            ApplyResult::Kv(result) => result,
            other => panic!("not a kv result: {other:?}"),
        }
    }

    #[test]
    fn transactions_compare_then_run_one_branch_atomically() {
        let mut machine = StoreStateMachine::default();
        result(machine.apply(1, &kv(put("a", "1", None)))).unwrap();
        let txn = |expected_version| {
            kv(KvOperation::Txn {
                compares: vec![Compare {
                    key: "a".into(),
                    target: CompareTarget::Version(expected_version),
                    operator: CompareOperator::Equal,
                    range_end: None,
                }],
                success: vec![put("a", "2", None), put("b", "2", None), get("a")],
                failure: vec![get("a")],
            })
        };
        let response = result(machine.apply(2, &txn(1))).unwrap();
        let KvResponse::Txn {
            revision,
            succeeded,
            responses,
        } = response
        else {
            panic!("a txn response");
        };
        assert!(succeeded);
        assert_eq!(revision, 3, "one revision for the whole transaction");
        assert_eq!(
            responses[0],
            KvResponse::Put {
                prev_kv: None,
                revision: 3
            }
        );
        let KvResponse::Get { kvs, .. } = &responses[2] else {
            panic!("a get");
        };
        assert_eq!(
            kvs[0].value, "2",
            "a read sees the transaction's own writes"
        );
        let response = result(machine.apply(3, &txn(1))).unwrap();
        assert!(matches!(
            response,
            KvResponse::Txn {
                succeeded: false,
                revision: 3,
                ..
            }
        ));
        // A value compare on a missing key is false even for `!=`.
        let missing = kv(KvOperation::Txn {
            compares: vec![Compare {
                key: "zz".into(),
                target: CompareTarget::Value("x".into()),
                operator: CompareOperator::NotEqual,
                range_end: None,
            }],
            success: vec![put("c", "1", None)],
            failure: vec![],
        });
        assert!(matches!(
            result(machine.apply(4, &missing)),
            Ok(KvResponse::Txn {
                succeeded: false,
                ..
            })
        ));
    }

    #[test]
    fn revoking_a_lease_deletes_its_keys_in_one_revision() {
        let mut machine = StoreStateMachine::default();
        let grant = machine.apply(5, &StoreCommand::LeaseGrant { ttl_ms: 1_000 });
        assert_eq!(
            result(grant),
            Ok(KvResponse::LeaseGrant {
                lease: 5,
                ttl_ms: 1_000
            })
        );
        result(machine.apply(6, &kv(put("x", "1", Some(5))))).unwrap();
        result(machine.apply(7, &kv(put("y", "1", Some(5))))).unwrap();
        result(machine.apply(8, &kv(put("z", "1", None)))).unwrap();
        // Re-putting y without the lease detaches it.
        result(machine.apply(9, &kv(put("y", "2", None)))).unwrap();
        let outcome = machine.apply(10, &StoreCommand::LeaseExpire { lease: 5 });
        assert_eq!(outcome.changed_revision, Some(6));
        assert_eq!(
            outcome.lease_change,
            Some(LeaseChange::Removed {
                lease: 5,
                expired: true
            })
        );
        let live: Vec<KeyValue> = machine
            .mvcc()
            .range(&KeyRange::new("", Some("\0")), None)
            .unwrap();
        let keys: Vec<&str> = live.iter().map(|kv| kv.key.as_str()).collect();
        assert_eq!(keys, ["y", "z"]);
    }

    #[test]
    fn grants_are_whole_seconds_and_at_least_the_minimum() {
        let mut machine = StoreStateMachine::new(
            CompactionTombstones::Kept,
            std::time::Duration::from_secs(2),
        );
        for (index, requested_ms, granted_ms) in [
            (1, 0, 2_000),
            (2, 1_000, 2_000),
            (3, 2_001, 3_000),
            (4, 5_000, 5_000),
        ] {
            let grant = machine.apply(
                index,
                &StoreCommand::LeaseGrant {
                    ttl_ms: requested_ms,
                },
            );
            assert_eq!(
                grant.lease_change,
                Some(LeaseChange::Granted {
                    lease: index,
                    ttl_ms: granted_ms
                })
            );
            assert_eq!(
                result(grant),
                Ok(KvResponse::LeaseGrant {
                    lease: index,
                    ttl_ms: granted_ms
                })
            );
            assert_eq!(machine.leases().get(index).unwrap().ttl_ms, granted_ms);
        }
        let twice = machine.apply(5, &StoreCommand::LeaseExpire { lease: 4 });
        assert!(twice.lease_change.is_some());
        let again = machine.apply(6, &StoreCommand::LeaseExpire { lease: 4 });
        assert_eq!(
            again.lease_change, None,
            "an expiry of a gone lease does nothing"
        );
    }

    #[test]
    fn bad_input_gets_typed_errors() {
        let mut machine = StoreStateMachine::default();
        assert_eq!(
            result(machine.apply(1, &kv(put("", "1", None)))),
            Err(KvError::EmptyKey)
        );
        assert_eq!(
            result(machine.apply(2, &kv(put("k", "1", Some(99))))),
            Err(KvError::LeaseNotFound { lease: 99 })
        );
        assert_eq!(
            result(machine.apply(4, &StoreCommand::LeaseRevoke { lease: 99 })),
            Err(KvError::LeaseNotFound { lease: 99 })
        );
        let empty = KvOperation::Txn {
            compares: vec![],
            success: vec![],
            failure: vec![],
        };
        // etcd runs an empty transaction: no compares hold vacuously, nothing changes.
        assert_eq!(
            result(machine.apply(5, &kv(empty))),
            Ok(KvResponse::Txn {
                revision: 1,
                succeeded: true,
                responses: vec![]
            })
        );
        result(machine.apply(6, &kv(put("k", "1", None)))).unwrap();
        result(machine.apply(7, &kv(put("k", "2", None)))).unwrap();
        assert_eq!(
            machine
                .apply(8, &StoreCommand::Compact { revision: 3 })
                .result,
            ApplyResult::Compact(Ok(3))
        );
        let old = KvOperation::Get {
            key: "k".into(),
            range_end: None,
            revision: Some(2),
            consistency: Default::default(),
        };
        assert_eq!(
            machine.read(&old),
            Err(KvError::Compacted {
                compact_revision: 3
            })
        );
        assert_eq!(
            machine
                .apply(9, &StoreCommand::Compact { revision: 2 })
                .result,
            ApplyResult::Compact(Err(KvError::Compacted {
                compact_revision: 3
            }))
        );
        // Nothing changed the store.
        assert_eq!(machine.mvcc().revision(), 3);
    }
}
