//! Per-node disks: durable state that survives crash and restart.
//!
//! A disk holds named files of two shapes: a [`LogFile`] (records appended and truncated,
//! like a write-ahead log) and a [`CellFile`] (one value replaced whole, like a small
//! metadata file). Every write is *volatile* until [`Disk::sync`] completes; a crash keeps
//! what was synced and drops the rest, exactly as a power loss drops the page cache.
//! The exception is a [`SyncedCell`] (one value updated in place, each write synced as it
//! returns, like a database that commits with an fsync): a crash keeps its last write.
//!
//! Files hold typed values (no serialization): opening a file with a different type than it
//! was created with is a [`DiskError::WrongType`].

use crate::{node::NodeId, shared::Shared};
use madsim::time::{Sleep, TimeHandle};
use rand::distributions::{Distribution, Uniform};
use rand_chacha::ChaCha8Rng;
use std::{
    any::Any,
    collections::BTreeMap,
    fmt,
    future::Future,
    ops::Range,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

/// A node's disk. Cloning gives another handle to the same disk.
#[derive(Clone)]
pub struct Disk {
    node: NodeId,
    inner: Arc<Shared<DiskState>>,
}

struct DiskState {
    files: BTreeMap<String, Arc<dyn StoredFile>>,
    sync_latency: SyncLatency,
    rng: ChaCha8Rng,
    syncs: u64,
    /// The world's time, for the sleeps of syncs.
    time: TimeHandle,
}

/// How a sync's latency is drawn.
enum SyncLatency {
    Fixed(Duration),
    /// Built once: `gen_range(min..max)` builds this very sampler for every draw (rand has
    /// no shortcut for durations), so sampling from it draws the same values from the same
    /// stream, without rebuilding it per sync.
    Uniform(Uniform<Duration>),
}

/// What a crash took from a disk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CrashLoss {
    /// Files that had writes not yet synced.
    pub files: u64,
    /// Writes (appends, truncations, cell updates) issued but not synced.
    pub writes: u64,
}

/// Errors opening a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DiskError {
    /// The file exists with another record type or shape.
    WrongType {
        /// The file's name.
        file: String,
    },
}

impl fmt::Display for DiskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DiskError::WrongType { file } => {
                write!(
                    f,
                    "file `{file}` exists with a different record type or shape"
                )
            }
        }
    }
}

impl std::error::Error for DiskError {}

trait StoredFile: Send + Sync {
    fn sync(&self);
    fn crash(&self) -> u64;
    fn as_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
}

impl Disk {
    /// A disk whose syncs take a time drawn from `sync_latency`. Only inside a running world.
    pub(crate) fn new(node: NodeId, sync_latency: Range<Duration>, rng: ChaCha8Rng) -> Self {
        let sync_latency = if sync_latency.is_empty() {
            SyncLatency::Fixed(sync_latency.start)
        } else {
            SyncLatency::Uniform(Uniform::new(sync_latency.start, sync_latency.end))
        };
        Self {
            node,
            inner: Arc::new(Shared::new(DiskState {
                files: BTreeMap::new(),
                sync_latency,
                rng,
                syncs: 0,
                time: TimeHandle::current(),
            })),
        }
    }

    /// The node this disk belongs to.
    pub fn node(&self) -> NodeId {
        self.node
    }

    fn open<F: StoredFile + 'static>(
        &self,
        name: &str,
        create: impl FnOnce() -> F,
    ) -> Result<Arc<F>, DiskError> {
        let mut state = self.inner.lock();
        let file = state
            .files
            .entry(name.to_string())
            .or_insert_with(|| Arc::new(create()))
            .clone();
        file.as_any()
            .downcast::<F>()
            .map_err(|_| DiskError::WrongType { file: name.into() })
    }

    /// Opens (creating if absent) a log file of `T` records.
    pub fn open_log<T: Clone + Send + Sync + 'static>(
        &self,
        name: &str,
    ) -> Result<LogFile<T>, DiskError> {
        self.open(name, || Shared::new(LogState::<T>::default()))
            .map(|state| LogFile { state })
    }

    /// Opens (creating if absent, empty) a cell file holding one `T`.
    pub fn open_cell<T: Clone + Send + Sync + 'static>(
        &self,
        name: &str,
    ) -> Result<CellFile<T>, DiskError> {
        self.open(name, || Shared::new(CellState::<T>::default()))
            .map(|state| CellFile { state })
    }

    /// Opens (or creates) `name` as a [`SyncedCell`] of `T`: a file each write of which is
    /// durable when it returns.
    pub fn open_synced_cell<T: Send + Sync + 'static>(
        &self,
        name: &str,
    ) -> Result<SyncedCell<T>, DiskError> {
        self.open(name, || Shared::new(SyncedState::<T>(None)))
            .map(|state| SyncedCell { state })
    }

    /// Makes every write issued so far durable, after the disk's sync latency.
    ///
    /// If the node crashes before this completes, nothing becomes durable (the future is
    /// dropped with the node's tasks). Writes issued while the sync is in flight may be
    /// flushed too, as a real fsync may.
    ///
    /// The latency is drawn when the future is first polled, not when it is created.
    pub fn sync(&self) -> DiskSync {
        DiskSync {
            disk: self.clone(),
            state: SyncState::NotStarted,
        }
    }

    /// Makes every write issued so far durable, immediately.
    pub fn sync_now(&self) {
        let mut state = self.inner.lock();
        state.syncs += 1;
        for file in state.files.values() {
            file.sync();
        }
    }

    /// How many syncs completed.
    pub fn syncs(&self) -> u64 {
        self.inner.lock().syncs
    }

    /// Drops every unsynced write, as a power loss would.
    pub(crate) fn crash(&self) -> CrashLoss {
        let state = self.inner.lock();
        let mut loss = CrashLoss::default();
        for file in state.files.values() {
            let writes = file.crash();
            if writes > 0 {
                loss.files += 1;
                loss.writes += writes;
            }
        }
        loss
    }
}

/// Future returned by [`Disk::sync`]: a named type, so a driver can hold the sync in flight
/// in place rather than boxed.
#[must_use = "a sync does nothing unless polled"]
pub struct DiskSync {
    disk: Disk,
    state: SyncState,
}

enum SyncState {
    NotStarted,
    Sleeping(Sleep),
    Finished,
}

impl Future for DiskSync {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        if let SyncState::NotStarted = this.state {
            let sleep = {
                let mut guard = this.disk.inner.lock();
                let state = &mut *guard;
                let latency = match &state.sync_latency {
                    SyncLatency::Fixed(latency) => *latency,
                    SyncLatency::Uniform(range) => range.sample(&mut state.rng),
                };
                (!latency.is_zero()).then(|| {
                    crate::time::exact_sleep_until(&state.time, state.time.now_instant() + latency)
                })
            };
            match sleep {
                Some(sleep) => this.state = SyncState::Sleeping(sleep),
                None => {
                    this.state = SyncState::Finished;
                    this.disk.sync_now();
                    return Poll::Ready(());
                }
            }
        }
        match &mut this.state {
            // Every pending poll adds a madsim timer entry, as awaiting the sleep would.
            SyncState::Sleeping(sleep) => {
                std::task::ready!(Pin::new(sleep).poll(cx));
                this.state = SyncState::Finished;
                this.disk.sync_now();
                Poll::Ready(())
            }
            SyncState::NotStarted => unreachable!("started above"),
            SyncState::Finished => panic!("a disk sync polled after it completed"),
        }
    }
}

impl fmt::Debug for Disk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.inner.lock();
        f.debug_struct("Disk")
            .field("node", &self.node)
            .field("files", &state.files.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// What a log file would hold after a crash right now.
enum Durable<T> {
    /// The first `len` records of the current content.
    Prefix(usize),
    /// A copy, taken when an unsynced truncation cut into the durable prefix.
    Copy(Vec<T>),
}

struct LogState<T> {
    records: Vec<T>,
    durable: Durable<T>,
    unsynced_writes: u64,
}

impl<T> Default for LogState<T> {
    fn default() -> Self {
        Self {
            records: Vec::new(),
            durable: Durable::Prefix(0),
            unsynced_writes: 0,
        }
    }
}

impl<T: Clone + Send + Sync + 'static> StoredFile for Shared<LogState<T>> {
    fn sync(&self) {
        let mut state = self.lock();
        state.durable = Durable::Prefix(state.records.len());
        state.unsynced_writes = 0;
    }

    fn crash(&self) -> u64 {
        let mut guard = self.lock();
        let state = &mut *guard;
        match std::mem::replace(&mut state.durable, Durable::Prefix(0)) {
            Durable::Prefix(len) => state.records.truncate(len),
            Durable::Copy(copy) => state.records = copy,
        }
        state.durable = Durable::Prefix(state.records.len());
        std::mem::take(&mut state.unsynced_writes)
    }

    fn as_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self
    }
}

/// A file of records: append, truncate, read. See the [module docs](self) for durability.
pub struct LogFile<T> {
    state: Arc<Shared<LogState<T>>>,
}

impl<T> Clone for LogFile<T> {
    fn clone(&self) -> Self {
        Self {
            state: self.state.clone(),
        }
    }
}

impl<T: Clone + Send + Sync + 'static> LogFile<T> {
    /// Appends one record (volatile until synced).
    pub fn push(&self, record: T) {
        let mut state = self.state.lock();
        state.records.push(record);
        state.unsynced_writes += 1;
    }

    /// Appends records (volatile until synced).
    pub fn append(&self, records: impl IntoIterator<Item = T>) {
        let mut state = self.state.lock();
        let before = state.records.len();
        state.records.extend(records);
        if state.records.len() > before {
            state.unsynced_writes += 1;
        }
    }

    /// Keeps the first `len` records (volatile until synced).
    pub fn truncate(&self, len: usize) {
        let mut guard = self.state.lock();
        let state = &mut *guard;
        if let Durable::Prefix(durable_len) = state.durable
            && len < durable_len
        {
            state.durable = Durable::Copy(state.records[..durable_len].to_vec());
        }
        if len < state.records.len() {
            state.records.truncate(len);
            state.unsynced_writes += 1;
        }
    }

    /// Number of records, synced or not.
    pub fn len(&self) -> usize {
        self.state.lock().records.len()
    }

    /// Whether the file has no records.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The record at `index`.
    pub fn get(&self, index: usize) -> Option<T> {
        self.state.lock().records.get(index).cloned()
    }

    /// A copy of every record.
    pub fn read_all(&self) -> Vec<T> {
        self.state.lock().records.clone()
    }

    /// Runs `reader` over the records without copying them.
    pub fn with_records<R>(&self, reader: impl FnOnce(&[T]) -> R) -> R {
        reader(&self.state.lock().records)
    }
}

struct CellState<T> {
    current: Option<T>,
    durable: Option<T>,
    unsynced_writes: u64,
}

impl<T> Default for CellState<T> {
    fn default() -> Self {
        Self {
            current: None,
            durable: None,
            unsynced_writes: 0,
        }
    }
}

impl<T: Clone + Send + Sync + 'static> StoredFile for Shared<CellState<T>> {
    fn sync(&self) {
        let mut state = self.lock();
        if state.unsynced_writes > 0 {
            state.durable = state.current.clone();
            state.unsynced_writes = 0;
        }
    }

    fn crash(&self) -> u64 {
        let mut state = self.lock();
        if state.unsynced_writes > 0 {
            state.current = state.durable.clone();
        }
        std::mem::take(&mut state.unsynced_writes)
    }

    fn as_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self
    }
}

/// A file holding one value, replaced whole. See the [module docs](self) for durability.
pub struct CellFile<T> {
    state: Arc<Shared<CellState<T>>>,
}

impl<T> Clone for CellFile<T> {
    fn clone(&self) -> Self {
        Self {
            state: self.state.clone(),
        }
    }
}

impl<T: Clone + Send + Sync + 'static> CellFile<T> {
    /// Replaces the value (volatile until synced).
    pub fn set(&self, value: T) {
        let mut state = self.state.lock();
        state.current = Some(value);
        state.unsynced_writes += 1;
    }

    /// The current value, synced or not; `None` if never written.
    pub fn get(&self) -> Option<T> {
        self.state.lock().current.clone()
    }
}

/// The value of a [`SyncedCell`].
struct SyncedState<T>(Option<T>);

impl<T: Send + Sync + 'static> StoredFile for Shared<SyncedState<T>> {
    // Nothing is ever volatile: each write was synced when it returned.
    fn sync(&self) {}

    fn crash(&self) -> u64 {
        0
    }

    fn as_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self
    }
}

/// A file holding one value whose every write is synced before it returns, like a small
/// database committing each transaction with an fsync (etcd's bbolt backend). A crash keeps
/// the last write whole. It is updated in place, with no copy of the value per write, which
/// is why it exists beside [`CellFile`]: the cost of a sync's latency is not modelled, so
/// it suits writes the writer does not wait for.
pub struct SyncedCell<T> {
    state: Arc<Shared<SyncedState<T>>>,
}

impl<T> Clone for SyncedCell<T> {
    fn clone(&self) -> Self {
        Self {
            state: self.state.clone(),
        }
    }
}

impl<T: Send + Sync + 'static> SyncedCell<T> {
    /// Reads the value (`None` if never written).
    pub fn read<R>(&self, reader: impl FnOnce(Option<&T>) -> R) -> R {
        reader(self.state.lock().0.as_ref())
    }

    /// Writes the value in place, durably.
    pub fn update<R>(&self, writer: impl FnOnce(&mut Option<T>) -> R) -> R {
        writer(&mut self.state.lock().0)
    }
}
