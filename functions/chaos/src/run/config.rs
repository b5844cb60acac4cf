//! What a run is asked to do: its size, its timing, and how hard each fault hits.

use crate::proxy::FaultPlan;
use std::path::PathBuf;
use std::time::Duration;

/// Everything a run needs.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// Seed of every random choice.
    pub seed: u64,
    /// Jobs.
    pub jobs: u32,
    /// How long jobs fire (at least; extended so the outage and 10 s after it fit).
    pub firing: Duration,
    /// Each job's period (`rate(N seconds)`).
    pub rate_secs: u32,
    /// Worker processes.
    pub workers: usize,
    /// Executions one worker runs at once.
    pub slots: u32,
    /// Time between ticks.
    pub tick_every: Duration,
    /// How far ahead a tick queues fires (`ScanOptions::horizon_secs`; production uses 60 with
    /// a tick a minute, the compressed run less with a tick every few seconds).
    pub horizon_secs: u32,
    /// Logical shards.
    pub shards: u32,
    /// Length of the tick outage.
    pub outage: Duration,
    /// Normal running before the outage (at least).
    pub outage_after: Duration,
    /// Ticks (per thousand) run twice at once.
    pub duplicate_tick_permille: u32,
    /// Ticks (per thousand) that crash at a random point of the scan.
    pub crashing_tick_permille: u32,
    /// Range of the pause between two worker faults.
    pub fault_every: (Duration, Duration),
    /// Clock offset of worker 0 (ms).
    pub skew_ms: i64,
    /// Lease length (s).
    pub lease_secs: u32,
    /// Takeover margin (ms).
    pub skew_margin_ms: i64,
    /// After firing ends, how long the drain waits without any execution finishing before it
    /// gives up (the checker then lists what is not final).
    pub drain: Duration,
    /// The proxy's fault mix.
    pub plan: FaultPlan,
    /// Handler work time range (ms).
    pub work_ms: (u64, u64),
    /// The executable to start workers from (`<exe> worker`).
    pub worker_exe: PathBuf,
    /// Keep the tables, queues and run directory afterwards.
    pub keep: bool,
    /// Chance (per mille) that a message the thief takes is silently dropped (deleted unread).
    pub loss_permille: u32,
    /// Chance (per mille) that a message the thief takes is moved to the DLQ (an overflowing
    /// DLQ: the execution is still open, only the reconciler brings it back).
    pub dlq_permille: u32,
    /// How often the thief takes a batch of up to 10 messages.
    pub thief_every: Duration,
    /// Undecodable job items planted in the due index (one per shard, round robin).
    pub poison_items: u32,
    /// Chance (per mille) that a tick dies mid-range: it scans only the first shards.
    pub tick_dies_permille: u32,
    /// How often the reconciler runs.
    pub reconcile_every: Duration,
    /// The reconciler's grace (compressed like everything else).
    pub reconcile_grace: Duration,
}

impl RunConfig {
    /// Defaults for `seed`, `jobs` and `minutes` of firing, workers started from `worker_exe`.
    pub fn new(seed: u64, jobs: u32, minutes: f64, worker_exe: PathBuf) -> Self {
        RunConfig {
            seed,
            jobs,
            firing: Duration::from_secs_f64((minutes * 60.0).max(10.0)),
            rate_secs: 5,
            workers: 3,
            slots: 4,
            tick_every: Duration::from_secs(3),
            horizon_secs: 15,
            shards: 4,
            outage: Duration::from_secs(40),
            outage_after: Duration::from_secs(10),
            duplicate_tick_permille: 300,
            crashing_tick_permille: 50,
            fault_every: (Duration::from_secs(6), Duration::from_secs(14)),
            skew_ms: 2_500,
            lease_secs: 3,
            skew_margin_ms: 1_000,
            drain: Duration::from_secs(60),
            plan: FaultPlan::STORMY,
            work_ms: (100, 900),
            worker_exe,
            keep: false,
            loss_permille: 100,
            dlq_permille: 50,
            thief_every: Duration::from_secs(2),
            poison_items: 2,
            tick_dies_permille: 100,
            reconcile_every: Duration::from_secs(3),
            reconcile_grace: Duration::from_secs(10),
        }
    }
}
