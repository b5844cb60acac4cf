//! The ingest function: events from the tenants' own sources (docs/events.md). Each event
//! becomes the same immutable execution as `POST /v1/jobs/{jobId}/events` makes
//! ([`sundial_core::control::events`]): same key, deduplication, fencing, retries, policies,
//! audit and metering.
//!
//! Two sources, each declared by the CDK construct for one tenant (`eventSources`, read as
//! [`EventSourceSettings`]):
//! - **A tenant's SQS queue**, through a Lambda event source mapping. The message body is
//!   `{jobId, key?, params?, at?}`. The tenant is the queue's: declared for it, and the queue must
//!   carry the tag `sundial-tenant={tenant}` (read here, cached for [`OWNER_TTL`]), the rule every
//!   tenant resource Sundial touches follows (docs/tenancy.md). A message never names a tenant.
//!   Default key `sqs-{messageId}` (a redelivery is the same execution), default `at` the
//!   message's `SentTimestamp`.
//! - **A tenant's EventBridge bus**, made by the construct: its rule sends each matching event as
//!   `{"sundialEventSource": {"tenant", "bus"}, "event": <the event>}` (the tenant stamped by the
//!   rule, which only the construct writes), `detail` being `{jobId, key?, params?, at?}`.
//!   Default key `eb-{id}`, default `at` the event's `time`.
//!
//! What happens to an event that cannot fire:
//! - **refused** (bad message, a job that is not the tenant's, takes no events, is paused,
//!   deleted): recorded in the tenant's operations log as `event_rejected` with the error naming
//!   the field, and the message is consumed: it can never succeed, and a source has no one to
//!   answer;
//! - **later** (throttled, saturated, DynamoDB or SQS failing): the SQS record is reported as a
//!   batch item failure (it comes back after its visibility timeout, and the source queue's own
//!   redrive policy bounds the retries); a bus event fails the invocation, which Lambda retries
//!   and then sends to the function's dead-letter queue. The key makes every retry the same
//!   execution;
//! - **not the tenant's source** (a queue not declared, or tagged for another tenant or not at
//!   all; a bus not declared for the stamped tenant): nothing fires, nothing is written to any
//!   tenant's log, and the record fails like a retry, so a fixed tag lets it through.

use crate::Api;
use aws_lambda_events::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent, SqsMessage};
use chrono::{DateTime, TimeZone, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use sundial_core::access::{scope, Role, Scope};
use sundial_core::config::EventSourceSettings;
use sundial_core::control::events::{self, EventIn};
use sundial_core::control::{Caller, ControlError};
use sundial_model::arn::Arn;
use sundial_model::event::{parse_event_body, parse_event_message, source_instant, source_key};

/// The tag naming a resource's tenant.
pub const TENANT_TAG: &str = "sundial-tenant";

/// How long a queue's confirmed tenant is trusted before its tag is read again.
pub const OWNER_TTL: Duration = Duration::from_secs(60);

/// The events the ingest function accepts.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum IngestEvent {
    /// A batch from a tenant's queue (the event source mapping).
    Sqs(SqsEvent),
    /// One event from a tenant's bus (its rule's target input).
    Bus(BusDelivery),
}

/// What a tenant bus's rule sends.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BusDelivery {
    /// The source, stamped by the rule.
    pub sundial_event_source: BusSource,
    /// The EventBridge event as it arrived (`id`, `time`, `detail`, ...).
    pub event: Value,
}

/// The bus and tenant a rule stamps on its deliveries.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BusSource {
    /// The tenant the bus was made for.
    pub tenant: String,
    /// The bus's name.
    pub bus: String,
}

/// What became of one event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fate {
    /// It is this execution (made now, or the one it was deduplicated onto).
    Fired {
        /// The execution id.
        execution_id: String,
        /// False when deduplicated.
        created: bool,
    },
    /// It can never fire: recorded in the tenant's operations log.
    Rejected {
        /// The field and reason.
        reason: String,
    },
    /// Not now: the source should deliver it again.
    Retry {
        /// Why.
        reason: String,
    },
}

/// The ingest function's service: the API's control plane (clock, quotas, back-pressure), the
/// declared sources, and an SQS client for the queues' tags.
pub struct Ingest {
    api: Api,
    sources: EventSourceSettings,
    sqs: aws_sdk_sqs::Client,
    owners: Mutex<HashMap<String, (Option<String>, Instant)>>,
}

impl Ingest {
    /// An ingest over `api`'s control plane.
    pub fn new(api: Api, sources: EventSourceSettings, sqs: aws_sdk_sqs::Client) -> Self {
        Ingest { api, sources, sqs, owners: Mutex::new(HashMap::new()) }
    }

    /// The declared sources.
    pub fn sources(&self) -> &EventSourceSettings {
        &self.sources
    }

    /// One invocation (as the `ingest` role, for the IAM recording): an SQS batch answers its
    /// failed records (`batchItemFailures`), a bus event its fate, or an error to be retried.
    pub async fn handle(&self, event: IngestEvent) -> Result<Value, String> {
        let s = Scope::new(Role::Ingest, self.api.control().cfg());
        scope(s, async {
            match event {
                IngestEvent::Sqs(batch) => {
                    let out = self.handle_sqs(batch).await;
                    serde_json::to_value(out).map_err(|e| e.to_string())
                }
                IngestEvent::Bus(d) => match self.handle_bus(&d).await {
                    Fate::Fired { execution_id, created } => {
                        Ok(serde_json::json!({"executionId": execution_id, "created": created}))
                    }
                    Fate::Rejected { reason } => Ok(serde_json::json!({"rejected": reason})),
                    Fate::Retry { reason } => Err(reason),
                },
            }
        })
        .await
    }

    /// An SQS batch: each record fired, rejected or left for redelivery.
    pub async fn handle_sqs(&self, batch: SqsEvent) -> SqsBatchResponse {
        let mut failures = Vec::new();
        for record in &batch.records {
            let fate = self.sqs_record(record).await;
            if let Fate::Retry { reason } = &fate {
                tracing::warn!(message_id = ?record.message_id, %reason, "event left for redelivery");
                let mut f = BatchItemFailure::default();
                f.item_identifier = record.message_id.clone().unwrap_or_default();
                failures.push(f);
            }
        }
        let mut out = SqsBatchResponse::default();
        out.batch_item_failures = failures;
        out
    }

    /// One record of a tenant's queue.
    pub async fn sqs_record(&self, m: &SqsMessage) -> Fate {
        let arn = m.event_source_arn.as_deref().unwrap_or_default();
        let Some(tenant) = self.sources.queue_tenant(arn).map(str::to_string) else {
            tracing::error!(%arn, "a record from a queue that is no declared event source");
            return retry(format!("the queue {arn} is not a declared event source"));
        };
        match self.queue_owner(arn).await {
            Ok(Some(t)) if t == tenant => {}
            Ok(other) => {
                tracing::error!(%arn, %tenant, tag = ?other, "an event queue not tagged for its tenant");
                return retry(format!("the queue {arn} must carry the tag {TENANT_TAG}={tenant}"));
            }
            Err(reason) => return retry(reason),
        }
        let queue = Arn::parse(arn).map_or("", |a| a.resource);
        let actor = format!("source:sqs:{queue}");
        let id = m.message_id.clone().unwrap_or_default();
        let what = format!("message {id} of queue {queue}");
        let now = self.api.now();
        let msg = match parse_event_body(m.body.as_deref().unwrap_or_default()) {
            Ok(msg) => msg,
            Err(e) => return self.reject(&tenant, &actor, "-", &what, ControlError::Invalid(e), now).await,
        };
        let sent = m
            .attributes
            .get("SentTimestamp")
            .and_then(|v| v.parse::<i64>().ok())
            .and_then(|ms| Utc.timestamp_millis_opt(ms).single());
        let ev = EventIn {
            key: Some(msg.key.clone().unwrap_or_else(|| source_key("sqs", &id))),
            params: msg.params.clone(),
            at: Some(msg.at.unwrap_or_else(|| source_instant(sent, now))),
        };
        self.fire(&tenant, &actor, &msg.job_id, &what, &ev, now).await
    }

    /// One event of a tenant's bus.
    pub async fn handle_bus(&self, d: &BusDelivery) -> Fate {
        let BusSource { tenant, bus } = &d.sundial_event_source;
        if !self.sources.is_bus_of(bus, tenant) {
            tracing::error!(%bus, %tenant, "an event from a bus that is not the tenant's declared source");
            return retry(format!("the bus {bus} is not a declared event source of tenant {tenant}"));
        }
        let actor = format!("source:events:{bus}");
        let id = d.event.get("id").and_then(Value::as_str).unwrap_or_default().to_string();
        let what = format!("event {id} of bus {bus}");
        let now = self.api.now();
        let detail = d.event.get("detail").cloned().unwrap_or(Value::Null);
        let msg = match parse_event_message(&detail) {
            Ok(msg) => msg,
            Err(mut e) => {
                if e.field != "body" {
                    e.field = format!("detail.{}", e.field);
                } else {
                    e.field = "detail".into();
                }
                return self.reject(tenant, &actor, "-", &what, ControlError::Invalid(e), now).await;
            }
        };
        let time = d
            .event
            .get("time")
            .and_then(Value::as_str)
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.with_timezone(&Utc));
        let ev = EventIn {
            key: Some(msg.key.clone().unwrap_or_else(|| source_key("eb", &id))),
            params: msg.params.clone(),
            at: Some(msg.at.unwrap_or_else(|| source_instant(time, now))),
        };
        self.fire(tenant, &actor, &msg.job_id, &what, &ev, now).await
    }

    async fn fire(
        &self,
        tenant: &str,
        actor: &str,
        job_id: &str,
        what: &str,
        ev: &EventIn,
        now: DateTime<Utc>,
    ) -> Fate {
        let caller = Caller { tenant: tenant.to_string(), principal: actor.to_string() };
        match events::fire_as(self.api.control(), &caller, actor, job_id, ev, now).await {
            Ok(out) => Fate::Fired { execution_id: out.execution.id(), created: out.created },
            Err(e) if later(&e) => retry(e.to_string()),
            Err(e) => self.reject(tenant, actor, job_id, what, e, now).await,
        }
    }

    async fn reject(
        &self,
        tenant: &str,
        actor: &str,
        job_id: &str,
        what: &str,
        err: ControlError,
        now: DateTime<Utc>,
    ) -> Fate {
        let reason = match &err {
            ControlError::Invalid(e) => format!("{}: {}", e.field, e.reason),
            other => other.to_string(),
        };
        tracing::info!(%tenant, %job_id, %what, %reason, "event rejected");
        match events::record_rejected(self.api.control(), tenant, actor, job_id, what, &err, now).await {
            Ok(()) => Fate::Rejected { reason },
            // Not recorded: deliver it again rather than lose the refusal.
            Err(e) => retry(format!("recording the rejection failed: {e}")),
        }
    }

    /// The `sundial-tenant` tag of the queue `arn` (cached for [`OWNER_TTL`]); `Ok(None)` when
    /// the queue is missing, untagged or its tags cannot be read; `Err` when it may be read later.
    async fn queue_owner(&self, arn: &str) -> Result<Option<String>, String> {
        if let Ok(cache) = self.owners.lock() {
            if let Some((owner, at)) = cache.get(arn) {
                if at.elapsed() < OWNER_TTL {
                    return Ok(owner.clone());
                }
            }
        }
        let (account, name) = Arn::parse(arn).map_or(("", ""), |a| (a.account, a.resource));
        let url = match self
            .sqs
            .get_queue_url()
            .queue_name(name)
            .queue_owner_aws_account_id(account)
            .send()
            .await
        {
            Ok(o) => o.queue_url().unwrap_or_default().to_string(),
            Err(e) => return transient_or_none(e),
        };
        let owner = match self.sqs.list_queue_tags().queue_url(&url).send().await {
            Ok(o) => o.tags().and_then(|t| t.get(TENANT_TAG)).cloned(),
            Err(e) => return transient_or_none(e),
        };
        if let Ok(mut cache) = self.owners.lock() {
            cache.insert(arn.to_string(), (owner.clone(), Instant::now()));
        }
        Ok(owner)
    }
}

/// Throttling, server and network errors may pass; anything else (missing, refused) means the
/// queue is not usable as the tenant's.
fn transient_or_none<E, R>(e: aws_sdk_sqs::error::SdkError<E, R>) -> Result<Option<String>, String>
where
    E: aws_sdk_sqs::error::ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug,
{
    use aws_sdk_sqs::error::SdkError;
    let detail = aws_sdk_sqs::error::DisplayErrorContext(&e).to_string();
    match &e {
        SdkError::ServiceError(s) => {
            let code = s.err().code().unwrap_or_default();
            if code.contains("Throttl") || code.contains("RequestThrottled") || code.contains("InternalError")
            {
                Err(detail)
            } else {
                tracing::warn!(%detail, "an event queue's tags cannot be read");
                Ok(None)
            }
        }
        _ => Err(detail),
    }
}

/// Whether a refusal is for now only: throttled, saturated, or the store or a queue failing.
fn later(e: &ControlError) -> bool {
    matches!(e, ControlError::Limited { .. } | ControlError::Store(_) | ControlError::Queue(_))
}

fn retry(reason: String) -> Fate {
    Fate::Retry { reason }
}
