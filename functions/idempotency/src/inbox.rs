//! The inbox: run a step at most once per `(executionId, step)`.
//!
//! The idempotent inbox of docs/idempotency.md ("The pieces"), on DynamoDB:
//!
//! ```sql
//! INSERT INTO job_inbox(execution_id, handler) VALUES (:executionId, 'invoice') ON CONFLICT DO NOTHING;
//! -- only the first insert goes on to the business write, in the same transaction
//! ```
//!
//! Two ways to use it, for two kinds of step:
//! - [`Inbox::transact`]: the step's effects are DynamoDB writes. They go into one
//!   `TransactWriteItems` with the inbox entry, so they happen exactly once per step however
//!   many attempts run it: the DynamoDB form of "insert into the inbox in the same transaction".
//! - [`Inbox::admit`] / [`Inbox::run_once`]: the step has effects outside DynamoDB. The entry is
//!   written *before* the step runs, so the step runs **at most once**: an attempt that crashes
//!   after admission leaves the entry `STARTED`, and no later attempt runs the step again. The
//!   outcome of such a step is unknown and has to be found by reconciliation. Use this only for
//!   steps where "maybe not at all" is better than "maybe twice" (notifications), and prefer a
//!   per-item idempotency key ([`crate::outbound`]) where the far side supports one.
//!
//! The key is the execution, not the attempt: a failover copy of the same execution (same
//! `executionId`, newer fencing token) is refused too, which is the point.

use crate::attr::{get_json, get_str, get_time, get_u64, key_text, n, req_str, s, time};
use crate::context::ExecutionContext;
use crate::error::{Error, Result};
use crate::tables::PK;
use crate::update::Item;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{Put, TransactWriteItem};
use aws_sdk_dynamodb::Client;
use chrono::{DateTime, Utc};
use serde::Serialize;
use std::future::Future;

/// Most writes [`Inbox::transact`] accepts besides its own entry (DynamoDB allows 100 per
/// transaction).
pub const MAX_TRANSACT_WRITES: usize = 99;

/// Where a step stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InboxStatus {
    /// Admitted; the step may have run partly, fully or not at all.
    Started,
    /// The step finished and its result is recorded.
    Done,
    /// The step ran and returned an error; it will not run again through the inbox.
    Failed,
}

impl InboxStatus {
    fn as_str(self) -> &'static str {
        match self {
            InboxStatus::Started => "STARTED",
            InboxStatus::Done => "DONE",
            InboxStatus::Failed => "FAILED",
        }
    }

    fn parse(v: &str) -> Option<Self> {
        match v {
            "STARTED" => Some(InboxStatus::Started),
            "DONE" => Some(InboxStatus::Done),
            "FAILED" => Some(InboxStatus::Failed),
            _ => None,
        }
    }
}

/// A step's inbox entry.
#[derive(Debug, Clone, PartialEq)]
pub struct InboxRecord {
    /// The execution.
    pub execution_id: String,
    /// The step.
    pub step: String,
    /// Where it stands.
    pub status: InboxStatus,
    /// The token of the attempt that was admitted.
    pub fencing_token: u64,
    /// When that attempt was admitted.
    pub started_at: DateTime<Utc>,
    /// When it finished, if it did.
    pub finished_at: Option<DateTime<Utc>>,
    /// The step's recorded result (JSON), if it finished.
    pub result: Option<serde_json::Value>,
    /// The step's error, if it failed.
    pub error: Option<String>,
}

/// Permission to run a step: only the admitted attempt holds one.
#[derive(Debug)]
pub struct Ticket {
    pk: String,
    fencing_token: u64,
}

/// The answer to "may I run this step?".
#[derive(Debug)]
pub enum Admission {
    /// This attempt is the first: run the step, then [`Inbox::complete`] the ticket.
    First(Ticket),
    /// The step was admitted before (by this or another attempt): do not run it.
    AlreadySeen(InboxRecord),
}

/// What [`Inbox::run_once`] did.
#[derive(Debug, PartialEq)]
pub enum StepOutcome<T> {
    /// The step ran now and returned this.
    Ran(T),
    /// The step had been admitted before; it was not run.
    AlreadyRan(InboxRecord),
}

/// Why [`Inbox::run_once`] failed.
#[derive(Debug, thiserror::Error)]
pub enum RunOnceError<E> {
    /// The inbox itself failed (see [`Error::is_retryable`]).
    #[error(transparent)]
    Inbox(#[from] Error),
    /// The step ran and failed; its entry is `FAILED` and it will not run again.
    #[error("the step failed: {0}")]
    Step(E),
}

/// What [`Inbox::transact`] did.
#[derive(Debug, PartialEq)]
pub enum TransactOutcome {
    /// The writes and the inbox entry were applied together.
    Applied,
    /// The step was applied before; none of the writes were applied now.
    AlreadyApplied(InboxRecord),
    /// The caller's write at `index` had a condition that failed; nothing was applied.
    ConditionFailed {
        /// Index into the caller's `writes`.
        index: usize,
    },
}

/// The inbox table.
#[derive(Debug, Clone)]
pub struct Inbox {
    ddb: Client,
    table: String,
}

/// Steps are `[A-Za-z0-9_.:-]`, 1–64 characters, so the entry key is unambiguous.
fn validate_step(step: &str) -> Result<()> {
    if step.is_empty()
        || step.len() > 64
        || !step.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'))
    {
        return Err(Error::invalid(
            "step",
            format!("{step:?} must be 1-64 characters of A-Z a-z 0-9 _ . : -"),
        ));
    }
    Ok(())
}

fn entry_pk(execution_id: &str, step: &str) -> String {
    format!("S#{step}#X#{execution_id}")
}

impl Inbox {
    /// The inbox in `table` (hash key [`PK`]).
    pub fn new(ddb: Client, table: impl Into<String>) -> Self {
        Inbox { ddb, table: table.into() }
    }

    fn entry(&self, ctx: &ExecutionContext, step: &str, status: InboxStatus, now: DateTime<Utc>) -> Item {
        let mut item = Item::new();
        item.insert(PK.into(), s(entry_pk(&ctx.execution_id, step)));
        item.insert("execution_id".into(), s(&ctx.execution_id));
        item.insert("step".into(), s(step));
        item.insert("status".into(), s(status.as_str()));
        item.insert("fencing_token".into(), n(ctx.fencing_token));
        item.insert("started_at".into(), time(now));
        if status == InboxStatus::Done {
            item.insert("finished_at".into(), time(now));
        }
        item
    }

    /// Admits the first attempt to run `step` of this execution; every later call, from any
    /// attempt, gets [`Admission::AlreadySeen`].
    pub async fn admit(&self, ctx: &ExecutionContext, step: &str, now: DateTime<Utc>) -> Result<Admission> {
        validate_step(step)?;
        let item = self.entry(ctx, step, InboxStatus::Started, now);
        let pk = entry_pk(&ctx.execution_id, step);
        let put = self
            .ddb
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(#pk)")
            .expression_attribute_names("#pk", PK)
            .send()
            .await;
        match put {
            Ok(_) => Ok(Admission::First(Ticket { pk, fencing_token: ctx.fencing_token })),
            Err(e) if e.as_service_error().is_some_and(|s| s.is_conditional_check_failed_exception()) => {
                Ok(Admission::AlreadySeen(self.read_required(&pk).await?))
            }
            Err(e) => Err(Error::dynamo("PutItem", &self.table, e)),
        }
    }

    /// Records the admitted step's outcome: `Ok(result)` as `DONE`, `Err(message)` as `FAILED`.
    pub async fn complete(
        &self,
        ticket: Ticket,
        outcome: std::result::Result<&serde_json::Value, &str>,
        now: DateTime<Utc>,
    ) -> Result<()> {
        let (status, field, value) = match outcome {
            Ok(v) => (InboxStatus::Done, "result", v.to_string()),
            Err(msg) => (InboxStatus::Failed, "error", msg.to_owned()),
        };
        let res = self
            .ddb
            .update_item()
            .table_name(&self.table)
            .key(PK, s(&ticket.pk))
            .update_expression("SET #st = :to, #fin = :fin, #f = :val")
            .condition_expression("#st = :started AND #tok = :tok")
            .expression_attribute_names("#st", "status")
            .expression_attribute_names("#fin", "finished_at")
            .expression_attribute_names("#f", field)
            .expression_attribute_names("#tok", "fencing_token")
            .expression_attribute_values(":to", s(status.as_str()))
            .expression_attribute_values(":fin", time(now))
            .expression_attribute_values(":val", s(value))
            .expression_attribute_values(":started", s(InboxStatus::Started.as_str()))
            .expression_attribute_values(":tok", n(ticket.fencing_token))
            .send()
            .await;
        match res {
            Ok(_) => Ok(()),
            Err(e) if e.as_service_error().is_some_and(|s| s.is_conditional_check_failed_exception()) => {
                Err(Error::Contended {
                    table: self.table.clone(),
                    key: ticket.pk,
                    reason: "the admitted entry was changed by someone else before completion",
                })
            }
            Err(e) => Err(Error::dynamo("UpdateItem", &self.table, e)),
        }
    }

    /// Runs `step` at most once per execution: admits, runs `f`, records its result. If the
    /// step was admitted before, `f` is not called.
    pub async fn run_once<T, E, F, Fut>(
        &self,
        ctx: &ExecutionContext,
        step: &str,
        now: DateTime<Utc>,
        f: F,
    ) -> std::result::Result<StepOutcome<T>, RunOnceError<E>>
    where
        T: Serialize,
        E: std::fmt::Display,
        F: FnOnce() -> Fut,
        Fut: Future<Output = std::result::Result<T, E>>,
    {
        let ticket = match self.admit(ctx, step, now).await? {
            Admission::First(t) => t,
            Admission::AlreadySeen(r) => return Ok(StepOutcome::AlreadyRan(r)),
        };
        match f().await {
            Ok(v) => {
                let json = serde_json::to_value(&v)
                    .map_err(|e| Error::invalid("step result", format!("not serialisable: {e}")))?;
                self.complete(ticket, Ok(&json), now).await?;
                Ok(StepOutcome::Ran(v))
            }
            Err(e) => {
                self.complete(ticket, Err(&e.to_string()), now).await?;
                Err(RunOnceError::Step(e))
            }
        }
    }

    /// Applies `writes` together with the step's inbox entry in one transaction: exactly once
    /// per `(executionId, step)`.
    pub async fn transact(
        &self,
        ctx: &ExecutionContext,
        step: &str,
        now: DateTime<Utc>,
        writes: Vec<TransactWriteItem>,
    ) -> Result<TransactOutcome> {
        validate_step(step)?;
        if writes.len() > MAX_TRANSACT_WRITES {
            return Err(Error::invalid(
                "writes",
                format!("{} writes; at most {MAX_TRANSACT_WRITES}", writes.len()),
            ));
        }
        let pk = entry_pk(&ctx.execution_id, step);
        let entry = Put::builder()
            .table_name(&self.table)
            .set_item(Some(self.entry(ctx, step, InboxStatus::Done, now)))
            .condition_expression("attribute_not_exists(#pk)")
            .expression_attribute_names("#pk", PK)
            .build()
            .map_err(|e| Error::invalid("inbox entry", e.to_string()))?;
        let items = std::iter::once(TransactWriteItem::builder().put(entry).build()).chain(writes).collect();
        let res = self.ddb.transact_write_items().set_transact_items(Some(items)).send().await;
        let err = match res {
            Ok(_) => return Ok(TransactOutcome::Applied),
            Err(e) => e,
        };
        if let Some(TransactWriteItemsError::TransactionCanceledException(c)) = err.as_service_error() {
            let failed =
                c.cancellation_reasons().iter().position(|r| r.code() == Some("ConditionalCheckFailed"));
            match failed {
                Some(0) => return Ok(TransactOutcome::AlreadyApplied(self.read_required(&pk).await?)),
                Some(i) => return Ok(TransactOutcome::ConditionFailed { index: i - 1 }),
                None => {}
            }
        }
        Err(Error::dynamo("TransactWriteItems", &self.table, err))
    }

    /// The entry of `step` in this execution, if any.
    pub async fn record(&self, execution_id: &str, step: &str) -> Result<Option<InboxRecord>> {
        self.read(&entry_pk(execution_id, step)).await
    }

    async fn read_required(&self, pk: &str) -> Result<InboxRecord> {
        self.read(pk).await?.ok_or_else(|| Error::Contended {
            table: self.table.clone(),
            key: pk.to_owned(),
            reason: "the entry existed on insert but is gone on read-back",
        })
    }

    async fn read(&self, pk: &str) -> Result<Option<InboxRecord>> {
        let got = self
            .ddb
            .get_item()
            .table_name(&self.table)
            .key(PK, s(pk))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| Error::dynamo("GetItem", &self.table, e))?;
        let Some(item) = got.item else { return Ok(None) };
        let t = &self.table;
        let status_text = req_str(&item, t, "status")?;
        let status = InboxStatus::parse(status_text).ok_or_else(|| {
            Error::malformed(t, key_text(&item), "status", format!("unknown status {status_text:?}"))
        })?;
        Ok(Some(InboxRecord {
            execution_id: req_str(&item, t, "execution_id")?.to_owned(),
            step: req_str(&item, t, "step")?.to_owned(),
            status,
            fencing_token: get_u64(&item, t, "fencing_token")?
                .ok_or_else(|| Error::malformed(t, key_text(&item), "fencing_token", "missing"))?,
            started_at: get_time(&item, t, "started_at")?
                .ok_or_else(|| Error::malformed(t, key_text(&item), "started_at", "missing"))?,
            finished_at: get_time(&item, t, "finished_at")?,
            result: get_json(&item, t, "result")?,
            error: get_str(&item, t, "error")?.map(str::to_owned),
        }))
    }
}
