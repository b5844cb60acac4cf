//! `settlement-example`: run the post-mortem scenario against the local emulator, or one
//! worker attempt (the killable child the scenario starts).
//!
//! ```text
//! . localstack/env.sh && localstack/start.sh
//! cargo run --release -p settlement-example -- demo --merchants 10000 --crash-b-at 5000
//! cargo run --release -p settlement-example -- demo --merchants 1000 --crash-b-at 500 --no-cas
//! ```

use anyhow::{bail, Result};
use clap::{Args, Parser, Subcommand};
use settlement_example::account_service::{AccountClient, AccountService};
use settlement_example::emulator::{default_endpoint, dynamo_client};
use settlement_example::scenario::{self, scheduled_at, Crash, ScenarioConfig, EXECUTION_ID};
use settlement_example::settle::{Gate, Layers, Settlement, Tables};
use std::io::Write;
use std::time::Duration;
use sundial_idempotency::ExecutionContext;

#[derive(Parser)]
#[command(about = "The settlement of docs/idempotency.md as a Sundial job, on the local emulator")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// The whole post-mortem: failover, a killed worker, re-run, stale wake-up, audit.
    Demo(Demo),
    /// One attempt of the job (the scenario starts worker B this way, then kills it).
    Worker(Worker),
}

#[derive(Args)]
struct LayerFlags {
    /// Remove the unique constraint on (merchant_id, settle_date).
    #[arg(long)]
    no_unique: bool,
    /// Remove the per-merchant CAS state machine.
    #[arg(long)]
    no_cas: bool,
    /// Use a per-attempt idempotency key on the credit instead of the per-merchant one.
    #[arg(long)]
    no_outbound_key: bool,
}

impl LayerFlags {
    fn layers(&self) -> Layers {
        Layers {
            unique_constraint: !self.no_unique,
            cas: !self.no_cas,
            outbound_idempotency: !self.no_outbound_key,
        }
    }
}

#[derive(Args)]
struct Demo {
    /// Merchants to settle.
    #[arg(long, default_value_t = 10_000)]
    merchants: usize,
    /// Where worker A pauses (after crediting, before marking settled).
    #[arg(long, default_value_t = 100)]
    pause_a_at: usize,
    /// Where worker B is killed.
    #[arg(long, default_value_t = 5_000)]
    crash_b_at: usize,
    /// Merchants in flight per worker.
    #[arg(long, default_value_t = 16)]
    lanes: usize,
    /// Drop every n-th account-service response after applying it (0: never).
    #[arg(long, default_value_t = 97)]
    drop_every: u64,
    /// Abort B in-process instead of running it as a child process killed with SIGKILL.
    #[arg(long)]
    in_process: bool,
    /// Keep the tables afterwards.
    #[arg(long)]
    keep: bool,
    #[command(flatten)]
    flags: LayerFlags,
}

#[derive(Args)]
struct Worker {
    /// Table name prefix.
    #[arg(long)]
    prefix: String,
    /// The account service.
    #[arg(long)]
    account_url: String,
    /// The emulator.
    #[arg(long)]
    endpoint: Option<String>,
    /// This attempt's fencing token.
    #[arg(long)]
    token: u64,
    /// Merchants to settle.
    #[arg(long)]
    merchants: usize,
    /// Merchants in flight.
    #[arg(long, default_value_t = 16)]
    lanes: usize,
    /// Stop after crediting this merchant, print `STOPPED {i}` and wait (to be killed).
    #[arg(long)]
    stop_at: Option<usize>,
    #[command(flatten)]
    flags: LayerFlags,
}

#[tokio::main]
async fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    match Cli::parse().cmd {
        Cmd::Demo(d) => demo(d).await,
        Cmd::Worker(w) => worker(w).await,
    }
}

async fn demo(d: Demo) -> Result<()> {
    let endpoint = default_endpoint();
    let ddb = dynamo_client(&endpoint);
    let service = AccountService::start().await?;
    let crash = if d.in_process {
        Crash::Abort
    } else {
        Crash::Kill { exe: std::env::current_exe()?, endpoint: endpoint.clone() }
    };
    let cfg = ScenarioConfig {
        merchants: d.merchants,
        pause_a_at: d.pause_a_at,
        crash_b_at: d.crash_b_at,
        lanes: d.lanes,
        layers: d.flags.layers(),
        drop_every: d.drop_every,
        crash,
    };
    let prefix = format!("demo{}-", std::process::id());
    let started = std::time::Instant::now();
    let outcome = scenario::run(&ddb, &prefix, &service, &cfg, chrono::Utc::now()).await;
    let total = started.elapsed();
    if !d.keep {
        Tables::with_prefix(&prefix).delete(&ddb).await?;
    }
    let outcome = outcome?;
    println!("{}", serde_json::to_string_pretty(&outcome)?);
    println!("total {:.1} s for {} merchants, layers {:?}", total.as_secs_f64(), d.merchants, cfg.layers);
    let dups = outcome.audit.duplicates();
    if outcome.audit.exactly_once() {
        println!("EXACTLY ONCE: every merchant settled once, credited once; reconciliation clean");
        Ok(())
    } else {
        for line in &dups {
            println!("DUPLICATE: {line}");
        }
        bail!(
            "not exactly once: {} kinds of duplicate, reconciliation: {}",
            dups.len(),
            outcome.audit.reconciliation
        )
    }
}

async fn worker(w: Worker) -> Result<()> {
    let ddb = dynamo_client(&w.endpoint.unwrap_or_else(default_endpoint));
    let job = Settlement::new(
        ddb,
        Tables::with_prefix(&w.prefix),
        AccountClient::new(w.account_url, Duration::from_secs(5)),
        w.flags.layers(),
        w.lanes,
    );
    let ctx = ExecutionContext::new(EXECUTION_ID, w.token, scheduled_at());
    let gate = w.stop_at.map(Gate::at);
    if let Some(g) = gate.clone() {
        tokio::spawn(async move {
            g.wait_reached().await;
            println!("STOPPED {}", g.position());
            let _ = std::io::stdout().flush();
        });
    }
    let summary = job.run(&ctx, w.merchants, gate, chrono::Utc::now()).await?;
    println!("{}", serde_json::to_string(&summary)?);
    Ok(())
}
