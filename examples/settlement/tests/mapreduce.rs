//! The settlement as a map-reduce job over merchants (`settlement_example::mapreduce`), run by
//! Sundial workers against the emulator, under the post-mortem's faults: the worker holding
//! the map crashes mid-map (its task aborted: no release, no finish, its leases run out), the
//! account service drops every 37th response after applying the credit, a stale item attempt
//! wakes up after the end, and the audit still finds every merchant settled exactly once.

use chrono::Utc;
use settlement_example::account_service::{AccountClient, AccountService};
use settlement_example::mapreduce::SettleMerchants;
use settlement_example::scenario::{self, scheduled_at};
use settlement_example::settle::{open_day, settle_date_for, Settlement, Tables};
use settlement_example::Layers;
use std::time::Duration;
use sundial_core::execution::mapreduce::{MapReduceSpec, MapState};
use sundial_core::execution::target::in_process::Handlers;
use sundial_core::reconcile::{reconcile, ReconcileOptions};
use sundial_idempotency::ExecutionContext;
use sundial_model::{ExecStatus, Target};
use sundial_tests::fixtures;
use sundial_tests::TestEnv;

const MERCHANTS: usize = 300;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_map_reduce_settlement_with_a_crashed_map_holder_settles_every_merchant_exactly_once(
) -> anyhow::Result<()> {
    // GIVEN 300 merchants to settle, an account service dropping every 37th response, and a
    // map-reduce job over them (one item per merchant)
    let env = TestEnv::new("settle-mr").await?;
    let ddb = env.clients.ddb.clone();
    let prefix = sundial_tests::unique_prefix("settle-mr");
    let tables = Tables::with_prefix(&prefix);
    tables.ensure(&ddb).await?;
    open_day(&ddb, &tables, MERCHANTS, settle_date_for(scheduled_at()), 4).await?;
    let service = AccountService::start().await?;
    service.faults().drop_every(37);
    let job = Settlement::new(
        ddb.clone(),
        tables.clone(),
        AccountClient::new(service.url(), Duration::from_secs(5)),
        Layers::ALL,
        1,
    );
    let mut def = fixtures::definition(Target::in_process("settle-merchants"));
    def.map_reduce = Some(MapReduceSpec::default());
    def.params = serde_json::json!({ "merchants": MERCHANTS });
    def.retry.max_attempts = 6;
    def.retry.max_age_secs = 30 * 86_400;
    let key = fixtures::create_ready(&env, "acme", "settle", def, scheduled_at()).await?;
    let handlers =
        || Handlers::new().with_map_reduce("settle-merchants", SettleMerchants { job: job.clone() });
    let (w1, _) = fixtures::worker_with(&env, fixtures::settings("w1"), handlers())?;
    let (w2, _) = fixtures::worker_with(&env, fixtures::settings("w2"), handlers())?;
    let reconciler = {
        let ctx = sundial_tests::trigger::ctx(&env);
        tokio::spawn(async move {
            let opts =
                ReconcileOptions { actor: "reconciler:test".into(), grace_ms: 3_000, ..Default::default() };
            loop {
                let _ = reconcile(&ctx, Utc::now(), &opts).await;
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        })
    };

    // WHEN w1 takes the map and crashes after its first batches (its task is aborted: no
    // release, no finish) while w2 goes on
    let (_stop1, p1) = fixtures::spawn_poller(w1, 8);
    let emitted = |s: &sundial_store::executions::Snapshot| match &s.exec.map_reduce {
        Some(MapState::Parent { emitted, .. }) => *emitted,
        _ => 0,
    };
    let s = fixtures::wait_for(&env, &key, Duration::from_secs(60), |s| emitted(s) >= 99).await?;
    p1.abort();
    let (stop2, p2) = fixtures::spawn_poller(w2, 8);
    let p = fixtures::wait_for(&env, &key, Duration::from_secs(240), |s| s.exec.status.is_terminal()).await?;
    stop2.cancel();
    p2.await??;
    reconciler.abort();

    // THEN the job SUCCEEDED through a takeover of its map, one item per merchant
    assert_eq!(p.exec.status, ExecStatus::Succeeded, "{:?}", p.exec.last_error);
    let took_over = p.exec.timeline.iter().any(|a| a.code.as_deref() == Some("LeaseExpired"));
    assert!(took_over || s.exec.status != ExecStatus::Running, "{:?}", p.exec.timeline);
    let kids = fixtures::store(&env).children_of(&key).await?;
    assert_eq!(kids.len(), MERCHANTS);
    assert!(kids.iter().all(|k| k.status == ExecStatus::Succeeded));

    // AND a stale item attempt (token 1) waking up after the end changes nothing
    let stale = ExecutionContext::new(kids[0].global_id(), 1, scheduled_at());
    assert!(job.settle_item(&stale, 0, Utc::now()).await?, "already settled");

    // AND every merchant is settled once, credited once, and the books reconcile
    let a = scenario::audit(&ddb, &tables, &service, MERCHANTS).await?;
    assert!(a.exactly_once(), "not exactly once: {:?}\n{a:#?}", a.duplicates());
    assert!(service.faults().dropped() > 0, "responses really were lost");
    println!(
        "map-reduce settlement: {} merchants, map taken over: {took_over}, {} items retried, {} responses dropped, {}",
        MERCHANTS,
        kids.iter().filter(|k| k.attempt > 1).count(),
        service.faults().dropped(),
        a.reconciliation
    );
    tables.delete(&ddb).await?;
    env.cleanup().await;
    Ok(())
}
