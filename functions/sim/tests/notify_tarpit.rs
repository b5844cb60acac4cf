//! A tenant's `outcomeNotify` receiver that accepts a connection and never answers (a tarpit)
//! must cost its own tenant, not the shared reconciler, a finishing worker or another tenant's
//! notifications: flushes only move notifications to the pool's notification queue, and its
//! consumer gives each tenant a capped number of deliveries, each bounded by the timeout.
//!
//! Deterministic: the simulated AWS on a paused tokio clock, so every wait below is virtual and
//! the assertions read virtual elapsed time, never the wall clock.

mod common;

use common::paused_runtime;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use sundial_core::execution::notify::{BoxFuture, Notifier, DEFAULT_NOTIFY_TIMEOUT};
use sundial_core::execution::notify_pool::DEFAULT_PER_TENANT;
use sundial_core::execution::worker::{Disposition, Worker};
use sundial_model::outcome::OutcomeNotify;
use sundial_model::retry::RunError;
use sundial_model::{ExecStatus, Execution};
use sundial_store::executions::{ExecKey, ExecStore};

/// How long the tarpit holds each notification before it gives up (virtual time).
const TARPIT: Duration = Duration::from_secs(30);
/// Tenant B's due executions, each with a notification pending: more than the reconciler
/// looks at concurrently.
const B_ENTRIES: usize = 40;
const NOTIFY_TWIN: &str = "Notify:0::ExecutionFailed#1#retryable#Http503";

/// Tenant B's receiver never answers: every call sleeps [`TARPIT`], then fails. Tenant A's
/// answers at once.
#[derive(Debug, Default)]
struct Tarpit {
    calls: AtomicUsize,
}

impl Notifier for Tarpit {
    fn post<'a>(
        &'a self,
        tenant: &'a str,
        _to: &'a OutcomeNotify,
        _event_id: &'a str,
        _body: String,
        _now: chrono::DateTime<chrono::Utc>,
    ) -> BoxFuture<'a, Result<(), RunError>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            if tenant == "alpha" {
                // Tenant A's receiver answers at once.
                return Ok(());
            }
            tokio::time::sleep(TARPIT).await;
            Err(RunError::retryable("Timeout", "the tarpit never answered"))
        })
    }
}

/// An open execution of `tenant`'s `job` at `at_ms` in `status`, its first attempt made, due
/// for the reconciler's look long ago; its job notifies the tarpit when `notifies`.
fn execution(tenant: &str, job: &str, at_ms: i64, status: ExecStatus, notifies: bool) -> Execution {
    let extra = if notifies {
        serde_json::json!({"outcomeNotify": {"url": "https://tarpit.example.com/hook"}})
    } else {
        serde_json::json!({})
    };
    let mut e = common::execution(tenant, job, at_ms, status, common::definition(extra));
    (e.attempt, e.fencing_token) = (1, 1);
    e
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

/// A worker of the `default` pool delivering through `notifier`.
fn worker(w: &sundial_sim::world::World, notifier: Arc<dyn Notifier>) -> Arc<Worker> {
    Arc::new(common::worker(w, "worker").with_notifier(notifier))
}

/// Receives up to ten messages of the default pool's notification queue.
async fn receive(w: &sundial_sim::world::World) -> Vec<aws_sdk_sqs::types::Message> {
    let url = &w.queues["default"].notify_url;
    let out = w.clients("test").sqs.receive_message().queue_url(url).max_number_of_messages(10).send().await;
    out.unwrap_or_else(|e| panic!("receive: {e}")).messages.unwrap_or_default()
}

#[test]
fn one_tenants_tarpit_receiver_holds_back_neither_the_reconciler_nor_another_tenants_notification() {
    paused_runtime().block_on(Box::pin(async {
        let w = common::world(7).await;
        let ctx = w.ctx("reconciler");
        let store = ExecStore::new(ctx.ddb.clone(), w.cfg.executions_table.clone());
        let (b, a) = given(&w, &store).await;
        let opts = sundial_core::reconcile::ReconcileOptions {
            actor: "reconciler:test".into(),
            events: Some(w.clients("reconciler").events),
            ..Default::default()
        };
        // WHEN one reconciler run looks at them all
        let started = tokio::time::Instant::now();
        let report = sundial_core::reconcile::reconcile(&ctx, w.now(), &opts)
            .await
            .unwrap_or_else(|e| panic!("reconcile: {e}"));
        let took = started.elapsed();
        // THEN A's fire was re-sent by that run, which called no receiver
        assert!(took < Duration::from_secs(5), "the run took {took:?} of virtual time");
        let snap = store.get(&a, true).await.unwrap_or_else(|e| panic!("{e}")).unwrap_or_else(|| panic!("A"));
        assert_eq!(snap.resends, 1, "A's fire was re-sent in the run: {report:?}");
        assert_eq!(report.examined, B_ENTRIES as u64 + 1);
        // AND every one of B's notifications moved from its outbox to the notification queue
        for key in &b {
            assert_eq!(outbox_of(&store, key).await, Vec::<String>::new(), "{key:?}");
        }
        // WHEN a worker takes a batch of them, with tenant A's own notification among them
        let tarpit = Arc::new(Tarpit::default());
        let wk = worker(&w, tarpit.clone());
        let mut batch = receive(&w).await;
        assert_eq!(batch.len(), 10);
        let alpha = serde_json::json!({
            "tenant": "alpha", "jobId": "steady", "scheduledMs": a.scheduled_ms, "kind": "ExecutionDead",
            "eventId": "alpha/steady/ExecutionDead#1##", "body": "{}", "failures": 0,
            "to": {"url": "https://alpha.example.com/hook"}
        });
        let mut bodies: Vec<String> = batch.drain(..).filter_map(|m| m.body).collect();
        bodies.push(alpha.to_string());
        let started = tokio::time::Instant::now();
        let tasks: Vec<_> = bodies
            .into_iter()
            .map(|body| {
                let wk = wk.clone();
                tokio::spawn(async move {
                    let d = wk.deliver_notification("default", &body).await;
                    (body.contains("alpha"), d, tokio::time::Instant::now())
                })
            })
            .collect();
        let mut busy = 0;
        for t in tasks {
            let (is_alpha, d, at) = t.await.unwrap_or_else(|e| panic!("{e}"));
            if is_alpha {
                // THEN A's was delivered at once, not behind B's tarpit
                assert!(at - started < Duration::from_secs(1), "A waited {:?}", at - started);
                assert_eq!(d, Disposition::Delete);
            } else if d == Disposition::RetryAfter(2) {
                busy += 1;
            }
        }
        // AND B had only its cap of deliveries at its receiver, each ended by the timeout; the
        // rest came back to the queue without counting a failure
        assert_eq!(tarpit.calls.load(Ordering::SeqCst), DEFAULT_PER_TENANT + 1, "B's cap, and A's one");
        assert_eq!(busy, 10 - DEFAULT_PER_TENANT);
        assert!(started.elapsed() < DEFAULT_NOTIFY_TIMEOUT + Duration::from_secs(1));
    }));
}

#[test]
fn a_finishing_workers_flush_queues_the_notification_and_calls_no_receiver() {
    paused_runtime().block_on(Box::pin(async {
        // GIVEN a failed attempt of B whose finish wrote its bus event and its notification
        let w = common::world(7).await;
        let c = w.clients("worker");
        let store = ExecStore::new(c.ddb.clone(), w.cfg.executions_table.clone());
        let e = execution("bravo", "flaky", w.aws.now_ms() - 60_000, ExecStatus::RetryWait, true);
        store.put_new(&e).await.unwrap_or_else(|e| panic!("put: {e}"));
        let key = ExecKey::of(&e);
        let entries = ["ExecutionFailed#1#retryable#Http503".to_string(), NOTIFY_TWIN.to_string()];
        store.outbox_add(&key, &entries).await.unwrap_or_else(|e| panic!("{e}"));
        let bus = sundial_core::missed::MissReporter::new(c.ddb.clone(), Some(c.events), &w.cfg);
        let queues = Arc::new(sundial_store::queue::PoolQueues::new(c.sqs.clone(), w.cfg.clone()));
        let outcomes =
            sundial_core::execution::outcome::Outcomes::new(store.clone(), bus, None).with_queues(queues);
        // WHEN the worker flushes the outbox, as its finish does
        let started = tokio::time::Instant::now();
        let flushed = outcomes
            .flush(&e, ExecStatus::RetryWait, &entries, false, w.now())
            .await
            .unwrap_or_else(|e| panic!("flush: {e}"));
        // THEN it returned at once: the bus event sent, the notification on its queue
        let took = started.elapsed();
        assert!(took < Duration::from_secs(1), "the flush took {took:?} of virtual time");
        assert_eq!(flushed.sent.len(), 1, "{flushed:?}");
        assert_eq!(flushed.notify_queued.len(), 1, "{flushed:?}");
        assert_eq!(outbox_of(&store, &key).await, Vec::<String>::new(), "{flushed:?}");
        let got = receive(&w).await;
        assert_eq!(got.len(), 1);
        let msg: sundial_model::outcome::NotifyMessage =
            serde_json::from_str(got[0].body().unwrap_or_default()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((msg.tenant.as_str(), msg.failures), ("bravo", 0));
        assert_eq!(msg.event_id, format!("bravo/{}/ExecutionFailed#1#retryable#Http503", e.id()));
        // AND a tarpit receiver costs its delivery the timeout, then one failure counted on a
        // new, delayed copy
        let tarpit = Arc::new(Tarpit::default());
        let wk = worker(&w, tarpit.clone());
        let started = tokio::time::Instant::now();
        let d = wk.deliver_notification("default", got[0].body().unwrap_or_default()).await;
        assert_eq!(d, Disposition::Delete);
        let took = started.elapsed();
        assert!(
            took >= DEFAULT_NOTIFY_TIMEOUT && took < DEFAULT_NOTIFY_TIMEOUT + Duration::from_secs(1),
            "{took:?}"
        );
        assert!(receive(&w).await.is_empty(), "the retry is delayed");
        tokio::time::sleep(Duration::from_secs(11)).await;
        let again = receive(&w).await;
        let next: sundial_model::outcome::NotifyMessage =
            serde_json::from_str(again[0].body().unwrap_or_default()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(next.failures, 1);
    }));
}
