//! The chaos run's handler and what it leaves behind: a fenced resource with an idempotent
//! effect (in DynamoDB, behind the fault proxy like everything else), and an append-only journal
//! (a local JSON-lines file every worker process appends to).
//!
//! The handler does what docs/targets.md, "Fencing downstream", asks of a real one: it first
//! *fences* the execution's resource with its token (`tok < :mine`, so a zombie that wakes after a
//! takeover is refused), works for a while with fenced checkpoints, then applies its effect once
//! (`tok = :mine AND attribute_not_exists(applied)`). A write whose answer was lost ("did it
//! happen?") is recognised on the retry by the item the failed condition returns: if the stored
//! token or `applied` is the caller's own, it happened.
//!
//! The journal is the evidence the checker reads: every attempt's start (with the real time,
//! for start lag), every fence and effect outcome, and each worker's per-message metrics (lease
//! takeovers, stale-token refusals). A SIGKILL can cut an attempt short but never half-writes a
//! line: each line is one `write` to a file opened with `O_APPEND`.

use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType,
    ReturnValuesOnConditionCheckFailure, ScalarAttributeType,
};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use sundial_core::execution::clock::Clock;
use sundial_core::execution::metrics::{ExecMetrics, MetricsSink};
use sundial_core::execution::target::in_process::{BoxFuture, Handler, HandlerContext};
use sundial_model::retry::RunError;

/// The handler name jobs use (`{"type": "inProcess", "handler": "chaos-effect"}`).
pub const HANDLER: &str = "chaos-effect";

/// How a fence write ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FenceOutcome {
    /// Accepted.
    Accepted,
    /// The answer was lost but the stored token is ours: it was accepted.
    AcceptedOnRetry,
    /// A newer token holds the resource: this holder is stale.
    Refused,
}

/// How an effect write ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EffectOutcome {
    /// This attempt applied the effect.
    Applied,
    /// The answer was lost, but `applied` carries our token: this attempt applied it.
    AppliedOnRetry,
    /// An earlier holder had applied it already; nothing done (a duplicate absorbed).
    Absorbed,
    /// A newer token holds the resource: refused.
    Refused,
}

/// One journal line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Entry {
    /// An attempt started running the handler.
    Start {
        /// Execution id.
        execution: String,
        /// Its fencing token.
        token: u64,
        /// Its attempt.
        attempt: u32,
        /// The worker.
        worker: String,
        /// Real time (ms), not the worker's possibly skewed clock.
        at_ms: i64,
    },
    /// A fence write.
    Fence {
        /// Execution id.
        execution: String,
        /// Token presented.
        token: u64,
        /// The worker.
        worker: String,
        /// Outcome.
        outcome: FenceOutcome,
        /// Real time (ms).
        at_ms: i64,
    },
    /// An effect write.
    Effect {
        /// Execution id.
        execution: String,
        /// Token presented.
        token: u64,
        /// The worker.
        worker: String,
        /// Outcome.
        outcome: EffectOutcome,
        /// Real time (ms).
        at_ms: i64,
    },
    /// What a worker recorded for one handled message.
    Metrics {
        /// The worker.
        worker: String,
        /// Execution id.
        execution: String,
        /// 1 if its claim took over an expired lease.
        takeovers: u64,
        /// Its writes refused for a stale token (finish, heartbeat, checkpoint).
        stale_rejections: u64,
        /// 1 if the worker distrusted its own clock.
        clock_skew: u64,
        /// The status it recorded, if any.
        outcome: Option<String>,
    },
}

/// The journal could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// File I/O failed (permanent for this run: the evidence would be incomplete).
    #[error("journal {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A line is not a journal entry.
    #[error("journal {path} line {line}: {source}")]
    Parse {
        /// The file.
        path: String,
        /// 1-based line.
        line: usize,
        /// Why.
        source: serde_json::Error,
    },
}

/// An append-only journal file shared by every process of a run.
#[derive(Debug)]
pub struct Journal {
    path: String,
    file: Mutex<File>,
}

impl Journal {
    /// Opens (creating) `path` for appending.
    pub fn open(path: &Path) -> Result<Self, JournalError> {
        let p = path.display().to_string();
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|source| JournalError::Io { path: p.clone(), source })?;
        Ok(Journal { path: p, file: Mutex::new(file) })
    }

    /// Appends one entry as one line (one `write`).
    pub fn append(&self, e: &Entry) {
        let Ok(mut line) = serde_json::to_string(e) else { return };
        line.push('\n');
        if let Ok(mut f) = self.file.lock() {
            if let Err(err) = f.write_all(line.as_bytes()) {
                tracing::error!(path = %self.path, error = %err, "journal append failed");
            }
        }
    }

    /// Reads every entry of a journal file. A torn last line (a process killed mid-write on a
    /// file system without atomic appends) is skipped; any other bad line is an error.
    pub fn read(path: &Path) -> Result<Vec<Entry>, JournalError> {
        let p = path.display().to_string();
        let f = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => return Err(JournalError::Io { path: p, source }),
        };
        let lines: Vec<String> = BufReader::new(f)
            .lines()
            .collect::<Result<_, _>>()
            .map_err(|source| JournalError::Io { path: p.clone(), source })?;
        let n = lines.len();
        let mut out = Vec::with_capacity(n);
        for (i, l) in lines.iter().enumerate() {
            if l.trim().is_empty() {
                continue;
            }
            match serde_json::from_str(l) {
                Ok(e) => out.push(e),
                Err(_) if i + 1 == n => {}
                Err(source) => return Err(JournalError::Parse { path: p, line: i + 1, source }),
            }
        }
        Ok(out)
    }
}

/// A [`MetricsSink`] that journals each message's takeovers and stale-token refusals.
#[derive(Debug)]
pub struct JournalSink {
    worker: String,
    journal: Arc<Journal>,
}

impl JournalSink {
    /// A sink for `worker`.
    pub fn new(worker: &str, journal: Arc<Journal>) -> Self {
        JournalSink { worker: worker.into(), journal }
    }
}

impl MetricsSink for JournalSink {
    fn record(&self, m: &ExecMetrics, _now_ms: i64) {
        if m.is_empty() {
            return;
        }
        self.journal.append(&Entry::Metrics {
            worker: self.worker.clone(),
            execution: m.execution_id.clone(),
            takeovers: m.takeovers,
            stale_rejections: m.stale_rejections,
            clock_skew: m.clock_skew,
            outcome: m.outcome.map(|s| s.as_str().to_string()),
        });
    }
}

/// A clock `offset_ms` away from the host's: the skewed worker of the chaos run. The offset
/// lives here, in the chaos worker's own wiring, not in the execution plane.
#[derive(Debug, Clone, Copy)]
pub struct SkewedClock {
    /// Added to the host clock (ms; negative = slow).
    pub offset_ms: i64,
}

impl Clock for SkewedClock {
    fn now(&self) -> chrono::DateTime<chrono::Utc> {
        chrono::Utc::now() + chrono::Duration::milliseconds(self.offset_ms)
    }
}

/// One resource item as the checker sees it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResourceRecord {
    /// Execution id.
    pub execution: String,
    /// Every token the resource accepted, in order.
    pub tokens: Vec<u64>,
    /// How many times the effect was applied.
    pub effects: u64,
    /// The token that applied it.
    pub applied_token: Option<u64>,
}

/// The effect store failed in a way that says nothing about tokens (retryable).
#[derive(Debug, thiserror::Error)]
#[error("effect store {op}: {message}")]
pub struct EffectStoreError {
    op: &'static str,
    message: String,
}

/// The fenced resources (`pk = RES#{execution}`) in their own table.
#[derive(Debug, Clone)]
pub struct EffectStore {
    ddb: aws_sdk_dynamodb::Client,
    table: String,
}

/// A DynamoDB number (also the shard ledger's, `crate::shards`).
pub(crate) fn n(v: u64) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

/// A number attribute of `item`, if present and whole.
pub(crate) fn num(item: &HashMap<String, AttributeValue>, k: &str) -> Option<u64> {
    item.get(k).and_then(|v| v.as_n().ok()).and_then(|s| s.parse().ok())
}

impl EffectStore {
    /// A store on `table`.
    pub fn new(ddb: aws_sdk_dynamodb::Client, table: impl Into<String>) -> Self {
        EffectStore { ddb, table: table.into() }
    }

    /// Creates the table if it does not exist (emulator set-up).
    pub async fn create_table(&self) -> Result<(), EffectStoreError> {
        let r = self
            .ddb
            .create_table()
            .table_name(&self.table)
            .billing_mode(BillingMode::PayPerRequest)
            .attribute_definitions(
                AttributeDefinition::builder()
                    .attribute_name("pk")
                    .attribute_type(ScalarAttributeType::S)
                    .build()
                    .map_err(|e| EffectStoreError { op: "CreateTable", message: e.to_string() })?,
            )
            .key_schema(
                KeySchemaElement::builder()
                    .attribute_name("pk")
                    .key_type(KeyType::Hash)
                    .build()
                    .map_err(|e| EffectStoreError { op: "CreateTable", message: e.to_string() })?,
            )
            .send()
            .await;
        match r {
            Ok(_) => Ok(()),
            Err(e) if e.as_service_error().is_some_and(|s| s.is_resource_in_use_exception()) => Ok(()),
            Err(e) => Err(EffectStoreError {
                op: "CreateTable",
                message: aws_sdk_dynamodb::error::DisplayErrorContext(e).to_string(),
            }),
        }
    }

    fn key(execution: &str) -> AttributeValue {
        AttributeValue::S(format!("RES#{execution}"))
    }

    /// Fences the resource of `execution` with `token`.
    pub async fn fence(&self, execution: &str, token: u64) -> Result<FenceOutcome, EffectStoreError> {
        let r = self
            .ddb
            .update_item()
            .table_name(&self.table)
            .key("pk", Self::key(execution))
            .update_expression("SET #tok = :t, #toks = list_append(if_not_exists(#toks, :empty), :one)")
            .condition_expression("attribute_not_exists(#tok) OR #tok < :t")
            .expression_attribute_names("#tok", "tok")
            .expression_attribute_names("#toks", "toks")
            .expression_attribute_values(":t", n(token))
            .expression_attribute_values(":empty", AttributeValue::L(vec![]))
            .expression_attribute_values(":one", AttributeValue::L(vec![n(token)]))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match r {
            Ok(_) => Ok(FenceOutcome::Accepted),
            Err(e) => match e.into_service_error() {
                aws_sdk_dynamodb::operation::update_item::UpdateItemError::ConditionalCheckFailedException(c) => {
                    let stored = c.item.as_ref().and_then(|i| num(i, "tok"));
                    Ok(if stored == Some(token) { FenceOutcome::AcceptedOnRetry } else { FenceOutcome::Refused })
                }
                other => Err(EffectStoreError { op: "UpdateItem(fence)", message: other.to_string() }),
            },
        }
    }

    /// Applies the effect of `execution` once, if `token` still holds its resource.
    pub async fn apply(&self, execution: &str, token: u64) -> Result<EffectOutcome, EffectStoreError> {
        let r = self
            .ddb
            .update_item()
            .table_name(&self.table)
            .key("pk", Self::key(execution))
            .update_expression("SET #applied = :t ADD #effects :one")
            .condition_expression("#tok = :t AND attribute_not_exists(#applied)")
            .expression_attribute_names("#tok", "tok")
            .expression_attribute_names("#applied", "applied")
            .expression_attribute_names("#effects", "effects")
            .expression_attribute_values(":t", n(token))
            .expression_attribute_values(":one", n(1))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match r {
            Ok(_) => Ok(EffectOutcome::Applied),
            Err(e) => match e.into_service_error() {
                aws_sdk_dynamodb::operation::update_item::UpdateItemError::ConditionalCheckFailedException(c) => {
                    let item = c.item.unwrap_or_default();
                    Ok(match num(&item, "applied") {
                        Some(t) if t == token => EffectOutcome::AppliedOnRetry,
                        Some(_) => EffectOutcome::Absorbed,
                        None => EffectOutcome::Refused,
                    })
                }
                other => Err(EffectStoreError { op: "UpdateItem(apply)", message: other.to_string() }),
            },
        }
    }

    /// Every resource item (a Scan; for the checker at the end of a run).
    pub async fn all(&self) -> Result<Vec<ResourceRecord>, EffectStoreError> {
        let mut out = Vec::new();
        let mut start = None;
        loop {
            let page = self
                .ddb
                .scan()
                .table_name(&self.table)
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(|e| EffectStoreError {
                    op: "Scan",
                    message: aws_sdk_dynamodb::error::DisplayErrorContext(e).to_string(),
                })?;
            for i in page.items() {
                let Some(pk) = i.get("pk").and_then(|v| v.as_s().ok()) else { continue };
                let Some(execution) = pk.strip_prefix("RES#") else { continue };
                let tokens = i
                    .get("toks")
                    .and_then(|v| v.as_l().ok())
                    .map(|l| l.iter().filter_map(|v| v.as_n().ok()?.parse().ok()).collect())
                    .unwrap_or_default();
                out.push(ResourceRecord {
                    execution: execution.to_string(),
                    tokens,
                    effects: num(i, "effects").unwrap_or(0),
                    applied_token: num(i, "applied"),
                });
            }
            match page.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => break,
            }
        }
        Ok(out)
    }
}

/// The chaos handler: fence, work with checkpoints, apply once. `params.workMs` sets the work
/// time (default 300 ms, in 250 ms steps, each ending with a fenced checkpoint).
#[derive(Debug, Clone)]
pub struct EffectHandler {
    /// Where the resources live.
    pub store: EffectStore,
    /// The journal.
    pub journal: Arc<Journal>,
    /// This worker's id.
    pub worker: String,
    /// The real clock, for journal times (the worker's own clock may be skewed on purpose).
    pub real: Arc<dyn Clock>,
}

impl EffectHandler {
    fn retryable(e: EffectStoreError) -> RunError {
        RunError::retryable("EffectStoreUnavailable", e.to_string())
    }
}

impl Handler for EffectHandler {
    fn run(&self, ctx: HandlerContext) -> BoxFuture<'_, Result<(), RunError>> {
        Box::pin(async move {
            let inv = &ctx.invocation;
            let (exec, token) = (inv.execution_id.clone(), inv.fencing_token);
            let now = || self.real.now_ms();
            self.journal.append(&Entry::Start {
                execution: exec.clone(),
                token,
                attempt: inv.attempt,
                worker: self.worker.clone(),
                at_ms: now(),
            });
            let fence = self.store.fence(&exec, token).await.map_err(Self::retryable)?;
            self.journal.append(&Entry::Fence {
                execution: exec.clone(),
                token,
                worker: self.worker.clone(),
                outcome: fence,
                at_ms: now(),
            });
            if fence == FenceOutcome::Refused {
                return Err(RunError::retryable("StaleToken", "the resource holds a newer token"));
            }
            let work = inv.params.get("workMs").and_then(serde_json::Value::as_u64).unwrap_or(300);
            let mut done = ctx
                .resumed_from
                .as_ref()
                .and_then(|c| c.get("doneMs"))
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0);
            while done < work {
                let step = 250.min(work - done);
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(step)) => {}
                    _ = ctx.cancelled() => return Err(RunError::cancelled()),
                }
                done += step;
                ctx.checkpoint(serde_json::json!({ "doneMs": done }))
                    .await
                    .map_err(|e| RunError::retryable("CheckpointRefused", e.to_string()))?;
            }
            let outcome = self.store.apply(&exec, token).await.map_err(Self::retryable)?;
            self.journal.append(&Entry::Effect {
                execution: exec.clone(),
                token,
                worker: self.worker.clone(),
                outcome,
                at_ms: now(),
            });
            match outcome {
                EffectOutcome::Refused => {
                    Err(RunError::retryable("StaleToken", "effect refused: token is stale"))
                }
                _ => Ok(()),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journal_lines_round_trip_and_a_torn_tail_is_skipped() {
        // GIVEN a journal with two entries and a torn last line
        let dir = std::env::temp_dir().join(format!("sundial-chaos-journal-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join("j.jsonl");
        let _ = std::fs::remove_file(&path);
        let j = Journal::open(&path).unwrap_or_else(|e| panic!("{e}"));
        let a = Entry::Start { execution: "j@1".into(), token: 1, attempt: 1, worker: "w".into(), at_ms: 5 };
        let b = Entry::Effect {
            execution: "j@1".into(),
            token: 1,
            worker: "w".into(),
            outcome: EffectOutcome::AppliedOnRetry,
            at_ms: 6,
        };
        j.append(&a);
        j.append(&b);
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(b"{\"kind\":\"sta"))
            .unwrap_or_else(|e| panic!("{e}"));
        // WHEN read back
        let got = Journal::read(&path).unwrap_or_else(|e| panic!("{e}"));
        // THEN both entries come back and the torn tail is ignored
        assert_eq!(got, vec![a, b]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_bad_line_in_the_middle_is_an_error() {
        let dir = std::env::temp_dir().join(format!("sundial-chaos-journal-bad-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join("j.jsonl");
        std::fs::write(&path, "garbage\n{\"kind\":\"metrics\",\"worker\":\"w\",\"execution\":\"e\",\"takeovers\":0,\"stale_rejections\":1,\"clock_skew\":0,\"outcome\":null}\n")
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(Journal::read(&path), Err(JournalError::Parse { line: 1, .. })));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
