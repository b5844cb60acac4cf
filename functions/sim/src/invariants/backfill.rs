//! The backfill invariant (issue 50, (d)): an operator's backfill (`POST
//! /v1/jobs/{jobId}/backfill`) leaves every fire of its range with exactly one execution: the
//! one it created, or the one the fire already had, a `fireOnce` batch's included (the
//! **fires** invariant finds an instant covered twice). Its fires run whatever the job was at their instants (paused, another
//! version): the **paused** and **versions** checks leave them alone.
//!
//! The range is the op's `[now − back, now − back + len]`, its fires those of the schedule in
//! force at the call; a call that failed, or one within 2 s of an edit of the schedule, is
//! not looked for.

use super::{schedule_at, SLACK_MS};
use crate::processes::OpRecord;
use crate::violation::Violation;
use crate::workload::{OpKind, Workload};
use crate::world::ms;
use sundial_model::Execution;
use sundial_schedule::Schedule;

/// The instants (ms, inclusive) a backfill op asked for.
fn range(op: &OpRecord) -> Option<(i64, i64)> {
    match op.kind {
        OpKind::Backfill { back_ms, len_ms, .. } => {
            let from = op.started_ms - back_ms;
            Some((from, from + len_ms))
        }
        _ => None,
    }
}

/// Whether a backfill op of the job made `e` or took it over: its creation code says backfill,
/// or it is a fire a pause held that a backfill released (`CaughtUp`), and one of the job's
/// backfills (succeeded or not: a failed call may have made some) asked for its instant.
pub(crate) fn made_by_backfill(ops: &[&OpRecord], e: &Execution) -> bool {
    let code = e.timeline.first().and_then(|t| t.code.as_deref());
    let t = e.scheduled_at.timestamp_millis();
    (code == Some(sundial_model::BACKFILL_CODE) || e.is_caught_up())
        && ops.iter().filter_map(|o| range(o)).any(|(a, b)| a <= t && t <= b)
}

/// The backfill invariant for job `j` (module doc): every fire of a successful backfill's
/// range has an execution.
pub(crate) fn check_backfills(
    w: &Workload,
    ops: &[&OpRecord],
    j: usize,
    execs: &[Execution],
    out: &mut Vec<Violation>,
) {
    for op in ops.iter().filter(|o| o.ok) {
        let Some((a, b)) = range(op) else { continue };
        let Some(s) = schedule_at(w, ops, j, op.started_ms) else { continue };
        let edited_near = ops.iter().any(|o| {
            matches!(o.kind, OpKind::Edit { schedule: Some(_) })
                && o.started_ms - SLACK_MS <= op.ended_ms
                && op.started_ms <= o.ended_ms + SLACK_MS
        });
        if edited_near {
            continue;
        }
        let def = crate::workload::definition(0, 0, s, 1, w.start_ms, w.end_ms);
        let Ok(sch) = Schedule::parse(&def.schedule, ms(w.start_ms)) else { continue };
        for t in sch.fires_between(ms(a - 1), ms(b), 100_000).iter().map(|t| t.timestamp_millis()) {
            // Its own execution, or a `fireOnce` batch that stands for it.
            let has = execs.iter().any(|e| {
                let batch = e.missed_range.is_some_and(|(a, b)| {
                    a.timestamp_millis() <= t
                        && t <= b.timestamp_millis()
                        && !e.missed_except.iter().any(|x| x.timestamp_millis() == t)
                });
                e.child.is_none() && (e.scheduled_at.timestamp_millis() == t || batch)
            });
            if !has {
                out.push(Violation {
                    invariant: "backfill",
                    detail: format!(
                        "backfill at {} of {} to {}: its fire at {} has no execution",
                        ms(op.started_ms),
                        ms(a),
                        ms(b),
                        ms(t)
                    ),
                    execution: None,
                });
            }
        }
    }
}
