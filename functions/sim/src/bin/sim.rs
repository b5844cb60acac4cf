//! `sim`: runs the deterministic simulator.
//!
//! ```text
//! sim --seed 42                      # one seed (replays exactly)
//! sim --seeds 100 --from 1000        # seeds 1000..1099
//! sim --for-secs 600                 # fresh seeds until 10 minutes of real time have passed
//! options: --jobs N --tenants N --minutes N --ops-per-hour N --cancels-per-hour N --no-faults --json FILE
//!          --quiet-minutes N (simulated minutes after the faults stop, before the check; 150)
//!          --no-stalls (every fault but the zombies: CI's fresh seeds)
//!          --explain JOB (print the job's definition, actions, executions and the fault plan)
//!          --mutant NAME (switch one planted bug on: a build with `--features mutants` only)
//! ```
//! Exits 1 when a seed breaks an invariant, after printing its violations, the traces of the
//! executions involved and the command that replays it.

use std::time::{Instant, SystemTime, UNIX_EPOCH};
use sundial_sim::run::{describe, run, RunOptions};

fn arg<T: std::str::FromStr>(args: &[String], name: &str) -> Option<T> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok())
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if let Some(name) = arg::<String>(&args, "--mutant") {
        let m = sundial_mutants::Mutant::parse(&name)
            .ok_or_else(|| anyhow::anyhow!("--mutant: no planted bug is named {name:?}"))?;
        if !sundial_mutants::activate(Some(m)) {
            anyhow::bail!("--mutant: this build carries no planted bugs (build it with --features mutants)");
        }
        println!("mutant: {name}");
    }
    let fresh = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1);
    let seeds: Vec<u64> = match (arg::<u64>(&args, "--seed"), arg::<u64>(&args, "--seeds")) {
        (Some(s), _) => vec![s],
        (None, Some(n)) => {
            let from = arg::<u64>(&args, "--from").unwrap_or(fresh % 1_000_000_000);
            (from..from + n).collect()
        }
        (None, None) => Vec::new(),
    };
    let budget = arg::<u64>(&args, "--for-secs");
    let template = |seed: u64| {
        let mut o = RunOptions::new(seed);
        if let Some(v) = arg(&args, "--jobs") {
            o.profile.jobs = v;
        }
        if let Some(v) = arg(&args, "--tenants") {
            o.profile.tenants = v;
        }
        if let Some(v) = arg(&args, "--minutes") {
            o.profile.firing_minutes = v;
        }
        if let Some(v) = arg(&args, "--ops-per-hour") {
            o.profile.ops_per_hour = v;
        }
        if let Some(v) = arg(&args, "--cancels-per-hour") {
            o.profile.cancels_per_hour = v;
        }
        if let Some(v) = arg(&args, "--quiet-minutes") {
            o.quiet_minutes = v;
        }
        o.faults = !args.iter().any(|a| a == "--no-faults");
        o.stalls = !args.iter().any(|a| a == "--no-stalls");
        o.explain = arg(&args, "--explain");
        o
    };
    let started = Instant::now();
    let mut summary = Vec::new();
    let mut failed = 0;
    let mut next = fresh % 1_000_000_000;
    let mut i = 0;
    loop {
        let seed = match (seeds.get(i), budget) {
            (Some(s), _) => *s,
            (None, Some(b)) if seeds.is_empty() && started.elapsed().as_secs() < b => {
                next += 1;
                next
            }
            _ => break,
        };
        i += 1;
        let o = run(&template(seed))?;
        print!("{}", describe(&o));
        failed += usize::from(!o.violations.is_empty());
        summary.push(serde_json::json!({
            "seed": seed, "executions": o.executions, "effects": o.effects, "requests": o.requests,
            "simulatedMs": o.simulated_ms, "realMs": o.real_ms, "violations": o.violations.len(),
            "traceHash": format!("{:016x}", o.trace_hash),
        }));
    }
    let fires: u64 = summary.iter().filter_map(|s| s["executions"].as_u64()).sum();
    let secs = started.elapsed().as_secs_f64();
    println!("{} seeds, {failed} failed, {fires} executions in {secs:.1} s ({:.0} simulated fires per real second)", summary.len(), fires as f64 / secs.max(0.001));
    if let Some(path) = args.iter().position(|a| a == "--json").and_then(|i| args.get(i + 1)) {
        std::fs::write(path, serde_json::to_string_pretty(&serde_json::json!({"runs": summary}))?)?;
    }
    if failed > 0 {
        std::process::exit(1);
    }
    Ok(())
}
