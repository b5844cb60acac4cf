//! Business calendars through the control plane: put (create or edit, If-Match), get, list,
//! versions, delete; resolving the chain in force for a job; re-planning the jobs that use a
//! calendar after an edit.
//!
//! ## Edit semantics
//! A put writes a new immutable version (and the operations-log entry, `calendar_update`) in one
//! transaction, then *re-plans* every job whose chain includes the calendar: the job gets a new
//! version recording the new chain (`calendarVersions`), its next fire recomputed from `now`
//! with it, an operations-log entry (`update`, detail `calendar {id} v{n}`), and its
//! queued-ahead executions follow the change like after a job edit. Fires before `now` keep
//! the calendar they were computed with. Finding the jobs reads the tenant's job list (one
//! keys-only Query page and one BatchGetItem per 100 jobs): calendar edits are rare, and this
//! keeps job writes free of a reference index. A re-plan that loses a race with a job edit is
//! skipped: the edit resolved the calendar in force itself.
//!
//! A re-plan also charges the job's busiest hour again (`quota::executions_per_hour`). That
//! hour does not depend on the calendar (a calendar only removes fires or moves them to
//! another day at the same local time), but a charge stored before it was computed over the
//! whole cycle may be short. The calendar is stored by then and the job fires by it either
//! way, so an increase is charged even past the tenant's budget (logged), which then refuses
//! the tenant's next creates and busier edits until it is back under; the calendar edit itself
//! is not refused.
//!
//! ## Delete
//! Refused (409 `calendar_in_use`) while a job that is not deleted names the calendar, or
//! another calendar names it as parent. The current item becomes a tombstone; versions stay, so
//! a job's recorded versions stay loadable.

use std::sync::Arc;

use super::page::{self, Page};
use super::{Caller, Control, ControlError};
use crate::trigger::calendars::remember;
use chrono::{DateTime, Utc};
use sundial_model::keys;
use sundial_model::{DueClass, Job, JobState, OpsAction, OpsEntry};
use sundial_schedule::{BusinessCalendarSpec, BusinessDays, MAX_CALENDAR_DEPTH};
use sundial_store::calendars::{self as store, CalendarChangeError, StoredCalendar};
use sundial_store::jobs::{self as job_store, put_job_change, Expect};

/// A calendar change and the jobs it re-planned.
#[derive(Debug, Clone, PartialEq)]
pub struct CalendarView {
    /// The calendar as stored.
    pub calendar: StoredCalendar,
    /// Jobs re-planned with the new version (ids).
    pub replanned: Vec<String>,
    /// Whether the put created the calendar (201) rather than editing it (200).
    pub created: bool,
}

fn valid_id(id: &str) -> Result<(), ControlError> {
    keys::validate_id("calendarId", id).map_err(|e| ControlError::invalid(e.field, e.reason))
}

fn not_found() -> ControlError {
    ControlError::NotFound { what: "calendar" }
}

/// Resolves the chain in force of calendar `id` (current versions, root first). `field` names
/// the request field the id came from, for the 400 when it is missing, deleted, cyclic or too
/// deep.
pub async fn resolve_latest(
    ctl: &Control,
    tenant: &str,
    id: &str,
    field: &str,
) -> Result<Arc<BusinessDays>, ControlError> {
    let mut levels = Vec::new();
    let mut next = Some(id.to_string());
    while let Some(cur) = next.take() {
        if levels.iter().any(|(l, _, _): &(String, u64, _)| *l == cur) {
            return Err(ControlError::invalid(field, format!("calendar {cur:?} is its own ancestor")));
        }
        if levels.len() == MAX_CALENDAR_DEPTH {
            return Err(ControlError::invalid(
                field,
                format!("calendar {id:?} has more than {MAX_CALENDAR_DEPTH} levels of parents"),
            ));
        }
        let cal = store::get_calendar(ctl.ddb(), &ctl.cfg().jobs_table, tenant, &cur)
            .await?
            .filter(|c| !c.deleted)
            .ok_or_else(|| ControlError::invalid(field, format!("no calendar {cur:?}")))?;
        let level = cal.spec.validate().map_err(|e| ControlError::invalid(field, e.to_string()))?;
        next = cal.spec.parent.clone();
        levels.push((cur, cal.version, level));
    }
    levels.reverse();
    let days = BusinessDays::resolve(&levels).map_err(|e| ControlError::invalid(field, e.reason))?;
    let days = Arc::new(days);
    remember(tenant, days.clone());
    Ok(days)
}

/// The business calendar in force for a job definition, if it names one (a 400 on
/// `schedule.businessCalendar.calendar` when that calendar cannot be used).
pub async fn for_definition(
    ctl: &Control,
    tenant: &str,
    def: &sundial_model::JobDefinition,
) -> Result<Option<Arc<BusinessDays>>, ControlError> {
    match &def.schedule.business_calendar {
        None => Ok(None),
        Some(r) => {
            valid_id(&r.calendar).map_err(|_| {
                ControlError::invalid("schedule.businessCalendar.calendar", "not a calendar id")
            })?;
            resolve_latest(ctl, tenant, &r.calendar, "schedule.businessCalendar.calendar").await.map(Some)
        }
    }
}

/// Creates (`expected = None`, or the id was deleted) or edits (`expected` = the version read)
/// the caller's calendar, then re-plans the jobs using it.
pub async fn put(
    ctl: &Control,
    caller: &Caller,
    id: &str,
    expected: Option<u64>,
    spec: BusinessCalendarSpec,
    now: DateTime<Utc>,
) -> Result<CalendarView, ControlError> {
    valid_id(id)?;
    spec.validate().map_err(|e| ControlError::invalid(e.field, e.reason))?;
    let table = &ctl.cfg().jobs_table;
    let cur = store::get_calendar(ctl.ddb(), table, &caller.tenant, id).await?;
    if cur.as_ref().is_some_and(|c| c.deleted) {
        // Like a job id, a deleted calendar's id is not reused: its versions stay in the jobs'
        // history under that name (the fuzzer's use-after-free check found it re-created).
        return Err(ControlError::Conflict {
            code: sundial_model::ErrorCode::CalendarDeleted,
            field: "calendarId",
            message: "the calendar is deleted; its id is not reused: choose another".into(),
        });
    }
    let live = cur.as_ref().filter(|c| !c.deleted);
    check_expected(live, expected)?;
    if let Some(p) = &spec.parent {
        check_parent(ctl, caller, id, p).await?;
    }
    let version = cur.as_ref().map_or(1, |c| c.version + 1);
    let cal = StoredCalendar {
        tenant: caller.tenant.clone(),
        id: id.to_string(),
        version,
        deleted: false,
        spec,
        created_at: live.map_or(now, |c| c.created_at),
        updated_at: now,
    };
    let action = if live.is_some() { OpsAction::CalendarUpdate } else { OpsAction::CalendarCreate };
    let audit =
        OpsEntry::new(caller.actor(), action, id, now).versions(live.map(|c| c.version), Some(version));
    // Absent: create; a tombstone: conditional on its version, like an edit.
    write_calendar(ctl, caller, cur.as_ref().map(|c| c.version), expected, &cal, &audit).await?;
    let replanned = if live.is_some() { replan(ctl, caller, id, now).await? } else { Vec::new() };
    Ok(CalendarView { calendar: cal, replanned, created: live.is_none() })
}

/// The version the caller read against what is stored: an edit must name the current version,
/// a create must not find a live calendar.
fn check_expected(live: Option<&StoredCalendar>, expected: Option<u64>) -> Result<(), ControlError> {
    match (live, expected) {
        (Some(c), Some(v)) if c.version != v => {
            Err(ControlError::VersionConflict { expected: v, current: c.version })
        }
        (None, Some(_)) => Err(not_found()),
        (Some(c), None) => Err(ControlError::Conflict {
            code: sundial_model::ErrorCode::CalendarExists,
            field: "If-Match",
            message: format!(
                "the calendar exists at version {}: send If-Match with its ETag to edit it",
                c.version
            ),
        }),
        _ => Ok(()),
    }
}

/// The parent must exist, and the new chain must be acyclic and short enough.
async fn check_parent(ctl: &Control, caller: &Caller, id: &str, p: &str) -> Result<(), ControlError> {
    if p == id {
        return Err(ControlError::invalid("parent", "a calendar cannot extend itself"));
    }
    let chain = resolve_latest(ctl, &caller.tenant, p, "parent").await?;
    if chain.chain().iter().any(|(l, _)| l == id) {
        return Err(ControlError::invalid("parent", format!("{p:?} extends {id:?}: a cycle")));
    }
    if chain.chain().len() + 1 > MAX_CALENDAR_DEPTH {
        return Err(ControlError::invalid(
            "parent",
            format!("the chain would have more than {MAX_CALENDAR_DEPTH} levels"),
        ));
    }
    Ok(())
}

/// The versioned write of `cal` with its audit entry, conditioned on `condition` (the stored
/// version, live or tombstone; `None`: absent). A lost race answers with the version now stored.
async fn write_calendar(
    ctl: &Control,
    caller: &Caller,
    condition: Option<u64>,
    expected: Option<u64>,
    cal: &StoredCalendar,
    audit: &OpsEntry,
) -> Result<(), ControlError> {
    let table = &ctl.cfg().jobs_table;
    match store::put_calendar(ctl.ddb(), table, condition, cal, audit, ctl.settings.ops_retention_secs).await
    {
        Ok(()) => Ok(()),
        Err(CalendarChangeError::Conflict) => {
            let now_at = store::get_calendar(ctl.ddb(), table, &caller.tenant, &cal.id).await?;
            Err(ControlError::VersionConflict {
                expected: expected.unwrap_or(0),
                current: now_at.map_or(0, |c| c.version),
            })
        }
        Err(CalendarChangeError::Store(e)) => Err(e.into()),
    }
}

/// Every job of the tenant (not deleted), page by page.
async fn all_jobs(ctl: &Control, tenant: &str) -> Result<Vec<Job>, ControlError> {
    let mut out = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let ids = job_store::list_job_ids(ctl.ddb(), ctl.cfg(), tenant, 100, after.as_deref()).await?;
        let mut jobs = job_store::batch_get_jobs(ctl.ddb(), ctl.cfg(), tenant, &ids.items).await?;
        jobs.retain(|j| j.state != JobState::Deleted);
        out.extend(jobs);
        match ids.next {
            Some(n) => after = Some(n),
            None => return Ok(out),
        }
    }
}

/// Re-plans the jobs whose calendar chain includes `id` (see the module doc).
async fn replan(
    ctl: &Control,
    caller: &Caller,
    id: &str,
    now: DateTime<Utc>,
) -> Result<Vec<String>, ControlError> {
    let mut done = Vec::new();
    for cur in all_jobs(ctl, &caller.tenant).await? {
        let Some((mut job, audit)) = replanned(ctl, caller, id, &cur, now).await else { continue };
        // Fires owed before now stay the old calendar's (like an edit's, see `jobs::update`).
        crate::trigger::settle::settle_owed(&ctl.ctx, &cur, now, &caller.actor()).await?;
        crate::trigger::verify::before_leaving(&ctl.ctx, &cur, now).await?;
        // The job is charged its busiest hour again (a charge from before it was computed
        // exactly may be short); the job records what was taken, so a delete gives that back.
        let more = job.committed_per_hour.saturating_sub(cur.committed_per_hour);
        let taken = super::quota::force_committed(ctl, &caller.tenant, &cur.job_id, more).await;
        job.committed_per_hour -= more - taken;
        let retention = ctl.settings.ops_retention_secs;
        let expect = Expect::Version(cur.version);
        let stored = put_job_change(ctl.ddb(), ctl.cfg(), expect, &job, None, &audit, retention).await;
        if stored.is_err() {
            super::quota::give_back_committed(ctl, &caller.tenant, taken).await;
        }
        match stored {
            Ok(()) => {}
            Err(sundial_store::jobs::ChangeError::VersionConflict { .. }) => continue,
            Err(sundial_store::jobs::ChangeError::Exists) => continue,
            Err(sundial_store::jobs::ChangeError::Store(e)) => return Err(e.into()),
        }
        let less = cur.committed_per_hour.saturating_sub(job.committed_per_hour);
        super::quota::give_back_committed(ctl, &caller.tenant, less).await;
        crate::execution::follow::follow_change(&ctl.execs, &job, now, &caller.actor()).await?;
        ctl.after_leaving(&cur, now).await;
        if job.state == JobState::Enabled {
            if let Err(e) = crate::trigger::settle::dispatch_one(&ctl.ctx, &job, now, &caller.actor()).await {
                tracing::warn!(job = %job.job_id, error = %e, "dispatch after calendar re-plan failed; the next tick repeats it");
            }
        }
        done.push(job.job_id);
    }
    Ok(done)
}

/// `cur` re-planned on the calendar chain in force now, with its audit entry; `None` when the
/// job does not use `id`, its chain is unchanged, or the chain or schedule cannot be resolved
/// (logged: the job keeps its versions).
async fn replanned(
    ctl: &Control,
    caller: &Caller,
    id: &str,
    cur: &Job,
    now: DateTime<Utc>,
) -> Option<(Job, OpsEntry)> {
    let r = cur.definition.schedule.business_calendar.as_ref()?;
    if r.calendar != id && !cur.calendar_versions.iter().any(|(l, _)| l == id) {
        return None;
    }
    let days = match resolve_latest(ctl, &caller.tenant, &r.calendar, "schedule.businessCalendar.calendar")
        .await
    {
        Ok(d) => d,
        Err(e) => {
            tracing::warn!(job = %cur.job_id, error = %e, "calendar re-plan: chain not resolvable; job keeps its versions");
            return None;
        }
    };
    if days.chain() == cur.calendar_versions.as_slice() {
        return None;
    }
    let schedule = match sundial_schedule::Schedule::parse_with(
        &cur.definition.schedule,
        cur.anchor,
        Some(days.clone()),
    ) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(job = %cur.job_id, error = %e, "calendar re-plan: schedule refused; job keeps its versions");
            return None;
        }
    };
    let mut job = Job {
        version: cur.version + 1,
        calendar_versions: days.chain().to_vec(),
        updated_at: now,
        replanned_at: Some(now),
        committed_per_hour: super::quota::executions_per_hour(&cur.definition, &schedule, now).0,
        ..cur.clone()
    };
    if job.state == JobState::Enabled {
        job.next_fire_at = schedule.next_after(now);
        job.due_class = DueClass::Admission;
    }
    let mut audit = OpsEntry::new(caller.actor(), OpsAction::Update, &cur.job_id, now)
        .versions(Some(cur.version), Some(job.version));
    audit.detail =
        Some(format!("calendar {id} v{}", days.chain().iter().find(|(l, _)| l == id).map_or(0, |c| c.1)));
    Some((job, audit))
}

/// The caller's calendar (not a deleted one).
pub async fn get(ctl: &Control, caller: &Caller, id: &str) -> Result<StoredCalendar, ControlError> {
    valid_id(id)?;
    store::get_calendar(ctl.ddb(), &ctl.cfg().jobs_table, &caller.tenant, id)
        .await?
        .filter(|c| !c.deleted)
        .ok_or_else(not_found)
}

/// One immutable version of the caller's live calendar. A deleted calendar is gone with its
/// versions (404, like the calendar itself; the fuzzer's use-after-free check): no live job can
/// name it, since a calendar in use cannot be deleted.
pub async fn get_version(
    ctl: &Control,
    caller: &Caller,
    id: &str,
    version: u64,
) -> Result<StoredCalendar, ControlError> {
    get(ctl, caller, id).await?;
    store::get_calendar_version(ctl.ddb(), &ctl.cfg().jobs_table, &caller.tenant, id, version)
        .await?
        .filter(|c| !c.deleted)
        .ok_or(ControlError::NotFound { what: "version" })
}

/// The caller's calendars in id order, one page at a time (deleted ones left out: a page may
/// then hold fewer than `limit` while `next` is set).
pub async fn list(
    ctl: &Control,
    caller: &Caller,
    limit: Option<u32>,
    cursor: Option<&str>,
) -> Result<Page<StoredCalendar>, ControlError> {
    let after = match cursor {
        Some(c) => {
            let id = page::decode("calendars", c)?;
            valid_id(&id)
                .map_err(|_| ControlError::invalid("cursor", "not a cursor returned by this list"))?;
            Some(id)
        }
        None => None,
    };
    let limit = page::limit(limit, ctl.settings.max_page);
    let p = store::list_calendars(ctl.ddb(), &ctl.cfg().jobs_table, &caller.tenant, limit, after.as_deref())
        .await?;
    let next = p.next.map(|id| page::encode("calendars", &id));
    Ok(Page { items: p.items.into_iter().filter(|c| !c.deleted).collect(), next })
}

/// Deletes the caller's calendar unless a job or another calendar uses it.
pub async fn delete(
    ctl: &Control,
    caller: &Caller,
    id: &str,
    expected: Option<u64>,
    now: DateTime<Utc>,
) -> Result<StoredCalendar, ControlError> {
    let cur = get(ctl, caller, id).await?;
    if let Some(v) = expected.filter(|v| *v != cur.version) {
        return Err(ControlError::VersionConflict { expected: v, current: cur.version });
    }
    let users: Vec<String> = all_jobs(ctl, &caller.tenant)
        .await?
        .into_iter()
        .filter(|j| {
            j.definition.schedule.business_calendar.as_ref().is_some_and(|r| r.calendar == id)
                || j.calendar_versions.iter().any(|(l, _)| l == id)
        })
        .map(|j| j.job_id)
        .collect();
    let mut children = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let p =
            store::list_calendars(ctl.ddb(), &ctl.cfg().jobs_table, &caller.tenant, 100, after.as_deref())
                .await?;
        children.extend(
            p.items.into_iter().filter(|c| !c.deleted && c.spec.parent.as_deref() == Some(id)).map(|c| c.id),
        );
        match p.next {
            Some(n) => after = Some(n),
            None => break,
        }
    }
    if !users.is_empty() || !children.is_empty() {
        let shown = |v: &[String]| v.iter().take(10).cloned().collect::<Vec<_>>().join(", ");
        let mut message = String::from("the calendar is in use:");
        if !users.is_empty() {
            message.push_str(&format!(" {} job(s) ({})", users.len(), shown(&users)));
        }
        if !children.is_empty() {
            message.push_str(&format!(" {} calendar(s) extend it ({})", children.len(), shown(&children)));
        }
        return Err(ControlError::Conflict {
            code: sundial_model::ErrorCode::CalendarInUse,
            field: "calendarId",
            message,
        });
    }
    let tomb = StoredCalendar { version: cur.version + 1, deleted: true, updated_at: now, ..cur.clone() };
    let audit = OpsEntry::new(caller.actor(), OpsAction::CalendarDelete, id, now)
        .versions(Some(cur.version), Some(tomb.version));
    match store::put_calendar(
        ctl.ddb(),
        &ctl.cfg().jobs_table,
        Some(cur.version),
        &tomb,
        &audit,
        ctl.settings.ops_retention_secs,
    )
    .await
    {
        Ok(()) => Ok(tomb),
        Err(CalendarChangeError::Conflict) => {
            Err(ControlError::VersionConflict { expected: cur.version, current: cur.version + 1 })
        }
        Err(CalendarChangeError::Store(e)) => Err(e.into()),
    }
}
