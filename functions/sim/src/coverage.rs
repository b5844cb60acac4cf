//! What a run drew, against the features the product has (docs/simulation.md, "Coverage"):
//! each run prints a `coverage:` line, and `tests/sim.rs` fails when an item the simulator can
//! draw was never drawn by CI's seeds. Items the simulator cannot draw yet are listed as such
//! on every line, so a gap is in plain sight rather than silently passed.

use crate::faults::FaultPlan;
use crate::workload::{OpKind, Workload};
use std::collections::BTreeSet;
use sundial_core::control::catch_up::CatchUp;
use sundial_model::{ConcurrencyPolicy, Target};
use sundial_schedule::MisfirePolicy;

/// Every item the simulator draws: what a run can exercise.
pub const DRAWABLE: &[&str] = &[
    "target:in-process",
    "target:step-functions",
    "target:ecs",
    "concurrency:allow",
    "concurrency:forbid",
    "concurrency:serialize",
    "concurrency:replace",
    "misfire:fire-all",
    "misfire:fire-once",
    "misfire:skip",
    "start-deadline",
    "outcome-events",
    "max-runs",
    "dependencies",
    "events:keyed",
    "events:keyless",
    "events:once-per-period",
    "slow-runs",
    "checkpoints",
    "resource-limits",
    "tenant-limits",
    "op:pause",
    "op:resume",
    "op:edit",
    "op:edit-schedule",
    "op:delete",
    "op:trigger-now",
    "op:cancel",
    "resume-catch-up",
    "backfill",
    "several-expressions",
    "finish-deadlines",
    "fault:tick-outage",
    "fault:reconciler-outage",
    "fault:network",
    "fault:tick-throttle",
    "fault:hot-bucket",
    "fault:index-lag",
    "fault:worker-kill",
    "fault:worker-stall",
    "fault:clock-skew",
];

/// Features of the product the simulator does not draw yet (issue 50's list): each still
/// needs its workload, faults and invariant.
pub const NOT_YET: &[&str] = &[
    "map-reduce",
    "shards",
    "broadcast",
    "calendars",
    "priorities",
    "cells",
    "target:http",
    "target:lambda",
    "target:sns",
    "dlq-replay",
    "ingest-sources",
    "auto-pause",
    "outcome-notifications",
    "fault:list-tasks-ageing",
    "fault:lambda-throttles",
    "tick-fan-out",
];

/// The items of [`DRAWABLE`] that `w` and `plan` drew.
pub fn drawn(w: &Workload, plan: &FaultPlan) -> BTreeSet<&'static str> {
    let mut d = BTreeSet::new();
    for j in &w.jobs {
        let def = &j.def;
        d.insert(match def.target {
            Target::StepFunctions(_) => "target:step-functions",
            Target::Ecs(_) => "target:ecs",
            _ => "target:in-process",
        });
        d.insert(match def.concurrency {
            ConcurrencyPolicy::Allow => "concurrency:allow",
            ConcurrencyPolicy::Forbid => "concurrency:forbid",
            ConcurrencyPolicy::Serialize => "concurrency:serialize",
            ConcurrencyPolicy::Replace => "concurrency:replace",
        });
        d.insert(match def.misfire {
            MisfirePolicy::FireAll { .. } => "misfire:fire-all",
            MisfirePolicy::FireOnce => "misfire:fire-once",
            MisfirePolicy::Skip => "misfire:skip",
        });
        let flags = [
            (def.start_deadline_secs.is_some(), "start-deadline"),
            (def.outcome_events.is_some(), "outcome-events"),
            (def.max_runs.is_some(), "max-runs"),
            (def.finish_deadline_secs.is_some(), "finish-deadlines"),
            (!def.after.is_empty(), "dependencies"),
            (def.events.as_ref().is_some_and(|e| e.once_per_period), "events:once-per-period"),
            (def.params.get("workMs").is_some(), "slow-runs"),
            (def.params.get("checkpointEveryMs").is_some(), "checkpoints"),
            (!def.resources.is_empty(), "resource-limits"),
            (!def.schedule.expressions.is_empty(), "several-expressions"),
        ];
        d.extend(flags.into_iter().filter(|(on, _)| *on).map(|(_, name)| name));
    }
    if w.tenant_limit.is_some() {
        d.insert("tenant-limits");
    }
    for e in &w.events {
        d.insert(if e.key.is_some() { "events:keyed" } else { "events:keyless" });
    }
    for op in &w.ops {
        if matches!(op.kind, OpKind::Resume { catch_up, .. } if catch_up != CatchUp::None) {
            d.insert("resume-catch-up");
        }
        d.insert(match op.kind {
            OpKind::Pause => "op:pause",
            OpKind::Resume { .. } => "op:resume",
            OpKind::Edit { schedule: Some(_) } => "op:edit-schedule",
            OpKind::Edit { schedule: None } => "op:edit",
            OpKind::Delete => "op:delete",
            OpKind::TriggerNow => "op:trigger-now",
            OpKind::Cancel => "op:cancel",
            OpKind::Backfill { .. } => "backfill",
        });
    }
    let faults = [
        (!plan.tick_outages.is_empty(), "fault:tick-outage"),
        (!plan.reconciler_outages.is_empty(), "fault:reconciler-outage"),
        (plan.net.iter().any(|w| w.faults.only_process.is_none()), "fault:network"),
        (
            plan.net.iter().any(|w| {
                w.faults.only_process.as_deref() == Some(crate::faults::TICK_PROCESS)
                    && w.faults.throttle_matching.is_none()
            }),
            "fault:tick-throttle",
        ),
        (plan.net.iter().any(|w| w.faults.throttle_matching.is_some()), "fault:hot-bucket"),
        (plan.net.iter().any(|w| w.faults.gsi_lag_ms > 0), "fault:index-lag"),
        (!plan.kills.is_empty(), "fault:worker-kill"),
        (!plan.stalls.is_empty(), "fault:worker-stall"),
        (plan.skews.iter().any(|s| *s != 0), "fault:clock-skew"),
    ];
    d.extend(faults.into_iter().filter(|(on, _)| *on).map(|(_, name)| name));
    d
}

/// The `coverage:` line of a run.
pub fn line(drawn: &BTreeSet<&'static str>) -> String {
    let missed: Vec<&str> = DRAWABLE.iter().copied().filter(|i| !drawn.contains(i)).collect();
    format!(
        "coverage: {} of {} drawable items drawn (not this run: {}); not drawable yet: {}\n",
        DRAWABLE.iter().filter(|i| drawn.contains(*i)).count(),
        DRAWABLE.len(),
        if missed.is_empty() { "none".to_string() } else { missed.join(", ") },
        NOT_YET.join(", ")
    )
}
