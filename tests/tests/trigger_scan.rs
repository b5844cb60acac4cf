//! Trigger plane against the emulator: unique executions under concurrent ticks, crash
//! recovery at every step, outages under each misfire policy with paced catch-up,
//! sub-minute jobs, and paused or deleted jobs.

use chrono::Duration;
use std::collections::BTreeMap;
use sundial_core::trigger::plan::CatchUpBudget;
use sundial_core::trigger::scan::{CrashPoint, ScanOptions};
use sundial_model::{ExecStatus, JobState};
use sundial_schedule::MisfirePolicy;
use sundial_store::jobs;
use sundial_tests::trigger::{
    at, covered_minutes, create_job, definition, executions, queue_counts, queued, scan, scan_with_budget,
};
use sundial_tests::TestEnv;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_concurrent_ticks_create_one_execution_per_fire_and_enqueue_each() -> anyhow::Result<()> {
    // GIVEN 20 jobs firing at 12:01:00 and 12:01:30
    let env = TestEnv::new("tick-race").await?;
    let t0 = at("2026-11-30T12:00:05Z");
    for i in 0..20 {
        create_job(
            &env,
            "acme",
            &format!("job-{i}"),
            definition("0,30 1 12 * * *", "UTC", MisfirePolicy::FireOnce),
            t0,
        )
        .await?;
    }
    // WHEN two ticks scan the same minute concurrently
    let now = at("2026-11-30T12:00:10Z");
    let opts = ScanOptions::default();
    let (a, b) = tokio::join!(scan(&env, now, &opts), scan(&env, now, &opts));
    let (a, b) = (a?, b?);
    // THEN there is exactly one execution per fire, and every fire was enqueued at least once
    let mut total = 0;
    for i in 0..20 {
        let ex = executions(&env, "acme", &format!("job-{i}")).await?;
        let times: Vec<String> = ex.iter().map(|e| e.scheduled_at.to_rfc3339()).collect();
        assert_eq!(times, ["2026-11-30T12:01:00+00:00", "2026-11-30T12:01:30+00:00"], "job-{i}");
        total += ex.len();
    }
    assert_eq!(a.created + b.created, 40, "each fire created once in all");
    assert_eq!(total, 40);
    assert!(queued(&env, "default").await? >= 40, "every fire is enqueued at least once");
    assert_eq!(a.sent + b.sent, queued(&env, "default").await?);
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_at_any_step_is_repaired_by_the_next_tick() -> anyhow::Result<()> {
    for crash in
        [CrashPoint::AfterPut, CrashPoint::AfterSend, CrashPoint::BeforeAdvance, CrashPoint::BeforeWatermark]
    {
        // GIVEN a job firing every 20 seconds
        let env = TestEnv::new("crash").await?;
        let t0 = at("2026-11-30T09:59:50Z");
        create_job(&env, "acme", "every20", definition("*/20 * * * * *", "UTC", MisfirePolicy::FireOnce), t0)
            .await?;
        let now = at("2026-11-30T10:00:00Z");
        // WHEN the first tick crashes at `crash` and the next one runs normally
        let first = scan(&env, now, &ScanOptions { crash_at: Some(crash), ..Default::default() }).await;
        assert!(first.is_err(), "{crash:?} must stop the first scan");
        let again = scan(&env, now + Duration::seconds(2), &ScanOptions::default()).await?;
        // THEN exactly one execution per fire up to the horizon (end of 10:01), none missing
        let ex = executions(&env, "acme", "every20").await?;
        let got: Vec<String> = ex.iter().map(|e| e.scheduled_at.format("%H:%M:%S").to_string()).collect();
        assert_eq!(
            got,
            ["10:00:00", "10:00:20", "10:00:40", "10:01:00", "10:01:20", "10:01:40"],
            "{crash:?}"
        );
        // and every fire was enqueued at least once across both ticks
        assert!(queued(&env, "default").await? >= 6, "{crash:?}: a fire was never enqueued");
        if crash == CrashPoint::AfterPut {
            assert_eq!(again.duplicates, 6, "the repeated puts were absorbed by the key");
            assert_eq!(again.sent, 6, "READY executions whose send was lost are sent again");
        }
        // AND a third tick in the same minute adds nothing
        let third = scan(&env, now + Duration::seconds(4), &ScanOptions::default()).await?;
        assert_eq!(third.created, 0, "{crash:?}");
        env.cleanup().await;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ten_second_job_gets_six_executions_a_minute_each_delayed_to_its_second() -> anyhow::Result<()> {
    // GIVEN a job firing every 10 seconds, created at 10:00:00.5 (real wall clock: SQS delays
    // are real), anchored at the previous minute
    let env = TestEnv::new("every10").await?;
    // Start half a second past a 10-second boundary, so the nearest future fire is 9.5 s away:
    // SQS delays run on the real clock, and a message whose delay ended while the test was
    // still scanning (a busy machine) would be counted visible instead of delayed.
    let phase = chrono::Utc::now().timestamp_millis().rem_euclid(10_000);
    tokio::time::sleep(std::time::Duration::from_millis((10_500 - phase).rem_euclid(10_000) as u64)).await;
    let now = chrono::Utc::now();
    let minute = sundial_model::keys::minute_start(sundial_model::keys::minute_of(now));
    let mut def = definition("rate(10 seconds)", "UTC", MisfirePolicy::Skip);
    def.schedule.start = Some(minute);
    create_job(&env, "acme", "every10", def, now).await?;
    // WHEN one tick runs
    let report = scan(&env, now, &ScanOptions { horizon_secs: 60, ..Default::default() }).await?;
    // THEN every 10-second fire after now up to the end of the next minute exists, six per
    // full minute, each with its own second
    let ex = executions(&env, "acme", "every10").await?;
    let next_minute = minute + Duration::minutes(1);
    let in_next: Vec<_> = ex.iter().filter(|e| e.scheduled_at >= next_minute).collect();
    assert_eq!(in_next.len(), 6, "six fires in a full minute");
    for (i, e) in in_next.iter().enumerate() {
        assert_eq!(e.scheduled_at, next_minute + Duration::seconds(10 * i as i64));
        assert_eq!(e.fire_at, e.scheduled_at, "no jitter configured");
    }
    // AND SQS holds each message until its second: all future fires are delayed
    let (visible, delayed, _) = queue_counts(&env, "default").await?;
    let future = ex.iter().filter(|e| (e.fire_at - now).num_milliseconds() >= 1000).count() as u64;
    assert_eq!(report.sent, ex.len() as u64);
    assert_eq!(delayed, future, "messages for later seconds are delayed, not visible");
    assert_eq!(visible + delayed, ex.len() as u64);
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paused_and_deleted_jobs_produce_nothing() -> anyhow::Result<()> {
    // GIVEN three minutely jobs; one paused, one deleted
    let env = TestEnv::new("paused").await?;
    let t0 = at("2026-11-30T08:00:30Z");
    let mut made = Vec::new();
    for id in ["live", "paused", "deleted"] {
        made.push(
            create_job(&env, "acme", id, definition("0 * * * * *", "UTC", MisfirePolicy::FireOnce), t0)
                .await?,
        );
    }
    // (through the control plane, as the API does it)
    let ctl = sundial_core::control::Control::new(
        sundial_tests::trigger::ctx(&env),
        sundial_core::control::ControlSettings::default(),
    );
    let caller = sundial_core::control::Caller { tenant: "acme".into(), principal: "test".into() };
    for (job, state) in [(&made[1], JobState::Paused), (&made[2], JobState::Deleted)] {
        sundial_core::control::jobs::set_state(&ctl, &caller, &job.job_id, state, None, t0).await?;
    }
    // WHEN ticks run for three minutes
    for m in 0..3 {
        scan(&env, at("2026-11-30T08:01:00Z") + Duration::minutes(m), &ScanOptions::default()).await?;
    }
    // THEN only the live job has executions
    assert!(!executions(&env, "acme", "live").await?.is_empty());
    assert!(executions(&env, "acme", "paused").await?.is_empty());
    assert!(executions(&env, "acme", "deleted").await?.is_empty());
    // AND a deleted job keeps its definition (soft delete)
    let kept = jobs::get_job(&env.clients.ddb, &env.cfg, "acme", "deleted").await?.expect("kept");
    assert_eq!(kept.state, JobState::Deleted);
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_hour_outage_follows_each_misfire_policy_with_paced_catch_up() -> anyhow::Result<()> {
    // GIVEN, per policy, a minutely job and a five-minutely job, last ticked at 06:00
    let env = TestEnv::new("outage").await?;
    let t0 = at("2026-11-30T05:59:30Z");
    let policies = [
        ("once", MisfirePolicy::FireOnce),
        ("all", MisfirePolicy::FireAll { cap: 500 }),
        ("capped", MisfirePolicy::FireAll { cap: 10 }),
        ("skip", MisfirePolicy::Skip),
    ];
    for (name, p) in &policies {
        create_job(&env, "acme", &format!("m-{name}"), definition("0 * * * * *", "UTC", *p), t0).await?;
        create_job(&env, "acme", &format!("f-{name}"), definition("0 */5 * * * *", "UTC", *p), t0).await?;
    }
    scan(&env, at("2026-11-30T06:00:00Z"), &ScanOptions::default()).await?;
    // WHEN no tick runs for two hours, then ticks resume at 08:00:00 with a catch-up budget of
    // 60 missed-fire executions per tick (30 per tenant)
    let mut now = at("2026-11-30T08:00:00Z");
    let mut ticks = 0;
    let mut created_per_tick = Vec::new();
    loop {
        let r = scan_with_budget(&env, now, &ScanOptions::default(), CatchUpBudget::new(60, 30)).await?;
        ticks += 1;
        created_per_tick.push(r.created);
        if r.deferred == 0 {
            break;
        }
        assert!(ticks < 20, "catch-up does not converge");
        now += Duration::seconds(1); // several ticks within the same minute
    }
    // THEN catch-up took several ticks and no tick exceeded the per-tenant rate for missed fires
    assert!(ticks > 1, "the budget must have paced the catch-up: {created_per_tick:?}");
    // Executions the catch-up created for fires missed during the outage.
    let late = |e: &sundial_model::Execution| {
        e.scheduled_at < at("2026-11-30T07:59:00Z") && e.created_at >= at("2026-11-30T08:00:00Z")
    };
    let mut by_job = BTreeMap::new();
    for (name, _) in &policies {
        for kind in ["m", "f"] {
            let id = format!("{kind}-{name}");
            let ex = executions(&env, "acme", &id).await?;
            assert!(ex.iter().all(|e| e.status == ExecStatus::Ready));
            by_job.insert(id, (ex.iter().filter(|e| late(e)).count(), ex));
        }
    }
    // fire_once: one execution carrying the whole missed range
    let (n, ex) = &by_job["m-once"];
    assert_eq!(*n, 1, "fire_once makes one batch execution");
    let batch = ex.iter().find(|e| e.missed_range.is_some()).expect("a batch");
    let (a, b) = batch.missed_range.unwrap();
    assert_eq!(a, at("2026-11-30T06:02:00Z"), "first missed (06:00 and 06:01 were queued before)");
    assert!(b >= at("2026-11-30T07:58:00Z") && b < at("2026-11-30T08:00:00Z"), "last missed {b}");
    // fire_all: every missed fire (cap 500 is above 118)
    assert!(by_job["m-all"].0 >= 116, "fire_all minutely: {}", by_job["m-all"].0);
    assert_eq!(by_job["f-all"].0, 24 - 1, "fire_all five-minutely: 06:05..07:55");
    // fire_all with cap 10: the latest 10 missed fires
    assert_eq!(by_job["m-capped"].0, 10);
    // skip: nothing missed is created
    assert_eq!(by_job["m-skip"].0, 0);
    assert_eq!(by_job["f-skip"].0, 0);
    // AND every job is back on schedule: the next minute's fire exists once
    for (id, (_, ex)) in &by_job {
        if id.starts_with("m-") {
            let n = ex.iter().filter(|e| e.scheduled_at == at("2026-11-30T08:01:00Z")).count();
            assert_eq!(n, 1, "{id} resumes its schedule");
        }
    }
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_created_into_an_already_scanned_minute_is_not_lost() -> anyhow::Result<()> {
    // GIVEN a tick at 12:00:00 that queued ahead through 12:01:59 (watermark 12:01)
    let env = TestEnv::new("admission").await?;
    scan(&env, at("2026-11-30T12:00:00Z"), &ScanOptions::default()).await?;
    // WHEN a job is created at 12:00:30 whose first fires are 12:00:45 and 12:01:45
    let job = create_job(
        &env,
        "acme",
        "late",
        definition("45 * * * * *", "UTC", MisfirePolicy::FireOnce),
        at("2026-11-30T12:00:30Z"),
    )
    .await?;
    assert_eq!(job.due_class, sundial_model::DueClass::Admission);
    // AND the next tick runs at 12:01:00
    scan(&env, at("2026-11-30T12:01:00Z"), &ScanOptions::default()).await?;
    // THEN both fires exist: the admission partition is read on every tick
    let got: Vec<String> = executions(&env, "acme", "late")
        .await?
        .iter()
        .map(|e| e.scheduled_at.format("%H:%M:%S").to_string())
        .collect();
    assert_eq!(got, ["12:00:45", "12:01:45", "12:02:45"]);
    // AND the job left admission (for the every-minute class: it fires once a minute)
    let stored = jobs::get_job(&env.clients.ddb, &env.cfg, "acme", "late").await?.expect("job");
    assert_eq!(stored.due_class, sundial_model::DueClass::Every);
    assert_eq!(stored.next_fire_at, Some(at("2026-11-30T12:03:45Z")));
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dispatch_one_queues_the_current_minute_at_creation() -> anyhow::Result<()> {
    // GIVEN a tick that already scanned ahead, and a job created mid-minute
    let env = TestEnv::new("dispatch1").await?;
    scan(&env, at("2026-11-30T12:00:00Z"), &ScanOptions::default()).await?;
    let now = at("2026-11-30T12:00:30Z");
    let job =
        create_job(&env, "acme", "soon", definition("45 * * * * *", "UTC", MisfirePolicy::FireOnce), now)
            .await?;
    // WHEN the API dispatches it right away
    let ctx = sundial_tests::trigger::ctx(&env);
    let r = sundial_core::trigger::settle::dispatch_one(&ctx, &job, now, "api:test").await?;
    // THEN the 12:00:45 fire is queued before it is due, without waiting for the next tick
    assert_eq!(r.created, 2, "12:00:45 and 12:01:45");
    let ex = executions(&env, "acme", "soon").await?;
    assert_eq!(ex[0].scheduled_at, at("2026-11-30T12:00:45Z"));
    // AND a racing tick creates nothing twice
    let t = scan(&env, at("2026-11-30T12:00:31Z"), &ScanOptions::default()).await?;
    assert_eq!(t.created, 0);
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_firing_every_minute_stop_moving_between_buckets() -> anyhow::Result<()> {
    // GIVEN a job firing every 20 seconds
    let env = TestEnv::new("everycls").await?;
    create_job(
        &env,
        "acme",
        "q20",
        definition("*/20 * * * * *", "UTC", MisfirePolicy::FireOnce),
        at("2026-11-30T07:59:30Z"),
    )
    .await?;
    // WHEN ticks run for five minutes
    let mut advanced = Vec::new();
    for m in 0..5 {
        let r =
            scan(&env, at("2026-11-30T08:00:00Z") + Duration::minutes(m), &ScanOptions::default()).await?;
        advanced.push(r.advanced);
    }
    // THEN it is advanced once (out of admission, into the every class) and never again
    assert_eq!(advanced, [1, 0, 0, 0, 0]);
    let stored = jobs::get_job(&env.clients.ddb, &env.cfg, "acme", "q20").await?.expect("job");
    assert_eq!(stored.due_class, sundial_model::DueClass::Every);
    // AND its fires are all there, once each: from its first fire after creation (07:59:40,
    // 20 s late at the first tick, inside the misfire threshold) through 08:05:40
    let ex = executions(&env, "acme", "q20").await?;
    assert_eq!(ex.len(), 1 + 6 * 3);
    assert_eq!(ex.first().map(|e| e.scheduled_at), Some(at("2026-11-30T07:59:40Z")));
    assert_eq!(ex.last().map(|e| e.scheduled_at), Some(at("2026-11-30T08:05:40Z")));
    env.cleanup().await;
    Ok(())
}

#[tokio::test]
async fn an_advance_records_this_builds_tz_database_and_a_class_move_keeps_the_record() -> anyhow::Result<()>
{
    // GIVEN an hourly job whose position (13:00) was computed under tz database 2022a
    let env = TestEnv::new("tick-tzdb").await?;
    let t0 = at("2026-11-30T12:00:05Z");
    let mut job = sundial_model::Job::new(
        &env.cfg,
        "acme",
        "hourly",
        definition("0 0 * * * *", "UTC", MisfirePolicy::FireOnce),
        t0,
    )?;
    job.tzdb_version = "2022a".into();
    jobs::put_new_job(&env.clients.ddb, &env.cfg, &job).await?;
    let stored = || async { jobs::get_job(&env.clients.ddb, &env.cfg, "acme", "hourly").await };
    // WHEN a tick admits it without a fire due (it moves to its minute bucket, same position)
    scan(&env, at("2026-11-30T12:00:10Z"), &ScanOptions::default()).await?;
    // THEN the position and its record are kept
    let j = stored().await?.expect("the job");
    assert_eq!((j.next_fire_at, j.tzdb_version.as_str()), (Some(at("2026-11-30T13:00:00Z")), "2022a"));
    // WHEN the tick that dispatches 13:00 moves the position to 14:00
    scan(&env, at("2026-11-30T12:59:30Z"), &ScanOptions::default()).await?;
    // THEN the new position records the release this build computed it with
    let j = stored().await?.expect("the job");
    assert_eq!(j.next_fire_at, Some(at("2026-11-30T14:00:00Z")));
    assert_eq!(j.tzdb_version, sundial_schedule::tzdb_version());
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_business_calendar_job_fires_on_the_rolled_instant_with_the_stored_calendar_version(
) -> anyhow::Result<()> {
    use std::sync::Arc;
    use sundial_model::{Job, OpsAction, OpsEntry};
    use sundial_schedule::{BusinessCalendarRef, BusinessCalendarSpec, BusinessDays, Roll};
    use sundial_store::calendars::{put_calendar, StoredCalendar};
    // GIVEN cn-holidays v1 (National Day 10-01 and 10-02, a Thursday and a Friday) stored, and a
    // job on the 1st of each month at 09:00 Shanghai rolling 'following', created 09-30
    let env = TestEnv::new("bizcal-scan").await?;
    let created = at("2026-09-30T00:00:00Z");
    let spec = BusinessCalendarSpec {
        holidays: vec!["2026-10-01".into(), "2026-10-02".into()],
        ..Default::default()
    };
    let cal = StoredCalendar {
        tenant: "acme".into(),
        id: "cn-holidays".into(),
        version: 1,
        deleted: false,
        spec: spec.clone(),
        created_at: created,
        updated_at: created,
    };
    let audit =
        OpsEntry::new("test", OpsAction::CalendarCreate, "cn-holidays", created).versions(None, Some(1));
    put_calendar(&env.clients.ddb, &env.cfg.jobs_table, None, &cal, &audit, 86_400).await?;
    let days = Arc::new(BusinessDays::single("cn-holidays", 1, &spec)?);
    let mut def = definition("0 0 9 1 * *", "Asia/Shanghai", MisfirePolicy::FireOnce);
    def.schedule.business_calendar =
        Some(BusinessCalendarRef { calendar: "cn-holidays".into(), roll: Roll::Following });
    let job = Job::new_with(&env.cfg, "acme", "monthly", def, created, Some(days))?;
    assert_eq!(
        job.next_fire_at,
        Some(at("2026-10-05T01:00:00Z")),
        "10-01 rolls past the holidays and the weekend"
    );
    jobs::put_new_job(&env.clients.ddb, &env.cfg, &job).await?;
    // WHEN the scan runs in the minute before Monday 10-05 09:00 Shanghai (the scan loads the
    // calendar version the job names from the store)
    let report = scan(&env, at("2026-10-05T00:59:30Z"), &ScanOptions::default()).await?;
    // THEN the one execution is at the rolled instant, and the job moves to November's fire:
    // 11-01 is a Sunday, so Monday 11-02 09:00
    let ex = executions(&env, "acme", "monthly").await?;
    let times: Vec<String> = ex.iter().map(|e| e.scheduled_at.to_rfc3339()).collect();
    assert_eq!(times, ["2026-10-05T01:00:00+00:00"], "{report:?}");
    assert_eq!(report.invalid, 0);
    let stored = jobs::get_job(&env.clients.ddb, &env.cfg, "acme", "monthly").await?.expect("job");
    assert_eq!(stored.next_fire_at, Some(at("2026-11-02T01:00:00Z")));
    assert_eq!(stored.calendar_versions, vec![("cn-holidays".to_string(), 1)]);
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fire_once_replan_after_a_failed_scan_covers_each_missed_fire_once() -> anyhow::Result<()> {
    // GIVEN an every-minute `fireOnce` job queued through 10:01, then an outage
    let env = TestEnv::new("batch-replan").await?;
    create_job(
        &env,
        "acme",
        "minutely",
        definition("0 * * * * *", "UTC", MisfirePolicy::FireOnce),
        at("2026-11-30T09:59:30Z"),
    )
    .await?;
    scan(&env, at("2026-11-30T10:00:00Z"), &ScanOptions::default()).await?;
    // WHEN the 10:30 scan puts a batch and its ordinary fires, then fails before advancing
    let opts = ScanOptions { crash_at: Some(CrashPoint::BeforeAdvance), ..Default::default() };
    assert!(scan(&env, at("2026-11-30T10:30:00Z"), &opts).await.is_err());
    // AND the next scan that gets through runs at 10:40, from the same position
    scan(&env, at("2026-11-30T10:40:00Z"), &ScanOptions::default()).await?;
    // THEN every fire from 10:02 (the first after the queued-ahead ones) to the end of the
    // 10:41 window is in exactly one execution: its own, or one batch's range
    let ex = executions(&env, "acme", "minutely").await?;
    let covered = covered_minutes(&ex);
    let twice: Vec<_> = covered.iter().filter(|(_, by)| by.len() > 1).collect();
    assert!(twice.is_empty(), "fires in more than one execution: {twice:?}");
    let minutes: Vec<String> = covered.keys().cloned().collect();
    let want: Vec<String> = (0..=41).map(|m| format!("10:{m:02}")).collect();
    assert_eq!(minutes, want, "every fire covered");
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fire_once_batch_never_covers_a_fire_that_has_its_own_execution() -> anyhow::Result<()> {
    // GIVEN an every-minute `fireOnce` job queued through 10:01, then an outage
    let env = TestEnv::new("batch-holes").await?;
    create_job(
        &env,
        "acme",
        "minutely",
        definition("0 * * * * *", "UTC", MisfirePolicy::FireOnce),
        at("2026-11-30T09:59:30Z"),
    )
    .await?;
    scan(&env, at("2026-11-30T10:00:00Z"), &ScanOptions::default()).await?;
    // AND a 10:30 scan that put the batch 10:02–10:28 and the ordinary fires 10:30 and 10:31,
    // but whose put of 10:29 failed, so it kept the job's position (the simulator's seed 7002,
    // K3: one of the scan's concurrent puts failed after the others landed)
    let opts = ScanOptions { crash_at: Some(CrashPoint::BeforeAdvance), ..Default::default() };
    assert!(scan(&env, at("2026-11-30T10:30:00Z"), &opts).await.is_err());
    let lost = sundial_store::executions::ExecKey::new(
        "acme",
        "minutely",
        at("2026-11-30T10:29:00Z").timestamp_millis(),
    );
    env.clients
        .ddb
        .delete_item()
        .table_name(&env.cfg.executions_table)
        .key("pk", aws_sdk_dynamodb::types::AttributeValue::S(lost.pk()))
        .key("sk", aws_sdk_dynamodb::types::AttributeValue::S(lost.sk()))
        .send()
        .await?;
    // WHEN the next scan runs at 10:40, from the same position
    scan(&env, at("2026-11-30T10:40:00Z"), &ScanOptions::default()).await?;
    // THEN every fire to the end of the 10:41 window is in exactly one execution: 10:29 in a
    // batch that stops before 10:30, which ran on its own, and the fires after 10:31 in another
    let ex = executions(&env, "acme", "minutely").await?;
    let covered = covered_minutes(&ex);
    let twice: Vec<_> = covered.iter().filter(|(_, by)| by.len() > 1).collect();
    assert!(twice.is_empty(), "fires in more than one execution: {twice:?}");
    let minutes: Vec<String> = covered.keys().cloned().collect();
    let want: Vec<String> = (0..=41).map(|m| format!("10:{m:02}")).collect();
    assert_eq!(minutes, want, "every fire covered");
    let ranges: Vec<(String, String)> = ex
        .iter()
        .filter_map(|e| e.missed_range)
        .map(|(a, b)| (a.format("%H:%M").to_string(), b.format("%H:%M").to_string()))
        .collect();
    assert_eq!(
        ranges,
        [("10:02", "10:28"), ("10:29", "10:29"), ("10:32", "10:38")]
            .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    env.cleanup().await;
    Ok(())
}
