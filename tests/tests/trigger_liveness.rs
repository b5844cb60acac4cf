//! Trigger-plane liveness: one job, tenant or shard must never hold back another's on-time
//! fires (DESIGN §5b). Each test reproduces a defect found in review, on fixed instants.

use sundial_core::keys;
use sundial_core::model::Job;
use sundial_core::schedule::MisfirePolicy;
use sundial_core::store::jobs;
use sundial_core::trigger::plan::CatchUpBudget;
use sundial_core::trigger::scan::{ScanError, ScanOptions};
use sundial_tests::trigger::{at, create_job, definition, executions, scan, scan_with_budget};
use sundial_tests::TestEnv;

/// The first job id `job-{n}` whose shard is `shard` (of `shards`).
fn job_in_shard(tenant: &str, shard: u32, shards: u32) -> String {
    (0..10_000)
        .map(|n| format!("job-{n}"))
        .find(|id| keys::shard_of(tenant, id, shards) == shard)
        .unwrap_or_else(|| panic!("no job id lands in shard {shard}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_shard_does_not_stop_the_shards_after_it() -> anyhow::Result<()> {
    // GIVEN a job in shard 2 whose pool was removed from the deployment (its queue is gone, so
    // every send for it fails) and a healthy job in shard 9, both firing at 12:01
    let env = TestEnv::new("liveness-shard").await?;
    let shards = env.cfg.shards;
    let t0 = at("2026-11-30T12:00:05Z");
    let mut with_ghost = env.cfg.clone();
    with_ghost.pools.push("ghost".into());
    let broken_id = job_in_shard("acme", 2, shards);
    let def = definition("0 1 12 * * *", "UTC", MisfirePolicy::FireOnce).with_pool("ghost");
    let broken = Job::new(&with_ghost, "acme", &broken_id, def, t0)?;
    jobs::put_new_job(&env.clients.ddb, &with_ghost, &broken).await?;
    let healthy_id = job_in_shard("acme", 9, shards);
    create_job(&env, "acme", &healthy_id, definition("0 1 12 * * *", "UTC", MisfirePolicy::FireOnce), t0)
        .await?;

    // WHEN a tick scans every shard
    let result = scan(&env, at("2026-11-30T12:00:10Z"), &ScanOptions::default()).await;

    // THEN the scan reports the failed shard (so the tick's metric and alarm see it) ...
    match &result {
        Err(ScanError::Shards { failed, report, .. }) => {
            assert_eq!(*failed, 1, "{result:?}");
            assert_eq!(report.shards_failed, 1);
            assert_eq!(report.shards, shards, "every shard was scanned");
        }
        other => panic!("expected the failed shard to be reported, got {other:?}"),
    }
    // ... AND the healthy job in a later shard got its 12:01 execution anyway
    let ex = executions(&env, "acme", &healthy_id).await?;
    let times: Vec<String> = ex.iter().map(|e| e.scheduled_at.to_rfc3339()).collect();
    assert_eq!(times, ["2026-11-30T12:01:00+00:00"]);
    env.cleanup().await;
    Ok(())
}

/// Three job ids, two of tenant `a` and one of tenant `b`, all in the same shard.
fn same_shard_ids(a: &str, b: &str, shards: u32) -> (String, String, String) {
    for n in 0..10_000 {
        let b_id = format!("b-{n}");
        let shard = keys::shard_of(b, &b_id, shards);
        let mut of_a =
            (0..10_000).map(|m| format!("a-{m}")).filter(|id| keys::shard_of(a, id, shards) == shard);
        if let (Some(a1), Some(a2)) = (of_a.next(), of_a.next()) {
            return (a1, a2, b_id);
        }
    }
    panic!("no three ids share a shard")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_tenants_catch_up_does_not_hold_back_anothers_on_time_fire() -> anyhow::Result<()> {
    // GIVEN, in one shard, two jobs of tenant `acme` firing every two minutes with fire_all
    // misfires, and a `skip` job of tenant `beta` due once at 12:30:30
    let env = TestEnv::new("liveness-catchup").await?;
    let (a1, a2, b) = same_shard_ids("acme", "beta", env.cfg.shards);
    let t0 = at("2026-11-30T12:00:05Z");
    let every2 = || definition("0 */2 * * * *", "UTC", MisfirePolicy::FireAll { cap: 100 });
    create_job(&env, "acme", &a1, every2(), t0).await?;
    create_job(&env, "acme", &a2, every2(), t0).await?;
    create_job(&env, "beta", &b, definition("30 30 12 * * *", "UTC", MisfirePolicy::Skip), t0).await?;
    let budget = || CatchUpBudget::new(100, 2);
    scan_with_budget(&env, at("2026-11-30T12:00:10Z"), &ScanOptions::default(), budget()).await?;

    // WHEN the next tick comes after a 30-minute outage, with a per-tenant catch-up budget of 2
    // (acme's first job goes alone, its second must wait for a later tick)
    let report =
        scan_with_budget(&env, at("2026-11-30T12:30:05Z"), &ScanOptions::default(), budget()).await?;

    // THEN one of acme's jobs is caught up and the other deferred ...
    assert_eq!(report.deferred, 1, "{report:?}");
    let caught_up = [executions(&env, "acme", &a1).await?.len(), executions(&env, "acme", &a2).await?.len()];
    assert!(caught_up.contains(&0) && caught_up.iter().any(|n| *n > 0), "{caught_up:?}");
    // ... AND beta's on-time 12:30:30 fire was created by this tick, not left to pass its
    // misfire threshold behind acme's backlog (where `skip` would drop it)
    let ex = executions(&env, "beta", &b).await?;
    let times: Vec<String> = ex.iter().map(|e| e.scheduled_at.to_rfc3339()).collect();
    assert_eq!(times, ["2026-11-30T12:30:30+00:00"]);
    env.cleanup().await;
    Ok(())
}
