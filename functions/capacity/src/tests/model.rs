//! The model's figures: tables, partitions, Lambda, SQS, the bill and the violations.

use super::*;

#[test]
fn small_scenario_tables_are_exact() {
    let r = run(&small());
    close(r.per_fire.executions_table_writes, 9.0); // execution 3 + open 2 + slot 2 + gate 2
    close(r.per_fire.jobs_table_writes, 3.0); // job 1 + due 2
    close(r.executions_table.peak_wcu, 540.0);
    close(r.executions_table.peak_rcu, 60.0);
    close(r.jobs_table.peak_wcu, 180.0 + 1.0 / 60.0);
    close(r.jobs_table.peak_rcu, 30.0);
    close(r.executions_table.wcu_of_limit, 540.0 / 40_000.0);
    assert_eq!(r.min_executions_tables, 1);
    assert!(r.violations().is_empty(), "{:?}", r.violations());
}

#[test]
fn small_scenario_partitions_are_exact() {
    let r = run(&small());
    close(peak(&r, PartitionKind::OpenIndex), 120.0);
    close(peak(&r, PartitionKind::TenantGate), 120.0);
    // 3,600 spike fires on one shard, scanned at 500/s: min(3600, 500) × 2 units.
    close(peak(&r, PartitionKind::DueBucketWrites), 1_000.0);
    // 4 KiB job items, eventually consistent: 0.5 RCU each.
    close(peak(&r, PartitionKind::DueBucketReads), 250.0);
    close(peak(&r, PartitionKind::DailyReads), 0.0);
    close(peak(&r, PartitionKind::EveryMinuteReads), 0.0);
    close(peak(&r, PartitionKind::Watermark), 1.0 / 60.0);
    close(peak(&r, PartitionKind::JobItem), 1.0);
    close(peak(&r, PartitionKind::SlotItem), 2.0);
    close(peak(&r, PartitionKind::ExecutionPartition), 3.0);
    close(r.spike.fires, 3_600.0);
    close(r.spike.bucket_fires_per_shard, 3_600.0);
    close(r.spike.daily_fires, 0.0);
}

#[test]
fn unmoved_classes_read_their_partitions() {
    // All daily: the 3,600 jobs of the spike minute sit in D#{minute}#0, scanned at 500/s.
    let daily =
        run(&Scenario { class_mix: ClassMix { every_minute: 0.0, daily: 1.0, bucket: 0.0 }, ..small() });
    close(daily.spike.daily_fires_per_shard, 3_600.0);
    close(peak(&daily, PartitionKind::DailyReads), 500.0 * 0.5);
    close(peak(&daily, PartitionKind::DueBucketReads), 0.0);
    close(peak(&daily, PartitionKind::DueBucketWrites), 0.0);
    close(peak(&daily, PartitionKind::OpenIndex), 0.0);
    // All every-minute: 3,600 jobs in E#0, read by the scan and by the verification pass.
    let every =
        run(&Scenario { class_mix: ClassMix { every_minute: 1.0, daily: 0.0, bucket: 0.0 }, ..small() });
    close(every.spike.every_minute_jobs_per_shard, 3_600.0);
    close(peak(&every, PartitionKind::EveryMinuteReads), 2.0 * 500.0 * 0.5);
    close(peak(&every, PartitionKind::DailyReads), 0.0);
    // The E# row over the limit asks for shards sized for both reads: 3,600 × 2 × 0.5 / 3,000.
    let big = Scenario { scan_fires_per_sec_per_invocation: 5_000.0, ..every.scenario.clone() };
    let r = run(&big);
    close(peak(&r, PartitionKind::EveryMinuteReads), 3_600.0);
    assert_eq!(
        violation(&r, Check::Partition(PartitionKind::EveryMinuteReads)).fix,
        "shards ≥ 2 (power of two)"
    );
}

#[test]
fn daily_class_adds_no_jobs_table_writes() {
    let daily = Scenario { class_mix: ClassMix { every_minute: 0.0, daily: 1.0, bucket: 0.0 }, ..small() };
    let r = run(&daily);
    close(r.per_fire.jobs_table_writes, 0.0);
    close(r.jobs_table.peak_wcu, 1.0 / 60.0); // the watermark only
    close(r.per_fire.executions_table_writes, 7.0); // execution 3 + slot 2 + gate 2
    close(r.per_fire.due_index_writes_per_bucket_fire, 2.0); // bucket class only, not mixed in
    close(r.jobs_table.peak_rcu, 60.0 * 0.5);
    close(r.executions_table.peak_rcu, 60.0 * 1.5);
    // Moving fires from the bucket class to the daily class removes exactly job 1 + due 2.
    let bucket = run(&small());
    close(bucket.per_fire.jobs_table_writes - r.per_fire.jobs_table_writes, 3.0);
    // Even a measured daily cost with job writes would show up; the example has none.
    assert_eq!(Costs::example().daily.write(ItemKind::Job), 0.0);
    assert_eq!(Costs::example().daily.write(ItemKind::DueIndex), 0.0);
}

#[test]
fn slot_and_tenant_gate_writes_land_on_the_executions_table() {
    assert_eq!(ItemKind::Slot.table(), Table::Executions);
    assert_eq!(ItemKind::TenantGate.table(), Table::Executions);
    for kind in [ItemKind::Job, ItemKind::DueIndex, ItemKind::Watermark, ItemKind::Other] {
        assert_eq!(kind.table(), Table::Jobs, "{kind:?}");
    }
    let with = run(&small());
    let without = run(&Scenario { forbid_share: 0.0, tenant_limits: false, ..small() });
    close(with.jobs_table.peak_wcu, without.jobs_table.peak_wcu);
    // 60 fires/s × (slot 2 + gate 2).
    close(with.executions_table.peak_wcu - without.executions_table.peak_wcu, 240.0);
}

#[test]
fn small_scenario_lambda_and_sqs_are_exact() {
    let r = run(&small());
    assert_eq!(r.lambda.scan_invocations_per_minute, 1);
    close(r.lambda.scan_fires_per_invocation, 3_600.0);
    close(r.lambda.scan_seconds_per_invocation, 7.2);
    close(r.lambda.scan_concurrency, 0.12);
    close(r.lambda.scan_burst_concurrency, 1.0);
    close(r.lambda.worker_invocations_per_sec, 6.0);
    close(r.lambda.worker_concurrency, 1.2);
    close(r.lambda.total_concurrency, 3.2);
    close(r.sqs.peak_requests_per_sec, 18.0);
    close(r.sqs.requests_per_month, 46_656_000.0);
}

#[test]
fn small_scenario_monthly_cost_is_exact() {
    let c = run(&small()).cost;
    close(c.fires, 155_520_000.0);
    close(c.dynamo_writes, 1_166.427); // (155.52M × 12 + 43,200 watermarks) × $0.625/M
    close(c.dynamo_reads, 29.16);
    close(c.storage_gb, 188.305_141_031_742_1);
    close(c.sqs, 18.6624);
    close(c.lambda_requests, 3.127_68);
    close(c.lambda_compute, 12.729_663_648);
    close(c.total, 1_277.183_028_905_935_8);
    close(c.eventbridge_scheduler, 155.52);
    close(c.per_million_fires, 1_277.183_028_905_935_8 / 155.52);
    close(c.ratio_to_eventbridge, 1_277.183_028_905_935_8 / 155.52);
}

#[test]
fn doubling_peak_doubles_table_load() {
    // (a tenant limit below the capacity of both, so both pay the gate)
    let base = Scenario { tenant_max_running: 50, ..Scenario::eventbridge_default() };
    let double = Scenario { peak_fires_per_sec: 2_000.0, ..base.clone() };
    let (a, b) = (run(&base), run(&double));
    let watermarks = 4096.0 / 60.0;
    close(b.executions_table.peak_wcu, 2.0 * a.executions_table.peak_wcu);
    close(b.executions_table.peak_rcu, 2.0 * a.executions_table.peak_rcu);
    close(b.jobs_table.peak_wcu - watermarks, 2.0 * (a.jobs_table.peak_wcu - watermarks));
    close(peak(&b, PartitionKind::OpenIndex), 2.0 * peak(&a, PartitionKind::OpenIndex));
    close(peak(&b, PartitionKind::TenantGate), 2.0 * peak(&a, PartitionKind::TenantGate));
    close(b.lambda.worker_concurrency, 2.0 * a.lambda.worker_concurrency);
}

#[test]
fn splitting_knobs_divide_their_load() {
    let base = Scenario::billion();
    let split = Scenario { open_parts: 64, tenant_gate_shards: 4, executions_tables: 4, ..base.clone() };
    let (a, b) = (run(&base), run(&split));
    close(peak(&b, PartitionKind::OpenIndex), peak(&a, PartitionKind::OpenIndex) / 16.0);
    close(peak(&b, PartitionKind::TenantGate), peak(&a, PartitionKind::TenantGate) / 4.0);
    close(b.executions_table.peak_wcu, a.executions_table.peak_wcu / 4.0);
    close(b.jobs_table.peak_wcu, a.jobs_table.peak_wcu);
}

#[test]
fn conditional_kinds_follow_the_scenario() {
    let base = small();
    let off = Scenario { tenant_limits: false, forbid_share: 0.25, ..base.clone() };
    let r = run(&off);
    close(peak(&r, PartitionKind::TenantGate), 0.0);
    // execution 3 + open 2 + slot 2 × 0.25; no gate. The jobs table keeps job 1 + due 2.
    close(r.per_fire.executions_table_writes, 5.5);
    close(r.per_fire.jobs_table_writes, 3.0);
    let none = run(&Scenario { forbid_share: 0.0, ..base });
    close(peak(&none, PartitionKind::SlotItem), 0.0);
}

#[test]
fn spike_override_moves_scan_and_due_but_not_tables() {
    let base = Scenario::eventbridge_default();
    let spiky = Scenario { spike_fires: Some(600_000.0), ..base.clone() };
    let (a, b) = (run(&base), run(&spiky));
    close(a.spike.fires, 60_000.0);
    close(b.spike.fires, 600_000.0);
    close(b.jobs_table.peak_wcu, a.jobs_table.peak_wcu);
    // Only the bucket share moves: 600,000 × 0.2 / 4096 = 29.3 fires per shard < 500/s: all
    // in one second, × 2 units.
    close(peak(&b, PartitionKind::DueBucketWrites), 600_000.0 * 0.2 / 4096.0 * 2.0);
    // 600,000 × 0.7 / 4096 = 102.5 daily jobs per shard, 1,000-byte items.
    close(peak(&b, PartitionKind::DailyReads), 600_000.0 * 0.7 / 4096.0 * 1_000.0 / 4096.0 * 0.5);
    // E# depends on the peak rate, not on the spike: 1,000 × 0.1 × 60 jobs, read twice.
    close(peak(&b, PartitionKind::EveryMinuteReads), peak(&a, PartitionKind::EveryMinuteReads));
    close(b.lambda.scan_seconds_per_invocation, 600_000.0 * 64.0 / 4096.0 / 500.0);
}

#[test]
fn eventbridge_default_fits_without_violations() {
    let r = run(&Scenario::eventbridge_default());
    assert!(r.violations().is_empty(), "{:?}", r.violations());
    // Jobs table: bucket 0.2 × (job 1 + due 2); the daily and every-minute classes add none.
    close(r.per_fire.jobs_table_writes, 0.6);
    close(r.jobs_table.peak_wcu, 1_000.0 * 0.6 + 4096.0 / 60.0);
    close(r.jobs_table.peak_rcu, 500.0);
    // Executions: execution 3 + open 0.2 × 2 + slot 0.5 × 2 = 4.4, and no gate: the workers'
    // capacity (20 invocations at the peak × 2 headroom × 10 a batch = 400) is below the default
    // tenant limit of 500, so no tenant can be refused and the worker writes no gate;
    // reads 0.8 × 1.5 + 0.2 × 1 = 1.4.
    close(r.scenario.worker_capacity(), 400.0);
    close(r.scenario.gate_share(), 0.0);
    close(r.executions_table.peak_wcu, 4_400.0);
    close(r.executions_table.peak_rcu, 1_400.0);
    close(peak(&r, PartitionKind::OpenIndex), 25.0);
    close(peak(&r, PartitionKind::TenantGate), 0.0);
    // With a limit below the capacity the gate is paid: 2 writes a fire, 200 WCU/s on the
    // largest tenant's gate item.
    let limited = run(&Scenario { tenant_max_running: 100, ..Scenario::eventbridge_default() });
    close(limited.executions_table.peak_wcu, 6_400.0);
    close(peak(&limited, PartitionKind::TenantGate), 200.0);
    close(peak(&r, PartitionKind::DueBucketWrites), 60_000.0 * 0.2 / 4096.0 * 2.0);
    let job_read = 1_000.0 / 4096.0 * 0.5;
    close(peak(&r, PartitionKind::DailyReads), 60_000.0 * 0.7 / 4096.0 * job_read);
    close(peak(&r, PartitionKind::EveryMinuteReads), 6_000.0 / 4096.0 * 2.0 * job_read);
    close(r.lambda.scan_seconds_per_invocation, 1.875);
    close(r.lambda.worker_concurrency, 20.0);
    close(r.cost.eventbridge_scheduler, 777.6);
    let (fitted, report) = fit(
        &Scenario::eventbridge_default(),
        &Costs::example(),
        &Limits::aws_default(),
        &Prices::us_east_1(),
    );
    assert_eq!(fitted, Scenario::eventbridge_default());
    assert_eq!(report, r);
}

#[test]
fn billion_flags_every_passed_limit() {
    let r = run(&Scenario::billion());
    let found = checks(&r);
    for check in [
        Check::JobsTableWrites,
        Check::JobsTableReads,
        Check::ExecutionsTableWrites,
        Check::ExecutionsTableReads,
        Check::Partition(PartitionKind::OpenIndex),
        Check::Partition(PartitionKind::TenantGate),
        Check::ScanDuration,
        Check::LambdaConcurrency,
    ] {
        assert!(found.contains(&check), "missing {check:?} in {found:?}");
    }
    assert_eq!(found.len(), 8, "{found:?}");
    assert_eq!(r.min_executions_tables, 20); // 640,000 WCU / 32,000
                                             // 1.2M bucket fires / 4096 = 293 per shard, × 2 units.
    close(peak(&r, PartitionKind::DueBucketWrites), 1_200_000.0 / 4096.0 * 2.0);
    // 4.2M daily jobs / 4096 = 1,025 per shard, scanned at 500/s.
    close(peak(&r, PartitionKind::DailyReads), 500.0 * 1_000.0 / 4096.0 * 0.5);
    let gate = violation(&r, Check::Partition(PartitionKind::TenantGate));
    assert_eq!(gate.what, "tenant gate item T#{top}#RUN: 20,000 WCU/s > 1,000");
    assert_eq!(gate.fix, "split the gate into ≥ 20 items (tenant_gate_shards)");
    let open = violation(&r, Check::Partition(PartitionKind::OpenIndex));
    assert!(open.what.contains("2,500 WCU/s"), "{}", open.what);
    assert!(open.fix.starts_with("open_parts ≥ 40"), "{}", open.fix);
    let scan = violation(&r, Check::ScanDuration);
    assert!(scan.what.starts_with("scan range too large"), "{}", scan.what);
    assert!(scan.what.contains("188 s"), "{}", scan.what);
    assert_eq!(scan.fix, "shards_per_scan ≤ 20");
    assert!(violation(&r, Check::ExecutionsTableWrites).fix.starts_with("executions_tables ≥ 20"));
    assert_eq!(violation(&r, Check::LambdaConcurrency).knob, None);
}

#[test]
fn the_gate_is_paid_only_by_tenants_whose_limit_is_below_the_worker_capacity() {
    // 10 million: 20 invocations at the peak × 2 × 10 a batch = 400 executions at once
    let s = Scenario::eventbridge_default();
    close(s.worker_capacity(), 400.0);
    close(s.gate_share(), 0.0);
    // a default limit below the capacity gates every fire; the largest tenant (10 %) given a
    // limit at the capacity is not gated
    let below = Scenario { tenant_max_running: 399, ..s.clone() };
    close(below.gate_share(), 1.0);
    close(Scenario { top_tenant_max_running: Some(400), ..below.clone() }.gate_share(), 0.9);
    close(Scenario { tenant_limits: false, ..below }.gate_share(), 0.0);
    // 1 billion: 40,000 at once, so every tenant is gated; its largest tenant runs 2,000 at the
    // peak, which its own limit admits (the default 500 would not: a violation)
    let b = Scenario::billion();
    close(b.worker_capacity(), 40_000.0);
    close(b.gate_share(), 1.0);
    close(b.top_tenant_running(), 2_000.0);
    assert!(!run(&b).violations().iter().any(|v| v.check == Check::TenantLimit));
    let v = violation(&run(&Scenario { top_tenant_max_running: None, ..b }), Check::TenantLimit);
    assert!(v.what.contains("2,000") && v.what.contains("500"), "{}", v.what);
}
