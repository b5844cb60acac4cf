//! What the invariants read at the end of a run ([`Evidence`]): the workload, the operator log,
//! the store's executions, the target's effects, the queues' counts and the event source's
//! attempts. Apart from `invariants.rs`, which checks it.

use crate::eventlog::Attempt;
use crate::ledger::Effect;
use crate::processes::OpRecord;
use crate::workload::Workload;
use std::collections::BTreeMap;
use sundial_model::{Execution, JobState};

/// Everything the checker reads.
#[derive(Debug)]
pub struct Evidence<'a> {
    /// The workload.
    pub workload: &'a Workload,
    /// Operator actions done.
    pub ops: &'a [OpRecord],
    /// Every execution, by job index.
    pub executions: &'a BTreeMap<usize, Vec<Execution>>,
    /// The ledger's effects by execution id.
    pub effects: &'a BTreeMap<String, Effect>,
    /// Each shard's watermark (`through`, epoch minutes).
    pub watermarks: &'a [Option<i64>],
    /// The instant of the check (ms).
    pub now_ms: i64,
    /// Messages sent per execution id (all queues, re-sends and wait copies included).
    pub messages: &'a BTreeMap<String, u64>,
    /// The most copies of each execution's message live at once.
    pub live: &'a BTreeMap<String, u64>,
    /// The tick's outages `[from, to)` (ms).
    pub tick_outages: &'a [(i64, i64)],
    /// Every window in which a fault could delay a worker (network windows, worker stalls and
    /// kills, reconciler outages), `[from, to)` (ms).
    pub disturbed: &'a [(i64, i64)],
    /// The windows in which the tick's own requests are throttled (`faults::tick_throttle`),
    /// `[from, to)` (ms): nothing else is disturbed, and the next tick after one catches up.
    pub tick_throttles: &'a [(i64, i64)],
    /// `FireMissed` events per execution id.
    pub missed_events: &'a BTreeMap<String, u64>,
    /// Outcome events put on the bus: (detail-type, execution id, attempt, event id).
    pub outcome_events: &'a [(String, String, u64, String)],
    /// The largest clock skew of a worker (ms): timeline instants are the writing worker's
    /// (corrected) clock, effects' the simulated true time.
    pub max_skew_ms: i64,
    /// Every attempt of the event source.
    pub events: &'a [Attempt],
    /// The instant each keyed event's `EVT#{key}` record holds at the end, by event index.
    pub claims: &'a BTreeMap<usize, i64>,
    /// Each job's state at the end and its stored run count (`maxRuns`), by job index.
    pub final_jobs: &'a BTreeMap<usize, (Option<JobState>, u64)>,
}
