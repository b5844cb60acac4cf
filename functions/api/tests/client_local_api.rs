//! The typed client (`sundial-client`) against the local API server: it lives here, beside the
//! server it drives, so the client crate itself has no dev-dependency on the API or the AWS SDK.
//!
//! The client against the real API: the local run's loopback server (`sundial_api::local::serve`)
//! over a private environment on the emulator, the API on a manual clock. The client's clock is
//! the same manual clock: a wait between attempts moves it forward instead of sleeping, so a
//! rate limit's `Retry-After` (the seconds to the next minute) passes at once and for real, as
//! far as the API can tell.
//!
//! Needs the emulator (`localstack/start.sh`, `AWS_ENDPOINT_URL`), like every test of `tests/`.

use chrono::{DateTime, Utc};
use serde_json::json;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use sundial_api::{Api, ApiSettings};
use sundial_client::{
    Client, Clock, CreateJob, ExecStatus, JobDefinition, ListJobExecutions, ListJobs, ListOperations,
    RetryPolicy,
};
use sundial_core::control::{Control, ControlSettings, Quotas};
use sundial_core::execution::clock::Clock as _;
use sundial_core::Ctx;
use sundial_store::queue::PoolQueues;
use sundial_tests::clock::ManualClock;
use sundial_tests::TestEnv;

/// The API's manual clock, seen by the client: sleeping moves it.
#[derive(Debug)]
struct Shared {
    api: Arc<ManualClock>,
    slept: Mutex<Vec<Duration>>,
}

impl Clock for Shared {
    fn now(&self) -> SystemTime {
        SystemTime::from(self.api.now())
    }
    fn sleep(&self, d: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        self.slept.lock().unwrap_or_else(|e| e.into_inner()).push(d);
        self.api.advance(chrono::Duration::from_std(d).unwrap_or_else(|e| panic!("{e}")));
        Box::pin(async {})
    }
}

fn at(s: &str) -> DateTime<Utc> {
    sundial_tests::trigger::at(s)
}

fn definition(params: serde_json::Value) -> JobDefinition {
    serde_json::from_value(json!({
        "schedule": {"expression": "0 30 2 * * *", "timezone": "UTC"},
        "target": {"type": "http", "url": "https://hooks.example.com/run"},
        "params": params,
    }))
    .unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test]
async fn the_client_creates_pages_reads_versions_and_waits_out_a_rate_limit() {
    // GIVEN the local API server on the emulator, one trigger-now a minute per tenant, at
    // 10:00:55 (five seconds before the next minute)
    let env =
        TestEnv::with("client-local", &["default"], 8).await.unwrap_or_else(|e| panic!("emulator: {e}"));
    let api_clock = Arc::new(ManualClock::new(at("2026-12-01T10:00:55Z")));
    let trigger = Ctx {
        ddb: env.clients.ddb.clone(),
        cfg: env.cfg.clone(),
        queues: PoolQueues::new(env.clients.sqs.clone(), env.cfg.clone()),
    };
    let quotas = Quotas { triggers_per_minute: 1, ..Quotas::default() };
    let control = Control::new(trigger, ControlSettings { quotas, ..ControlSettings::default() });
    let api = Arc::new(Api::new(control, api_clock.clone(), unthrottled()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("{e}"));
    let url = format!("http://{}", listener.local_addr().unwrap_or_else(|e| panic!("{e}")));
    let server = tokio::spawn(sundial_api::local::serve(api, listener, std::future::pending()));
    let clock = Arc::new(Shared { api: api_clock.clone(), slept: Mutex::new(Vec::new()) });
    let client = Client::builder(&url)
        .tenant(Some("acme".into()))
        .clock(clock.clone())
        .retry(RetryPolicy {
            max_attempts: 3,
            max_total_wait: Duration::from_secs(60),
            ..RetryPolicy::default()
        })
        .build()
        .unwrap_or_else(|e| panic!("{e}"));

    // WHEN five jobs are created
    for i in 0..5 {
        let change = client
            .create_job(&CreateJob { job_id: format!("job-{i}"), definition: definition(json!({"i": i})) })
            .await
            .unwrap_or_else(|e| panic!("create job-{i}: {e}"));
        // THEN each is version 1 with its next fires
        assert_eq!((change.job.version, change.next_fires.len()), (1, 5));
    }

    // WHEN listed two at a time
    let mut pager = client.pages(ListJobs { limit: Some(2), ..ListJobs::default() });
    let mut sizes = Vec::new();
    let mut ids = Vec::new();
    while let Some(page) = pager.next_page().await.unwrap_or_else(|e| panic!("{e}")) {
        sizes.push(page.items.len());
        ids.extend(page.items.into_iter().map(|j| j.job_id));
    }
    // THEN the pages follow the cursor to the end, each job once, in id order
    assert_eq!(sizes.iter().sum::<usize>(), 5, "{sizes:?}");
    assert!(sizes.len() >= 3 && sizes.iter().all(|s| *s <= 2), "{sizes:?}");
    assert_eq!(ids, (0..5).map(|i| format!("job-{i}")).collect::<Vec<_>>());
    assert_eq!(client.all(ListJobs::default()).await.map(|j| j.len()).ok(), Some(5));

    // WHEN a job is edited, THEN both versions can be read, newest first
    let job = client.get_job("job-0").await.unwrap_or_else(|e| panic!("{e}"));
    let edited = client.update_job("job-0", &definition(json!({"i": 100})), job.version).await;
    assert_eq!(edited.map(|c| c.job.version).ok(), Some(2));
    let versions = client.job_versions("job-0", None).await.unwrap_or_else(|e| panic!("{e}"));
    let seen: Vec<_> = versions.iter().map(|j| (j.version, j.definition.params.clone())).collect();
    assert_eq!(seen, [(2, json!({"i": 100})), (1, json!({"i": 0}))]);
    let v1 = client.get_job_version("job-0", 1).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(v1.definition.params, json!({"i": 0}));
    // AND a stale edit is a typed 412
    let stale = client.update_job("job-0", &definition(json!({"i": 7})), 1).await.err();
    assert_eq!(
        stale.as_ref().and_then(|e| e.api()).map(|e| (e.status, e.code.as_str())),
        Some((412, "version_mismatch"))
    );

    // WHEN the job is triggered twice in the same minute
    let first = client.trigger_job("job-1").await.unwrap_or_else(|e| panic!("{e}"));
    let second = client.trigger_job("job-1").await.unwrap_or_else(|e| panic!("the retry succeeds: {e}"));
    // THEN the second is refused with 429 and Retry-After: 5, the client waits those five
    // seconds (on the shared clock) and its retry, in the next minute, succeeds
    assert_eq!(*clock.slept.lock().unwrap_or_else(|e| e.into_inner()), [Duration::from_secs(5)]);
    assert_ne!(first.execution.execution_id, second.execution.execution_id);
    assert_eq!(second.execution.scheduled_at, at("2026-12-01T10:01:00Z"));
    // AND a third, with no budget left to wait a whole minute, is the typed 429
    let third = Client::builder(&url)
        .tenant(Some("acme".into()))
        .clock(clock.clone())
        .retry(RetryPolicy { max_total_wait: Duration::from_secs(10), ..RetryPolicy::default() })
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
        .trigger_job("job-1")
        .await
        .err();
    let refused = third.as_ref().and_then(|e| e.api()).unwrap_or_else(|| panic!("{third:?}"));
    assert_eq!((refused.status, refused.code.as_str()), (429, "rate_limited"));
    assert_eq!(refused.retry_after, Some(Duration::from_secs(60)));

    // AND the job's executions and the audit log page to the end too
    let execs = client
        .all(ListJobExecutions {
            limit: Some(1),
            status: Some(ExecStatus::Ready),
            ..ListJobExecutions::new("job-1")
        })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(execs.len(), 2, "{execs:?}");
    let ops = client.all(ListOperations { limit: Some(3), ..ListOperations::default() }).await;
    let actions: Vec<String> = ops.unwrap_or_else(|e| panic!("{e}")).into_iter().map(|o| o.action).collect();
    assert_eq!(actions.iter().filter(|a| *a == "create").count(), 5, "{actions:?}");
    assert_eq!(actions.iter().filter(|a| *a == "trigger").count(), 2, "{actions:?}");
    // AND another tenant sees none of it
    let other = Client::builder(&url).tenant(Some("other".into())).build().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(other.all(ListJobs::default()).await.map(|j| j.len()).ok(), Some(0));
    server.abort();
}

/// API settings without the per-tenant throttle (the manual clock keeps every request in one
/// second).
fn unthrottled() -> ApiSettings {
    ApiSettings { tenant_api_rps: 0, ..ApiSettings::default() }
}

/// A local API server over `env`'s tables with `settings`, on `clock`; its base URL.
async fn serve_with(env: &TestEnv, settings: ControlSettings, clock: Arc<ManualClock>) -> String {
    let ctx = Ctx {
        ddb: env.clients.ddb.clone(),
        cfg: env.cfg.clone(),
        queues: PoolQueues::new(env.clients.sqs.clone(), env.cfg.clone()),
    };
    let api = Arc::new(Api::new(Control::new(ctx, settings), clock, unthrottled()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("{e}"));
    let url = format!("http://{}", listener.local_addr().unwrap_or_else(|e| panic!("{e}")));
    tokio::spawn(sundial_api::local::serve(api, listener, std::future::pending()));
    url
}

#[tokio::test]
async fn the_client_reads_the_tz_report_of_jobs_computed_under_an_older_release() {
    // GIVEN a Mexico City job created through the client on 2023-03-30 by an API computing
    // under tz database 2022a (a TZif fixture in which Mexico still has DST)
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../schedule/tests/fixtures/tzdb-2022a");
    let old = sundial_schedule::tzdb::Tzdb::from_zoneinfo("2022a", &dir).unwrap_or_else(|e| panic!("{e}"));
    let env = TestEnv::with("client-tz", &["default"], 8).await.unwrap_or_else(|e| panic!("emulator: {e}"));
    let clock = Arc::new(ManualClock::new(at("2023-03-30T12:00:00Z")));
    let before =
        serve_with(&env, ControlSettings { tzdb: old.clone(), ..ControlSettings::default() }, clock.clone())
            .await;
    let client = |url: &str| {
        Client::builder(url).tenant(Some("acme".into())).build().unwrap_or_else(|e| panic!("{e}"))
    };
    let def: JobDefinition = serde_json::from_value(json!({
        "schedule": {"expression": "0 9 * * *", "timezone": "America/Mexico_City"},
        "target": {"type": "http", "url": "https://hooks.example.com/run"},
    }))
    .unwrap_or_else(|e| panic!("{e}"));
    let made = client(&before)
        .create_job(&CreateJob { job_id: "mx".into(), definition: def })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(made.job.tzdb_version, "2022a");
    // WHEN an API on the compiled release that can read 2022a is asked for 5 fires per job
    let after =
        serve_with(&env, ControlSettings { tzdb_releases: vec![old], ..ControlSettings::default() }, clock)
            .await;
    let req = sundial_client::TzReportRequest { fires: Some(5), ..Default::default() };
    let page = client(&after).tz_report(&req).await.unwrap_or_else(|e| panic!("{e}"));
    let all = client(&after).all(req).await.unwrap_or_else(|e| panic!("{e}"));
    // THEN the job's 04-02 and 04-03 fires move from 14:00Z to 15:00Z, read back as typed values
    assert_eq!(
        (page.compiled_tzdb_version.as_str(), page.fires, page.examined),
        (sundial_schedule::tzdb_version(), 5, 1)
    );
    assert_eq!(page.items, all);
    type Row = (String, Option<DateTime<Utc>>, Option<DateTime<Utc>>, Option<i64>);
    let moved: Vec<Row> = page.items[0]
        .changes
        .iter()
        .map(|c| (c.local_time.clone(), c.old_at, c.new_at, c.shift_secs))
        .collect();
    assert_eq!(
        moved,
        ["02", "03"]
            .iter()
            .map(|d| (
                format!("2023-04-{d}T09:00:00"),
                Some(at(&format!("2023-04-{d}T14:00:00Z"))),
                Some(at(&format!("2023-04-{d}T15:00:00Z"))),
                Some(3600)
            ))
            .collect::<Vec<_>>()
    );
}
