//! The per-process caps on outcome-notification deliveries (docs/outcomes.md, "HTTPS
//! notifications"). Deliveries come off each pool's notification queue
//! ([`crate::execution::worker::Worker::deliver_notification`]); before one calls its
//! receiver it takes a slot here.
//!
//! A receiver is the tenant's to choose, so it may accept a connection and never answer. What
//! that costs is bounded three ways: each delivery gets at most [`PoolLimits::timeout`]; a
//! tenant has at most [`PoolLimits::per_tenant`] deliveries in flight in this process; the
//! process at most [`PoolLimits::global`]. A notification over a cap is not held in memory: its
//! message goes back to the queue for a few seconds. So a slow tenant waits on its own receiver
//! while every other tenant's notifications, and every finish and reconciler look, go on.

use super::notify::{Notifier, DEFAULT_NOTIFY_TIMEOUT};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// How many notifications one tenant may have in flight in one process.
pub const DEFAULT_PER_TENANT: usize = 2;
/// How many notifications one process may have in flight.
pub const DEFAULT_GLOBAL: usize = 64;

const _: () = assert!(DEFAULT_PER_TENANT >= 1 && DEFAULT_PER_TENANT <= DEFAULT_GLOBAL);

/// The pool's bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolLimits {
    /// Deliveries in flight per tenant.
    pub per_tenant: usize,
    /// Deliveries in flight in the process.
    pub global: usize,
    /// Longest one delivery may take (connect, send and answer), whatever the notifier.
    pub timeout: Duration,
}

impl Default for PoolLimits {
    fn default() -> Self {
        PoolLimits { per_tenant: DEFAULT_PER_TENANT, global: DEFAULT_GLOBAL, timeout: DEFAULT_NOTIFY_TIMEOUT }
    }
}

/// Why [`NotifyPool::try_acquire`] gave no slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Its tenant, or the process, is at its cap: not started (its message comes back soon).
    Busy,
    /// The same notification is in flight already (an earlier flush of this process).
    InFlight,
}

/// The per-process delivery pool; clones share it.
#[derive(Clone)]
pub struct NotifyPool {
    inner: Arc<Inner>,
}

struct Inner {
    notifier: Arc<dyn Notifier>,
    limits: PoolLimits,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    per_tenant: BTreeMap<String, usize>,
    ids: BTreeSet<String>,
    total: usize,
}

impl std::fmt::Debug for NotifyPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NotifyPool")
            .field("notifier", &self.inner.notifier)
            .field("limits", &self.inner.limits)
            .field("in_flight", &self.in_flight())
            .finish()
    }
}

impl NotifyPool {
    /// A pool delivering through `notifier` within the default limits.
    pub fn new(notifier: Arc<dyn Notifier>) -> Self {
        NotifyPool::with_limits(notifier, PoolLimits::default())
    }

    /// A pool delivering through `notifier` within `limits` (each at least 1).
    pub fn with_limits(notifier: Arc<dyn Notifier>, limits: PoolLimits) -> Self {
        let limits =
            PoolLimits { per_tenant: limits.per_tenant.max(1), global: limits.global.max(1), ..limits };
        let inner = Inner { notifier, limits, state: Mutex::default() };
        NotifyPool { inner: Arc::new(inner) }
    }

    /// The notifier deliveries go through.
    pub fn notifier(&self) -> Arc<dyn Notifier> {
        self.inner.notifier.clone()
    }

    /// The pool's limits.
    pub fn limits(&self) -> PoolLimits {
        self.inner.limits
    }

    /// Deliveries in flight now.
    pub fn in_flight(&self) -> usize {
        self.state().total
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Never held across an await; a panic while held leaves consistent counts.
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A slot for notification `id` of `tenant`, given back when the slot is dropped: `Busy`
    /// when the tenant or the process is at its cap, `InFlight` when `id` is being delivered
    /// already (another copy of the same message).
    pub fn try_acquire(&self, tenant: &str, id: &str) -> Result<Slot, Admit> {
        let mut st = self.state();
        if st.ids.contains(id) {
            return Err(Admit::InFlight);
        }
        let mine = st.per_tenant.get(tenant).copied().unwrap_or(0);
        if mine >= self.inner.limits.per_tenant || st.total >= self.inner.limits.global {
            return Err(Admit::Busy);
        }
        st.per_tenant.insert(tenant.to_string(), mine + 1);
        st.ids.insert(id.to_string());
        st.total += 1;
        Ok(Slot { pool: self.clone(), tenant: tenant.to_string(), id: id.to_string() })
    }
}

/// One delivery's place in the pool's counts; dropping it gives the place back.
pub struct Slot {
    pool: NotifyPool,
    tenant: String,
    id: String,
}

impl Drop for Slot {
    fn drop(&mut self) {
        {
            let mut st = self.pool.state();
            st.ids.remove(&self.id);
            st.total = st.total.saturating_sub(1);
            if let Some(n) = st.per_tenant.get_mut(&self.tenant) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    st.per_tenant.remove(&self.tenant);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::execution::notify::BoxFuture;
    use sundial_model::outcome::OutcomeNotify;
    use sundial_model::retry::RunError;

    #[derive(Debug)]
    struct Never;

    impl Notifier for Never {
        fn post<'a>(
            &'a self,
            _: &'a str,
            _: &'a OutcomeNotify,
            _: &'a str,
            _: String,
            _: chrono::DateTime<chrono::Utc>,
        ) -> BoxFuture<'a, Result<(), RunError>> {
            Box::pin(std::future::pending())
        }
    }

    fn pool(per_tenant: usize, global: usize) -> NotifyPool {
        let limits = PoolLimits { per_tenant, global, timeout: Duration::from_secs(3) };
        NotifyPool::with_limits(Arc::new(Never), limits)
    }

    #[test]
    fn a_delivery_ends_well_before_its_message_could_be_received_again() {
        // The notification queues' visibility timeout (resources.json): no other consumer
        // receives a message while this process still delivers it (unless the process froze).
        let visibility = sundial_model::resources::Resources::get().queues.visibility_timeout_seconds;
        assert!(DEFAULT_NOTIFY_TIMEOUT < Duration::from_secs(u64::from(visibility) / 4));
    }

    #[test]
    fn a_tenant_at_its_cap_is_refused_while_others_start_and_an_id_runs_once() {
        // GIVEN a pool of 2 per tenant and 3 in all
        let p = pool(2, 3);
        // WHEN tenant b takes two slots, a third, and the first again
        let b1 = p.try_acquire("b", "b1");
        assert!(b1.is_ok());
        assert_eq!(p.try_acquire("b", "b1").err(), Some(Admit::InFlight));
        let _b2 = p.try_acquire("b", "b2");
        // THEN b is at its cap, a still gets one, then the process is full
        assert_eq!(p.try_acquire("b", "b3").err(), Some(Admit::Busy));
        let a1 = p.try_acquire("a", "a1");
        assert!(a1.is_ok());
        assert_eq!(p.try_acquire("c", "c1").err(), Some(Admit::Busy));
        assert_eq!(p.in_flight(), 3);
        // AND a slot given back frees its place, and its id
        drop(a1);
        assert_eq!(p.in_flight(), 2);
        assert!(p.try_acquire("c", "c1").is_ok());
        drop(b1);
        assert!(p.try_acquire("b", "b1").is_ok(), "b is under its cap again");
    }
}
