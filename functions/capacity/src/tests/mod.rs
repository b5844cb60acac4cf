//! Unit tests of the capacity model, by area; the helpers and scenarios they share are here.

use super::*;

mod bench;
mod fit;
mod inputs;
mod markdown;
mod model;
mod provisioned;

fn close(actual: f64, expected: f64) {
    let tol = 1e-9 * expected.abs().max(1.0);
    assert!((actual - expected).abs() <= tol, "expected {expected}, got {actual}");
}

fn run(s: &Scenario) -> Report {
    model(s, &Costs::example(), &Limits::aws_default(), &Prices::us_east_1())
}

fn peak(r: &Report, kind: PartitionKind) -> f64 {
    r.partition(kind).map_or(f64::NAN, |p| p.peak_per_sec)
}

fn checks(r: &Report) -> Vec<Check> {
    r.violations().iter().map(|v| v.check).collect()
}

fn violation(r: &Report, check: Check) -> Violation {
    r.violations().into_iter().find(|v| v.check == check).expect("violation present")
}

/// `billion` with the bucket-heavy mix of the old design (every-minute 0.2, bucket 0.8).
fn bucket_heavy_billion() -> Scenario {
    Scenario { class_mix: ClassMix { every_minute: 0.2, daily: 0.0, bucket: 0.8 }, ..Scenario::billion() }
}

/// 60 fires/s, all bucket class, one shard, one open part, one tenant, all FORBID.
fn small() -> Scenario {
    Scenario {
        name: "small".to_string(),
        schedules: 3_600,
        peak_fires_per_sec: 60.0,
        mean_fires_per_sec: 60.0,
        spike_fires: None,
        class_mix: ClassMix { every_minute: 0.0, daily: 0.0, bucket: 1.0 },
        shards: 1,
        shards_per_scan: 1,
        open_parts: 1,
        executions_tables: 1,
        tenants: 1,
        top_tenant_share: 1.0,
        tenant_limits: true,
        tenant_max_running: 12,
        top_tenant_max_running: None,
        tenant_cells: false,
        worker_concurrency_headroom: 2.0,
        tenant_gate_shards: 1,
        forbid_share: 1.0,
        worker_batch_size: 10,
        worker_mean_duration_ms: 200.0,
        worker_memory_mb: 256.0,
        tick_memory_mb: 512.0,
        scan_fires_per_sec_per_invocation: 500.0,
        retention_days: 30.0,
        audit_share: 0.0,
        audit_retention_days: 90.0,
        execution_item_bytes: 1_200.0,
        job_item_bytes: 4_096.0,
    }
}

fn fitted_billion() -> (Scenario, Report) {
    fit(&Scenario::billion(), &Costs::example(), &Limits::aws_default(), &Prices::us_east_1())
}
