//! `fault-proxy`: the seeded fault proxy on its own, for manual drills. Point a client at it with
//! `AWS_ENDPOINT_URL=http://127.0.0.1:<port>`; Ctrl-C prints what it injected.
use clap::Parser;
use std::net::SocketAddr;
use sundial_chaos::proxy::{FaultPlan, Proxy};

/// A fault-injecting proxy in front of the local emulator.
#[derive(Debug, Parser)]
struct Args {
    /// Where to listen (loopback).
    #[arg(long, default_value = "127.0.0.1:4567")]
    listen: SocketAddr,
    /// The emulator (default: AWS_ENDPOINT_URL, else http://127.0.0.1:4566).
    #[arg(long)]
    upstream: Option<String>,
    /// Seed of the fault decisions.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Start from no faults instead of the chaos run's default mix.
    #[arg(long)]
    calm: bool,
    /// Requests per thousand with added latency.
    #[arg(long)]
    latency_permille: Option<u32>,
    /// Largest added latency (ms).
    #[arg(long)]
    max_latency_ms: Option<u64>,
    /// Requests per thousand answered with HTTP 500.
    #[arg(long)]
    http500_permille: Option<u32>,
    /// Requests per thousand answered with HTTP 503.
    #[arg(long)]
    http503_permille: Option<u32>,
    /// Requests per thousand answered with the service's throttling error.
    #[arg(long)]
    throttle_permille: Option<u32>,
    /// Requests per thousand reset before forwarding.
    #[arg(long)]
    reset_permille: Option<u32>,
    /// Requests per thousand forwarded, then reset instead of answered.
    #[arg(long)]
    drop_after_apply_permille: Option<u32>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    let mut plan = if a.calm { FaultPlan::CALM } else { FaultPlan::STORMY };
    plan.latency_permille = a.latency_permille.unwrap_or(plan.latency_permille);
    plan.max_latency_ms = a.max_latency_ms.unwrap_or(plan.max_latency_ms);
    plan.http500_permille = a.http500_permille.unwrap_or(plan.http500_permille);
    plan.http503_permille = a.http503_permille.unwrap_or(plan.http503_permille);
    plan.throttle_permille = a.throttle_permille.unwrap_or(plan.throttle_permille);
    plan.reset_permille = a.reset_permille.unwrap_or(plan.reset_permille);
    plan.drop_after_apply_permille = a.drop_after_apply_permille.unwrap_or(plan.drop_after_apply_permille);
    let upstream = a.upstream.unwrap_or_else(sundial_chaos::emulator::endpoint);
    let proxy = Proxy::start(a.listen, &upstream, a.seed, plan).await?;
    eprintln!("fault proxy on {} -> {upstream}, seed {}, {plan:?}", proxy.endpoint(), a.seed);
    tokio::signal::ctrl_c().await?;
    println!("{}", serde_json::to_string_pretty(&proxy.stats().snapshot())?);
    Ok(())
}
