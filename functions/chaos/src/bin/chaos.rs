//! `chaos`: the seeded chaos run (`chaos --seed 7 --jobs 40 --minutes 10`), and its worker
//! process (`chaos worker`, started by the run itself). Exits non-zero when the checker finds a
//! violation.
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::time::Duration;
use sundial_chaos::proxy::FaultPlan;
use sundial_chaos::run::{run, RunConfig};

/// Seeded fault injection against Sundial on the local emulator.
#[derive(Debug, Parser)]
struct Args {
    #[command(subcommand)]
    cmd: Option<Cmd>,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Jobs (each fires every --rate-secs).
    #[arg(long, default_value_t = 20)]
    jobs: u32,
    /// Minutes of firing (at least; the outage and 10 s after it always fit).
    #[arg(long, default_value_t = 3.0)]
    minutes: f64,
    /// Period of each job (s).
    #[arg(long, default_value_t = 5)]
    rate_secs: u32,
    /// Worker processes.
    #[arg(long, default_value_t = 3)]
    workers: usize,
    /// Tick outage (s; it starts 20 s before a minute boundary).
    #[arg(long, default_value_t = 60)]
    outage_secs: u64,
    /// Normal running before the outage (s, at least).
    #[arg(long, default_value_t = 10)]
    outage_after_secs: u64,
    /// Clock offset of worker 0 (ms).
    #[arg(long, default_value_t = 2_500)]
    skew_ms: i64,
    /// No proxy faults (workers, ticks and the outage still misbehave).
    #[arg(long)]
    calm: bool,
    /// Keep tables, queues and the run directory (journal, worker logs).
    #[arg(long)]
    keep: bool,
    /// Also write the outcome as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Per mille of the messages the thief takes (10 every 2 s) that are silently dropped.
    #[arg(long, default_value_t = 100)]
    loss_permille: u32,
    /// Per mille of the messages the thief takes that are moved to the DLQ (execution open).
    #[arg(long, default_value_t = 50)]
    dlq_permille: u32,
    /// Undecodable job items planted in the due index.
    #[arg(long, default_value_t = 2)]
    poison_items: u32,
    /// Per mille of ticks that die mid-range (scan only the first shards).
    #[arg(long, default_value_t = 100)]
    tick_dies_permille: u32,
    /// Handler work per execution, min and max (ms).
    #[arg(long, num_args = 2, default_values_t = [100, 900])]
    work_ms: Vec<u64>,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Internal: one worker process of a run.
    #[command(hide = true)]
    Worker,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    if let Some(Cmd::Worker) = a.cmd {
        return sundial_chaos::worker::main().await;
    }
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,aws=warn")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
    let mut rc = RunConfig::new(a.seed, a.jobs, a.minutes, std::env::current_exe()?);
    rc.rate_secs = a.rate_secs;
    rc.workers = a.workers.max(1);
    rc.outage = Duration::from_secs(a.outage_secs);
    rc.outage_after = Duration::from_secs(a.outage_after_secs);
    rc.skew_ms = a.skew_ms;
    rc.keep = a.keep;
    rc.loss_permille = a.loss_permille;
    rc.dlq_permille = a.dlq_permille;
    rc.poison_items = a.poison_items;
    rc.tick_dies_permille = a.tick_dies_permille;
    if let [lo, hi] = a.work_ms[..] {
        rc.work_ms = (lo.min(hi), hi.max(lo));
    }
    if a.calm {
        rc.plan = FaultPlan::CALM;
    }
    let out = run(rc).await?;
    print!("{}", out.summary());
    if let Some(p) = a.json {
        std::fs::write(p, serde_json::to_string_pretty(&out.to_json())?)?;
    }
    if !out.violations.is_empty() {
        std::process::exit(1);
    }
    Ok(())
}
