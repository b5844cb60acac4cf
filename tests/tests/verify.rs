//! Every-minute and daily fires cost three write units a run (docs/performance.md, "Targets") and
//! are still never lost: they are put without an `open` index entry, and the scan's verification
//! pass indexes any that is not final a grace after its minute
//! (`functions/core/src/trigger/verify.rs`). Fixed instants, the real SDK against the emulator.

use chrono::{DateTime, Duration, Utc};
use std::sync::Arc;
use sundial_core::control::{self, Caller, Control, ControlSettings};
use sundial_core::reconcile::{reconcile, ReconcileOptions};
use sundial_core::trigger::plan::CatchUpBudget;
use sundial_core::trigger::scan::{scan_shards, PartitionHook, ScanOptions};
use sundial_model::claim::{Finish, LeaseTerms};
use sundial_model::{DueClass, ExecStatus, JobState};
use sundial_schedule::MisfirePolicy;
use sundial_store::executions::{ClaimOutcome, ExecKey, ExecStore};
use sundial_store::{jobs, watermarks};
use sundial_testkit::metering::Meter;
use sundial_tests::trigger::{at, create_job, ctx, definition, executions, metered_ctx, scan};
use sundial_tests::TestEnv;

fn key(job: &str, t: &str) -> ExecKey {
    ExecKey { tenant: "acme".into(), job_id: job.into(), scheduled_ms: at(t).timestamp_millis(), child: None }
}

fn execs(env: &TestEnv) -> ExecStore {
    ExecStore::new(env.clients.ddb.clone(), env.cfg.executions_table.clone())
}

async fn open_due(env: &TestEnv, k: &ExecKey) -> anyhow::Result<Option<i64>> {
    Ok(execs(env).get(k, true).await?.and_then(|s| s.open_due))
}

/// Drops every message of the pool's queue: the deliveries of everything queued so far are lost.
async fn lose_messages(env: &TestEnv) -> anyhow::Result<()> {
    env.clients.sqs.purge_queue().queue_url(env.queue_url("default")).send().await?;
    Ok(())
}

/// Moves every shard's watermark to the minute before `t`, as ticks every minute would have.
async fn ticks_ran_until(env: &TestEnv, t: DateTime<Utc>) -> anyhow::Result<()> {
    let minute = sundial_model::keys::minute_of(t) - 1;
    for shard in 0..env.cfg.shards {
        watermarks::advance(&env.clients.ddb, &env.cfg.jobs_table, shard, minute, None).await?;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_minute_and_daily_fires_cost_three_write_units_a_run() -> anyhow::Result<()> {
    // GIVEN an every-minute job and a daily 09:00 job, past their first (admission) dispatch
    let env = TestEnv::with("verify-cost", &["default"], 1).await?;
    create_job(
        &env,
        "acme",
        "minutely",
        definition("0 * * * * *", "UTC", MisfirePolicy::FireOnce),
        at("2026-11-30T08:58:10Z"),
    )
    .await?;
    create_job(
        &env,
        "acme",
        "daily",
        definition("0 0 9 * * *", "UTC", MisfirePolicy::FireOnce),
        at("2026-11-30T08:58:10Z"),
    )
    .await?;
    scan(&env, at("2026-11-30T08:58:30Z"), &ScanOptions::default()).await?;
    let daily = jobs::get_job(&env.clients.ddb, &env.cfg, "acme", "daily").await?.expect("daily job");
    assert_eq!(daily.due_class, DueClass::Daily(9 * 60), "promoted to the daily class of 09:00 UTC");

    // WHEN the next tick, through metered clients, queues the 09:00 fires of both
    let meter = Meter::new(&env.cfg);
    let tick_ctx = metered_ctx(&env, &meter, "tick");
    let budget = tokio::sync::Mutex::new(CatchUpBudget::new(100, 100));
    let r =
        scan_shards(&tick_ctx, 0..1, at("2026-11-30T08:59:30Z"), &budget, &ScanOptions::default()).await?;
    assert_eq!(r.created, 2, "{r:?}");
    // AND a worker claims and finishes each
    let worker = meter.clients(&sundial_tests::sdk_config(), "worker");
    let store = ExecStore::new(worker.ddb.clone(), env.cfg.executions_table.clone());
    let terms = LeaseTerms { duration_ms: 60_000, skew_margin_ms: 2_000, may_take_over: true };
    for job in ["minutely", "daily"] {
        let k = key(job, "2026-11-30T09:00:00Z");
        let ClaimOutcome::Claimed(c) = store.claim(&k, "w1", &terms, at("2026-11-30T09:00:00.010Z")).await?
        else {
            panic!("{job}: not claimable")
        };
        store.finish(&k, &c.fence, &Finish::Succeeded, at("2026-11-30T09:00:00.050Z")).await?;
    }

    // THEN the tick wrote one unit per fire plus the shard's watermark, no index entry and no
    // job item (neither job moved)
    let usage = meter.snapshot();
    let t = &usage["tick"];
    assert_eq!(t.writes_by_kind.get("execution"), Some(&2.0), "{:?}", t.writes_by_kind);
    assert_eq!(t.writes_by_kind.get("watermark"), Some(&1.0), "{:?}", t.writes_by_kind);
    assert_eq!(t.write_units, 3.0, "{:?}", t.writes_by_kind);
    // AND the worker one unit for each claim and each finish: 3 units a run in all
    let w = &usage["worker"];
    assert_eq!(w.write_units, 4.0, "{:?}", w.writes_by_kind);
    assert_eq!(w.index_write_units, 0.0, "{:?}", w.writes_by_kind);
    let daily_after = jobs::get_job(&env.clients.ddb, &env.cfg, "acme", "daily").await?.expect("daily job");
    assert_eq!(daily_after.version, daily.version);
    assert_eq!(daily_after.next_fire_at, daily.next_fire_at, "a daily-class job is not advanced per fire");
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_every_minute_fire_whose_message_is_lost_is_found_by_verification_and_sent_again(
) -> anyhow::Result<()> {
    // GIVEN an every-minute job in its class: its 12:02 fire is put without an index entry
    let env = TestEnv::with("verify-lost", &["default"], 2).await?;
    create_job(
        &env,
        "acme",
        "minutely",
        definition("0 * * * * *", "UTC", MisfirePolicy::FireOnce),
        at("2026-11-30T12:00:05Z"),
    )
    .await?;
    scan(&env, at("2026-11-30T12:00:05Z"), &ScanOptions::default()).await?;
    scan(&env, at("2026-11-30T12:01:05Z"), &ScanOptions::default()).await?;
    let lost = key("minutely", "2026-11-30T12:02:00Z");
    assert_eq!(open_due(&env, &lost).await?, None, "every-minute fires carry no index entry");
    // AND its message is lost before any worker saw it
    lose_messages(&env).await?;

    // WHEN the system runs on: a tick a minute, the reconciler after each
    let mut resent_at = None;
    for m in 2..7 {
        let now = at("2026-11-30T12:00:05Z") + Duration::minutes(m);
        scan(&env, now, &ScanOptions::default()).await?;
        reconcile(&ctx(&env), now, &ReconcileOptions::default()).await?;
        if resent_at.is_none() && execs(&env).get(&lost, true).await?.is_some_and(|s| s.resends > 0) {
            resent_at = Some(now);
        }
    }

    // THEN once its minute is a grace (2 min) past, verification indexes it and the reconciler
    // sends it again, with a note on its timeline
    let resent_at = resent_at.expect("the lost every-minute fire was never sent again");
    assert!(resent_at <= at("2026-11-30T12:05:05Z"), "re-sent at {resent_at}");
    let snap = execs(&env).get(&lost, true).await?.expect("execution");
    assert_eq!(snap.exec.status, ExecStatus::Ready);
    assert!(
        snap.exec.timeline.iter().any(|e| e.code.as_deref() == Some("Resent")),
        "{:?}",
        snap.exec.timeline
    );
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_paused_before_verification_keeps_its_open_fires_indexed() -> anyhow::Result<()> {
    // GIVEN an every-minute job whose 12:02 fire is queued without an index entry
    let env = TestEnv::with("verify-pause", &["default"], 2).await?;
    let ctl = Control::new(ctx(&env), ControlSettings::default());
    let caller = Caller { tenant: "acme".into(), principal: "ops".into() };
    let def = definition("0 * * * * *", "UTC", MisfirePolicy::FireOnce);
    control::jobs::create(&ctl, &caller, "minutely", def, at("2026-11-30T12:00:05Z")).await?;
    scan(&env, at("2026-11-30T12:00:05Z"), &ScanOptions::default()).await?;
    scan(&env, at("2026-11-30T12:01:05Z"), &ScanOptions::default()).await?;
    let k = key("minutely", "2026-11-30T12:02:00Z");
    assert_eq!(open_due(&env, &k).await?, None);

    // WHEN the job is paused at 12:02:10, before verification reached 12:02: it leaves the
    // every-minute partition the verification pass reads
    control::jobs::set_state(&ctl, &caller, "minutely", JobState::Paused, None, at("2026-11-30T12:02:10Z"))
        .await?;

    // THEN its open 12:02 execution went into the `open` index first
    assert!(open_due(&env, &k).await?.is_some(), "the paused job's 12:02 fire is no longer covered");
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catch_up_fires_put_by_a_scan_that_read_the_job_before_a_pause_are_indexed() -> anyhow::Result<()> {
    // GIVEN an every-minute `fireAll` job in its class since 12:01, and no tick from 12:02 to
    // 12:04 (an outage): the shard's watermark lags at 12:02
    let env = TestEnv::with("verify-pause-race", &["default"], 2).await?;
    let ctl = Arc::new(Control::new(ctx(&env), ControlSettings::default()));
    let caller = Caller { tenant: "acme".into(), principal: "ops".into() };
    let def = definition("0 * * * * *", "UTC", MisfirePolicy::FireAll { cap: 10 });
    control::jobs::create(&ctl, &caller, "minutely", def, at("2026-11-30T12:00:05Z")).await?;
    scan(&env, at("2026-11-30T12:00:05Z"), &ScanOptions::default()).await?;
    scan(&env, at("2026-11-30T12:01:05Z"), &ScanOptions::default()).await?;

    // WHEN the 12:05 tick reads the every-minute partition (the job in it), the job is paused at
    // 12:05:05 (the API's sweep and its indexing of open fires run now), and only then the tick
    // puts the job's catch-up fires from what it read
    let shard = sundial_model::keys::shard_of("acme", "minutely", env.cfg.shards);
    let pauser = ctl.clone();
    let pause = PartitionHook(Arc::new(move |s: u32| {
        let (api, caller) = (pauser.clone(), Caller { tenant: "acme".into(), principal: "ops".into() });
        Box::pin(async move {
            if s == shard {
                let now = at("2026-11-30T12:05:05Z");
                if let Err(e) =
                    control::jobs::set_state(&api, &caller, "minutely", JobState::Paused, None, now).await
                {
                    panic!("pause: {e}");
                }
            }
        })
    }));
    let opts = ScanOptions { after_class_reads: Some(pause), ..Default::default() };
    scan(&env, at("2026-11-30T12:05:05Z"), &opts).await?;

    // THEN the missed 12:03 and 12:04 fires (the job was enabled then) exist and are in the
    // `open` index, though the job left the partition the verification pass reads: a lost
    // message of theirs is still repaired
    for t in ["2026-11-30T12:03:00Z", "2026-11-30T12:04:00Z"] {
        let k = key("minutely", t);
        assert!(execs(&env).get(&k, true).await?.is_some(), "{t}: the racing scan did not put it");
        assert!(open_due(&env, &k).await?.is_some(), "{t}: put after the pause's indexing, and not indexed");
    }
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daily_job_stays_in_its_class_and_leaves_it_before_its_zone_changes_utc_minute(
) -> anyhow::Result<()> {
    // GIVEN 09:00 New York every day: 14:00 UTC in winter, 13:00 UTC from 2027-03-14 (DST).
    // (Instants in the future: MiniStack's TTL reaper deletes executions whose retention ended
    // by the wall clock, docs/emulators.md.)
    let env = TestEnv::with("verify-daily", &["default"], 1).await?;
    create_job(
        &env,
        "acme",
        "ny",
        definition("0 0 9 * * *", "America/New_York", MisfirePolicy::FireOnce),
        at("2027-03-11T13:00:00Z"),
    )
    .await?;
    let class = |env: &TestEnv| {
        let (ddb, cfg) = (env.clients.ddb.clone(), env.cfg.clone());
        async move { jobs::get_job(&ddb, &cfg, "acme", "ny").await.map(|j| j.expect("job")) }
    };

    // WHEN ticks run just before each fire (the watermark kept current in between)
    scan(&env, at("2027-03-11T13:59:30Z"), &ScanOptions::default()).await?;
    assert_eq!(class(&env).await?.due_class, DueClass::Daily(14 * 60), "promoted at its first fire");
    let before = class(&env).await?;
    ticks_ran_until(&env, at("2027-03-12T13:59:00Z")).await?;
    scan(&env, at("2027-03-12T13:59:30Z"), &ScanOptions::default()).await?;
    let after = class(&env).await?;
    assert_eq!((after.version, after.next_fire_at), (before.version, before.next_fire_at), "not moved");
    assert_eq!(open_due(&env, &key("ny", "2027-03-12T14:00:00Z")).await?, None, "put without an index entry");
    ticks_ran_until(&env, at("2027-03-13T13:59:00Z")).await?;
    scan(&env, at("2027-03-13T13:59:30Z"), &ScanOptions::default()).await?;
    // (its next fire, 2027-03-14, is at 13:00 UTC: it left the 14:00 class at this fire)
    assert_eq!(class(&env).await?.due_class, DueClass::Daily(13 * 60));
    ticks_ran_until(&env, at("2027-03-14T12:59:00Z")).await?;
    scan(&env, at("2027-03-14T12:59:30Z"), &ScanOptions::default()).await?;

    // THEN every 09:00 New York fire was put, the one after the change at its new UTC hour
    let fired: Vec<DateTime<Utc>> =
        executions(&env, "acme", "ny").await?.iter().map(|e| e.scheduled_at).collect();
    assert_eq!(
        fired,
        vec![
            at("2027-03-11T14:00:00Z"),
            at("2027-03-12T14:00:00Z"),
            at("2027-03-13T14:00:00Z"),
            at("2027-03-14T13:00:00Z")
        ]
    );
    // AND the fire put as the job left its class went in with its index entry, and so did its
    // earlier open fire that verification had not reached yet
    assert!(open_due(&env, &key("ny", "2027-03-13T14:00:00Z")).await?.is_some());
    assert!(open_due(&env, &key("ny", "2027-03-12T14:00:00Z")).await?.is_some());
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daily_business_calendar_fire_is_verified_by_a_process_that_never_loaded_its_calendar(
) -> anyhow::Result<()> {
    use sundial_model::{Execution, Job, OpsAction, OpsEntry};
    use sundial_schedule::{BusinessCalendarRef, BusinessCalendarSpec, BusinessDays, Roll, Schedule};
    use sundial_store::calendars::{put_calendar, StoredCalendar};
    // Review 2026-12 finding 6. GIVEN a weekday 09:00 job on business calendar `desk` v1 (stored)
    // in the daily class, and its Monday 09:00 fire put without an index entry by another
    // process's walk (this one never loaded the calendar)
    let env = TestEnv::with("verify-coldcal", &["default"], 1).await?;
    let created = at("2026-11-29T12:00:00Z");
    let spec = BusinessCalendarSpec::default();
    let cal = StoredCalendar {
        tenant: "coldcal".into(),
        id: "desk".into(),
        version: 1,
        deleted: false,
        spec: spec.clone(),
        created_at: created,
        updated_at: created,
    };
    let audit = OpsEntry::new("test", OpsAction::CalendarCreate, "desk", created).versions(None, Some(1));
    put_calendar(&env.clients.ddb, &env.cfg.jobs_table, None, &cal, &audit, 86_400).await?;
    let days = std::sync::Arc::new(BusinessDays::single("desk", 1, &spec)?);
    let mut def = definition("0 0 9 * * MON-FRI", "UTC", MisfirePolicy::FireOnce);
    def.schedule.business_calendar =
        Some(BusinessCalendarRef { calendar: "desk".into(), roll: Roll::Following });
    let mut job = Job::new_with(&env.cfg, "coldcal", "daily", def, created, Some(days.clone()))?;
    assert_eq!(job.next_fire_at, Some(at("2026-11-30T09:00:00Z")));
    job.due_class = DueClass::Daily(540);
    jobs::put_new_job(&env.clients.ddb, &env.cfg, &job).await?;
    let schedule = Schedule::parse_with(&job.definition.schedule, job.anchor, Some(days))?;
    let fire = Execution::ready(
        &job,
        &schedule,
        at("2026-11-30T09:00:00Z"),
        None,
        at("2026-11-30T08:59:00Z"),
        "tick:other",
    );
    execs(&env).put_new_unindexed(&fire).await?;
    // AND its message lost; the shard walked to 09:01 and verified to 08:58
    watermarks::advance(
        &env.clients.ddb,
        &env.cfg.jobs_table,
        0,
        sundial_model::keys::minute_of(at("2026-11-30T09:01:00Z")),
        Some(sundial_model::keys::minute_of(at("2026-11-30T08:58:00Z"))),
    )
    .await?;
    // WHEN this process's tick at 09:04:10 verifies 08:59..09:01
    let r = scan(&env, at("2026-11-30T09:04:10Z"), &ScanOptions::default()).await?;
    // THEN the 09:00 fire is in the `open` index, where the reconciler will re-send it
    let k = ExecKey {
        tenant: "coldcal".into(),
        job_id: "daily".into(),
        scheduled_ms: at("2026-11-30T09:00:00Z").timestamp_millis(),
        child: None,
    };
    assert!(open_due(&env, &k).await?.is_some(), "the 09:00 fire was never indexed: {r:?}");
    env.cleanup().await;
    Ok(())
}
