//! The timeliness invariant (issue 50, (c)): a fire starts soon after its instant, unless a
//! fault covers it. A slow repair (a fire the reconciler re-sends minutes late, a wait whose
//! copy is lost until the next look) is a failure, not a success that took its time.

use super::{job_state_at, Evidence, Known};
use crate::processes::OpRecord;
use crate::violation::Violation;
use crate::world::ms;
use sundial_model::{ConcurrencyPolicy, ExecStatus};

/// How late a fire may start when nothing covers it: the tick puts fires a minute ahead and
/// sends them delayed to their instant, so a fire with no fault around it starts within
/// seconds; this leaves room for a worker's receive polling, its clock skew and the queue's
/// own delays, and is far below the reconciler's repair (a grace, then its backoff).
pub(super) const START_BOUND_MS: i64 = 90_000;

/// How far before an instant a fault still counts as covering its fire: the tick puts it up
/// to a minute ahead, so a fault then may lose or delay its put or its message.
const COVER_BEFORE_MS: i64 = 120_000;

/// The `timeliness` invariant: every scheduled fire of an ALLOW job without `after` (no policy
/// or dependency makes it wait) that started did so within [`START_BOUND_MS`] of its instant,
/// unless a fault window (a network window, a worker stall or kill, a tick or reconciler
/// outage) or an operator action on its job overlaps the span from shortly before its
/// instant to its start. Batches, catch-up replays and backfills, manual, event and child
/// executions are not judged.
pub fn check_timeliness(ev: &Evidence<'_>, out: &mut Vec<Violation>) {
    for (j, plan) in ev.workload.jobs.iter().enumerate() {
        // (a run waits for a resource limit's room by design)
        let capped = ev.workload.tenant_limit.as_ref().is_some_and(|(t, _)| *t == plan.tenant);
        if plan.def.concurrency != ConcurrencyPolicy::Allow
            || !plan.def.after.is_empty()
            || !plan.def.resources.is_empty()
            || capped
        {
            continue;
        }
        let ops: Vec<&OpRecord> = ev.ops.iter().filter(|o| o.job == j).collect();
        for e in ev.executions.get(&j).map(Vec::as_slice).unwrap_or_default() {
            // (a backfilled fire starts at its planned start, not its instant)
            let judged = e.is_scheduled_fire() && !e.is_caught_up();
            if !judged || e.child.is_some() || e.missed_range.is_some() {
                continue;
            }
            let t = e.scheduled_at.timestamp_millis();
            let Some(start) = e.timeline.iter().find(|x| x.to == ExecStatus::Running).map(|x| x.at) else {
                continue;
            };
            if start - t <= START_BOUND_MS {
                continue;
            }
            let from = t - COVER_BEFORE_MS;
            let covers = |&(a, b): &(i64, i64)| a < start && from < b;
            let faulted = ev.disturbed.iter().any(covers) || ev.tick_outages.iter().any(covers);
            let acted = ops.iter().any(|o| o.started_ms < start && from < o.ended_ms);
            let enabled = matches!(job_state_at(&ops, t, ev.workload.start_ms), Known::Enabled(_));
            if acted || !enabled {
                continue;
            }
            // A window that throttled only the tick delays a fire until the tick after it,
            // which reads again what it could not (the watermark stays before a bucket it could
            // not read): the bound runs from the window's end.
            let throttled = ev.tick_throttles.iter().filter(|w| covers(w)).map(|&(_, b)| b).max();
            let late = throttled.is_none_or(|b| start - b.max(t) > START_BOUND_MS);
            if faulted || !late {
                continue;
            }
            out.push(Violation {
                invariant: "timeliness",
                detail: match throttled {
                    Some(b) => format!(
                        "fire at {} started at {}, {} s late, {} s after the tick's throttling ended at {}",
                        ms(t),
                        ms(start),
                        (start - t) / 1_000,
                        (start - b) / 1_000,
                        ms(b)
                    ),
                    None => format!(
                        "fire at {} started at {}, {} s late, with no fault or action around it",
                        ms(t),
                        ms(start),
                        (start - t) / 1_000
                    ),
                },
                execution: Some(e.id()),
            });
        }
    }
}
