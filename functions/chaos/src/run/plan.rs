//! The run's plan in time: the chaos job definition, the outage window, the jobs created, and
//! the fires each job should have had.

use super::config::RunConfig;
use super::TENANT;
use crate::effect::HANDLER;
use crate::prng::SplitMix;
use anyhow::Result;
use chrono::{DateTime, Duration as CDuration, Utc};
use std::collections::BTreeMap;
use std::time::Duration;
use sundial_core::config::Config;
use sundial_model::{Job, JobDefinition, RetryPolicy, Target};
use sundial_schedule::{MisfirePolicy, Schedule, ScheduleSpec};
use sundial_store::jobs;

/// The chaos job definition: every `rate` seconds from `start` to `end`, the chaos handler,
/// `fireAll` misfires late past 5 s, generous retries.
pub fn definition(rate: u32, start: DateTime<Utc>, end: DateTime<Utc>, work_ms: u64) -> JobDefinition {
    let mut schedule = ScheduleSpec::new(format!("rate({rate} seconds)"), "UTC");
    schedule.start = Some(start);
    schedule.end = Some(end);
    JobDefinition::new(schedule, Target::in_process(HANDLER))
        .with_params(serde_json::json!({ "workMs": work_ms }))
        .with_misfire(MisfirePolicy::FireAll { cap: sundial_model::MAX_FIRE_ALL_CAP })
        .with_misfire_threshold_secs(5)
        .with_retry(RetryPolicy {
            max_attempts: 6,
            base_delay_secs: 1,
            max_delay_secs: 2,
            max_age_secs: 3_600,
        })
        .with_timeout_secs(20)
}

/// The outage `[start, end)`. A tick queues fires up to the end of the minute containing
/// `now + horizon`, so the outage starts `horizon + 5 s` before a minute boundary (the last tick
/// before it has queued nothing past the boundary) and lasts `length` (at least 5 s past the
/// boundary): fires from the boundary to the outage's end wait for the first tick after it.
/// The boundary is the first one that leaves at least `lead` of normal running before the
/// outage.
pub fn outage_window(
    t0: DateTime<Utc>,
    lead: Duration,
    length: Duration,
    horizon_secs: u32,
) -> (DateTime<Utc>, DateTime<Utc>) {
    let before = CDuration::seconds(i64::from(horizon_secs) + 5);
    let length = CDuration::milliseconds(length.as_millis() as i64).max(before + CDuration::seconds(5));
    let earliest = t0 + CDuration::milliseconds(lead.as_millis() as i64) + before;
    let boundary = sundial_model::keys::minute_start(
        sundial_model::keys::minute_of(earliest - CDuration::milliseconds(1)) + 1,
    );
    (boundary - before, boundary - before + length)
}

/// Every fire each job should have had: `(created, end]` of its schedule.
pub fn expected_fires(jobs: &[Job], end: DateTime<Utc>) -> Result<BTreeMap<String, Vec<i64>>> {
    let mut out = BTreeMap::new();
    for j in jobs {
        let s = Schedule::parse(&j.definition.schedule, j.anchor)?;
        let fires = s.fires_between(j.created_at, end, 1_000_000);
        out.insert(j.job_id.clone(), fires.iter().map(DateTime::timestamp_millis).collect());
    }
    Ok(out)
}

/// The run's plan in time: the first fire, the outage `[start, end)` and the end of firing.
#[derive(Debug, Clone, Copy)]
pub(super) struct Timeline {
    /// The first fire: the next whole second at least 3 s away.
    pub(super) t0: DateTime<Utc>,
    /// The tick outage.
    pub(super) outage: (DateTime<Utc>, DateTime<Utc>),
    /// When firing ends: `firing` after `t0`, at least 10 s past the outage.
    pub(super) end: DateTime<Utc>,
}

impl Timeline {
    pub(super) fn new(rc: &RunConfig, now: DateTime<Utc>) -> Timeline {
        let t0 = DateTime::from_timestamp(now.timestamp() + 3, 0).unwrap_or(now);
        let outage = outage_window(t0, rc.outage_after, rc.outage, rc.horizon_secs);
        let end = (t0 + CDuration::milliseconds(rc.firing.as_millis() as i64))
            .max(outage.1 + CDuration::seconds(10));
        Timeline { t0, outage, end }
    }
}

/// Creates the run's jobs, spread over the seconds of one period so fires arrive evenly, each
/// with a seeded handler work time.
pub(super) async fn create_jobs(
    ddb: &aws_sdk_dynamodb::Client,
    cfg: &Config,
    rc: &RunConfig,
    timeline: &Timeline,
) -> Result<Vec<Job>> {
    let mut rng = SplitMix::new(rc.seed ^ 0x10B5);
    let mut created = Vec::new();
    for i in 0..rc.jobs {
        let start = timeline.t0 + CDuration::seconds(i64::from(i % rc.rate_secs.max(1)));
        let def = definition(rc.rate_secs, start, timeline.end, rng.between(rc.work_ms.0, rc.work_ms.1));
        let job = Job::new(cfg, TENANT, &format!("job-{i:03}"), def, Utc::now())?;
        jobs::put_new_job(ddb, cfg, &job).await?;
        created.push(job);
    }
    Ok(created)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).map(|d| d.with_timezone(&Utc)).unwrap_or_default()
    }

    #[test]
    fn the_outage_starts_a_horizon_before_a_minute_boundary_and_crosses_it() {
        // GIVEN a start at 12:00:31, a 15 s horizon and a 36 s outage
        let (a, b) =
            outage_window(at("2026-12-01T12:00:31Z"), Duration::from_secs(10), Duration::from_secs(36), 15);
        // THEN it starts 20 s before 12:02:00 (12:01:00 leaves less than 10 s of running first)
        assert_eq!((a, b), (at("2026-12-01T12:01:40Z"), at("2026-12-01T12:02:16Z")));
        // AND a start at 12:00:05 uses 12:01:00
        let (a, _) =
            outage_window(at("2026-12-01T12:00:05Z"), Duration::from_secs(10), Duration::from_secs(36), 15);
        assert_eq!(a, at("2026-12-01T12:00:40Z"));
        // AND an outage too short to cross the boundary is lengthened to 5 s past it
        let (a, b) =
            outage_window(at("2026-12-01T12:00:05Z"), Duration::from_secs(10), Duration::from_secs(3), 15);
        assert_eq!(b - a, CDuration::seconds(25));
    }

    #[test]
    fn expected_fires_run_from_the_first_fire_to_the_end_inclusive() {
        let cfg = Config::local("x-", &["default"], 8);
        let t0 = at("2026-12-01T12:00:00Z");
        let def = definition(5, t0, t0 + CDuration::seconds(20), 100);
        let job = Job::new(&cfg, TENANT, "job-000", def, t0 - CDuration::seconds(2))
            .unwrap_or_else(|e| panic!("{e}"));
        let fires = expected_fires(&[job], t0 + CDuration::seconds(20)).unwrap_or_else(|e| panic!("{e}"));
        let t = t0.timestamp_millis();
        assert_eq!(fires["job-000"], vec![t, t + 5_000, t + 10_000, t + 15_000, t + 20_000]);
    }
}
