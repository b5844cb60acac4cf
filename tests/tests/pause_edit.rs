//! Queued-ahead executions follow the job's pause, resume and edit:
//! the tick and the API queue fires up to a minute ahead, so a change made now must decide the
//! fate of executions that already exist for later instants. Fixed instants, the control plane's
//! own functions, the real SDK against the emulator.

use chrono::{DateTime, Utc};
use std::sync::Arc;
use sundial_core::control::{self, Caller, Control, ControlSettings};
use sundial_core::execution::target::in_process::Handlers;
use sundial_core::trigger::scan::{PartitionHook, ScanOptions};
use sundial_model::{ExecStatus, Execution, Job, JobDefinition, JobState, OpsAction, OpsEntry};
use sundial_schedule::{BusinessCalendarRef, BusinessCalendarSpec, MisfirePolicy, Roll, ScheduleSpec};
use sundial_store::executions::ExecKey;
use sundial_store::jobs::{get_job, put_job_change, put_new_job, Expect};
use sundial_tests::fixtures;
use sundial_tests::trigger::{at, create_job, ctx, definition, executions, scan};
use sundial_tests::TestEnv;

fn caller() -> Caller {
    Caller { tenant: "acme".into(), principal: "ops".into() }
}

fn at_instant<'a>(es: &'a [Execution], t: &str) -> &'a Execution {
    let t = at(t);
    es.iter().find(|e| e.scheduled_at == t).unwrap_or_else(|| panic!("no execution at {t}"))
}

async fn set_state(ctl: &Control, job: &str, state: JobState, now: DateTime<Utc>) -> anyhow::Result<()> {
    control::jobs::set_state(ctl, &caller(), job, state, None, now).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_inside_the_queued_ahead_window_runs_the_fire_it_reenabled() -> anyhow::Result<()> {
    // GIVEN an every-minute job created at 12:00:05: its 12:01 fire is queued ahead
    let env = TestEnv::new("pause-resume").await?;
    let ctl = Control::new(ctx(&env), ControlSettings::default());
    let def = definition("0 * * * * *", "UTC", MisfirePolicy::FireOnce);
    control::jobs::create(&ctl, &caller(), "minutely", def, at("2026-11-30T12:00:05Z")).await?;
    assert_eq!(
        at_instant(&executions(&env, "acme", "minutely").await?, "2026-11-30T12:01:00Z").status,
        ExecStatus::Ready
    );

    // WHEN it is paused at 12:00:20 and resumed at 12:00:40, both before 12:01
    set_state(&ctl, "minutely", JobState::Paused, at("2026-11-30T12:00:20Z")).await?;
    set_state(&ctl, "minutely", JobState::Enabled, at("2026-11-30T12:00:40Z")).await?;

    // THEN the 12:01 fire will run: the job was enabled at that instant
    let es = executions(&env, "acme", "minutely").await?;
    let e = at_instant(&es, "2026-11-30T12:01:00Z");
    assert_eq!(e.status, ExecStatus::Ready, "timeline {:?}", e.timeline);
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_moves_queued_ahead_fires_to_the_new_version_and_cancels_the_ones_it_removed(
) -> anyhow::Result<()> {
    // GIVEN a job firing every 30 s created at 12:00:05 (v1): 12:00:30, 12:01:00 and 12:01:30
    // are queued ahead
    let env = TestEnv::new("edit-queued").await?;
    let ctl = Control::new(ctx(&env), ControlSettings::default());
    let v1 =
        definition("0,30 * * * * *", "UTC", MisfirePolicy::FireOnce).with_params(serde_json::json!({"v": 1}));
    control::jobs::create(&ctl, &caller(), "halfminutely", v1, at("2026-11-30T12:00:05Z")).await?;
    assert_eq!(executions(&env, "acme", "halfminutely").await?.len(), 3);

    // WHEN at 12:00:20 it is edited to fire on the minute only, with new parameters (v2)
    let v2 =
        definition("0 * * * * *", "UTC", MisfirePolicy::FireOnce).with_params(serde_json::json!({"v": 2}));
    control::jobs::update(&ctl, &caller(), "halfminutely", 1, v2, at("2026-11-30T12:00:20Z")).await?;

    // THEN the instant both versions share runs v2, and the instants only v1 had do not run
    let es = executions(&env, "acme", "halfminutely").await?;
    let shared = at_instant(&es, "2026-11-30T12:01:00Z");
    assert_eq!(
        (shared.status, shared.def_version, shared.definition.params.clone()),
        (ExecStatus::Ready, 2, serde_json::json!({"v": 2})),
        "timeline {:?}",
        shared.timeline
    );
    for t in ["2026-11-30T12:00:30Z", "2026-11-30T12:01:30Z"] {
        let e = at_instant(&es, t);
        assert_eq!(e.status, ExecStatus::Canceled, "{t}: only v1 fires then; timeline {:?}", e.timeline);
    }
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fire_held_through_its_instant_waits_for_the_resume_which_cancels_it_without_a_catch_up(
) -> anyhow::Result<()> {
    // GIVEN an every-minute job created at 12:00:05 (12:01 queued ahead), paused at 12:00:20
    let env = TestEnv::new("pause-held").await?;
    let hook = fixtures::WebhookServer::start(vec![]).await?;
    let mut def = fixtures::http_definition(&hook.url("/run"));
    def.schedule = ScheduleSpec::new("0 * * * * *", "UTC");
    def.retry.max_age_secs = 3_650 * 86_400; // the fixed instants are days before the wall clock
    let ctl = Control::new(ctx(&env), ControlSettings::default());
    control::jobs::create(&ctl, &caller(), "minutely", def, at("2026-11-30T12:00:05Z")).await?;
    let v = control::jobs::set_state(
        &ctl,
        &caller(),
        "minutely",
        JobState::Paused,
        None,
        at("2026-11-30T12:00:20Z"),
    )
    .await?;
    let e = at_instant(&executions(&env, "acme", "minutely").await?, "2026-11-30T12:01:00Z").clone();
    assert_eq!(v.held, vec![e.id()]);

    // WHEN a worker receives its message after 12:01, while the job is paused
    deliver(&env, &e).await?;
    // THEN it stays READY and held: the resume decides (a catch-up would run it)
    let s = fixtures::snapshot(&env, &ExecKey::of(&e)).await?;
    assert_eq!(
        (s.exec.status, s.held.is_some()),
        (ExecStatus::Ready, true),
        "timeline {:?}",
        s.exec.timeline
    );
    // WHEN the job is resumed after 12:01 without a catch-up, and the message comes again
    let resumed = control::jobs::set_state(
        &ctl,
        &caller(),
        "minutely",
        JobState::Enabled,
        None,
        at("2026-11-30T12:01:30Z"),
    )
    .await?;
    deliver(&env, &e).await?;

    // THEN the resume canceled it (paused at its instant), audited, and the target was never
    // called
    assert_eq!(resumed.canceled, vec![e.id()]);
    let s = fixtures::snapshot(&env, &ExecKey::of(&e)).await?;
    assert_eq!(s.exec.status, ExecStatus::Canceled, "timeline {:?}", s.exec.timeline);
    let codes: Vec<Option<String>> = s.exec.timeline.iter().map(|ev| ev.code.clone()).collect();
    assert_eq!(codes, vec![None, Some("HeldByPause".into()), Some("Paused".into())]);
    assert!(hook.received().is_empty());
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fire_held_through_a_long_pause_is_no_lost_delivery_and_a_delete_cancels_it() -> anyhow::Result<()>
{
    // GIVEN an every-minute job created at 12:00:05 (12:01 queued ahead), paused at 12:00:20,
    // whose 12:01 fire a worker received at its instant and left READY and held
    let env = TestEnv::new("pause-long").await?;
    let ctl = Control::new(ctx(&env), ControlSettings::default());
    let hook = webhook_job(&ctl, "minutely", "0 * * * * *").await?;
    set_state(&ctl, "minutely", JobState::Paused, at("2026-11-30T12:00:20Z")).await?;
    let e = at_instant(&executions(&env, "acme", "minutely").await?, "2026-11-30T12:01:00Z").clone();
    deliver(&env, &e).await?;

    // WHEN the reconciler looks past its grace, and again past its backoff
    let opts = sundial_core::reconcile::ReconcileOptions::default();
    let ctx = ctx(&env);
    let first = sundial_core::reconcile::reconcile(&ctx, at("2026-11-30T12:03:10Z"), &opts).await?;
    let second = sundial_core::reconcile::reconcile(&ctx, at("2026-11-30T12:07:20Z"), &opts).await?;

    // THEN it re-sends the held fire once a backoff, for its worker to judge the hold again, but
    // not as a lost delivery (the alarmed count) nor as a missed start
    for r in [&first, &second] {
        assert_eq!((r.resent_total(), r.held_resent, r.missed_total()), (0, 1, 0), "{r:?}");
    }
    let s = fixtures::snapshot(&env, &ExecKey::of(&e)).await?;
    assert_eq!(
        (s.exec.status, s.held.is_some()),
        (ExecStatus::Ready, true),
        "timeline {:?}",
        s.exec.timeline
    );

    // WHEN the job is deleted, still paused
    let deleted = control::jobs::set_state(
        &ctl,
        &caller(),
        "minutely",
        JobState::Deleted,
        None,
        at("2026-11-30T12:08:00Z"),
    )
    .await?;

    // THEN the delete cancels it (paused at its instant), and the target was never called
    assert!(deleted.canceled.contains(&e.id()), "{deleted:?}");
    let s = fixtures::snapshot(&env, &ExecKey::of(&e)).await?;
    assert_eq!(s.exec.status, ExecStatus::Canceled, "timeline {:?}", s.exec.timeline);
    assert_eq!(s.exec.last_error.map(|x| x.0).as_deref(), Some("Paused"));
    assert!(hook.received().is_empty());
    env.cleanup().await;
    Ok(())
}

/// A scan that read an every-minute job (stored at 12:00:05, not dispatched yet) before a pause
/// at 12:00:10 and put its 12:01 fire after the API's sweep: unheld, its advance lost. Returns
/// the control plane, the job's webhook and the 12:01 execution.
async fn scan_racing_a_pause(
    env: &TestEnv,
) -> anyhow::Result<(Arc<Control>, fixtures::WebhookServer, Execution)> {
    let hook = fixtures::WebhookServer::start(vec![]).await?;
    let mut def = fixtures::http_definition(&hook.url("/run"));
    def.schedule = ScheduleSpec::new("0 * * * * *", "UTC");
    def.retry.max_age_secs = 3_650 * 86_400; // the fixed instants are days before the wall clock
    create_job(env, "acme", "minutely", def, at("2026-11-30T12:00:05Z")).await?;
    let shard = sundial_model::keys::shard_of("acme", "minutely", env.cfg.shards);
    let api = Arc::new(Control::new(ctx(env), ControlSettings::default()));
    let pauser = api.clone();
    let pause = PartitionHook(Arc::new(move |s: u32| {
        let api = pauser.clone();
        Box::pin(async move {
            if s == shard {
                let now = at("2026-11-30T12:00:10Z");
                if let Err(e) =
                    control::jobs::set_state(&api, &caller(), "minutely", JobState::Paused, None, now).await
                {
                    panic!("pause: {e}");
                }
            }
        })
    }));
    let opts = ScanOptions { between_class_reads: Some(pause), ..Default::default() };
    scan(env, at("2026-11-30T12:00:10Z"), &opts).await?;
    let e = at_instant(&executions(env, "acme", "minutely").await?, "2026-11-30T12:01:00Z").clone();
    Ok((api, hook, e))
}

/// A worker handles one delivery of `e`'s message (after its instant, by the wall clock).
async fn deliver(env: &TestEnv, e: &Execution) -> anyhow::Result<()> {
    let (w, _) = fixtures::worker_with(env, fixtures::settings("w"), Handlers::new())?;
    let body = serde_json::to_string(&fixtures::message_of(e, at("2026-11-30T12:00:10Z")))?;
    let stop = tokio_util::sync::CancellationToken::new();
    w.handle("default", &body, &sundial_core::execution::worker::NoExtend, &stop).await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fire_put_by_a_scan_that_raced_a_pause_does_not_run() -> anyhow::Result<()> {
    // Found by the trigger-plane model check (`Flaw::UnfencedPut`). GIVEN a tick at 12:00:10
    // that read an every-minute job before it was paused (12:00:10) and put its 12:01 fire after
    // the API's sweep
    let env = TestEnv::new("pause-race").await?;
    let (api, hook, e) = scan_racing_a_pause(&env).await?;

    // WHEN a worker receives its message after 12:01, the job still paused
    deliver(&env, &e).await?;

    // THEN the fire does not run: the job was paused at its instant, and it still is, so the
    // worker holds it for the resume to decide, as the pause's sweep would have (a catch-up may
    // replay it: the full mix's seed 1053, where it was canceled and `catchUp: all` lost it)
    let s = fixtures::snapshot(&env, &ExecKey::of(&e)).await?;
    assert_eq!(
        (s.exec.status, s.held.is_some()),
        (ExecStatus::Ready, true),
        "timeline {:?}",
        s.exec.timeline
    );
    assert!(hook.received().is_empty(), "the target was called for a paused fire");

    // WHEN the job is resumed without a catch-up
    let now = at("2026-11-30T12:05:00Z");
    control::jobs::set_state(&api, &caller(), "minutely", JobState::Enabled, None, now).await?;

    // THEN the held fire is canceled, paused at its instant, and never ran
    let s = fixtures::snapshot(&env, &ExecKey::of(&e)).await?;
    assert_eq!(s.exec.status, ExecStatus::Canceled, "timeline {:?}", s.exec.timeline);
    assert_eq!(s.exec.last_error.map(|x| x.0).as_deref(), Some("Paused"));
    assert!(hook.received().is_empty(), "the target was called for a paused fire");
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_racing_put_of_a_fire_paused_at_its_instant_stays_canceled_after_a_later_resume(
) -> anyhow::Result<()> {
    // Found by the trigger-plane model check (its first documented limit). GIVEN the same racing
    // put of the 12:01 fire of a job paused at 12:00:10
    let env = TestEnv::new("pause-race-resume").await?;
    let (api, hook, e) = scan_racing_a_pause(&env).await?;

    // WHEN the job is resumed at 12:01:30, after that instant, and only then a worker receives
    // the fire's message
    let resume = at("2026-11-30T12:01:30Z");
    control::jobs::set_state(&api, &caller(), "minutely", JobState::Enabled, None, resume).await?;
    deliver(&env, &e).await?;

    // THEN the fire does not run: the job was paused at its instant
    let s = fixtures::snapshot(&env, &ExecKey::of(&e)).await?;
    assert_eq!(s.exec.status, ExecStatus::Canceled, "timeline {:?}", s.exec.timeline);
    assert!(hook.received().is_empty(), "the target was called for a paused fire");
    env.cleanup().await;
    Ok(())
}

/// An every-minute job on a local webhook, created at 12:00:05 through the API (its 12:01 fire
/// queued ahead), with `expr` as its schedule.
async fn webhook_job(ctl: &Control, id: &str, expr: &str) -> anyhow::Result<fixtures::WebhookServer> {
    let hook = fixtures::WebhookServer::start(vec![]).await?;
    let mut def = fixtures::http_definition(&hook.url("/run"));
    def.schedule = ScheduleSpec::new(expr, "UTC");
    def.retry.max_age_secs = 3_650 * 86_400; // the fixed instants are days before the wall clock
    control::jobs::create(ctl, &caller(), id, def, at("2026-11-30T12:00:05Z")).await?;
    Ok(hook)
}

/// Commits a pause or resume of `cur` the way `set_state` does, without the sweep that follows
/// it: what is stored while that sweep has not run yet, or after it failed part-way.
async fn commit_only(env: &TestEnv, cur: &Job, state: JobState, now: DateTime<Utc>) -> anyhow::Result<Job> {
    let mut job = Job { state, version: cur.version + 1, updated_at: now, ..cur.clone() };
    job.paused = match state {
        JobState::Paused => Some((now, None)),
        _ => cur.paused.map(|(from, _)| (from, Some(now))),
    };
    let action = if state == JobState::Paused { OpsAction::Pause } else { OpsAction::Resume };
    let audit = OpsEntry::new("ops", action, &cur.job_id, now).versions(Some(cur.version), Some(job.version));
    put_job_change(&env.clients.ddb, &env.cfg, Expect::Version(cur.version), &job, None, &audit, 86_400)
        .await?;
    Ok(job)
}

async fn job_now(env: &TestEnv, id: &str) -> anyhow::Result<Job> {
    get_job(&env.clients.ddb, &env.cfg, "acme", id).await?.ok_or_else(|| anyhow::anyhow!("no job {id}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pauses_hold_landing_after_a_concurrent_resume_does_not_cancel_the_fire() -> anyhow::Result<()> {
    // GIVEN an every-minute job created at 12:00:05 (12:01 queued ahead), and a pause at 12:00:20
    // that committed and read the 12:01 fire (unheld) for its sweep
    let env = TestEnv::new("pause-resume-race").await?;
    let ctl = Control::new(ctx(&env), ControlSettings::default());
    let hook = webhook_job(&ctl, "minutely", "0 * * * * *").await?;
    let fire = at_instant(&executions(&env, "acme", "minutely").await?, "2026-11-30T12:01:00Z").clone();
    let paused =
        commit_only(&env, &job_now(&env, "minutely").await?, JobState::Paused, at("2026-11-30T12:00:20Z"))
            .await?;

    // WHEN a concurrent resume commits at 12:00:30 and sweeps (nothing held yet), and only then
    // the pause's hold lands
    set_state(&ctl, "minutely", JobState::Enabled, at("2026-11-30T12:00:30Z")).await?;
    let held =
        ctl.execs.hold(&fire, paused.version, "ops", at("2026-11-30T12:00:31Z").timestamp_millis()).await?;
    assert!(held, "the stale hold lands: its condition is on the execution only");
    deliver(&env, &fire).await?;

    // THEN the fire runs: the job was enabled at 12:01, and the hold was stale
    let s = fixtures::snapshot(&env, &ExecKey::of(&fire)).await?;
    assert_eq!(s.exec.status, ExecStatus::Succeeded, "timeline {:?}", s.exec.timeline);
    assert_eq!(hook.received().len(), 1);
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_retried_after_its_sweep_failed_part_way_releases_the_holds_left_behind(
) -> anyhow::Result<()> {
    // GIVEN a job firing every 30 s created at 12:00:05 (12:00:30, 12:01:00, 12:01:30 queued),
    // paused at 12:00:10 (all three held)
    let env = TestEnv::new("resume-partial").await?;
    let ctl = Control::new(ctx(&env), ControlSettings::default());
    let hook = webhook_job(&ctl, "halfminutely", "0,30 * * * * *").await?;
    let v = control::jobs::set_state(
        &ctl,
        &caller(),
        "halfminutely",
        JobState::Paused,
        None,
        at("2026-11-30T12:00:10Z"),
    )
    .await?;
    assert_eq!(v.held.len(), 3);

    // WHEN a resume at 12:00:15 commits, and its sweep releases the first hold and then fails
    // (the API answers 5xx), and the client retries the resume at 12:00:16
    let cur = job_now(&env, "halfminutely").await?;
    commit_only(&env, &cur, JobState::Enabled, at("2026-11-30T12:00:15Z")).await?;
    let es = executions(&env, "acme", "halfminutely").await?;
    let first = at_instant(&es, "2026-11-30T12:00:30Z");
    assert!(ctl.execs.release_hold(first, "ops", at("2026-11-30T12:00:15Z").timestamp_millis()).await?);
    let retry = control::jobs::set_state(
        &ctl,
        &caller(),
        "halfminutely",
        JobState::Enabled,
        None,
        at("2026-11-30T12:00:16Z"),
    )
    .await?;

    // THEN the retry sweeps again: the two holds left behind are released
    assert_eq!(retry.released.len(), 2, "{retry:?}");
    for t in ["2026-11-30T12:01:00Z", "2026-11-30T12:01:30Z"] {
        let s = fixtures::snapshot(&env, &ExecKey::of(at_instant(&es, t))).await?;
        assert_eq!(s.held, None, "{t}: timeline {:?}", s.exec.timeline);
    }
    // AND the last fire runs when delivered
    let last = at_instant(&es, "2026-11-30T12:01:30Z");
    deliver(&env, last).await?;
    let s = fixtures::snapshot(&env, &ExecKey::of(last)).await?;
    assert_eq!(s.exec.status, ExecStatus::Succeeded, "timeline {:?}", s.exec.timeline);
    assert_eq!(hook.received().len(), 1);
    env.cleanup().await;
    Ok(())
}

/// A job on the business calendar `hol` (rolling `following`) with `expr` in `tz`, on `hook`.
fn calendar_definition(hook: &fixtures::WebhookServer, expr: &str, tz: &str) -> JobDefinition {
    let mut def = fixtures::http_definition(&hook.url("/run"));
    def.schedule = ScheduleSpec::new(expr, tz);
    def.schedule.business_calendar =
        Some(BusinessCalendarRef { calendar: "hol".into(), roll: Roll::Following });
    def.retry.max_age_secs = 3_650 * 86_400; // the fixed instants are days before the wall clock
    def
}

fn holidays(days: &[&str]) -> BusinessCalendarSpec {
    BusinessCalendarSpec { holidays: days.iter().map(|d| d.to_string()).collect(), ..Default::default() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_calendar_edit_declaring_today_a_holiday_stops_its_queued_and_racing_fires_only(
) -> anyhow::Result<()> {
    // GIVEN the calendar `hol` (Christmas only) on Tuesday 2026-12-01 08:59:05, and two jobs on it
    // created through the API: `settle` at 09:00 UTC (today's fire queued ahead), and `evening`
    // at 22:00:30 in Pago Pago, i.e. 09:00:30 UTC, still Monday 11-30 there (queued ahead)
    let env = TestEnv::new("cal-follow").await?;
    let api = Arc::new(Control::new(ctx(&env), ControlSettings::default()));
    let t0 = at("2026-12-01T08:59:05Z");
    control::calendars::put(&api, &caller(), "hol", None, holidays(&["2026-12-25"]), t0).await?;
    let (settle_hook, evening_hook, late_hook) = (
        fixtures::WebhookServer::start(vec![]).await?,
        fixtures::WebhookServer::start(vec![]).await?,
        fixtures::WebhookServer::start(vec![]).await?,
    );
    let settle = calendar_definition(&settle_hook, "0 0 9 * * *", "UTC");
    control::jobs::create(&api, &caller(), "settle", settle, t0).await?;
    let evening = calendar_definition(&evening_hook, "30 0 22 * * *", "Pacific/Pago_Pago");
    control::jobs::create(&api, &caller(), "evening", evening, t0).await?;
    // AND a third job, `late` (09:00 UTC), stored but not dispatched yet
    let days = control::calendars::resolve_latest(&api, "acme", "hol", "calendar").await?;
    let late = Job::new_with(
        &env.cfg,
        "acme",
        "late",
        calendar_definition(&late_hook, "0 0 9 * * *", "UTC"),
        t0,
        Some(days),
    )?;
    put_new_job(&env.clients.ddb, &env.cfg, &late).await?;

    // WHEN at 08:59:30 the calendar is edited to make today a holiday, while a scan that read
    // `late` before the edit puts its 09:00 fire after the edit's re-plan
    let shard = sundial_model::keys::shard_of("acme", "late", env.cfg.shards);
    let editor = api.clone();
    let edit = PartitionHook(Arc::new(move |s: u32| {
        let api = editor.clone();
        Box::pin(async move {
            if s == shard {
                let now = at("2026-12-01T08:59:30Z");
                let spec = holidays(&["2026-12-01", "2026-12-25"]);
                if let Err(e) = control::calendars::put(&api, &caller(), "hol", Some(1), spec, now).await {
                    panic!("calendar edit: {e}");
                }
            }
        })
    }));
    let opts = ScanOptions { between_class_reads: Some(edit), ..Default::default() };
    scan(&env, at("2026-12-01T08:59:30Z"), &opts).await?;
    let settle_fire = at_instant(&executions(&env, "acme", "settle").await?, "2026-12-01T09:00:00Z").clone();
    let evening_fire =
        at_instant(&executions(&env, "acme", "evening").await?, "2026-12-01T09:00:30Z").clone();
    let late_fire = at_instant(&executions(&env, "acme", "late").await?, "2026-12-01T09:00:00Z").clone();
    for e in [&settle_fire, &evening_fire, &late_fire] {
        deliver(&env, e).await?;
    }

    // THEN today's fires on the old calendar do not run, superseded and audited: the one queued
    // ahead and the one the racing scan put
    for (e, hook) in [(&settle_fire, &settle_hook), (&late_fire, &late_hook)] {
        let s = fixtures::snapshot(&env, &ExecKey::of(e)).await?;
        assert_eq!(s.exec.status, ExecStatus::Canceled, "{}: timeline {:?}", e.id(), s.exec.timeline);
        assert_eq!(s.exec.last_error.map(|x| x.0).as_deref(), Some("Superseded"), "{}", e.id());
        assert!(hook.received().is_empty(), "{}: the target was called on a holiday", e.id());
    }
    // AND the fire the new calendar keeps (Monday in Pago Pago) runs
    let s = fixtures::snapshot(&env, &ExecKey::of(&evening_fire)).await?;
    assert_eq!(s.exec.status, ExecStatus::Succeeded, "timeline {:?}", s.exec.timeline);
    assert_eq!(evening_hook.received().len(), 1);
    env.cleanup().await;
    Ok(())
}

/// The minutes (HH:MM) covered by the job's executions with version `v`.
fn covered_minutes(es: &[Execution], v: u64) -> Vec<String> {
    let of_v: Vec<Execution> = es.iter().filter(|e| e.def_version == v).cloned().collect();
    let covered = sundial_tests::trigger::covered_minutes(&of_v);
    covered.into_iter().flat_map(|(m, by)| std::iter::repeat_n(m, by.len())).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_edit_or_delete_after_a_tick_outage_runs_the_fires_owed_before_it() -> anyhow::Result<()> {
    for change in ["pause", "edit", "delete"] {
        // GIVEN an every-minute fireOnce job, scanned at 10:00 (queued through 10:01), then a
        // tick outage: its fires from 10:02 on are owed but not created
        let env = TestEnv::new(&format!("owed-{change}")).await?;
        let ctl = Control::new(ctx(&env), ControlSettings::default());
        let v1 = definition("0 * * * * *", "UTC", MisfirePolicy::FireOnce);
        control::jobs::create(&ctl, &caller(), "minutely", v1, at("2026-11-30T09:59:30Z")).await?;
        scan(&env, at("2026-11-30T10:00:00Z"), &ScanOptions::default()).await?;
        // WHEN the job is paused, edited or deleted at 10:30:10, before the tick is back
        let now = at("2026-11-30T10:30:10Z");
        match change {
            "pause" => set_state(&ctl, "minutely", JobState::Paused, now).await?,
            "delete" => set_state(&ctl, "minutely", JobState::Deleted, now).await?,
            _ => {
                let v2 = definition("0 */5 * * * *", "UTC", MisfirePolicy::FireOnce);
                control::jobs::update(&ctl, &caller(), "minutely", 1, v2, now).await?;
            }
        }
        // THEN the fires due while it was enabled under v1 run once each ("pause decides by the
        // instant", docs/api.md): 10:02–10:29 in one batch (missed), 10:30 on its own
        let es = executions(&env, "acme", "minutely").await?;
        let want: Vec<String> = (0..=30).map(|m| format!("10:{m:02}")).collect();
        assert_eq!(covered_minutes(&es, 1), want, "{change}: {es:#?}");
        let owed = at_instant(&es, "2026-11-30T10:30:00Z");
        assert_eq!(owed.status, ExecStatus::Ready, "{change}: {:?}", owed.timeline);
        // AND a worker claims the batch (delivered at the change's instant) and the on-time fire
        // as they were due: not canceled as paused or deleted, not moved to the edited version
        let batch = at_instant(&es, "2026-11-30T10:02:00Z");
        for e in [batch, owed] {
            deliver(&env, e).await?;
            let s = fixtures::snapshot(&env, &ExecKey::of(e)).await?;
            let ran = s.exec.timeline.iter().any(|a| a.to == ExecStatus::Running);
            assert!(ran, "{change} {}: {:?}", e.id(), s.exec.timeline);
            assert_eq!(s.exec.def_version, 1, "{change} {}", e.id());
        }
        env.cleanup().await;
    }
    Ok(())
}

/// Minutes `es` stand for, K6-aware: a batch's range without the instants it excepted, each
/// ordinary fire that was not canceled.
fn minutes_run(es: &[Execution]) -> std::collections::BTreeMap<String, Vec<String>> {
    let mut out: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for e in es.iter().filter(|e| e.status != ExecStatus::Canceled) {
        let (a, b) = e.missed_range.unwrap_or((e.scheduled_at, e.scheduled_at));
        let mut m = a;
        while m <= b {
            if !e.missed_except.contains(&m) {
                out.entry(m.format("%H:%M").to_string()).or_default().push(e.id());
            }
            m += chrono::Duration::minutes(1);
        }
    }
    out
}

/// An every-minute `fireOnce` job of acme's calling `hook`, and its schedule. The worker
/// corrects its clock to the emulator's, so the fixed instants the K6 tests use are days old:
/// its age limit is ten years.
async fn minutely_fire_once(
    env: &TestEnv,
    hook: &fixtures::WebhookServer,
) -> anyhow::Result<(Job, sundial_schedule::Schedule)> {
    let mut def = fixtures::http_definition(&hook.url("/run"));
    def.schedule = ScheduleSpec::new("0 * * * * *", "UTC");
    def.misfire = MisfirePolicy::FireOnce;
    def.retry.max_age_secs = 3_650 * 86_400;
    let job = create_job(env, "acme", "minutely", def, at("2026-11-30T09:59:30Z")).await?;
    let sch = sundial_schedule::Schedule::parse(&job.definition.schedule, job.anchor)?;
    Ok((job, sch))
}

/// One worker's handling of `e`'s message (sent at `sent`), as a pool's delivery would.
async fn handle_once(w: &sundial_core::execution::worker::Worker, e: &Execution, sent: DateTime<Utc>) {
    let body = serde_json::to_string(&fixtures::message_of(e, sent)).unwrap_or_default();
    let stop = tokio_util::sync::CancellationToken::new();
    w.handle("default", &body, &sundial_core::execution::worker::NoExtend, &stop).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fire_once_batch_and_ordinary_fires_put_in_its_range_by_another_scan_run_each_instant_once(
) -> anyhow::Result<()> {
    // The simulator's seed 7003 (K6): one scan put a `fireOnce` batch for 10:02–10:10 of an
    // every-minute job, and another, planning the job from a later position, put ordinary fires
    // at 10:04, 10:06 and 10:08 after the first one's read. Three orders of claims:
    // 10:04 is claimed before the batch, 10:06 after it, and 10:08 is put only after the batch
    // was claimed. One worker handles each delivery in turn.
    let env = TestEnv::new("batch-k6").await?;
    let hook = fixtures::WebhookServer::start(vec![]).await?;
    let (job, sch) = minutely_fire_once(&env, &hook).await?;
    let put_at = at("2026-11-30T10:12:00Z");
    let ready = |t: &str, range: Option<(&str, &str)>| {
        Execution::ready(&job, &sch, at(t), range.map(|(a, b)| (at(a), at(b))), put_at, "tick")
    };
    let batch = ready("2026-11-30T10:02:00Z", Some(("2026-11-30T10:02:00Z", "2026-11-30T10:10:00Z")));
    let (early, late, later) = (
        ready("2026-11-30T10:04:00Z", None),
        ready("2026-11-30T10:06:00Z", None),
        ready("2026-11-30T10:08:00Z", None),
    );
    for e in [&batch, &early, &late] {
        fixtures::put_execution(&env, e).await?;
    }
    let (w, _) = fixtures::worker_with(&env, fixtures::settings("w"), Handlers::new())?;

    // WHEN a worker handles 10:04, then the batch, then 10:06; then 10:08 is put and handled
    handle_once(&w, &early, put_at).await;
    handle_once(&w, &batch, put_at).await;
    handle_once(&w, &late, put_at).await;
    fixtures::put_execution(&env, &later).await?;
    handle_once(&w, &later, put_at).await;

    // THEN every minute 10:02–10:10 ran exactly once: 10:04 on its own (the batch excepts it),
    // the others in the batch, 10:06 and 10:08 canceled as covered by it
    let es = executions(&env, "acme", "minutely").await?;
    let run = minutes_run(&es);
    let twice: Vec<_> = run.iter().filter(|(_, by)| by.len() > 1).collect();
    assert!(twice.is_empty(), "minutes run more than once: {twice:?}");
    let want: Vec<String> = (2..=10).map(|m| format!("10:{m:02}")).collect();
    assert_eq!(run.keys().cloned().collect::<Vec<_>>(), want);
    for t in ["2026-11-30T10:06:00Z", "2026-11-30T10:08:00Z"] {
        let e = at_instant(&es, t);
        assert_eq!(e.status, ExecStatus::Canceled, "{t}: {:?}", e.timeline);
        assert_eq!(e.last_error.as_ref().map(|x| x.0.as_str()), Some("CoveredByBatch"), "{t}");
    }
    let b = at_instant(&es, "2026-11-30T10:02:00Z");
    assert_eq!(b.status, ExecStatus::Succeeded, "{:?}", b.timeline);
    assert_eq!(b.missed_except, vec![at("2026-11-30T10:04:00Z")]);
    // AND the batch's target was told which instants of its range it does not stand for
    let calls = hook.received();
    assert_eq!(calls.len(), 2, "10:04 and the batch: {calls:?}");
    let range = calls.iter().find_map(|c| c.body.get("missedRange")).expect("the batch's call");
    assert_eq!(range["except"], serde_json::json!(["2026-11-30T10:04:00Z"]), "{range}");
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overlapping_fire_once_batches_put_by_two_scans_run_each_instant_once_in_either_order(
) -> anyhow::Result<()> {
    // K6's remainder: two scans put `fireOnce` batches of one every-minute job whose ranges
    // overlap, each around what it read. Outer: 10:02–10:10. Inner: 10:04–10:06 (all inside the
    // outer) and a straddling one, 10:08–10:13. Orders: (a) the outer settles and runs before
    // either of the others exists; (b) the straddling one is handled before the outer sees it.
    let env = TestEnv::new("batch-k6b").await?;
    let hook = fixtures::WebhookServer::start(vec![]).await?;
    let (job, sch) = minutely_fire_once(&env, &hook).await?;
    let put_at = at("2026-11-30T10:14:00Z");
    let batch = |a: &str, b: &str| Execution::ready(&job, &sch, at(a), Some((at(a), at(b))), put_at, "tick");
    let outer = batch("2026-11-30T10:02:00Z", "2026-11-30T10:10:00Z");
    let inner = batch("2026-11-30T10:04:00Z", "2026-11-30T10:06:00Z");
    let straddling = batch("2026-11-30T10:08:00Z", "2026-11-30T10:13:00Z");
    let (w, _) = fixtures::worker_with(&env, fixtures::settings("w"), Handlers::new())?;

    // WHEN the straddling batch is put and handled, then the outer, and only then the inner is
    // put (by a scan that read before the outer settled) and handled
    fixtures::put_execution(&env, &straddling).await?;
    fixtures::put_execution(&env, &outer).await?;
    handle_once(&w, &straddling, put_at).await;
    handle_once(&w, &outer, put_at).await;
    fixtures::put_execution(&env, &inner).await?;
    handle_once(&w, &inner, put_at).await;

    // THEN every minute 10:02–10:13 ran exactly once
    let es = executions(&env, "acme", "minutely").await?;
    let run = minutes_run(&es);
    let twice: Vec<_> = run.iter().filter(|(_, by)| by.len() > 1).collect();
    assert!(twice.is_empty(), "minutes run more than once: {twice:?}");
    let want: Vec<String> = (2..=13).map(|m| format!("10:{m:02}")).collect();
    assert_eq!(run.keys().cloned().collect::<Vec<_>>(), want, "every minute once");
    // AND the straddling batch (settled first) kept its range; the outer excepted what it shares
    // with it; the inner, wholly inside the outer that settled before it, stands for nothing
    // and is canceled as covered
    let s = at_instant(&es, "2026-11-30T10:08:00Z");
    assert_eq!((s.status, s.missed_except.clone()), (ExecStatus::Succeeded, vec![]), "{:?}", s.timeline);
    let o = at_instant(&es, "2026-11-30T10:02:00Z");
    assert_eq!(o.status, ExecStatus::Succeeded, "{:?}", o.timeline);
    assert_eq!(
        o.missed_except,
        ["10:08", "10:09", "10:10"].map(|m| at(&format!("2026-11-30T{m}:00Z"))).to_vec()
    );
    let i = at_instant(&es, "2026-11-30T10:04:00Z");
    assert_eq!(i.status, ExecStatus::Canceled, "{:?}", i.timeline);
    assert_eq!(i.last_error.as_ref().map(|x| x.0.as_str()), Some("CoveredByBatch"));
    assert_eq!(hook.received().len(), 2, "the straddling and the outer batch");
    env.cleanup().await;
    Ok(())
}
