//! The process's outcome-notification deliveries (docs/outcomes.md, "HTTPS notifications"),
//! off the critical path: a flush hands each notification to the pool and returns; the pool
//! runs it on a task of its own.
//!
//! A receiver is the tenant's to choose, so it may accept a connection and never answer. What
//! that costs is bounded three ways: each delivery gets at most [`PoolLimits::timeout`]; a
//! tenant has at most [`PoolLimits::per_tenant`] deliveries in flight in this process; the
//! process at most [`PoolLimits::global`]. A notification over a cap is not queued: it stays
//! in its execution's outbox, where the next flush or reconciler run finds it. So memory stays
//! bounded, and a slow tenant waits on its own receiver while every other tenant's flushes,
//! finishes and reconciler looks go on.
//!
//! The pool only runs deliveries; the flush ([`super::outcome::Outcomes`]) decides what one
//! delivers and how its result is written back to the outbox.

use super::notify::{Notifier, DEFAULT_NOTIFY_TIMEOUT};
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// How many notifications one tenant may have in flight in one process.
pub const DEFAULT_PER_TENANT: usize = 2;
/// How many notifications one process may have in flight.
pub const DEFAULT_GLOBAL: usize = 64;

// A delivery ends well before the outbox lease its flush took runs out, so no other flusher
// sends a notification while this process still has it in flight (unless the process froze).
const _: () =
    assert!(DEFAULT_NOTIFY_TIMEOUT.as_millis() < sundial_store::executions::OUTBOX_LEASE_MS as u128);
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

/// What [`NotifyPool::spawn`] did with a delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Running on its own task.
    Started,
    /// Its tenant, or the process, is at its cap: not started (it stays in the outbox).
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
    /// Woken each time a delivery ends ([`NotifyPool::settle`]).
    ended: tokio::sync::Notify,
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
        let inner = Inner { notifier, limits, state: Mutex::default(), ended: tokio::sync::Notify::new() };
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

    /// Runs `delivery` of notification `id` for `tenant` on its own task (inside the caller's
    /// access scope), unless the tenant or the process is at its cap, or `id` is in flight.
    pub fn spawn<F>(&self, tenant: &str, id: &str, delivery: F) -> Admit
    where
        F: Future<Output = ()> + Send + 'static,
    {
        {
            let mut st = self.state();
            if st.ids.contains(id) {
                return Admit::InFlight;
            }
            let mine = st.per_tenant.get(tenant).copied().unwrap_or(0);
            if mine >= self.inner.limits.per_tenant || st.total >= self.inner.limits.global {
                return Admit::Busy;
            }
            st.per_tenant.insert(tenant.to_string(), mine + 1);
            st.ids.insert(id.to_string());
            st.total += 1;
        }
        // The slot is given back when the task ends, however it ends (panic included).
        let slot = Slot { pool: self.clone(), tenant: tenant.to_string(), id: id.to_string() };
        let scope = crate::access::current();
        tokio::spawn(crate::access::within(scope, async move {
            let _slot = slot;
            delivery.await;
        }));
        Admit::Started
    }

    /// Waits until no delivery is in flight, or `max` passed: true if none is. A process that
    /// may be frozen once it returns (a Lambda) calls it last; what is still in flight then
    /// stays in the outbox, and the outbox lease's end hands it to a later flush.
    pub async fn settle(&self, max: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + max;
        loop {
            let ended = self.inner.ended.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            if self.in_flight() == 0 {
                return true;
            }
            if tokio::time::timeout_at(deadline, ended).await.is_err() {
                return self.in_flight() == 0;
            }
        }
    }
}

/// One delivery's place in the pool's counts.
struct Slot {
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
        self.pool.inner.ended.notify_waiters();
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

    fn sleeper(secs: u64) -> impl Future<Output = ()> + Send + 'static {
        tokio::time::sleep(Duration::from_secs(secs))
    }

    #[tokio::test(start_paused = true)]
    async fn a_tenant_at_its_cap_is_refused_while_others_start_and_an_id_runs_once() {
        // GIVEN a pool of 2 per tenant and 3 in all
        let p = pool(2, 3);
        // WHEN tenant b starts two, a third, and the first again
        assert_eq!(p.spawn("b", "b1", sleeper(30)), Admit::Started);
        assert_eq!(p.spawn("b", "b1", sleeper(30)), Admit::InFlight);
        assert_eq!(p.spawn("b", "b2", sleeper(30)), Admit::Started);
        // THEN b is at its cap, a still starts one, then the process is full
        assert_eq!(p.spawn("b", "b3", sleeper(1)), Admit::Busy);
        assert_eq!(p.spawn("a", "a1", sleeper(1)), Admit::Started);
        assert_eq!(p.spawn("c", "c1", sleeper(1)), Admit::Busy);
        assert_eq!(p.in_flight(), 3);
        // AND a's delivery ending frees its slot
        assert!(!p.settle(Duration::from_secs(2)).await, "b's are still in flight");
        assert_eq!(p.in_flight(), 2);
        assert_eq!(p.spawn("c", "c1", sleeper(1)), Admit::Started);
    }

    #[tokio::test(start_paused = true)]
    async fn settle_waits_for_deliveries_but_never_longer_than_asked() {
        let p = pool(2, 8);
        assert!(p.settle(Duration::from_secs(1)).await, "nothing in flight");
        let started = tokio::time::Instant::now();
        p.spawn("a", "a1", sleeper(1));
        assert!(p.settle(Duration::from_secs(5)).await);
        assert_eq!(started.elapsed(), Duration::from_secs(1), "returned as the delivery ended");
        p.spawn("b", "b1", std::future::pending());
        let started = tokio::time::Instant::now();
        assert!(!p.settle(Duration::from_millis(1_500)).await);
        assert_eq!(started.elapsed(), Duration::from_millis(1_500), "bounded");
    }
}
