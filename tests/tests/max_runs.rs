//! `maxRuns` (docs/schedule.md, "A run-count limit"): a job ends `COMPLETED` after exactly N
//! scheduled fires, whatever crashes and concurrent scans the trigger meets on the way. Fixed
//! instants, the trigger's and the control plane's own functions, the real SDK against the
//! emulator (MiniStack and moto).

use chrono::Duration;
use std::sync::Arc;
use sundial_core::access::{self, Role, Scope};
use sundial_core::control::{self, Caller, Control, ControlError, ControlSettings};
use sundial_core::trigger::scan::{CrashPoint, ScanOptions};
use sundial_model::{ErrorCode, Execution, JobState, OpsAction};
use sundial_schedule::MisfirePolicy;
use sundial_store::jobs::get_job;
use sundial_tests::trigger::{at, ctx, definition, executions, scan};
use sundial_tests::TestEnv;

/// A scan as the tick function runs it: its calls are recorded under the tick's role (the IAM
/// recording checks the CDK grants allow them).
async fn tick(
    env: &TestEnv,
    now: chrono::DateTime<chrono::Utc>,
    opts: &ScanOptions,
) -> Result<sundial_core::trigger::report::ScanReport, sundial_core::trigger::scan::ScanError> {
    access::within(Some(Arc::new(Scope::new(Role::Tick, &env.cfg))), scan(env, now, opts)).await
}

fn caller() -> Caller {
    Caller { tenant: "acme".into(), principal: "ops".into() }
}

fn times(es: &[Execution]) -> Vec<String> {
    es.iter().map(|e| e.scheduled_at.format("%H:%M:%S").to_string()).collect()
}

async fn state(env: &TestEnv, job: &str) -> anyhow::Result<JobState> {
    let j = get_job(&env.clients.ddb, &env.cfg, "acme", job).await?;
    j.map(|j| j.state).ok_or_else(|| anyhow::anyhow!("{job} is gone"))
}

async fn completions(ctl: &Control, job: &str) -> anyhow::Result<Vec<(String, Option<String>)>> {
    let page = control::ops::list(ctl, &caller(), Some(job), Some(100), None).await?;
    Ok(page
        .items
        .into_iter()
        .filter(|e| e.action == OpsAction::Complete)
        .map(|e| (e.actor, e.detail))
        .collect())
}

fn conflict(e: ControlError) -> (ErrorCode, &'static str) {
    match e {
        ControlError::Conflict { code, field, .. } => (code, field),
        other => panic!("expected a 409, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_ends_completed_after_exactly_max_runs_fires_across_a_crash_and_racing_scans(
) -> anyhow::Result<()> {
    Box::pin(async {
        // GIVEN a job firing every 20 s with maxRuns 4, and an every-minute job with maxRuns 3
        let env = TestEnv::new("max-runs").await?;
        let ctl = Control::new(ctx(&env), ControlSettings::default());
        let t0 = at("2026-11-30T09:59:50Z");
        let every20 = definition("*/20 * * * * *", "UTC", MisfirePolicy::FireOnce).with_max_runs(4);
        control::jobs::create(&ctl, &caller(), "every20", every20, t0).await?;
        let minutely = definition("0 * * * * *", "UTC", MisfirePolicy::FireOnce).with_max_runs(3);
        control::jobs::create(&ctl, &caller(), "minutely", minutely, t0).await?;

        // WHEN the first scan (its window reaches 10:01:40: six fires of every20) crashes after
        // its puts, before any job is completed
        let crashed = ScanOptions { crash_at: Some(CrashPoint::AfterPut), ..Default::default() };
        assert!(tick(&env, at("2026-11-30T10:00:00Z"), &crashed).await.is_err());
        // THEN only the first four fires exist: the fifth was refused by the count
        assert_eq!(
            times(&executions(&env, "acme", "every20").await?),
            ["10:00:00", "10:00:20", "10:00:40", "10:01:00"]
        );
        assert_eq!(state(&env, "every20").await?, JobState::Enabled, "the crash came before the completion");

        // WHEN two scans run at once after it
        let opts = ScanOptions::default();
        let (a, b) = tokio::join!(
            scan(&env, at("2026-11-30T10:00:02Z"), &opts),
            scan(&env, at("2026-11-30T10:00:02Z"), &opts)
        );
        let (a, b) = (a?, b?);
        // THEN every20 is COMPLETED with its four fires, none counted twice, one audit entry
        assert_eq!(
            times(&executions(&env, "acme", "every20").await?),
            ["10:00:00", "10:00:20", "10:00:40", "10:01:00"]
        );
        assert_eq!(state(&env, "every20").await?, JobState::Completed);
        assert_eq!(ctl.execs.runs("acme", "every20", true).await?, 4);
        assert_eq!(a.completed + b.completed, 1, "one scan completes it: {a:?} {b:?}");
        assert_eq!(
            completions(&ctl, "every20").await?,
            [("max-runs".to_string(), Some("4 scheduled fires created (maxRuns)".to_string()))]
        );

        // WHEN the every-minute job is scanned minute by minute
        for m in 1..=5 {
            tick(&env, at("2026-11-30T10:00:05Z") + Duration::minutes(m), &opts).await?;
        }
        // THEN it stops at three fires, completed by the scan that created the third (no fourth
        // is even tried), and later scans create nothing for either job
        assert_eq!(times(&executions(&env, "acme", "minutely").await?), ["10:00:00", "10:01:00", "10:02:00"]);
        assert_eq!(state(&env, "minutely").await?, JobState::Completed);
        let later = scan(&env, at("2026-11-30T11:00:00Z"), &opts).await?;
        assert_eq!((later.created, later.over_limit), (0, 0), "{later:?}");
        assert_eq!(executions(&env, "acme", "every20").await?.len(), 4);
        assert_eq!(executions(&env, "acme", "minutely").await?.len(), 3);
        env.cleanup().await;
        Ok(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completed_job_refuses_a_pause_and_resumes_only_once_an_edit_raised_its_limit() -> anyhow::Result<()>
{
    Box::pin(async {
        // GIVEN an hourly job with maxRuns 2, completed by the scan that created its second fire
        let env = TestEnv::new("max-runs-resume").await?;
        let ctl = Control::new(ctx(&env), ControlSettings::default());
        let hourly = definition("0 0 * * * *", "UTC", MisfirePolicy::FireOnce).with_max_runs(2);
        control::jobs::create(&ctl, &caller(), "hourly", hourly.clone(), at("2026-11-30T09:30:00Z")).await?;
        let opts = ScanOptions::default();
        let first = scan(&env, at("2026-11-30T09:59:30Z"), &opts).await?;
        assert_eq!((first.created, first.completed), (1, 0));
        let second = scan(&env, at("2026-11-30T10:59:30Z"), &opts).await?;
        assert_eq!((second.created, second.completed), (1, 1), "{second:?}");
        assert_eq!(state(&env, "hourly").await?, JobState::Completed);
        let now = at("2026-11-30T11:30:00Z");

        // WHEN it is paused, or resumed with its limit unchanged: refused, naming the field
        let pause = control::jobs::set_state(&ctl, &caller(), "hourly", JobState::Paused, None, now).await;
        assert_eq!(
            conflict(pause.expect_err("a completed job is not paused")),
            (ErrorCode::JobCompleted, "jobId")
        );
        let resume = control::jobs::set_state(&ctl, &caller(), "hourly", JobState::Enabled, None, now).await;
        assert_eq!(conflict(resume.expect_err("the limit holds")), (ErrorCode::JobCompleted, "maxRuns"));

        // WHEN an edit raises it to 3: the job stays completed until resumed
        let job = control::jobs::get(&ctl, &caller(), "hourly").await?;
        control::jobs::update(&ctl, &caller(), "hourly", job.version, hourly.with_max_runs(3), now).await?;
        assert_eq!(state(&env, "hourly").await?, JobState::Completed);
        scan(&env, at("2026-11-30T11:59:30Z"), &opts).await?;
        assert_eq!(executions(&env, "acme", "hourly").await?.len(), 2, "an edit alone does not restart it");
        control::jobs::set_state(&ctl, &caller(), "hourly", JobState::Enabled, None, now).await?;
        // THEN exactly one more fire, and it is completed again
        let third = scan(&env, at("2026-11-30T11:59:31Z"), &opts).await?;
        scan(&env, at("2026-11-30T12:59:30Z"), &opts).await?;
        assert_eq!(
            times(&executions(&env, "acme", "hourly").await?),
            ["10:00:00", "11:00:00", "12:00:00"],
            "{third:?}"
        );
        assert_eq!(state(&env, "hourly").await?, JobState::Completed);
        assert_eq!(completions(&ctl, "hourly").await?.len(), 2);
        // AND its fires ran as any other's: a completed job can still be deleted
        control::jobs::set_state(&ctl, &caller(), "hourly", JobState::Deleted, None, now).await?;
        assert_eq!(state(&env, "hourly").await?, JobState::Deleted);
        env.cleanup().await;
        Ok(())
    })
    .await
}
