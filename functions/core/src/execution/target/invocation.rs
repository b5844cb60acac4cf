//! The document every target receives: [`Invocation`], with its [`LogicalTime`] and, for a
//! `fire_once` misfire, its [`MissedRange`].

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sundial_model::Execution;

/// The document every target receives (JSON, camelCase).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Invocation {
    /// `{tenant}:{job}@{scheduled ms}`: use it as the idempotency key of side effects (it is the
    /// same for every attempt and unique across tenants).
    pub execution_id: String,
    /// The claim's fencing token: a protected resource refuses writes with an older one.
    pub fencing_token: u64,
    /// The scheduled instant.
    pub scheduled_at: DateTime<Utc>,
    /// Attempt number (1-based).
    pub attempt: u32,
    /// Tenant.
    pub tenant: String,
    /// Job id.
    pub job_id: String,
    /// The job's parameters (snapshot of the definition version the execution was created with).
    pub params: serde_json::Value,
    /// Reference to large parameters, passed through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params_ref: Option<String>,
    /// For a `fire_once` misfire: the first and last missed fires this run stands for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missed_range: Option<MissedRange>,
    /// A child of a sharded job (`docs/children.md`): the one shard this run owns (0-based).
    /// Process only the items of this shard: the other shards are other children's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard_index: Option<u32>,
    /// A child of a sharded job: how many shards the fire has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard_total: Option<u32>,
    /// A child of a broadcast job: the member this run is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member: Option<String>,
    /// A child: its parent's id (`{tenant}:{job}@{ms}`); `executionId` is the child's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_execution_id: Option<String>,
    /// The fire's logical time, so a handler need not compute it (docs/api.md, "Per-run
    /// parameters and logical time").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logical_time: Option<LogicalTime>,
}

/// The period a fire stands for, in its job's zone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogicalTime {
    /// The job's IANA zone.
    pub timezone: String,
    /// The scheduled instant as a local time with its offset (`2026-03-08T23:30:00-04:00`).
    pub scheduled_local: String,
    /// The local calendar date of the scheduled instant (`2026-03-08`).
    pub local_date: String,
    /// Start of the period: the schedule's last fire at or before the scheduled instant (the
    /// instant itself for a scheduled fire).
    pub period_start: DateTime<Utc>,
    /// End of the period: the schedule's next fire after it; absent when the schedule has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period_end: Option<DateTime<Utc>>,
}

impl LogicalTime {
    /// The logical time of a fire at `at` of a job with `spec` (parsed anchored at `at`: a
    /// rate's period then starts at the instant; business-calendar rolls are not applied, as
    /// the calendar is not read on the worker's path). `None` when the zone or the expression
    /// do not parse (a definition stored before a change of rules).
    pub fn of(spec: &sundial_schedule::ScheduleSpec, at: DateTime<Utc>) -> Option<Self> {
        let tz: chrono_tz::Tz = spec.timezone.parse().ok()?;
        let local = at.with_timezone(&tz);
        let mut plain = spec.clone();
        plain.business_calendar = None;
        let schedule = sundial_schedule::Schedule::parse(&plain, at).ok();
        let period_start = schedule.as_ref().and_then(|s| s.prev_at_or_before(at)).unwrap_or(at);
        Some(LogicalTime {
            timezone: spec.timezone.clone(),
            scheduled_local: local.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true),
            local_date: local.date_naive().to_string(),
            period_start,
            period_end: schedule.as_ref().and_then(|s| s.next_after(period_start)),
        })
    }
}

/// A missed range (inclusive).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MissedRange {
    /// First missed fire.
    pub from: DateTime<Utc>,
    /// Last missed fire.
    pub to: DateTime<Utc>,
    /// Instants of the range this run does not stand for: each ran, or was decided, as a fire of
    /// its own (docs/execution.md, "A batch's first claim"). Left out when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub except: Vec<DateTime<Utc>>,
}

impl Invocation {
    /// The invocation of a claimed execution.
    pub fn of(e: &Execution, token: u64, attempt: u32) -> Self {
        let pos = sundial_model::children::Position::of(e);
        Invocation {
            shard_index: pos.shard_index,
            shard_total: pos.shard_total,
            member: pos.member,
            parent_execution_id: e.child.as_ref().map(|_| {
                sundial_model::keys::global_execution_id(
                    &e.tenant,
                    &e.job_id,
                    e.scheduled_at.timestamp_millis(),
                )
            }),
            logical_time: LogicalTime::of(&e.definition.schedule, e.scheduled_at),
            execution_id: e.global_id(),
            fencing_token: token,
            scheduled_at: e.scheduled_at,
            attempt,
            tenant: e.tenant.clone(),
            job_id: e.job_id.clone(),
            params: e.definition.params.clone(),
            params_ref: e.definition.params_ref.clone(),
            missed_range: e.missed_range.map(|(from, to)| MissedRange {
                from,
                to,
                except: e.missed_except.clone(),
            }),
        }
    }

    /// The JSON body.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sundial_model::Target;

    #[test]
    fn the_invocation_document_is_camel_case_and_omits_empty_options() {
        let inv = Invocation {
            execution_id: "j@1".into(),
            fencing_token: 3,
            scheduled_at: sundial_store::items::ms_to_dt(1_000),
            attempt: 2,
            tenant: "t".into(),
            job_id: "j".into(),
            params: serde_json::json!({"k": 1}),
            params_ref: None,
            missed_range: None,
            shard_index: None,
            shard_total: None,
            member: None,
            parent_execution_id: None,
            logical_time: None,
        };
        let v: serde_json::Value = serde_json::from_str(&inv.to_json()).unwrap_or_default();
        assert_eq!(v["executionId"], "j@1");
        assert_eq!(v["fencingToken"], 3);
        assert_eq!(v["scheduledAt"], "1970-01-01T00:00:01Z");
        assert!(v.get("missedRange").is_none() && v.get("paramsRef").is_none());
    }

    #[test]
    fn jobs_of_two_tenants_with_one_name_and_instant_get_distinct_idempotency_keys() {
        // Issue 13 scenario 11: the id leaves the system as the inbox key, the `Idempotency-Key`
        // header and the FIFO deduplication id, so it must name the tenant.
        let def = sundial_model::JobDefinition::new(
            sundial_schedule::ScheduleSpec::new("rate(1 minute)", "UTC"),
            Target::http("https://x"),
        );
        let cfg = crate::config::Config::local("t-", &["default"], 8);
        let at = sundial_store::items::ms_to_dt(1_764_469_800_000);
        let exec = |tenant: &str| {
            let job = sundial_model::Job::new(&cfg, tenant, "nightly", def.clone(), at)
                .unwrap_or_else(|e| panic!("{e}"));
            let schedule =
                sundial_schedule::Schedule::parse(&def.schedule, at).unwrap_or_else(|e| panic!("{e}"));
            Execution::ready(&job, &schedule, at, None, at, "test")
        };
        let (a, b) = (Invocation::of(&exec("acme"), 1, 1), Invocation::of(&exec("globex"), 1, 1));
        assert_ne!(a.execution_id, b.execution_id, "same id for two tenants");
    }

    #[test]
    fn the_logical_time_names_the_local_instant_and_the_period_across_a_dst_change() {
        let at = |s: &str| {
            DateTime::parse_from_rfc3339(s).map(|t| t.with_timezone(&Utc)).unwrap_or_else(|e| panic!("{e}"))
        };
        let spec = sundial_schedule::ScheduleSpec::new("0 30 23 * * *", "America/New_York");
        // 23:30 on the day New York moves to EDT: 03:30Z the next morning
        let lt = LogicalTime::of(&spec, at("2026-03-09T03:30:00Z")).unwrap_or_else(|| panic!("parses"));
        assert_eq!(lt.scheduled_local, "2026-03-08T23:30:00-04:00");
        assert_eq!(lt.local_date, "2026-03-08");
        assert_eq!(lt.period_start, at("2026-03-09T03:30:00Z"));
        assert_eq!(lt.period_end, Some(at("2026-03-10T03:30:00Z")));
        // the day before, still EST: the period is 23 hours long
        let lt = LogicalTime::of(&spec, at("2026-03-08T04:30:00Z")).unwrap_or_else(|| panic!("parses"));
        assert_eq!(lt.scheduled_local, "2026-03-07T23:30:00-05:00");
        assert_eq!(lt.period_end, Some(at("2026-03-09T03:30:00Z")));
        // a manual run between fires: the period it falls in
        let lt = LogicalTime::of(&spec, at("2026-03-09T12:00:00Z")).unwrap_or_else(|| panic!("parses"));
        assert_eq!(lt.period_start, at("2026-03-09T03:30:00Z"));
    }
}
