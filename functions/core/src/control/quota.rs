//! Enforcing [`super::Quotas`]: the live-job count, the shortest interval, and the per-minute
//! rates of trigger-now and of executions created through the API. Counters live in the jobs
//! table ([`sundial_store::quota`]); windows are whole UTC minutes, so `Retry-After` is the
//! time to the next one.

use super::{Control, ControlError};
use chrono::{DateTime, Duration, Utc};
use sundial_schedule::Schedule;
use sundial_store::quota;

/// The counter of live jobs.
const JOBS: &str = "jobs";
/// The counter of executions per hour the tenant's live jobs are charged.
const COMMITTED: &str = "committed";
/// How many upcoming fires the execution budget looks at for a job's busiest hour.
const BUDGET_SAMPLE: usize = 200;
/// How many upcoming fires the interval check looks at.
const INTERVAL_SAMPLE: usize = 100;

fn to_next_minute(now: DateTime<Utc>) -> u32 {
    (60 - now.timestamp().rem_euclid(60)) as u32
}

/// Refuses a schedule whose fires come closer than the minimum interval (over its next
/// [`INTERVAL_SAMPLE`] fires).
pub(crate) fn check_interval(
    ctl: &Control,
    schedule: &Schedule,
    now: DateTime<Utc>,
) -> Result<(), ControlError> {
    let min = i64::from(ctl.settings.quotas.min_interval_secs);
    if min <= 1 {
        return Ok(());
    }
    let fires = schedule.preview(now, INTERVAL_SAMPLE);
    if let Some(w) = fires.windows(2).find(|w| w[1] - w[0] < Duration::seconds(min)) {
        return Err(ControlError::invalid(
            "schedule.expression",
            format!(
                "fires {} s apart (at {}); this deployment allows at least {min} s between two fires of a job",
                (w[1] - w[0]).num_seconds(),
                w[0].to_rfc3339()
            ),
        ));
    }
    Ok(())
}

/// The executions per hour `def` makes at its busiest (from its next [`BUDGET_SAMPLE`] fires:
/// the most of them in any hour, or, when they all fall within less than an hour, their rate
/// over the hour), times the executions a fire makes; with the field a refusal names.
pub(crate) fn executions_per_hour(
    def: &sundial_model::JobDefinition,
    schedule: &Schedule,
    now: DateTime<Utc>,
) -> (u64, &'static str) {
    let fires = schedule.preview(now, BUDGET_SAMPLE);
    let hour = Duration::hours(1);
    let peak = match (fires.first(), fires.last()) {
        (Some(first), Some(last)) if *last - *first < hour && fires.len() == BUDGET_SAMPLE => {
            let span_ms = (*last - *first).num_milliseconds().max(1) as u64;
            (BUDGET_SAMPLE as u64 * 3_600_000).div_ceil(span_ms)
        }
        _ => {
            let mut best = 0usize;
            let mut start = 0usize;
            for (end, f) in fires.iter().enumerate() {
                while *f - fires[start] >= hour {
                    start += 1;
                }
                best = best.max(end + 1 - start);
            }
            best as u64
        }
    };
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
