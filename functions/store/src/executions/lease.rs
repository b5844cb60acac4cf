//! The lease holder's writes that keep the execution RUNNING: heartbeat, checkpoint, release.
//! Each succeeds only while `fence` still holds the execution.

use super::{s, CheckpointError, ExecKey, ExecStore, Heartbeat, MAX_CHECKPOINT_BYTES};
use crate::error::StoreError;
use crate::expr::Expr;
use crate::items::{attr, n, Item};
use crate::transition::Guard;
use aws_sdk_dynamodb::types::AttributeValue;
use sundial_model::claim::Fence;
use sundial_model::{AuditEvent, ExecStatus};

impl ExecStore {
    /// Conditions of a lease holder's write: `st = RUNNING AND tok = fence.token AND lo =
    /// fence.owner`.
    pub(crate) fn fenced(e: &mut Expr, fence: &Fence) {
        if sundial_mutants::active(sundial_mutants::Mutant::HeartbeatUnfenced) {
            e.cond_eq(attr::STATUS, AttributeValue::S(ExecStatus::Running.as_str().into()));
            return;
        }
        Guard::Fence(fence).conditions(e, ExecStatus::Running);
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

    /// Appends a note (`code`, e.g. the execution a Step Functions target started) to the
    /// timeline at `now_ms` by `actor`, if `fence` still holds the execution. False if it is no
    /// longer ours.
    pub async fn note_held(
        &self,
        key: &ExecKey,
        fence: &Fence,
        code: &str,
        actor: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let ev = AuditEvent {
            at: now_ms,
            actor: actor.to_string(),
            from: Some(ExecStatus::Running),
            to: ExecStatus::Running,
            attempt: fence.attempt,
            token: fence.token,
            code: Some(code.to_string()),
        };
        let mut e = Expr::default();
        e.append_event(&ev);
        Self::fenced(&mut e, fence);
        Ok(self.cas(key, "UpdateItem(note)", e).await?.is_ok())
    }
}

fn cancel_flag(item: &Item) -> bool {
    item.get(attr::CANCEL).and_then(|v| v.as_bool().ok()).copied().unwrap_or(false)
}
