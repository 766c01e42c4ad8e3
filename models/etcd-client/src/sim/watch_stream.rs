//! etcd-client's `WatchStream`: one stream that carries several watches, grouped by watch id,
//! as etcd's gRPC Watch stream does. Each watch is a model watch
//! (`models::etcd::WatchStream`, its own connection, recorded in the history); the stream
//! waits on all of them at once and hands out their answers as etcd's `WatchResponse`s.

use super::{
    error::{Result, from_result},
    watch::{Event, WatchOptions, WatchResponse},
};
use futures_util::{
    future::{Either, poll_fn, select},
    stream::Stream,
    task::AtomicWaker,
};
use models::etcd::{EtcdClient, WatchItem};
use sim::history::OpResult;
use std::{
    collections::VecDeque,
    fmt,
    future::Future,
    pin::{Pin, pin},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    task::{Context, Poll},
};

type ModelWatch = models::etcd::WatchStream;

/// The watching handle (etcd-client's `WatchStream`): its first message is the `created`
/// response of the watch that opened it.
pub struct WatchStream {
    /// Opens the stream's further watches (one process in the history for the stream).
    client: EtcdClient,
    /// In creation order: the order they are polled in, so runs replay exactly.
    watches: Vec<Watch>,
    /// Answers known before any model watch was polled (`created`, a refused watch id).
    ready: VecDeque<WatchResponse>,
    /// The next id etcd would assign (mvcc `watchStream.nextID`).
    next_watch_id: i64,
}

struct Watch {
    id: i64,
    /// The store revision its `created` response reported.
    created_revision: u64,
    state: WatchState,
    /// Progress requests sent through this watch and not answered yet: their answers are
    /// the stream's, so they carry watch id -1.
    progress_requests: u32,
}

enum WatchState {
    /// Not being waited on.
    Idle(Box<ModelWatch>),
    /// Waiting for its next item; interrupted to cancel or ask for progress.
    Waiting(Waiting),
    /// Canceled or compacted: nothing more comes.
    Finished,
}

/// A model watch being waited on: the future owns it and gives it back with the item, or
/// with none when interrupted (a model watch loses nothing when its wait is dropped: it
/// only waits on a connection's queue, a reconnect or a pause).
struct Waiting {
    interrupt: Arc<Interrupt>,
    next: Pin<Box<dyn Future<Output = NextItem> + Send>>,
}

/// The model watch back, with its next item (none when interrupted).
type NextItem = (Box<ModelWatch>, Option<WatchItem>);

#[derive(Default)]
struct Interrupt {
    raised: AtomicBool,
    waker: AtomicWaker,
}

impl Interrupt {
    fn raise(&self) {
        self.raised.store(true, Ordering::SeqCst);
        self.waker.wake();
    }

    async fn raised(&self) {
        poll_fn(|cx| {
            self.waker.register(cx.waker());
            match self.raised.load(Ordering::SeqCst) {
                true => Poll::Ready(()),
                false => Poll::Pending,
            }
        })
        .await
    }
}

fn wait_for_next(mut model: Box<ModelWatch>) -> Waiting {
    let interrupt = Arc::new(Interrupt::default());
    let raised = interrupt.clone();
    let next = Box::pin(async move {
        let item = {
            let next = pin!(model.next());
            let interrupted = pin!(raised.raised());
            match select(next, interrupted).await {
                Either::Left((item, _)) => Some(item),
                Either::Right(((), _)) => None,
            }
        };
        (model, item)
    });
    Waiting { interrupt, next }
}

impl WatchStream {
    pub(super) async fn open(client: EtcdClient, options: WatchOptions) -> Result<Self> {
        let mut stream = Self {
            client,
            watches: Vec::new(),
            ready: VecDeque::new(),
            next_watch_id: 0,
        };
        stream.create(options).await?;
        Ok(stream)
    }

    /// Send watch request in the existing watch stream (etcd-client's `WatchStream::watch`):
    /// its `created` response comes through [`WatchStream::message`]. It returns once a
    /// server created the watch, with the errors of `WatchClient::watch` (where
    /// etcd-client's only sends the request).
    pub async fn watch(
        &mut self,
        key: impl Into<Vec<u8>>,
        options: Option<WatchOptions>,
    ) -> Result<()> {
        self.create(options.unwrap_or_default().with_key(key)).await
    }

    /// Cancels watch by specified `watch_id` (etcd-client's `WatchStream::cancel`): events
    /// sent before still come, then a `canceled` response. An id not watched on this stream
    /// gets no answer, as etcd sends none.
    pub async fn cancel(&mut self, watch_id: i64) -> Result<()> {
        if let Some(index) = self.live_index(watch_id) {
            let model = self.reclaim(index).await;
            if let Some(model) = model {
                model.cancel();
            }
        }
        Ok(())
    }

    /// Requests a watch stream progress status be sent in the watch response stream as soon
    /// as possible (etcd-client's `WatchStream::request_progress`): etcd 3.4 answers with
    /// watch id -1 at the store's revision. Asked through the stream's first live watch;
    /// with none live (or while it reconnects) no answer comes.
    pub async fn request_progress(&mut self) -> Result<()> {
        let Some(index) = self.watches.iter().position(Watch::is_live) else {
            return Ok(());
        };
        if let Some(model) = self.reclaim(index).await {
            model.request_progress();
            self.watches[index].progress_requests += 1;
        }
        Ok(())
    }

    /// Receive [`WatchResponse`] from this watch stream (etcd-client's
    /// `WatchStream::message`). Waits while no watch has anything; as etcd's stream, it
    /// does not end when its watches are canceled.
    pub async fn message(&mut self) -> Result<Option<WatchResponse>> {
        poll_fn(|cx| self.poll_message(cx)).await.transpose()
    }

    async fn create(&mut self, options: WatchOptions) -> Result<()> {
        let (key, model_options) = options.to_model()?;
        let id = match options.watch_id() {
            0 => self.assign_watch_id(),
            asked if self.live_index(asked).is_some() => {
                // mvcc `watchStream.Watch`: ErrWatcherDuplicateID, answered created and
                // canceled with id -1 (etcdserver/api/v3rpc/watch.go, `recvLoop`).
                let mut refused = WatchResponse::at(-1, self.last_known_revision());
                refused.created = true;
                refused.canceled = true;
                self.ready.push_back(refused);
                return Ok(());
            }
            asked => asked,
        };
        let model = self.client.watch_with_options(&key, model_options).await;
        let Some(revision) = model.created_revision() else {
            return Err(from_result(&OpResult::Unknown {
                reason: "no server answered the watch's create".into(),
            }));
        };
        let mut created = WatchResponse::at(id, revision as i64);
        created.created = true;
        self.ready.push_back(created);
        self.watches.push(Watch {
            id,
            created_revision: revision,
            state: WatchState::Idle(Box::new(model)),
            progress_requests: 0,
        });
        Ok(())
    }

    /// etcd's auto-assigned id: the lowest from `nextID` on that no live watch has.
    fn assign_watch_id(&mut self) -> i64 {
        while self.live_index(self.next_watch_id).is_some() {
            self.next_watch_id += 1;
        }
        self.next_watch_id += 1;
        self.next_watch_id - 1
    }

    fn live_index(&self, watch_id: i64) -> Option<usize> {
        self.watches
            .iter()
            .position(|watch| watch.id == watch_id && watch.is_live())
    }

    /// The highest store revision a created response of this stream reported.
    fn last_known_revision(&self) -> i64 {
        self.watches
            .iter()
            .map(|watch| watch.created_revision)
            .max()
            .unwrap_or(0) as i64
    }

    /// Watch `index`'s model watch, idle: a wait in progress is interrupted, and an item it
    /// got first is kept for [`WatchStream::message`]. `None` when the watch has finished.
    async fn reclaim(&mut self, index: usize) -> Option<&mut ModelWatch> {
        if let WatchState::Waiting(waiting) = &mut self.watches[index].state {
            waiting.interrupt.raise();
            let (model, item) = (&mut waiting.next).await;
            self.watches[index].state = WatchState::Idle(model);
            if let Some(item) = item {
                let response = self.watches[index].answer(item);
                self.ready.push_back(response);
            }
        }
        match &mut self.watches[index].state {
            WatchState::Idle(model) => Some(model.as_mut()),
            _ => None,
        }
    }

    fn poll_message(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<WatchResponse>>> {
        if let Some(response) = self.ready.pop_front() {
            return Poll::Ready(Some(Ok(response)));
        }
        for watch in &mut self.watches {
            if let Poll::Ready(response) = watch.poll_answer(cx) {
                return Poll::Ready(Some(Ok(response)));
            }
        }
        Poll::Pending
    }
}

impl Watch {
    fn is_live(&self) -> bool {
        !matches!(self.state, WatchState::Finished)
    }

    /// Its next answer, waiting for the model watch (a wait is started when it is idle); a
    /// finished watch stays pending for good, as etcd sends nothing more for it.
    fn poll_answer(&mut self, cx: &mut Context<'_>) -> Poll<WatchResponse> {
        loop {
            let mut waiting = match std::mem::replace(&mut self.state, WatchState::Finished) {
                WatchState::Finished => return Poll::Pending,
                WatchState::Idle(model) => wait_for_next(model),
                WatchState::Waiting(waiting) => waiting,
            };
            match waiting.next.as_mut().poll(cx) {
                Poll::Pending => {
                    self.state = WatchState::Waiting(waiting);
                    return Poll::Pending;
                }
                Poll::Ready((model, item)) => {
                    self.state = WatchState::Idle(model);
                    if let Some(item) = item {
                        return Poll::Ready(self.answer(item));
                    }
                    // Interrupted before an item came: wait again.
                }
            }
        }
    }

    /// `item` as etcd's server answers it (v3rpc/watch.go `sendLoop`); a cancel or a
    /// compaction finishes the watch.
    fn answer(&mut self, item: WatchItem) -> WatchResponse {
        match item {
            WatchItem::Changes(changes) => {
                let revision = changes.last().map_or(0, |change| change.revision());
                let mut response = WatchResponse::at(self.id, revision as i64);
                response.events = changes.into_iter().map(Event::from_model).collect();
                response
            }
            WatchItem::Progress { revision } => {
                let id = match self.progress_requests {
                    0 => self.id,
                    _ => {
                        self.progress_requests -= 1;
                        -1
                    }
                };
                WatchResponse::at(id, revision as i64)
            }
            WatchItem::Canceled => {
                // etcd's header has the store's revision then; the model's answer does not
                // carry it, so this is the last revision the watch reached.
                let revision = match &self.state {
                    WatchState::Idle(model) => model.next_revision().saturating_sub(1),
                    _ => 0,
                };
                self.state = WatchState::Finished;
                let mut response = WatchResponse::at(self.id, revision as i64);
                response.canceled = true;
                response
            }
            WatchItem::Compacted { compact_revision } => {
                self.state = WatchState::Finished;
                // The watchable store's compacted response has no revision: the header's is 0.
                let mut response = WatchResponse::at(self.id, 0);
                response.compact_revision = compact_revision as i64;
                response.canceled = true;
                response
            }
        }
    }
}

impl Stream for WatchStream {
    type Item = Result<WatchResponse>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().poll_message(cx)
    }
}

impl fmt::Debug for WatchStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let live: Vec<i64> = self
            .watches
            .iter()
            .filter(|watch| watch.is_live())
            .map(|watch| watch.id)
            .collect();
        f.debug_struct("WatchStream")
            .field("process", &self.client.process())
            .field("watch_ids", &live)
            .finish()
    }
}
