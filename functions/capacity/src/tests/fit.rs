//! `fit`: each knob raised (or lowered) to the smallest value that clears its violation.

use super::*;

#[test]
fn fit_clears_billion_knob_violations_minimally() {
    let (f, r) = fitted_billion();
    assert_eq!(
        (f.shards, f.shards_per_scan, f.executions_tables, f.open_parts, f.tenant_gate_shards),
        (4096, 20, 20, 16, 20)
    );
    let left = checks(&r);
    assert_eq!(left, vec![Check::JobsTableWrites, Check::JobsTableReads, Check::LambdaConcurrency]);
    assert!(r.violations().iter().all(|v| v.knob.is_none()));
    // One step back on each knob fit turned brings its violation back.
    let gate = run(&Scenario { tenant_gate_shards: 19, ..f.clone() });
    assert!(checks(&gate).contains(&Check::Partition(PartitionKind::TenantGate)));
    let scan = run(&Scenario { shards_per_scan: 21, ..f.clone() });
    assert!(checks(&scan).contains(&Check::ScanDuration));
    let tables = run(&Scenario { executions_tables: 19, ..f.clone() });
    assert!(tables.executions_table.peak_wcu > 40_000.0 * 0.8);
    assert_eq!(r.min_executions_tables, 20);
    close(r.executions_table.peak_wcu, 640_000.0 / 20.0);
    // With 20 tables, each table's own open index of 16 parts is below the limit.
    close(peak(&r, PartitionKind::OpenIndex), 100_000.0 * 0.4 / 320.0);
}

#[test]
fn fit_raises_open_parts_to_the_minimum() {
    // Only bucket-class fires touch the open index: 0.2 × 2 = 0.4 units per fire.
    let s = Scenario { peak_fires_per_sec: 4_500.0, open_parts: 1, ..Scenario::eventbridge_default() };
    let before = run(&s);
    assert_eq!(checks(&before), vec![Check::Partition(PartitionKind::OpenIndex)]);
    close(peak(&before, PartitionKind::OpenIndex), 1_800.0);
    let (f, r) = fit(&s, &Costs::example(), &Limits::aws_default(), &Prices::us_east_1());
    assert_eq!(f.open_parts, 2); // 4,500 × 0.4 / 1,000 = 1.8
    assert!(r.violations().is_empty());
    assert_eq!(Scenario { open_parts: 1, ..f }, s);
}

#[test]
fn fit_raises_tenant_gate_shards_to_the_minimum() {
    // 1,000 fires/s × 0.5 × 2 units = 1,000 WCU/s: at the limit, not over it.
    let s = Scenario { top_tenant_share: 0.5, tenant_max_running: 200, ..Scenario::eventbridge_default() };
    let at = run(&s);
    close(peak(&at, PartitionKind::TenantGate), 1_000.0);
    assert!(at.violations().is_empty(), "{:?}", at.violations());
    // 1,000 × 0.5 × 2 = 1,000: at the limit, no violation; 0.6 → 1,200.
    let s = Scenario { top_tenant_share: 0.6, ..s };
    let v = violation(&run(&s), Check::Partition(PartitionKind::TenantGate));
    assert_eq!(v.fix, "split the gate into ≥ 2 items (tenant_gate_shards)");
    let (f, r) = fit(&s, &Costs::example(), &Limits::aws_default(), &Prices::us_east_1());
    assert_eq!(f.tenant_gate_shards, 2);
    assert!(r.violations().is_empty());
}

#[test]
fn fit_raises_shards_in_powers_of_two() {
    // Scanning at 2,000 fires/s, one shard's bucket spike (1,172 fires) lands in ~0.6 s.
    let s = Scenario { scan_fires_per_sec_per_invocation: 2_000.0, ..bucket_heavy_billion() };
    let r = run(&s);
    close(peak(&r, PartitionKind::DueBucketWrites), 4_800_000.0 / 4096.0 * 2.0);
    let v = violation(&r, Check::Partition(PartitionKind::DueBucketWrites));
    assert_eq!(v.fix, "shards ≥ 16384 (power of two)"); // 4.8M × 2 / 1,000 = 9,600
    let (f, fitted) = fit(&s, &Costs::example(), &Limits::aws_default(), &Prices::us_east_1());
    assert_eq!(f.shards, 16_384);
    assert!(!checks(&fitted).contains(&Check::Partition(PartitionKind::DueBucketWrites)));
    assert!(!checks(&fitted).contains(&Check::ScanDuration));
    let half = run(&Scenario { shards: 8_192, ..f });
    assert!(checks(&half).contains(&Check::Partition(PartitionKind::DueBucketWrites)));
}

#[test]
fn fit_raises_shards_for_the_daily_partition() {
    // 64 KiB job items: 8 RCU each. 4.2M daily jobs / 4096 = 1,025 per shard, scanned at
    // 2,000/s: 8,203 RCU/s on one D# partition.
    let s = Scenario {
        scan_fires_per_sec_per_invocation: 2_000.0,
        job_item_bytes: 65_536.0,
        ..Scenario::billion()
    };
    let r = run(&s);
    close(peak(&r, PartitionKind::DailyReads), 4_200_000.0 / 4096.0 * 8.0);
    let v = violation(&r, Check::Partition(PartitionKind::DailyReads));
    assert_eq!(v.fix, "shards ≥ 16384 (power of two)"); // 4.2M × 8 / 3,000 = 11,200
    assert!(!checks(&r).contains(&Check::Partition(PartitionKind::DueBucketReads)));
    let (f, fitted) = fit(&s, &Costs::example(), &Limits::aws_default(), &Prices::us_east_1());
    assert_eq!(f.shards, 16_384);
    assert!(!checks(&fitted).contains(&Check::Partition(PartitionKind::DailyReads)));
    let half = run(&Scenario { shards: 8_192, ..f });
    assert!(checks(&half).contains(&Check::Partition(PartitionKind::DailyReads)));
}

#[test]
fn scan_too_slow_even_per_shard_raises_shards_then_lowers_shards_per_scan() {
    let s = Scenario { shards: 64, ..Scenario::billion() };
    let v = violation(&run(&s), Check::ScanDuration);
    // 6,000,000 / 64 = 93,750 fires per shard: 187.5 s even alone; 6M / (60 × 500) = 200.
    assert_eq!(v.fix, "shards ≥ 256 with shards_per_scan = 1");
    let (f, r) = fit(&s, &Costs::example(), &Limits::aws_default(), &Prices::us_east_1());
    assert_eq!((f.shards, f.shards_per_scan), (256, 1));
    assert!(!checks(&r).contains(&Check::ScanDuration));
    close(r.lambda.scan_seconds_per_invocation, 6_000_000.0 / 256.0 / 500.0);
}

#[test]
fn unclearable_shard_violation_needs_another_fix() {
    let s = Scenario { scan_fires_per_sec_per_invocation: 2_000.0, ..bucket_heavy_billion() };
    let tight = Limits { max_shards: 8_192, ..Limits::aws_default() };
    let r = model(&s, &Costs::example(), &tight, &Prices::us_east_1());
    let v = violation(&r, Check::Partition(PartitionKind::DueBucketWrites));
    assert_eq!(v.knob, None);
    assert!(v.fix.contains("≤ 500 items/s"), "{}", v.fix);
    let (f, _) = fit(&s, &Costs::example(), &tight, &Prices::us_east_1());
    assert_eq!(f.shards, 4096);
}
