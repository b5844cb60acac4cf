//! Parsed schedules kept across ticks: a warm scan Lambda (or the ECS/dev tick loop) parses
//! each job's schedule once per definition, not once per tick.
//!
//! Parsing a cron expression and its zone costs microseconds per job; at 50,000 jobs a minute it
//! was the largest CPU item of the scan after the SDK's own serialisation (`docs/performance.md`).
//! The key is everything the parse depends on: the job, its definition version, its anchor, and
//! the schedule spec itself (so a job deleted and created again with the same id and version 1
//! cannot be served the old schedule). The cache is bounded by bytes ([`weighted`]): each
//! entry weighs an estimate of its memory, one tenant holds at most a quarter of the budget, and
//! the budget is set per function ([`set_byte_budgets`]: the API's 256 MB asks for less than the
//! scan's 512 MB).

pub mod calendars;
pub mod weighted;

pub use calendars::DEFAULT_CALENDAR_BYTES;

use std::sync::{Arc, Mutex, OnceLock};
use sundial_model::Job;
use sundial_schedule::{Schedule, ScheduleError, ScheduleSpec};
use weighted::Weighted;

/// The schedule cache's default budget (bytes): the tick and scan functions'.
pub const DEFAULT_SCHEDULE_BYTES: usize = 64 * 1024 * 1024;
/// What a parsed cron schedule is counted as (its ordinal sets: up to 60 seconds, 60 minutes,
/// 24 hours, 31 days, 12 months, 7 weekdays and 131 years, in B-tree sets).
const CRON_BYTES: usize = 16 * 1024;
/// What a parsed `rate()` or `at()` schedule is counted as.
const SIMPLE_BYTES: usize = 1024;

/// Sets both caches' budgets for this process (the API calls it with smaller ones).
pub fn set_byte_budgets(schedules: usize, calendars: usize) {
    if let Ok(mut c) = cache().lock() {
        c.set_budget(schedules);
    }
    calendars::set_byte_budget(calendars);
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    tenant: String,
    job: String,
    version: u64,
    anchor_ms: i64,
    spec: String,
    /// The business calendar chain (`id@version,...`), empty without one.
    calendars: String,
}

fn key_of(job: &Job) -> Key {
    // The spec's JSON: every field the parse reads, in a stable order.
    let spec = serde_json::to_string::<ScheduleSpec>(&job.definition.schedule).unwrap_or_default();
    Key {
        tenant: job.tenant.clone(),
        job: job.job_id.clone(),
        version: job.version,
        anchor_ms: job.anchor.timestamp_millis(),
        spec,
        calendars: sundial_store::items::encode_calendar_versions(&job.calendar_versions),
    }
}

fn cache() -> &'static Mutex<Weighted<Key, Arc<Schedule>>> {
    static CACHE: OnceLock<Mutex<Weighted<Key, Arc<Schedule>>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(Weighted::new(DEFAULT_SCHEDULE_BYTES)))
}

/// The estimated bytes of a cache entry: its key and the parsed schedule.
fn weight(key: &Key) -> usize {
    let expr = key.spec.as_str();
    let parsed = if expr.contains("\"expression\":\"rate(") || expr.contains("\"expression\":\"at(") {
        SIMPLE_BYTES
    } else {
        CRON_BYTES
    };
    parsed + key.tenant.len() + key.job.len() + key.spec.len() + key.calendars.len() + 64
}

/// The job's parsed schedule, from the cache when this definition was parsed before. Errors are
/// not cached (a job that no longer parses is rare and logged each time). A job with a business
/// calendar needs its chain loaded first ([`calendars::ensure`]); without it this is a
/// [`ScheduleError::BusinessCalendar`].
pub fn schedule_of(job: &Job) -> Result<Arc<Schedule>, ScheduleError> {
    let key = key_of(job);
    if let Some(s) = cache().lock().ok().and_then(|c| c.get(&key)) {
        return Ok(s);
    }
    let business = if job.calendar_versions.is_empty() {
        None
    } else {
        Some(calendars::cached(&job.tenant, &job.calendar_versions).ok_or_else(|| {
            ScheduleError::BusinessCalendar(format!(
                "calendar versions {} are not loaded",
                sundial_store::items::encode_calendar_versions(&job.calendar_versions)
            ))
        })?)
    };
    let parsed = Arc::new(Schedule::parse_with(&job.definition.schedule, job.anchor, business)?);
    if let Ok(mut c) = cache().lock() {
        let bytes = weight(&key);
        c.insert(&job.tenant, key, parsed.clone(), bytes);
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use chrono::{TimeZone, Utc};
    use sundial_model::{JobDefinition, Target};

    fn job(id: &str, expr: &str, at_secs: i64) -> Job {
        let cfg = Config::local("t-", &["default"], 4);
        let def = JobDefinition::new(ScheduleSpec::new(expr, "UTC"), Target::http("https://x"));
        let at = Utc.timestamp_opt(1_800_000_000 + at_secs, 0).single().unwrap_or_default();
        Job::new(&cfg, "t", id, def, at).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_tenant_flooding_the_cache_never_evicts_another_tenants_schedules() {
        // Security review 2026-12 M7: the cache was bounded by its entry count (cleared at
        // 200,000), so one tenant's stream of new definitions emptied it for everyone (and a
        // count says nothing about bytes).
        let cfg = Config::local("t-", &["default"], 4);
        let at = Utc.timestamp_opt(1_800_000_000, 0).single().unwrap_or_default();
        let of = |tenant: &str, id: &str, expr: &str| {
            let def = JobDefinition::new(ScheduleSpec::new(expr, "UTC"), Target::http("https://x"));
            Job::new(&cfg, tenant, id, def, at).unwrap_or_else(|e| panic!("{e}"))
        };
        // GIVEN tenant calm's schedule in the cache
        let calm = of("calm", "nightly", "0 0 2 * * *");
        let first = schedule_of(&calm).unwrap_or_else(|e| panic!("{e}"));
        // WHEN tenant flood parses 200,001 new definitions
        let mut flood = of("flood", "j", "rate(1 minute)");
        for v in 0..200_001u64 {
            flood.version = v + 1;
            schedule_of(&flood).unwrap_or_else(|e| panic!("{e}"));
        }
        // THEN calm's schedule is still the cached one
        let again = schedule_of(&calm).unwrap_or_else(|e| panic!("{e}"));
        assert!(Arc::ptr_eq(&first, &again), "another tenant's flood evicted calm's schedule");
    }

    #[test]
    fn the_same_definition_is_parsed_once_and_a_changed_one_again() {
        let a = job("cache-a", "0 0 9 * * *", 0);
        let first = schedule_of(&a).unwrap_or_else(|e| panic!("{e}"));
        let again = schedule_of(&a).unwrap_or_else(|e| panic!("{e}"));
        assert!(Arc::ptr_eq(&first, &again), "a second read of the same definition is served from the cache");

        // An edit (new version, new spec) is parsed anew.
        let mut edited = a.clone();
        edited.version += 1;
        edited.definition.schedule = ScheduleSpec::new("0 30 9 * * *", "UTC");
        let e = schedule_of(&edited).unwrap_or_else(|e| panic!("{e}"));
        assert!(!Arc::ptr_eq(&first, &e));
        assert_ne!(e.next_after(a.anchor), first.next_after(a.anchor));

        // Deleted and created again with the same id and version, another schedule: not the old one.
        let recreated = job("cache-a", "0 15 * * * *", 0);
        assert_eq!(recreated.version, a.version);
        let r = schedule_of(&recreated).unwrap_or_else(|e| panic!("{e}"));
        assert_ne!(r.next_after(a.anchor), first.next_after(a.anchor));
    }
}
