//! Priorities, back-pressure and tenant fairness (docs/priority.md): when a pool's queue is deep,
//! defer low-priority work and refuse new work instead of scaling until the database falls over.
//!
//! SQS has no priority, so a pool has two *lanes*, two queues: the main queue
//! `{prefix}{pool}` (high and normal priority) and the low lane `{prefix}{pool}-low`. Workers
//! receive from the main queue first and from the low lane only when the main queue came back
//! empty (or every [`LOW_LANE_EVERY`]th receive, so low work is slowed, never starved). A
//! tenant that queues 10,000 low-priority executions therefore fills the low lane, and another
//! tenant's on-time normal fire lands in the main queue and is taken at the next receive: how
//! many noisy executions may start before it is bounded by the receives already in flight
//! ([`quiet_start_bound`]), not by the noisy backlog.
//!
//! The saturation signal is the visible depth of a lane (`ApproximateNumberOfMessages`, one
//! `GetQueueAttributes` per lane cached [`DEPTH_CACHE_MS`] by [`crate::queue::PoolQueues`], so
//! its cost does not grow with traffic). Decisions here are pure functions of the depth:
//! - the tick defers a low-priority fire ([`tick_delay`]) when the pool's main queue or its low
//!   lane holds `deferDepth` visible messages: the execution is still put (the intent is durable
//!   and listed as READY) and its message is sent with `deferSecs` of delay;
//! - the API refuses create, trigger-now and backfill for a job whose lane holds
//!   `saturatedDepth` visible messages ([`creation`]): 429 `saturated` with `Retry-After`.
//!   A deep low lane refuses only low-priority work, so one tenant's bulk backfill of
//!   low-priority jobs does not refuse another tenant's normal jobs.
//!
//! Backfills are bulk and never on time: their executions always go to the low lane
//! ([`backfill_lane`]), so a tenant's 100,000-execution backfill never sits in front of
//! anyone's on-time fire, whatever the job's priority.

mod types;

pub use crate::lane::{Lane, LOW_LANE_SUFFIX};
pub use types::Priority;

/// How long a lane's depth is reused before it is read again (ms): bounds the signal's cost to
/// one `GetQueueAttributes` per lane per 10 s per process, whatever the traffic.
pub const DEPTH_CACHE_MS: i64 = 10_000;

/// A worker that found the main queue non-empty still receives from the low lane every this
/// many receives: low work slows down under load, it never stops.
pub const LOW_LANE_EVERY: u64 = 10;

/// Thresholds of the back-pressure rules (`SUNDIAL_BACKPRESSURE_*`, [`crate::config`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backpressure {
    /// Visible messages in a pool's main queue (or low lane) from which the tick defers
    /// low-priority fires.
    pub defer_depth: u64,
    /// How long a deferred fire's message is held (seconds, at most 900).
    pub defer_secs: u32,
    /// Visible messages in a lane from which the API refuses new work for it (429).
    pub saturated_depth: u64,
}

impl Default for Backpressure {
    fn default() -> Self {
        let d = &crate::resources::Resources::get().defaults;
        Backpressure {
            defer_depth: d.backpressure_defer_depth,
            defer_secs: d.backpressure_defer_secs,
            saturated_depth: d.backpressure_saturated_depth,
        }
    }
}

/// Visible depth of a pool's two lanes (`None`: unknown, read failed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Depths {
    /// Main queue.
    pub main: Option<u64>,
    /// Low lane.
    pub low: Option<u64>,
}

impl Depths {
    /// The depth of `lane`.
    pub fn of(&self, lane: Lane) -> Option<u64> {
        match lane {
            Lane::Main => self.main,
            Lane::Low => self.low,
        }
    }
}

/// The tick's decision for one fire in `lane`: its message delay (seconds) and whether it was
/// deferred. Only low-lane (low-priority) fires are deferred, and only when the pool is busy (either lane at
/// `defer_depth`); an unknown depth defers nothing (a failed read must not stop work).
pub fn tick_delay(lane: Lane, delay_secs: i32, depths: &Depths, bp: &Backpressure) -> (i32, bool) {
    if lane != Lane::Low {
        return (delay_secs, false);
    }
    let busy = [depths.main, depths.low].into_iter().flatten().any(|d| d >= bp.defer_depth);
    if !busy {
        return (delay_secs, false);
    }
    let deferred = delay_secs.max(bp.defer_secs.min(crate::limits::SQS_MAX_DELAY_SECS) as i32);
    (deferred, deferred > delay_secs)
}

/// Refused: the lane a creation would feed is saturated; try again after `retry_after_secs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Saturated {
    /// The lane.
    pub lane: Lane,
    /// Its visible depth.
    pub depth: u64,
    /// The threshold.
    pub threshold: u64,
    /// When to try again (seconds): the deferral time, at least the depth cache's age.
    pub retry_after_secs: u32,
}

/// Whether the API may create work for `lane` now. An unknown depth admits.
pub fn creation(lane: Lane, depths: &Depths, bp: &Backpressure) -> Result<(), Saturated> {
    match depths.of(lane) {
        Some(depth) if depth >= bp.saturated_depth => Err(Saturated {
            lane,
            depth,
            threshold: bp.saturated_depth,
            retry_after_secs: bp.defer_secs.max((DEPTH_CACHE_MS / 1000) as u32),
        }),
        _ => Ok(()),
    }
}

/// The lane of a backfill's executions: always the low lane (bulk, never on time).
pub fn backfill_lane() -> Lane {
    Lane::Low
}

/// The lane an execution travels in: a backfilled one (its first audit event says so, or a
/// `CaughtUp` note: a queued-ahead fire a backfill replays) in the low lane, any other in its
/// job's priority's lane. Every send of an execution (tick, API, reconciler, dead-letter
/// replay) asks this, so a re-send keeps its lane.
pub fn lane_of(e: &crate::Execution) -> Lane {
    let backfilled = e.timeline.first().and_then(|ev| ev.code.as_deref()) == Some(crate::BACKFILL_CODE);
    if backfilled || e.is_caught_up() {
        backfill_lane()
    } else {
        e.definition.priority.lane()
    }
}

/// The most executions of other tenants' low-priority backlog that can start between the moment
/// an on-time main-queue message becomes visible and its own start, with `workers` ECS workers
/// of `slots` slots each: each worker has at most one receive in flight, which asks for at most
/// `min(slots, 10)` messages; a receive that began before the message was visible may come from
/// the low lane, every later one reads the main queue first (the anti-starvation turn included,
/// which is one receive in [`LOW_LANE_EVERY`] and never two in a row). So at most two low
/// receives per worker: the one in flight and one anti-starvation turn.
pub fn quiet_start_bound(workers: u64, slots: u64) -> u64 {
    2 * workers * slots.clamp(1, 10)
}

/// Which lane a worker receives from next, given how many receives it made so far and whether
/// the last main-queue receive came back empty: the main queue first, the low lane when the
/// main queue was empty, and every [`LOW_LANE_EVERY`]th receive (anti-starvation).
pub fn next_lane(receives: u64, main_was_empty: bool) -> Lane {
    if main_was_empty || (receives > 0 && receives.is_multiple_of(LOW_LANE_EVERY)) {
        Lane::Low
    } else {
        Lane::Main
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bp() -> Backpressure {
        Backpressure { defer_depth: 100, defer_secs: 60, saturated_depth: 1000 }
    }

    #[test]
    fn low_priority_fires_are_deferred_first_and_only_when_busy() {
        // GIVEN a pool whose main queue is at the defer threshold
        let busy = Depths { main: Some(100), low: Some(0) };
        // THEN low is deferred, normal and high are not
        assert_eq!(tick_delay(Priority::Low.lane(), 5, &busy, &bp()), (60, true));
        assert_eq!(tick_delay(Priority::Normal.lane(), 5, &busy, &bp()), (5, false));
        assert_eq!(tick_delay(Priority::High.lane(), 5, &busy, &bp()), (5, false));
        // a deep low lane is busy too
        let low_deep = Depths { main: Some(0), low: Some(500) };
        assert_eq!(tick_delay(Priority::Low.lane(), 0, &low_deep, &bp()), (60, true));
        // calm, or unknown: nothing deferred
        let calm = Depths { main: Some(99), low: Some(99) };
        assert_eq!(tick_delay(Priority::Low.lane(), 5, &calm, &bp()), (5, false));
        assert_eq!(tick_delay(Priority::Low.lane(), 5, &Depths::default(), &bp()), (5, false));
        // a fire already further out than the deferral keeps its delay and is not counted
        assert_eq!(tick_delay(Priority::Low.lane(), 120, &busy, &bp()), (120, false));
    }

    #[test]
    fn creation_is_refused_only_for_the_saturated_lane() {
        let d = Depths { main: Some(10), low: Some(1000) };
        assert_eq!(creation(Lane::Main, &d, &bp()), Ok(()));
        let e = creation(Lane::Low, &d, &bp()).unwrap_err();
        assert_eq!((e.depth, e.threshold, e.retry_after_secs), (1000, 1000, 60));
        assert_eq!(creation(Lane::Low, &Depths::default(), &bp()), Ok(()));
    }

    #[test]
    fn workers_read_main_first_and_low_when_main_is_empty_or_every_tenth() {
        assert_eq!(next_lane(0, false), Lane::Main);
        assert_eq!(next_lane(3, true), Lane::Low);
        assert_eq!(next_lane(10, false), Lane::Low);
        assert_eq!(next_lane(11, false), Lane::Main);
        let lows = (0..100).filter(|r| next_lane(*r, false) == Lane::Low).count();
        assert_eq!(lows, 9, "one in ten under a busy main queue");
    }

    #[test]
    fn priorities_parse_by_name() {
        assert_eq!(serde_json::from_str::<Priority>("\"low\"").ok(), Some(Priority::Low));
        assert!(serde_json::from_str::<Priority>("\"urgent\"").is_err());
        assert_eq!(Priority::High.lane(), Lane::Main);
        assert_eq!(Priority::Low.lane(), Lane::Low);
    }
}
