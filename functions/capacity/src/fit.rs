//! Raising the knobs to the smallest values that clear the violations they can clear.

use crate::costs::Costs;
use crate::limits::Limits;
use crate::model::model;
use crate::prices::Prices;
use crate::report::{Check, PartitionKind, Report};
use crate::scenario::Scenario;
use crate::FIT_SEARCH_BOUND;

/// Raises the knobs to the smallest values that clear every violation they can clear, in this
/// order: `shards` (powers of two up to `max_shards`, for the `due` partitions and a scan that
/// cannot finish even with one shard), `shards_per_scan` (the largest value whose scan finishes
/// in the tick), `executions_tables` (to `min_executions_tables`, i.e. with headroom),
/// `open_parts` and `tenant_gate_shards` (the smallest values under the partition limit). A knob
/// that cannot clear its violation within bounds is left as it was. Violations no knob clears
/// (jobs table quota, Lambda concurrency) stay in the returned report.
pub fn fit(s: &Scenario, c: &Costs, limits: &Limits, prices: &Prices) -> (Scenario, Report) {
    let run = |x: &Scenario| model(x, c, limits, prices);
    let mut f = s.clone();
    f.shards = fit_shards(&f, limits, &run);
    f.shards_per_scan = fit_shards_per_scan(&f, &run);
    f.executions_tables = f.executions_tables.max(run(&f).min_executions_tables);
    f.open_parts =
        fit_up(&f, f.open_parts, Check::Partition(PartitionKind::OpenIndex), &run, |x, v| x.open_parts = v);
    f.tenant_gate_shards =
        fit_up(&f, f.tenant_gate_shards, Check::Partition(PartitionKind::TenantGate), &run, |x, v| {
            x.tenant_gate_shards = v
        });
    let report = run(&f);
    (f, report)
}

/// Whether a report has a violation of any of `checks`.
fn violates(report: &Report, checks: &[Check]) -> bool {
    report.violations().iter().any(|v| checks.contains(&v.check))
}

/// The checks that more shards clear.
const SHARD_CHECKS: [Check; 5] = [
    Check::Partition(PartitionKind::DueBucketWrites),
    Check::Partition(PartitionKind::DueBucketReads),
    Check::Partition(PartitionKind::DailyReads),
    Check::Partition(PartitionKind::EveryMinuteReads),
    Check::ScanDuration,
];

/// The current shard count if it clears [`SHARD_CHECKS`] (with one shard per scan), else the
/// smallest power of two above it that does, else the current count.
fn fit_shards(s: &Scenario, limits: &Limits, run: &impl Fn(&Scenario) -> Report) -> u32 {
    let clears = |shards: u32| {
        let trial = Scenario { shards, shards_per_scan: 1, ..s.clone() };
        !violates(&run(&trial), &SHARD_CHECKS)
    };
    if clears(s.shards) {
        return s.shards;
    }
    let mut candidate = s.shards.max(1).checked_next_power_of_two();
    while let Some(shards) = candidate.filter(|v| *v <= limits.max_shards) {
        if shards > s.shards && clears(shards) {
            return shards;
        }
        candidate = shards.checked_mul(2);
    }
    s.shards
}

/// The largest `shards_per_scan` not above the current value whose scan finishes in the tick.
fn fit_shards_per_scan(s: &Scenario, run: &impl Fn(&Scenario) -> Report) -> u32 {
    let current = s.shards_per_scan.max(1);
    let clears =
        |v: u32| !violates(&run(&Scenario { shards_per_scan: v, ..s.clone() }), &[Check::ScanDuration]);
    if clears(current) {
        return s.shards_per_scan;
    }
    if !clears(1) {
        return s.shards_per_scan;
    }
    // Invariant: clears(lo), !clears(hi).
    let (mut lo, mut hi) = (1, current);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if clears(mid) {
            lo = mid
        } else {
            hi = mid
        }
    }
    lo
}

/// The smallest value in `[current, FIT_SEARCH_BOUND]` of a knob that clears `check`, found by
/// bisection (the load falls as the knob rises); the current value when none does.
fn fit_up(
    s: &Scenario,
    current: u32,
    check: Check,
    run: &impl Fn(&Scenario) -> Report,
    set: impl Fn(&mut Scenario, u32),
) -> u32 {
    let clears = |v: u32| {
        let mut trial = s.clone();
        set(&mut trial, v);
        !violates(&run(&trial), &[check])
    };
    let start = current.max(1);
    if clears(start) {
        return current;
    }
    if !clears(FIT_SEARCH_BOUND) {
        return current;
    }
    // Invariant: !clears(lo), clears(hi).
    let (mut lo, mut hi) = (start, FIT_SEARCH_BOUND);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if clears(mid) {
            hi = mid
        } else {
            lo = mid
        }
    }
    hi
}
