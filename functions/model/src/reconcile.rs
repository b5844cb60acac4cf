//! The reconciler's rules: pure functions of an execution, its re-send count and `now`.
//!
//! An open execution carries in the `open` index the instant by which something should have
//! acted on it (`open_due`): its message's arrival plus [`GRACE_MS`] for READY and RETRY_WAIT,
//! its lease end plus the skew margin and [`GRACE_MS`] for RUNNING. Every normal path acts
//! before that instant (a worker claims at `available_at`, finishes or heartbeats within the
//! lease), so an execution the reconciler finds due is one whose delivery is gone: a message
//! lost, never sent, dropped by a panicking worker, or moved to the DLQ.

use crate::{ExecStatus, Execution};

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
    delivery_look(e).map_or(0, |at| now_ms - (at - GRACE_MS))
}

/// The skew margin a takeover waits past a lease's end (the worker's default, ms).
pub const LEASE_MARGIN_MS: i64 = 2_000;

/// When the reconciler should first look at a newly written execution (ms), or `None` for a
/// final one (not in the `open` index): when its delivery is overdue, or its start deadline if
/// that comes first (so a missed start is reported at its deadline, not a grace later).
pub fn first_look(e: &Execution) -> Option<i64> {
    let at = delivery_look(e)?;
    let at = match pending_deadline(e, false) {
        Some(d) => at.min(d),
        None => at,
    };
    Some(finish_deadline(e).map_or(at, |d| at.min(d)))
}

/// The instant (ms) by which `e` must have finished, if its job sets `finishDeadlineSecs`:
/// counted like [`start_deadline`]. None for a child (its parent's deadline speaks for the
/// fire).
pub fn finish_deadline(e: &Execution) -> Option<i64> {
    let secs = e.definition.finish_deadline_secs?;
    if e.child.is_some() {
        return None;
    }
    let base = if e.missed_range.is_some() { e.scheduled_at } else { e.scheduled_at.max(e.fire_at) };
    Some(base.timestamp_millis() + i64::from(secs) * 1_000)
}

/// The finish deadline `e` has missed at `now_ms` and nobody reported yet (`reported`: its
/// `fdm` is set): still open past it, or final with a finish (its last timeline event) after
/// it. The reconciler reports it once (docs/outcomes.md, "Finish deadlines").
pub fn finish_missed(e: &Execution, reported: bool, now_ms: i64) -> Option<i64> {
    let d = finish_deadline(e)?;
    if reported || d > now_ms {
        return None;
    }
    if !e.status.is_terminal() {
        return Some(d);
    }
    let finished = e.timeline.last().map(|ev| ev.at)?;
    (finished > d).then_some(d)
}

/// A finish deadline still ahead of `now_ms`: every look is capped by it, so the reconciler
/// looks at the deadline (one that passed is [`finish_missed`]'s).
fn finish_cap(e: &Execution, now_ms: i64) -> Option<i64> {
    finish_deadline(e).filter(|d| *d > now_ms && !e.status.is_terminal())
}

/// When the execution's delivery is overdue (ms): its message's arrival plus [`GRACE_MS`], or
/// its lease end plus the margin and [`GRACE_MS`]; `None` once final.
pub fn delivery_look(e: &Execution) -> Option<i64> {
    match e.status {
        ExecStatus::Ready | ExecStatus::RetryWait => Some(e.available_at + GRACE_MS),
        ExecStatus::Running => Some(e.lease_until.unwrap_or(0) + LEASE_MARGIN_MS + GRACE_MS),
        _ => None,
    }
}

/// The instant (ms) by which a worker must have started `e`, if its job sets
/// `startDeadlineSecs`: counted from its scheduled instant plus the job's jitter (`fire_at`),
/// or from the scheduled instant alone for a misfire catch-up (created late because the
/// trigger was late: that lateness is what the deadline watches). A backfilled fire is paced
/// by the operator: its `fire_at` is its planned start, and the deadline counts from there.
pub fn start_deadline(e: &Execution) -> Option<i64> {
    let secs = e.definition.start_deadline_secs?;
    let base = if e.missed_range.is_some() { e.scheduled_at } else { e.scheduled_at.max(e.fire_at) };
    Some(base.timestamp_millis() + i64::from(secs) * 1_000)
}

/// The start deadline still to watch: the execution has never started (READY, never claimed,
/// no cancel asked) and its miss is not `reported` yet. A reduce waiting to start or a replay
/// did start once ([`Execution::never_claimed`]): their deadline is behind them.
pub fn pending_deadline(e: &Execution, reported: bool) -> Option<i64> {
    if reported || e.status != ExecStatus::Ready || !e.never_claimed() || e.cancel_requested {
        return None;
    }
    start_deadline(e)
}

/// Where a waiting execution's next reconciler look goes (ms), if the one stored (`open_due`)
/// must move: a worker that re-queues an execution waiting at admission (a concurrency policy,
/// the tenant's running limit, a resource limit) until `retry_at` tells the reconciler so,
/// since a wait is not a lost delivery. The look moves to `retry_at + 2 × GRACE_MS` once the
/// stored one is less than a grace past the wait's end, so a wait polling every few seconds
/// writes about once a grace; a start deadline still pending caps it (its miss is reported on
/// time). `None`: the stored look is far enough.
pub fn wait_look(e: &Execution, open_due: Option<i64>, reported: bool, retry_at: i64) -> Option<i64> {
    let deadline = pending_deadline(e, reported);
    // A finish deadline less than two graces past still caps the look (see `finish_missed`).
    let finish = finish_deadline(e).filter(|d| *d > retry_at - 2 * GRACE_MS);
    let cap = |at: i64| {
        let at = deadline.map_or(at, |d| at.min(d));
        finish.map_or(at, |d| at.min(d))
    };
    match open_due {
        Some(due) if due >= cap(retry_at + GRACE_MS) => None,
        _ => Some(cap(retry_at + 2 * GRACE_MS)),
    }
}

/// Whether a delivered copy of generation `msg_gen` is stale for an execution at generation
/// `exec_gen`: a newer chain of copies was started (a wait that moved the reconciler's look, a
/// re-send), so this one is dropped instead of re-queued. Every raise of the generation comes
/// with the new chain's send (a worker's after it, the reconciler's undone if it fails) and an
/// `open` index entry, so dropping loses nothing.
pub fn stale_copy(msg_gen: u64, exec_gen: u64) -> bool {
    msg_gen < exec_gen
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
    /// A parent waiting for its children (`docs/children.md`): recompute its tally from the
    /// children themselves, end it if they are all final, else look again later.
    Aggregate,
    /// It has not started by its start deadline (this instant, ms): report the miss once, and
    /// look again at `next` (when its delivery is due for a look; possibly already past, then
    /// the next run judges the delivery).
    Missed {
        /// The start deadline that passed (ms).
        deadline: i64,
        /// The next look (ms, index terms).
        next: i64,
    },
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
///
/// `reported`: its start-deadline miss was already reported (`missed_at` set), or it is held
/// by a pause (a paused job's fire is not a missed start). A start deadline is an instant, not
/// a grace: it is compared with `now_ms` as is.
pub fn judge(e: &Execution, resends: u32, reported: bool, now_ms: i64, grace_ms: i64) -> Verdict {
    if e.status.is_terminal() {
        return Verdict::Close;
    }
    if e.status == ExecStatus::Waiting {
        return Verdict::Aggregate;
    }
    let shift = GRACE_MS - grace_ms;
    let deadline = pending_deadline(e, reported);
    if let (Some(d), Some(at)) = (deadline, delivery_look(e)) {
        if d <= now_ms {
            return Verdict::Missed { deadline: d, next: at };
        }
    }
    // The next look never passes a start or finish deadline still ahead.
    let finish = finish_cap(e, now_ms);
    let cap = |at: i64| {
        let at = deadline.map_or(at, |d| at.min(d));
        finish.map_or(at, |d| at.min(d))
    };
    match delivery_look(e) {
        Some(at) if at - shift > now_ms => Verdict::LookAgain(cap(at)),
        Some(_) => Verdict::Resend(cap(now_ms + backoff_ms(resends, grace_ms) + shift)),
        None => Verdict::Close,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ms_to_dt;

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
            missed_except: Vec::new(),
            def_version: 1,
            definition: serde_json::from_value(serde_json::json!({
                "schedule": {"expression": "rate(1 minute)", "timezone": "UTC"},
                "target": {"type": "http", "url": "https://x"}
            }))
            .unwrap_or_else(|e| panic!("{e}")),
            last_error: None,
            cancel_requested: false,
            timeline: Vec::new(),
            child: None,
            children: None,
            map_reduce: None,
        }
    }

    #[test]
    fn a_finish_deadline_caps_the_look_and_is_missed_once_open_or_finished_after_it() {
        let mut e = exec(ExecStatus::Running, 0, Some(600_000));
        e.definition.finish_deadline_secs = Some(60);
        // The look goes to the deadline, not the lease's end.
        assert_eq!(first_look(&e), Some(60_000));
        assert_eq!(judge(&e, 0, false, 30_000, GRACE_MS), Verdict::LookAgain(60_000));
        // Open past it: missed, unless reported.
        assert_eq!(finish_missed(&e, false, 59_999), None);
        assert_eq!(finish_missed(&e, false, 60_000), Some(60_000));
        assert_eq!(finish_missed(&e, true, 90_000), None);
        // Past it, the look is the lease's again (the miss is `finish_missed`'s, reported once).
        assert_eq!(
            judge(&e, 0, true, 90_000, GRACE_MS),
            Verdict::LookAgain(600_000 + LEASE_MARGIN_MS + GRACE_MS)
        );
        // Final: missed only when it finished after the deadline.
        e.status = ExecStatus::Succeeded;
        e.timeline = vec![crate::AuditEvent::note(&e, 50_000, "w", "x")];
        assert_eq!(finish_missed(&e, false, 90_000), None);
        e.timeline = vec![crate::AuditEvent::note(&e, 70_000, "w", "x")];
        assert_eq!(finish_missed(&e, false, 90_000), Some(60_000));
        // A child's parent speaks for the fire.
        e.child = Some(crate::children::ChildKey::Shard(0));
        assert_eq!(finish_missed(&e, false, 90_000), None);
    }

    #[test]
    fn a_ready_execution_is_resent_only_after_its_grace() {
        let e = exec(ExecStatus::Ready, 10_000, None);
        assert_eq!(
            judge(&e, 0, false, 10_000 + GRACE_MS - 1, GRACE_MS),
            Verdict::LookAgain(10_000 + GRACE_MS)
        );
        assert_eq!(judge(&e, 0, false, 10_000 + GRACE_MS, GRACE_MS), Verdict::Resend(10_000 + 2 * GRACE_MS));
    }

    #[test]
    fn a_running_execution_is_resent_only_once_its_lease_is_over_for_good() {
        let e = exec(ExecStatus::Running, 0, Some(50_000));
        let due = 50_000 + LEASE_MARGIN_MS + GRACE_MS;
        assert_eq!(judge(&e, 0, false, due - 1, GRACE_MS), Verdict::LookAgain(due));
        assert!(matches!(judge(&e, 0, false, due, GRACE_MS), Verdict::Resend(_)));
    }

    #[test]
    fn a_retry_waits_for_its_backoff_and_final_ones_leave_the_index() {
        let e = exec(ExecStatus::RetryWait, 900_000, None);
        assert_eq!(judge(&e, 0, false, 200_000, GRACE_MS), Verdict::LookAgain(900_000 + GRACE_MS));
        for st in [ExecStatus::Succeeded, ExecStatus::Dead, ExecStatus::Canceled, ExecStatus::Skipped] {
            assert_eq!(judge(&exec(st, 0, None), 0, false, 1, GRACE_MS), Verdict::Close);
        }
    }

    fn with_deadline(mut e: Execution, secs: u32) -> Execution {
        e.definition.start_deadline_secs = Some(secs);
        e
    }

    #[test]
    fn a_start_deadline_brings_the_first_look_forward_and_is_judged_missed_once_past() {
        // GIVEN a READY fire scheduled at 0 whose job wants it started within 30 s
        let e = with_deadline(exec(ExecStatus::Ready, 0, None), 30);
        // THEN the reconciler first looks at the deadline, before the delivery grace
        assert_eq!(first_look(&e), Some(30_000));
        assert_eq!(start_deadline(&e), Some(30_000));
        // WHEN judged before the deadline THEN it is looked at again at the deadline
        assert_eq!(judge(&e, 0, false, 29_999, GRACE_MS), Verdict::LookAgain(30_000));
        // WHEN judged at the deadline THEN it is missed, and the delivery is looked at next
        assert_eq!(
            judge(&e, 0, false, 30_000, GRACE_MS),
            Verdict::Missed { deadline: 30_000, next: GRACE_MS }
        );
        // WHEN the miss is already reported THEN only the delivery rules apply
        assert_eq!(judge(&e, 0, true, 30_000, GRACE_MS), Verdict::LookAgain(GRACE_MS));
    }

    #[test]
    fn a_started_or_cancelled_or_final_execution_has_no_pending_deadline() {
        let mut running = with_deadline(exec(ExecStatus::Running, 0, Some(10_000)), 1);
        running.attempt = 1;
        assert_eq!(pending_deadline(&running, false), None);
        assert!(!matches!(judge(&running, 0, false, 50_000, GRACE_MS), Verdict::Missed { .. }));
        let mut retry = with_deadline(exec(ExecStatus::RetryWait, 900_000, None), 1);
        retry.attempt = 1;
        assert_eq!(pending_deadline(&retry, false), None);
        // A reduce about to start, or a replay: READY at attempt 0 again, but claimed before
        let mut again = with_deadline(exec(ExecStatus::Ready, 0, None), 1);
        again.fencing_token = 3;
        assert_eq!(pending_deadline(&again, false), None);
        assert!(!matches!(judge(&again, 0, false, 50_000, GRACE_MS), Verdict::Missed { .. }));
        let mut cancel = with_deadline(exec(ExecStatus::Ready, 0, None), 1);
        cancel.cancel_requested = true;
        assert_eq!(pending_deadline(&cancel, false), None);
        assert_eq!(
            judge(&with_deadline(exec(ExecStatus::Succeeded, 0, None), 1), 0, false, 9_999_999, GRACE_MS),
            Verdict::Close
        );
    }

    #[test]
    fn a_deadline_counts_from_the_jittered_or_backfilled_start_but_not_from_a_late_catch_up() {
        let mut e = with_deadline(exec(ExecStatus::Ready, 0, None), 10);
        // jitter (or a backfill's paced start): fire_at after scheduled_at
        e.fire_at = ms_to_dt(5_000);
        assert_eq!(start_deadline(&e), Some(15_000));
        // a fireOnce catch-up created late: the scheduled instant counts
        e.missed_range = Some((ms_to_dt(0), ms_to_dt(0)));
        e.fire_at = ms_to_dt(600_000);
        assert_eq!(start_deadline(&e), Some(10_000));
    }

    #[test]
    fn a_resend_never_moves_the_next_look_past_a_deadline_still_ahead() {
        // GIVEN a READY fire whose delivery is overdue, with a deadline an hour after it
        let e = with_deadline(exec(ExecStatus::Ready, 0, None), 3_600);
        // WHEN re-sent after many re-sends THEN the next look is the deadline at the latest
        assert_eq!(judge(&e, 10, false, GRACE_MS, GRACE_MS), Verdict::Resend(3_600_000));
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
        assert_eq!(judge(&e, 0, false, 19_999, 10_000), Verdict::LookAgain(10_000 + GRACE_MS));
        assert_eq!(judge(&e, 0, false, 20_000, 10_000), Verdict::Resend(20_000 + 10_000 + GRACE_MS - 10_000));
    }

    /// A waiting execution's copies and the reconciler's looks, simulated with explicit
    /// instants: a copy is delivered `poll_ms` after it was queued and waits again; the
    /// reconciler runs every minute. `lose_at`: the live copy is lost at that instant.
    /// Returns (most copies alive at once, re-sends).
    fn simulate(hours: i64, poll_ms: i64, lose_at: Option<i64>) -> (usize, u32) {
        let e = exec(ExecStatus::Ready, 0, None);
        let (mut open_due, mut gen, mut resends) = (first_look(&e), 0u64, 0u32);
        let mut copies: Vec<(i64, u64)> = vec![(0, 0)];
        let mut most = 1;
        let mut lost = false;
        let mut now = 0;
        while now < hours * 3_600_000 {
            if !lost && lose_at.is_some_and(|l| now >= l) {
                copies.clear();
                lost = true;
            }
            let (due, later): (Vec<_>, Vec<_>) = copies.into_iter().partition(|(at, _)| *at <= now);
            copies = later;
            for (_, g) in due {
                if stale_copy(g, gen) {
                    continue;
                }
                let retry_at = now + poll_ms;
                let mut g = g;
                if let Some(at) = wait_look(&e, open_due, false, retry_at) {
                    open_due = Some(at);
                    gen += 1;
                    g = gen;
                }
                copies.push((retry_at, g));
            }
            if now % 60_000 == 0 && open_due.is_some_and(|d| d <= now) {
                match judge(&e, resends, false, now, GRACE_MS) {
                    Verdict::Resend(next) => {
                        resends += 1;
                        gen += 1;
                        open_due = Some(next);
                        copies.push((now, gen));
                    }
                    Verdict::LookAgain(at) => open_due = Some(at),
                    v => panic!("unexpected {v:?}"),
                }
            }
            most = most.max(copies.len());
            now += 1_000;
        }
        (most, resends)
    }

    #[test]
    fn a_wait_of_hours_keeps_one_copy_and_is_never_resent() {
        // GIVEN an execution waiting at a closed resource (30 s polls) or behind a SERIALIZE
        // holder (2 s polls) for five hours, the reconciler running every minute
        for poll in [30_000, 2_000] {
            // THEN one copy is alive at any instant, and nothing is re-sent
            assert_eq!(simulate(5, poll, None), (1, 0), "poll {poll} ms");
        }
    }

    #[test]
    fn a_waiting_execution_whose_copy_is_lost_is_resent_once_and_keeps_one_copy() {
        // GIVEN a wait whose live copy is lost after an hour
        let (most, resends) = simulate(5, 30_000, Some(3_600_000));
        // THEN the reconciler re-sends it once (the new chain waits on), never two copies at once
        assert_eq!((most, resends), (1, 1));
    }

    #[test]
    fn a_wait_moves_the_look_about_once_a_grace_and_never_past_a_pending_deadline() {
        let e = exec(ExecStatus::Ready, 0, None);
        // A look less than a grace past the wait's end moves to two graces past it
        assert_eq!(wait_look(&e, Some(GRACE_MS), false, 30_000), Some(30_000 + 2 * GRACE_MS));
        // A look at least a grace past the wait's end stays
        assert_eq!(wait_look(&e, Some(30_000 + 2 * GRACE_MS), false, 60_000), None);
        // An execution outside the index (an every-minute fire) enters it
        assert_eq!(wait_look(&e, None, false, 30_000), Some(30_000 + 2 * GRACE_MS));
        // A start deadline still pending caps it; once reported, it does not
        let d = with_deadline(exec(ExecStatus::Ready, 0, None), 100);
        assert_eq!(wait_look(&d, Some(50_000), false, 30_000), Some(100_000));
        assert_eq!(wait_look(&d, Some(100_000), false, 30_000), None);
        assert_eq!(wait_look(&d, Some(100_000), true, 30_000), Some(30_000 + 2 * GRACE_MS));
        assert!(stale_copy(1, 2) && !stale_copy(2, 2) && !stale_copy(0, 0));
    }
}
