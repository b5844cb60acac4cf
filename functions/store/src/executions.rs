//! Execution items: creation, the one read, and every conditional write of an execution's
//! life (seed 000 §5–§6), plus the Queries over a job's executions and the `attention` index.
//!
//! - [`ExecStore::put_new`]: `PutItem IF attribute_not_exists(pk)`. The key is (job,
//!   scheduled_at), so a second put for the same fire is absorbed: [`PutOutcome::Exists`] is
//!   success.
//! - [`ExecStore::get`]: the one read, decoding the whole item into a [`Snapshot`] (the
//!   execution, its checkpoint, run time so far and input digest).
//! - Claim, heartbeat, checkpoint, release and finish are compare-and-sets on `(st, tok)`: the
//!   claim moves `READY`/`RETRY_WAIT` (once available) or `RUNNING`-with-an-expired-lease to
//!   `RUNNING` and sets `tok = old + 1` (the rules are [`sundial_model::claim`]'s); the
//!   others succeed only while `st = RUNNING` and `tok` is still the caller's. A worker that
//!   paused past its lease and woke up after a takeover therefore finds every write refused
//!   ([`FinishResult::TakenOver`], [`CheckpointError::Stale`]): its result is not published.
//!   Each transition appends its [`AuditEvent`] in the same write.
//! - Cancel, skip (the FORBID policy) and replay (a dead letter, DEAD → READY) are CAS writes
//!   of the same kind.
//!
//! Cost: the happy path is one eventually consistent read (½ read unit) to learn the status and
//! token, then one write unit for the claim and one for the finish (items stay under 1 KiB).
//! Heartbeats only happen for runs longer than a third of the lease. A failed condition is not
//! an error but a typed outcome carrying the item as it is (`ReturnValuesOnConditionCheckFailure`),
//! so losing a race costs no extra read.

use super::error::{is_condition_failed, StoreError};
use super::expr::{Cmp, Expr, WithExpr};
use super::items::{self, attr, index, n, Item};
use super::QueryPage;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure};
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;
use chrono::{DateTime, Utc};
use std::collections::HashMap;
use sundial_model::children::ChildKey;
use sundial_model::claim::{next_step, Fence, Finish, LeaseTerms, Step};
use sundial_model::keys;
use sundial_model::retry::codes;
use sundial_model::{AuditEvent, ExecMessage, ExecStatus, Execution};

/// Executions are kept this long after creation (the table's TTL attribute).
pub const EXECUTION_RETENTION_SECS: i64 = 90 * 86_400;

/// Longest stored error message (characters): the item must stay under 1 KiB.
pub const MAX_ERROR_MESSAGE_CHARS: usize = 200;
/// Largest checkpoint state (bytes of JSON). Larger state belongs in S3, with its key here.
pub const MAX_CHECKPOINT_BYTES: usize = 2_048;

/// The primary key of an execution.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ExecKey {
    /// Tenant.
    pub tenant: String,
    /// Job.
    pub job_id: String,
    /// Scheduled instant (ms).
    pub scheduled_ms: i64,
    /// Which child of the fire at that instant, for a child execution (`docs/children.md`).
    pub child: Option<ChildKey>,
}

impl ExecKey {
    /// The key of a fire (a parent or ordinary execution, not a child).
    pub fn new(tenant: impl Into<String>, job_id: impl Into<String>, scheduled_ms: i64) -> Self {
        ExecKey { tenant: tenant.into(), job_id: job_id.into(), scheduled_ms, child: None }
    }

    /// The key of the execution a queue message stands for. A child part that does not parse
    /// names no child (the read then finds the parent, which no claim runs twice).
    pub fn of_message(m: &ExecMessage) -> Self {
        ExecKey {
            tenant: m.tenant.clone(),
            job_id: m.job_id.clone(),
            scheduled_ms: m.scheduled_ms,
            child: m.child.as_deref().and_then(ChildKey::parse),
        }
    }

    /// The key of an execution.
    pub fn of(e: &Execution) -> Self {
        ExecKey {
            tenant: e.tenant.clone(),
            job_id: e.job_id.clone(),
            scheduled_ms: e.scheduled_at.timestamp_millis(),
            child: e.child.clone(),
        }
    }

    /// The key of this key's parent (itself when it is not a child).
    pub fn parent(&self) -> Self {
        ExecKey { child: None, ..self.clone() }
    }

    /// Partition key.
    pub fn pk(&self) -> String {
        keys::job_pk(&self.tenant, &self.job_id)
    }

    /// Sort key.
    pub fn sk(&self) -> String {
        match &self.child {
            None => keys::exec_sk(self.scheduled_ms),
            Some(c) => keys::exec_child_sk(self.scheduled_ms, c),
        }
    }

    /// The public execution id (`{job}@{ms}`, a child's `{job}@{ms}.{tag}`), relative to the
    /// caller's tenant.
    pub fn id(&self) -> String {
        keys::child_execution_id(&keys::execution_id(&self.job_id, self.scheduled_ms), self.child.as_ref())
    }

    /// The id outside the system (`{tenant}:{job}@{ms}`, a child's with `.{tag}`).
    pub fn global_id(&self) -> String {
        keys::child_execution_id(
            &keys::global_execution_id(&self.tenant, &self.job_id, self.scheduled_ms),
            self.child.as_ref(),
        )
    }
}

/// An execution as read: the whole item decoded, including the attributes only the execution
/// plane writes.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// The execution.
    pub exec: Execution,
    /// The last checkpoint, if any.
    pub checkpoint: Option<serde_json::Value>,
    /// Run time of finished attempts (ms).
    pub total_run_ms: i64,
    /// SHA-256 prefix of the input, stored when the execution went DEAD.
    pub digest: Option<String>,
    /// When the reconciler looks at it next (ms; `None` once final).
    pub open_due: Option<i64>,
    /// How many times the reconciler re-sent its message.
    pub resends: u32,
    /// Held by a pause of this job version: it runs only if a resume releases it first.
    pub held: Option<u64>,
    /// When it was found not started past its start deadline (ms; reported once).
    pub missed_at: Option<i64>,
}

/// Result of putting a new execution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PutOutcome {
    /// This call created it.
    Created,
    /// It already existed (a duplicate tick, or a retry after a crash), in this status.
    Exists(ExecStatus),
}

/// A successful claim.
#[derive(Debug, Clone, PartialEq)]
pub struct Claimed {
    /// The execution as the claim left it (RUNNING, new token).
    pub snapshot: Snapshot,
    /// The credentials for every later write.
    pub fence: Fence,
    /// The status it was claimed from.
    pub from: ExecStatus,
    /// Whether this claim took over an expired lease.
    pub takeover: bool,
    /// The lease end this claim wrote (ms).
    pub lease_until: i64,
}

/// The result of a claim.
#[derive(Debug, Clone, PartialEq)]
pub enum ClaimOutcome {
    /// This worker now holds the execution.
    Claimed(Box<Claimed>),
    /// Not claimable before `available_at` (ms): early delivery, or a retry backoff.
    NotYet {
        /// When it becomes claimable.
        available_at: i64,
    },
    /// Another worker holds a live lease; it counts as expired after `expires_at` (ms).
    Held {
        /// When a takeover becomes possible.
        expires_at: i64,
    },
    /// Nothing to run: the execution is in this final status (possibly just now cancelled).
    Finished(ExecStatus),
    /// No such execution (expired by TTL, or a message that never had one).
    Missing,
}

/// The result of a finish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishResult {
    /// Recorded.
    Done,
    /// The execution was taken over (or finished by someone else): this result is discarded.
    TakenOver {
        /// Its status now, if known.
        status: Option<ExecStatus>,
        /// Its token now, if known.
        token: Option<u64>,
    },
}

/// The result of a heartbeat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Heartbeat {
    /// The lease now ends later; `cancel_requested` tells the runner to stop at a safe point.
    Extended {
        /// A cancel was requested.
        cancel_requested: bool,
    },
    /// The lease is no longer ours: stop, publish nothing.
    Lost,
}

/// A checkpoint was not stored.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// The token is stale: another worker took the execution over.
    #[error("checkpoint refused: fencing token {token} of execution {execution} is stale")]
    Stale {
        /// The execution.
        execution: String,
        /// The stale token.
        token: u64,
    },
    /// The state is too large to store inline.
    #[error("checkpoint state: {bytes} bytes exceeds {max}")]
    TooLarge {
        /// Its size.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// DynamoDB failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The result of a cancel request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelOutcome {
    /// It was not running: now CANCELED, it will not run.
    Canceled,
    /// It is running: the flag is set; the runner stops at its next safe point.
    Requested,
    /// Already final.
    AlreadyFinal(ExecStatus),
    /// No such execution.
    Missing,
}

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

fn truncate(m: &str) -> String {
    match m.char_indices().nth(MAX_ERROR_MESSAGE_CHARS) {
        Some((i, _)) => format!("{}…", &m[..i]),
        None => m.to_string(),
    }
}

/// Either the new item, or the item as it was when the condition failed (`None` = no item).
pub(super) type CasResult = Result<Item, Option<Item>>;

/// The execution table's conditional writes for the execution plane.
#[derive(Debug, Clone)]
pub struct ExecStore {
    ddb: aws_sdk_dynamodb::Client,
    table: String,
}

impl ExecStore {
    /// A store on `table`.
    pub fn new(ddb: aws_sdk_dynamodb::Client, table: impl Into<String>) -> Self {
        ExecStore { ddb, table: table.into() }
    }

    /// The DynamoDB client.
    pub fn client(&self) -> &aws_sdk_dynamodb::Client {
        &self.ddb
    }

    /// The table.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// Reads an execution (`consistent`: strongly consistent, one read unit instead of ½).
    pub async fn get(&self, key: &ExecKey, consistent: bool) -> Result<Option<Snapshot>, StoreError> {
        Ok(self.get_item(key, consistent).await?.as_ref().map(items::snapshot_from_item).transpose()?)
    }

    pub(super) async fn get_item(&self, key: &ExecKey, consistent: bool) -> Result<Option<Item>, StoreError> {
        let out = self
            .ddb
            .get_item()
            .table_name(&self.table)
            .key(attr::PK, s(key.pk()))
            .key(attr::SK, s(key.sk()))
            .consistent_read(consistent)
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("GetItem", e))?;
        Ok(out.item)
    }

    /// Creates the execution unless one exists for the same (job, scheduled_at).
    pub async fn put_new(&self, e: &Execution) -> Result<PutOutcome, StoreError> {
        self.put(e, items::execution_to_item(e, EXECUTION_RETENTION_SECS)).await
    }

    /// [`ExecStore::put_new`] without the `open` index entry: for fires of every-minute and
    /// daily jobs, which the trigger's verification pass finds again (`trigger::verify`). Saves
    /// the index write at the put and the one at the final write.
    pub async fn put_new_unindexed(&self, e: &Execution) -> Result<PutOutcome, StoreError> {
        let mut item = items::execution_to_item(e, EXECUTION_RETENTION_SECS);
        item.remove(attr::OPEN_PK);
        item.remove(attr::OPEN_DUE);
        self.put(e, item).await
    }

    async fn put(&self, e: &Execution, item: Item) -> Result<PutOutcome, StoreError> {
        let mut cond = Expr::new();
        cond.cond_not_exists(attr::PK);
        let res = self
            .ddb
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .expr(cond)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match res {
            Ok(_) => Ok(PutOutcome::Created),
            Err(err) if is_condition_failed(&err) => {
                let old = match err.into_service_error() {
                    PutItemError::ConditionalCheckFailedException(c) => c.item,
                    _ => None,
                };
                let old = match old {
                    Some(i) => i,
                    // Not every server returns the old item: read it.
                    None => self.get_item(&ExecKey::of(e), true).await?.unwrap_or_default(),
                };
                Ok(PutOutcome::Exists(items::status_of(&old).unwrap_or(ExecStatus::Ready)))
            }
            Err(err) => Err(StoreError::from_sdk("PutItem", err)),
        }
    }

    pub(super) async fn cas(
        &self,
        key: &ExecKey,
        op: &'static str,
        e: Expr,
    ) -> Result<CasResult, StoreError> {
        let req = self
            .ddb
            .update_item()
            .table_name(&self.table)
            .key(attr::PK, s(key.pk()))
            .key(attr::SK, s(key.sk()))
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        match req.expr(e).send().await {
            Ok(out) => Ok(Ok(out.attributes.unwrap_or_default())),
            Err(err) if is_condition_failed(&err) => Ok(Err(old_item(err))),
            Err(err) => Err(StoreError::from_sdk(op, err)),
        }
    }

    /// Claims an execution for `owner` (seed 000 §5): READY or RETRY_WAIT once available, or
    /// RUNNING whose lease expired, moves to RUNNING with a new lease and `tok + 1`. A cancel
    /// requested on an execution nobody runs is completed here (→ CANCELED) instead.
    pub async fn claim(
        &self,
        key: &ExecKey,
        owner: &str,
        terms: &LeaseTerms,
        now: DateTime<Utc>,
    ) -> Result<ClaimOutcome, StoreError> {
        // An eventually consistent read is enough to aim the CAS; the CAS is the authority.
        let snap = self.get(key, false).await?;
        self.claim_from(key, snap, owner, terms, now).await
    }

    /// [`ExecStore::claim`] starting from an already-read snapshot.
    pub async fn claim_from(
        &self,
        key: &ExecKey,
        mut snap: Option<Snapshot>,
        owner: &str,
        terms: &LeaseTerms,
        now: DateTime<Utc>,
    ) -> Result<ClaimOutcome, StoreError> {
        let now_ms = now.timestamp_millis();
        let mut confirmed = false;
        for _ in 0..5 {
            let Some(cur) = snap.take() else {
                // A stale read may miss a just-created item: confirm before calling it missing.
                if confirmed {
                    return Ok(ClaimOutcome::Missing);
                }
                confirmed = true;
                snap = self.get(key, true).await?;
                continue;
            };
            match next_step(&cur.exec, terms, now_ms) {
                Step::Claim { from, token, attempt } => {
                    let lease_until = now_ms + terms.duration_ms;
                    let fence = Fence {
                        owner: owner.to_string(),
                        token: token + 1,
                        attempt: attempt + 1,
                        indexed: cur.open_due.is_some(),
                    };
                    let takeover = from == ExecStatus::Running;
                    let ev = AuditEvent {
                        at: now_ms,
                        actor: format!("worker:{owner}"),
                        from: Some(from),
                        to: ExecStatus::Running,
                        attempt: fence.attempt,
                        token: fence.token,
                        code: takeover.then(|| codes::LEASE_EXPIRED.to_string()),
                    };
                    let mut e = Expr::default();
                    e.set(attr::STATUS, s(ExecStatus::Running.as_str()))
                        .set(attr::LEASE_OWNER, s(owner))
                        .set(attr::LEASE_UNTIL, n(lease_until))
                        .set(attr::TOKEN, n(fence.token))
                        .set(attr::ATTEMPT, n(fence.attempt))
                        .append_event(&ev)
                        .cond_eq(attr::STATUS, s(from.as_str()))
                        .cond_eq(attr::TOKEN, n(token))
                        .cond_absent_or(attr::CANCEL, Cmp::Eq, AttributeValue::Bool(false));
                    if from.needs_attention() {
                        e.remove(attr::ATT_PK).remove(attr::ATT_SK);
                    }
                    if takeover {
                        let exp = now_ms - terms.skew_margin_ms;
                        e.cond_cmp(attr::LEASE_UNTIL, Cmp::Lt, n(exp));
                    } else {
                        e.cond_cmp(attr::AVAILABLE, Cmp::Le, n(now_ms));
                    }
                    match self.cas(key, "UpdateItem(claim)", e).await? {
                        Ok(item) => {
                            let snapshot = items::snapshot_from_item(&item)?;
                            return Ok(ClaimOutcome::Claimed(Box::new(Claimed {
                                snapshot,
                                fence,
                                from,
                                takeover,
                                lease_until,
                            })));
                        }
                        Err(old) => snap = old.as_ref().map(items::snapshot_from_item).transpose()?,
                    }
                }
                Step::Cancel { from, token, attempt } => {
                    let actor = format!("worker:{owner}");
                    match self.cas_cancel(key, from, token, attempt, &actor, now_ms).await? {
                        Ok(_) => return Ok(ClaimOutcome::Finished(ExecStatus::Canceled)),
                        Err(old) => snap = old.as_ref().map(items::snapshot_from_item).transpose()?,
                    }
                }
                Step::NotYet(at) => return Ok(ClaimOutcome::NotYet { available_at: at }),
                Step::Held(at) => return Ok(ClaimOutcome::Held { expires_at: at }),
                Step::Finished(st) => {
                    // Final statuses are final, except an audited DLQ replay (DEAD → READY):
                    // confirm a stale "final" before anyone deletes the message on its word.
                    if confirmed {
                        return Ok(ClaimOutcome::Finished(st));
                    }
                    confirmed = true;
                    snap = self.get(key, true).await?;
                }
            }
        }
        // Lost the race five times in a row: let the message come back shortly.
        Ok(ClaimOutcome::Held { expires_at: now_ms + 1_000 })
    }

    async fn cas_cancel(
        &self,
        key: &ExecKey,
        from: ExecStatus,
        token: u64,
        attempt: u32,
        actor: &str,
        now_ms: i64,
    ) -> Result<CasResult, StoreError> {
        self.cas_cancel_with(key, (from, token, attempt), codes::CANCELED, actor, now_ms).await
    }

    /// `from` → CANCELED with `code` if the execution is still at `(from, token)`: the audit
    /// event, the `attention` keys, and out of the lease and the `open` index, in one write.
    pub(super) async fn cas_cancel_with(
        &self,
        key: &ExecKey,
        (from, token, attempt): (ExecStatus, u64, u32),
        code: &str,
        actor: &str,
        now_ms: i64,
    ) -> Result<CasResult, StoreError> {
        let ev = AuditEvent {
            at: now_ms,
            actor: actor.to_string(),
            from: Some(from),
            to: ExecStatus::Canceled,
            attempt,
            token,
            code: Some(code.into()),
        };
        let mut e = Expr::default();
        e.set(attr::STATUS, s(ExecStatus::Canceled.as_str()))
            .set(attr::ERR_CODE, s(code))
            .set(attr::ATT_PK, s(keys::attention_pk(&key.tenant, ExecStatus::Canceled.as_str())))
            .set(attr::ATT_SK, s(keys::attention_sk(key.scheduled_ms, &key.job_id)))
            .append_event(&ev)
            .remove(attr::LEASE_UNTIL)
            .remove(attr::OPEN_PK)
            .remove(attr::OPEN_DUE)
            .cond_eq(attr::STATUS, s(from.as_str()))
            .cond_eq(attr::TOKEN, n(token));
        self.cas(key, "UpdateItem(cancel)", e).await
    }

    pub(super) fn fenced(e: &mut Expr, fence: &Fence) {
        e.cond_eq(attr::STATUS, s(ExecStatus::Running.as_str()))
            .cond_eq(attr::TOKEN, n(fence.token))
            .cond_eq(attr::LEASE_OWNER, s(&fence.owner));
    }

    /// Extends the lease to `lease_until` (ms) if `fence` still holds it.
    pub async fn heartbeat(
        &self,
        key: &ExecKey,
        fence: &Fence,
        lease_until: i64,
    ) -> Result<Heartbeat, StoreError> {
        let mut e = Expr::default();
        e.set(attr::LEASE_UNTIL, n(lease_until));
        Self::fenced(&mut e, fence);
        Ok(match self.cas(key, "UpdateItem(heartbeat)", e).await? {
            Ok(item) => Heartbeat::Extended { cancel_requested: cancel_flag(&item) },
            Err(_) => Heartbeat::Lost,
        })
    }

    /// Stores a checkpoint (and extends the lease) if `fence` still holds the execution.
    /// Returns whether a cancel was requested.
    pub async fn checkpoint(
        &self,
        key: &ExecKey,
        fence: &Fence,
        state: &serde_json::Value,
        lease_until: i64,
    ) -> Result<bool, CheckpointError> {
        let text = state.to_string();
        if text.len() > MAX_CHECKPOINT_BYTES {
            return Err(CheckpointError::TooLarge { bytes: text.len(), max: MAX_CHECKPOINT_BYTES });
        }
        let mut e = Expr::default();
        e.set(attr::CHECKPOINT, s(text)).set(attr::LEASE_UNTIL, n(lease_until));
        Self::fenced(&mut e, fence);
        match self.cas(key, "UpdateItem(checkpoint)", e).await? {
            Ok(item) => Ok(cancel_flag(&item)),
            Err(_) => Err(CheckpointError::Stale { execution: key.id(), token: fence.token }),
        }
    }

    /// Gives the lease up without finishing (shutdown, Lambda deadline): the next claimer takes
    /// it over at once. Returns false if it was no longer ours.
    pub async fn release(&self, key: &ExecKey, fence: &Fence) -> Result<bool, StoreError> {
        let mut e = Expr::default();
        e.set(attr::LEASE_UNTIL, n(0));
        Self::fenced(&mut e, fence);
        Ok(self.cas(key, "UpdateItem(release)", e).await?.is_ok())
    }

    /// Records how an attempt ended, if `fence` still holds the execution.
    pub async fn finish(
        &self,
        key: &ExecKey,
        fence: &Fence,
        finish: &Finish,
        now: DateTime<Utc>,
    ) -> Result<FinishResult, StoreError> {
        let e = Self::finish_expr(key, fence, finish, now);
        Ok(match self.cas(key, "UpdateItem(finish)", e).await? {
            Ok(_) => FinishResult::Done,
            Err(old) => {
                let cur = old.as_ref().and_then(|i| items::snapshot_from_item(i).ok());
                FinishResult::TakenOver {
                    status: cur.as_ref().map(|c| c.exec.status),
                    token: cur.as_ref().map(|c| c.exec.fencing_token),
                }
            }
        })
    }

    /// The fenced update of [`ExecStore::finish`] (also a map-reduce item's, in a transaction).
    pub(super) fn finish_expr(key: &ExecKey, fence: &Fence, finish: &Finish, now: DateTime<Utc>) -> Expr {
        let to = finish.status();
        let code = match finish {
            Finish::Succeeded => None,
            Finish::RetryWait { error, .. } | Finish::Failed { error } => Some(error.code.clone()),
            Finish::Dead { reason, .. } => Some(reason.clone()),
            Finish::Canceled => Some(codes::CANCELED.to_string()),
        };
        let ev = AuditEvent {
            at: now.timestamp_millis(),
            actor: format!("worker:{}", fence.owner),
            from: Some(ExecStatus::Running),
            to,
            attempt: fence.attempt,
            token: fence.token,
            code,
        };
        let mut e = Expr::default();
        e.set(attr::STATUS, s(to.as_str())).append_event(&ev).remove(attr::LEASE_UNTIL);
        if to.is_terminal() && fence.indexed {
            e.remove(attr::OPEN_PK).remove(attr::OPEN_DUE);
        }
        if to.needs_attention() {
            e.set(attr::ATT_PK, s(keys::attention_pk(&key.tenant, to.as_str())))
                .set(attr::ATT_SK, s(keys::attention_sk(key.scheduled_ms, &key.job_id)));
        }
        match finish {
            Finish::Succeeded => {}
            Finish::RetryWait { available_at, error, total_run_ms } => {
                // A retry waits on a delayed message only: the reconciler must know about it.
                if !fence.indexed {
                    e.set(attr::OPEN_PK, s(keys::open_partition(keys::open_part(&key.tenant, &key.job_id))));
                }
                e.set(attr::AVAILABLE, n(*available_at))
                    .set(attr::OPEN_DUE, n(available_at + sundial_model::reconcile::GRACE_MS))
                    .set(attr::ERR_CODE, s(&error.code))
                    .set(attr::ERR_MSG, s(truncate(&error.message)))
                    .set(attr::RUN_MS, n(*total_run_ms));
            }
            Finish::Failed { error } => {
                e.set(attr::ERR_CODE, s(&error.code)).set(attr::ERR_MSG, s(truncate(&error.message)));
            }
            Finish::Dead { reason, error, digest } => {
                e.set(attr::ERR_CODE, s(&error.code))
                    .set(attr::ERR_MSG, s(truncate(&format!("{reason}: {}", error.message))))
                    .set(attr::DIGEST, s(digest));
            }
            Finish::Canceled => {
                e.set(attr::ERR_CODE, s(codes::CANCELED));
            }
        }
        Self::fenced(&mut e, fence);
        e
    }

    /// Requests cancellation (API, or the REPLACE policy): an execution nobody runs becomes
    /// CANCELED at once and will not run; a running one gets the `cx` flag its runner sees at the
    /// next heartbeat or checkpoint. A waiting parent (`docs/children.md`) becomes CANCELED
    /// and each of its children not final yet gets the same request.
    pub async fn request_cancel(
        &self,
        key: &ExecKey,
        actor: &str,
        now: DateTime<Utc>,
    ) -> Result<CancelOutcome, StoreError> {
        let out = self.cancel_one(key, actor, now).await?;
        if out != CancelOutcome::Canceled {
            return Ok(out);
        }
        if key.child.is_some() {
            // A child cancelled alone counts on its parent now, not at the reconciler's look.
            // (A map-reduce item does not: its parent counts only finishes, and the reconciler
            // starts the reduce once every item is final, `docs/mapreduce.md`.)
            if !matches!(key.child, Some(ChildKey::Item(_))) {
                self.count_child(key, ExecStatus::Canceled, actor, now).await?;
            }
            return Ok(out);
        }
        for kid in self.children_of(key).await? {
            if !kid.status.is_terminal() {
                self.cancel_one(&ExecKey::of(&kid), actor, now).await?;
            }
        }
        Ok(out)
    }

    async fn cancel_one(
        &self,
        key: &ExecKey,
        actor: &str,
        now: DateTime<Utc>,
    ) -> Result<CancelOutcome, StoreError> {
        let now_ms = now.timestamp_millis();
        for _ in 0..5 {
            let Some(cur) = self.get(key, true).await? else { return Ok(CancelOutcome::Missing) };
            let ex = &cur.exec;
            match ex.status {
                ExecStatus::Ready | ExecStatus::RetryWait | ExecStatus::Waiting => {
                    if self
                        .cas_cancel(key, ex.status, ex.fencing_token, ex.attempt, actor, now_ms)
                        .await?
                        .is_ok()
                    {
                        return Ok(CancelOutcome::Canceled);
                    }
                }
                ExecStatus::Running => {
                    let mut e = Expr::default();
                    e.set(attr::CANCEL, AttributeValue::Bool(true))
                        .cond_eq(attr::STATUS, s(ExecStatus::Running.as_str()))
                        .cond_eq(attr::TOKEN, n(ex.fencing_token));
                    if self.cas(key, "UpdateItem(cancel-flag)", e).await?.is_ok() {
                        return Ok(CancelOutcome::Requested);
                    }
                }
                st => return Ok(CancelOutcome::AlreadyFinal(st)),
            }
        }
        Err(StoreError::Transient { op: "UpdateItem(cancel)", message: "lost the race five times".into() })
    }

    /// READY → SKIPPED (the FORBID policy), with the reason. False if it was no longer READY.
    pub async fn skip(
        &self,
        key: &ExecKey,
        current: &Execution,
        actor: &str,
        reason: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let ev = AuditEvent {
            at: now.timestamp_millis(),
            actor: actor.to_string(),
            from: Some(ExecStatus::Ready),
            to: ExecStatus::Skipped,
            attempt: current.attempt,
            token: current.fencing_token,
            code: Some(codes::FORBID_OVERLAP.into()),
        };
        let mut e = Expr::default();
        e.set(attr::STATUS, s(ExecStatus::Skipped.as_str()))
            .set(attr::ERR_CODE, s(codes::FORBID_OVERLAP))
            .set(attr::ERR_MSG, s(truncate(reason)))
            .append_event(&ev)
            .remove(attr::OPEN_PK)
            .remove(attr::OPEN_DUE)
            .cond_eq(attr::STATUS, s(ExecStatus::Ready.as_str()))
            .cond_eq(attr::TOKEN, n(current.fencing_token));
        Ok(self.cas(key, "UpdateItem(skip)", e).await?.is_ok())
    }

    /// DEAD → READY, the audited replay of a dead letter: resets the attempt count and the
    /// run-time budget, clears the error, lease, cancel flag and `attention` keys, and appends
    /// the event (`actor`, `code`). The fencing token is kept: the next claim takes it one
    /// higher. False if it was no longer DEAD at `token`.
    pub async fn replay(
        &self,
        key: &ExecKey,
        token: u64,
        actor: &str,
        code: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let ev = AuditEvent {
            at: now.timestamp_millis(),
            actor: actor.to_string(),
            from: Some(ExecStatus::Dead),
            to: ExecStatus::Ready,
            attempt: 0,
            token,
            code: Some(code.to_string()),
        };
        let mut e = Expr::new();
        e.set(attr::STATUS, s(ExecStatus::Ready.as_str()))
            .set(attr::ATTEMPT, n(0))
            .set(attr::AVAILABLE, n(now.timestamp_millis()))
            .set(attr::RUN_MS, n(0))
            .set(attr::OPEN_PK, s(keys::open_partition(keys::open_part(&key.tenant, &key.job_id))))
            .set(attr::OPEN_DUE, n(now.timestamp_millis() + sundial_model::reconcile::GRACE_MS))
            .append_event(&ev);
        for a in [attr::ATT_PK, attr::ATT_SK, attr::ERR_CODE, attr::ERR_MSG, attr::LEASE_UNTIL, attr::CANCEL]
        {
            e.remove(a);
        }
        e.cond_eq(attr::STATUS, s(ExecStatus::Dead.as_str())).cond_eq(attr::TOKEN, n(token));
        Ok(self.cas(key, "UpdateItem(replay)", e).await?.is_ok())
    }

    /// One page of a job's executions in scheduled order (newest first unless
    /// `page.oldest_first`); `next` is the scheduled instant (ms) the next page starts after.
    pub async fn list_for_job(
        &self,
        tenant: &str,
        job_id: &str,
        page: &JobPage,
    ) -> Result<QueryPage<Execution, i64>, StoreError> {
        let pk = keys::job_pk(tenant, job_id);
        let start = page.after_ms.map(|ms| {
            HashMap::from([(attr::PK.to_string(), s(&pk)), (attr::SK.to_string(), s(keys::exec_sk(ms)))])
        });
        let mut e = Expr::new();
        e.key_eq(attr::PK, s(&pk)).key_begins_with(attr::SK, keys::EXEC_SK_PREFIX);
        if let Some(st) = page.status {
            e.filter_eq(attr::STATUS, s(st.as_str()));
        }
        // The fires only: children are listed under their parent (`docs/children.md`).
        e.filter_not_exists(attr::CHILD);
        // DynamoDB applies `Limit` before the filter, and a fire's children sort right after it
        // (first, newest first): one query of `limit` items could return an empty page with a
        // cursor. Read on, in bigger steps, until the page is full, the partition ends or
        // `MAX_PAGE_QUERIES` queries were spent (then the cursor says where to go on).
        let want = page.limit.max(1) as usize;
        let mut items = Vec::new();
        let mut start = start;
        let mut last_key = None;
        for i in 0..MAX_PAGE_QUERIES {
            let step = if i == 0 { page.limit } else { page.limit.max(CHILD_SKIP_STEP) };
            let out = self
                .ddb
                .query()
                .table_name(&self.table)
                .expr(e.clone())
                .scan_index_forward(page.oldest_first)
                .limit(step)
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| StoreError::from_sdk("Query(executions)", e))?;
            for it in out.items() {
                items.push(items::execution_from_item(it)?);
            }
            last_key = out.last_evaluated_key().cloned();
            if items.len() >= want || last_key.is_none() {
                break;
            }
            start = last_key.clone();
        }
        if items.len() >= want {
            // A full page: the next one starts after its last fire.
            let more = items.len() > want || last_key.is_some();
            items.truncate(want);
            let next = if more { items.last().map(|e| e.scheduled_at.timestamp_millis()) } else { None };
            return Ok(QueryPage { items, next });
        }
        // A page may end on a child (children sort right after their parent): newest first,
        // its parent is still to come, so the next page starts after the instant above it.
        let next = last_key
            .as_ref()
            .and_then(|k| k.get(attr::SK))
            .and_then(|v| v.as_s().ok())
            .and_then(|sk| keys::parse_any_exec_sk(sk))
            .map(|(ms, child)| if child.is_some() && !page.oldest_first { ms + 1 } else { ms });
        Ok(QueryPage { items, next })
    }

    /// One page of a tenant's executions in an off-happy-path status (RETRY_WAIT, FAILED,
    /// DEAD, CANCELED), newest first, from the sparse `attention` index; `next` is the key of
    /// the last execution read.
    pub async fn list_attention(
        &self,
        tenant: &str,
        status: ExecStatus,
        limit: i32,
        after: Option<&ExecKey>,
    ) -> Result<QueryPage<Execution, ExecKey>, StoreError> {
        let att_pk = keys::attention_pk(tenant, status.as_str());
        let start = after.map(|k| {
            HashMap::from([
                (attr::ATT_PK.to_string(), s(&att_pk)),
                (attr::ATT_SK.to_string(), s(keys::attention_sk(k.scheduled_ms, &k.job_id))),
                (attr::PK.to_string(), s(k.pk())),
                (attr::SK.to_string(), s(k.sk())),
            ])
        });
        let mut e = Expr::new();
        e.key_eq(attr::ATT_PK, s(&att_pk));
        let out = self
            .ddb
            .query()
            .table_name(&self.table)
            .index_name(index::attention()?)
            .expr(e)
            .scan_index_forward(false)
            .limit(limit)
            .set_exclusive_start_key(start)
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("Query(attention)", e))?;
        let items = out.items().iter().map(items::execution_from_item).collect::<Result<Vec<_>, _>>()?;
        let next = out.last_evaluated_key().and_then(|k| {
            let job = k.get(attr::PK).and_then(|v| v.as_s().ok()).and_then(|pk| keys::job_of_pk(pk))?;
            let (ms, child) =
                k.get(attr::SK).and_then(|v| v.as_s().ok()).and_then(|sk| keys::parse_any_exec_sk(sk))?;
            Some(ExecKey { tenant: tenant.to_string(), job_id: job.to_string(), scheduled_ms: ms, child })
        });
        Ok(QueryPage { items, next })
    }

    /// Every execution of a job scheduled after `after_ms`, as snapshots (consistent reads, all
    /// pages).
    pub async fn scheduled_after(
        &self,
        tenant: &str,
        job_id: &str,
        after_ms: i64,
    ) -> Result<Vec<Snapshot>, StoreError> {
        let pk = keys::job_pk(tenant, job_id);
        let mut start = None;
        let mut found = Vec::new();
        loop {
            let mut e = Expr::new();
            e.key_eq(attr::PK, s(&pk)).key_between(
                attr::SK,
                s(keys::exec_sk(after_ms + 1)),
                s(keys::exec_sk(keys::MAX_SCHEDULED_MS)),
            );
            let out = self
                .ddb
                .query()
                .table_name(&self.table)
                .expr(e)
                .consistent_read(true)
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| StoreError::from_sdk("Query(future executions)", e))?;
            for item in out.items() {
                found.push(items::snapshot_from_item(item)?);
            }
            match out.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => return Ok(found),
            }
        }
    }

    /// The scheduled instant (ms) of the first execution of `key`'s job in `(after, before)`
    /// that is not final (READY, RETRY_WAIT or RUNNING), if any.
    pub async fn first_pending_between(
        &self,
        key: &ExecKey,
        after: i64,
        before: i64,
    ) -> Result<Option<i64>, StoreError> {
        if after + 1 > before - 1 {
            return Ok(None);
        }
        // A waiting parent is pending too: its fire is not over until its children are.
        let open = [ExecStatus::Ready, ExecStatus::RetryWait, ExecStatus::Running, ExecStatus::Waiting];
        let mut start = None;
        loop {
            let mut e = Expr::new();
            e.key_eq(attr::PK, s(key.pk()))
                .key_between(attr::SK, s(keys::exec_sk(after + 1)), s(keys::exec_sk(before - 1)))
                .filter_in(attr::STATUS, open.map(|st| s(st.as_str())))
                .project(&[attr::SK, attr::STATUS]);
            let out = self
                .ddb
                .query()
                .table_name(&self.table)
                .expr(e)
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(|e| StoreError::from_sdk("Query(pending)", e))?;
            if let Some(first) = out.items().first() {
                let sk = first.get(attr::SK).and_then(|v| v.as_s().ok()).cloned().unwrap_or_default();
                return Ok(keys::parse_any_exec_sk(&sk).map(|(ms, _)| ms));
            }
            match out.last_evaluated_key {
                Some(k) => start = Some(k),
                None => return Ok(None),
            }
        }
    }
}

/// Most queries one page of [`ExecStore::list_for_job`] spends skipping a fan-out's children.
const MAX_PAGE_QUERIES: usize = 8;
/// Items one of those later queries reads (a map-reduce fire has thousands of children).
const CHILD_SKIP_STEP: i32 = 200;

/// Which page of a job's executions [`ExecStore::list_for_job`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobPage {
    /// Only this status (a filter: the items read are still billed).
    pub status: Option<ExecStatus>,
    /// Oldest first (default: newest first).
    pub oldest_first: bool,
    /// Most items to read.
    pub limit: i32,
    /// Start after the execution scheduled at this instant (ms).
    pub after_ms: Option<i64>,
}

fn cancel_flag(item: &Item) -> bool {
    item.get(attr::CANCEL).and_then(|v| v.as_bool().ok()).copied().unwrap_or(false)
}

fn old_item(err: SdkError<UpdateItemError, HttpResponse>) -> Option<Item> {
    match err.into_service_error() {
        UpdateItemError::ConditionalCheckFailedException(c) => c.item,
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_messages_are_truncated_on_a_char_boundary() {
        let m = "é".repeat(500);
        let t = truncate(&m);
        assert_eq!(t.chars().count(), MAX_ERROR_MESSAGE_CHARS + 1);
    }
}
