//! What a job's business calendar did to the fires an execution read or list shows: rolled
//! from which instant and why, and which of the schedule's instants it removed before each.
//!
//! Executions do not record it: the answer is computed again, by the schedule code, from the
//! definition version that made the fire (`def_version`) with the calendar versions that
//! version recorded, so it is the calendar the tick used, not today's. Calendar versions are
//! immutable and cached per process ([`crate::schedules::calendars`]); a page costs one GetItem
//! per distinct definition version among its calendar fires (usually one), nothing at all when
//! none of its executions has a business calendar.

use std::collections::HashMap;
use std::sync::Arc;

use super::{Caller, Control, ControlError};
use crate::model::{event::EVENT_CODE, Execution, MANUAL_CODE};
use crate::schedule::{FireOrigin, Schedule};
use crate::schedules::calendars::{ensure, LoadError};
use crate::store::jobs::get_job_version;

/// Skipped instants kept per fire (the count says how many there were).
pub const MAX_SKIPPED_SHOWN: usize = 10;

/// Whether `e` is a fire of its job's schedule: made by the tick or by a backfill (which lists
/// the schedule's fires), not a manual run or an event's (their instant is the request's), and
/// not a child (its parent is the fire).
fn is_schedule_fire(e: &Execution) -> bool {
    let first_code = e.timeline.first().and_then(|ev| ev.code.as_deref());
    e.child.is_none() && !matches!(first_code, Some(MANUAL_CODE) | Some(EVENT_CODE))
}

/// The schedule of version `version` of the caller's job `job_id`, on the calendar chain that
/// version recorded; `None` when the version or a calendar version is no longer stored, or the
/// schedule no longer parses (nothing can be said then, and the read still answers).
async fn schedule_of_version(
    ctl: &Control,
    caller: &Caller,
    job_id: &str,
    version: u64,
) -> Result<Option<Arc<Schedule>>, ControlError> {
    let Some(job) = get_job_version(ctl.ddb(), ctl.cfg(), &caller.tenant, job_id, version).await? else {
        return Ok(None);
    };
    match ensure(ctl.ddb(), &ctl.cfg().jobs_table, &job).await {
        Ok(()) => {}
        Err(LoadError::Store(e)) => return Err(e.into()),
        Err(e @ LoadError::Missing { .. }) => {
            tracing::warn!(job = %job_id, version, error = %e, "a fire's calendar chain cannot be loaded: its roll is not shown");
            return Ok(None);
        }
    }
    Ok(crate::schedules::schedule_of(&job).ok())
}

/// For each of `execs` (the caller's), in order: what the business calendar of the definition
/// version that made it did to its fire, or `None` (no business calendar, not a fire of the
/// schedule, or not computable).
pub async fn explain(
    ctl: &Control,
    caller: &Caller,
    execs: &[Execution],
) -> Result<Vec<Option<FireOrigin>>, ControlError> {
    let mut schedules: HashMap<(&str, u64), Option<Arc<Schedule>>> = HashMap::new();
    let mut out = Vec::with_capacity(execs.len());
    for e in execs {
        if e.definition.schedule.business_calendar.is_none() || !is_schedule_fire(e) {
            out.push(None);
            continue;
        }
        let key = (e.job_id.as_str(), e.def_version);
        let schedule = match schedules.get(&key) {
            Some(s) => s.clone(),
            None => {
                let s = schedule_of_version(ctl, caller, &e.job_id, e.def_version).await?;
                schedules.insert(key, s.clone());
                s
            }
        };
        out.push(schedule.and_then(|s| s.explain_fire(e.scheduled_at, MAX_SKIPPED_SHOWN)));
    }
    Ok(out)
}
