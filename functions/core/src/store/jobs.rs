//! Job definitions: validation, creation, reads and state changes.
//!
//! A job's definition item carries its trigger position (`next`) and, while enabled, the `due`
//! index keys of the bucket that position falls in. Every edit bumps `ver`, which the trigger's
//! CAS also checks, so an advance computed from an old definition can never land.

use super::error::{is_condition_failed, StoreError};
use super::items::{self, attr};
use crate::config::Config;
use crate::keys;
use crate::model::{DueClass, Job, JobDefinition, JobState, MAX_INLINE_PARAMS_BYTES};
use crate::schedule::Schedule;
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Duration, Utc};

/// Why a job definition or id was refused. Always permanent; `field` is the JSON path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct ValidationError {
    /// The offending field (`schedule.expression`, `pool`, `retry.maxAttempts`, ...).
    pub field: String,
    /// Why.
    pub reason: String,
}

fn invalid(field: impl Into<String>, reason: impl Into<String>) -> ValidationError {
    ValidationError { field: field.into(), reason: reason.into() }
}

/// Validates a definition against the deployment (pools) and parses its schedule.
pub fn validate(
    def: &JobDefinition,
    cfg: &Config,
    anchor: DateTime<Utc>,
) -> Result<Schedule, ValidationError> {
    let schedule = Schedule::parse(&def.schedule, anchor)
        .map_err(|e| invalid(format!("schedule.{}", e.field()), e.reason()))?;
    if !cfg.pools.iter().any(|p| p == &def.pool) {
        return Err(invalid(
            "pool",
            format!("unknown pool {:?}; this deployment has {}", def.pool, cfg.pools.join(", ")),
        ));
    }
    let params_len = serde_json::to_string(&def.params).map(|s| s.len()).unwrap_or(usize::MAX);
    if params_len > MAX_INLINE_PARAMS_BYTES {
        return Err(invalid(
            "params",
            format!("{params_len} bytes inline; the limit is {MAX_INLINE_PARAMS_BYTES}: store large parameters elsewhere and pass paramsRef"),
        ));
    }
    if let Some(r) = &def.params_ref {
        if r.is_empty() || r.len() > 1024 {
            return Err(invalid("paramsRef", "must be 1-1024 characters"));
        }
    }
    match &def.target {
        crate::model::Target::Lambda { function } if function.is_empty() || function.len() > 170 => {
            return Err(invalid("target.function", "must be a function name or ARN (1-170 characters)"))
        }
        crate::model::Target::Http { url }
            if !(url.starts_with("https://") || url.starts_with("http://")) =>
        {
            return Err(invalid("target.url", "must be an http(s) URL"))
        }
        crate::model::Target::Sqs { queue_url } if !queue_url.starts_with("http") => {
            return Err(invalid("target.queueUrl", "must be an SQS queue URL"))
        }
        crate::model::Target::InProcess { handler } if handler.is_empty() || handler.len() > 64 => {
            return Err(invalid("target.handler", "must be 1-64 characters"))
        }
        _ => {}
    }
    let r = &def.retry;
    if r.max_attempts == 0 || r.max_attempts > 100 {
        return Err(invalid("retry.maxAttempts", "must be between 1 and 100"));
    }
    if r.base_delay_secs == 0 || r.base_delay_secs > r.max_delay_secs {
        return Err(invalid("retry.baseDelaySecs", "must be at least 1 and at most retry.maxDelaySecs"));
    }
    if r.max_delay_secs > 43_200 {
        return Err(invalid("retry.maxDelaySecs", "must be at most 43200 (SQS visibility limit of 12 h)"));
    }
    if def.timeout_secs == 0 || def.timeout_secs > 43_200 {
        return Err(invalid("timeoutSecs", "must be between 1 and 43200"));
    }
    if def.misfire_threshold_secs > 86_400 {
        return Err(invalid("misfireThresholdSecs", "must be at most 86400"));
    }
    Ok(schedule)
}

/// Whether a schedule fires in every minute of the hour after `now`: the scan promotes such
/// jobs into their shard's "every bucket" partition, where they are never moved between
/// buckets (see [`keys::every_bucket`]), which saves the index delete + put on each fire.
pub fn fires_every_minute(schedule: &Schedule, now: DateTime<Utc>) -> bool {
    let start_min = keys::minute_of(now) + 1;
    let from = keys::minute_start(start_min) - Duration::milliseconds(1);
    let until = keys::minute_start(start_min + 60) - Duration::milliseconds(1);
    let mut covered = [false; 60];
    let mut cursor = from;
    while let Some(f) = schedule.next_after(cursor) {
        if f > until {
            break;
        }
        let m = (keys::minute_of(f) - start_min) as usize;
        if let Some(c) = covered.get_mut(m) {
            *c = true;
        }
        // Skip to the next minute: one fire per minute is enough to know.
        cursor = keys::minute_start(keys::minute_of(f) + 1) - Duration::milliseconds(1);
    }
    covered.iter().all(|c| *c)
}

/// Builds a new enabled job (version 1) whose trigger position is its first fire after `now`.
pub fn new_job(
    cfg: &Config,
    tenant: &str,
    job_id: &str,
    def: JobDefinition,
    now: DateTime<Utc>,
) -> Result<Job, ValidationError> {
    keys::validate_id("tenant", tenant).map_err(|e| invalid(e.field, e.reason))?;
    keys::validate_id("jobId", job_id).map_err(|e| invalid(e.field, e.reason))?;
    let anchor = def.schedule.start.unwrap_or(now);
    let schedule = validate(&def, cfg, anchor)?;
    let next = schedule.next_after(now);
    Ok(Job {
        tenant: tenant.into(),
        job_id: job_id.into(),
        version: 1,
        state: JobState::Enabled,
        due_class: DueClass::Admission,
        definition: def,
        anchor,
        next_fire_at: next,
        shard: keys::shard_of(tenant, job_id, cfg.shards),
        created_at: now,
        updated_at: now,
    })
}

/// Creating a job failed.
#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    /// A job with this id exists for the tenant.
    #[error("jobId: a job with this id already exists")]
    Exists,
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Stores a new job: its immutable version-1 snapshot, then the definition item, both
/// conditional on not existing.
pub async fn put_new_job(ddb: &aws_sdk_dynamodb::Client, cfg: &Config, job: &Job) -> Result<(), CreateError> {
    let snapshot = version_snapshot_item(job);
    let res = ddb
        .put_item()
        .table_name(&cfg.jobs_table)
        .set_item(Some(snapshot))
        .condition_expression("attribute_not_exists(pk)")
        .send()
        .await;
    match res {
        Ok(_) => {}
        Err(e) if is_condition_failed(&e) => return Err(CreateError::Exists),
        Err(e) => return Err(StoreError::from_sdk("PutItem", e).into()),
    }
    let res = ddb
        .put_item()
        .table_name(&cfg.jobs_table)
        .set_item(Some(items::job_to_item(job)))
        .condition_expression("attribute_not_exists(pk)")
        .send()
        .await;
    match res {
        Ok(_) => Ok(()),
        Err(e) if is_condition_failed(&e) => Err(CreateError::Exists),
        Err(e) => Err(StoreError::from_sdk("PutItem", e).into()),
    }
}

/// The immutable snapshot item of a job's current version (`sk = V#{version}`).
pub fn version_snapshot_item(job: &Job) -> items::Item {
    let mut item = items::job_to_item(job);
    item.insert(attr::SK.into(), AttributeValue::S(keys::job_version_sk(job.version)));
    for a in [attr::DUE_PK, attr::DUE_SK, attr::TENANT_PK, attr::TENANT_SK, attr::NEXT] {
        item.remove(a);
    }
    item
}

/// Reads a job's current definition item.
pub async fn get_job(
    ddb: &aws_sdk_dynamodb::Client,
    cfg: &Config,
    tenant: &str,
    job_id: &str,
) -> Result<Option<Job>, StoreError> {
    let out = ddb
        .get_item()
        .table_name(&cfg.jobs_table)
        .key(attr::PK, AttributeValue::S(keys::job_pk(tenant, job_id)))
        .key(attr::SK, AttributeValue::S(keys::JOB_DEF_SK.into()))
        .consistent_read(true)
        .send()
        .await
        .map_err(|e| StoreError::from_sdk("GetItem", e))?;
    match out.item {
        Some(i) => Ok(Some(items::job_from_item(&i)?)),
        None => Ok(None),
    }
}

/// What a definition change expects to find (the condition of [`put_job_change`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// No job with this id (create).
    New,
    /// The job at exactly this version (edit, pause, resume, delete).
    Version(u64),
}

/// A definition change was not written.
#[derive(Debug, thiserror::Error)]
pub enum ChangeError {
    /// [`Expect::New`], but the id is taken (also by a deleted job still retained).
    #[error("jobId: a job with this id already exists")]
    Exists,
    /// [`Expect::Version`], but the job is at another version (or gone).
    #[error("version: the job was changed concurrently (expected version {expected})")]
    VersionConflict {
        /// The version the caller expected.
        expected: u64,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Writes a definition change and its audit entry atomically: the definition item
/// (conditional on `expect`), the immutable `V#{version}` snapshot, and `audit` (an item of the
/// operations log) in one `TransactWriteItems`. A job that is not enabled drops out of the `due`
/// index in the same write (its item has no `due_*` attributes), so a scan that read it before
/// cannot advance it afterwards: the advance is conditional on `ver`, which this bumps.
/// `expires_at` (epoch seconds) sets the TTL of a deleted job's items.
pub async fn put_job_change(
    ddb: &aws_sdk_dynamodb::Client,
    cfg: &Config,
    expect: Expect,
    job: &Job,
    expires_at: Option<i64>,
    audit: items::Item,
) -> Result<(), ChangeError> {
    use aws_sdk_dynamodb::types::{Put, TransactWriteItem};
    let mut def = items::job_to_item(job);
    let mut snapshot = version_snapshot_item(job);
    if let Some(t) = expires_at {
        def.insert(attr::EXPIRES.into(), items::n(t));
        snapshot.insert(attr::EXPIRES.into(), items::n(t));
    }
    let build = |p: aws_sdk_dynamodb::types::builders::PutBuilder| {
        p.build().map_err(|e| StoreError::Permanent { op: "TransactWriteItems", message: e.to_string() })
    };
    let def_put = match expect {
        Expect::New => Put::builder().condition_expression("attribute_not_exists(pk)"),
        Expect::Version(v) => Put::builder()
            .condition_expression("#ver = :ver")
            .expression_attribute_names("#ver", attr::VERSION)
            .expression_attribute_values(":ver", items::n(v)),
    }
    .table_name(&cfg.jobs_table)
    .set_item(Some(def));
    let mut snap_put = Put::builder().table_name(&cfg.jobs_table).set_item(Some(snapshot));
    if expect == Expect::New {
        snap_put = snap_put.condition_expression("attribute_not_exists(pk)");
    }
    let audit_put = Put::builder().table_name(&cfg.jobs_table).set_item(Some(audit));
    let res = ddb
        .transact_write_items()
        .transact_items(TransactWriteItem::builder().put(build(def_put)?).build())
        .transact_items(TransactWriteItem::builder().put(build(snap_put)?).build())
        .transact_items(TransactWriteItem::builder().put(build(audit_put)?).build())
        .send()
        .await;
    let err = match res {
        Ok(_) => return Ok(()),
        Err(e) => e,
    };
    // Why a cancelled transaction was cancelled: one reason per item, in order.
    let reasons: Option<Vec<String>> = err.as_service_error().and_then(|s| match s {
        aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError::TransactionCanceledException(c) => {
            Some(c.cancellation_reasons().iter().map(|r| r.code().unwrap_or("None").to_string()).collect())
        }
        _ => None,
    });
    match reasons {
        Some(r) if r.iter().take(2).any(|c| c == "ConditionalCheckFailed") => match expect {
            Expect::New => Err(ChangeError::Exists),
            Expect::Version(expected) => Err(ChangeError::VersionConflict { expected }),
        },
        // Cancelled for another reason (a concurrent transaction on the same item): retryable.
        Some(r) => Err(ChangeError::Store(StoreError::Transient {
            op: "TransactWriteItems",
            message: format!("transaction cancelled: {}", r.join(", ")),
        })),
        None => Err(StoreError::from_sdk("TransactWriteItems", err).into()),
    }
}

/// Reads one immutable definition snapshot (`V#{version}`) of a job.
pub async fn get_job_version(
    ddb: &aws_sdk_dynamodb::Client,
    cfg: &Config,
    tenant: &str,
    job_id: &str,
    version: u64,
) -> Result<Option<Job>, StoreError> {
    let out = ddb
        .get_item()
        .table_name(&cfg.jobs_table)
        .key(attr::PK, AttributeValue::S(keys::job_pk(tenant, job_id)))
        .key(attr::SK, AttributeValue::S(keys::job_version_sk(version)))
        .send()
        .await
        .map_err(|e| StoreError::from_sdk("GetItem", e))?;
    match out.item {
        Some(i) => Ok(Some(items::job_from_item(&i)?)),
        None => Ok(None),
    }
}
