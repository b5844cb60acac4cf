//! Sharded jobs under fire: a settlement-like handler, its effect ledger, and the
//! checker that says whether every item's effect happened exactly once.
//!
//! The handler ([`ShardHandler`], `shard-effect`) settles `items` merchants; merchant `m`
//! belongs to shard `m % shardTotal`. Like a real one (docs/idempotency.md,
//! "The settlement example"), it first fences its child execution's ledger entry with its token,
//! then applies each of *its* merchants' effects once, each write conditional on the token still
//! holding the entry (`tok = :mine AND attribute_not_exists(applied.m)`): a takeover after a
//! SIGKILL re-applies nothing it already applied, and a paused (SIGSTOP) holder that wakes after
//! the takeover is refused. The ledger is one item per child execution (`SHD#{execution id}`), so
//! effects of two *different* children on one merchant are both accepted: that is exactly what a
//! handler that ignores `shardIndex` does (every child settles every merchant), and what [`check`]
//! must catch.

use crate::effect::{n, num};
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;
use sundial_core::execution::target::in_process::{BoxFuture, Handler, HandlerContext};
use sundial_model::retry::RunError;

/// The handler name sharded jobs use.
pub const SHARD_HANDLER: &str = "shard-effect";

/// What the job's `params` tell the handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShardParams {
    /// Merchants in all.
    pub items: u32,
    /// Work per merchant (ms), so kills and pauses land mid-run.
    #[serde(default)]
    pub work_ms: u64,
    /// The broken variant: settle every merchant, not only this shard's.
    #[serde(default)]
    pub ignore_shard: bool,
}

/// How a ledger write ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
    /// Accepted (or found already done by this token).
    Done,
    /// Already applied by an earlier holder of this child: absorbed.
    Absorbed,
    /// A newer token holds the entry: this holder is stale.
    Refused,
}

/// The ledger failed in a way that says nothing about tokens.
#[derive(Debug, thiserror::Error)]
#[error("shard ledger {op}: {message}")]
pub struct LedgerError {
    op: &'static str,
    message: String,
}

/// The effect ledger: one item per child execution, in the chaos effects table.
#[derive(Debug, Clone)]
pub struct ShardLedger {
    ddb: aws_sdk_dynamodb::Client,
    table: String,
}

impl ShardLedger {
    /// A ledger in `table` (created by [`crate::effect::EffectStore::create_table`]).
    pub fn new(ddb: aws_sdk_dynamodb::Client, table: impl Into<String>) -> Self {
        ShardLedger { ddb, table: table.into() }
    }

    fn key(execution: &str) -> AttributeValue {
        AttributeValue::S(format!("SHD#{execution}"))
    }

    /// Fences `execution`'s entry with `token` (refused if a newer token holds it).
    pub async fn fence(&self, execution: &str, token: u64) -> Result<Write, LedgerError> {
        let r = self
            .ddb
            .update_item()
            .table_name(&self.table)
            .key("pk", Self::key(execution))
            .update_expression("SET #tok = :t, #applied = if_not_exists(#applied, :empty)")
            .condition_expression("attribute_not_exists(#tok) OR #tok <= :t")
            .expression_attribute_names("#tok", "tok")
            .expression_attribute_names("#applied", "applied")
            .expression_attribute_values(":t", n(token))
            .expression_attribute_values(":empty", AttributeValue::M(HashMap::new()))
            .send()
            .await;
        match r {
            Ok(_) => Ok(Write::Done),
            Err(e) => match e.into_service_error() {
                aws_sdk_dynamodb::operation::update_item::UpdateItemError::ConditionalCheckFailedException(_) => {
                    Ok(Write::Refused)
                }
                other => Err(LedgerError { op: "UpdateItem(fence)", message: other.to_string() }),
            },
        }
    }

    /// Applies merchant `item`'s effect for `execution` once, if `token` still holds the entry.
    pub async fn apply(&self, execution: &str, token: u64, item: u32) -> Result<Write, LedgerError> {
        let r = self
            .ddb
            .update_item()
            .table_name(&self.table)
            .key("pk", Self::key(execution))
            .update_expression("SET #applied.#item = :t")
            .condition_expression("#tok = :t AND attribute_not_exists(#applied.#item)")
            .expression_attribute_names("#tok", "tok")
            .expression_attribute_names("#applied", "applied")
            .expression_attribute_names("#item", format!("m{item}"))
            .expression_attribute_values(":t", n(token))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match r {
            Ok(_) => Ok(Write::Done),
            Err(e) => match e.into_service_error() {
                aws_sdk_dynamodb::operation::update_item::UpdateItemError::ConditionalCheckFailedException(c) => {
                    let old = c.item.unwrap_or_default();
                    let applied_by = old
                        .get("applied")
                        .and_then(|v| v.as_m().ok())
                        .and_then(|m| m.get(&format!("m{item}")))
                        .and_then(|v| v.as_n().ok())
                        .and_then(|s| s.parse::<u64>().ok());
                    Ok(match (num(&old, "tok"), applied_by) {
                        (Some(t), Some(by)) if t == token && by == token => Write::Done,
                        (Some(t), Some(_)) if t == token => Write::Absorbed,
                        _ => Write::Refused,
                    })
                }
                other => Err(LedgerError { op: "UpdateItem(apply)", message: other.to_string() }),
            },
        }
    }

    /// Every applied effect: (child execution id, merchant, token that applied it). A Scan, for
    /// the checker at the end of a test.
    pub async fn effects(&self) -> Result<Vec<(String, u32, u64)>, LedgerError> {
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
                .map_err(|e| LedgerError {
                    op: "Scan",
                    message: aws_sdk_dynamodb::error::DisplayErrorContext(e).to_string(),
                })?;
            for i in page.items() {
                let Some(pk) = i.get("pk").and_then(|v| v.as_s().ok()) else { continue };
                let Some(execution) = pk.strip_prefix("SHD#") else { continue };
                let Some(applied) = i.get("applied").and_then(|v| v.as_m().ok()) else { continue };
                for (m, t) in applied {
                    let (Some(item), Some(tok)) = (
                        m.strip_prefix('m').and_then(|x| x.parse().ok()),
                        t.as_n().ok().and_then(|x| x.parse().ok()),
                    ) else {
                        continue;
                    };
                    out.push((execution.to_string(), item, tok));
                }
            }
            match page.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => return Ok(out),
            }
        }
    }
}

/// The sharded settlement handler.
#[derive(Debug, Clone)]
pub struct ShardHandler {
    /// Its ledger.
    pub ledger: ShardLedger,
}

impl Handler for ShardHandler {
    fn run(&self, ctx: HandlerContext) -> BoxFuture<'_, Result<(), RunError>> {
        Box::pin(async move {
            let inv = &ctx.invocation;
            let p: ShardParams = serde_json::from_value(inv.params.clone())
                .map_err(|e| RunError::permanent("BadParams", e.to_string()))?;
            let (Some(index), Some(total)) = (inv.shard_index, inv.shard_total) else {
                return Err(RunError::permanent(
                    "NotAShard",
                    "shard-effect runs as a child of a sharded job",
                ));
            };
            let retry = |e: LedgerError| RunError::retryable("Ledger", e.to_string());
            let stale = || RunError::retryable("StaleToken", "a newer holder fenced this shard");
            let (id, tok) = (inv.execution_id.as_str(), inv.fencing_token);
            if self.ledger.fence(id, tok).await.map_err(retry)? == Write::Refused {
                return Err(stale());
            }
            for item in (0..p.items).filter(|m| p.ignore_shard || m % total == index) {
                if ctx.is_cancelled() {
                    return Err(RunError::cancelled());
                }
                tokio::time::sleep(Duration::from_millis(p.work_ms)).await;
                if self.ledger.apply(id, tok, item).await.map_err(retry)? == Write::Refused {
                    return Err(stale());
                }
            }
            Ok(())
        })
    }
}

/// What the checker found over a fire's effects.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShardReport {
    /// Merchants whose effect never happened.
    pub missing: Vec<u32>,
    /// Merchants whose effect happened more than once, with the children that applied it.
    pub duplicated: BTreeMap<u32, Vec<String>>,
    /// Effects applied by a child that does not own the merchant's shard: (merchant, child).
    pub foreign: Vec<(u32, String)>,
}

impl ShardReport {
    /// Every merchant settled exactly once, each by its own shard.
    pub fn is_clean(&self) -> bool {
        self.missing.is_empty() && self.duplicated.is_empty() && self.foreign.is_empty()
    }
}

/// Checks the effects `(child id, merchant, token)` of one fire of `items` merchants in
/// `shards` shards: each merchant exactly once, by the child of its shard (`….s{m % shards}`).
pub fn check(effects: &[(String, u32, u64)], items: u32, shards: u32) -> ShardReport {
    let mut by_item: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    let mut r = ShardReport::default();
    for (child, item, _) in effects {
        by_item.entry(*item).or_default().push(child.clone());
        if !child.ends_with(&format!(".s{}", item % shards.max(1))) {
            r.foreign.push((*item, child.clone()));
        }
    }
    for m in 0..items {
        match by_item.get(&m) {
            None => r.missing.push(m),
            Some(v) if v.len() > 1 => {
                r.duplicated.insert(m, v.clone());
            }
            Some(_) => {}
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checker_flags_missing_duplicated_and_foreign_effects() {
        let e = |c: &str, m: u32| (format!("t:j@1.{c}"), m, 1);
        assert!(check(&[e("s0", 0), e("s1", 1), e("s0", 2), e("s1", 3)], 4, 2).is_clean());
        let r = check(&[e("s0", 0), e("s1", 0), e("s1", 1)], 3, 2);
        assert_eq!(r.missing, vec![2]);
        assert_eq!(r.duplicated.keys().copied().collect::<Vec<_>>(), vec![0]);
        assert_eq!(r.foreign, vec![(0, "t:j@1.s1".to_string())]);
    }
}
