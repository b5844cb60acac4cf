//! The settlement as a Sundial map-reduce job over merchants (`docs/mapreduce.md`).
//!
//! The single-execution job (`settle.rs`) settles 10,000 merchants in one long execution; here each
//! merchant is its own child execution. The map emits one item per merchant (`m00042`, batches of
//! 99, the cursor the next merchant index, so a takeover resumes where the last committed batch
//! ended). Each item settles its merchant with the same layers as a lane of
//! [`Settlement::run`] (CAS claim, unique detail row, keyed credit, CAS finish) under the
//! item's own execution id and fencing token, and is retried alone when its credit's outcome
//! is unknown. The reduce runs once every merchant is final: it reconciles our details with
//! the account service's ledger, publishes the reconciliation, sets the done-marker and writes
//! the fenced run report.
//!
//! Job definition: `{"target": {"type": "inProcess", "handler": "settle-merchants"},
//! "mapReduce": {"maxItems": 20000}, "params": {"merchants": 10000}}`.

use crate::settle::{merchant_id, Settlement};
use serde_json::{json, Value};
use sundial_core::execution::mapreduce::{
    ItemInput, ItemResult, MapContext, MapItem, MapReduce, MAX_EMIT_BATCH,
};
use sundial_core::execution::target::in_process::{BoxFuture, HandlerContext};
use sundial_idempotency::ExecutionContext;
use sundial_model::retry::RunError;
use sundial_model::ExecStatus;

/// The map-reduce handler (register it with `Handlers::with_map_reduce("settle-merchants", ..)`).
#[derive(Debug, Clone)]
pub struct SettleMerchants {
    /// The settlement (tables, account client, layers).
    pub job: Settlement,
}

fn ctx_of(h: &HandlerContext) -> ExecutionContext {
    let inv = &h.invocation;
    ExecutionContext::new(inv.execution_id.clone(), inv.fencing_token, inv.scheduled_at)
}

fn merchants(h: &HandlerContext) -> u64 {
    h.invocation.params.get("merchants").and_then(Value::as_u64).unwrap_or(0)
}

impl MapReduce for SettleMerchants {
    fn map(&self, m: MapContext) -> BoxFuture<'_, Result<(), RunError>> {
        Box::pin(async move {
            let total = merchants(&m.ctx);
            let mut next = m.cursor().and_then(|c| c.get("next")).and_then(Value::as_u64).unwrap_or(0);
            while next < total {
                if m.ctx.is_cancelled() {
                    return Err(RunError::cancelled());
                }
                let end = (next + MAX_EMIT_BATCH as u64).min(total);
                let items =
                    (next..end).map(|i| MapItem::new(merchant_id(i as usize), json!({ "i": i }))).collect();
                m.emit(items, json!({ "next": end })).await?;
                next = end;
            }
            Ok(())
        })
    }

    fn run_item(&self, h: HandlerContext, item: ItemInput) -> BoxFuture<'_, Result<Value, RunError>> {
        Box::pin(async move {
            let i = item.input.get("i").and_then(Value::as_u64).unwrap_or(0) as usize;
            match self.job.settle_item(&ctx_of(&h), i, chrono::Utc::now()).await {
                Ok(true) => Ok(json!({ "merchant": item.key })),
                Ok(false) => Err(RunError::retryable(
                    "NotSettledYet",
                    format!("{} not settled by this attempt", item.key),
                )),
                Err(e) => Err(RunError::retryable("SettleFailed", format!("{}: {e:#}", item.key))),
            }
        })
    }

    fn reduce(&self, h: HandlerContext, results: Vec<ItemResult>) -> BoxFuture<'_, Result<(), RunError>> {
        Box::pin(async move {
            let settled = results.iter().filter(|r| r.status == ExecStatus::Succeeded).count();
            let count = merchants(&h) as usize;
            let summary = self
                .job
                .close_day(&ctx_of(&h), settled, count, chrono::Utc::now())
                .await
                .map_err(|e| RunError::retryable("CloseDayFailed", format!("{e:#}")))?;
            match &summary.reconciliation {
                Some(r) if r.is_clean() => Ok(()),
                _ => Err(RunError::permanent(
                    "SettlementIncomplete",
                    format!(
                        "{settled} of {count} merchants settled; reconciliation {:?}",
                        summary.reconciliation
                    ),
                )),
            }
        })
    }
}
