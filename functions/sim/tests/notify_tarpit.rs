//! A tenant's `outcomeNotify` receiver that accepts a connection and never answers (a tarpit)
//! must cost its own tenant, not the shared reconciler or a finishing worker: the other
//! tenants' recovery goes on within the same run.
//!
//! Deterministic: the simulated AWS on a paused tokio clock, so every wait below is virtual and
//! the assertions read virtual elapsed time, never the wall clock.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use sundial_core::execution::notify::{BoxFuture, Notifier, DEFAULT_NOTIFY_TIMEOUT};
use sundial_core::execution::notify_pool::{NotifyPool, DEFAULT_PER_TENANT};
use sundial_model::outcome::OutcomeNotify;
use sundial_model::retry::RunError;
use sundial_model::{ExecStatus, Execution, JobDefinition};
use sundial_store::executions::{ExecKey, ExecStore};

/// How long the tarpit holds each notification before it gives up (virtual time).
const TARPIT: Duration = Duration::from_secs(30);
/// Tenant B's due executions, each with a notification pending: more than the reconciler
/// looks at concurrently.
const B_ENTRIES: usize = 40;
const NOTIFY_TWIN: &str = "Notify:0::ExecutionFailed#1#retryable#Http503";

/// A receiver that never answers: every call sleeps [`TARPIT`], then fails.
#[derive(Debug, Default)]
struct Tarpit {
    calls: AtomicUsize,
}

impl Notifier for Tarpit {
    fn post<'a>(
        &'a self,
        _tenant: &'a str,
        _to: &'a OutcomeNotify,
        _event_id: &'a str,
        _body: String,
        _now: chrono::DateTime<chrono::Utc>,
    ) -> BoxFuture<'a, Result<(), RunError>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Box::pin(async {
            tokio::time::sleep(TARPIT).await;
            Err(RunError::retryable("Timeout", "the tarpit never answered"))
        })
    }
}

fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"))
}

async fn world() -> sundial_sim::world::World {
    let epoch = 1_774_728_000_000; // 2026-03-28T20:00:00Z
    sundial_sim::world::World::new(7, epoch, 1, Default::default())
        .await
        .unwrap_or_else(|e| panic!("world: {e:#}"))
}

/// An open execution of `tenant`'s `job` at `at_ms` in `status`, due for the reconciler's look
/// long ago; its job notifies the tarpit when `notifies`.
fn execution(tenant: &str, job: &str, at_ms: i64, status: ExecStatus, notifies: bool) -> Execution {
    let mut def = serde_json::json!({
        "schedule": {"expression": "rate(1 minute)", "timezone": "UTC"},
        "target": {"type": "http", "url": "https://example.com/run"}
    });
    if notifies {
        def["outcomeNotify"] = serde_json::json!({"url": "https://tarpit.example.com/hook"});
    }
    let definition: JobDefinition = serde_json::from_value(def).unwrap_or_else(|e| panic!("{e}"));
    let at = sundial_sim::world::ms(at_ms);
    Execution {
        tenant: tenant.into(),
        job_id: job.into(),
        scheduled_at: at,
        fire_at: at,
        created_at: at,
        status,
        attempt: 1,
        fencing_token: 1,
        lease_owner: None,
        lease_until: None,
        available_at: at_ms,
        def_version: 1,
        definition,
        missed_range: None,
        missed_except: Vec::new(),
        last_error: None,
        cancel_requested: false,
        timeline: vec![],
        child: None,
        children: None,
        map_reduce: None,
    }
}

/// GIVEN tenant B's [`B_ENTRIES`] failed attempts, each with its notification to the tarpit
/// still in the outbox, and tenant A's one fire that nothing acts on (due for a re-send).
async fn given(w: &sundial_sim::world::World, store: &ExecStore) -> (Vec<ExecKey>, ExecKey) {
    let long_ago = w.aws.now_ms() - 30 * 60_000;
    let mut b = Vec::new();
    for i in 0..B_ENTRIES {
        let e = execution("bravo", &format!("flaky{i}"), long_ago, ExecStatus::RetryWait, true);
        store.put_new(&e).await.unwrap_or_else(|e| panic!("put: {e}"));
        let key = ExecKey::of(&e);
        store.outbox_add(&key, &[NOTIFY_TWIN.to_string()]).await.unwrap_or_else(|e| panic!("{e}"));
        b.push(key);
    }
    let a = execution("alpha", "steady", long_ago, ExecStatus::Ready, false);
    store.put_new(&a).await.unwrap_or_else(|e| panic!("put: {e}"));
    (b, ExecKey::of(&a))
}

async fn outbox_of(store: &ExecStore, key: &ExecKey) -> Vec<String> {
    let snap = store.get(key, true).await.unwrap_or_else(|e| panic!("{e}"));
    snap.map(|s| s.outbox).unwrap_or_default()
}

#[test]
fn one_tenants_tarpit_receiver_does_not_hold_back_another_tenants_resend() {
    paused_runtime().block_on(Box::pin(async {
        let w = world().await;
        let ctx = w.ctx("reconciler");
        let store = ExecStore::new(ctx.ddb.clone(), w.cfg.executions_table.clone());
        let (b, a) = given(&w, &store).await;
        let tarpit = Arc::new(Tarpit::default());
        let opts = sundial_core::reconcile::ReconcileOptions {
            actor: "reconciler:test".into(),
            events: Some(w.clients("reconciler").events),
            notify: Some(NotifyPool::new(tarpit.clone())),
            ..Default::default()
        };
        // WHEN one reconciler run looks at them all
        let started = tokio::time::Instant::now();
        let report = sundial_core::reconcile::reconcile(&ctx, w.now(), &opts)
            .await
            .unwrap_or_else(|e| panic!("reconcile: {e}"));
        let took = started.elapsed();
        // THEN A's fire was re-sent by that run, which never waited out B's receiver
        assert!(took < Duration::from_secs(5), "the run took {took:?} of virtual time");
        let snap = store.get(&a, true).await.unwrap_or_else(|e| panic!("{e}")).unwrap_or_else(|| panic!("A"));
        assert_eq!(snap.resends, 1, "A's fire was re-sent in the run: {report:?}");
        assert_eq!(report.examined, B_ENTRIES as u64 + 1);
        // AND B had only its cap of deliveries in flight; the rest stay owed in the outbox
        assert_eq!(tarpit.calls.load(Ordering::SeqCst), DEFAULT_PER_TENANT);
        // AND once the delivery timeout passes, each delivery tried counts one failure
        tokio::time::sleep(DEFAULT_NOTIFY_TIMEOUT).await;
        let mut failed = 0;
        for key in &b {
            let outbox = outbox_of(&store, key).await;
            assert_eq!(outbox.len(), 1, "owed, never lost: {key:?} {outbox:?}");
            failed += usize::from(outbox[0] != NOTIFY_TWIN);
        }
        assert_eq!(failed, DEFAULT_PER_TENANT);
    }));
}

#[test]
fn a_finishing_workers_flush_does_not_wait_for_a_tarpit_receiver() {
    paused_runtime().block_on(Box::pin(async {
        // GIVEN a failed attempt of B whose finish wrote its bus event and its notification
        let w = world().await;
        let c = w.clients("worker");
        let store = ExecStore::new(c.ddb.clone(), w.cfg.executions_table.clone());
        let e = execution("bravo", "flaky", w.aws.now_ms() - 60_000, ExecStatus::RetryWait, true);
        store.put_new(&e).await.unwrap_or_else(|e| panic!("put: {e}"));
        let key = ExecKey::of(&e);
        let entries = ["ExecutionFailed#1#retryable#Http503".to_string(), NOTIFY_TWIN.to_string()];
        store.outbox_add(&key, &entries).await.unwrap_or_else(|e| panic!("{e}"));
        let bus = sundial_core::missed::MissReporter::new(c.ddb.clone(), Some(c.events), &w.cfg);
        let tarpit = Arc::new(Tarpit::default());
        let outcomes = sundial_core::execution::outcome::Outcomes::new(store.clone(), bus, None)
            .with_notifier(Some(NotifyPool::new(tarpit.clone())));
        // WHEN the worker flushes the outbox, as its finish does
        let started = tokio::time::Instant::now();
        let flushed = outcomes
            .flush(&e, ExecStatus::RetryWait, &entries, false, w.now())
            .await
            .unwrap_or_else(|e| panic!("flush: {e}"));
        // THEN it returned at once: the bus event sent, the notification still owed
        let took = started.elapsed();
        assert!(took < Duration::from_secs(1), "the flush took {took:?} of virtual time");
        assert_eq!(flushed.sent.len(), 1, "{flushed:?}");
        assert_eq!(outbox_of(&store, &key).await, [NOTIFY_TWIN], "{flushed:?}");
        assert_eq!(tarpit.calls.load(Ordering::SeqCst), 1);
        // AND the pool's timeout, not the receiver, ends the delivery: one failure counted
        tokio::time::sleep(DEFAULT_NOTIFY_TIMEOUT + Duration::from_secs(1)).await;
        let failed_once = NOTIFY_TWIN.replacen("Notify:0:", "Notify:1:", 1);
        assert_eq!(outbox_of(&store, &key).await, [failed_once]);
    }));
}
