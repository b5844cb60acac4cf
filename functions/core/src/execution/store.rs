//! Claim, heartbeat, checkpoint and finish as DynamoDB conditional writes (seed 000 §5–§6).
//!
//! Every write of a running execution is a compare-and-set on `(st, tok)`: the claim moves
//! `READY`/`RETRY_WAIT` (once available) or `RUNNING`-with-an-expired-lease to `RUNNING` and
//! sets `tok = old + 1`; heartbeat, checkpoint and finish succeed only while `st = RUNNING` and
//! `tok` is still the caller's. A worker that paused past its lease and woke up after a takeover
//! therefore finds every write refused ([`FinishResult::TakenOver`], [`CheckpointError::Stale`]):
//! its result is not published. Each transition appends its [`AuditEvent`] in the same write.
//!
//! Cost: the happy path is one eventually consistent read (½ read unit) to learn the status and
//! token, then one write unit for the claim and one for the finish (items stay under 1 KiB).
//! Heartbeats only happen for runs longer than a third of the lease. A failed condition is not
//! an error but a typed outcome carrying the item as it is (`ReturnValuesOnConditionCheckFailure`),
//! so losing a race costs no extra read.

use super::retry::{codes, RunError};
use crate::keys;
use crate::model::{AuditEvent, ExecMessage, ExecStatus, Execution};
use crate::store::error::{is_condition_failed, StoreError};
use crate::store::expr::{Cmp, Expr, WithExpr};
use crate::store::items::{self, attr, n, Item};
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure};
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;
use chrono::{DateTime, Utc};

/// Execution attributes that only the execution plane writes (the lead's codec ignores them).
pub mod xattr {
    /// The last checkpoint (JSON text), written by [`super::ExecStore::checkpoint`].
    pub const CHECKPOINT: &str = "ck";
    /// Run time of finished attempts so far (ms), for the run-time budget.
    pub const RUN_MS: &str = "rt";
    /// SHA-256 prefix of the input (params), stored when an execution goes DEAD.
    pub const DIGEST: &str = "dg";
}

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
}

impl ExecKey {
    /// The key of the execution a queue message stands for.
    pub fn of_message(m: &ExecMessage) -> Self {
        ExecKey { tenant: m.tenant.clone(), job_id: m.job_id.clone(), scheduled_ms: m.scheduled_ms }
    }

    /// The key of an execution.
    pub fn of(e: &Execution) -> Self {
        ExecKey {
            tenant: e.tenant.clone(),
            job_id: e.job_id.clone(),
            scheduled_ms: e.scheduled_at.timestamp_millis(),
        }
    }

    /// Partition key.
    pub fn pk(&self) -> String {
        keys::job_pk(&self.tenant, &self.job_id)
    }

    /// Sort key.
    pub fn sk(&self) -> String {
        keys::exec_sk(self.scheduled_ms)
    }

    /// The public execution id (`{job}@{ms}`).
    pub fn id(&self) -> String {
        keys::execution_id(&self.job_id, self.scheduled_ms)
    }
}

/// What a claim gives its holder: every later write must present it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    /// The worker that claimed.
    pub owner: String,
    /// The fencing token this claim set.
    pub token: u64,
    /// The attempt number this claim started (1-based).
    pub attempt: u32,
}

/// How long leases last and when another worker's lease counts as expired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseTerms {
    /// Lease length (ms); heartbeats renew it.
    pub duration_ms: i64,
    /// A lease is expired only this long after its end by the taker's clock (see `clock`).
    pub skew_margin_ms: i64,
    /// False when this worker's clock is not trusted: it then never takes over a lease.
    pub may_take_over: bool,
}

/// An execution as read, with the execution-plane attributes the shared codec does not know.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// The execution.
    pub exec: Execution,
    /// The last checkpoint, if any.
    pub checkpoint: Option<serde_json::Value>,
    /// Run time of finished attempts (ms).
    pub total_run_ms: i64,
}

impl Snapshot {
    fn decode(item: &Item) -> Result<Self, StoreError> {
        let exec = items::execution_from_item(item)?;
        let checkpoint = item
            .get(xattr::CHECKPOINT)
            .and_then(|v| v.as_s().ok())
            .and_then(|s| serde_json::from_str(s).ok());
        let total_run_ms =
            item.get(xattr::RUN_MS).and_then(|v| v.as_n().ok()).and_then(|s| s.parse().ok()).unwrap_or(0);
        Ok(Snapshot { exec, checkpoint, total_run_ms })
    }
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

/// What a claimer should do with an execution in its current state: pure, for tests and for the
/// claim loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// CAS it to RUNNING.
    Claim {
        /// Current status.
        from: ExecStatus,
        /// Current token.
        token: u64,
        /// Current attempt count.
        attempt: u32,
    },
    /// A cancel was requested and nobody is running it: CAS it to CANCELED.
    Cancel {
        /// Current status.
        from: ExecStatus,
        /// Current token.
        token: u64,
        /// Current attempt count.
        attempt: u32,
    },
    /// Wait until then (ms).
    NotYet(i64),
    /// Someone holds it until then (ms, margin included).
    Held(i64),
    /// Final.
    Finished(ExecStatus),
}

/// Decides what a claimer does with `e` at `now_ms`.
pub fn next_step(e: &Execution, terms: &LeaseTerms, now_ms: i64) -> Step {
    let (token, attempt) = (e.fencing_token, e.attempt);
    match e.status {
        ExecStatus::Ready | ExecStatus::RetryWait => {
            if e.cancel_requested {
                Step::Cancel { from: e.status, token, attempt }
            } else if e.available_at > now_ms {
                Step::NotYet(e.available_at)
            } else {
                Step::Claim { from: e.status, token, attempt }
            }
        }
        ExecStatus::Running => {
            let expires = e.lease_until.unwrap_or(0).saturating_add(terms.skew_margin_ms);
            if expires >= now_ms || !terms.may_take_over {
                Step::Held(expires.max(now_ms))
            } else if e.cancel_requested {
                Step::Cancel { from: e.status, token, attempt }
            } else {
                Step::Claim { from: e.status, token, attempt }
            }
        }
        s => Step::Finished(s),
    }
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

/// How an attempt ends.
#[derive(Debug, Clone, PartialEq)]
pub enum Finish {
    /// Done.
    Succeeded,
    /// A retryable error with budget left: claimable again at `available_at`.
    RetryWait {
        /// When (ms).
        available_at: i64,
        /// The error.
        error: RunError,
        /// Run time of all finished attempts including this one (ms).
        total_run_ms: i64,
    },
    /// A permanent error.
    Failed {
        /// The error.
        error: RunError,
    },
    /// Out of budget: `reason` names the budget, `error` is the last error.
    Dead {
        /// The budget that ran out (a [`codes`] value).
        reason: String,
        /// The last error.
        error: RunError,
        /// Input digest.
        digest: String,
    },
    /// Cancelled while running (the handler saw the flag).
    Canceled,
}

impl Finish {
    /// The status this finish writes.
    pub fn status(&self) -> ExecStatus {
        match self {
            Finish::Succeeded => ExecStatus::Succeeded,
            Finish::RetryWait { .. } => ExecStatus::RetryWait,
            Finish::Failed { .. } => ExecStatus::Failed,
            Finish::Dead { .. } => ExecStatus::Dead,
            Finish::Canceled => ExecStatus::Canceled,
        }
    }
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
type CasResult = Result<Item, Option<Item>>;

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
        out.item().map(Snapshot::decode).transpose()
    }

    async fn cas(&self, key: &ExecKey, op: &'static str, e: Expr) -> Result<CasResult, StoreError> {
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
                    let fence = Fence { owner: owner.to_string(), token: token + 1, attempt: attempt + 1 };
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
                        .append(attr::TIMELINE, vec![items::audit_to_av(&ev)])
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
                            let snapshot = Snapshot::decode(&item)?;
                            return Ok(ClaimOutcome::Claimed(Box::new(Claimed {
                                snapshot,
                                fence,
                                from,
                                takeover,
                                lease_until,
                            })));
                        }
                        Err(old) => snap = old.as_ref().map(Snapshot::decode).transpose()?,
                    }
                }
                Step::Cancel { from, token, attempt } => {
                    let actor = format!("worker:{owner}");
                    match self.cas_cancel(key, from, token, attempt, &actor, now_ms).await? {
                        Ok(_) => return Ok(ClaimOutcome::Finished(ExecStatus::Canceled)),
                        Err(old) => snap = old.as_ref().map(Snapshot::decode).transpose()?,
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
        let ev = AuditEvent {
            at: now_ms,
            actor: actor.to_string(),
            from: Some(from),
            to: ExecStatus::Canceled,
            attempt,
            token,
            code: Some(codes::CANCELED.into()),
        };
        let mut e = Expr::default();
        e.set(attr::STATUS, s(ExecStatus::Canceled.as_str()))
            .set(attr::ERR_CODE, s(codes::CANCELED))
            .set(attr::ATT_PK, s(keys::attention_pk(&key.tenant, ExecStatus::Canceled.as_str())))
            .set(attr::ATT_SK, s(keys::attention_sk(key.scheduled_ms, &key.job_id)))
            .append(attr::TIMELINE, vec![items::audit_to_av(&ev)])
            .remove(attr::LEASE_UNTIL)
            .cond_eq(attr::STATUS, s(from.as_str()))
            .cond_eq(attr::TOKEN, n(token));
        self.cas(key, "UpdateItem(cancel)", e).await
    }

    fn fenced(e: &mut Expr, fence: &Fence) {
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
        e.set(xattr::CHECKPOINT, s(text)).set(attr::LEASE_UNTIL, n(lease_until));
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
        e.set(attr::STATUS, s(to.as_str()))
            .append(attr::TIMELINE, vec![items::audit_to_av(&ev)])
            .remove(attr::LEASE_UNTIL);
        if to.needs_attention() {
            e.set(attr::ATT_PK, s(keys::attention_pk(&key.tenant, to.as_str())))
                .set(attr::ATT_SK, s(keys::attention_sk(key.scheduled_ms, &key.job_id)));
        }
        match finish {
            Finish::Succeeded => {}
            Finish::RetryWait { available_at, error, total_run_ms } => {
                e.set(attr::AVAILABLE, n(*available_at))
                    .set(attr::ERR_CODE, s(&error.code))
                    .set(attr::ERR_MSG, s(truncate(&error.message)))
                    .set(xattr::RUN_MS, n(*total_run_ms));
            }
            Finish::Failed { error } => {
                e.set(attr::ERR_CODE, s(&error.code)).set(attr::ERR_MSG, s(truncate(&error.message)));
            }
            Finish::Dead { reason, error, digest } => {
                e.set(attr::ERR_CODE, s(&error.code))
                    .set(attr::ERR_MSG, s(truncate(&format!("{reason}: {}", error.message))))
                    .set(xattr::DIGEST, s(digest));
            }
            Finish::Canceled => {
                e.set(attr::ERR_CODE, s(codes::CANCELED));
            }
        }
        Self::fenced(&mut e, fence);
        Ok(match self.cas(key, "UpdateItem(finish)", e).await? {
            Ok(_) => FinishResult::Done,
            Err(old) => {
                let cur = old.as_ref().and_then(|i| Snapshot::decode(i).ok());
                FinishResult::TakenOver {
                    status: cur.as_ref().map(|c| c.exec.status),
                    token: cur.as_ref().map(|c| c.exec.fencing_token),
                }
            }
        })
    }

    /// Requests cancellation (API, or the REPLACE policy): an execution nobody runs becomes
    /// CANCELED at once and will not run; a running one gets the `cx` flag its runner sees at the
    /// next heartbeat or checkpoint.
    pub async fn request_cancel(
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
                ExecStatus::Ready | ExecStatus::RetryWait => {
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
            .append(attr::TIMELINE, vec![items::audit_to_av(&ev)])
            .cond_eq(attr::STATUS, s(ExecStatus::Ready.as_str()))
            .cond_eq(attr::TOKEN, n(current.fencing_token));
        Ok(self.cas(key, "UpdateItem(skip)", e).await?.is_ok())
    }
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
    use crate::model::{JobDefinition, Target};
    use crate::schedule::ScheduleSpec;

    fn exec(status: ExecStatus, avail: i64, lease_until: Option<i64>, cancel: bool) -> Execution {
        let t = items::ms_to_dt(1_000_000);
        Execution {
            tenant: "t".into(),
            job_id: "j".into(),
            scheduled_at: t,
            fire_at: t,
            created_at: t,
            status,
            attempt: 1,
            fencing_token: 7,
            lease_owner: lease_until.map(|_| "w".into()),
            lease_until,
            available_at: avail,
            def_version: 1,
            definition: JobDefinition {
                schedule: ScheduleSpec::new("rate(1 minute)", "UTC"),
                pool: "default".into(),
                target: Target::Http { url: "https://example.com".into() },
                params: serde_json::Value::Null,
                params_ref: None,
                misfire: Default::default(),
                misfire_threshold_secs: 60,
                concurrency: Default::default(),
                retry: Default::default(),
                timeout_secs: 30,
            },
            missed_range: None,
            last_error: None,
            cancel_requested: cancel,
            timeline: vec![],
        }
    }

    const TERMS: LeaseTerms = LeaseTerms { duration_ms: 30_000, skew_margin_ms: 2_000, may_take_over: true };

    #[test]
    fn ready_and_retry_wait_are_claimable_once_available() {
        let claim = |st| Step::Claim { from: st, token: 7, attempt: 1 };
        assert_eq!(
            next_step(&exec(ExecStatus::Ready, 100, None, false), &TERMS, 100),
            claim(ExecStatus::Ready)
        );
        assert_eq!(next_step(&exec(ExecStatus::Ready, 101, None, false), &TERMS, 100), Step::NotYet(101));
        assert_eq!(
            next_step(&exec(ExecStatus::RetryWait, 50, None, false), &TERMS, 100),
            claim(ExecStatus::RetryWait)
        );
        assert_eq!(next_step(&exec(ExecStatus::RetryWait, 500, None, false), &TERMS, 100), Step::NotYet(500));
    }

    #[test]
    fn a_running_lease_expires_only_after_the_skew_margin() {
        // GIVEN a lease that ended at 10 s and a 2 s margin
        let e = exec(ExecStatus::Running, 0, Some(10_000), false);
        // THEN at 11.9 s it is still held, at 12.001 s it may be taken over
        assert_eq!(next_step(&e, &TERMS, 11_900), Step::Held(12_000));
        assert_eq!(
            next_step(&e, &TERMS, 12_001),
            Step::Claim { from: ExecStatus::Running, token: 7, attempt: 1 }
        );
        // AND a worker with an untrusted clock never takes over
        let distrusted = LeaseTerms { may_take_over: false, ..TERMS };
        assert_eq!(next_step(&e, &distrusted, 99_000), Step::Held(99_000));
    }

    #[test]
    fn a_requested_cancel_is_completed_by_whoever_finds_it_idle() {
        let e = exec(ExecStatus::Running, 0, Some(10_000), true);
        assert_eq!(next_step(&e, &TERMS, 11_000), Step::Held(12_000), "the holder handles its own cancel");
        assert_eq!(
            next_step(&e, &TERMS, 13_000),
            Step::Cancel { from: ExecStatus::Running, token: 7, attempt: 1 }
        );
        let e = exec(ExecStatus::RetryWait, 99_999, None, true);
        assert_eq!(
            next_step(&e, &TERMS, 0),
            Step::Cancel { from: ExecStatus::RetryWait, token: 7, attempt: 1 }
        );
    }

    #[test]
    fn final_statuses_are_left_alone() {
        for st in [
            ExecStatus::Succeeded,
            ExecStatus::Failed,
            ExecStatus::Dead,
            ExecStatus::Canceled,
            ExecStatus::Skipped,
        ] {
            assert_eq!(next_step(&exec(st, 0, None, false), &TERMS, 0), Step::Finished(st));
        }
    }

    #[test]
    fn long_messages_are_truncated_on_a_char_boundary() {
        let m = "é".repeat(500);
        let t = truncate(&m);
        assert_eq!(t.chars().count(), MAX_ERROR_MESSAGE_CHARS + 1);
    }
}
