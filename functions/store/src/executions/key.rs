//! The primary key of an execution, and the ids derived from it.

use sundial_model::children::ChildKey;
use sundial_model::keys;
use sundial_model::{ExecMessage, Execution};

/// The primary key of an execution.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ExecKey {
    /// Tenant.
    pub tenant: String,
    /// Job.
    pub job_id: String,
    /// Scheduled instant (ms).
    pub scheduled_ms: i64,
    /// Which child of the fire at that instant, for a child execution (`docs/children.md`).
    pub child: Option<ChildKey>,
}

impl ExecKey {
    /// The key of a fire (a parent or ordinary execution, not a child).
    pub fn new(tenant: impl Into<String>, job_id: impl Into<String>, scheduled_ms: i64) -> Self {
        ExecKey { tenant: tenant.into(), job_id: job_id.into(), scheduled_ms, child: None }
    }

    /// The key of the execution a queue message stands for. A child part that does not parse
    /// names no child (the read then finds the parent, which no claim runs twice).
    pub fn of_message(m: &ExecMessage) -> Self {
        ExecKey {
            tenant: m.tenant.clone(),
            job_id: m.job_id.clone(),
            scheduled_ms: m.scheduled_ms,
            child: m.child.as_deref().and_then(ChildKey::parse),
        }
    }

    /// The key of an execution.
    pub fn of(e: &Execution) -> Self {
        ExecKey {
            tenant: e.tenant.clone(),
            job_id: e.job_id.clone(),
            scheduled_ms: e.scheduled_at.timestamp_millis(),
            child: e.child.clone(),
        }
    }

    /// The key of this key's parent (itself when it is not a child).
    pub fn parent(&self) -> Self {
        ExecKey { child: None, ..self.clone() }
    }

    /// Partition key.
    pub fn pk(&self) -> String {
        keys::job_pk(&self.tenant, &self.job_id)
    }

    /// Sort key.
    pub fn sk(&self) -> String {
        match &self.child {
            None => keys::exec_sk(self.scheduled_ms),
            Some(c) => keys::exec_child_sk(self.scheduled_ms, c),
        }
    }

    /// The public execution id (`{job}@{ms}`, a child's `{job}@{ms}.{tag}`), relative to the
    /// caller's tenant.
    pub fn id(&self) -> String {
        keys::child_execution_id(&keys::execution_id(&self.job_id, self.scheduled_ms), self.child.as_ref())
    }

    /// The id outside the system (`{tenant}:{job}@{ms}`, a child's with `.{tag}`).
    pub fn global_id(&self) -> String {
        keys::child_execution_id(
            &keys::global_execution_id(&self.tenant, &self.job_id, self.scheduled_ms),
            self.child.as_ref(),
        )
    }
}
