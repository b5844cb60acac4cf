//! What a shard scan reports ([`ScanReport`], counts per tick and per pool) and how it fails
//! ([`ScanError`]): shared by the scan and the verification pass, which both fill one report.

use std::collections::BTreeMap;
use sundial_store::queue::QueueError;
use sundial_store::StoreError;

/// Where a test makes the scan stop as if the process had crashed (fault injection).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashPoint {
    /// After the executions were put, before any send.
    AfterPut,
    /// After the sends, before the advance.
    AfterSend,
    /// Just before the job advances (same state as `AfterSend`, named for the design's steps).
    BeforeAdvance,
    /// After the advances, before the watermark moves.
    BeforeWatermark,
}

/// A scan failed; the next tick repeats it from the unchanged trigger positions.
#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    /// DynamoDB failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// SQS failed.
    #[error(transparent)]
    Queue(#[from] QueueError),
    /// An injected crash (tests only).
    #[error("injected crash at {0:?}")]
    Crash(CrashPoint),
    /// Some shards of a range failed; every other shard was scanned (`report`). A failed shard
    /// keeps its watermark and job positions, so its fires are late, never lost: the next tick
    /// retries it, and the misfire policies apply if it stays broken past their thresholds.
    #[error("{failed} shard(s) failed; first: {first}")]
    Shards {
        /// How many shards failed.
        failed: u32,
        /// The first failure (the others are logged with their shard).
        first: Box<ScanError>,
        /// What the scan did in the shards that worked (and `shards_failed`).
        report: Box<ScanReport>,
    },
}

impl ScanError {
    /// Whether the failure is transient (every scan error is repaired by a later tick; this
    /// says whether retrying *now* may help).
    pub fn is_retryable(&self) -> bool {
        match self {
            ScanError::Store(e) => e.is_retryable(),
            ScanError::Queue(e) => e.is_retryable(),
            ScanError::Crash(_) => true,
            ScanError::Shards { first, .. } => first.is_retryable(),
        }
    }
}

/// What a scan did (also the source of its EMF metrics).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanReport {
    /// Shards scanned.
    pub shards: u32,
    /// Shards whose watermark reached the horizon.
    pub shards_complete: u32,
    /// Shards whose scan failed (each logged with its error; retried by the next tick).
    pub shards_failed: u32,
    /// Buckets queried.
    pub buckets: u64,
    /// Executions this scan created.
    pub created: u64,
    /// Puts absorbed by an existing execution.
    pub duplicates: u64,
    /// Messages sent.
    pub sent: u64,
    /// Trigger positions advanced.
    pub advanced: u64,
    /// Advances lost to a concurrent scanner or an edit.
    pub advance_lost: u64,
    /// Missed fires by (pool, policy).
    pub missed: BTreeMap<(String, &'static str), u64>,
    /// Jobs left for a later tick by the catch-up budget.
    pub deferred: u64,
    /// Jobs skipped because their stored item does not decode or their definition no longer
    /// parses (logged with the key; alarmed through `InvalidJobs`).
    pub invalid: u64,
    /// Enqueue time minus dispatch time (ms; negative = queued ahead) of each created
    /// execution, by pool.
    pub lag_ms: BTreeMap<String, Vec<i64>>,
    /// Every-minute and daily fires the verification pass looked up.
    pub verified: u64,
    /// Of those, open ones it put into the `open` index (not final a grace after their minute),
    /// plus open fires of jobs that left those classes.
    pub verify_tracked: u64,
    /// Low-priority fires whose message the scan deferred because their pool was busy, by pool.
    pub low_deferred: BTreeMap<String, u64>,
    /// Jobs that created their `maxRuns` scheduled fires and were completed by this scan.
    pub completed: u64,
    /// Fires a job's `maxRuns` refused (the job had created its last one already).
    pub over_limit: u64,
}

impl ScanReport {
    /// Adds another report into this one.
    pub fn merge(&mut self, o: ScanReport) {
        self.shards += o.shards;
        self.shards_complete += o.shards_complete;
        self.shards_failed += o.shards_failed;
        self.buckets += o.buckets;
        self.created += o.created;
        self.duplicates += o.duplicates;
        self.sent += o.sent;
        self.advanced += o.advanced;
        self.advance_lost += o.advance_lost;
        self.deferred += o.deferred;
        self.invalid += o.invalid;
        self.verified += o.verified;
        self.verify_tracked += o.verify_tracked;
        self.completed += o.completed;
        self.over_limit += o.over_limit;
        for (k, v) in o.missed {
            *self.missed.entry(k).or_default() += v;
        }
        for (k, v) in o.low_deferred {
            *self.low_deferred.entry(k).or_default() += v;
        }
        for (k, v) in o.lag_ms {
            self.lag_ms.entry(k).or_default().extend(v);
        }
    }
}
