//! What an attempt holds besides its lease, owned by one value.
//!
//! An attempt may hold three things that others wait for: an entry in its tenant's running gate
//! (when a per-tenant limit applies), an entry in the holder gate of each resource its job uses
//! (`resources`, given back like the tenant entry), and its job's concurrency slot (non-`ALLOW`
//! policies, taken at admission and kept through `RETRY_WAIT` until a final status). Which of them to give back
//! depends only on how the attempt ended, so that decision lives in one `match`
//! ([`Holds::end`]) and every way out of an attempt goes through it instead of repeating the
//! releases at each exit.

use super::Worker;
use crate::execution::resource_limits::Held;
use sundial_model::{ConcurrencyPolicy, ExecStatus};
use sundial_store::error::StoreError;
use sundial_store::executions::ExecKey;

/// How an attempt ended, as far as its holds are concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Exit {
    /// The claim did not happen (not yet due, held by another worker, final, missing).
    /// `canceled`: the claimer found a requested cancel and completed it, so the execution is
    /// final and its slot is free.
    NotClaimed { canceled: bool },
    /// Shutdown: the lease was given back; the execution is still live and keeps its slot.
    Released,
    /// This worker's finish was recorded with `status`.
    Finished { status: ExecStatus, policy: ConcurrencyPolicy },
    /// Another worker took the execution over: what was held is the new owner's now.
    TakenOver,
}

/// The holds of one attempt. Create it at admission, end it exactly once with [`Holds::end`].
/// Its entries are keyed by its admission ([`sundial_model::keys::gate_entry`]), so they are its own:
/// another admission of the same execution (a duplicate delivery, a takeover) has its own, and
/// neither can give back the other's.
#[must_use = "an attempt's holds must be ended with Holds::end"]
#[derive(Debug)]
pub(super) struct Holds {
    key: ExecKey,
    /// The admission that took the entries (unique per worker and delivery).
    admission: String,
    /// The tenant gate shard holding this attempt's entry, if it joined its tenant's gate.
    tenant: Option<u32>,
    /// The resources whose holder gates hold this attempt's entry (its global id).
    resources: Vec<Held>,
    /// When the entries' leases end unless renewed (ms, the worker's clock): the first a gate
    /// entry was taken with (`i64::MAX`: none taken).
    lapses_at: i64,
    ended: bool,
}

impl Holds {
    /// Holds of admission `admission`; `tenant`: the gate shard it joined in its tenant's
    /// running gate.
    pub(super) fn new(key: ExecKey, admission: String, tenant: Option<u32>) -> Self {
        Holds { key, admission, tenant, resources: Vec::new(), lapses_at: i64::MAX, ended: false }
    }

    /// The same holds, whose entries were taken with leases ending at `lease_until` (ms).
    pub(super) fn lapsing_at(mut self, lease_until: i64) -> Self {
        self.lapses_at = self.lapses_at.min(lease_until);
        self
    }

    /// Whether an entry may have lapsed by `now_ms`, give or take `margin_ms` (false when the
    /// attempt holds none): then [`Self::extend`] says whether it is still there.
    pub(super) fn may_have_lapsed(&self, now_ms: i64, margin_ms: i64) -> bool {
        (self.tenant.is_some() || !self.resources.is_empty())
            && now_ms.saturating_add(margin_ms) >= self.lapses_at
    }

    /// This admission's entry in its tenant's running gate.
    pub(super) fn tenant_entry(key: &ExecKey, admission: &str) -> String {
        sundial_model::keys::gate_entry(&key.id(), admission)
    }

    /// This attempt's entry in a resource's holder gate.
    pub(super) fn own_resource_entry(&self) -> String {
        Self::resource_entry(&self.key, &self.admission)
    }

    /// This admission's entry in a resource's holder gate (global: tenants share those gates).
    pub(super) fn resource_entry(key: &ExecKey, admission: &str) -> String {
        sundial_model::keys::gate_entry(&key.global_id(), admission)
    }

    /// The same holds, also holding `resources` (taken all at once at admission, with leases
    /// ending at `lease_until`).
    pub(super) fn with_resources(mut self, resources: Vec<Held>, lease_until: i64) -> Self {
        self.resources = resources;
        self.lapsing_at(lease_until)
    }

    /// Renews the tenant gate and resource entries with the lease (heartbeat); whether every
    /// one was still there (false: one lapsed with its lease and an acquirer dropped it, so
    /// this attempt no longer holds its unit). Both are tried; the first error is returned.
    /// Nothing to renew: true, without a request.
    pub(super) async fn extend(&self, w: &Worker, lease_until: i64) -> Result<bool, StoreError> {
        let tenant = match self.tenant {
            Some(shard) => {
                let entry = Self::tenant_entry(&self.key, &self.admission);
                w.tenants.extend(&self.key, &entry, shard, lease_until).await
            }
            None => Ok(true),
        };
        let resources = match self.resources.is_empty() {
            true => Ok(true),
            false => {
                let entry = Self::resource_entry(&self.key, &self.admission);
                w.resources.extend(&self.resources, &entry, lease_until).await
            }
        };
        Ok(tenant? && resources?)
    }

    /// Gives back what `exit` frees.
    pub(super) async fn end(mut self, w: &Worker, exit: Exit) -> Result<(), StoreError> {
        self.ended = true;
        // Whatever the exit, the entries are this admission's own: a new owner (a takeover)
        // holds its own.
        if let Some(shard) = self.tenant {
            w.tenants.release(&self.key, &Self::tenant_entry(&self.key, &self.admission), shard).await?;
        }
        if !self.resources.is_empty() {
            let entry = Self::resource_entry(&self.key, &self.admission);
            w.resources.release(&self.resources, &entry).await?;
        }
        match exit {
            Exit::NotClaimed { canceled: true } => {
                if let Some(s) = w.store.get(&self.key, false).await? {
                    let policy = s.exec.definition.concurrency;
                    w.slots.release(&self.key, policy).await?;
                    w.wake_next(&self.key, policy).await;
                }
            }
            Exit::Finished { status, policy } if status.is_terminal() => {
                w.slots.release(&self.key, policy).await?;
                w.wake_next(&self.key, policy).await;
            }
            Exit::NotClaimed { canceled: false }
            | Exit::Released
            | Exit::Finished { .. }
            | Exit::TakenOver => {}
        }
        Ok(())
    }
}

impl Drop for Holds {
    fn drop(&mut self) {
        // A store error on the way out (`?`) drops the holds unended: the tenant entry then
        // lapses with its lease and the slot is healed by the next acquirer, which finds its
        // holder final. Worth a log line, not a panic.
        if !self.ended && (self.tenant.is_some() || !self.resources.is_empty()) {
            tracing::warn!(execution = %self.key.id(), "attempt ended without releasing its tenant or resource entries; they lapse with the lease");
        }
    }
}
