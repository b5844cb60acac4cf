//! A short chaos run with a fixed seed, against the emulator: three worker processes behind the
//! fault proxy, SIGKILLs and a SIGSTOP past the lease, doubled and crashing ticks, a skewed
//! worker clock, a tick outage across a minute boundary, messages silently dropped or moved to
//! the DLQ, poison job items, ticks that die mid-range, and the reconciler repairing the lost
//! deliveries. The longer run is the `chaos` binary (`docs/reliability.md`).

use std::path::PathBuf;
use std::time::Duration;
use sundial_chaos::run::{run, RunConfig};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_seeded_chaos_run_loses_no_fire_and_accepts_no_stale_write() {
    // GIVEN 8 jobs firing every 5 s for about a minute and a half, through a stormy proxy, with worker
    // faults every 5-9 s and a 36 s tick outage (16 s past a minute boundary)
    let mut rc = RunConfig::new(20_261_201, 8, 0.5, PathBuf::from(env!("CARGO_BIN_EXE_chaos")));
    rc.outage = Duration::from_secs(36);
    rc.fault_every = (Duration::from_secs(5), Duration::from_secs(9));
    rc.drain = Duration::from_secs(45);
    // WHEN the run completes
    let out = run(rc).await.unwrap_or_else(|e| panic!("the chaos run could not run: {e:#}"));
    println!("{}", out.summary());
    let r = &out.report;
    // THEN the checker found nothing wrong
    assert!(out.violations.is_empty(), "{}", out.violations.join("\n"));
    // AND every fire executed exactly once in effect
    assert!(r.fires_expected > 0);
    assert_eq!(r.executions, r.fires_expected);
    assert!(r.by_status.get("SUCCEEDED").copied().unwrap_or(0) > 0, "{:?}", r.by_status);
    // AND the faults really happened: the run is not a calm one
    assert!(out.fleet.kills >= 1 && out.fleet.pauses >= 1, "{:?}", out.fleet);
    assert!(out.ticks.skipped_in_outage > 0 && out.ticks.missed > 0, "{:?}", out.ticks);
    let injected: u64 = out
        .faults
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "requests" | "latency" | "upstream_errors"))
        .map(|(_, v)| v)
        .sum();
    assert!(injected > 0, "{:?}", out.faults);
    // AND fires scheduled in the outage started after it
    assert!(r.lag_after_outage.count > 0);
    // AND the delivery faults were on: poison items planted, the reconciler running (how many
    // messages the thief took depends on timing; the summary prints them)
    assert_eq!(out.delivery.poison_items, 2);
    assert!(out.delivery.reconcile_runs > 0, "{:?}", out.delivery);
}
