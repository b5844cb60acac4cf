//! The events invariant (see [`check_events`]): an event fire is never lost, doubled or
//! merged with another.

use super::{is_event, is_fire_of, own_fire, Evidence};
use crate::eventlog::{Answer, Attempt};
use crate::processes::OpRecord;
use crate::violation::Violation;
use crate::world::ms;
use std::collections::BTreeMap;
use sundial_model::{ExecStatus, Execution};

/// Whether an event stamped `at` may have been given instant `t`: `at` itself, or a later
/// millisecond within [`sundial_model::event::MAX_EVENT_NUDGE_MS`] (an instant of the schedule,
/// or one another event held, is passed over).
fn nudged_from(at: i64, t: i64) -> bool {
    (at..=at + sundial_model::event::MAX_EVENT_NUDGE_MS).contains(&t)
}

/// The events invariant: an event fire is never lost or doubled.
///
/// - **Lost**: an acknowledged event (`fire` returned Ok, naming an execution) whose execution
///   does not exist at the end, is not final after the quiet period, or was canceled by the
///   event call itself (its actor is the source's) — the caller was told the event was taken
///   and nothing will run it. An execution SUCCEEDED (with its effect: the `effects` invariant),
///   or ended FAILED, DEAD, SKIPPED or CANCELED by the product's decision (a policy, a pause, a
///   delete, a batch, a retry budget: a recorded transition by the worker, tick or operator) is
///   accounted for.
/// - **Doubled**: two acknowledged deliveries of one event (the same key, or a keyless event
///   repeated with its first instant as `at`) naming different executions; a key whose
///   `EVT#{key}` record names another instant than its acknowledgments; an execution made by
///   an event that no delivery of an event can have made (a second execution for a key); with
///   `oncePerPeriod`, an event execution that is not one of the schedule's fires (the period's
///   fire and its event would be two effects).
/// - **Merged**: two events with different keys acknowledged onto one execution, where the job
///   has no `oncePerPeriod` (protocol review N2: the second event is acknowledged and never
///   runs). The workload sends such twins: a keyed event and another key at the same instant.
/// - An event without `oncePerPeriod` is given its own instant: its `at`, or the arrival of a
///   delivery of it, or the first millisecond after it that no scheduled fire and no other event
///   holds (at most `MAX_EVENT_NUDGE_MS` later).
pub fn check_events(ev: &Evidence<'_>, out: &mut Vec<Violation>) {
    let w = ev.workload;
    let mut by_event: BTreeMap<usize, Vec<&Attempt>> = BTreeMap::new();
    for a in ev.events {
        by_event.entry(a.event).or_default().push(a);
    }
    // Per job: the instants some attempt can have made an execution at.
    let mut possible: BTreeMap<usize, Vec<i64>> = BTreeMap::new();
    // Each execution a keyed event of a job without `oncePerPeriod` was acknowledged with.
    let mut keyed_on: BTreeMap<&String, (&String, usize)> = BTreeMap::new();
    for (&i, attempts) in &by_event {
        let plan = &w.events[i];
        let j = plan.job;
        let execs = ev.executions.get(&j).map(Vec::as_slice).unwrap_or_default();
        let slot = possible.entry(j).or_default();
        slot.extend(ev.claims.get(&i));
        for a in attempts {
            slot.push(a.at_ms.unwrap_or(a.started_ms));
        }
        let acks: Vec<(&String, i64)> = attempts
            .iter()
            .filter_map(|a| match &a.answer {
                Answer::Acked { execution, scheduled_ms, .. } => Some((execution, *scheduled_ms)),
                _ => None,
            })
            .collect();
        let Some(&(first, first_ms)) = acks.first() else { continue };
        slot.push(first_ms);
        let once_job = w.jobs[j].def.events.as_ref().is_some_and(|t| t.once_per_period);
        if let (Some(key), false) = (&plan.key, once_job) {
            for (execution, _) in &acks {
                match keyed_on.get(execution) {
                    Some((other, _)) if *other != key => out.push(Violation {
                        invariant: "events",
                        detail: format!("merged: {key} and {other} acknowledged onto one execution"),
                        execution: Some((*execution).clone()),
                    }),
                    _ => {
                        keyed_on.insert(execution, (key, i));
                    }
                }
            }
        }
        let what = |detail: String| Violation { invariant: "events", detail, execution: Some(first.clone()) };
        let name = plan.key.clone().unwrap_or_else(|| format!("keyless event {i}"));
        // With `oncePerPeriod`, a late repeat after an edit of the schedule may fall in another
        // period and be deduplicated onto that period's fire (seed 613 of the full mix with
        // cancels: a keyless event sent again 30 minutes later, after an edit from every 2 to
        // every 5 minutes); only an event that made two executions is doubled.
        let made: std::collections::BTreeSet<&String> = attempts
            .iter()
            .filter_map(|a| match &a.answer {
                Answer::Acked { execution, created: true, .. } => Some(execution),
                _ => None,
            })
            .collect();
        let doubled = if once_job {
            made.iter().find(|x| **x != first).map(|x| (*x, 0))
        } else {
            acks.iter().find(|(x, _)| *x != first).copied()
        };
        if let Some((other, _)) = doubled {
            out.push(what(format!("{name}: acknowledged as {first} and as {other}")));
        }
        if let Some(claimed) = ev.claims.get(&i) {
            // With `oncePerPeriod`, a `fireOnce` batch that stands for the recorded fire is
            // that fire's execution (K14).
            let batch_of = |c: i64| execs.iter().any(|e| e.id() == *first && batch_stands_for(e, c));
            if *claimed != first_ms && !(once_job && batch_of(*claimed)) {
                out.push(what(format!(
                    "{name}: its key records {}, it was acknowledged as {first}",
                    ms(*claimed)
                )));
            }
        }
        let once = w.jobs[j].def.events.as_ref().is_some_and(|t| t.once_per_period);
        if !once && !attempts.iter().any(|a| nudged_from(a.at_ms.unwrap_or(a.started_ms), first_ms)) {
            out.push(what(format!("{name}: given {}, neither its `at` nor an arrival", ms(first_ms))));
        }
        match execs.iter().find(|e| e.id() == *first) {
            None => out.push(what(format!("{name}: lost, its acknowledged execution does not exist"))),
            Some(e) => match lost(e) {
                Some(Lost::OwnCancel) => {
                    out.push(what(format!("{name}: lost, canceled by the event call that made it")))
                }
                Some(Lost::NotFinal(status)) => {
                    out.push(what(format!("{name}: lost, {status:?} at the end")))
                }
                None => {}
            },
        }
    }
    for (j, plan) in w.jobs.iter().enumerate() {
        let Some(trigger) = &plan.def.events else { continue };
        let ops: Vec<&OpRecord> = ev.ops.iter().filter(|o| o.job == j).collect();
        let slot = possible.get(&j).map(Vec::as_slice).unwrap_or_default();
        for e in ev.executions.get(&j).map(Vec::as_slice).unwrap_or_default() {
            if !is_event(e) || e.child.is_some() {
                continue;
            }
            let t = e.scheduled_at.timestamp_millis();
            // With `oncePerPeriod` the instant is the period's fire (checked below), which
            // the key (job, instant) makes one execution however many events reach it.
            if !trigger.once_per_period && !slot.iter().any(|x| nudged_from(*x, t)) {
                out.push(Violation {
                    invariant: "events",
                    detail: "an event execution no delivery of an event can have made".into(),
                    execution: Some(e.id()),
                });
            }
            // A fire of the schedule in force at its instant, or of the definition it was put
            // with: an event placed before an edit that drops its instant keeps its own (the CI
            // ops shape's seed 16003666: placed at 08:04 on the 08:30 fire, edited at 08:19).
            if trigger.once_per_period && !is_fire_of(w, &ops, j, t) && !own_fire(e, w.start_ms, t) {
                out.push(Violation {
                    invariant: "events",
                    detail: format!("oncePerPeriod event execution at {}, not a fire of the schedule", ms(t)),
                    execution: Some(e.id()),
                });
            }
        }
    }
}

/// Whether `e` is a `fireOnce` batch standing for the fire at `t_ms`: in its range, after its
/// own instant, and not excepted.
fn batch_stands_for(e: &Execution, t_ms: i64) -> bool {
    let t = crate::world::ms(t_ms);
    e.missed_range.is_some_and(|(a, b)| a < t && t <= b) && !e.missed_except.contains(&t)
}

/// Why an acknowledged event's execution is lost.
enum Lost {
    /// Not final after the quiet period.
    NotFinal(ExecStatus),
    /// Canceled by the event call that made it (its send failed), then acknowledged to a
    /// repeat: K7 (docs/simulation.md), fixed; a violation like any other loss.
    OwnCancel,
}

/// Why an acknowledged event's execution is lost, if it is (see [`check_events`]).
fn lost(e: &Execution) -> Option<Lost> {
    if !e.status.is_terminal() {
        return Some(Lost::NotFinal(e.status));
    }
    if e.status != ExecStatus::Canceled {
        return None;
    }
    let by = e.timeline.iter().rev().find(|t| t.to == ExecStatus::Canceled).map(|t| t.actor.as_str());
    let own = format!("api:{}", crate::events::PRINCIPAL);
    (by == Some(own.as_str())).then_some(Lost::OwnCancel)
}
