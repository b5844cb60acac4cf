//! `sundial dev`: the whole system on one machine (the README's first command runs it).
//!
//! ```text
//! emulator (localstack/start.sh) ── tables + queues (provision)
//! tick loop (in-process, on the real minute; --fast: every 10 s) ── put → send → advance
//! reconciler (in-process, its own schedule: 30 s after each tick) ── re-send stranded executions
//! one worker per pool (the ECS long-poll loop, in-process) ── claim → run → finish
//! API on http://127.0.0.1:<port> (the same router as the Lambda)
//! demo target on 127.0.0.1 + demo job every 10 s ── one live line per execution
//! the local tenant's event queue ── the ingest handler (as the deployed event source mapping)
//! ```
//!
//! Everything runs in this process except the emulator; Ctrl-C (or SIGTERM) stops the tick,
//! lets the workers finish what they hold for a few seconds, closes the servers, and stops the
//! emulator if this process started it. It only ever talks to a loopback endpoint with dummy
//! credentials: it refuses an `AWS_ENDPOINT_URL` that is not loopback, so it can never touch
//! real AWS.
//!
//! `--fast` ticks every 10 s instead of every minute (scans are idempotent, so ticking more
//! often only costs reads) and polls the queues with 1 s long polls: useful for demos and the
//! end-to-end test. Executions are on time either way, because jobs are dispatched when they
//! are created and the tick queues a minute ahead.

use crate::client::ApiArgs;
use anyhow::{bail, Context};
use chrono::{DateTime, SecondsFormat, Utc};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;
use sundial_api::{Api, ApiSettings};
use sundial_core::aws::Clients;
use sundial_core::config::{Config, LocalRunSettings, TickSettings, WorkerSettings};
use sundial_core::control::{self, Caller, Control, ControlSettings};
use sundial_core::execution::clock::SystemClock;
use sundial_core::execution::metrics::{ExecMetrics, MetricsSink};
use sundial_core::execution::target::in_process::{Handlers, Sleep};
use sundial_core::execution::worker::Worker;
use sundial_core::reconcile::{reconcile, ReconcileOptions};
use sundial_core::trigger::plan::CatchUpBudget;
use sundial_core::trigger::scan::scan_shards;
use sundial_core::trigger::scan::ScanOptions;
use sundial_core::Ctx;
use sundial_model::{ExecStatus, Execution};
use sundial_store::queue::PoolQueues;
use sundial_store::tables;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

mod demo;
use demo::{demo_definition, demo_target, ensure_demo, DEMO_JOB};

/// The tenant of the local API when no `X-Sundial-Tenant` is sent (the CLI's default).
const TENANT: &str = sundial_api::local::LOCAL_TENANT;

/// Options of `sundial dev`.
#[derive(clap::Args, Debug)]
pub(crate) struct DevArgs {
    /// API port on 127.0.0.1 (0 = any free port; the URL is printed).
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// Prefix of the tables and queues (several local stacks can share one emulator).
    #[arg(long, default_value = "dev-")]
    prefix: String,
    /// Worker pools (one in-process worker each).
    #[arg(long, value_delimiter = ',', default_value = "default")]
    pools: Vec<String>,
    /// Logical shards (few locally: each tick reads every shard's buckets, and the emulator
    /// serialises requests).
    #[arg(long, default_value_t = 4)]
    shards: u32,
    /// Tick every 10 s instead of every minute, and poll queues with 1 s long polls.
    #[arg(long)]
    fast: bool,
    /// Do not create the demo job and its target.
    #[arg(long)]
    no_demo: bool,
    /// Executions one worker runs at once.
    #[arg(long, default_value_t = 8)]
    slots: usize,
    /// Per-tenant target allowlists, as a deployment's `SUNDIAL_TENANT_TARGETS` (a JSON object
    /// from tenant, or `*`, to what it may call: docs/tenancy.md). Unset: any target the other
    /// checks accept, and no ECS network for any tenant (an `ecs` target naming subnets needs
    /// `ecsSubnets` and `ecsSecurityGroups` here).
    #[arg(long, value_name = "JSON")]
    tenant_targets: Option<String>,
}

/// The worker log lines the console shows per execution (`GET /v1/executions/{id}/logs`).
static EXEC_LOGS: std::sync::OnceLock<Arc<sundial_api::exec_logs::ExecLogs>> = std::sync::OnceLock::new();

/// Logging of the local run: the terminal gets what `RUST_LOG` asks for (WARN by default, as
/// set by `main`), and every INFO-and-up line a worker logs while handling an execution is also
/// kept per execution, filed under its tenant, for the console (`docs/console.md`, "Logs").
pub(crate) fn init_logging() {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::Layer;
    let logs = EXEC_LOGS.get_or_init(Default::default).clone();
    // The terminal's lines as `telemetry::init` writes them (its level rules, text format).
    let level = std::env::var("AWS_LAMBDA_LOG_LEVEL").or_else(|_| std::env::var("RUST_LOG"));
    let level = level
        .ok()
        .and_then(|l| l.parse::<tracing_subscriber::filter::LevelFilter>().ok())
        .unwrap_or(tracing_subscriber::filter::LevelFilter::INFO);
    let filter =
        tracing_subscriber::EnvFilter::builder().with_default_directive(level.into()).from_env_lossy();
    let terminal = tracing_subscriber::fmt::layer()
        .with_target(false)
        .without_time()
        .with_writer(std::io::stderr)
        .with_filter(filter);
    let capture = logs.layer().with_filter(tracing_subscriber::filter::LevelFilter::INFO);
    if tracing_subscriber::registry().with(terminal).with(capture).try_init().is_err() {
        sundial_core::telemetry::init();
    }
}

/// Metrics go nowhere locally: the live lines are the output.
#[derive(Debug)]
struct Quiet;

impl MetricsSink for Quiet {
    fn record(&self, _: &ExecMetrics, _: i64) {}
}

fn repo_root() -> PathBuf {
    LocalRunSettings::from_env()
        .root
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.."))
}

fn endpoint() -> anyhow::Result<String> {
    let ep = std::env::var("AWS_ENDPOINT_URL").unwrap_or_else(|_| {
        let port = LocalRunSettings::from_env().emulator_port;
        format!("http://127.0.0.1:{port}")
    });
    if !crate::local_aws::is_loopback(&ep) {
        bail!("sundial dev only runs against a local emulator; AWS_ENDPOINT_URL={ep} is not loopback");
    }
    Ok(ep)
}

async fn emulator_up(clients: &Clients) -> bool {
    matches!(
        tokio::time::timeout(Duration::from_secs(3), tables::table_names(&clients.ddb, Some(1))).await,
        Ok(Ok(_))
    )
}

/// Starts the emulator if it does not answer; returns whether this process started it.
async fn ensure_emulator(clients: &Clients, endpoint: &str) -> anyhow::Result<bool> {
    if emulator_up(clients).await {
        return Ok(false);
    }
    let script = repo_root().join("localstack/start.sh");
    if !script.exists() {
        bail!(
            "the emulator at {endpoint} does not answer and {} is missing; start it yourself",
            script.display()
        );
    }
    println!("starting the emulator ({})", script.display());
    let status = tokio::process::Command::new(&script)
        .stdin(std::process::Stdio::null())
        .status()
        .await
        .context("running localstack/start.sh")?;
    if !status.success() || !emulator_up(clients).await {
        bail!("the emulator did not start; see localstack/.run/");
    }
    Ok(true)
}

fn hms(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)[11..23].to_string()
}

/// One live line for an execution that reached a status worth a line.
fn live_line(e: &Execution) -> String {
    let started = e.timeline.iter().find(|ev| ev.to == ExecStatus::Running).map(|ev| ev.at);
    let lag =
        started.map(|s| format!("{} ms", s - e.fire_at.timestamp_millis())).unwrap_or_else(|| "-".into());
    let started = started.map(|s| hms(sundial_store::items::ms_to_dt(s))).unwrap_or_else(|| "-".into());
    let err = e.last_error.as_ref().map(|(c, _)| format!("  ({c})")).unwrap_or_default();
    format!(
        "{:<34} scheduled {}  started {}  lag {:>7}  {:<10} attempt {}{}",
        e.id(),
        hms(e.scheduled_at),
        started,
        lag,
        e.status.as_str(),
        e.attempt,
        err
    )
}

/// Prints one line per execution of the local tenant's jobs as it finishes (and per retry).
async fn live_lines(ctl: Arc<Control>, since: DateTime<Utc>, stop: CancellationToken) {
    let caller = Caller { tenant: TENANT.into(), principal: "sundial-dev".into() };
    let mut watch = LiveWatch { since_ms: since.timestamp_millis(), ..Default::default() };
    loop {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = stop.cancelled() => return,
        }
        let lines = tokio::select! {
            l = watch.poll(&ctl, &caller) => l,
            _ = stop.cancelled() => return,
        };
        for l in lines {
            println!("{l}");
        }
    }
}

/// What the live lines have shown: per job, the scheduled instant before which every
/// execution is final and printed (so each poll reads only the open tail, oldest first).
#[derive(Debug, Default)]
struct LiveWatch {
    since_ms: i64,
    done_through: HashMap<String, i64>,
    printed: HashMap<String, (ExecStatus, u32)>,
}

impl LiveWatch {
    async fn poll(&mut self, ctl: &Control, caller: &Caller) -> Vec<String> {
        let mut lines = Vec::new();
        let jobs = match control::jobs::list(ctl, caller, Some(100), None, false).await {
            Ok(j) => j.items,
            Err(e) => {
                tracing::warn!(error = %e, "listing jobs for the live lines");
                return lines;
            }
        };
        for job in jobs {
            let from = *self.done_through.get(&job.job_id).unwrap_or(&(self.since_ms - 1));
            let f = control::executions::JobExecFilter {
                oldest_first: true,
                limit: Some(50),
                cursor: Some(control::page::encode("execs", &from.to_string())),
                ..Default::default()
            };
            let page = match control::executions::list_for_job(ctl, caller, &job.job_id, &f).await {
                Ok(p) => p,
                Err(e) => {
                    tracing::warn!(job = %job.job_id, error = %e, "listing executions for the live lines");
                    continue;
                }
            };
            let mut through = from;
            let mut open = false;
            for e in page.items {
                let shown = e.status.is_terminal() || e.status == ExecStatus::RetryWait;
                if shown && self.printed.get(&e.id()) != Some(&(e.status, e.attempt)) {
                    lines.push(live_line(&e));
                    self.printed.insert(e.id(), (e.status, e.attempt));
                }
                open |= !e.status.is_terminal();
                if !open {
                    through = e.scheduled_at.timestamp_millis();
                    self.printed.remove(&e.id());
                }
            }
            self.done_through.insert(job.job_id.clone(), through);
        }
        lines
    }
}

/// The next tick instant after `now`: the next whole minute (or 10 s in fast mode).
fn next_tick(now: DateTime<Utc>, fast: bool) -> DateTime<Utc> {
    let step = if fast { 10 } else { 60 };
    let secs = now.timestamp();
    let next = secs - secs.rem_euclid(step) + step;
    DateTime::from_timestamp(next, 0).unwrap_or(now)
}

/// The tick's catch-up budget (the same defaults as the tick Lambda).
fn budget(s: &TickSettings) -> tokio::sync::Mutex<CatchUpBudget> {
    tokio::sync::Mutex::new(CatchUpBudget::new(s.catch_up_global, s.catch_up_per_tenant))
}

/// The tick, in-process: every shard scanned here (the Lambda's in-process path, without its
/// EMF metric lines, which would drown the live lines).
async fn tick_loop(ctx: Arc<Ctx>, fast: bool, stop: CancellationToken) {
    let settings = TickSettings::default();
    let opts = ScanOptions { actor: "tick:dev".into(), ..Default::default() };
    let mut first = true;
    loop {
        if !first {
            let now = Utc::now();
            let wait = (next_tick(now, fast) - now).to_std().unwrap_or_default();
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = stop.cancelled() => return,
            }
        }
        first = false;
        let now = Utc::now();
        // Dropping a tick mid-scan on shutdown is safe: every step is idempotent and the trigger
        // position only moves by CAS after its executions are queued (docs/trigger.md,
        // "Why each step is safe to repeat").
        let budget = budget(&settings);
        let outcome = tokio::select! {
            r = scan_shards(&ctx, 0..ctx.cfg.shards, now, &budget, &opts) => r,
            _ = stop.cancelled() => return,
        };
        match outcome {
            Ok(r) => tracing::info!(created = r.created, sent = r.sent, "tick"),
            Err(e) => eprintln!("tick failed (the next one repeats it): {e}"),
        }
    }
}

/// The reconciler, in-process, on its own schedule (every minute, half a minute after the
/// tick; every 10 s in fast mode): re-sends executions whose delivery is gone.
async fn reconcile_loop(ctx: Arc<Ctx>, fast: bool, stop: CancellationToken) {
    // Auto-pauses (docs/outcomes.md) go through the control plane's pause, as on AWS.
    let control = Control::new(
        Ctx {
            ddb: ctx.ddb.clone(),
            queues: PoolQueues::new(ctx.queues.client().clone(), ctx.cfg.clone()),
            cfg: ctx.cfg.clone(),
        },
        ControlSettings::default(),
    );
    let pause: Arc<dyn sundial_core::execution::outcome::AutoPause> =
        Arc::new(sundial_core::control::outcomes::ControlPause::new(control));
    let opts = ReconcileOptions { actor: "reconciler:dev".into(), pause: Some(pause), ..Default::default() };
    let offset = if fast { std::time::Duration::from_secs(5) } else { std::time::Duration::from_secs(30) };
    loop {
        let now = Utc::now();
        let wait = (next_tick(now, fast) - now).to_std().unwrap_or_default() + offset;
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = stop.cancelled() => return,
        }
        let outcome = tokio::select! {
            r = reconcile(&ctx, Utc::now(), &opts) => r,
            _ = stop.cancelled() => return,
        };
        match outcome {
            Ok(r) if r.resent_total() > 0 => {
                tracing::warn!(
                    resent = r.resent_total(),
                    examined = r.examined,
                    "reconciler re-sent stranded executions"
                )
            }
            Ok(r) => tracing::debug!(examined = r.examined, "reconciler"),
            Err(e) => eprintln!("reconciler failed (the next run repeats it): {e}"),
        }
    }
}

/// The local configuration: the emulator's tables and queues under `--prefix`, one worker of
/// `--slots` slots per pool.
fn dev_config(args: &DevArgs) -> anyhow::Result<Config> {
    let pools: Vec<&str> = args.pools.iter().map(String::as_str).collect();
    let mut cfg = Config::local(&args.prefix, &pools, args.shards);
    // The local run's webhooks (the demo job, a developer's own server) are on loopback: the
    // dev-only policy, for the API's create-time checks and the workers alike.
    cfg.targets = sundial_model::outbound::TargetPolicy::dev_loopback();
    if let Some(json) = args.tenant_targets.as_deref().filter(|j| !j.trim().is_empty()) {
        let tenants = sundial_model::outbound::TenantTargets::parse(json)
            .map_err(|e| anyhow::anyhow!("--tenant-targets: {e}"))?;
        cfg.targets.tenants = Some(tenants);
    }
    // Each pool has one local worker of `--slots` slots (below): what `GET /v1/pools` measures
    // saturation against.
    cfg.pool_capacity = args.pools.iter().map(|p| (p.clone(), args.slots.max(1) as u32)).collect();
    Ok(cfg)
}

/// The in-process services of one `sundial dev` run: what each start-up step needs, and the
/// tasks that shutdown waits for (all of them watch `stop`).
struct Local {
    clients: Clients,
    cfg: Config,
    stop: CancellationToken,
    tasks: JoinSet<()>,
}

impl Local {
    /// A trigger-plane context on the local tables and queues.
    fn trigger(&self) -> Ctx {
        Ctx {
            ddb: self.clients.ddb.clone(),
            cfg: self.cfg.clone(),
            queues: PoolQueues::new(self.clients.sqs.clone(), self.cfg.clone()),
        }
    }

    /// API (the same router as the Lambda). Returns its URL, and a copy of it for the event feed.
    async fn spawn_api(&mut self, port: u16) -> anyhow::Result<(String, Api)> {
        let listener = TcpListener::bind(("127.0.0.1", port))
            .await
            .with_context(|| format!("port {port} is taken; pass --port 0 for any free port"))?;
        let api_url = format!("http://{}", listener.local_addr()?);
        // The one local user is also the platform operator: it may set resource limits.
        let operators = vec![TENANT.to_string()];
        let api = Arc::new(
            Api::new(
                Control::new(
                    self.trigger(),
                    ControlSettings { operator_tenants: operators.clone(), ..ControlSettings::default() },
                ),
                Arc::new(SystemClock),
                // One local user: no per-tenant request throttle (the deployed API has one).
                ApiSettings { operator_tenants: operators, tenant_api_rps: 0, ..ApiSettings::default() },
            )
            .with_exec_logs(EXEC_LOGS.get_or_init(Default::default).clone()),
        );
        let s = self.stop.clone();
        let ingest_api = (*api).clone();
        self.tasks.spawn(async move {
            if let Err(e) = sundial_api::local::serve(api, listener, s.cancelled_owned()).await {
                eprintln!("API server stopped: {e}");
            }
        });
        Ok((api_url, ingest_api))
    }

    /// Workers, one per pool (loopback targets allowed by `cfg.targets`).
    fn spawn_workers(&mut self, args: &DevArgs) -> anyhow::Result<()> {
        for pool in &args.pools {
            let settings = WorkerSettings::new(format!("dev-{pool}-{}", std::process::id()), pool.clone());
            let worker = Arc::new(Worker::new(
                self.cfg.clone(),
                settings,
                &self.clients,
                Handlers::new().with("sleep", Sleep),
                Arc::new(SystemClock),
                Arc::new(Quiet),
            )?);
            let opts = sundial_worker::long_poll::EcsOptions {
                slots: args.slots.max(1),
                shutdown_grace: Duration::from_secs(5),
                wait_secs: if args.fast { 1 } else { 5 },
                diagnostic_handlers: false,
            };
            let s = self.stop.clone();
            let pool = pool.clone();
            self.tasks.spawn(async move {
                if let Err(e) = sundial_worker::long_poll::run(worker, opts, s).await {
                    eprintln!("worker for pool {pool} stopped: {e:#}");
                }
            });
        }
        Ok(())
    }

    /// The tick, and the reconciler on its own schedule (as in the CDK app).
    fn spawn_loops(&mut self, fast: bool) {
        let tick = tick_loop(Arc::new(self.trigger()), fast, self.stop.clone());
        self.tasks.spawn(tick);
        let reconciler = reconcile_loop(Arc::new(self.trigger()), fast, self.stop.clone());
        self.tasks.spawn(reconciler);
    }

    /// The demo: a local target and a job that calls it every 10 s. Returns the banner's line.
    async fn spawn_demo(&mut self, args: &DevArgs, control: &Control) -> anyhow::Result<String> {
        if args.no_demo {
            return Ok(String::from("  demo job   none (--no-demo)"));
        }
        let target = TcpListener::bind(("127.0.0.1", 0)).await?;
        let target_url = format!("http://{}/demo", target.local_addr()?);
        self.tasks.spawn(demo_target(target, Arc::new(AtomicU64::new(0)), self.stop.clone()));
        let caller = Caller { tenant: TENANT.into(), principal: "sundial-dev".into() };
        ensure_demo(control, &caller, demo_definition(&args.pools[0], &target_url)).await?;
        Ok(format!("  demo job   '{DEMO_JOB}' fires every 10 s → POST {target_url}"))
    }

    /// Waits for Ctrl-C or SIGTERM, then stops every task (aborting those still running after
    /// 15 s) and the emulator if this run started it.
    async fn run_until_signal(mut self, started_emulator: bool) -> anyhow::Result<()> {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        println!("stopping: tick, workers (up to 5 s for running executions), API, demo target");
        self.stop.cancel();
        let tasks = &mut self.tasks;
        let drained = tokio::time::timeout(Duration::from_secs(15), async {
            while tasks.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            self.tasks.abort_all();
        }
        if started_emulator {
            let script = repo_root().join("localstack/stop.sh");
            let _ = tokio::process::Command::new(script).stdin(std::process::Stdio::null()).status().await;
        }
        println!("stopped");
        Ok(())
    }
}

/// The addresses `sundial dev` prints once everything is up.
struct Banner {
    api_url: String,
    endpoint: String,
    events_url: String,
    demo_line: String,
}

impl Banner {
    fn print(&self, args: &DevArgs, cfg: &Config) {
        let Banner { api_url, endpoint, events_url, demo_line } = self;
        println!("Sundial is running locally");
        println!("  API        {api_url}   (OpenAPI: {api_url}/openapi.json)");
        println!("  console    {api_url}/console   (the web console: jobs, fires, executions, dead letters)");
        println!("  emulator   {endpoint}   tables {} {}", cfg.jobs_table, cfg.executions_table);
        println!(
            "  tick       {}",
            if args.fast { "every 10 s (--fast)" } else { "every minute, on the minute" }
        );
        println!(
            "  reconciler {}",
            if args.fast { "every 10 s, 5 s after the tick" } else { "every minute, 30 s after the tick" }
        );
        println!("  workers    {} ({} slots each)", args.pools.join(", "), args.slots.max(1));
        println!("{demo_line}");
        println!("  events     queue {events_url} (tenant {TENANT}): sundial events send --queue-url {events_url} <job> [--key K] [--params JSON]");
        println!("  try        SUNDIAL_API_URL={api_url} sundial jobs list");
        println!("Ctrl-C stops everything. One line per execution:");
    }
}

/// Runs `sundial dev` until Ctrl-C or SIGTERM.
pub(crate) async fn run(args: DevArgs, _api: &ApiArgs) -> anyhow::Result<()> {
    for p in &args.pools {
        sundial_core::config::validate_pool_name(p).map_err(|e| anyhow::anyhow!("--pools: {e}"))?;
    }
    let endpoint = endpoint()?;
    let clients = Clients::new(&crate::local_aws::sdk_config(&endpoint));
    let started_emulator = ensure_emulator(&clients, &endpoint).await?;
    let cfg = dev_config(&args)?;
    sundial_testkit::provision::ensure_all(&clients, &cfg).await.context("creating tables and queues")?;

    let mut local = Local { clients, cfg, stop: CancellationToken::new(), tasks: JoinSet::new() };
    let (api_url, ingest_api) = local.spawn_api(args.port).await?;
    local.spawn_workers(&args)?;
    local.spawn_loops(args.fast);

    let since = Utc::now();
    let control = Arc::new(Control::new(local.trigger(), ControlSettings::default()));
    let demo_line = local.spawn_demo(&args, &control).await?;
    local.tasks.spawn(live_lines(control, since, local.stop.clone()));
    // The local tenant's event queue, fed to the ingest handler as the deployed mapping does.
    let (events_url, feed) = crate::event_source::start(
        ingest_api,
        local.clients.sqs.clone(),
        &args.prefix,
        TENANT,
        args.fast,
        local.stop.clone(),
    )
    .await?;
    local.tasks.spawn(feed);

    Banner { api_url, endpoint, events_url, demo_line }.print(&args, &local.cfg);
    local.run_until_signal(started_emulator).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_land_on_the_minute_or_on_ten_seconds() {
        let t = DateTime::parse_from_rfc3339("2026-12-01T10:00:05.300Z").unwrap().with_timezone(&Utc);
        assert_eq!(next_tick(t, false).to_rfc3339(), "2026-12-01T10:01:00+00:00");
        assert_eq!(next_tick(t, true).to_rfc3339(), "2026-12-01T10:00:10+00:00");
        let on = DateTime::parse_from_rfc3339("2026-12-01T10:01:00Z").unwrap().with_timezone(&Utc);
        assert_eq!(
            next_tick(on, false).to_rfc3339(),
            "2026-12-01T10:02:00+00:00",
            "never the same instant twice"
        );
    }

    #[test]
    fn a_remote_endpoint_is_refused() {
        // The only test that touches the process environment; it restores it.
        let old = std::env::var("AWS_ENDPOINT_URL").ok();
        std::env::set_var("AWS_ENDPOINT_URL", "https://dynamodb.us-east-1.amazonaws.com");
        let r = endpoint();
        match old {
            Some(v) => std::env::set_var("AWS_ENDPOINT_URL", v),
            None => std::env::remove_var("AWS_ENDPOINT_URL"),
        }
        assert!(r.is_err());
    }
}
