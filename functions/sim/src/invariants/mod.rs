//! The invariants every run is checked against, once faults have stopped and the system is
//! quiet. Each is a promise the docs make:
//!
//! - **fires**: each fire of an enabled job has exactly one execution (a `fireOnce` batch stands
//!   for the instants of its missed range), and no instant is covered twice (two executions, or
//!   two batches whose ranges overlap); `skip` jobs at most once; a scheduled fire runs only at
//!   an instant of the schedule in force at its instant or at its first claim;
//! - **final**: every execution reached a final state, but a fire held by the pause of a job
//!   still paused at the end (it waits READY for the resume, which may replay it);
//! - **effects**: every SUCCEEDED execution applied its effect, each execution at most once
//!   (the ledger is idempotent by execution id; a second batch over the same instants is a
//!   second effect);
//! - **paused**: no effect for a fire whose instant lies in a window where the job was paused or
//!   deleted;
//! - **versions**: an effect ran the definition version in force at its fire's instant;
//! - **quiet**: every shard's watermark reached the present;
//! - **messages**: the messages sent per execution stay bounded;
//! - **alerts**: at most one `FireMissed` report per execution (a transport repeat of the same
//!   report, the same detail and `eventId`, is one);
//! - **dependencies**: a fire of a job with `after` applied its effect only after the upstream
//!   run its period rule names had reached the status it waits for (unless the fire ran past
//!   its dependency deadline under `onDependencyDeadline: run`, as its note says);
//! - **events**: an event fire is never lost or doubled (see [`check_events`]);
//! - **outcomes**: every fire that ended FAILED or DEAD sent its `ExecutionDead` for that
//!   attempt, and every outcome event names an execution that made its transition: a
//!   `ExecutionDead` only for an attempt that ended so (docs/outcomes.md). A repeat of one
//!   `eventId` (a flush whose `PutEvents` answer was lost, then retried) is counted, not a
//!   violation: its id says it is the same event.
//! - **max_runs**: a job with `maxRuns` N created at most N scheduled fires (manual, event and
//!   child executions aside; a `fireOnce` batch is one), its stored count equals the fires it
//!   created (never counted twice, never uncounted), it is `COMPLETED` only with exactly N, and
//!   fires past its N-th are not looked for by **fires** (docs/schedule.md, "A run-count limit").
//! - **cancel**: an operator's cancel is honoured (see [`check_cancels`]);
//! - **timeliness**: a fire nothing makes wait starts soon after its instant unless a fault
//!   covers it (`timeliness.rs`).
//! - **catch_up**: a resume's catch-up replays its paused window (`catch_up.rs`);
//! - **backfill**: an operator's backfill leaves every fire of its range one execution
//!   (`backfill.rs`);
//! - **finish_deadline**: a fire that missed its finish deadline is reported once, one that
//!   made it never (`finish.rs`).
//!
//! Instants next to an operator action (its call under way, or one whose outcome the caller
//! could not know) are checked for safety only (never twice, never paused), not for presence.

use crate::processes::OpRecord;
use crate::violation::Violation;
use crate::workload::{OpKind, Workload};
use crate::world::ms;
use std::collections::BTreeMap;
use sundial_model::event::EVENT_CODE;
use sundial_model::retry::codes;
use sundial_model::{ExecStatus, Execution, JobState, MANUAL_CODE};
use sundial_schedule::{MisfirePolicy, Schedule};

pub use crate::evidence::Evidence;
pub(crate) use backfill::{check_backfills, made_by_backfill};
pub(crate) use catch_up::{catch_up_windows, check_catch_up, replayed_by_catch_up};
pub use events::check_events;
pub use finish::check_finish_deadlines;
pub use timeliness::check_timeliness;

mod backfill;
mod catch_up;
mod events;
mod finish;
mod timeliness;

/// What a job was at an instant, as far as the operator log tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Known {
    Enabled(i64),
    Paused,
    Unknown,
}

/// Slack around an operator call: the change takes effect at the call's `now` but commits
/// later, and queued-ahead fires within it may legitimately go either way.
const SLACK_MS: i64 = 2_000;

fn job_state_at(ops: &[&OpRecord], t: i64, created_ms: i64) -> Known {
    if t <= created_ms + SLACK_MS {
        return Known::Unknown;
    }
    let mut state = Known::Enabled(1);
    let mut version = 1;
    for op in ops {
        let changes = !matches!(op.kind, OpKind::TriggerNow | OpKind::Cancel | OpKind::Backfill { .. });
        if !changes {
            continue;
        }
        if op.started_ms - SLACK_MS <= t && t <= op.ended_ms + SLACK_MS {
            return Known::Unknown;
        }
        if op.ended_ms + SLACK_MS < t {
            if !op.ok {
                // The call failed: whether it applied is unknown from here on.
                state = Known::Unknown;
                continue;
            }
            match op.kind {
                OpKind::Pause | OpKind::Delete => state = Known::Paused,
                OpKind::Resume { .. } => state = Known::Enabled(version),
                OpKind::Edit { .. } => {
                    version = op.version.unwrap_or(version);
                    if let Known::Enabled(_) = state {
                        state = Known::Enabled(version);
                    }
                }
                OpKind::TriggerNow | OpKind::Cancel | OpKind::Backfill { .. } => {}
            }
            if matches!(op.kind, OpKind::Delete) {
                return Known::Paused;
            }
        }
    }
    state
}

fn schedule_at(w: &Workload, ops: &[&OpRecord], job: usize, t: i64) -> Option<usize> {
    let mut s = crate::workload::schedule_index(&w.jobs[job].def.schedule)?;
    for op in ops {
        if let (OpKind::Edit { schedule: Some(n) }, true) = (&op.kind, op.ok) {
            if op.started_ms - SLACK_MS <= t && t <= op.ended_ms + SLACK_MS {
                return None;
            }
            if op.ended_ms + SLACK_MS < t {
                s = *n;
            }
        }
        if let (OpKind::Edit { schedule: Some(_) }, false) = (&op.kind, op.ok) {
            if op.started_ms - SLACK_MS <= t {
                return None;
            }
        }
    }
    Some(s)
}

/// Known gap K2 (docs/simulation.md): copies of a `Replace`-policy fire that waits behind the
/// run it replaces multiply (seed 101: 9 live at once, 111 sent in three minutes).
pub(crate) fn replace_job(ev: &Evidence<'_>, execution: &str) -> bool {
    concurrency_of(ev, execution) == Some(sundial_model::ConcurrencyPolicy::Replace)
}

/// The concurrency policy the workload gave the job of `execution` (a public id).
fn concurrency_of(ev: &Evidence<'_>, execution: &str) -> Option<sundial_model::ConcurrencyPolicy> {
    let job = execution.split('@').next().unwrap_or_default();
    ev.workload.jobs.iter().find(|j| j.job_id == job).map(|j| j.def.concurrency)
}

/// Known gap K17 (docs/simulation.md): a fire retried several times while another worker
/// holds copies of its message back to wait out each attempt's lease keeps about one copy per
/// attempt live (the full mix's seed 244: an ECS fire that never starts, six attempts in two
/// minutes through a network window, 7 live), and each left over when it ends DEAD is copied to
/// the dead-letter queue again. Counted under K17 for a fire with three retries or more.
pub(crate) fn retried_often(ev: &Evidence<'_>, execution: &str) -> bool {
    ev.executions
        .values()
        .flatten()
        .find(|e| e.id() == execution)
        .is_some_and(|e| e.timeline.iter().filter(|t| t.to == ExecStatus::RetryWait).count() >= 3)
}

/// Known gap K18 (docs/simulation.md): the copies of a fire waiting behind a SERIALIZE run
/// fork when a worker's delete of the copy it re-queued fails (a network window): the copy
/// comes back after its visibility timeout and is re-queued again beside its successor (the
/// full mix's seed 1023 with 6 cancels an hour: an event fire waiting 14 minutes, 9 live).
pub(crate) fn serialize_job(ev: &Evidence<'_>, execution: &str) -> bool {
    concurrency_of(ev, execution) == Some(sundial_model::ConcurrencyPolicy::Serialize)
}

/// Known gap K19 (docs/simulation.md): a fire that waits its turn for a resource limit or its
/// tenant's running limit while the reconciler re-sends it (it stays READY past its instant)
/// keeps several chains of wait copies live (the full mix's seed 5003: a job firing every 15 s
/// on a resource of limit 1, 12 copies live, 277 sent). Counted under K19 for a fire of a job
/// that names a resource or whose tenant is capped.
pub(crate) fn waits_on_limits(ev: &Evidence<'_>, execution: &str) -> bool {
    let job = execution.split('@').next().unwrap_or_default();
    ev.workload.jobs.iter().find(|j| j.job_id == job).is_some_and(|j| {
        !j.def.resources.is_empty() || ev.workload.tenant_limit.as_ref().is_some_and(|(t, _)| *t == j.tenant)
    })
}

fn is_manual(e: &Execution) -> bool {
    e.timeline.first().and_then(|ev| ev.code.as_deref()) == Some(MANUAL_CODE)
}

/// Whether an event made `e` (its creation code).
pub(crate) fn is_event(e: &Execution) -> bool {
    e.timeline.first().and_then(|ev| ev.code.as_deref()) == Some(EVENT_CODE)
}

/// When an event took `e`: made it, or moved its start up (`AdvancedByEvent`), if one did (ms).
fn event_taken_ms(e: &Execution) -> Option<i64> {
    if is_event(e) {
        return e.timeline.first().map(|t| t.at);
    }
    e.timeline.iter().find(|t| t.code.as_deref() == Some(codes::ADVANCED_BY_EVENT)).map(|t| t.at)
}

/// The `max_runs` invariant for one job (see the module doc); returns the instant of its last
/// fire when it created all N (presence is not looked for past it).
fn check_max_runs(
    ev: &Evidence<'_>,
    j: usize,
    plan: &crate::workload::JobPlan,
    execs: &[Execution],
    out: &mut Vec<Violation>,
) -> Option<i64> {
    let max = plan.def.max_runs?;
    // Backfills and a resume's catch-up replays are not counted (docs/schedule.md).
    let mut fires: Vec<&Execution> =
        execs.iter().filter(|e| e.is_scheduled_fire() && e.child.is_none()).collect();
    fires.sort_by_key(|e| e.scheduled_at);
    let (state, runs) = ev.final_jobs.get(&j).copied().unwrap_or((None, 0));
    let who = format!("{}/{}", plan.tenant, plan.job_id);
    let n = fires.len() as u64;
    if n > max {
        out.push(Violation {
            invariant: "max_runs",
            detail: format!("{who}: {n} scheduled fires, maxRuns {max}"),
            execution: fires.get(max as usize).map(|e| e.id()),
        });
    }
    if runs != n {
        out.push(Violation {
            invariant: "max_runs",
            detail: format!("{who}: its count says {runs}, it created {n} scheduled fires"),
            execution: None,
        });
    }
    if state == Some(JobState::Completed) && n != max {
        out.push(Violation {
            invariant: "max_runs",
            detail: format!("{who}: COMPLETED after {n} scheduled fires, maxRuns {max}"),
            execution: None,
        });
    }
    (n >= max).then(|| fires.get(max as usize - 1).map(|e| e.scheduled_at.timestamp_millis())).flatten()
}

/// Checks every invariant; an empty list is a clean run.
pub fn check(ev: &Evidence<'_>) -> Vec<Violation> {
    let mut out = Vec::new();
    for (j, plan) in ev.workload.jobs.iter().enumerate() {
        let ops: Vec<&OpRecord> = ev.ops.iter().filter(|o| o.job == j).collect();
        let execs = ev.executions.get(&j).map(Vec::as_slice).unwrap_or_default();
        check_job(ev, j, plan, &ops, execs, &mut out);
    }
    check_dependencies(ev, &mut out);
    check_events(ev, &mut out);
    check_outcomes(ev, &mut out);
    check_cancels(ev, &mut out);
    check_timeliness(ev, &mut out);
    check_finish_deadlines(ev, &mut out);
    for (s, wm) in ev.watermarks.iter().enumerate() {
        let now_min = ev.now_ms.div_euclid(60_000);
        match wm {
            Some(m) if *m >= now_min - 2 => {}
            other => out.push(Violation {
                invariant: "quiet",
                detail: format!("shard {s}: watermark {other:?}, now minute {now_min}"),
                execution: None,
            }),
        }
    }
    for (id, n) in ev.missed_events {
        if *n > 1 {
            out.push(Violation {
                invariant: "alerts",
                detail: format!("{n} distinct FireMissed reports"),
                execution: Some(id.clone()),
            });
        }
    }
    for (id, n) in ev.live {
        if *n > MAX_LIVE_COPIES {
            let sent = ev.messages.get(id).copied().unwrap_or(0);
            let detail = format!("{n} copies live at once ({sent} sent in all)");
            let invariant = if replace_job(ev, id) {
                "known gap K2"
            } else if retried_often(ev, id) {
                "known gap K17"
            } else if serialize_job(ev, id) {
                "known gap K18"
            } else if waits_on_limits(ev, id) {
                "known gap K19"
            } else {
                "messages"
            };
            out.push(Violation { invariant, detail, execution: Some(id.clone()) });
        }
    }
    out
}

/// The dependencies invariant (see the module doc). Instants whose upstream schedule is not
/// known for sure (an edit of the upstream's schedule between the fire's instant and its
/// effect) are left out: the worker maps with the schedule it reads when it looks.
fn check_dependencies(ev: &Evidence<'_>, out: &mut Vec<Violation>) {
    let w = ev.workload;
    for (j, plan) in w.jobs.iter().enumerate() {
        for dep in &plan.def.after {
            let Some(u) = w.jobs.iter().position(|x| x.job_id == dep.job && x.tenant == plan.tenant) else {
                continue;
            };
            let up_ops: Vec<&OpRecord> = ev.ops.iter().filter(|o| o.job == u).collect();
            let ups = ev.executions.get(&u).map(Vec::as_slice).unwrap_or_default();
            for e in ev.executions.get(&j).map(Vec::as_slice).unwrap_or_default() {
                let id = e.id();
                let Some(effect) = ev.effects.get(&id) else { continue };
                let ran_anyway =
                    e.timeline.iter().any(|x| x.code.as_deref() == Some("DependencyDeadlineRun"));
                if is_manual(e) || e.child.is_some() || ran_anyway {
                    continue;
                }
                let t = e.scheduled_at.timestamp_millis();
                let (Some(s), Some(s_then)) =
                    (schedule_at(w, &up_ops, u, t), schedule_at(w, &up_ops, u, effect.at_ms))
                else {
                    continue;
                };
                if s != s_then {
                    continue;
                }
                let def = crate::workload::definition(0, 0, s, 1, w.start_ms, w.end_ms);
                let Ok(sch) = Schedule::parse(&def.schedule, ms(w.start_ms)) else { continue };
                let Some(i) = dep.upstream_instant(e.scheduled_at, &sch) else {
                    out.push(Violation {
                        invariant: "dependencies",
                        detail: format!("ran though {} has no fire for its period", dep.job),
                        execution: Some(id.clone()),
                    });
                    continue;
                };
                let up = ups.iter().find(|x| x.scheduled_at == i && x.child.is_none());
                let met_at = up.and_then(|x| {
                    x.timeline.iter().find(|ev| dep.status.satisfied_by(ev.to)).map(|ev| ev.at)
                });
                // In true time, an upstream that succeeded applied its effect first; its
                // satisfying event's instant is a worker's clock, off by up to the largest skew
                // (and the correction's half second) either way.
                let up_effect = up.and_then(|x| ev.effects.get(&x.id())).map(|u| u.at_ms);
                let effect_first = match (up.map(|x| x.status), up_effect) {
                    (Some(ExecStatus::Succeeded), Some(u)) => u <= effect.at_ms,
                    (Some(ExecStatus::Succeeded), None) => false,
                    _ => true,
                };
                let allowance = 2 * ev.max_skew_ms + 1_000;
                match met_at {
                    Some(at) if effect_first && at <= effect.at_ms + allowance => {}
                    other => out.push(Violation {
                        invariant: "dependencies",
                        detail: format!(
                            "effect at {} but its upstream {}@{} ({:?}, effect at {:?}) was satisfied at {other:?} (worker clock)",
                            ms(effect.at_ms),
                            dep.job,
                            i.timestamp_millis(),
                            up.map(|x| x.status),
                            up_effect.map(ms),
                        ),
                        execution: Some(id.clone()),
                    }),
                }
            }
        }
    }
}

/// Whether `e` is READY and held by a pause, as its timeline tells: its last hold or release
/// note is the hold.
fn held(e: &Execution) -> bool {
    let last = e.timeline.iter().rev().find_map(|ev| {
        ev.code.as_deref().filter(|c| [codes::HELD, codes::UNHELD, codes::CAUGHT_UP].contains(c))
    });
    e.status == ExecStatus::Ready && last == Some(codes::HELD)
}

/// Most copies of one execution's message live at once (in the queues workers receive from;
/// a dead-letter queue's copies are parked, not live): the one in flight, a wait copy or a
/// re-send overlapping it, a verification re-send, and the duplicates SQS itself may keep
/// (at-least-once; the fault windows duplicate up to 10 % of receives). A wait or a re-send
/// that multiplies copies (finding 3) exceeds it. A copy sent by a request whose answer was
/// lost is not counted: the sender's SDK sent it again, a duplicate no sender can avoid on a
/// standard queue (the full mix's seed 244: an ECS fire retried six times through a network
/// window kept 9 copies, most of them such).
pub const MAX_LIVE_COPIES: u64 = 6;

fn check_job(
    ev: &Evidence<'_>,
    j: usize,
    plan: &crate::workload::JobPlan,
    ops: &[&OpRecord],
    execs: &[Execution],
    out: &mut Vec<Violation>,
) {
    let w = ev.workload;
    let mut covered: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    let mut canceled: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    let paused = ev.final_jobs.get(&j).is_some_and(|(s, _)| *s == Some(JobState::Paused));
    let windows = catch_up_windows(w, ops, j);
    check_catch_up(ev, &windows, execs, out);
    check_backfills(w, ops, j, execs, out);
    for e in execs {
        let id = e.id();
        let waits_for_resume = paused && held(e);
        if !e.status.is_terminal() && !waits_for_resume {
            out.push(Violation {
                invariant: "final",
                detail: format!("{:?} at the end", e.status),
                execution: Some(id.clone()),
            });
        }
        if e.status == ExecStatus::Succeeded && e.child.is_none() && !ev.effects.contains_key(&id) {
            out.push(Violation {
                invariant: "effects",
                detail: "SUCCEEDED without its effect".into(),
                execution: Some(id.clone()),
            });
        }
        if is_manual(e) || e.child.is_some() {
            continue;
        }
        let (a, b) = e
            .missed_range
            .map(|(a, b)| (a.timestamp_millis(), b.timestamp_millis()))
            .unwrap_or((e.scheduled_at.timestamp_millis(), e.scheduled_at.timestamp_millis()));
        let s = schedule_at(w, ops, j, a).unwrap_or(0);
        let fires = crate::workload::definition(0, 0, s, 1, w.start_ms, w.end_ms);
        let instants: Vec<i64> = if a == b {
            vec![a]
        } else {
            Schedule::parse(&fires.schedule, ms(w.start_ms))
                .map(|sch| {
                    sch.fires_between(ms(a - 1), ms(b), 100_000)
                        .iter()
                        .map(|t| t.timestamp_millis())
                        .collect()
                })
                .unwrap_or_else(|_| vec![a, b])
        };
        // A batch does not stand for the instants it excepted (each had its own execution).
        let except: Vec<i64> = e.missed_except.iter().map(|t| t.timestamp_millis()).collect();
        for t in instants.into_iter().filter(|t| !except.contains(t)) {
            let ids = covered.entry(t).or_default();
            if e.status == ExecStatus::Canceled {
                canceled.entry(t).or_default().push(id.clone());
            } else {
                ids.push(id.clone());
            }
        }
    }
    // A canceled execution was the fire's one execution (a concurrency policy, a pause at its
    // instant, a superseding edit, a batch covering it), but never counts twice, whichever order
    // the executions are read in.
    for (t, ids) in canceled {
        let here = covered.entry(t).or_default();
        if here.is_empty() {
            here.extend(ids.into_iter().take(1));
        }
    }
    for (t, ids) in &covered {
        if ids.len() > 1 {
            out.push(Violation {
                invariant: "fires",
                detail: format!("instant {} covered {} times: {ids:?}", ms(*t), ids.len()),
                execution: ids.first().cloned(),
            });
        }
    }
    for (id, e) in ev.effects.iter().filter(|(_, e)| e.tenant == plan.tenant && e.job_id == plan.job_id) {
        let exec = execs.iter().find(|x| x.id() == *id);
        if exec.is_some_and(is_manual) {
            continue;
        }
        // A fire an event made or moved up is judged when the event took it, not at its
        // instant (an `at` in the past, or with `oncePerPeriod` the period's fire run early);
        // an edit between the two may amend it, so either version is in force.
        let taken = exec.and_then(event_taken_ms);
        // A fire of the schedule runs only at an instant of the schedule in force then, or at
        // its first claim (an edit that drops a queued-ahead instant supersedes its fire).
        if let Some(x) = exec.filter(|x| taken.is_none() && x.missed_range.is_none() && x.child.is_none()) {
            let claimed = x.timeline.iter().find(|t| t.to == ExecStatus::Running).map(|t| t.at);
            let at_claim = claimed.is_some_and(|c| fire_of_schedule_at(w, ops, j, c, e.scheduled_ms));
            if !is_fire_of(w, ops, j, e.scheduled_ms) && !at_claim {
                out.push(Violation {
                    invariant: "fires",
                    detail: format!("ran at {}, not a fire of the schedule in force", ms(e.scheduled_ms)),
                    execution: Some(id.clone()),
                });
            }
        }
        let judged_ms = taken.unwrap_or(e.scheduled_ms);
        let also = taken.map(|_| job_state_at(ops, e.scheduled_ms, w.start_ms));
        match job_state_at(ops, judged_ms, w.start_ms) {
            // A resume's catch-up replays the fires of its paused window it names.
            Known::Paused if taken.is_none() && replayed_by_catch_up(w, &windows, e.scheduled_ms) => {}
            // An operator's backfill runs its range whatever the job was then.
            Known::Paused | Known::Enabled(_) if exec.is_some_and(|x| made_by_backfill(ops, x)) => {}
            Known::Paused => out.push(Violation {
                invariant: "paused",
                detail: format!("effect for {} while the job was paused or deleted", ms(e.scheduled_ms)),
                execution: Some(id.clone()),
            }),
            Known::Enabled(v) => {
                if let Some(got) = e.version {
                    if got != v && also != Some(Known::Enabled(got)) {
                        out.push(Violation {
                            invariant: "versions",
                            detail: format!(
                                "fire at {} ran version {got}, {v} was in force",
                                ms(e.scheduled_ms)
                            ),
                            execution: Some(id.clone()),
                        });
                    }
                }
            }
            Known::Unknown => {}
        }
    }
    // Presence: every fire of an enabled job, for fireAll and fireOnce jobs, up to its last
    // one under `maxRuns`.
    let last_ms = check_max_runs(ev, j, plan, execs, out);
    if matches!(plan.def.misfire, MisfirePolicy::Skip) {
        return;
    }
    let until = last_ms.unwrap_or(w.end_ms);
    let mut t = w.start_ms;
    while t <= until {
        let Some(s) = schedule_at(w, ops, j, t) else {
            t += 1_000;
            continue;
        };
        let def = crate::workload::definition(0, 0, s, 1, w.start_ms, w.end_ms);
        let Ok(sch) = Schedule::parse(&def.schedule, ms(w.start_ms)) else { return };
        let Some(next) = sch.fires_between(ms(t), ms(w.end_ms), 1).first().map(|d| d.timestamp_millis())
        else {
            return;
        };
        if next > until {
            return;
        }
        t = next;
        if let Known::Enabled(_) = job_state_at(ops, t, w.start_ms) {
            let still = schedule_at(w, ops, j, t) == Some(s);
            if still && !covered.contains_key(&t) {
                out.push(Violation {
                    invariant: "fires",
                    detail: format!("{}/{}: fire at {} has no execution", plan.tenant, plan.job_id, ms(t)),
                    execution: None,
                });
            }
        }
    }
}

/// How long a runner may take to act on a cancel requested while it runs: its next heartbeat
/// (a third of the 30 s lease), with slack. A fault in between (a network window, a stall or
/// kill of a worker) excuses a later end: the flag is then seen at a later heartbeat, or by a
/// takeover's claim.
const CANCEL_HONOURED_MS: i64 = 15_000;

/// The `cancel` invariant: an operator's cancel is honoured. An execution it found READY is
/// CANCELED at once, so it ends CANCELED; one it found running (the cancel flag set for its
/// runner) ends CANCELED, unless it ended otherwise within [`CANCEL_HONOURED_MS`] of the
/// request (its run finished before the runner saw the flag), or a fault came in between.
fn check_cancels(ev: &Evidence<'_>, out: &mut Vec<Violation>) {
    for op in ev.ops {
        let Some((id, running)) = &op.canceled else { continue };
        let execs = ev.executions.get(&op.job).map(Vec::as_slice).unwrap_or_default();
        let Some(e) = execs.iter().find(|e| e.id() == *id) else { continue };
        if e.status == ExecStatus::Canceled {
            continue;
        }
        let ended = e.timeline.iter().find(|t| t.to.is_terminal()).map(|t| t.at);
        let disturbed = |end: i64| ev.disturbed.iter().any(|&(a, b)| a < end && op.started_ms < b);
        let late = ended.is_none_or(|at| at > op.ended_ms + CANCEL_HONOURED_MS && !disturbed(at));
        if !*running || late {
            out.push(Violation {
                invariant: "cancel",
                detail: format!(
                    "canceled at {} ({}), yet {:?} (ended {:?})",
                    ms(op.started_ms),
                    if *running { "running" } else { "queued" },
                    e.status,
                    ended.map(ms)
                ),
                execution: Some(id.clone()),
            });
        }
    }
}

/// Whether `t` is a fire of job `j`'s schedule (as operator edits left it); true when the
/// schedule is not known for sure there.
fn is_fire_of(w: &Workload, ops: &[&OpRecord], j: usize, t: i64) -> bool {
    fire_of_schedule_at(w, ops, j, t, t)
}

/// Whether `t` is a fire of the schedule in force at `at` (true while an edit makes that
/// unknown).
fn fire_of_schedule_at(w: &Workload, ops: &[&OpRecord], j: usize, at: i64, t: i64) -> bool {
    let Some(s) = schedule_at(w, ops, j, at) else { return true };
    let def = crate::workload::definition(0, 0, s, 1, w.start_ms, w.end_ms);
    let Ok(sch) = Schedule::parse(&def.schedule, ms(w.start_ms)) else { return true };
    sch.fires_between(ms(t - 1), ms(t), 1).first().is_some_and(|f| f.timestamp_millis() == t)
}

/// Whether `t` is a fire of the schedule `e` itself was put with.
fn own_fire(e: &Execution, anchor_ms: i64, t: i64) -> bool {
    let Ok(sch) = Schedule::parse(&e.definition.schedule, ms(anchor_ms)) else { return true };
    sch.fires_between(ms(t - 1), ms(t), 1).first().is_some_and(|f| f.timestamp_millis() == t)
}

/// The `outcomes` invariant (module docs).
fn check_outcomes(ev: &Evidence<'_>, out: &mut Vec<Violation>) {
    let mut dead: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    for (kind, id, attempt, _) in ev.outcome_events {
        if kind == "ExecutionDead" {
            dead.entry(id.as_str()).or_default().push(*attempt);
        }
    }
    for e in ev.executions.values().flatten() {
        if e.child.is_some() {
            continue;
        }
        let id = e.id();
        let sent = dead.remove(id.as_str()).unwrap_or_default();
        let failed = matches!(e.status, ExecStatus::Failed | ExecStatus::Dead);
        if failed && !sent.contains(&u64::from(e.attempt)) {
            out.push(Violation {
                invariant: "outcomes",
                detail: format!(
                    "{} at attempt {} but no ExecutionDead for it (sent for {sent:?})",
                    e.status.as_str(),
                    e.attempt
                ),
                execution: Some(id.clone()),
            });
        }
        // A dead attempt later replayed (DEAD → READY) keeps its event; one past the attempts
        // the execution reached is invented.
        if let Some(a) = sent.iter().find(|a| **a > u64::from(e.attempt)) {
            out.push(Violation {
                invariant: "outcomes",
                detail: format!("ExecutionDead for attempt {a}, past the execution's attempt {}", e.attempt),
                execution: Some(id.clone()),
            });
        }
    }
    for (id, attempts) in dead {
        out.push(Violation {
            invariant: "outcomes",
            detail: format!("ExecutionDead for attempts {attempts:?} of an execution that does not exist"),
            execution: Some(id.to_string()),
        });
    }
}
