//! The catch-up invariant (issue 50, (d)): a resume with `catchUp` replays its paused window
//! as docs/api.md says. `all`: every fire of the window has one execution, and none of them is
//! the pause's cancel (`Paused`: the held fire the catch-up should have taken over, the
//! review's finding "resume with catch-up loses the paused window's queued-ahead fires");
//! `last`: the window's latest fire the same. The **paused** invariant lets these replays
//! apply their effects (and only these: a fire of the window that `last` did not name, or any
//! under a resume without catch-up, is still an effect of a paused job).
//!
//! The window is the one the job records: from the pause that took it from enabled (a second
//! pause keeps the first's instant) to the resume, each at its call's `now`. Where the operator
//! log does not tell it for sure (a call that failed, which may have replayed all the same,
//! two calls close in time, a resume of a job already enabled, which replays its last window
//! again), the window's replays are allowed but not looked for.

use super::{schedule_at, Evidence, SLACK_MS};
use crate::processes::OpRecord;
use crate::violation::Violation;
use crate::workload::{OpKind, Workload};
use crate::world::ms;
use sundial_core::control::catch_up::CatchUp;
use sundial_model::retry::codes;
use sundial_model::{ExecStatus, Execution};
use sundial_schedule::Schedule;

/// A paused window a resume with a catch-up closed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Window {
    /// The pause's instant (ms), the window's first.
    from_ms: i64,
    /// The resume's instant (ms), just past the window.
    until_ms: i64,
    /// When the pause returned (ms): a fire before then may have run before it committed.
    paused_by_ms: i64,
    /// What the resume replayed.
    catch_up: CatchUp,
    /// Whether the log tells the window for sure (its replays are then looked for).
    sure: bool,
    /// The schedule in force at the resume (its replays are that schedule's fires), if known.
    schedule: Option<usize>,
}

/// The windows job `j`'s resumes with a catch-up closed (see the module doc).
pub(crate) fn catch_up_windows(w: &Workload, ops: &[&OpRecord], j: usize) -> Vec<Window> {
    let mut sorted: Vec<&OpRecord> = ops
        .iter()
        .copied()
        .filter(|o| matches!(o.kind, OpKind::Pause | OpKind::Resume { .. } | OpKind::Delete))
        .collect();
    sorted.sort_by_key(|o| o.started_ms);
    let mut out: Vec<Window> = Vec::new();
    let (mut paused, mut sure): (Option<&OpRecord>, bool) = (None, true);
    // The window the job recorded last (replayed again by a resume of the enabled job).
    let mut recorded: Option<Window> = None;
    let mut last_ended = i64::MIN;
    for op in sorted {
        if !op.ok || op.started_ms - SLACK_MS <= last_ended + SLACK_MS {
            sure = false;
        }
        last_ended = last_ended.max(op.ended_ms);
        if !op.ok {
            // A resume that failed may have replayed its window all the same.
            if let (OpKind::Resume { catch_up, .. }, Some(p)) = (&op.kind, paused) {
                let win = Window {
                    from_ms: p.started_ms,
                    until_ms: op.ended_ms,
                    paused_by_ms: p.ended_ms,
                    catch_up: *catch_up,
                    sure: false,
                    schedule: None,
                };
                out.extend((*catch_up != CatchUp::None).then_some(win));
            }
            continue;
        }
        match (&op.kind, paused) {
            (OpKind::Pause, None) => paused = Some(op),
            (OpKind::Resume { catch_up, .. }, Some(p)) => {
                let win = Window {
                    from_ms: p.started_ms,
                    until_ms: op.started_ms,
                    paused_by_ms: p.ended_ms,
                    catch_up: *catch_up,
                    sure,
                    schedule: schedule_at(w, ops, j, op.started_ms),
                };
                out.extend((*catch_up != CatchUp::None).then_some(win));
                recorded = Some(win);
                paused = None;
            }
            (OpKind::Resume { catch_up, .. }, None) if *catch_up != CatchUp::None => {
                if let Some(last) = recorded {
                    out.push(Window { catch_up: *catch_up, sure: false, ..last });
                }
            }
            (OpKind::Delete, _) => break,
            _ => {}
        }
    }
    out
}

/// The fires of `win` its catch-up replays: every fire of the window under `all`, the latest
/// under `last`, as the schedule in force at the resume makes them. `None` when that schedule
/// is not known for sure.
fn replays(w: &Workload, win: &Window) -> Option<Vec<i64>> {
    let def = crate::workload::definition(0, 0, win.schedule?, 1, w.start_ms, w.end_ms);
    let sch = Schedule::parse(&def.schedule, ms(w.start_ms)).ok()?;
    let fires: Vec<i64> = sch
        .fires_between(ms(win.from_ms - 1), ms(win.until_ms - 1), 100_000)
        .iter()
        .map(|t| t.timestamp_millis())
        .collect();
    Some(match win.catch_up {
        CatchUp::Last => fires.last().copied().into_iter().collect(),
        _ => fires,
    })
}

/// Whether an effect for the fire at `t` of a job paused at `t` was a catch-up's replay: `t`
/// is in a window whose resume replayed it (any fire of the window when the schedule in force
/// at the resume is not known for sure).
pub(crate) fn replayed_by_catch_up(w: &Workload, wins: &[Window], t: i64) -> bool {
    wins.iter().any(|win| {
        win.from_ms <= t && t < win.until_ms && replays(w, win).is_none_or(|fires| fires.contains(&t))
    })
}

/// The catch-up invariant for job `j` (module doc): each replay of a window told for sure has
/// an execution, and it was not canceled by the pause.
pub(crate) fn check_catch_up(
    ev: &Evidence<'_>,
    wins: &[Window],
    execs: &[Execution],
    out: &mut Vec<Violation>,
) {
    for win in wins.iter().filter(|win| win.sure) {
        let Some(fires) = replays(ev.workload, win) else { continue };
        // A fire before the pause returned may have run before it committed.
        for t in fires.into_iter().filter(|t| *t > win.paused_by_ms + SLACK_MS) {
            let at_t: Vec<&Execution> = execs
                .iter()
                .filter(|e| e.child.is_none() && e.scheduled_at.timestamp_millis() == t)
                .collect();
            let lost = at_t.iter().find(|e| {
                e.status == ExecStatus::Canceled
                    && e.timeline.last().and_then(|x| x.code.as_deref()) == Some(codes::PAUSED)
            });
            let (detail, execution) = match (at_t.is_empty(), lost) {
                (true, _) => ("has no execution".to_string(), None),
                (false, Some(e)) => ("was canceled by the pause".to_string(), Some(e.id())),
                (false, None) => continue,
            };
            out.push(Violation {
                invariant: "catch_up",
                detail: format!(
                    "resume at {} with catchUp {}: the paused window's fire at {} {detail}",
                    ms(win.until_ms),
                    win.catch_up.as_str(),
                    ms(t)
                ),
                execution,
            });
        }
    }
}
