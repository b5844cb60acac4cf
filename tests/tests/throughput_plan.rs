//! The provisioned-capacity planner against the emulator (MiniStack and moto both serve
//! `UpdateTable` with `ProvisionedThroughput`, GSI updates included, and `DescribeTable`; neither
//! reports `NumberOfDecreasesToday`, so the ration is the plan's own unit-tested rule there).

use aws_sdk_dynamodb::types::{
    BillingMode, GlobalSecondaryIndexUpdate, ProvisionedThroughput, UpdateGlobalSecondaryIndexAction,
};
use sundial_core::trigger::throughput::{run_plan, PlannerSettings};
use sundial_model::{DueClass, Job};
use sundial_schedule::MisfirePolicy;
use sundial_store::throughput::{describe_throughput, ThroughputError};
use sundial_tests::trigger::{at, ctx, definition};
use sundial_tests::TestEnv;
use sundial_throughput::Throughput;

/// Switches `table` and its indexes to provisioned mode with `units` each.
async fn provision(env: &TestEnv, table: &str, units: i64) -> anyhow::Result<()> {
    let pt =
        || ProvisionedThroughput::builder().read_capacity_units(units).write_capacity_units(units).build();
    let d = env.clients.ddb.describe_table().table_name(table).send().await?;
    let mut req = env.clients.ddb.update_table().table_name(table).billing_mode(BillingMode::Provisioned);
    req = req.provisioned_throughput(pt()?);
    for ix in d.table().map(|t| t.global_secondary_indexes()).unwrap_or_default() {
        let name = ix.index_name().unwrap_or_default();
        let a = UpdateGlobalSecondaryIndexAction::builder()
            .index_name(name)
            .provisioned_throughput(pt()?)
            .build()?;
        req = req.global_secondary_index_updates(GlobalSecondaryIndexUpdate::builder().update(a).build());
    }
    req.send().await?;
    Ok(())
}

/// `n` daily jobs due at `due`, spread over the shards by their ids.
async fn daily_jobs(env: &TestEnv, n: usize, due: chrono::DateTime<chrono::Utc>) -> anyhow::Result<()> {
    let class = DueClass::Daily(sundial_model::keys::minute_of_day(sundial_model::keys::minute_of(due)));
    let expr = format!("0 {} {} * * *", due.format("%M"), due.format("%H"));
    for i in 0..n {
        let def = definition(&expr, "UTC", MisfirePolicy::FireOnce);
        let job = Job::new(&env.cfg, "acme", &format!("d{i:04}"), def, due - chrono::Duration::hours(1))?;
        let job = Job { due_class: class, next_fire_at: Some(due), ..job };
        sundial_store::jobs::put_new_job(&env.clients.ddb, &env.cfg, &job).await?;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_demand_tables_are_left_alone() -> anyhow::Result<()> {
    // GIVEN tables billed on demand (the default)
    let env = TestEnv::with("plan-od", &["default"], 4).await?;
    // WHEN the planner runs
    let r = run_plan(&ctx(&env), at("2026-11-30T11:50:00Z"), &PlannerSettings::default()).await?;
    // THEN it changes nothing and says why
    assert!(r.tables.iter().all(|t| t.skipped == Some("on demand") && t.changes.is_empty()), "{r:?}");
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_planner_raises_ahead_of_a_spike_and_lowers_after_it() -> anyhow::Result<()> {
    // GIVEN provisioned tables at 5 units and 600 daily jobs due at 12:00 (every shard sampled)
    let env = TestEnv::with("plan-up", &["default"], 4).await?;
    for t in [&env.cfg.jobs_table, &env.cfg.executions_table] {
        provision(&env, t, 5).await?;
    }
    daily_jobs(&env, 600, at("2026-11-30T12:00:00Z")).await?;
    let c = ctx(&env);
    let s = PlannerSettings::default();
    // WHEN the planner runs four minutes ahead of the spike
    let r = run_plan(&c, at("2026-11-30T11:56:00Z"), &s).await?;
    // THEN it forecast 600 fires at 12:00 and raised the executions table for the spike's
    // minute: 10 fires/s × (5.5 WU − the 1 the tick spent on each at 11:59) × 1.25 = 57 WCU (and
    // 10 × 2.85 RU × 1.25 = 36 RCU); it moved the jobs table to the tick's 10 × 0.2 WU × 1.25 =
    // 3 WCU at 11:59 (a decrease of at least 20 %) and the workers' 10 × 1.0 RU × 1.25 = 13 RCU
    let noon = sundial_model::keys::minute_of(at("2026-11-30T12:00:00Z"));
    assert_eq!(r.forecast.iter().find(|(m, _)| *m == noon).map(|f| f.1), Some(600.0), "{r:?}");
    let execs = describe_throughput(&env.clients.ddb, &env.cfg.executions_table).await?;
    assert_eq!(execs.table.map(|p| p.units), Some(Throughput { wcu: 57, rcu: 36 }), "{r:?}");
    let jobs = describe_throughput(&env.clients.ddb, &env.cfg.jobs_table).await?;
    assert_eq!(jobs.table.map(|p| p.units), Some(Throughput { wcu: 3, rcu: 13 }), "{r:?}");
    // WHEN it runs again the next day at 11:00, an hour before the daily spike comes back
    let r = run_plan(&c, at("2026-12-01T11:00:00Z"), &s).await?;
    // THEN the quiet horizon lets it spend a decrease, down to the minimum of one unit
    let execs = describe_throughput(&env.clients.ddb, &env.cfg.executions_table).await?;
    assert_eq!(execs.table.map(|p| p.units), Some(Throughput { wcu: 1, rcu: 1 }), "{r:?}");
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_table_is_a_typed_error() -> anyhow::Result<()> {
    let env = TestEnv::with("plan-gone", &["default"], 4).await?;
    let mut c = ctx(&env);
    c.cfg.jobs_table = format!("{}-missing", c.cfg.jobs_table);
    c.cfg.executions_table = format!("{}-missing", c.cfg.executions_table);
    let e = sundial_store::throughput::describe_throughput(&c.ddb, &c.cfg.jobs_table).await;
    assert!(matches!(e, Err(ThroughputError::Store(ref s)) if !s.is_retryable()), "{e:?}");
    env.cleanup().await;
    Ok(())
}
