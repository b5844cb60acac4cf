//! Job items: the definition item (`DEF`) with its trigger position, the immutable version
//! snapshots (`V#{version}`), the `by_tenant` listing and batch reads, and the `due` index reads
//! and CAS advance of the trigger plane (docs/trigger.md: put → send → advance → watermark).
//!
//! A job's definition item carries its trigger position (`next`) and, while enabled, the `due`
//! index keys of the bucket that position falls in. Every edit bumps `ver`, which the trigger's
//! CAS also checks, so an advance computed from an old definition can never land:
//! - [`put_job_change`]: the definition item conditional on the version the caller read, its
//!   new snapshot and the operations-log entry, in one `TransactWriteItems`.
//! - [`advance_job`]: `UpdateItem IF next = :read AND ver = :ver AND state = ENABLED`: moves
//!   the trigger position (and the job's `due` bucket) only if nobody moved it since the scan
//!   read it. Losing that race is [`Advance::Lost`], not an error.

use super::error::{is_condition_failed, StoreError};
use super::expr::{Expr, WithExpr};
use super::items::{self, attr, index, n, Item};
use super::query::{one_page, Pager};
use super::versioned::{Versioned, VersionedWrite};
use super::QueryPage;
use crate::config::Config;
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};
use std::collections::HashMap;
use sundial_model::keys;
use sundial_model::{BatchCover, DueClass, Job, JobState, OpsEntry};

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

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

fn not_exists() -> Expr {
    let mut e = Expr::new();
    e.cond_not_exists(attr::PK);
    e
}

/// Stores a new job: its immutable version-1 snapshot, then the definition item, both
/// conditional on not existing.
pub async fn put_new_job(ddb: &aws_sdk_dynamodb::Client, cfg: &Config, job: &Job) -> Result<(), CreateError> {
    for item in [items::job_version_item(job), items::job_to_item(job)] {
        let res =
            ddb.put_item().table_name(&cfg.jobs_table).set_item(Some(item)).expr(not_exists()).send().await;
        match res {
            Ok(_) => {}
            Err(e) if is_condition_failed(&e) => return Err(CreateError::Exists),
            Err(e) => return Err(StoreError::from_sdk("PutItem", e).into()),
        }
    }
    Ok(())
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
        .key(attr::PK, s(keys::job_pk(tenant, job_id)))
        .key(attr::SK, s(keys::JOB_DEF_SK))
        .consistent_read(true)
        .send()
        .await
        .map_err(|e| StoreError::from_sdk("GetItem", e))?;
    match out.item {
        Some(i) => Ok(Some(items::job_from_item(&i)?)),
        None => Ok(None),
    }
}

/// Reads a job's current definition item and the ranges its `fireOnce` batches cover
/// (`begins_with(sk, DEF)`, strongly consistent): the read a fire's first claim makes
/// (docs/execution.md, "Before the first claim"). Same read units as [`get_job`] while the
/// covers are few (they expire a day after their batch's age limit).
pub async fn get_job_and_covers(
    ddb: &aws_sdk_dynamodb::Client,
    cfg: &Config,
    tenant: &str,
    job_id: &str,
) -> Result<(Option<Job>, Vec<BatchCover>), StoreError> {
    let mut e = Expr::new();
    e.key_eq(attr::PK, s(keys::job_pk(tenant, job_id))).key_begins_with(attr::SK, keys::JOB_DEF_SK);
    let query = ddb.query().table_name(&cfg.jobs_table).expr(e).consistent_read(true);
    let found = Pager::new(query, None, "Query(job and covers)")
        .all(|i: &Item| Ok::<_, StoreError>(i.clone()))
        .await?;
    let (mut job, mut covers) = (None, Vec::new());
    for item in &found {
        if item.get(attr::SK).and_then(|v| v.as_s().ok()).map(String::as_str) == Some(keys::JOB_DEF_SK) {
            job = Some(items::job_from_item(item)?);
        } else if let Some(c) = items::batch_cover_from_item(item)? {
            covers.push(c);
        }
    }
    Ok((job, covers))
}

/// Records that the `fireOnce` batch keyed at `cover.first` stands for `(first, through]` of its
/// job (an idempotent put: the same batch writes the same item), kept until `expires_at` (epoch
/// seconds), past the last instant a fire it covers could still start.
pub async fn put_batch_cover(
    ddb: &aws_sdk_dynamodb::Client,
    cfg: &Config,
    tenant: &str,
    job_id: &str,
    cover: BatchCover,
    expires_at: i64,
) -> Result<(), StoreError> {
    ddb.put_item()
        .table_name(&cfg.jobs_table)
        .set_item(Some(items::batch_cover_item(tenant, job_id, cover, expires_at)))
        .send()
        .await
        .map_err(|e| StoreError::from_sdk("PutItem(batch cover)", e))?;
    Ok(())
}

/// Reads `tenant`'s `job_id`'s batch registry (strongly consistent; empty at version 0 when
/// none was written yet).
pub async fn batch_registry(
    ddb: &aws_sdk_dynamodb::Client,
    cfg: &Config,
    tenant: &str,
    job_id: &str,
) -> Result<items::BatchRegistry, StoreError> {
    let out = ddb
        .get_item()
        .table_name(&cfg.jobs_table)
        .key(attr::PK, s(keys::job_pk(tenant, job_id)))
        .key(attr::SK, s(keys::BATCH_REGISTRY_SK))
        .consistent_read(true)
        .send()
        .await
        .map_err(|e| StoreError::from_sdk("GetItem(batch registry)", e))?;
    match out.item {
        Some(i) => Ok(items::batch_registry_from_item(&i)?),
        None => Ok(items::BatchRegistry::default()),
    }
}

/// Appends `entry` (a batch's range and the epoch second until which it is kept) to the
/// registry as read (`read`), dropping entries kept no longer than `now_s`: conditional on the
/// registry still being at `read.version`. `false` when another batch registered in between
/// (read it again).
pub async fn register_batch(
    ddb: &aws_sdk_dynamodb::Client,
    cfg: &Config,
    tenant: &str,
    job_id: &str,
    read: &items::BatchRegistry,
    entry: (BatchCover, i64),
    now_s: i64,
) -> Result<bool, StoreError> {
    let mut batches: Vec<(BatchCover, i64)> =
        read.batches.iter().copied().filter(|(_, x)| *x > now_s).collect();
    batches.push(entry);
    let mut e = Expr::new();
    if read.version == 0 {
        e.cond_not_exists(attr::PK);
    } else {
        e.cond_eq(attr::REGISTRY_VERSION, n(read.version));
    }
    let item = items::batch_registry_item(tenant, job_id, read.version + 1, &batches);
    match ddb.put_item().table_name(&cfg.jobs_table).set_item(Some(item)).expr(e).send().await {
        Ok(_) => Ok(true),
        Err(e) if is_condition_failed(&e) => Ok(false),
        Err(e) => Err(StoreError::from_sdk("PutItem(batch registry)", e)),
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
/// (conditional on `expect`), the immutable `V#{version}` snapshot, and `audit` (an entry of
/// the operations log, kept `ops_retention_secs`) in one `TransactWriteItems`. A job that is not
/// enabled drops out of the `due` index in the same write (its item has no `due_*` attributes),
/// so a scan that read it before cannot advance it afterwards: the advance is conditional on
/// `ver`, which this bumps. `expires_at` (epoch seconds) sets the TTL of a deleted job's items.
pub async fn put_job_change(
    ddb: &aws_sdk_dynamodb::Client,
    cfg: &Config,
    expect: Expect,
    job: &Job,
    expires_at: Option<i64>,
    audit: &OpsEntry,
    ops_retention_secs: i64,
) -> Result<(), ChangeError> {
    let mut current = items::job_to_item(job);
    let mut snapshot = items::job_version_item(job);
    if let Some(t) = expires_at {
        current.insert(attr::EXPIRES.into(), n(t));
        snapshot.insert(attr::EXPIRES.into(), n(t));
    }
    let write = VersionedWrite {
        table: &cfg.jobs_table,
        current,
        expected: match expect {
            Expect::New => None,
            Expect::Version(v) => Some(v),
        },
        snapshot,
        snapshot_if_absent: expect == Expect::New,
        audit: items::ops_item(&job.tenant, audit, ops_retention_secs),
    };
    match write.send(ddb).await? {
        Versioned::Written => Ok(()),
        Versioned::Conflict => match expect {
            Expect::New => Err(ChangeError::Exists),
            Expect::Version(expected) => Err(ChangeError::VersionConflict { expected }),
        },
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
        .key(attr::PK, s(keys::job_pk(tenant, job_id)))
        .key(attr::SK, s(keys::job_version_sk(version)))
        .send()
        .await
        .map_err(|e| StoreError::from_sdk("GetItem", e))?;
    match out.item {
        Some(i) => Ok(Some(items::job_from_item(&i)?)),
        None => Ok(None),
    }
}

/// One page of a job's definition snapshots, newest first, below `before` (a version) when
/// given; `next` is the last version read when more may follow.
pub async fn list_job_versions(
    ddb: &aws_sdk_dynamodb::Client,
    cfg: &Config,
    tenant: &str,
    job_id: &str,
    limit: i32,
    before: Option<u64>,
) -> Result<QueryPage<Job, u64>, StoreError> {
    let pk = keys::job_pk(tenant, job_id);
    let start = before.map(|v| {
        HashMap::from([(attr::PK.to_string(), s(&pk)), (attr::SK.to_string(), s(keys::job_version_sk(v)))])
    });
    let mut e = Expr::new();
    e.key_eq(attr::PK, s(&pk)).key_begins_with(attr::SK, keys::JOB_VERSION_SK_PREFIX);
    let query = ddb.query().table_name(&cfg.jobs_table).expr(e).scan_index_forward(false).limit(limit);
    let page = one_page(query, start, "Query(versions)").await?;
    let items = page.items.iter().map(items::job_from_item).collect::<Result<Vec<_>, _>>()?;
    let next = page.last_key.and_then(|_| items.last().map(|j| j.version));
    Ok(QueryPage { items, next })
}

/// Gives the version snapshots `1..job.version` of a deleted job the TTL `expires_at` (epoch
/// seconds), so the id becomes free again once the retention period is over. Snapshots already
/// gone are skipped.
pub async fn expire_versions(
    ddb: &aws_sdk_dynamodb::Client,
    cfg: &Config,
    job: &Job,
    expires_at: i64,
) -> Result<(), StoreError> {
    for v in 1..job.version {
        let mut e = Expr::new();
        e.set(attr::EXPIRES, n(expires_at)).cond_exists(attr::PK);
        let res = ddb
            .update_item()
            .table_name(&cfg.jobs_table)
            .key(attr::PK, s(keys::job_pk(&job.tenant, &job.job_id)))
            .key(attr::SK, s(keys::job_version_sk(v)))
            .expr(e)
            .send()
            .await;
        match res {
            Ok(_) => {}
            Err(e) if is_condition_failed(&e) => {}
            Err(e) => return Err(StoreError::from_sdk("UpdateItem(expire)", e)),
        }
    }
    Ok(())
}

/// One page of a tenant's job ids in id order, from its partition of the keys-only `by_tenant`
/// index (trigger advances never write to it); `next` is the job id the next page starts after.
pub async fn list_job_ids(
    ddb: &aws_sdk_dynamodb::Client,
    cfg: &Config,
    tenant: &str,
    limit: i32,
    after: Option<&str>,
) -> Result<QueryPage<String, String>, StoreError> {
    let start = after.map(|job_id| {
        HashMap::from([
            (attr::TENANT_PK.to_string(), s(keys::tenant_pk(tenant))),
            (attr::TENANT_SK.to_string(), s(keys::tenant_job_sk(job_id))),
            (attr::PK.to_string(), s(keys::job_pk(tenant, job_id))),
            (attr::SK.to_string(), s(keys::JOB_DEF_SK)),
        ])
    });
    let mut e = Expr::new();
    e.key_eq(attr::TENANT_PK, s(keys::tenant_pk(tenant)));
    let query = ddb.query().table_name(&cfg.jobs_table).index_name(index::by_tenant()?).expr(e).limit(limit);
    let page = one_page(query, start, "Query(by_tenant)").await?;
    let items = page.items.iter().filter_map(job_of_index_item).collect();
    let next = page.last_key.as_ref().and_then(job_of_index_item);
    Ok(QueryPage { items, next })
}

fn job_of_index_item(item: &Item) -> Option<String> {
    let sk = item.get(attr::TENANT_SK)?.as_s().ok()?;
    keys::job_of_tenant_sk(sk).map(str::to_string)
}

/// The current definitions of a tenant's jobs `ids` (consistent reads, [`super::batch_get`]), in
/// no particular order; ids without a job are left out.
pub async fn batch_get_jobs(
    ddb: &aws_sdk_dynamodb::Client,
    cfg: &Config,
    tenant: &str,
    ids: &[String],
) -> Result<Vec<Job>, StoreError> {
    let keys: Vec<Item> = ids
        .iter()
        .map(|id| {
            HashMap::from([
                (attr::PK.to_string(), s(keys::job_pk(tenant, id))),
                (attr::SK.to_string(), s(keys::JOB_DEF_SK)),
            ])
        })
        .collect();
    let items = super::batch_get(ddb, &cfg.jobs_table, keys, true, "BatchGetItem").await?;
    Ok(items.iter().map(items::job_from_item).collect::<Result<_, _>>()?)
}

/// Result of a CAS on a job's trigger position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Advance {
    /// Moved.
    Advanced,
    /// Someone else moved it, or the job was paused, deleted or edited since it was read.
    Lost,
}

/// CAS-advances a job's trigger position from `read_next` (the value this scan read) to
/// `new_next` in the `class` partition (or removes it from the `due` index when the schedule
/// is exhausted).
pub async fn advance_job(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    job: &Job,
    read_next: DateTime<Utc>,
    new_next: Option<DateTime<Utc>>,
    class: DueClass,
) -> Result<Advance, StoreError> {
    let mut e = Expr::new();
    match new_next {
        Some(next) => {
            let moved = Job { due_class: class, ..job.clone() };
            let (pk, sk) = items::due_keys(&moved, next);
            e.set(attr::NEXT, n(next.timestamp_millis()))
                .set(attr::DUE_PK, s(pk))
                .set(attr::DUE_SK, s(sk))
                .set(attr::EVERY, s(class.code()));
            // A new position is computed by this build: it records this build's tz database.
            // A class move that keeps the position (admission -> bucket) keeps its record.
            if next != read_next {
                e.set(attr::TZDB, s(sundial_schedule::tzdb_version()));
            }
        }
        None => {
            e.remove(attr::NEXT).remove(attr::DUE_PK).remove(attr::DUE_SK);
        }
    }
    e.cond_eq(attr::NEXT, n(read_next.timestamp_millis()))
        .cond_eq(attr::VERSION, n(job.version))
        .cond_eq(attr::STATE, s(items::state_str(JobState::Enabled)));
    let res = ddb
        .update_item()
        .table_name(table)
        .key(attr::PK, s(keys::job_pk(&job.tenant, &job.job_id)))
        .key(attr::SK, s(keys::JOB_DEF_SK))
        .expr(e)
        .send()
        .await;
    match res {
        Ok(_) => Ok(Advance::Advanced),
        Err(e) if is_condition_failed(&e) => Ok(Advance::Lost),
        Err(e) => Err(StoreError::from_sdk("UpdateItem", e)),
    }
}

/// Ends a job that created its `maxRuns` scheduled fires (docs/schedule.md, "A run-count
/// limit"): `COMPLETED`, out of the `due` index, a new version, its `complete` audit entry by
/// actor `max-runs` — one versioned write conditional on the version `job` was read at, so an
/// edit since (which may have raised the limit) wins and the next scan judges again.
/// [`Advance::Lost`] when the job changed since.
pub async fn complete_job(
    ddb: &aws_sdk_dynamodb::Client,
    cfg: &Config,
    job: &Job,
    runs: u64,
    now: DateTime<Utc>,
    ops_retention_secs: i64,
) -> Result<Advance, StoreError> {
    let done = Job {
        state: JobState::Completed,
        version: job.version + 1,
        updated_at: now,
        next_fire_at: None,
        ..job.clone()
    };
    let audit = OpsEntry::new(MAX_RUNS_ACTOR, sundial_model::OpsAction::Complete, &job.job_id, now)
        .versions(Some(job.version), Some(done.version))
        .detail(format!("{runs} scheduled fires created (maxRuns)"));
    match put_job_change(ddb, cfg, Expect::Version(job.version), &done, None, &audit, ops_retention_secs)
        .await
    {
        Ok(()) => Ok(Advance::Advanced),
        Err(ChangeError::Store(e)) => Err(e),
        Err(ChangeError::Exists | ChangeError::VersionConflict { .. }) => Ok(Advance::Lost),
    }
}

/// The actor of a completion ([`complete_job`]).
pub const MAX_RUNS_ACTOR: &str = "max-runs";

/// The jobs of one `due` partition, and the items in it that did not decode.
#[derive(Debug, Default)]
pub struct DueJobs {
    /// The jobs.
    pub jobs: Vec<Job>,
    /// Items that are not a job this version can read (a newer writer's field, a hand edit):
    /// logged with their key and skipped, so one poison item never stops its partition.
    pub undecodable: u64,
}

/// Queries one `due` index partition (a `{minute}#{shard}` bucket, or a shard's `A#` admission
/// or `E#` every-minute class), following pagination.
pub async fn query_due(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    due_pk: &str,
) -> Result<DueJobs, StoreError> {
    let mut out = DueJobs::default();
    let mut e = Expr::new();
    e.key_eq(attr::DUE_PK, s(due_pk));
    let mut pages =
        Pager::new(ddb.query().table_name(table).index_name(index::due()?).expr(e), None, "Query");
    while let Some(page) = pages.next().await? {
        for item in &page.items {
            match items::job_from_item(item) {
                Ok(j) => out.jobs.push(j),
                Err(e) => {
                    let key = item.get(attr::PK).and_then(|v| v.as_s().ok()).cloned().unwrap_or_default();
                    tracing::error!(due_pk, item = %key, error = %e, "a job item in the due index does not decode; skipped (the rest of its partition is scanned)");
                    out.undecodable += 1;
                }
            }
        }
    }
    Ok(out)
}
