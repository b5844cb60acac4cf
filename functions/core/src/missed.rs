//! Start deadlines: a fire not started by its job's `startDeadlineSecs` is reported once.
//!
//! Who notices: the reconciler, which looks at every open execution with a pending deadline at
//! that deadline (the `open_due` of such an execution is never later than it, see
//! [`super::rules::first_look`]), and a worker that claims an execution after its deadline
//! (the reconciler may not have run yet, or lost the race to the claim). Both first make the
//! same kind of conditional write on the execution item: set `ms` (missed at) only if it is
//! absent, and append a `StartDeadlineMissed` note to the timeline. Whoever wins that write
//! reports the miss; the loser (a second reconciler, a worker after the reconciler, a retried
//! Lambda) finds `ms` set and reports nothing. So there is exactly one report per fire:
//!
//! 1. an operations-log entry (`fire_missed`, actor `reconciler:<request>` or `worker:<id>`),
//! 2. a `FireMissed` event on the stack's EventBridge bus ([`FireMissed`] is its `detail`),
//! 3. one count of `FiresMissed` (dimension `Pool` only: no metric per job; rules on the bus
//!    filter on `detail.jobId` to alert on one job).
//!
//! Marked first, reported second: a crash between the write and the report loses that report
//! (the timeline note stays), never makes a second one. The one report may still arrive twice
//! (an SDK retry of a `PutEvents` whose answer was lost, the bus's own at-least-once delivery):
//! the same detail, with the same `eventId` to deduplicate by. The miss changes nothing else: the fire
//! still runs when a worker takes it, under the job's age budget (`retry.maxAgeSecs`).

use crate::config::Config;
use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;
use sundial_model::{ExecStatus, Execution, OpsAction, OpsEntry};
use sundial_store::StoreError;

/// The `source` of Sundial's events on the bus.
pub const EVENT_SOURCE: &str = "sundial";

/// The `detail-type` of a missed start.
pub const DETAIL_TYPE: &str = "FireMissed";

/// How long the operations-log entry of a miss is kept (seconds; the control plane's default).
pub const OPS_RETENTION_SECS: i64 = 400 * 86_400;

/// Who noticed the miss, and so what the fire's state was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum MissReason {
    /// The reconciler found it still waiting (READY, no attempt begun) past its deadline.
    NotStarted,
    /// A worker started it after its deadline, before any reconciler reported it.
    StartedLate,
}

/// The `detail` of a `FireMissed` event (docs/reconciler.md, "Start deadlines").
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FireMissed {
    /// The report's id, `{tenant}/{executionId}/FireMissed`: one per fire. The bus (and the
    /// SDK's retry of a `PutEvents` whose answer was lost) may deliver the report more than
    /// once; a consumer deduplicates by this id, as for outcome events.
    pub event_id: String,
    /// The job's tenant.
    pub tenant: String,
    /// The job.
    pub job_id: String,
    /// The execution (`{jobId}@{scheduled ms}`, as the API names it).
    pub execution_id: String,
    /// The fire's scheduled instant (RFC 3339, ms).
    pub scheduled_at: String,
    /// The instant by which it should have started (RFC 3339, ms).
    pub deadline: String,
    /// When the miss was noticed (RFC 3339, ms).
    pub observed_at: String,
    /// The job's `startDeadlineSecs`.
    pub start_deadline_secs: u32,
    /// Why it counts as missed.
    pub reason: MissReason,
    /// The execution's status when noticed (`READY`, or `RUNNING` for a late start).
    pub status: String,
    /// The worker pool the fire waits in.
    pub pool: String,
    /// The definition version it was created with.
    pub def_version: u64,
}

fn rfc3339(ms: i64) -> String {
    sundial_store::items::ms_to_dt(ms).to_rfc3339_opts(SecondsFormat::Millis, true)
}

impl FireMissed {
    /// The report of `e`, missed at `deadline` (ms), noticed at `now` for `reason`.
    pub fn of(e: &Execution, deadline: i64, now: DateTime<Utc>, reason: MissReason) -> Self {
        FireMissed {
            event_id: format!("{}/{}/{DETAIL_TYPE}", e.tenant, e.id()),
            tenant: e.tenant.clone(),
            job_id: e.job_id.clone(),
            execution_id: e.id(),
            scheduled_at: e.scheduled_at.to_rfc3339_opts(SecondsFormat::Millis, true),
            deadline: rfc3339(deadline),
            observed_at: now.to_rfc3339_opts(SecondsFormat::Millis, true),
            start_deadline_secs: e.definition.start_deadline_secs.unwrap_or(0),
            reason,
            status: match reason {
                MissReason::NotStarted => e.status.as_str().to_string(),
                MissReason::StartedLate => ExecStatus::Running.as_str().to_string(),
            },
            pool: e.definition.pool.clone(),
            def_version: e.def_version,
        }
    }

    /// Its operations-log entry, by `actor` at `now`.
    pub fn ops_entry(&self, actor: &str, now: DateTime<Utc>) -> OpsEntry {
        let mut entry = OpsEntry::new(actor, OpsAction::FireMissed, &self.job_id, now)
            .versions(None, Some(self.def_version));
        entry.execution_id = Some(self.execution_id.clone());
        entry.detail = Some(format!(
            "not started by {} (startDeadlineSecs {}, scheduled {}); {} at {}",
            self.deadline,
            self.start_deadline_secs,
            self.scheduled_at,
            match self.reason {
                MissReason::NotStarted => "still waiting",
                MissReason::StartedLate => "started late",
            },
            self.observed_at
        ));
        entry
    }

    /// The event's `detail` (JSON text).
    pub fn detail_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{}".into())
    }
}

/// A report could not be made (the miss is recorded on the execution; this report is lost).
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The operations-log write failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// EventBridge refused or failed the PutEvents call.
    #[error("PutEvents on bus {bus}: {code}: {message}")]
    Events {
        /// The bus.
        bus: String,
        /// The error code (SDK error kind or the entry's `ErrorCode`).
        code: String,
        /// The message.
        message: String,
        /// Whether a later call may succeed (throttling, service errors).
        retryable: bool,
    },
}

impl ReportError {
    /// Whether retrying may help.
    pub fn is_retryable(&self) -> bool {
        match self {
            ReportError::Store(e) => e.is_retryable(),
            ReportError::Events { retryable, .. } => *retryable,
        }
    }
}

/// Where misses are reported: the operations log (jobs table) and, when the deployment has
/// one, the event bus.
#[derive(Debug, Clone)]
pub struct MissReporter {
    ddb: aws_sdk_dynamodb::Client,
    jobs_table: String,
    events: Option<(aws_sdk_eventbridge::Client, String)>,
}

impl MissReporter {
    /// Reports to `cfg`'s jobs table and, with a client, to its event bus (`cfg.event_bus`;
    /// none: no event is sent, the log entry and the count still are).
    pub fn new(
        ddb: aws_sdk_dynamodb::Client,
        events: Option<aws_sdk_eventbridge::Client>,
        cfg: &Config,
    ) -> Self {
        if cfg.event_bus.is_some() && events.is_none() {
            tracing::warn!("an event bus is configured but no EventBridge client was given: FireMissed events are not sent");
        }
        let events = events.zip(cfg.event_bus.clone());
        MissReporter { ddb, jobs_table: cfg.jobs_table.clone(), events }
    }

    /// The bus events go to.
    pub fn bus(&self) -> Option<&str> {
        self.events.as_ref().map(|(_, b)| b.as_str())
    }

    /// Writes the operations-log entry, then puts the event on the bus. Called only by the
    /// winner of the conditional write (module docs).
    pub async fn report(&self, m: &FireMissed, actor: &str, now: DateTime<Utc>) -> Result<(), ReportError> {
        sundial_store::ops::record(
            &self.ddb,
            &self.jobs_table,
            &m.tenant,
            &m.ops_entry(actor, now),
            OPS_RETENTION_SECS,
        )
        .await?;
        let Some((client, bus)) = &self.events else {
            tracing::warn!(
                job = m.job_id,
                execution = m.execution_id,
                "start deadline missed; no event bus configured, no event sent"
            );
            return Ok(());
        };
        self.put_on(client, bus, DETAIL_TYPE, m.detail_json(), now).await?;
        tracing::warn!(job = m.job_id, execution = m.execution_id, deadline = m.deadline, reason = ?m.reason, "start deadline missed; FireMissed sent");
        Ok(())
    }

    /// Puts one event (`source` [`EVENT_SOURCE`], `detail-type` `detail_type`) on the bus:
    /// false when the deployment has none (nothing is sent).
    pub async fn put_event(
        &self,
        detail_type: &str,
        detail: String,
        now: DateTime<Utc>,
    ) -> Result<bool, ReportError> {
        let Some((client, bus)) = &self.events else { return Ok(false) };
        self.put_on(client, bus, detail_type, detail, now).await?;
        Ok(true)
    }

    async fn put_on(
        &self,
        client: &aws_sdk_eventbridge::Client,
        bus: &str,
        detail_type: &str,
        detail: String,
        now: DateTime<Utc>,
    ) -> Result<(), ReportError> {
        let bus = bus.to_string();
        let entry = aws_sdk_eventbridge::types::PutEventsRequestEntry::builder()
            .event_bus_name(&bus)
            .source(EVENT_SOURCE)
            .detail_type(detail_type)
            .detail(detail)
            .time(aws_smithy_types::DateTime::from_millis(now.timestamp_millis()))
            .build();
        let out = client.put_events().entries(entry).send().await.map_err(|e| {
            let retryable = matches!(
                &e,
                aws_sdk_eventbridge::error::SdkError::TimeoutError(_)
                    | aws_sdk_eventbridge::error::SdkError::DispatchFailure(_)
                    | aws_sdk_eventbridge::error::SdkError::ResponseError(_)
            ) || e
                .raw_response()
                .is_some_and(|r| r.status().as_u16() >= 500 || r.status().as_u16() == 429);
            let code =
                aws_sdk_eventbridge::error::ProvideErrorMetadata::code(&e).unwrap_or("SdkError").to_string();
            ReportError::Events {
                bus: bus.clone(),
                code,
                message: aws_sdk_eventbridge::error::DisplayErrorContext(&e).to_string(),
                retryable,
            }
        })?;
        if out.failed_entry_count() > 0 {
            let first = out.entries().iter().find(|e| e.error_code().is_some());
            let code = first.and_then(|e| e.error_code()).unwrap_or("Failed").to_string();
            return Err(ReportError::Events {
                bus: bus.clone(),
                retryable: code.contains("Throttl") || code.contains("Internal"),
                message: first.and_then(|e| e.error_message()).unwrap_or_default().to_string(),
                code,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sundial_store::items::ms_to_dt;

    #[test]
    fn the_detail_names_the_job_and_the_fire_in_the_documented_fields() {
        // GIVEN an execution of a job with a 30 s start deadline, scheduled at 09:00
        let def: sundial_model::JobDefinition = serde_json::from_value(serde_json::json!({
            "schedule": {"expression": "rate(1 minute)", "timezone": "UTC"},
            "target": {"type": "http", "url": "https://x"}, "pool": "batch", "startDeadlineSecs": 30
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        let at = ms_to_dt(1_764_579_600_000); // 2025-12-01T09:00:00Z
        let e = Execution {
            tenant: "acme".into(),
            job_id: "nightly".into(),
            scheduled_at: at,
            fire_at: at,
            created_at: at,
            status: ExecStatus::Ready,
            attempt: 0,
            fencing_token: 0,
            lease_owner: None,
            lease_until: None,
            available_at: at.timestamp_millis(),
            def_version: 3,
            definition: def,
            missed_range: None,
            missed_except: Vec::new(),
            last_error: None,
            cancel_requested: false,
            timeline: vec![],
            child: None,
            children: None,
            map_reduce: None,
        };
        // WHEN its miss is described
        let m = FireMissed::of(
            &e,
            at.timestamp_millis() + 30_000,
            ms_to_dt(at.timestamp_millis() + 61_000),
            MissReason::NotStarted,
        );
        // THEN the detail carries the documented fields, camelCase
        let v: serde_json::Value = serde_json::from_str(&m.detail_json()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            v,
            serde_json::json!({
                "eventId": "acme/nightly@1764579600000/FireMissed",
                "tenant": "acme", "jobId": "nightly", "executionId": "nightly@1764579600000",
                "scheduledAt": "2025-12-01T09:00:00.000Z", "deadline": "2025-12-01T09:00:30.000Z",
                "observedAt": "2025-12-01T09:01:01.000Z", "startDeadlineSecs": 30,
                "reason": "notStarted", "status": "READY", "pool": "batch", "defVersion": 3
            })
        );
        let ops = m.ops_entry("reconciler:r1", ms_to_dt(0));
        assert_eq!(ops.action, OpsAction::FireMissed);
        assert_eq!(ops.execution_id.as_deref(), Some("nightly@1764579600000"));
        assert_eq!(ops.to_version, Some(3));
    }
}
