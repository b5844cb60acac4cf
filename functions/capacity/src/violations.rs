//! Which limits a report passes, each with what is over and a suggested fix.

use crate::model::{ceil_count, job_read_units};
use crate::numbers::num;
use crate::report::{CapacityUnit, Check, Knob, PartitionKind, PartitionLoad, Report, Violation};
use crate::scenario::knob;
use crate::{EVERY_MINUTE_READS_PER_TICK, TICK_PERIOD_SECONDS, TOLERANCE};

/// Whether `value` is over `limit` beyond float noise.
fn over(value: f64, limit: f64) -> bool {
    value > limit * (1.0 + TOLERANCE)
}

impl Report {
    /// Every quantity over its limit, with what is over and a suggested fix.
    pub fn violations(&self) -> Vec<Violation> {
        let mut found = self.table_violations();
        found.extend(
            self.partitions
                .iter()
                .filter(|p| over(p.peak_per_sec, p.limit))
                .map(|p| self.partition_violation(p)),
        );
        found.extend(self.scan_violation());
        found.extend(self.lambda_violation());
        found.extend(self.tenant_limit_violation());
        found
    }

    /// The hottest partition of one kind.
    pub fn partition(&self, kind: PartitionKind) -> Option<&PartitionLoad> {
        self.partitions.iter().find(|p| p.kind == kind)
    }

    fn table_violations(&self) -> Vec<Violation> {
        let (jobs, exec, limits) = (&self.jobs_table, &self.executions_table, &self.limits);
        let checks = [
            (Check::JobsTableWrites, "jobs table", jobs.peak_wcu, limits.table_wcu, CapacityUnit::Wcu),
            (Check::JobsTableReads, "jobs table", jobs.peak_rcu, limits.table_rcu, CapacityUnit::Rcu),
            (
                Check::ExecutionsTableWrites,
                "executions table",
                exec.peak_wcu,
                limits.table_wcu,
                CapacityUnit::Wcu,
            ),
            (
                Check::ExecutionsTableReads,
                "executions table",
                exec.peak_rcu,
                limits.table_rcu,
                CapacityUnit::Rcu,
            ),
        ];
        checks
            .into_iter()
            .filter(|(_, _, load, limit, _)| over(*load, *limit))
            .map(|(check, name, load, limit, unit)| {
                let what = format!("{name}: {} {}/s > {}", num(load), unit.label(), num(limit));
                self.table_fix(check, what, load, unit)
            })
            .collect()
    }

    fn table_fix(&self, check: Check, what: String, load: f64, unit: CapacityUnit) -> Violation {
        if matches!(check, Check::ExecutionsTableWrites | Check::ExecutionsTableReads) {
            let fix = format!(
                "executions_tables ≥ {} (at {}% of the table quota), or raise the per-table quota",
                self.min_executions_tables,
                num(self.limits.table_headroom * 100.0)
            );
            return Violation { check, what, fix, knob: Some(Knob::ExecutionsTables) };
        }
        let quota = load / self.limits.table_headroom;
        let fix = format!(
            "request a per-table throughput quota raise to ≥ {} {}/s (no knob splits the jobs table)",
            num(quota.ceil()),
            unit.label()
        );
        Violation { check, what, fix, knob: None }
    }

    fn partition_violation(&self, p: &PartitionLoad) -> Violation {
        let what =
            format!("{}: {} {}/s > {}", p.kind.label(), num(p.peak_per_sec), p.unit.label(), num(p.limit));
        let check = Check::Partition(p.kind);
        let s = &self.scenario;
        let (fix, knob) = match p.kind {
            PartitionKind::OpenIndex => {
                let parts = ceil_count(knob(s.open_parts) * p.peak_per_sec / p.limit);
                (
                    format!("open_parts ≥ {parts} (each executions table has its own open index)"),
                    Some(Knob::OpenParts),
                )
            }
            PartitionKind::TenantGate => {
                let items = ceil_count(knob(s.tenant_gate_shards) * p.peak_per_sec / p.limit);
                (
                    format!("split the gate into ≥ {items} items (tenant_gate_shards)"),
                    Some(Knob::TenantGateShards),
                )
            }
            PartitionKind::DueBucketWrites
            | PartitionKind::DueBucketReads
            | PartitionKind::DailyReads
            | PartitionKind::EveryMinuteReads => self.shard_fix(p),
            _ => ("fewer request units per fire on this item; no knob clears it".to_string(), None),
        };
        Violation { check, what, fix, knob }
    }

    /// Items of the whole spike and units per item behind a shard-driven partition load.
    fn shard_load_inputs(&self, kind: PartitionKind) -> (f64, f64) {
        let read_units = job_read_units(&self.scenario);
        match kind {
            PartitionKind::DueBucketWrites => {
                (self.spike.bucket_fires, self.per_fire.due_index_writes_per_bucket_fire)
            }
            PartitionKind::DueBucketReads => (self.spike.bucket_fires, read_units),
            PartitionKind::DailyReads => (self.spike.daily_fires, read_units),
            _ => (self.spike.every_minute_jobs, EVERY_MINUTE_READS_PER_TICK * read_units),
        }
    }

    /// More shards put fewer items on each `due` partition: the smallest power of two `S` with
    /// `items / S × units ≤ limit`, if it is within `max_shards`.
    fn shard_fix(&self, p: &PartitionLoad) -> (String, Option<Knob>) {
        let (items, units) = self.shard_load_inputs(p.kind);
        let needed = ceil_count(items * units / p.limit).max(self.scenario.shards);
        match needed.checked_next_power_of_two().filter(|s| *s <= self.limits.max_shards) {
            Some(shards) => (format!("shards ≥ {shards} (power of two)"), Some(Knob::Shards)),
            None => (
                format!(
                    "more than {} shards needed: throttle the scan to ≤ {} items/s per invocation",
                    num(f64::from(self.limits.max_shards)),
                    num((p.limit / units).floor())
                ),
                None,
            ),
        }
    }

    /// "scan range too large": one scan invocation cannot handle its shards within the tick.
    fn scan_violation(&self) -> Option<Violation> {
        let l = &self.lambda;
        if !over(l.scan_seconds_per_invocation, TICK_PERIOD_SECONDS) {
            return None;
        }
        let s = &self.scenario;
        let what = format!(
            "scan range too large: one scan invocation needs {} s for {} fires > {} s",
            num(l.scan_seconds_per_invocation),
            num(l.scan_fires_per_invocation),
            num(TICK_PERIOD_SECONDS)
        );
        let per_shard = self.spike.fires / knob(s.shards);
        let fit = (TICK_PERIOD_SECONDS * s.scan_fires_per_sec_per_invocation / per_shard).floor();
        let (fix, knob) = if fit >= 1.0 {
            (format!("shards_per_scan ≤ {}", num(fit)), Some(Knob::ShardsPerScan))
        } else {
            let needed =
                ceil_count(self.spike.fires / (TICK_PERIOD_SECONDS * s.scan_fires_per_sec_per_invocation));
            (format!("shards ≥ {} with shards_per_scan = 1", pow2_or_max(needed)), Some(Knob::Shards))
        };
        Some(Violation { check: Check::ScanDuration, what, fix, knob })
    }

    fn lambda_violation(&self) -> Option<Violation> {
        let l = &self.lambda;
        if !over(l.total_concurrency, l.account_limit) {
            return None;
        }
        let what = format!(
            "Lambda concurrency: {} (workers {}, scans {}, tick {}) > {}",
            num(l.total_concurrency),
            num(l.worker_concurrency),
            num(l.scan_burst_concurrency.max(l.scan_concurrency)),
            num(l.tick_concurrency),
            num(l.account_limit)
        );
        let fix = format!(
            "request an account concurrency quota raise to ≥ {} (or ECS workers)",
            num(l.total_concurrency.ceil())
        );
        Some(Violation { check: Check::LambdaConcurrency, what, fix, knob: None })
    }
}

impl Report {
    /// The largest tenant's running executions at the peak against its limit.
    fn tenant_limit_violation(&self) -> Option<Violation> {
        let s = &self.scenario;
        let need = s.top_tenant_running();
        if !s.tenant_limits || !over(need, f64::from(s.top_tenant_limit())) {
            return None;
        }
        let what = format!(
            "largest tenant: {} executions running at the peak > its running limit {}",
            num(need),
            num(f64::from(s.top_tenant_limit()))
        );
        let fix = format!(
            "give it a limit ≥ {} (workers.tenantMaxRunning.tenants), or its fires start late",
            num(need.ceil())
        );
        Some(Violation { check: Check::TenantLimit, what, fix, knob: None })
    }
}

/// The smallest power of two ≥ `n`, or `u32::MAX` when there is none.
fn pow2_or_max(n: u32) -> u32 {
    n.checked_next_power_of_two().unwrap_or(u32::MAX)
}
