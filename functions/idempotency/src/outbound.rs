//! Calls that leave the system: the last mile no database constraint reaches.
//!
//! A unique key and a CAS protect *our* tables. A credit to an account service, a bank
//! transfer, an e-mail: the far side does them, and a timeout leaves us unable to tell "it
//! happened and the answer was lost" from "it never arrived" (docs/idempotency.md, calls outside
//! the system). Three rules:
//!
//! 1. **A stable idempotency key per item**, derived from the natural key (`settle:{merchant}:
//!    {date}`), never from the attempt or the execution. Every attempt, failover copy and re-run
//!    sends the same key, and a far side that honours keys applies it once.
//!    [`IdempotencyKey::for_item`] builds one.
//! 2. **Query before retry.** After a call that may have been delivered (timeout, connection
//!    dropped after sending), ask the far side for the key first; retry only if it says it has
//!    never seen it. Retrying blind is safe only if the far side's idempotency is perfect.
//! 3. **Record the unknown.** When neither the call nor the query gives an answer, the outcome
//!    is written to the outbound table as `UNKNOWN` with the request, and the call returns
//!    [`CallOutcome::Unknown`]: the item must not be marked done, and reconciliation (or a
//!    person) settles it. [`Outbound::recheck_unknown`] asks the far side again later.
//!
//! What this does *not* cover: a far side that ignores idempotency keys. Then only
//! [`crate::reconcile`] can find the double effect, after the fact.
//!
//! The far side is a [`FarSide`] implementation (an HTTP client, an SDK wrapper) that sorts its
//! transport errors into [`CallError`] kinds: whether the request could have been delivered is
//! the one thing the retry logic needs to know.

use crate::attr::{get_str, get_time, key_text, n, req_str, s, time};
use crate::context::ExecutionContext;
use crate::error::{Error, Result};
use crate::tables::PK;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::future::Future;
use std::time::Duration;

/// A key the far side uses to recognise a repeat of the same request.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// `namespace:part:part...`, from the item's natural key (e.g. `("settle", [merchant,
    /// date])`). Each piece is 1–64 characters of `[A-Za-z0-9_.-]`, so the joined key is
    /// unambiguous. Never put an attempt number, fencing token or random value in it.
    pub fn for_item(namespace: &str, parts: &[&str]) -> Result<Self> {
        if parts.is_empty() {
            return Err(Error::invalid("parts", "an idempotency key needs the item's natural key"));
        }
        let ok = |p: &str| {
            !p.is_empty()
                && p.len() <= 64
                && p.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
        };
        if !ok(namespace) {
            return Err(Error::invalid(
                "namespace",
                format!("{namespace:?} must be 1-64 characters of A-Z a-z 0-9 _ . -"),
            ));
        }
        if let Some(bad) = parts.iter().find(|p| !ok(p)) {
            return Err(Error::invalid(
                "parts",
                format!("{bad:?} must be 1-64 characters of A-Z a-z 0-9 _ . -"),
            ));
        }
        Ok(IdempotencyKey(format!("{namespace}:{}", parts.join(":"))))
    }

    /// A key chosen by the caller, used as is (for far sides with their own key format).
    pub fn raw(key: impl Into<String>) -> Result<Self> {
        let key = key.into();
        if key.is_empty() || key.len() > 255 {
            return Err(Error::invalid("key", "must be 1-255 characters"));
        }
        Ok(IdempotencyKey(key))
    }

    /// The key as sent.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for IdempotencyKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// How a call to the far side failed, sorted by what it means for the request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// The request certainly did not reach the far side (connection refused, DNS): nothing
    /// happened there, a retry is safe.
    #[error("not sent: {0}")]
    NotSent(String),
    /// The request may have reached the far side and no answer came (timeout, connection
    /// closed after sending, 5xx from a proxy): the outcome is unknown.
    #[error("no answer: {0}")]
    NoAnswer(String),
    /// The far side answered no (validation, insufficient funds, key reused with another
    /// body): permanent, do not retry (retrying a business failure copies bad data).
    #[error("rejected ({code}): {message}")]
    Rejected {
        /// The far side's code.
        code: String,
        /// Its message.
        message: String,
    },
}

/// The far side's answer to "did you apply this key?".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup<R> {
    /// Applied; here is its receipt.
    Found(R),
    /// Never seen.
    NotFound,
}

/// A system outside ours that honours idempotency keys.
pub trait FarSide: Send + Sync {
    /// The request body.
    type Request: Serialize + Sync;
    /// What the far side returns for an applied request.
    type Receipt: Serialize + DeserializeOwned + Send;

    /// Sends the request under `key`. A far side that honours keys returns the first
    /// request's receipt for a repeat instead of applying it again.
    fn submit(
        &self,
        key: &IdempotencyKey,
        request: &Self::Request,
    ) -> impl Future<Output = std::result::Result<Self::Receipt, CallError>> + Send;

    /// Asks whether `key` was applied.
    fn lookup(
        &self,
        key: &IdempotencyKey,
    ) -> impl Future<Output = std::result::Result<Lookup<Self::Receipt>, CallError>> + Send;
}

/// The result of a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallOutcome<R> {
    /// The far side applied the request (now or before) and returned this receipt.
    Confirmed {
        /// The receipt.
        receipt: R,
        /// Submissions made (≥ 1).
        attempts: u32,
        /// Whether the receipt came from a lookup after a lost answer.
        via_lookup: bool,
    },
    /// The far side refused it; nothing was applied.
    Rejected {
        /// The far side's code.
        code: String,
        /// Its message.
        message: String,
    },
    /// No submission reached the far side in `attempts` tries: certainly not applied; safe to
    /// try again later with the same key. (If any earlier submission may have been delivered,
    /// the outcome is [`CallOutcome::Unknown`] instead.)
    NotApplied {
        /// Why the last try failed.
        reason: String,
        /// Tries made.
        attempts: u32,
    },
    /// No one can say whether it was applied. Recorded in the outbound table; do not mark the
    /// item done, let reconciliation decide.
    Unknown {
        /// Why the outcome is unknown.
        reason: String,
        /// Submissions made.
        attempts: u32,
    },
}

/// A recorded unknown outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownRecord {
    /// The key.
    pub key: IdempotencyKey,
    /// The request, as JSON.
    pub request: serde_json::Value,
    /// Why it is unknown.
    pub reason: String,
    /// The execution that made the call.
    pub execution_id: String,
    /// When it was recorded.
    pub recorded_at: DateTime<Utc>,
}

/// Retry budget of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Submissions at most (≥ 1).
    pub max_attempts: u32,
    /// Pause before each new submission (the far side may be overloaded: do not hammer it).
    pub backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy { max_attempts: 3, backoff: Duration::from_millis(200) }
    }
}

/// Outbound calls through `far`, recording unknown outcomes in `table` (hash key [`PK`]).
#[derive(Debug, Clone)]
pub struct Outbound<F> {
    far: F,
    ddb: Client,
    table: String,
    policy: RetryPolicy,
}

const STATUS_UNKNOWN: &str = "UNKNOWN";
const STATUS_APPLIED: &str = "RESOLVED_APPLIED";
const STATUS_NOT_APPLIED: &str = "RESOLVED_NOT_APPLIED";

impl<F: FarSide> Outbound<F> {
    /// Calls through `far` with the default [`RetryPolicy`].
    pub fn new(far: F, ddb: Client, table: impl Into<String>) -> Self {
        Outbound { far, ddb, table: table.into(), policy: RetryPolicy::default() }
    }

    /// Another retry budget.
    pub fn with_policy(mut self, policy: RetryPolicy) -> Self {
        self.policy = RetryPolicy { max_attempts: policy.max_attempts.max(1), ..policy };
        self
    }

    /// The far side.
    pub fn far_side(&self) -> &F {
        &self.far
    }

    /// Sends `request` under `key`: submit; after a lost answer, look the key up before any
    /// retry; record the outcome when no one can say. `now` stamps the record.
    pub async fn call(
        &self,
        ctx: &ExecutionContext,
        key: &IdempotencyKey,
        request: &F::Request,
        now: DateTime<Utc>,
    ) -> Result<CallOutcome<F::Receipt>> {
        let mut attempts = 0;
        let mut last_reason;
        // Whether an earlier submission may have reached the far side: once one may have, no
        // later failure can prove the request was not applied.
        let mut maybe_delivered = false;
        loop {
            if attempts > 0 && !self.policy.backoff.is_zero() {
                tokio::time::sleep(self.policy.backoff).await;
            }
            attempts += 1;
            match self.far.submit(key, request).await {
                Ok(receipt) => return Ok(CallOutcome::Confirmed { receipt, attempts, via_lookup: false }),
                Err(CallError::Rejected { code, message }) => {
                    return Ok(CallOutcome::Rejected { code, message })
                }
                Err(CallError::NotSent(reason)) if attempts < self.policy.max_attempts => {
                    tracing::debug!(key = %key, attempts, %reason, "not sent; retrying");
                    continue;
                }
                Err(CallError::NotSent(reason)) if !maybe_delivered => {
                    return Ok(CallOutcome::NotApplied { reason, attempts });
                }
                Err(CallError::NotSent(reason)) => {
                    let reason = format!("{reason}; an earlier submission may still have been applied");
                    self.record_unknown(ctx, key, request, &reason, now).await?;
                    return Ok(CallOutcome::Unknown { reason, attempts });
                }
                Err(CallError::NoAnswer(reason)) => {
                    maybe_delivered = true;
                    last_reason = reason;
                }
            }
            // The request may have been applied: ask before sending it again.
            tracing::info!(key = %key, attempts, reason = %last_reason, "no answer; querying before retry");
            match self.far.lookup(key).await {
                Ok(Lookup::Found(receipt)) => {
                    return Ok(CallOutcome::Confirmed { receipt, attempts, via_lookup: true });
                }
                Ok(Lookup::NotFound) if attempts < self.policy.max_attempts => continue,
                Ok(Lookup::NotFound) => {
                    // Not applied when we asked, but our last submission may still be on its
                    // way: only the far side's key check makes a later retry safe.
                    last_reason = format!("{last_reason}; not found on lookup after {attempts} submissions");
                }
                Err(e) => last_reason = format!("{last_reason}; lookup failed: {e}"),
            }
            self.record_unknown(ctx, key, request, &last_reason, now).await?;
            return Ok(CallOutcome::Unknown { reason: last_reason, attempts });
        }
    }

    async fn record_unknown(
        &self,
        ctx: &ExecutionContext,
        key: &IdempotencyKey,
        request: &F::Request,
        reason: &str,
        now: DateTime<Utc>,
    ) -> Result<()> {
        let body = serde_json::to_string(request)
            .map_err(|e| Error::invalid("request", format!("not serialisable: {e}")))?;
        tracing::warn!(key = %key, reason, "outbound outcome unknown; recorded for reconciliation");
        self.ddb
            .put_item()
            .table_name(&self.table)
            .item(PK, s(key.as_str()))
            .item("status", s(STATUS_UNKNOWN))
            .item("request", s(body))
            .item("reason", s(reason))
            .item("execution_id", s(&ctx.execution_id))
            .item("fencing_token", n(ctx.fencing_token))
            .item("recorded_at", time(now))
            .send()
            .await
            .map_err(|e| Error::dynamo("PutItem", &self.table, e))?;
        Ok(())
    }

    /// Every outcome still recorded as unknown (a full scan: the table holds only the few calls
    /// no one could answer).
    pub async fn unknown_outcomes(&self) -> Result<Vec<UnknownRecord>> {
        let mut out = Vec::new();
        let mut start = None;
        loop {
            let page = self
                .ddb
                .scan()
                .table_name(&self.table)
                .filter_expression("#st = :u")
                .expression_attribute_names("#st", "status")
                .expression_attribute_values(":u", s(STATUS_UNKNOWN))
                .set_exclusive_start_key(start)
                .consistent_read(true)
                .send()
                .await
                .map_err(|e| Error::dynamo("Scan", &self.table, e))?;
            for item in page.items() {
                let t = &self.table;
                let request = req_str(item, t, "request")?;
                out.push(UnknownRecord {
                    key: IdempotencyKey(req_str(item, t, PK)?.to_owned()),
                    request: serde_json::from_str(request).map_err(|e| {
                        Error::malformed(t, key_text(item), "request", format!("not JSON: {e}"))
                    })?,
                    reason: get_str(item, t, "reason")?.unwrap_or_default().to_owned(),
                    execution_id: req_str(item, t, "execution_id")?.to_owned(),
                    recorded_at: get_time(item, t, "recorded_at")?
                        .ok_or_else(|| Error::malformed(t, key_text(item), "recorded_at", "missing"))?,
                });
            }
            match page.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => break,
            }
        }
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(out)
    }

    /// Asks the far side again about every recorded unknown outcome and marks those it can now
    /// answer (`RESOLVED_APPLIED` / `RESOLVED_NOT_APPLIED`). Returns the answers; keys whose
    /// lookup fails again stay unknown and are left out.
    pub async fn recheck_unknown(
        &self,
        now: DateTime<Utc>,
    ) -> Result<Vec<(IdempotencyKey, Lookup<F::Receipt>)>> {
        let mut answers = Vec::new();
        for rec in self.unknown_outcomes().await? {
            let Ok(answer) = self.far.lookup(&rec.key).await else { continue };
            let status = match &answer {
                Lookup::Found(_) => STATUS_APPLIED,
                Lookup::NotFound => STATUS_NOT_APPLIED,
            };
            let res = self
                .ddb
                .update_item()
                .table_name(&self.table)
                .key(PK, s(rec.key.as_str()))
                .update_expression("SET #st = :to, #at = :at")
                .condition_expression("#st = :u")
                .expression_attribute_names("#st", "status")
                .expression_attribute_names("#at", "resolved_at")
                .expression_attribute_values(":to", s(status))
                .expression_attribute_values(":at", time(now))
                .expression_attribute_values(":u", AttributeValue::S(STATUS_UNKNOWN.into()))
                .send()
                .await;
            match res {
                Ok(_) => {}
                // Resolved by a concurrent recheck in between: its answer stands.
                Err(e) if e.as_service_error().is_some_and(|s| s.is_conditional_check_failed_exception()) => {
                    continue
                }
                Err(e) => return Err(Error::dynamo("UpdateItem", &self.table, e)),
            }
            answers.push((rec.key, answer));
        }
        Ok(answers)
    }
}
