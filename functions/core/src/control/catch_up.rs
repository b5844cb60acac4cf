//! Resume with catch-up (`POST /v1/jobs/{jobId}/resume` `{"catchUp": "all" | "last"}`): the
//! fires a pause skipped, replayed in the same call as the resume, paced like a backfill.
//!
//! The paused window is `[paused at, resumed at)` as the job records it (`Job::paused`). Its fires
//! are the job's schedule's (zone, DST policy, business calendar) between those instants; the
//! tick never made them. `all` creates each (at most `max_backfill`), `last` only the latest, the
//! one a "fire once on resume" misfire policy would run. Each is a backfilled execution (code
//! `backfill`, the current definition, started `paceSecs` apart from now), so the age and
//! retention limits of a backfill apply, and are checked **before** the resume: a refusal (400
//! on `catchUp` or `paceSecs`) leaves the job paused and nothing written.
//!
//! The fires the tick queued ahead of the pause (about a minute's) have executions already,
//! held by the pause: their workers leave them READY while it lasts. An instant the catch-up
//! replays takes its held execution over (released, noted `CaughtUp`, paced like the others,
//! counted `released`; `follow::replays`); once the catch-up is done, the held fires of
//! instants it did not replay (all of them without a catch-up) are canceled (`Paused`,
//! `follow::close_window`) and listed with the resume's canceled executions. A fire an older
//! worker already canceled (`Paused`) stays so: a final execution is never re-armed.
//!
//! The resume commits first, the catch-up second. If the catch-up then fails (throttled, the
//! pool saturated, a store error), the job stays resumed and the error is the answer; the same
//! call again finds the job enabled with the same recorded window and creates (or takes over)
//! what is missing: executions are keyed by instant, so nothing runs twice.

use super::executions::{self, BackfillReport, BackfillRequest};
use super::jobs::{self, JobView};
use super::{Caller, Control, ControlError};
use crate::execution::follow;
use chrono::{DateTime, Duration, Utc};
use sundial_model::JobState;

/// What a resume replays of the paused window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CatchUp {
    /// Nothing: the job fires again from its next instant (the default).
    #[default]
    None,
    /// Every fire of the paused window.
    All,
    /// The latest fire of the paused window only.
    Last,
}

impl CatchUp {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            CatchUp::None => "none",
            CatchUp::All => "all",
            CatchUp::Last => "last",
        }
    }

    /// The value of a wire name.
    pub fn parse(s: &str) -> Option<Self> {
        [CatchUp::None, CatchUp::All, CatchUp::Last].into_iter().find(|c| c.as_str() == s)
    }
}

/// Resumes the caller's job and replays what `catch_up` asks of its paused window, `pace_secs`
/// apart, then cancels the held fires of the window it did not replay (see the module doc).
/// Without catch-up it is [`jobs::set_state`] to enabled.
pub async fn resume(
    ctl: &Control,
    caller: &Caller,
    job_id: &str,
    expected: Option<u64>,
    catch_up: CatchUp,
    pace_secs: u32,
    now: DateTime<Utc>,
) -> Result<(JobView, Option<BackfillReport>), ControlError> {
    if catch_up == CatchUp::None {
        return Ok((jobs::set_state(ctl, caller, job_id, JobState::Enabled, expected, now).await?, None));
    }
    let cur = ctl.job(caller, job_id).await?;
    let (from, until) = match (cur.state, cur.paused) {
        (JobState::Paused, Some((from, None))) => (from, now),
        // Resumed already (a retry of this call): the window the job recorded.
        (JobState::Enabled, Some((from, Some(until)))) => (from, until),
        _ => {
            return Err(ControlError::invalid(
                "catchUp",
                "the job has no paused window to catch up: it is not paused and was never resumed",
            ))
        }
    };
    let schedule = executions::runnable_job(&cur)?;
    let max = ctl.settings.max_backfill;
    // [from, until): a fire at the resume instant is the schedule's own.
    let mut fires =
        schedule.fires_between(from - Duration::milliseconds(1), until - Duration::milliseconds(1), max + 1);
    if catch_up == CatchUp::All && fires.len() > max {
        return Err(ControlError::invalid(
            "catchUp",
            format!("the paused window has more than {max} fires: resume with catchUp last, or backfill it in parts"),
        ));
    }
    if catch_up == CatchUp::Last {
        fires = fires.last().copied().into_iter().collect();
    }
    let (Some(first), Some(last)) = (fires.first().copied(), fires.last().copied()) else {
        let view = jobs::set_state(ctl, caller, job_id, JobState::Enabled, expected, now).await?;
        return Ok((view, Some(BackfillReport::default())));
    };
    let req = BackfillRequest { from: first, to: last, pace_secs, params: None };
    // The backfill's own checks, before anything is written, naming this request's fields.
    let as_catch_up = |e: ControlError| match e {
        ControlError::Invalid(v) if v.field == "from" || v.field == "to" => ControlError::invalid(
            "catchUp",
            format!("the paused window cannot be replayed as a backfill: {}", v.reason),
        ),
        other => other,
    };
    executions::check_backfill_range(&req, now).map_err(as_catch_up)?;
    let pace = Duration::seconds(i64::from(pace_secs));
    executions::check_backfill_age(&cur, &fires, |i| now + pace * (i as i32)).map_err(as_catch_up)?;
    // The fires the pause held through their instants stay as they are until the backfill has
    // taken over the ones it replays.
    let view =
        jobs::change_state(ctl, caller, &caller.actor(), job_id, JobState::Enabled, expected, now).await?;
    let report = executions::backfill(ctl, caller, job_id, &req, now).await?;
    Ok((close_window(ctl, caller, view, &fires, now).await?, Some(report)))
}

/// `view` (the resumed job) with the held fires of its last pause window that `replayed` (the
/// instants its catch-up ran) leaves out canceled (`Paused`), listed among its canceled
/// executions.
async fn close_window(
    ctl: &Control,
    caller: &Caller,
    mut view: JobView,
    replayed: &[DateTime<Utc>],
    now: DateTime<Utc>,
) -> Result<JobView, ControlError> {
    let canceled = follow::close_window(&ctl.execs, &view.job, replayed, now, &caller.actor()).await?;
    view.canceled.extend(canceled);
    Ok(view)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catch_up_names_round_trip() {
        for c in [CatchUp::None, CatchUp::All, CatchUp::Last] {
            assert_eq!(CatchUp::parse(c.as_str()), Some(c));
        }
        assert_eq!(CatchUp::parse("some"), None);
    }
}
