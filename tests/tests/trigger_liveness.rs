//! Trigger-plane liveness: one job, tenant or shard must never hold back another's on-time
//! fires (docs/trigger.md, "No one holds back an on-time fire"). Each test reproduces a defect
//! found in review, on fixed instants.

use sundial_core::trigger::plan::CatchUpBudget;
use sundial_core::trigger::scan::{PartitionHook, ScanError, ScanOptions};
use sundial_model::keys;
use sundial_model::Job;
use sundial_schedule::MisfirePolicy;
use sundial_store::jobs;
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

/// `n` job ids of `tenant` that all land in one shard.
fn ids_in_one_shard(tenant: &str, n: usize, shards: u32) -> Vec<String> {
    let shard = keys::shard_of(tenant, "e-0", shards);
    (0..100_000)
        .map(|m| format!("e-{m}"))
        .filter(|id| keys::shard_of(tenant, id, shards) == shard)
        .take(n)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deferred_every_minute_job_does_not_hold_its_shard_forever() -> anyhow::Result<()> {
    // Issue 13 scenario 1. GIVEN six every-minute `fireAll` jobs of one tenant in one shard,
    // promoted to the every-minute class by a first tick
    let env = TestEnv::new("liveness-every").await?;
    let ids = ids_in_one_shard("acme", 6, env.cfg.shards);
    let t0 = at("2026-11-30T12:00:05Z");
    for id in &ids {
        create_job(
            &env,
            "acme",
            id,
            definition("0 * * * * *", "UTC", MisfirePolicy::FireAll { cap: 1000 }),
            t0,
        )
        .await?;
    }
    scan_with_budget(
        &env,
        at("2026-11-30T12:00:10Z"),
        &ScanOptions::default(),
        CatchUpBudget::new(1000, 1000),
    )
    .await?;
    let stored = jobs::get_job(&env.clients.ddb, &env.cfg, "acme", &ids[0]).await?;
    assert_eq!(stored.map(|j| j.due_class), Some(sundial_model::DueClass::Every));

    // WHEN the ticks come back after a 30-minute outage with a per-tenant catch-up budget of 40
    // missed fires (one job's 30 fit, a second's do not) and a walk of at most 10 minutes
    let opts = ScanOptions { max_buckets: 10, ..Default::default() };
    let back = at("2026-11-30T12:31:10Z");
    for m in 0..12 {
        let now = back + chrono::Duration::minutes(m);
        scan_with_budget(&env, now, &opts, CatchUpBudget::new(1000, 40)).await?;
    }

    // THEN every job has caught up: each has an execution for every minute up to the present
    let present = at("2026-11-30T12:42:00Z");
    for id in &ids {
        let ex = executions(&env, "acme", id).await?;
        let latest = ex.iter().map(|e| e.scheduled_at).max();
        assert!(
            latest.is_some_and(|l| l >= present),
            "{id}: latest execution {latest:?} after 12 ticks ({} executions)",
            ex.len()
        );
    }
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_promoted_to_every_minute_between_a_scans_reads_keeps_its_fires() -> anyhow::Result<()> {
    // Issue 13 scenario 4. GIVEN an every-second job created at 12:00:59 (so it waits in its
    // shard's admission partition)
    let env = TestEnv::new("liveness-promote").await?;
    let t0 = at("2026-11-30T12:00:59Z");
    let def = definition("* * * * * *", "UTC", MisfirePolicy::FireOnce);
    let job = create_job(&env, "acme", "secondly", def, t0).await?;
    let shard = keys::shard_of("acme", "secondly", env.cfg.shards);

    // WHEN the API's dispatch of the new job (it promotes the job to the every-minute class)
    // lands between a tick's reads of the shard's two class partitions, at 12:01:01 ...
    let api = std::sync::Arc::new(sundial_tests::trigger::ctx(&env));
    let hook = PartitionHook(std::sync::Arc::new(move |s: u32| {
        let (api, job) = (api.clone(), job.clone());
        Box::pin(async move {
            if s == shard {
                if let Err(e) = sundial_core::trigger::settle::dispatch_one(&api, &job, t0, "api:test").await
                {
                    panic!("dispatch_one: {e}");
                }
            }
        })
    }));
    let opts = ScanOptions { between_class_reads: Some(hook), ..Default::default() };
    scan(&env, at("2026-11-30T12:01:01Z"), &opts).await?;
    // ... AND the next tick comes at 12:02:01
    scan(&env, at("2026-11-30T12:02:01Z"), &ScanOptions::default()).await?;

    // THEN every second from 12:01:00 to 12:03:59 has its execution
    let ex = executions(&env, "acme", "secondly").await?;
    let have: std::collections::BTreeSet<i64> = ex.iter().map(|e| e.scheduled_at.timestamp()).collect();
    let from = at("2026-11-30T12:01:00Z").timestamp();
    let missing: Vec<i64> = (from..from + 180).filter(|s| !have.contains(s)).collect();
    assert!(missing.is_empty(), "{} fires never created, from {:?}", missing.len(), missing.first());
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undecodable_job_item_is_skipped_and_its_partition_still_fires() -> anyhow::Result<()> {
    // GIVEN a healthy job and, in the same admission partition, an item this version cannot
    // read (a newer writer's definition field, refused by `deny_unknown_fields`)
    let env = TestEnv::new("liveness-poison").await?;
    let t0 = at("2026-11-30T12:00:05Z");
    let job =
        create_job(&env, "acme", "healthy", definition("0 1 12 * * *", "UTC", MisfirePolicy::FireOnce), t0)
            .await?;
    let shard = keys::shard_of("acme", "healthy", env.cfg.shards);
    let mut item = sundial_store::items::job_to_item(&job);
    let mut def: serde_json::Value = serde_json::to_value(&job.definition)?;
    def["aFieldFromTheFuture"] = serde_json::json!(true);
    let s = |v: String| aws_sdk_dynamodb::types::AttributeValue::S(v);
    item.insert("pk".into(), s(keys::job_pk("acme", "poison")));
    item.insert("job".into(), s("poison".into()));
    item.insert("def".into(), s(def.to_string()));
    item.insert("due_pk".into(), s(keys::admission_bucket(shard)));
    env.clients.ddb.put_item().table_name(&env.cfg.jobs_table).set_item(Some(item)).send().await?;

    // WHEN a tick scans
    let report = scan(&env, at("2026-11-30T12:00:10Z"), &ScanOptions::default()).await?;

    // THEN the poison item is counted (InvalidJobs) and skipped, and the healthy job fires
    assert_eq!(report.invalid, 1, "{report:?}");
    let ex = executions(&env, "acme", "healthy").await?;
    assert_eq!(ex.len(), 1);
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_every_minute_catch_up_does_not_starve_a_deferred_bucket_job_of_its_tenant() -> anyhow::Result<()>
{
    // Review 2026-12 finding 1. GIVEN, in one shard and one tenant, a `*/10 s` `fireAll{cap:1000}`
    // job (promoted to the every-minute class by a first tick) and a five-minutely job
    let env = TestEnv::new("liveness-recount").await?;
    let ids = ids_in_one_shard("acme", 2, env.cfg.shards);
    let shard = keys::shard_of("acme", &ids[0], env.cfg.shards);
    let t0 = at("2026-11-30T12:00:05Z");
    let every = definition("*/10 * * * * *", "UTC", MisfirePolicy::FireAll { cap: 1000 });
    create_job(&env, "acme", &ids[0], every, t0).await?;
    create_job(&env, "acme", &ids[1], definition("0 */5 * * * *", "UTC", MisfirePolicy::FireOnce), t0)
        .await?;
    scan(&env, at("2026-11-30T12:00:10Z"), &ScanOptions::default()).await?;
    let stored = jobs::get_job(&env.clients.ddb, &env.cfg, "acme", &ids[0]).await?;
    assert_eq!(stored.map(|j| j.due_class), Some(sundial_model::DueClass::Every));

    // WHEN the ticks come back after a 30-minute outage with a per-tenant catch-up budget of 40:
    // the every-minute job's ~180 missed fires go alone, the five-minutely job is deferred
    let back = at("2026-11-30T12:31:10Z");
    for m in 0..4 {
        let now = back + chrono::Duration::minutes(m);
        scan_with_budget(&env, now, &ScanOptions::default(), CatchUpBudget::new(1000, 40)).await?;
    }

    // THEN the five-minutely job caught up (its missed 12:05..12:30 in a batch, then 12:35 on
    // time) and the shard's watermark reached the present
    let ex = executions(&env, "acme", &ids[1]).await?;
    let covers = |t: chrono::DateTime<chrono::Utc>| {
        ex.iter().any(|e| {
            let (a, b) = e.missed_range.unwrap_or((e.scheduled_at, e.scheduled_at));
            a <= t && t <= b
        })
    };
    for t in ["2026-11-30T12:05:00Z", "2026-11-30T12:30:00Z", "2026-11-30T12:35:00Z"] {
        assert!(covers(at(t)), "{t} not fired: {:?}", ex.iter().map(|e| e.id()).collect::<Vec<_>>());
    }
    let pos = sundial_store::watermarks::position(&env.clients.ddb, &env.cfg.jobs_table, shard).await?;
    let through = pos.map(|p| p.through);
    assert!(
        through >= Some(keys::minute_of(at("2026-11-30T12:35:00Z"))),
        "watermark stuck at {:?}",
        through.map(keys::minute_start)
    );
    // AND the every-minute job's catch-up was created once per fire
    let ev = executions(&env, "acme", &ids[0]).await?;
    let missed = ev.iter().filter(|e| {
        e.scheduled_at > at("2026-11-30T12:02:00Z") && e.scheduled_at < at("2026-11-30T12:30:00Z")
    });
    assert_eq!(missed.count(), 27 * 6 + 5, "12:02:10..12:29:50");
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_whose_calendar_cannot_be_loaded_is_kept_for_a_later_tick_not_stranded() -> anyhow::Result<()> {
    use sundial_model::{DueClass, OpsAction, OpsEntry};
    use sundial_schedule::{BusinessCalendarRef, BusinessCalendarSpec, BusinessDays, Roll};
    use sundial_store::calendars::{put_calendar, StoredCalendar};
    // Review 2026-12 finding 2. GIVEN an hourly job (bucket class, in bucket 10:00) and an
    // every-minute job (every-minute class) on business calendar `plant` v1, whose version this
    // process has never loaded and which the store does not hold either (a restore that lags)
    let env = TestEnv::new("liveness-calendar").await?;
    let created = at("2026-11-30T09:30:00Z"); // a Monday
    let spec = BusinessCalendarSpec::default();
    let days = std::sync::Arc::new(BusinessDays::single("plant", 1, &spec)?);
    let with_calendar = |expr: &str| {
        let mut def = definition(expr, "UTC", MisfirePolicy::FireAll { cap: 100 });
        def.schedule.business_calendar =
            Some(BusinessCalendarRef { calendar: "plant".into(), roll: Roll::Following });
        def
    };
    for (id, expr, class) in
        [("hourly", "0 0 * * * *", DueClass::Bucket), ("minutely", "0 * * * * *", DueClass::Every)]
    {
        let mut job =
            Job::new_with(&env.cfg, "strand", id, with_calendar(expr), created, Some(days.clone()))?;
        job.due_class = class;
        jobs::put_new_job(&env.clients.ddb, &env.cfg, &job).await?;
    }
    // WHEN the 09:59 and 10:00 ticks (which read bucket 10:00) cannot load the calendar
    for now in ["2026-11-30T09:59:10Z", "2026-11-30T10:00:10Z"] {
        let r = scan(&env, at(now), &ScanOptions::default()).await?;
        assert_eq!(r.invalid, 2, "{now}: {r:?}");
    }
    // AND the calendar version is back for the next ticks
    let cal = StoredCalendar {
        tenant: "strand".into(),
        id: "plant".into(),
        version: 1,
        deleted: false,
        spec,
        created_at: created,
        updated_at: created,
    };
    let audit = OpsEntry::new("test", OpsAction::CalendarCreate, "plant", created).versions(None, Some(1));
    put_calendar(&env.clients.ddb, &env.cfg.jobs_table, None, &cal, &audit, 86_400).await?;
    scan(&env, at("2026-11-30T10:01:10Z"), &ScanOptions::default()).await?;
    scan(&env, at("2026-11-30T10:02:10Z"), &ScanOptions::default()).await?;
    // THEN no fire of the unplannable ticks was lost: the hourly job's 10:00 and each of the
    // every-minute job's have an execution (late ones by its `fireAll` policy)
    let fired = |ex: &[sundial_model::Execution]| -> Vec<String> {
        ex.iter().map(|e| e.scheduled_at.format("%H:%M").to_string()).collect()
    };
    let hourly = executions(&env, "strand", "hourly").await?;
    assert_eq!(fired(&hourly), ["10:00"], "the hourly job was stranded in bucket 10:00");
    let minutely = executions(&env, "strand", "minutely").await?;
    let got = fired(&minutely);
    for m in ["09:59", "10:00", "10:01", "10:02", "10:03"] {
        assert!(got.iter().any(|g| g == m), "every-minute fire {m} lost: {got:?}");
    }
    env.cleanup().await;
    Ok(())
}
