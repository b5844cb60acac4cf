//! What an in-process handler gets for one attempt ([`HandlerContext`]): the invocation, the
//! checkpoint to resume from, its cancellation, and the checkpoint write fenced on the claim.
//! Both kinds of in-process handler take it: the in-process target's
//! ([`super::target::in_process::Handler`]) and map-reduce's ([`super::mapreduce::MapReduce`]),
//! so it sits below both.

use crate::execution::target::Invocation;
use serde_json::Value;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use sundial_store::executions::CheckpointError;
use tokio_util::sync::CancellationToken;

/// A boxed, sendable future (handlers are stored as trait objects).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Stores checkpoints for one claim (implemented by the worker with the fenced store write).
pub trait Checkpointer: Send + Sync {
    /// Stores `state`; `Ok(true)` if a cancel has been requested meanwhile.
    fn save(&self, state: Value) -> BoxFuture<'_, Result<bool, CheckpointError>>;
}

/// What a handler gets for one attempt.
pub struct HandlerContext {
    /// The invocation document (execution id, fencing token, attempt, params…).
    pub invocation: Invocation,
    /// The last checkpoint committed by any earlier holder, if any.
    pub resumed_from: Option<Value>,
    cancel: CancellationToken,
    checkpointer: Arc<dyn Checkpointer>,
}

impl fmt::Debug for HandlerContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandlerContext")
            .field("invocation", &self.invocation)
            .field("resumed_from", &self.resumed_from)
            .field("cancelled", &self.cancel.is_cancelled())
            .finish()
    }
}

impl HandlerContext {
    /// A context (built by the worker).
    pub fn new(
        invocation: Invocation,
        resumed_from: Option<Value>,
        cancel: CancellationToken,
        checkpointer: Arc<dyn Checkpointer>,
    ) -> Self {
        HandlerContext { invocation, resumed_from, cancel, checkpointer }
    }

    /// Whether the handler should stop at this safe point.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Completes when the handler should stop.
    pub async fn cancelled(&self) {
        self.cancel.cancelled().await
    }

    /// Commits `state` as this execution's checkpoint, fenced on the claim's token. A stale
    /// token is refused (and cancels this attempt); a pending cancel request is signalled
    /// through the cancellation token.
    pub async fn checkpoint(&self, state: Value) -> Result<(), CheckpointError> {
        match self.checkpointer.save(state).await {
            Ok(cancel_requested) => {
                if cancel_requested {
                    self.cancel.cancel();
                }
                Ok(())
            }
            Err(e) => {
                if matches!(e, CheckpointError::Stale { .. }) {
                    self.cancel.cancel();
                }
                Err(e)
            }
        }
    }
}
