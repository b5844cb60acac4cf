//! Fixtures for execution-plane tests: READY executions as the trigger would create them, their
//! queue messages, in-process workers, a local webhook server that records what it receives,
//! and a fenced resource (docs/targets.md, "Fencing downstream") that refuses older tokens.

use crate::TestEnv;
use anyhow::{bail, Context, Result};
use aws_sdk_dynamodb::types::AttributeValue;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use sundial_core::config::WorkerSettings;
use sundial_core::execution::clock::{Clock, SystemClock};
use sundial_core::execution::metrics::MemorySink;
use sundial_core::execution::target::in_process::Handlers;
use sundial_core::execution::worker::Worker;
use sundial_model::{AuditEvent, ExecMessage, ExecStatus, Execution, JobDefinition, RetryPolicy, Target};
use sundial_store::executions::{ExecKey, ExecStore, Snapshot};
use sundial_store::items;
use tokio::net::TcpListener;
use tokio::sync::Notify;

/// A job definition with `target`, retries (3 attempts, 1 s backoff cap) and a 30 s timeout:
/// the trigger tests' every-minute definition with a short backoff, so retries happen in a test's
/// time.
pub fn definition(target: Target) -> JobDefinition {
    let mut d = crate::trigger::definition("rate(1 minute)", "UTC", Default::default());
    d.target = target;
    d.retry = RetryPolicy { max_attempts: 3, base_delay_secs: 1, max_delay_secs: 1, max_age_secs: 3_600 };
    d
}

/// An HTTP-target definition.
pub fn http_definition(url: &str) -> JobDefinition {
    definition(Target::http(url))
}

/// A READY execution exactly as the trigger creates it: attempt 0, token 0, available at its
/// fire instant, one creation event.
pub fn ready_execution(
    tenant: &str,
    job: &str,
    def: JobDefinition,
    scheduled_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Execution {
    Execution {
        tenant: tenant.into(),
        job_id: job.into(),
        scheduled_at,
        fire_at: scheduled_at,
        created_at: now,
        status: ExecStatus::Ready,
        attempt: 0,
        fencing_token: 0,
        lease_owner: None,
        lease_until: None,
        available_at: scheduled_at.timestamp_millis(),
        def_version: 1,
        definition: def,
        missed_range: None,
        missed_except: Vec::new(),
        last_error: None,
        cancel_requested: false,
        timeline: vec![AuditEvent {
            at: now.timestamp_millis(),
            actor: "tick:test".into(),
            from: None,
            to: ExecStatus::Ready,
            attempt: 0,
            token: 0,
            code: None,
        }],
        child: None,
        children: None,
        map_reduce: None,
    }
}

/// Stores an execution (PutItem of `execution_to_item`, like the trigger).
pub async fn put_execution(env: &TestEnv, e: &Execution) -> Result<ExecKey> {
    // Expires a day after the wall clock, not a day after the test's fixed instant: MiniStack's
    // TTL reaper runs by the wall clock (docs/emulators.md), and a fixed instant more than a day
    // in the past made the item vanish mid-test (reconciler.rs, CI of 2026-12-04).
    let retention = (Utc::now() - e.created_at).num_seconds().max(0) + 86_400;
    env.clients
        .ddb
        .put_item()
        .table_name(&env.cfg.executions_table)
        .set_item(Some(items::execution_to_item(e, retention)))
        .condition_expression("attribute_not_exists(pk)")
        .send()
        .await
        .context("putting the execution")?;
    Ok(ExecKey::of(e))
}

/// The queue message of an execution.
pub fn message_of(e: &Execution, enqueued_at: DateTime<Utc>) -> ExecMessage {
    ExecMessage {
        tenant: e.tenant.clone(),
        job_id: e.job_id.clone(),
        scheduled_ms: e.scheduled_at.timestamp_millis(),
        fire_ms: e.fire_at.timestamp_millis(),
        enqueued_ms: enqueued_at.timestamp_millis(),
        lane: sundial_model::priority::lane_of(e),
        child: e.child.as_ref().map(|c| c.sort_part()),
        wait_gen: 0,
    }
}

/// Sends an execution's message to its pool's queue (its lane's) with `delay_secs`.
pub async fn enqueue(env: &TestEnv, e: &Execution, delay_secs: i32) -> Result<()> {
    let msg = message_of(e, Utc::now());
    let body = serde_json::to_string(&msg)?;
    let q = &env.queues[&e.definition.pool];
    env.clients
        .sqs
        .send_message()
        .queue_url(if msg.lane == sundial_model::priority::Lane::Low { &q.low_url } else { &q.url })
        .message_body(body)
        .delay_seconds(delay_secs)
        .send()
        .await
        .context("sending the execution message")?;
    Ok(())
}

/// Creates a READY execution of `job` scheduled at `scheduled_at` and enqueues its message
/// (with the delay the trigger would use: whole seconds until the fire, rounded down).
pub async fn create_ready(
    env: &TestEnv,
    tenant: &str,
    job: &str,
    def: JobDefinition,
    scheduled_at: DateTime<Utc>,
) -> Result<ExecKey> {
    let now = Utc::now();
    let e = ready_execution(tenant, job, def, scheduled_at, now);
    let key = put_execution(env, &e).await?;
    let delay = ((scheduled_at - now).num_milliseconds().max(0) / 1000).min(900) as i32;
    enqueue(env, &e, delay).await?;
    Ok(key)
}

/// The execution store of an environment (no skew probe).
pub fn store(env: &TestEnv) -> ExecStore {
    ExecStore::new(env.clients.ddb.clone(), env.cfg.executions_table.clone())
}

/// Reads an execution (strongly consistent).
pub async fn snapshot(env: &TestEnv, key: &ExecKey) -> Result<Snapshot> {
    store(env).get(key, true).await?.context("execution not found")
}

/// Test worker settings: 2 s leases, 200 ms skew margin. (Loopback webhooks are allowed by the
/// test environment's target policy, `TestEnv::cfg.targets`.)
pub fn settings(id: &str) -> WorkerSettings {
    let mut s = WorkerSettings::new(id, "default");
    s.lease_ms = 2_000;
    s.skew_margin_ms = 200;
    s.early_hold_ms = 1_500;
    s.cancel_grace_ms = 1_000;
    // A failed notification's retry comes back at once (the deployment waits 10 s and more).
    s.notify_retry_base_secs = 0;
    s
}

/// A worker on `env` with `settings` and `handlers`, recording metrics in memory.
pub fn worker_with(
    env: &TestEnv,
    settings: WorkerSettings,
    handlers: Handlers,
) -> Result<(Arc<Worker>, Arc<MemorySink>)> {
    worker_with_clients(env, settings, handlers, &env.clients)
}

/// Same, with explicit clients (e.g. a Lambda client pointed at `cargo lambda watch`).
pub fn worker_with_clients(
    env: &TestEnv,
    settings: WorkerSettings,
    handlers: Handlers,
    clients: &sundial_core::aws::Clients,
) -> Result<(Arc<Worker>, Arc<MemorySink>)> {
    worker_on(env, settings, handlers, clients, Arc::new(SystemClock))
}

/// A worker reading the time from `clock` (a [`crate::clock::ManualClock`], say).
pub fn worker_with_clock(
    env: &TestEnv,
    settings: WorkerSettings,
    handlers: Handlers,
    clock: Arc<dyn Clock>,
) -> Result<(Arc<Worker>, Arc<MemorySink>)> {
    worker_on(env, settings, handlers, &env.clients, clock)
}

/// A worker on `env`'s tables and queues under another configuration (e.g. a stricter target
/// policy than the test environment's).
pub fn worker_with_config(
    env: &TestEnv,
    cfg: sundial_core::config::Config,
    settings: WorkerSettings,
    handlers: Handlers,
) -> Result<(Arc<Worker>, Arc<MemorySink>)> {
    let sink = Arc::new(MemorySink::default());
    let w = Worker::new(cfg, settings, &env.clients, handlers, Arc::new(SystemClock), sink.clone())?;
    Ok((Arc::new(w), sink))
}

fn worker_on(
    env: &TestEnv,
    settings: WorkerSettings,
    handlers: Handlers,
    clients: &sundial_core::aws::Clients,
    clock: Arc<dyn Clock>,
) -> Result<(Arc<Worker>, Arc<MemorySink>)> {
    let sink = Arc::new(MemorySink::default());
    let w = Worker::new(env.cfg.clone(), settings, clients, handlers, clock, sink.clone())?;
    Ok((Arc::new(w), sink))
}

/// Waits until a worker recording to `metrics` has handled a message of `key` (every handled
/// message leaves one record, whatever the worker decided), polling every 50 ms; fails after
/// `within`, a guard, not a timing assertion. Use it to show that a worker *saw* an execution and
/// left it alone, instead of sleeping and hoping it looked.
pub async fn wait_handled(metrics: &MemorySink, key: &ExecKey, within: Duration) -> Result<()> {
    let end = tokio::time::Instant::now() + within;
    let id = key.id();
    while !metrics.records().iter().any(|m| m.execution_id == id) {
        if tokio::time::Instant::now() > end {
            bail!("no worker handled a message of {id} within {within:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// Polls `key` every 100 ms until `done` holds (fails after `within`: a guard, not a timing
/// assertion).
pub async fn wait_for(
    env: &TestEnv,
    key: &ExecKey,
    within: Duration,
    done: impl Fn(&Snapshot) -> bool,
) -> Result<Snapshot> {
    let end = tokio::time::Instant::now() + within;
    loop {
        let s = snapshot(env, key).await?;
        if done(&s) {
            return Ok(s);
        }
        if tokio::time::Instant::now() > end {
            bail!(
                "execution {} did not reach the expected state in {within:?}; it is {:?} with timeline {:#?}",
                key.id(),
                s.exec.status,
                s.exec.timeline
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Receives (and keeps invisible for `visibility` s) up to 10 messages from a queue URL.
pub async fn receive(env: &TestEnv, url: &str, visibility: i32) -> Result<Vec<aws_sdk_sqs::types::Message>> {
    let out = env
        .clients
        .sqs
        .receive_message()
        .queue_url(url)
        .max_number_of_messages(10)
        .visibility_timeout(visibility)
        .wait_time_seconds(1)
        .send()
        .await?;
    Ok(out.messages.unwrap_or_default())
}

/// Messages in a pool's DLQ (received with a long visibility, so each is counted once).
pub async fn dlq_bodies(env: &TestEnv, pool: &str) -> Result<Vec<String>> {
    let url = env.queues[pool].dlq_url.clone();
    let mut out = Vec::new();
    for _ in 0..3 {
        let got = receive(env, &url, 300).await?;
        if got.is_empty() {
            break;
        }
        out.extend(got.into_iter().filter_map(|m| m.body));
    }
    Ok(out)
}

/// What the webhook server answers to one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Answer with this status at once.
    Status(u16),
    /// Wait until the test calls `notify_waiters` on it (forever if it never does), then answer
    /// 200.
    Hold(Arc<Notify>),
    /// Wait, then answer with the status.
    After(Duration, u16),
}

/// One request the webhook server received.
#[derive(Debug, Clone)]
pub struct Received {
    /// `Idempotency-Key`.
    pub idempotency_key: String,
    /// `X-Sundial-Fencing-Token`.
    pub token: u64,
    /// `X-Sundial-Attempt`.
    pub attempt: u32,
    /// The JSON body.
    pub body: serde_json::Value,
    /// The body as sent (what a signature covers).
    pub raw_body: Bytes,
    /// Every header, names lowercase.
    pub headers: Vec<(String, String)>,
}

impl Received {
    /// The value of header `name` (lowercase), or "".
    pub fn header(&self, name: &str) -> &str {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str()).unwrap_or_default()
    }
}

#[derive(Default)]
struct ServerState {
    script: VecDeque<Reply>,
    received: Vec<Received>,
    in_flight: usize,
    max_in_flight: usize,
}

/// A local webhook server answering from a script (then 200), recording every request.
pub struct WebhookServer {
    /// Base URL, `http://127.0.0.1:<port>`.
    pub base: String,
    state: Arc<Mutex<ServerState>>,
    arrived: Arc<Notify>,
    task: tokio::task::JoinHandle<()>,
}

impl WebhookServer {
    /// Starts a server on a free loopback port.
    pub async fn start(script: Vec<Reply>) -> Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let base = format!("http://{}", listener.local_addr()?);
        let state = Arc::new(Mutex::new(ServerState { script: script.into(), ..Default::default() }));
        let arrived = Arc::new(Notify::new());
        let (st, ar) = (state.clone(), arrived.clone());
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (st, ar) = (st.clone(), ar.clone());
                tokio::spawn(async move {
                    let svc = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                        let (st, ar) = (st.clone(), ar.clone());
                        async move { Ok::<_, Infallible>(answer(st, ar, req).await) }
                    });
                    let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), svc).await;
                });
            }
        });
        Ok(WebhookServer { base, state, arrived, task })
    }

    /// The URL of `path` on this server.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Everything received so far.
    pub fn received(&self) -> Vec<Received> {
        self.state.lock().map(|s| s.received.clone()).unwrap_or_default()
    }

    /// The most requests that were in progress at once.
    pub fn max_in_flight(&self) -> usize {
        self.state.lock().map(|s| s.max_in_flight).unwrap_or_default()
    }

    /// Waits until at least `n` requests have arrived (fails after `within`).
    pub async fn wait_requests(&self, n: usize, within: Duration) -> Result<Vec<Received>> {
        let end = tokio::time::Instant::now() + within;
        loop {
            let got = self.received();
            if got.len() >= n {
                return Ok(got);
            }
            if tokio::time::timeout_at(end, self.arrived.notified()).await.is_err() {
                bail!("{} webhook requests arrived, expected {n} within {within:?}", got.len());
            }
        }
    }
}

impl Drop for WebhookServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn answer(
    st: Arc<Mutex<ServerState>>,
    arrived: Arc<Notify>,
    req: hyper::Request<hyper::body::Incoming>,
) -> hyper::Response<Full<Bytes>> {
    let h = |k: &str| req.headers().get(k).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    let (key, token, attempt) = (h("idempotency-key"), h("x-sundial-fencing-token"), h("x-sundial-attempt"));
    let headers: Vec<(String, String)> = req
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_string(), v.to_str().unwrap_or_default().to_string()))
        .collect();
    let body = req.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    let (reply, released) = {
        let mut s = match st.lock() {
            Ok(s) => s,
            Err(p) => p.into_inner(),
        };
        let reply = s.script.pop_front().unwrap_or(Reply::Status(200));
        // Wait for the gate from before the request counts as received: a test that opens the
        // gate as soon as it sees the request then cannot open it before anyone waits.
        let released = match &reply {
            Reply::Hold(n) => Some(n.clone().notified_owned()),
            _ => None,
        };
        s.received.push(Received {
            idempotency_key: key,
            token: token.parse().unwrap_or(0),
            attempt: attempt.parse().unwrap_or(0),
            body: serde_json::from_slice(&body).unwrap_or_default(),
            raw_body: body.clone(),
            headers,
        });
        s.in_flight += 1;
        s.max_in_flight = s.max_in_flight.max(s.in_flight);
        (reply, released)
    };
    arrived.notify_waiters();
    let status = match reply {
        Reply::Status(c) => c,
        Reply::Hold(_) => {
            if let Some(released) = released {
                released.await;
            }
            200
        }
        Reply::After(d, c) => {
            tokio::time::sleep(d).await;
            c
        }
    };
    if let Ok(mut s) = st.lock() {
        s.in_flight -= 1;
    }
    let mut resp = hyper::Response::new(Full::new(Bytes::from_static(b"{}")));
    *resp.status_mut() =
        hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    resp
}

/// A resource protected by fencing tokens (docs/targets.md, "Fencing downstream"): a write carrying
/// token `t` succeeds only if every earlier accepted write carried a smaller token.
pub struct FencedResource {
    ddb: aws_sdk_dynamodb::Client,
    table: String,
    name: String,
}

impl FencedResource {
    /// A resource item named `name` in the env's jobs table.
    pub fn new(env: &TestEnv, name: &str) -> Self {
        FencedResource { ddb: env.clients.ddb.clone(), table: env.cfg.jobs_table.clone(), name: name.into() }
    }

    /// Writes `value` with `token`; `Ok(false)` if refused as stale.
    pub async fn write(&self, token: u64, value: &str) -> Result<bool> {
        let r = self
            .ddb
            .update_item()
            .table_name(&self.table)
            .key("pk", AttributeValue::S(format!("RES#{}", self.name)))
            .key("sk", AttributeValue::S("R".into()))
            .update_expression("SET #v = :v, #t = :t")
            .condition_expression("attribute_not_exists(#t) OR #t < :t")
            .expression_attribute_names("#v", "value")
            .expression_attribute_names("#t", "last_token")
            .expression_attribute_values(":v", AttributeValue::S(value.into()))
            .expression_attribute_values(":t", AttributeValue::N(token.to_string()))
            .send()
            .await;
        match r {
            Ok(_) => Ok(true),
            Err(e) if e.as_service_error().is_some_and(|s| s.is_conditional_check_failed_exception()) => {
                Ok(false)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The current value and token.
    pub async fn read(&self) -> Result<Option<(String, u64)>> {
        let out = self
            .ddb
            .get_item()
            .table_name(&self.table)
            .key("pk", AttributeValue::S(format!("RES#{}", self.name)))
            .key("sk", AttributeValue::S("R".into()))
            .consistent_read(true)
            .send()
            .await?;
        Ok(out.item.map(|i| {
            let v = i.get("value").and_then(|v| v.as_s().ok()).cloned().unwrap_or_default();
            let t = i.get("last_token").and_then(|v| v.as_n().ok()).and_then(|n| n.parse().ok()).unwrap_or(0);
            (v, t)
        }))
    }
}

/// A background ECS poll loop: stop it with the token, then await its stats.
pub type Poller = (
    tokio_util::sync::CancellationToken,
    tokio::task::JoinHandle<Result<Arc<sundial_worker::long_poll::Stats>>>,
);

/// Runs the ECS poll loop of `worker` in the background (1 s long polls).
pub fn spawn_poller(worker: Arc<Worker>, slots: usize) -> Poller {
    spawn_poller_with(
        worker,
        sundial_worker::long_poll::EcsOptions {
            slots,
            shutdown_grace: Duration::from_secs(5),
            wait_secs: 1,
            diagnostic_handlers: false,
        },
    )
}

/// Runs the ECS poll loop of `worker` in the background with `opts`.
pub fn spawn_poller_with(worker: Arc<Worker>, opts: sundial_worker::long_poll::EcsOptions) -> Poller {
    let shutdown = tokio_util::sync::CancellationToken::new();
    let s = shutdown.clone();
    let h = tokio::spawn(async move { sundial_worker::long_poll::run(worker, opts, s).await });
    (shutdown, h)
}

/// An SQS event (the Lambda event source's JSON) holding `messages` received from `pool`.
pub fn sqs_event_json(
    env: &TestEnv,
    pool: &str,
    messages: &[aws_sdk_sqs::types::Message],
) -> serde_json::Value {
    let records: Vec<serde_json::Value> = messages
        .iter()
        .map(|m| {
            serde_json::json!({
                "messageId": m.message_id.clone().unwrap_or_default(),
                "receiptHandle": m.receipt_handle.clone().unwrap_or_default(),
                "body": m.body.clone().unwrap_or_default(),
                "attributes": {"ApproximateReceiveCount": "1"},
                "messageAttributes": {},
                "md5OfBody": m.md5_of_body.clone().unwrap_or_default(),
                "eventSource": "aws:sqs",
                "eventSourceARN": env.queues[pool].arn,
                "awsRegion": "us-east-1"
            })
        })
        .collect();
    serde_json::json!({ "Records": records })
}

/// The same, typed.
pub fn sqs_event(
    env: &TestEnv,
    pool: &str,
    messages: &[aws_sdk_sqs::types::Message],
) -> Result<aws_lambda_events::sqs::SqsEvent> {
    Ok(serde_json::from_value(sqs_event_json(env, pool, messages))?)
}

/// Receives exactly `n` messages from a pool queue (visibility `visibility` s), waiting up to
/// `within` for delayed ones.
pub async fn receive_n(
    env: &TestEnv,
    pool: &str,
    n: usize,
    visibility: i32,
    within: Duration,
) -> Result<Vec<aws_sdk_sqs::types::Message>> {
    let end = tokio::time::Instant::now() + within;
    let mut got = Vec::new();
    while got.len() < n {
        if tokio::time::Instant::now() > end {
            bail!("received {} of {n} messages from {pool} within {within:?}", got.len());
        }
        got.extend(receive(env, env.queue_url(pool), visibility).await?);
    }
    Ok(got)
}

/// The bodies of the messages visible now in `pool`'s queue and its low lane, each received
/// once (kept invisible for five minutes): what a pool's workers would be handed next.
pub async fn receive_visible(env: &TestEnv, pool: &str) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for url in [&env.queues[pool].url, &env.queues[pool].low_url] {
        loop {
            let got = receive(env, url, 300).await?;
            if got.is_empty() {
                break;
            }
            out.extend(got.into_iter().filter_map(|m| m.body));
        }
    }
    Ok(out)
}

/// One worker's handling of a message `body` received from `pool`, as the pool's delivery would
/// hand it over (no visibility extension, never asked to stop).
pub async fn handle_body(w: &Worker, pool: &str, body: &str) {
    let stop = tokio_util::sync::CancellationToken::new();
    w.handle(pool, body, &sundial_core::execution::worker::NoExtend, &stop).await;
}

/// The environment a worker function needs to reach the emulator (for `cargo lambda watch`).
pub fn function_env(env: &TestEnv, extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut v = env.cfg.to_env();
    v.extend([
        ("AWS_ENDPOINT_URL".to_string(), crate::endpoint()),
        ("AWS_REGION".into(), "us-east-1".into()),
        ("AWS_ACCESS_KEY_ID".into(), "test".into()),
        ("AWS_SECRET_ACCESS_KEY".into(), "test".into()),
        ("AWS_EC2_METADATA_DISABLED".into(), "true".into()),
    ]);
    v.extend(extra.iter().map(|(k, val)| (k.to_string(), val.to_string())));
    v
}

/// Builds the `worker-ecs` binary (a no-op when up to date) and returns its path.
pub async fn worker_ecs_binary() -> Result<std::path::PathBuf> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = tokio::process::Command::new("cargo")
        .current_dir(&root)
        .args([
            "build",
            "-q",
            "-p",
            "sundial-worker",
            "--bin",
            "worker-ecs",
            "--features",
            "iam-record",
            "--message-format=json",
        ])
        .output()
        .await
        .context("running cargo build for worker-ecs")?;
    if !out.status.success() {
        bail!("building worker-ecs failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap_or_default();
        if v["reason"] == "compiler-artifact" && v["target"]["name"] == "worker-ecs" {
            if let Some(p) = v["executable"].as_str() {
                return Ok(p.into());
            }
        }
    }
    bail!("cargo build did not report the worker-ecs executable")
}

/// Starts the `worker-ecs` binary against `env` with `extra` variables (2 s leases, 200 ms skew
/// margin, loopback webhook targets and the diagnostic handlers unless overridden). Killed when
/// dropped.
pub async fn spawn_worker_ecs(env: &TestEnv, extra: &[(&str, &str)]) -> Result<tokio::process::Child> {
    let bin = worker_ecs_binary().await?;
    spawn_worker_ecs_from(&bin, env, extra)
}

/// [`spawn_worker_ecs`] with the binary already built ([`worker_ecs_binary`]): starts at once,
/// without the `cargo build` check (a test that must spawn at a given moment).
pub fn spawn_worker_ecs_from(
    bin: &std::path::Path,
    env: &TestEnv,
    extra: &[(&str, &str)],
) -> Result<tokio::process::Child> {
    let mut vars = function_env(
        env,
        &[
            ("SUNDIAL_LEASE_SECS", "2"),
            ("SUNDIAL_SKEW_MARGIN_MS", "200"),
            ("SUNDIAL_DEV_LOOPBACK_TARGETS", "true"),
            ("SUNDIAL_POOL", "default"),
            // The tests' jobs use the diagnostic `sleep` and `count` (the shipped default is off).
            ("SUNDIAL_DIAGNOSTIC_HANDLERS", "true"),
            ("RUST_LOG", "info"),
        ],
    );
    vars.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let child = tokio::process::Command::new(bin)
        .envs(vars)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .context("starting worker-ecs")?;
    Ok(child)
}

/// The SQS message id of the message (among `msgs`) for job `job_id`, or "" if none is there.
pub fn message_id_of(msgs: &[aws_sdk_sqs::types::Message], job_id: &str) -> String {
    msgs.iter()
        .find(|m| m.body.as_deref().unwrap_or_default().contains(&format!("\"j\":\"{job_id}\"")))
        .and_then(|m| m.message_id.clone())
        .unwrap_or_default()
}

/// The tag that makes a secret, function or queue a tenant's own (checked by the worker before
/// each use: `docs/tenancy.md`).
pub use sundial_core::execution::target::identity::TENANT_TAG;

/// A Secrets Manager secret named `{prefix}{name}` holding `value`, tagged as `owner`'s (or
/// untagged): its ARN.
pub async fn tenant_secret(env: &TestEnv, name: &str, value: &str, owner: Option<&str>) -> Result<String> {
    let name = format!("{}{name}", env.cfg.queue_prefix);
    let mut req = env.clients.secrets.create_secret().name(name).secret_string(value);
    if let Some(t) = owner {
        req = req.tags(aws_sdk_secretsmanager::types::Tag::builder().key(TENANT_TAG).value(t).build());
    }
    Ok(req.send().await?.arn.unwrap_or_default())
}

/// A queue outside Sundial's prefix, named `user-{name}-{prefix}`, tagged as `owner`'s: its URL.
pub async fn tenant_queue(env: &TestEnv, name: &str, owner: &str) -> Result<String> {
    let name = format!("user-{name}-{}", env.cfg.queue_prefix.trim_end_matches('-'));
    let out = env.clients.sqs.create_queue().queue_name(&name).tags(TENANT_TAG, owner).send().await?;
    out.queue_url.context("CreateQueue returned no URL")
}

/// The ARN of the queue at `url` (what an event source mapping names as `eventSourceARN`).
pub async fn queue_arn(env: &TestEnv, url: &str) -> Result<String> {
    let name = aws_sdk_sqs::types::QueueAttributeName::QueueArn;
    let out =
        env.clients.sqs.get_queue_attributes().queue_url(url).attribute_names(name.clone()).send().await?;
    out.attributes().and_then(|a| a.get(&name)).cloned().context("GetQueueAttributes returned no QueueArn")
}

/// A Lambda function registered in the emulator (its code never runs there: `cargo lambda
/// watch` runs the real binary, see [`crate::lambda_watch::LambdaWatch::client_beside`]),
/// tagged as `owner`'s.
pub async fn tenant_function(env: &TestEnv, name: &str, owner: &str) -> Result<()> {
    let iam = aws_sdk_iam::Client::new(&crate::sdk_config());
    let role = "sundial-test-function-role";
    let trust = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"lambda.amazonaws.com"},"Action":"sts:AssumeRole"}]}"#;
    let arn = match iam.get_role().role_name(role).send().await {
        Ok(r) => r.role.map(|r| r.arn).unwrap_or_default(),
        Err(_) => iam
            .create_role()
            .role_name(role)
            .assume_role_policy_document(trust)
            .send()
            .await
            .context("CreateRole for the test function")?
            .role
            .map(|r| r.arn)
            .unwrap_or_default(),
    };
    // An empty zip archive: the emulator stores the code, it never runs it.
    let mut empty_zip = vec![0x50, 0x4b, 0x05, 0x06];
    empty_zip.extend([0u8; 18]);
    let _ = env.clients.lambda.delete_function().function_name(name).send().await;
    env.clients
        .lambda
        .create_function()
        .function_name(name)
        .runtime(aws_sdk_lambda::types::Runtime::Providedal2023)
        .handler("bootstrap")
        .role(arn)
        .code(aws_sdk_lambda::types::FunctionCode::builder().zip_file(empty_zip.into()).build())
        .tags(TENANT_TAG, owner)
        .send()
        .await
        .context("CreateFunction in the emulator")?;
    Ok(())
}

/// Moves a RETRY_WAIT execution's availability into the past: what waiting for its back-off
/// would do, without a sleep (the worker's claim compares it with the service's clock).
pub async fn make_available(env: &TestEnv, key: &ExecKey) -> Result<()> {
    env.clients
        .ddb
        .update_item()
        .table_name(&env.cfg.executions_table)
        .key("pk", AttributeValue::S(key.pk()))
        .key("sk", AttributeValue::S(key.sk()))
        .update_expression("SET avail = :past")
        .condition_expression("st = :rw")
        .expression_attribute_values(":past", AttributeValue::N("1".into()))
        .expression_attribute_values(":rw", AttributeValue::S("RETRY_WAIT".into()))
        .send()
        .await
        .context("UpdateItem(make available)")?;
    Ok(())
}

/// The bodies (JSON) of the messages that reach `queue_url`, each deleted once read: long-polls
/// (1 s) until at least `min` arrived and one more poll brings nothing. Fails after 20 s
/// without `min`: a guard, not a timing assertion.
pub async fn received(env: &TestEnv, queue_url: &str, min: usize) -> Result<Vec<serde_json::Value>> {
    let start = std::time::Instant::now();
    let mut out = Vec::new();
    loop {
        let got = env
            .clients
            .sqs
            .receive_message()
            .queue_url(queue_url)
            .max_number_of_messages(10)
            .wait_time_seconds(1)
            .send()
            .await?;
        for m in got.messages() {
            out.push(serde_json::from_str(m.body().unwrap_or_default())?);
            if let Some(h) = m.receipt_handle() {
                env.clients.sqs.delete_message().queue_url(queue_url).receipt_handle(h).send().await?;
            }
        }
        if got.messages().is_empty() && out.len() >= min {
            return Ok(out);
        }
        if start.elapsed().as_secs() >= 20 {
            bail!("only {} message(s) reached the queue, expected {min}", out.len());
        }
    }
}
