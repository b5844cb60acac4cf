//! The tzdb upgrade report (docs/schedule.md, "tz database upgrades"): which of the caller's jobs
//! would fire at other instants under the compiled tz database release than under the release their
//! trigger position was computed with, fire by fire.
//!
//! Each job records its release ([`Job::tzdb_version`]). A job recorded under the compiled
//! release has nothing to compare. For any other, the report needs that release's rules: it
//! looks the version up in [`super::ControlSettings::tzdb_releases`] (TZif data) and runs
//! [`tzdb::compare`] from the job's trigger position on. A job whose release is not there is
//! listed as [`TzStatus::RulesUnavailable`] rather than guessed at. Paused, deleted and
//! exhausted jobs have no position to compare (a resume computes it under the compiled
//! release).

use chrono::{DateTime, Duration, Utc};

use super::page::Page;
use super::{Caller, Control, ControlError};
use sundial_model::{Job, JobState};
use sundial_schedule::tzdb::{self, FireChange, Tzdb};

/// Most fires per job a report compares.
pub const MAX_REPORT_FIRES: usize = 1_000;

/// What the report says of one job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TzStatus {
    /// Some of its next fires differ: see the changes.
    Changed,
    /// It was computed under a release whose rules this deployment cannot read (or that
    /// lacks the job's zone); nothing is known about its fires.
    RulesUnavailable,
}

impl TzStatus {
    /// The API name.
    pub fn as_str(self) -> &'static str {
        match self {
            TzStatus::Changed => "changed",
            TzStatus::RulesUnavailable => "rulesUnavailable",
        }
    }
}

/// One listed job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobTzReport {
    /// The job.
    pub job_id: String,
    /// Its zone.
    pub timezone: String,
    /// The release its trigger position was computed with.
    pub recorded: String,
    /// Changed or unknown.
    pub status: TzStatus,
    /// For `RulesUnavailable`: why.
    pub reason: Option<String>,
    /// The fires that differ, in time order (empty unless `Changed`).
    pub changes: Vec<FireChange>,
}

/// One page of the report: of the `examined` jobs of this page of the caller's job list, those
/// that change or cannot be compared.
#[derive(Debug, Clone)]
pub struct TzReport {
    /// The compiled release the fires are compared with.
    pub compiled: String,
    /// How many fires per job were compared.
    pub fires: usize,
    /// Jobs of this page looked at.
    pub examined: usize,
    /// Jobs listed, with their next page.
    pub page: Page<JobTzReport>,
}

/// The report over one page (`limit`, `cursor`: as the job list) of the caller's jobs,
/// comparing each job's next `fires` fires from its trigger position.
///
/// # Errors
/// `fires` outside 1..=[`MAX_REPORT_FIRES`], a bad cursor, or a store error.
pub async fn report(
    ctl: &Control,
    caller: &Caller,
    fires: usize,
    limit: Option<u32>,
    cursor: Option<&str>,
) -> Result<TzReport, ControlError> {
    if !(1..=MAX_REPORT_FIRES).contains(&fires) {
        return Err(ControlError::invalid("fires", format!("must be between 1 and {MAX_REPORT_FIRES}")));
    }
    let jobs = super::jobs::list(ctl, caller, limit, cursor, false).await?;
    let compiled = Tzdb::compiled();
    let releases = &ctl.settings.tzdb_releases;
    let examined = jobs.items.len();
    let items = jobs.items.iter().filter_map(|j| job_report(j, fires, &compiled, releases)).collect();
    Ok(TzReport {
        compiled: compiled.version().to_string(),
        fires,
        examined,
        page: Page { items, next: jobs.next },
    })
}

/// One job's entry, or `None` when it does not change (or has no position to compare).
pub fn job_report(job: &Job, fires: usize, compiled: &Tzdb, releases: &[Tzdb]) -> Option<JobTzReport> {
    let next = job.next_fire_at.filter(|_| job.state == JobState::Enabled)?;
    if job.tzdb_version == compiled.version() {
        return None;
    }
    let entry = |status, reason, changes| JobTzReport {
        job_id: job.job_id.clone(),
        timezone: job.definition.schedule.timezone.clone(),
        recorded: job.tzdb_version.clone(),
        status,
        reason,
        changes,
    };
    let Some(old) = releases.iter().find(|r| r.version() == job.tzdb_version) else {
        return Some(entry(
            TzStatus::RulesUnavailable,
            Some(format!("this deployment has no rules of tz database {}", job.tzdb_version)),
            Vec::new(),
        ));
    };
    // From the trigger position on: the stored next fire is the first not yet dispatched.
    let after: DateTime<Utc> = next - Duration::nanoseconds(1);
    match tzdb::compare(&job.definition.schedule, job.anchor, after, fires, old, compiled) {
        Ok(changes) if changes.is_empty() => None,
        Ok(changes) => Some(entry(TzStatus::Changed, None, changes)),
        Err(e) => Some(entry(TzStatus::RulesUnavailable, Some(e.to_string()), Vec::new())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use sundial_model::{JobDefinition, Target};
    use sundial_schedule::{Schedule, ScheduleSpec};

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn old() -> Tzdb {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../schedule/tests/fixtures/tzdb-2022a");
        Tzdb::from_zoneinfo("2022a", &dir).unwrap()
    }

    /// A job created at `now` whose position was computed under `db`, as the control plane
    /// stores it.
    fn job(id: &str, expr: &str, zone: &str, now: DateTime<Utc>, db: &Tzdb) -> Job {
        let cfg = Config::local("t-", &["default"], 4);
        let def = JobDefinition::new(ScheduleSpec::new(expr, zone), Target::http("https://x"));
        let mut j = Job::new(&cfg, "t", id, def, now).unwrap();
        let s = Schedule::parse_in(&j.definition.schedule, j.anchor, db, None).unwrap();
        j.next_fire_at = s.next_after(now);
        j.tzdb_version = db.version().to_string();
        j
    }

    #[test]
    fn a_job_recorded_under_an_older_release_lists_its_moved_fires() {
        // GIVEN a Mexico City 09:00 job stored under 2022a on 2023-03-30 (next fire 03-30 15:00Z)
        let (old, compiled) = (old(), Tzdb::compiled());
        let j = job("mx", "0 9 * * *", "America/Mexico_City", at("2023-03-30T12:00:00Z"), &old);
        // WHEN the report compares its next 5 fires
        let r = job_report(&j, 5, &compiled, std::slice::from_ref(&old)).unwrap();
        // THEN 04-02 and 04-03 move from 14:00Z to 15:00Z; 03-30, 03-31 and 04-01 do not
        assert_eq!(r.status, TzStatus::Changed);
        assert_eq!((r.recorded.as_str(), r.timezone.as_str()), ("2022a", "America/Mexico_City"));
        let moved: Vec<_> = r.changes.iter().map(|c| (c.old_at.unwrap(), c.new_at.unwrap())).collect();
        assert_eq!(
            moved,
            vec![
                (at("2023-04-02T14:00:00Z"), at("2023-04-02T15:00:00Z")),
                (at("2023-04-03T14:00:00Z"), at("2023-04-03T15:00:00Z")),
            ]
        );
    }

    #[test]
    fn unchanged_current_paused_and_unknown_jobs() {
        let (old, compiled) = (old(), Tzdb::compiled());
        let now = at("2023-03-30T12:00:00Z");
        let releases = std::slice::from_ref(&old);
        // GIVEN a London job under 2022a, and a Mexico City job under the compiled release
        let london = job("uk", "0 9 * * *", "Europe/London", now, &old);
        let current = job("mx", "0 9 * * *", "America/Mexico_City", now, &compiled);
        // THEN neither is listed
        assert_eq!(job_report(&london, 50, &compiled, releases), None);
        assert_eq!(job_report(&current, 50, &compiled, releases), None);
        // AND a paused job has no position to compare
        let mut paused = job("p", "0 9 * * *", "America/Mexico_City", now, &old);
        paused.state = JobState::Paused;
        assert_eq!(job_report(&paused, 50, &compiled, releases), None);
        // AND a release this deployment cannot read, or a zone it lacks, is said so
        let mx = job("mx", "0 9 * * *", "America/Mexico_City", now, &old);
        let r = job_report(&mx, 5, &compiled, &[]).unwrap();
        assert_eq!(r.status, TzStatus::RulesUnavailable);
        assert_eq!(r.reason.as_deref(), Some("this deployment has no rules of tz database 2022a"));
        let mut kyiv = job("kyiv", "0 9 * * *", "Europe/Kyiv", now, &compiled);
        kyiv.tzdb_version = "2022a".into();
        let r = job_report(&kyiv, 5, &compiled, releases).unwrap();
        assert_eq!(r.status, TzStatus::RulesUnavailable);
        assert_eq!(r.reason.as_deref(), Some("timezone: 'Europe/Kyiv' is not a zone of tz database 2022a"));
    }
}
