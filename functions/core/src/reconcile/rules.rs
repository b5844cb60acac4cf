//! The reconciler's rules: pure functions of an execution, its re-send count and `now`.
//!
//! An open execution carries in the `open` index the instant by which something should have
//! acted on it (`open_due`): its message's arrival plus [`GRACE_MS`] for READY and RETRY_WAIT,
//! its lease end plus the skew margin and [`GRACE_MS`] for RUNNING. Every normal path acts
//! before that instant (a worker claims at `available_at`, finishes or heartbeats within the
//! lease), so an execution the reconciler finds due is one whose delivery is gone: a message
//! lost, never sent, dropped by a panicking worker, or moved to the DLQ.

use crate::model::{ExecStatus, Execution};

/// How long after an execution should have been acted on the reconciler waits before it
/// re-sends its message (ms). Longer than the queue's visibility timeout (60 s), so a message
/// that is merely in flight, or returning after a worker died, is not duplicated.
pub const GRACE_MS: i64 = 120_000;

/// The longest pause between two re-sends of one execution (ms).
pub const MAX_BACKOFF_MS: i64 = 3_600_000;

/// While a pool's queue has a visible backlog, an execution of that pool may simply be waiting
/// its turn in the queue: the reconciler then waits this many graces before re-sending, so an
/// overloaded pool is not flooded with duplicates of what it already holds.
pub const BACKLOG_GRACES: i64 = 8;

/// Visible messages from which a pool's queue counts as backlogged (a few visible messages are
/// normal between two polls; hundreds mean the workers are behind).
pub const BACKLOG_MIN_VISIBLE: u64 = 100;

/// How long past its due instant (`available_at`, or lease end + margin) an open execution is.
pub fn overdue_ms(e: &Execution, now_ms: i64) -> i64 {
    first_look(e).map_or(0, |at| now_ms - (at - GRACE_MS))
}

/// The skew margin a takeover waits past a lease's end (the worker's default, ms).
pub const LEASE_MARGIN_MS: i64 = 2_000;

/// When the reconciler should first look at a newly written execution (ms), or `None` for a
/// final one (not in the `open` index).
pub fn first_look(e: &Execution) -> Option<i64> {
    match e.status {
        ExecStatus::Ready | ExecStatus::RetryWait => Some(e.available_at + GRACE_MS),
        ExecStatus::Running => Some(e.lease_until.unwrap_or(0) + LEASE_MARGIN_MS + GRACE_MS),
        _ => None,
    }
}

/// What the reconciler does with one execution it found due in the `open` index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// It is final: take it out of the index (a write that forgot to, or a stale index read).
    Close,
    /// Someone is acting on it (a backoff not over, a live lease): look again at this instant.
    LookAgain(i64),
    /// Nothing will act on it: send its message again, and look again at this instant if it is
    /// still open then.
    Resend(i64),
}

/// The pause after the `resends`-th re-send: `grace_ms` doubled each time, at most
/// [`MAX_BACKOFF_MS`]. Bounded work for an execution no worker can take (a pool whose workers
/// are all down): one message per backoff, never a stampede.
pub fn backoff_ms(resends: u32, grace_ms: i64) -> i64 {
    grace_ms.max(1).saturating_mul(1_i64 << resends.min(20)).min(MAX_BACKOFF_MS)
}

/// Judges one open execution at `now_ms`, given how many times it was re-sent already, with a
/// grace of `grace_ms` (default [`GRACE_MS`]; the chaos run uses less). Instants are returned
/// in the index's terms (as if the grace were [`GRACE_MS`]), so the `open_due` stored by every
/// writer and by reconcilers with different graces stay comparable.
pub fn judge(e: &Execution, resends: u32, now_ms: i64, grace_ms: i64) -> Verdict {
    if e.status.is_terminal() {
        return Verdict::Close;
    }
    let shift = GRACE_MS - grace_ms;
    match first_look(e) {
        Some(at) if at - shift > now_ms => Verdict::LookAgain(at),
        Some(_) => Verdict::Resend(now_ms + backoff_ms(resends, grace_ms) + shift),
        None => Verdict::Close,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::items::ms_to_dt;

    fn exec(status: ExecStatus, available_at: i64, lease_until: Option<i64>) -> Execution {
        let at = ms_to_dt(0);
        Execution {
            tenant: "t".into(),
            job_id: "j".into(),
            scheduled_at: at,
            fire_at: at,
            created_at: at,
            status,
            attempt: 0,
            fencing_token: 0,
            lease_owner: None,
            lease_until,
            available_at,
            missed_range: None,
            def_version: 1,
            definition: serde_json::from_value(serde_json::json!({
                "schedule": {"expression": "rate(1 minute)", "timezone": "UTC"},
                "target": {"type": "http", "url": "https://x"}
            }))
            .unwrap_or_else(|e| panic!("{e}")),
            last_error: None,
            cancel_requested: false,
            timeline: Vec::new(),
        }
    }

    #[test]
    fn a_ready_execution_is_resent_only_after_its_grace() {
        let e = exec(ExecStatus::Ready, 10_000, None);
        assert_eq!(judge(&e, 0, 10_000 + GRACE_MS - 1, GRACE_MS), Verdict::LookAgain(10_000 + GRACE_MS));
        assert_eq!(judge(&e, 0, 10_000 + GRACE_MS, GRACE_MS), Verdict::Resend(10_000 + 2 * GRACE_MS));
    }

    #[test]
    fn a_running_execution_is_resent_only_once_its_lease_is_over_for_good() {
        let e = exec(ExecStatus::Running, 0, Some(50_000));
        let due = 50_000 + LEASE_MARGIN_MS + GRACE_MS;
        assert_eq!(judge(&e, 0, due - 1, GRACE_MS), Verdict::LookAgain(due));
        assert!(matches!(judge(&e, 0, due, GRACE_MS), Verdict::Resend(_)));
    }

    #[test]
    fn a_retry_waits_for_its_backoff_and_final_ones_leave_the_index() {
        let e = exec(ExecStatus::RetryWait, 900_000, None);
        assert_eq!(judge(&e, 0, 200_000, GRACE_MS), Verdict::LookAgain(900_000 + GRACE_MS));
        for st in [ExecStatus::Succeeded, ExecStatus::Dead, ExecStatus::Canceled, ExecStatus::Skipped] {
            assert_eq!(judge(&exec(st, 0, None), 0, 1, GRACE_MS), Verdict::Close);
        }
    }

    #[test]
    fn resends_back_off_to_a_bounded_rate() {
        assert_eq!(backoff_ms(0, GRACE_MS), GRACE_MS);
        assert_eq!(backoff_ms(1, GRACE_MS), 2 * GRACE_MS);
        assert_eq!(backoff_ms(5, GRACE_MS), MAX_BACKOFF_MS.min(32 * GRACE_MS));
        assert_eq!(backoff_ms(60, GRACE_MS), MAX_BACKOFF_MS);
        assert_eq!(backoff_ms(1, 10_000), 20_000);
    }

    #[test]
    fn a_shorter_grace_looks_earlier_in_the_same_index_terms() {
        let e = exec(ExecStatus::Ready, 10_000, None);
        // 10 s grace: due at 20 s; the next look is stored as if the grace were the default
        assert_eq!(judge(&e, 0, 19_999, 10_000), Verdict::LookAgain(10_000 + GRACE_MS));
        assert_eq!(judge(&e, 0, 20_000, 10_000), Verdict::Resend(20_000 + 10_000 + GRACE_MS - 10_000));
    }
}
