//! Enforcing [`super::Quotas`]: the live-job count, the shortest interval, and the per-minute
//! rates of trigger-now and of executions created through the API. Counters live in the jobs
//! table ([`sundial_store::quota`]); windows are whole UTC minutes, so `Retry-After` is the
//! time to the next one.

use super::{Control, ControlError};
use chrono::{DateTime, Utc};
use sundial_schedule::Schedule;
use sundial_store::quota;

/// The counter of live jobs.
const JOBS: &str = "jobs";
/// The counter of executions per hour the tenant's live jobs are charged.
const COMMITTED: &str = "committed";
fn to_next_minute(now: DateTime<Utc>) -> u32 {
    (60 - now.timestamp().rem_euclid(60)) as u32
}

/// Refuses a schedule whose fires can come closer than the minimum interval: the shortest gap
/// of [`Schedule::density`], computed over the schedule's whole cycle (every expression, zone
/// transitions included), never from a sample of its next fires.
pub(crate) fn check_interval(
    ctl: &Control,
    schedule: &Schedule,
    now: DateTime<Utc>,
) -> Result<(), ControlError> {
    interval_refusal(ctl.settings.quotas.min_interval_secs, schedule, now).map_or(Ok(()), Err)
}

/// Why `schedule` breaks a minimum interval of `min` seconds, if it does.
fn interval_refusal(min: u32, schedule: &Schedule, now: DateTime<Utc>) -> Option<ControlError> {
    if min <= 1 {
        return None;
    }
    let gap = schedule.density(now).min_gap_secs.filter(|g| *g < min)?;
    Some(ControlError::invalid(
        "schedule.expression",
        format!(
            "fires as little as {gap} s apart (its closest fires over its whole cycle, every expression and clock change included); this deployment allows at least {min} s between two fires of a job"
        ),
    ))
}

/// The executions per hour `def` makes at its busiest: the most fires of its schedule in any
/// hour over its whole cycle ([`Schedule::density`]: a union's members, a later `start`, a
/// year field, a calendar's rolls and DST all included, no fire sampled), times the
/// executions a fire makes; with the field a refusal names.
pub(crate) fn executions_per_hour(
    def: &sundial_model::JobDefinition,
    schedule: &Schedule,
    now: DateTime<Utc>,
) -> (u64, &'static str) {
    let peak = u64::from(schedule.density(now).peak_per_hour);
    let (per_fire, field) = sundial_model::children::executions_per_fire(def);
    (peak.saturating_mul(per_fire), field)
}

/// Charges `amount` executions per hour to `tenant`'s budget (a create, or an edit that makes
/// a job busier): 429 `quota_exceeded` naming `field` when it does not fit.
pub(crate) async fn take_committed(
    ctl: &Control,
    tenant: &str,
    amount: u64,
    field: &'static str,
) -> Result<(), ControlError> {
    let max = ctl.settings.quotas.executions_per_hour;
    if amount == 0 {
        return Ok(());
    }
    let fits = u32::try_from(amount).ok().filter(|a| *a <= max);
    if let Some(a) = fits {
        if quota::take(ctl.ddb(), &ctl.cfg().jobs_table, tenant, COMMITTED, a, max, None).await? {
            return Ok(());
        }
    }
    Err(ControlError::Limited {
        code: sundial_model::ErrorCode::QuotaExceeded,
        field,
        message: if fits.is_none() {
            format!("this job makes up to {amount} executions an hour (fires × executions per fire); the tenant's budget is {max} an hour")
        } else {
            format!("this job makes up to {amount} executions an hour (fires × executions per fire) and the tenant's jobs already use most of its budget of {max} an hour; delete or slow down jobs, or ask for a larger budget")
        },
        retry_after_secs: 60,
    })
}

/// Charges the increase of a job whose calendar was re-planned: the calendar is stored already
/// and the job fires by it either way, so an increase is taken even past the budget (logged),
/// and the tenant's next creates and edits are refused until it is back under. Returns what
/// was taken, for [`give_back_committed`] if the job write then fails.
pub(crate) async fn force_committed(ctl: &Control, tenant: &str, job: &str, amount: u64) -> u64 {
    let max = ctl.settings.quotas.executions_per_hour;
    let Ok(a) = u32::try_from(amount) else { return 0 };
    if a == 0 {
        return 0;
    }
    // The budget first, so the warning below only speaks of real overruns.
    match quota::take(ctl.ddb(), &ctl.cfg().jobs_table, tenant, COMMITTED, a, max, None).await {
        Ok(true) => return amount,
        Ok(false) => {
            tracing::warn!(tenant, job, amount, max, "calendar re-plan: the job's busiest hour is over the tenant's execution budget; charged anyway")
        }
        Err(e) => {
            tracing::warn!(tenant, job, error = %e, "calendar re-plan: could not charge the execution budget")
        }
    }
    match quota::take(ctl.ddb(), &ctl.cfg().jobs_table, tenant, COMMITTED, a, u32::MAX, None).await {
        Ok(true) => amount,
        _ => 0,
    }
}

/// Gives back what [`take_committed`] took (a delete, an edit that makes a job quieter, or a
/// change that did not happen).
pub(crate) async fn give_back_committed(ctl: &Control, tenant: &str, amount: u64) {
    let Ok(a) = u32::try_from(amount) else { return };
    if a == 0 {
        return;
    }
    if let Err(e) = quota::give_back(ctl.ddb(), &ctl.cfg().jobs_table, tenant, COMMITTED, a).await {
        tracing::warn!(tenant, error = %e, "could not give back execution budget (the count stays high)");
    }
}

/// Takes one live-job slot for `tenant`.
pub(crate) async fn take_job(ctl: &Control, tenant: &str) -> Result<(), ControlError> {
    let max = ctl.settings.quotas.max_jobs;
    if quota::take(ctl.ddb(), &ctl.cfg().jobs_table, tenant, JOBS, 1, max, None).await? {
        return Ok(());
    }
    Err(ControlError::Limited {
        code: sundial_model::ErrorCode::QuotaExceeded,
        field: "jobId",
        message: format!("the tenant has {max} jobs, its quota; delete jobs or ask for a larger quota"),
        retry_after_secs: 60,
    })
}

/// Gives a live-job slot back (a delete, or a create that did not happen).
pub(crate) async fn give_back_job(ctl: &Control, tenant: &str) {
    if let Err(e) = quota::give_back(ctl.ddb(), &ctl.cfg().jobs_table, tenant, JOBS, 1).await {
        tracing::warn!(tenant, error = %e, "could not give back a job quota slot (the count stays one high)");
    }
}

/// Takes `amount` from the tenant's per-minute `kind` rate.
pub(crate) async fn take_rate(
    ctl: &Control,
    tenant: &str,
    kind: &'static str,
    amount: u32,
    now: DateTime<Utc>,
) -> Result<(), ControlError> {
    let q = ctl.settings.quotas;
    let (limit, what) = match kind {
        "trigger" => (q.triggers_per_minute, "trigger-now calls"),
        _ => (q.api_executions_per_minute, "executions created through the API"),
    };
    let minute = now.timestamp().div_euclid(60);
    let counter = format!("{kind}#{minute}");
    let expires = (minute + 2) * 60;
    if quota::take(ctl.ddb(), &ctl.cfg().jobs_table, tenant, &counter, amount, limit, Some(expires)).await? {
        return Ok(());
    }
    Err(ControlError::Limited {
        code: sundial_model::ErrorCode::RateLimited,
        field: if amount > limit { "to" } else { "jobId" },
        message: if amount > limit {
            format!("{amount} {what} in one request; at most {limit} a minute: split the range")
        } else {
            format!("at most {limit} {what} a minute per tenant; retry after the Retry-After seconds")
        },
        retry_after_secs: to_next_minute(now),
    })
}

/// Gives back what [`take_rate`] took for a request that was then refused.
pub(crate) async fn give_back_rate(
    ctl: &Control,
    tenant: &str,
    kind: &'static str,
    amount: u32,
    now: DateTime<Utc>,
) {
    let counter = format!("{kind}#{}", now.timestamp().div_euclid(60));
    if let Err(e) = quota::give_back(ctl.ddb(), &ctl.cfg().jobs_table, tenant, &counter, amount).await {
        tracing::warn!(tenant, error = %e, "could not give back rate tokens");
    }
}

/// Refuses new work for `lane` of `pool` while that lane is saturated (its visible depth at
/// `saturatedDepth`, read at most once per 10 s): 429 `saturated` with `Retry-After`, counted
/// in `SaturatedRefusals` (docs/priority.md).
pub(crate) async fn check_saturation(
    ctl: &Control,
    pool: &str,
    lane: sundial_model::priority::Lane,
    now: DateTime<Utc>,
) -> Result<(), ControlError> {
    let depths = ctl.ctx.queues.depths(pool, now.timestamp_millis()).await;
    sundial_model::priority::creation(lane, &depths, &ctl.settings.backpressure).map_err(|s| {
        crate::metrics::Emf::new(&[("Pool", pool)])
            .count("SaturatedRefusals", 1)
            .emit(now.timestamp_millis());
        ControlError::Limited {
            code: sundial_model::ErrorCode::Saturated,
            field: "pool",
            // Not the depth or the threshold: the lane is shared, so its depth is other tenants'
            // load (issue 28, L1); the metric and the logs have it.
            message: format!(
                "pool {pool:?} is saturated: its {} lane holds more waiting work than this deployment accepts; retry after the Retry-After seconds",
                s.lane.as_str()
            ),
            retry_after_secs: s.retry_after_secs,
        }
    })
}

#[cfg(test)]
mod tests {
    //! The execution budget of schedules whose busiest hour is not among their next fires
    //! (security review 2026-12-06, N5): each must be charged its densest hour.

    use super::{executions_per_hour, interval_refusal};
    use chrono::{DateTime, Utc};
    use std::sync::Arc;
    use sundial_model::{JobDefinition, Target};
    use sundial_schedule::{BusinessCalendarRef, BusinessCalendarSpec, BusinessDays, Roll, Schedule};

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).map(|d| d.with_timezone(&Utc)).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    /// A job of 100 shards (101 executions a fire) on the schedule `spec` (JSON).
    fn sharded(spec: serde_json::Value) -> JobDefinition {
        let spec = serde_json::from_value(spec).unwrap_or_else(|e| panic!("{e}"));
        let mut def = JobDefinition::new(spec, Target::http("https://example.com/run"));
        def.shards = Some(100);
        def
    }

    /// Every second of a busy hour, 101 executions each.
    const DENSE: u64 = 3_600 * 101;

    #[test]
    fn a_union_dense_on_sundays_is_charged_its_sunday_hour_on_a_monday() {
        // GIVEN the review's spec: every minute, and every second on Sundays.
        let def = sharded(serde_json::json!({
            "expression": "0 * * * * *", "expressions": ["* * * * * SUN"], "timezone": "UTC"
        }));
        let monday = at("2026-03-02T00:00:00Z");
        let schedule = Schedule::parse(&def.schedule, monday).unwrap_or_else(|e| panic!("{e}"));
        // WHEN it is charged on a Monday
        let (charged, field) = executions_per_hour(&def, &schedule, monday);
        // THEN its Sunday hour counts: 3,600 fires of 101 executions.
        assert!(charged >= DENSE, "charged {charged} executions an hour, expected at least {DENSE}");
        assert_eq!(field, "shards");
    }

    #[test]
    fn a_dense_member_that_starts_later_is_charged_now() {
        // GIVEN an hourly job whose second expression fires every second from 2027 on, with a
        // start after now.
        let def = sharded(serde_json::json!({
            "expression": "0 0 * * * *", "expressions": ["* * * * * * 2027"], "timezone": "UTC",
            "start": "2026-06-01T00:00:00Z"
        }));
        let now = at("2026-03-02T00:00:00Z");
        let schedule = Schedule::parse(&def.schedule, now).unwrap_or_else(|e| panic!("{e}"));
        let (charged, _) = executions_per_hour(&def, &schedule, now);
        assert!(charged >= DENSE, "charged {charged} executions an hour, expected at least {DENSE}");
    }

    #[test]
    fn fires_a_calendar_rolls_onto_another_day_are_charged() {
        // GIVEN every minute, and every second from 09:00 on Saturdays, on a calendar whose
        // weekends are rest days and whose fires roll to the next business day: the Saturday
        // hour fires on Mondays.
        let days =
            BusinessCalendarSpec { rest_days: Some(vec!["sat".into(), "sun".into()]), ..Default::default() };
        let days = Arc::new(BusinessDays::single("cal", 1, &days).unwrap_or_else(|e| panic!("{e}")));
        let mut def = sharded(serde_json::json!({
            "expression": "0 * * * * *", "expressions": ["* * 9 * * SAT"], "timezone": "UTC"
        }));
        def.schedule.business_calendar =
            Some(BusinessCalendarRef { calendar: "cal".into(), roll: Roll::Following });
        let tuesday = at("2026-03-03T00:00:00Z");
        let schedule =
            Schedule::parse_with(&def.schedule, tuesday, Some(days)).unwrap_or_else(|e| panic!("{e}"));
        // WHEN it is charged on a Tuesday
        let (charged, _) = executions_per_hour(&def, &schedule, tuesday);
        // THEN Monday's rolled hour counts.
        assert!(charged >= DENSE, "charged {charged} executions an hour, expected at least {DENSE}");
    }

    #[test]
    fn the_minimum_interval_is_checked_over_the_whole_cycle() {
        let monday = at("2026-03-02T00:00:00Z");
        let parse = |spec: serde_json::Value| {
            let spec = serde_json::from_value(spec).unwrap_or_else(|e| panic!("{e}"));
            Schedule::parse(&spec, monday).unwrap_or_else(|e| panic!("{e}"))
        };
        // GIVEN a deployment that allows fires 60 s apart at the closest
        let every_minute = parse(serde_json::json!({"expression": "0 * * * * *", "timezone": "UTC"}));
        assert!(interval_refusal(60, &every_minute, monday).is_none());
        // WHEN the review's union is submitted on a Monday THEN its Sunday seconds are refused.
        let review = parse(serde_json::json!({
            "expression": "0 * * * * *", "expressions": ["* * * * * SUN"], "timezone": "UTC"
        }));
        let refused = interval_refusal(60, &review, monday).map(|e| e.to_string()).unwrap_or_default();
        assert!(refused.contains("1 s apart"), "{refused}");
    }
}
