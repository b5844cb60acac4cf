//! In-process Rust handlers, run by the ECS worker binary (long jobs, checkpoints).
//!
//! A [`Handler`] receives a [`HandlerContext`]: the invocation, the checkpoint a previous holder
//! committed (docs/execution.md §5: a worker that takes over resumes from the last committed
//! checkpoint instead of starting over), a cancellation token, and [`HandlerContext::checkpoint`].
//! The checkpoint write is fenced on the claim's token: once another worker has taken the execution
//! over, it is refused with [`CheckpointError::Stale`], and the handler's cancellation token fires
//! so a zombie stops at its next safe point instead of publishing work. Cancellation (a user's
//! cancel, REPLACE, a timeout, worker shutdown) is cooperative (docs/execution.md §5): check
//! [`HandlerContext::is_cancelled`] between steps, or `select!` on [`HandlerContext::cancelled`].

pub use crate::execution::handler::{BoxFuture, Checkpointer, HandlerContext};
use serde_json::Value;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use sundial_model::retry::RunError;
#[cfg(doc)] // the header links to it
use sundial_store::executions::CheckpointError;

/// A job handler compiled into the worker binary.
pub trait Handler: Send + Sync + 'static {
    /// Runs one attempt. Return a [`RunError`] to fail it: its class decides retrying. A handler
    /// that stops because it was cancelled should return [`RunError::cancelled`] (or `Ok` if it
    /// completed anyway).
    fn run(&self, ctx: HandlerContext) -> BoxFuture<'_, Result<(), RunError>>;
}

/// Handlers by name (an `inProcess` target's `handler`).
#[derive(Clone, Default)]
pub struct Handlers {
    map: HashMap<String, Arc<dyn Handler>>,
    map_reduce: HashMap<String, Arc<dyn crate::execution::mapreduce::MapReduce>>,
}

impl fmt::Debug for Handlers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.map.keys().chain(self.map_reduce.keys())).finish()
    }
}

impl Handlers {
    /// No handlers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a handler under `name`.
    pub fn with(mut self, name: &str, h: impl Handler) -> Self {
        self.map.insert(name.to_string(), Arc::new(h));
        self
    }

    /// The handler named `name`.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Handler>> {
        self.map.get(name).cloned()
    }

    /// Adds a map-reduce handler under `name` (for jobs with `mapReduce`, docs/mapreduce.md).
    pub fn with_map_reduce(mut self, name: &str, h: impl crate::execution::mapreduce::MapReduce) -> Self {
        self.map_reduce.insert(name.to_string(), Arc::new(h));
        self
    }

    /// The map-reduce handler named `name`.
    pub fn get_map_reduce(&self, name: &str) -> Option<Arc<dyn crate::execution::mapreduce::MapReduce>> {
        self.map_reduce.get(name).cloned()
    }
}

/// A diagnostic handler shipped with the ECS worker (`"handler": "sleep"`): works for
/// `params.ms` milliseconds in steps of `params.stepMs` (default 100), checkpointing
/// `{"doneMs": …}` after each step and resuming from the last checkpoint after a takeover.
/// It exercises leases, heartbeats, cancellation and checkpoints in a deployment without any
/// user code.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sleep;

impl Handler for Sleep {
    fn run(&self, ctx: HandlerContext) -> BoxFuture<'_, Result<(), RunError>> {
        Box::pin(async move {
            let total = ctx.invocation.params.get("ms").and_then(Value::as_u64).unwrap_or(0);
            let step = ctx.invocation.params.get("stepMs").and_then(Value::as_u64).unwrap_or(100).max(1);
            let mut done =
                ctx.resumed_from.as_ref().and_then(|c| c.get("doneMs")).and_then(Value::as_u64).unwrap_or(0);
            while done < total {
                if ctx.is_cancelled() {
                    return Err(RunError::cancelled());
                }
                let d = step.min(total - done);
                tokio::select! {
                    // Branches are polled in written order, so a seed replays the same way in the
                    // deterministic simulator (docs/simulation.md).
                    biased;
                    _ = tokio::time::sleep(Duration::from_millis(d)) => {}
                    _ = ctx.cancelled() => return Err(RunError::cancelled()),
                }
                done += d;
                ctx.checkpoint(serde_json::json!({ "doneMs": done }))
                    .await
                    .map_err(|e| RunError::retryable("CheckpointRefused", e.to_string()))?;
            }
            Ok(())
        })
    }
}
