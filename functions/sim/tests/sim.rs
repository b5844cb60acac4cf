//! The simulator in CI: fresh seeds for a bounded time, a replay that gives the same trace,
//! and the seeds that once failed (each names the finding it reproduced).

use std::time::{Instant, SystemTime, UNIX_EPOCH};
use sundial_sim::run::{describe, run, RunOptions};

/// Real seconds of fresh seeds per `cargo test` run (`SUNDIAL_SIM_SECS` overrides it).
fn budget_secs() -> u64 {
    std::env::var("SUNDIAL_SIM_SECS").ok().and_then(|v| v.parse().ok()).unwrap_or(120)
}

#[test]
fn fresh_seeds_keep_every_invariant() {
    let fresh = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(7);
    let started = Instant::now();
    let mut runs = 0;
    let mut failures = Vec::new();
    while runs == 0 || started.elapsed().as_secs() < budget_secs() {
        let seed = sundial_hash::splitmix64(fresh ^ runs) % 1_000_000_000;
        let o = run(&RunOptions::new(seed)).unwrap_or_else(|e| panic!("seed {seed} could not run: {e:#}"));
        eprint!("{}", describe(&o));
        if !o.violations.is_empty() {
            failures.push(describe(&o));
        }
        runs += 1;
    }
    assert!(failures.is_empty(), "{} of {runs} seeds broke an invariant:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn a_seed_replays_exactly() {
    let mut o = RunOptions::new(20_261_201);
    o.profile.firing_minutes = 60;
    o.profile.jobs = 8;
    let a = run(&o).unwrap_or_else(|e| panic!("{e:#}"));
    let b = run(&o).unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!((a.trace_hash, a.executions, a.effects), (b.trace_hash, b.executions, b.effects), "{}\n{}", describe(&a), describe(&b));
    assert!(a.executions > 0, "{}", describe(&a));
}
