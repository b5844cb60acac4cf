//! The ECS entry point: a long-poll loop over one pool's queue.
//!
//! - Backpressure: a receive asks for at most as many messages as there are free slots (and at
//!   most 10), so nothing waits in local memory while its lease and visibility run out. A busy
//!   task waits up to [`FILL_WAIT`] for more slots to free before it receives: full batches, so
//!   about 0.1 receives per run under load.
//! - Visibility: messages are received with a visibility of one lease plus the skew margin, and
//!   every heartbeat extends it; a killed worker's messages reappear when its leases expire.
//! - Deletes are batched (`DeleteMessageBatch`, up to 10, flushed within a second: a finished
//!   execution's message is invisible for a whole lease anyway, and a late delete is harmless).
//! - Lanes (docs/priority.md): the pool's main queue first, its low lane only when the main
//!   queue came back empty or every `LOW_LANE_EVERY`th receive; a long poll only when both
//!   were empty, on the main queue, at most [`IDLE_WAIT_SECS`] so an idle pool's low lane is
//!   looked at again within that.
//! - Outcome notifications: the pool's notification queue has its own loop
//!   ([`crate::notify_poll`]), apart from the execution slots.
//! - Shutdown (SIGTERM): stop receiving; let running executions finish for a grace period;
//!   then cancel them, which releases their leases and returns their messages at once.

use aws_sdk_sqs::types::{DeleteMessageBatchRequestEntry, Message, MessageSystemAttributeName};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use sundial_core::access;
use sundial_core::config::EcsWorkerSettings;
use sundial_core::execution::target::in_process::BoxFuture;
use sundial_core::execution::worker::{Disposition, MessageControl, Worker};
use sundial_model::priority::{next_lane, Lane};
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;

/// How long a finished message may wait for a fuller `DeleteMessageBatch`.
pub const DELETE_FLUSH: Duration = Duration::from_secs(1);

/// How long a receive waits for more free slots to ask for a fuller batch.
pub const FILL_WAIT: Duration = Duration::from_millis(50);

/// Longest long poll of an idle worker (both lanes empty): how late an idle pool notices a
/// low-priority message.
pub const IDLE_WAIT_SECS: i32 = 5;

/// Options of the poll loop.
#[derive(Debug, Clone)]
pub struct EcsOptions {
    /// Executions run at once.
    pub slots: usize,
    /// How long running work may continue after shutdown begins.
    pub shutdown_grace: Duration,
    /// Long-poll wait (seconds, ≤ 20).
    pub wait_secs: i32,
    /// Whether the shipped binary registers its diagnostic handlers
    /// ([`EcsWorkerSettings::diagnostic_handlers`]).
    pub diagnostic_handlers: bool,
}

impl EcsOptions {
    /// From the environment ([`EcsWorkerSettings`]), with 20 s long polls.
    pub fn from_env() -> anyhow::Result<Self> {
        let s = EcsWorkerSettings::from_env()?;
        Ok(EcsOptions {
            slots: s.slots,
            shutdown_grace: s.shutdown_grace,
            wait_secs: 20,
            diagnostic_handlers: s.diagnostic_handlers,
        })
    }
}

/// What a run of the loop did.
#[derive(Debug, Default)]
pub struct Stats {
    /// Messages received.
    pub received: AtomicU64,
    /// Receive requests.
    pub receives: AtomicU64,
    /// Delete requests (batched).
    pub deletes: AtomicU64,
    /// Visibility changes.
    pub visibility_changes: AtomicU64,
}

struct Visibility {
    sqs: aws_sdk_sqs::Client,
    url: String,
    receipt: String,
    stats: Arc<Stats>,
}

impl MessageControl for Visibility {
    fn extend(&self, secs: i32) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.stats.visibility_changes.fetch_add(1, Ordering::Relaxed);
            let r = self
                .sqs
                .change_message_visibility()
                .queue_url(&self.url)
                .receipt_handle(&self.receipt)
                .visibility_timeout(secs)
                .send()
                .await;
            if let Err(e) = r {
                tracing::warn!(error = %aws_sdk_sqs::error::DisplayErrorContext(e), "visibility extension failed");
            }
        })
    }
}

async fn delete_batcher(
    sqs: aws_sdk_sqs::Client,
    url: String,
    mut rx: mpsc::Receiver<String>,
    stats: Arc<Stats>,
) {
    while let Some(first) = rx.recv().await {
        let mut pending = vec![first];
        let deadline = tokio::time::Instant::now() + DELETE_FLUSH;
        while pending.len() < 10 {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some(r)) => pending.push(r),
                Ok(None) | Err(_) => break,
            }
        }
        let mut req = sqs.delete_message_batch().queue_url(&url);
        for (i, r) in pending.into_iter().enumerate() {
            if let Ok(e) =
                DeleteMessageBatchRequestEntry::builder().id(format!("d{i}")).receipt_handle(r).build()
            {
                req = req.entries(e);
            }
        }
        stats.deletes.fetch_add(1, Ordering::Relaxed);
        if let Err(e) = req.send().await {
            // Undeleted messages come back and find their executions final: harmless.
            tracing::warn!(error = %aws_sdk_sqs::error::DisplayErrorContext(e), "DeleteMessageBatch failed");
        }
    }
}

/// Runs the poll loop for the worker's pool until `shutdown` fires and in-flight work is done
/// or released.
pub async fn run(
    worker: Arc<Worker>,
    opts: EcsOptions,
    shutdown: CancellationToken,
) -> anyhow::Result<Arc<Stats>> {
    let scope = worker.access_scope(&worker.settings().pool);
    access::scope(scope, poll(worker, opts, shutdown)).await
}

async fn poll(
    worker: Arc<Worker>,
    opts: EcsOptions,
    shutdown: CancellationToken,
) -> anyhow::Result<Arc<Stats>> {
    // The pool's outcome notifications, on their own task and queue (docs/outcomes.md).
    let notify = tokio::spawn(access::within(
        access::current(),
        crate::notify_poll::run(worker.clone(), opts.wait_secs, shutdown.clone()),
    ));
    let (mut poller, deleters) = Poller::start(worker, opts).await?;
    poller.receive_until(&shutdown).await?;
    poller.drain().await;
    let _ = notify.await;
    let stats = poller.shared.stats.clone();
    // Closes the delete channels: the batchers flush what is pending and end.
    drop(poller);
    for d in deleters {
        let _ = d.await;
    }
    Ok(stats)
}

/// What every execution's task needs from the loop.
#[derive(Clone)]
struct Shared {
    worker: Arc<Worker>,
    pool: String,
    sqs: aws_sdk_sqs::Client,
    stats: Arc<Stats>,
    /// Cancelled when the shutdown grace period is over: releases running executions.
    stop: CancellationToken,
}

/// One lane's queue and the channel to its delete batcher.
struct LaneQueue {
    url: String,
    deletes: mpsc::Sender<String>,
}

/// Receives so far, and whether the last receive of each lane came back empty.
struct LaneState {
    receives: u64,
    main_empty: bool,
    low_empty: bool,
}

impl LaneState {
    /// The lane to receive from and how long to wait: main first; the low lane when the main
    /// queue was empty (or its anti-starvation turn); a long poll only when both lanes were
    /// empty.
    fn next(&self, wait_secs: i32) -> (Lane, i32) {
        let lane = next_lane(self.receives, self.main_empty);
        let wait = match lane {
            Lane::Main if self.low_empty => wait_secs.min(IDLE_WAIT_SECS),
            Lane::Main | Lane::Low => 0,
        };
        (lane, wait)
    }

    /// Notes what a receive from `lane` brought.
    fn received(&mut self, lane: Lane, empty: bool) {
        match lane {
            Lane::Main => self.main_empty = empty,
            Lane::Low => {
                self.low_empty = empty;
                // Look at the main queue again before the next low receive.
                self.main_empty = false;
            }
        }
    }
}

/// What a receive came back with.
enum Received {
    Messages(Vec<Message>),
    /// The receive failed (logged, and waited a second after).
    Failed,
    /// Shutdown began while it waited.
    Shutdown,
}

/// The poll loop's state.
struct Poller {
    shared: Shared,
    opts: EcsOptions,
    slots: Arc<Semaphore>,
    main: LaneQueue,
    low: LaneQueue,
    lanes: LaneState,
    tasks: JoinSet<()>,
}

impl Poller {
    /// Finds the pool's lanes and starts their delete batchers.
    async fn start(worker: Arc<Worker>, opts: EcsOptions) -> anyhow::Result<(Self, [JoinHandle<()>; 2])> {
        let pool = worker.settings().pool.clone();
        let main_url = worker.lane_url(&pool, Lane::Main).await?;
        let low_url = worker.lane_url(&pool, Lane::Low).await?;
        let sqs = worker.sqs().clone();
        let stats = Arc::new(Stats::default());
        let (main_tx, main_rx) = mpsc::channel::<String>(1024);
        let (low_tx, low_rx) = mpsc::channel::<String>(1024);
        // Spawned tasks carry the worker's scope (IAM recording, `sundial_core::access`).
        let deleters = [(main_url.clone(), main_rx), (low_url.clone(), low_rx)].map(|(url, rx)| {
            tokio::spawn(access::within(
                access::current(),
                delete_batcher(sqs.clone(), url, rx, stats.clone()),
            ))
        });
        tracing::info!(pool, slots = opts.slots, worker = %worker.settings().worker_id, "polling");
        let poller = Poller {
            shared: Shared { worker, pool, sqs, stats, stop: CancellationToken::new() },
            slots: Arc::new(Semaphore::new(opts.slots)),
            opts,
            main: LaneQueue { url: main_url, deletes: main_tx },
            low: LaneQueue { url: low_url, deletes: low_tx },
            lanes: LaneState { receives: 0, main_empty: false, low_empty: true },
            tasks: JoinSet::new(),
        };
        Ok((poller, deleters))
    }

    /// Receives and starts executions, one batch per free slots, until `shutdown` fires.
    async fn receive_until(&mut self, shutdown: &CancellationToken) -> anyhow::Result<()> {
        while !shutdown.is_cancelled() {
            let Some(permits) = self.take_slots(shutdown).await? else { break };
            let (lane, wait) = self.lanes.next(self.opts.wait_secs);
            let msgs = match self.receive(lane, permits.len() as i32, wait, shutdown).await {
                Received::Messages(m) => m,
                Received::Failed => continue,
                Received::Shutdown => break,
            };
            self.lanes.received(lane, msgs.is_empty());
            self.dispatch(lane, msgs, permits).await?;
            while self.tasks.try_join_next().is_some() {}
        }
        Ok(())
    }

    /// Waits for a free slot (none when shutdown comes first), then fills the batch: when fewer
    /// than 10 slots (or the task's slots) are free, waits up to FILL_WAIT for more to free up
    /// before receiving, so a busy task asks for full batches (receives asking for 1-3 messages
    /// made 0.18 receives per run instead of 0.1, docs/performance.md) and still never holds a
    /// message without a slot for it.
    async fn take_slots(
        &self,
        shutdown: &CancellationToken,
    ) -> anyhow::Result<Option<Vec<OwnedSemaphorePermit>>> {
        let first = tokio::select! {
            // Branches are polled in written order, so a seed replays the same way in the
            // deterministic simulator (docs/simulation.md).
            biased;
            p = self.slots.clone().acquire_owned() => p?,
            _ = shutdown.cancelled() => return Ok(None),
        };
        let mut permits = vec![first];
        let target = self.opts.slots.clamp(1, 10);
        let fill_until = tokio::time::Instant::now() + FILL_WAIT;
        while permits.len() < target {
            match self.slots.clone().try_acquire_owned() {
                Ok(p) => permits.push(p),
                Err(_) => match tokio::time::timeout_at(fill_until, self.slots.clone().acquire_owned()).await
                {
                    Ok(p) => permits.push(p?),
                    Err(_) => break,
                },
            }
        }
        Ok(Some(permits))
    }

    /// One `ReceiveMessage` of up to `want` messages from `lane`, waiting up to `wait` seconds.
    async fn receive(&mut self, lane: Lane, want: i32, wait: i32, shutdown: &CancellationToken) -> Received {
        let s = &self.shared;
        let recv = s
            .sqs
            .receive_message()
            .queue_url(&self.queue(lane).url)
            .max_number_of_messages(want)
            .wait_time_seconds(wait)
            .visibility_timeout(s.worker.settings().visibility_secs())
            .message_system_attribute_names(MessageSystemAttributeName::ApproximateReceiveCount)
            .send();
        let out = tokio::select! {
            // Branches are polled in written order, so a seed replays the same way in the
            // deterministic simulator (docs/simulation.md).
            biased;
            r = recv => r,
            _ = shutdown.cancelled() => return Received::Shutdown,
        };
        s.stats.receives.fetch_add(1, Ordering::Relaxed);
        self.lanes.receives += 1;
        match out {
            Ok(o) => Received::Messages(o.messages.unwrap_or_default()),
            Err(e) => {
                tracing::warn!(error = %aws_sdk_sqs::error::DisplayErrorContext(e), "ReceiveMessage failed");
                tokio::time::sleep(Duration::from_secs(1)).await;
                Received::Failed
            }
        }
    }

    /// Starts one task per message, each on one of `permits`.
    async fn dispatch(
        &mut self,
        lane: Lane,
        msgs: Vec<Message>,
        mut permits: Vec<OwnedSemaphorePermit>,
    ) -> anyhow::Result<()> {
        let (url, deletes) = {
            let q = self.queue(lane);
            (q.url.clone(), q.deletes.clone())
        };
        for msg in msgs {
            // At most `want` messages come back: one held permit each (the rest are dropped).
            let permit = match permits.pop() {
                Some(p) => p,
                None => self.slots.clone().acquire_owned().await?,
            };
            self.shared.stats.received.fetch_add(1, Ordering::Relaxed);
            let run = execute(self.shared.clone(), url.clone(), deletes.clone(), msg, permit);
            self.tasks.spawn(access::within(access::current(), run));
        }
        Ok(())
    }

    /// The queue of `lane`.
    fn queue(&self, lane: Lane) -> &LaneQueue {
        match lane {
            Lane::Main => &self.main,
            Lane::Low => &self.low,
        }
    }

    /// Lets running executions finish for the grace period, then cancels the rest, which
    /// releases their leases and returns their messages at once.
    async fn drain(&mut self) {
        tracing::info!(
            running = self.tasks.len(),
            "shutting down: no new work; finishing running executions"
        );
        let tasks = &mut self.tasks;
        let drained = tokio::time::timeout(self.opts.shutdown_grace, async {
            while tasks.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            tracing::info!(running = self.tasks.len(), "grace period over: releasing running executions");
            self.shared.stop.cancel();
            while self.tasks.join_next().await.is_some() {}
        }
    }
}

/// Runs one message's execution on its slot (`_permit`), then deletes the message, extends its
/// visibility until its retry, or leaves it.
async fn execute(
    s: Shared,
    url: String,
    deletes: mpsc::Sender<String>,
    msg: Message,
    _permit: OwnedSemaphorePermit,
) {
    let receipt = msg.receipt_handle.clone().unwrap_or_default();
    let body = msg.body.clone().unwrap_or_default();
    let vis = Visibility { sqs: s.sqs.clone(), url, receipt: receipt.clone(), stats: s.stats.clone() };
    match s.worker.handle(&s.pool, &body, &vis, &s.stop).await {
        Disposition::Delete => {
            let _ = deletes.send(receipt).await;
        }
        Disposition::RetryAfter(secs) => vis.extend(secs).await,
        Disposition::Leave => {}
    }
}
