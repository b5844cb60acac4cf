//! What the deterministic tests of this crate share: a paused tokio runtime, a simulated world
//! at a fixed epoch, and the executions they put.
#![allow(dead_code)] // each test file uses its own part

use sundial_model::{ExecStatus, Execution, JobDefinition};

/// 2026-03-28T20:00:00Z: the epoch of every deterministic test's world.
pub(crate) const EPOCH_MS: i64 = 1_774_728_000_000;

/// A current-thread runtime whose clock is paused: every wait is virtual.
pub(crate) fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"))
}

/// A simulated world of one shard, drawn from `seed`, at [`EPOCH_MS`].
pub(crate) async fn world(seed: u64) -> sundial_sim::world::World {
    sundial_sim::world::World::new(seed, EPOCH_MS, 1, Default::default())
        .await
        .unwrap_or_else(|e| panic!("world: {e:#}"))
}

/// A job firing every minute at an HTTP target, with the fields of `extra` set over it.
pub(crate) fn definition(extra: serde_json::Value) -> JobDefinition {
    let mut def = serde_json::json!({
        "schedule": {"expression": "rate(1 minute)", "timezone": "UTC"},
        "target": {"type": "http", "url": "https://example.com/run"}
    });
    if let (Some(d), Some(x)) = (def.as_object_mut(), extra.as_object()) {
        d.extend(x.clone());
    }
    serde_json::from_value(def).unwrap_or_else(|e| panic!("definition: {e}"))
}

/// `tenant`'s execution of `job` at `at_ms` in `status`, of `definition`, never attempted.
pub(crate) fn execution(
    tenant: &str,
    job: &str,
    at_ms: i64,
    status: ExecStatus,
    definition: JobDefinition,
) -> Execution {
    let at = sundial_sim::world::ms(at_ms);
    Execution {
        tenant: tenant.into(),
        job_id: job.into(),
        scheduled_at: at,
        fire_at: at,
        created_at: at,
        status,
        attempt: 0,
        fencing_token: 0,
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

/// Tenant `alpha`'s READY fire of `job` at `at_ms`, of the plain [`definition`].
pub(crate) fn ready(job: &str, at_ms: i64) -> Execution {
    execution("alpha", job, at_ms, ExecStatus::Ready, definition(serde_json::json!({})))
}

/// A worker `id` of the `default` pool, with no in-process handlers, on the world's clock.
pub(crate) fn worker(w: &sundial_sim::world::World, id: &str) -> sundial_core::execution::worker::Worker {
    let clients = w.clients(id);
    let settings = sundial_core::config::WorkerSettings::new(id, "default");
    let clock = sundial_sim::world::SimClock::new(w.aws.clone(), 0);
    let metrics = std::sync::Arc::new(sundial_core::execution::metrics::MemorySink::default());
    let handlers = sundial_core::execution::target::in_process::Handlers::new();
    sundial_core::execution::worker::Worker::new(w.cfg.clone(), settings, &clients, handlers, clock, metrics)
        .unwrap_or_else(|e| panic!("worker: {e}"))
}

/// `key`'s execution as stored now (a consistent read); panics if it is not there.
pub(crate) async fn stored(
    store: &sundial_store::executions::ExecStore,
    key: &sundial_store::executions::ExecKey,
) -> sundial_store::executions::Snapshot {
    store.get(key, true).await.unwrap_or_else(|e| panic!("{e}")).unwrap_or_else(|| panic!("no item"))
}
