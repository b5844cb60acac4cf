//! What the schedule did to the fires an execution read or list shows: what its business
//! calendar did (rolled from which instant and why, and which of the schedule's instants it
//! removed before each), and which of its several expressions made the fire.
//!
//! Executions do not record either: the answer is computed again, by the schedule code, from
//! the definition version that made the fire (`def_version`) with the calendar versions that
//! version recorded, so it is the calendar and the expressions the tick used, not today's.
//! (The expression is a pure function of that version and the instant, so a stored copy could
//! only disagree with it.) Calendar versions are immutable and cached per process
//! ([`crate::schedules::calendars`]); a page costs one GetItem per distinct definition version
//! among its calendar or multi-expression fires (usually one), nothing at all when none of its
//! executions has either.

use std::collections::HashMap;
use std::sync::Arc;

use super::{Caller, Control, ControlError};
use crate::schedules::calendars::{ensure, LoadError};
use sundial_model::{event::EVENT_CODE, Execution, MANUAL_CODE};
use sundial_schedule::{FireOrigin, Schedule};
use sundial_store::jobs::get_job_version;

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

/// What the schedule of the definition version that made one fire says about it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FireFacts {
    /// What the business calendar did to it (`None`: no business calendar).
    pub calendar: Option<FireOrigin>,
    /// Which expression made it: 0 for `expression`, i + 1 for `expressions[i]` (`None`: a
    /// schedule of one expression).
    pub expression: Option<usize>,
}

/// For each of `execs` (the caller's), in order: what the business calendar of the definition
/// version that made it did to its fire, and which of that version's expressions made it; all
/// `None` for what does not apply (not a fire of the schedule, one expression, no business
/// calendar) or is not computable.
pub async fn explain(
    ctl: &Control,
    caller: &Caller,
    execs: &[Execution],
) -> Result<Vec<FireFacts>, ControlError> {
    let mut schedules: HashMap<(&str, u64), Option<Arc<Schedule>>> = HashMap::new();
    let mut out = Vec::with_capacity(execs.len());
    for e in execs {
        let spec = &e.definition.schedule;
        if (spec.business_calendar.is_none() && spec.expressions.is_empty()) || !is_schedule_fire(e) {
            out.push(FireFacts::default());
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
        out.push(match schedule {
            None => FireFacts::default(),
            Some(s) => FireFacts {
                calendar: s.explain_fire(e.scheduled_at, MAX_SKIPPED_SHOWN),
                expression: s.expression_of(e.scheduled_at).filter(|_| s.expression_count() > 1),
            },
        });
    }
    Ok(out)
}
