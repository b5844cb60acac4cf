//! Map-reduce jobs (`docs/mapreduce.md`): the pure rules and the handler API.
//!
//! A job with `mapReduce: {}` and an in-process target runs each fire in three phases, all
//! on the fire's own execution (the *parent*):
//!
//! 1. **map**: the parent is claimed as usual (token T) and its handler's [`MapReduce::map`]
//!    emits items in batches ([`MapContext::emit`]). Each batch is one `TransactWriteItems`:
//!    the parent's fenced update (`IF st = RUNNING AND tok = T AND lo = me`: the batch's cursor
//!    as its checkpoint, `ADD xe n`) and one conditional `Put` per item child
//!    (`attribute_not_exists`). A zombie's emit fails its fence and creates nothing; a takeover
//!    resumes from the last committed cursor, and a batch repeated across a crash creates
//!    nothing twice (the child key derives from the item key).
//! 2. **wait**: the map returns; the parent is sealed RUNNING → WAITING (fenced). Each item
//!    child is an ordinary execution (claimed, fenced, retried, dead-lettered on its own) whose
//!    final finish and the parent's `ADD xd 1` are one transaction: a child is counted exactly
//!    once, and the parent item stays a few hundred bytes at any item count.
//! 3. **reduce**: once sealed and `done == emitted`, whoever sees it first (the last child's
//!    worker, the seal itself, or the reconciler) moves the parent WAITING → READY in its reduce
//!    phase; a worker claims it again (token T + 1) and [`MapReduce::reduce`] receives every
//!    item's result, read back from the children; its finish is fenced as any other.
//!
//! The parent's state for these phases is [`MapState::Parent`]; a child's is
//! [`MapState::Item`] (its input and, once it succeeded, its result).

pub use sundial_model::mapreduce::*;
pub use sundial_store::mapreduce::EmitError;

use crate::execution::handler::{BoxFuture, HandlerContext};
use serde_json::Value;
use sundial_model::retry::RunError;
use sundial_model::ExecStatus;

/// Checks one emitted batch: keys, sizes, batch length. `Err` names the offending item.
pub fn check_batch(items: &[MapItem]) -> Result<(), EmitError> {
    if items.len() > MAX_EMIT_BATCH {
        return Err(EmitError::Invalid(format!(
            "at most {MAX_EMIT_BATCH} items per emit, got {}",
            items.len()
        )));
    }
    let mut seen = std::collections::HashSet::new();
    for (i, it) in items.iter().enumerate() {
        sundial_model::keys::validate_id("item", &it.key)
            .map_err(|e| EmitError::Invalid(format!("items[{i}].key: {}", e.reason)))?;
        if !seen.insert(it.key.as_str()) {
            return Err(EmitError::Invalid(format!(
                "items[{i}].key: {:?} emitted twice in one batch",
                it.key
            )));
        }
        let len = it.input.to_string().len();
        if len > MAX_ITEM_BYTES {
            return Err(EmitError::Invalid(format!(
                "items[{i}].input: {len} bytes, at most {MAX_ITEM_BYTES}"
            )));
        }
    }
    Ok(())
}

/// Creates one batch of item children for one claim (implemented by the worker).
pub trait Emitter: Send + Sync {
    /// Creates `items`' children and commits `cursor` as the parent's checkpoint, atomically,
    /// if the claim's fence still holds.
    fn emit(&self, items: Vec<MapItem>, cursor: Value) -> BoxFuture<'_, Result<Emitted, EmitError>>;
}

/// What a map step gets: the usual context (its `resumed_from` is the last committed cursor)
/// and the emitter.
pub struct MapContext {
    /// Invocation, resumed cursor, cancellation.
    pub ctx: HandlerContext,
    emitter: std::sync::Arc<dyn Emitter>,
}

impl MapContext {
    /// A map context (built by the worker).
    pub fn new(ctx: HandlerContext, emitter: std::sync::Arc<dyn Emitter>) -> Self {
        MapContext { ctx, emitter }
    }

    /// The cursor the last committed emit stored (where to resume), if any.
    pub fn cursor(&self) -> Option<&Value> {
        self.ctx.resumed_from.as_ref()
    }

    /// Emits a batch (at most [`MAX_EMIT_BATCH`] items) and commits `cursor` with it: after a
    /// takeover the map resumes from the last committed cursor. A stale emit (a zombie's)
    /// creates nothing and cancels this attempt.
    pub async fn emit(&self, items: Vec<MapItem>, cursor: Value) -> Result<Emitted, EmitError> {
        check_batch(&items)?;
        self.emitter.emit(items, cursor).await
    }
}

/// An item as its `run_item` receives it.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemInput {
    /// The key the map emitted it with.
    pub key: String,
    /// Its input.
    pub input: Value,
}

/// A map-reduce handler compiled into the worker binary (registered with
/// [`crate::execution::target::in_process::Handlers::with_map_reduce`]).
pub trait MapReduce: Send + Sync + 'static {
    /// The map: emit every item, in batches, from `ctx.cursor()` on. Return `Ok` once all are
    /// emitted (the parent is then sealed).
    fn map(&self, ctx: MapContext) -> BoxFuture<'_, Result<(), RunError>>;
    /// One item's work (its own execution: `ctx.invocation.execution_id` is its idempotency
    /// key). The result (at most [`MAX_ITEM_BYTES`] of JSON) is kept for the reduce.
    fn run_item(&self, ctx: HandlerContext, item: ItemInput) -> BoxFuture<'_, Result<Value, RunError>>;
    /// The reduce, once every item is final: runs once per fire (fenced, retried as a run).
    fn reduce(&self, ctx: HandlerContext, results: Vec<ItemResult>) -> BoxFuture<'_, Result<(), RunError>>;
}

/// Checks an item result's size.
pub fn check_result(v: &Value) -> Result<(), RunError> {
    let len = v.to_string().len();
    if len > MAX_ITEM_BYTES {
        return Err(RunError::permanent(
            ITEM_TOO_LARGE,
            format!("result: {len} bytes, at most {MAX_ITEM_BYTES} (keep large results elsewhere and return a reference)"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use sundial_model::{JobDefinition, Target};
    use sundial_schedule::ScheduleSpec;

    #[test]
    fn validation_names_the_field() {
        let mut d =
            JobDefinition::new(ScheduleSpec::new("rate(1 minute)", "UTC"), Target::http("https://x.example"));
        let field = |d: &JobDefinition| validate(d).err().map(|e| e.field);
        assert_eq!(field(&d), None);
        d.map_reduce = Some(MapReduceSpec::default());
        assert_eq!(field(&d).as_deref(), Some("mapReduce"), "not in-process");
        d.target = Target::in_process("h");
        assert_eq!(field(&d), None);
        d.map_reduce = Some(MapReduceSpec { max_items: Some(0) });
        assert_eq!(field(&d).as_deref(), Some("mapReduce.maxItems"));
        d.map_reduce = Some(MapReduceSpec { max_items: Some(10) });
        d.shards = Some(2);
        assert_eq!(field(&d).as_deref(), Some("mapReduce"));
    }

    #[test]
    fn batches_are_checked_item_by_item() {
        let ok = |k: &str| MapItem::new(k, serde_json::json!({"a": 1}));
        assert!(check_batch(&[ok("a"), ok("b")]).is_ok());
        let msg = |r: Result<(), EmitError>| r.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(msg(check_batch(&[ok("a"), ok("a")])).contains("items[1].key"));
        assert!(msg(check_batch(&[ok("a"), ok("b c")])).contains("items[1].key"));
        let big = MapItem::new("x", Value::String("y".repeat(MAX_ITEM_BYTES)));
        assert!(msg(check_batch(&[big])).contains("items[0].input"));
        let many: Vec<MapItem> = (0..100).map(|i| ok(&format!("k{i}"))).collect();
        assert!(msg(check_batch(&many)).contains("at most 99"));
    }

    #[test]
    fn a_parent_reduces_once_sealed_and_every_item_is_counted() {
        let st = |emitted, done| MapState::Parent { phase: Phase::Wait, emitted, done, failed: 0 };
        assert!(!ready_to_reduce(ExecStatus::Running, Some(&st(3, 3))), "not sealed");
        assert!(!ready_to_reduce(ExecStatus::Waiting, Some(&st(3, 2))));
        assert!(ready_to_reduce(ExecStatus::Waiting, Some(&st(3, 3))));
        assert!(ready_to_reduce(ExecStatus::Waiting, Some(&st(0, 0))), "an empty map reduces at once");
        assert!(!ready_to_reduce(ExecStatus::Waiting, None));
    }
}

/// A diagnostic map-reduce handler shipped with the ECS worker (`"handler": "count"`, with
/// `mapReduce: {}`): its map emits `params.items` items (`k00000`, `k00001`, ...) in batches
/// of `params.batch` (default 50), pausing `params.stepMs` between batches, its cursor the
/// next index; each item pauses `params.itemMs`, fails its first attempt if its key is in
/// `params.failFirst`, and returns `{"i": index}`; the reduce fails permanently
/// (`ReduceMismatch`) unless it received every index exactly once, all succeeded. It exercises
/// emits, takeovers, item retries and the reduce in a deployment without any user code.
#[derive(Debug, Clone, Copy, Default)]
pub struct Count;

impl Count {
    fn param(ctx: &HandlerContext, name: &str, default: u64) -> u64 {
        ctx.invocation.params.get(name).and_then(Value::as_u64).unwrap_or(default)
    }

    async fn pause(ctx: &HandlerContext, ms: u64) -> Result<(), RunError> {
        if ms > 0 {
            tokio::select! {
                // Branches are polled in written order, so a seed replays the same way in the
                // deterministic simulator (docs/simulation.md).
                biased;
                _ = tokio::time::sleep(std::time::Duration::from_millis(ms)) => {}
                _ = ctx.cancelled() => return Err(RunError::cancelled()),
            }
        }
        Ok(())
    }
}

/// The key of item `i` of [`Count`].
pub fn count_key(i: u64) -> String {
    format!("k{i:05}")
}

impl MapReduce for Count {
    fn map(&self, m: MapContext) -> BoxFuture<'_, Result<(), RunError>> {
        Box::pin(async move {
            let total = Self::param(&m.ctx, "items", 0);
            let batch = Self::param(&m.ctx, "batch", 50).clamp(1, MAX_EMIT_BATCH as u64);
            let step = Self::param(&m.ctx, "stepMs", 0);
            let mut next = m.cursor().and_then(|c| c.get("next")).and_then(Value::as_u64).unwrap_or(0);
            while next < total {
                if m.ctx.is_cancelled() {
                    return Err(RunError::cancelled());
                }
                let end = (next + batch).min(total);
                let items =
                    (next..end).map(|i| MapItem::new(count_key(i), serde_json::json!({ "i": i }))).collect();
                m.emit(items, serde_json::json!({ "next": end })).await?;
                next = end;
                Self::pause(&m.ctx, step).await?;
            }
            Ok(())
        })
    }

    fn run_item(&self, ctx: HandlerContext, item: ItemInput) -> BoxFuture<'_, Result<Value, RunError>> {
        Box::pin(async move {
            let flaky = ctx
                .invocation
                .params
                .get("failFirst")
                .and_then(Value::as_array)
                .is_some_and(|a| a.iter().any(|k| k.as_str() == Some(item.key.as_str())));
            if flaky && ctx.invocation.attempt == 1 {
                return Err(RunError::retryable("Flaky", format!("{} fails its first attempt", item.key)));
            }
            Self::pause(&ctx, Self::param(&ctx, "itemMs", 0)).await?;
            Ok(serde_json::json!({ "i": item.input.get("i").cloned().unwrap_or(Value::Null) }))
        })
    }

    fn reduce(&self, ctx: HandlerContext, results: Vec<ItemResult>) -> BoxFuture<'_, Result<(), RunError>> {
        Box::pin(async move {
            let total = Self::param(&ctx, "items", 0);
            let mut seen = std::collections::BTreeSet::new();
            for r in &results {
                let i = r.result.as_ref().and_then(|v| v.get("i")).and_then(Value::as_u64);
                if r.status != ExecStatus::Succeeded || i.is_none_or(|i| !seen.insert(i)) {
                    return Err(RunError::permanent(
                        "ReduceMismatch",
                        format!("item {} is {:?}", r.key, r.status),
                    ));
                }
            }
            if seen.len() as u64 != total || seen.iter().next_back().is_some_and(|m| *m + 1 != total) {
                return Err(RunError::permanent(
                    "ReduceMismatch",
                    format!("{} distinct results for {total} items", seen.len()),
                ));
            }
            Ok(())
        })
    }
}
