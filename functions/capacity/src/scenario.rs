//! The load scenario and the deployment's knobs, with the canned scenarios.

use serde::{Deserialize, Serialize};

use crate::validate::{check_non_negative, check_positive, check_share};
use crate::TICK_PERIOD_SECONDS;

/// A knob clamped to at least 1, as f64 (the model treats knobs of 0 as 1).
pub(crate) fn knob(value: u32) -> f64 {
    f64::from(value.max(1))
}

/// Share of fires coming from each trigger class; the three shares sum to 1.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClassMix {
    /// Share of fires from every-minute-class jobs.
    pub every_minute: f64,
    /// Share of fires from daily-class jobs.
    pub daily: f64,
    /// Share of fires from bucket-class jobs.
    pub bucket: f64,
}

impl ClassMix {
    /// The canned scenarios' mix: every-minute 0.10, daily 0.70, bucket 0.20.
    pub fn typical() -> ClassMix {
        ClassMix { every_minute: 0.10, daily: 0.70, bucket: 0.20 }
    }
}

/// A load scenario plus the configurable knobs of the deployment.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Scenario {
    /// Name shown as the column header of the markdown table.
    pub name: String,
    /// Number of enabled schedules (jobs).
    pub schedules: u64,
    /// Highest sustained fire rate, e.g. over the top-of-the-hour minute.
    pub peak_fires_per_sec: f64,
    /// Mean fire rate over the month (drives the monthly cost).
    pub mean_fires_per_sec: f64,
    /// Fires due in the peak minute; `None` means `peak_fires_per_sec × 60`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spike_fires: Option<f64>,
    /// Share of fires per trigger class.
    pub class_mix: ClassMix,
    /// Logical shards of the `due` index (knob; powers of two up to 65,536 in [`fit`](fn@crate::fit)).
    pub shards: u32,
    /// Shards handled by one scan invocation (knob; [`fit`](fn@crate::fit) lowers it).
    pub shards_per_scan: u32,
    /// Partitions of the `open` index per executions table (knob).
    pub open_parts: u32,
    /// Executions tables, split by shard range (knob).
    pub executions_tables: u32,
    /// Number of tenants.
    pub tenants: u64,
    /// Share of all fires that belong to the largest tenant.
    pub top_tenant_share: f64,
    /// Whether tenant running limits are on (`tenantMaxRunning`: the deployment's default is on,
    /// 500 a tenant). A tenant's fires touch its gate only when its limit is below the stack's
    /// worker capacity ([`Scenario::gate_applies`]).
    pub tenant_limits: bool,
    /// Every tenant's running limit (the code's default: 500).
    #[serde(default = "d_tenant_max_running")]
    pub tenant_max_running: u32,
    /// The largest tenant's own limit, when it has one (`tenantMaxRunning.tenants`).
    #[serde(default)]
    pub top_tenant_max_running: Option<u32>,
    /// Tenant cells: the pools split so that each tenant runs only in pools (its cell, through
    /// its `tenantTargets` `pools` allowlist) whose capacity is its own running limit, so no
    /// tenant's gate can refuse and none is written (`SUNDIAL_POOL_CAPACITY`). Default off.
    #[serde(default)]
    pub tenant_cells: bool,
    /// The worker pool's event-source maximum concurrency as a multiple of the peak's need
    /// (Little's law: peak fires ÷ batch × invocation time); the stack's worker capacity is
    /// that concurrency × the batch size.
    #[serde(default = "d_worker_concurrency_headroom")]
    pub worker_concurrency_headroom: f64,
    /// Items the running gate of one tenant is split into (knob).
    pub tenant_gate_shards: u32,
    /// Share of fires from jobs with concurrency policy FORBID (they use a slot item).
    pub forbid_share: f64,
    /// SQS batch size of the worker event source (1..=10).
    pub worker_batch_size: u32,
    /// Mean duration of one worker invocation, in milliseconds.
    pub worker_mean_duration_ms: f64,
    /// Memory of the worker Lambda, in MB.
    pub worker_memory_mb: f64,
    /// Memory of the tick (and scan) Lambda, in MB.
    pub tick_memory_mb: f64,
    /// Measured fires one scan invocation processes per second.
    pub scan_fires_per_sec_per_invocation: f64,
    /// Days an execution that succeeded is kept after it finished (the store's
    /// `SUCCEEDED_RETENTION_SECS`: 7).
    pub retention_days: f64,
    /// Share of executions kept for the audit trail instead: those that end otherwise than
    /// SUCCEEDED (failed, dead, canceled, skipped) and the children of fan-out jobs.
    #[serde(default = "d_audit_share")]
    pub audit_share: f64,
    /// Days those are kept (the store's `EXECUTION_RETENTION_SECS`: 90).
    #[serde(default = "d_audit_retention_days")]
    pub audit_retention_days: f64,
    /// Size of one execution item, in bytes.
    pub execution_item_bytes: f64,
    /// Size of one job item as read through the `due` index, in bytes.
    pub job_item_bytes: f64,
}

impl Scenario {
    /// 10,000,000 schedules, peak 1,000 fires/s, mean 300 fires/s, [`ClassMix::typical`],
    /// default knobs.
    pub fn eventbridge_default() -> Scenario {
        Scenario {
            name: "EventBridge default".to_string(),
            schedules: 10_000_000,
            peak_fires_per_sec: 1_000.0,
            mean_fires_per_sec: 300.0,
            spike_fires: None,
            class_mix: ClassMix::typical(),
            shards: 4096,
            shards_per_scan: 64,
            open_parts: 16,
            executions_tables: 1,
            tenants: 10_000,
            top_tenant_share: 0.1,
            tenant_limits: true,
            tenant_max_running: d_tenant_max_running(),
            top_tenant_max_running: None,
            tenant_cells: false,
            worker_concurrency_headroom: d_worker_concurrency_headroom(),
            tenant_gate_shards: 1,
            forbid_share: 0.5,
            worker_batch_size: 10,
            worker_mean_duration_ms: 200.0,
            worker_memory_mb: 256.0,
            tick_memory_mb: 512.0,
            scan_fires_per_sec_per_invocation: 500.0,
            retention_days: 7.0,
            audit_share: d_audit_share(),
            audit_retention_days: d_audit_retention_days(),
            execution_item_bytes: 1_200.0,
            job_item_bytes: 1_000.0,
        }
    }

    /// 1,000,000,000 schedules, peak 100,000 fires/s, mean 20,000 fires/s,
    /// [`ClassMix::typical`], default knobs.
    pub fn billion() -> Scenario {
        Scenario {
            name: "1 billion".to_string(),
            schedules: 1_000_000_000,
            peak_fires_per_sec: 100_000.0,
            mean_fires_per_sec: 20_000.0,
            // its largest tenant runs 2,000 at the peak: above the default limit of 500
            top_tenant_max_running: Some(2_000),
            ..Scenario::eventbridge_default()
        }
    }

    /// Worker invocations running at once at the peak (Little's law).
    pub fn peak_worker_concurrency(&self) -> f64 {
        self.peak_fires_per_sec / f64::from(self.worker_batch_size.max(1)) * self.worker_mean_duration_ms
            / 1000.0
    }

    /// The most executions the stack's workers can run at once (`SUNDIAL_WORKER_CAPACITY`, which
    /// the CDK derives from the pools): the event source's maximum concurrency
    /// (`worker_concurrency_headroom` × the peak's need, at least 2, the event source's minimum)
    /// × the batch size.
    pub fn worker_capacity(&self) -> f64 {
        let max_concurrency =
            (self.peak_worker_concurrency() * self.worker_concurrency_headroom).ceil().max(2.0);
        max_concurrency * f64::from(self.worker_batch_size.max(1))
    }

    /// The largest tenant's running limit.
    pub fn top_tenant_limit(&self) -> u32 {
        self.top_tenant_max_running.unwrap_or(self.tenant_max_running)
    }

    /// Share of fires that pay the tenant running gate: those of tenants whose limit is below
    /// the stack's worker capacity (a limit at or above it cannot refuse, so the worker does not
    /// write the gate); 0 with limits off.
    pub fn gate_share(&self) -> f64 {
        if !self.tenant_limits || self.tenant_cells {
            return 0.0;
        }
        let gated = |limit: u32| if f64::from(limit) < self.worker_capacity() { 1.0 } else { 0.0 };
        self.top_tenant_share * gated(self.top_tenant_limit())
            + (1.0 - self.top_tenant_share) * gated(self.tenant_max_running)
    }

    /// With [`Self::tenant_cells`]: the pools the stack's capacity is split into, each the
    /// capacity of the tenants' default limit, and one of the largest tenant's own limit when it
    /// has one (`None` without cells or limits).
    pub fn cell_pools(&self) -> Option<u64> {
        if !self.tenant_cells || !self.tenant_limits {
            return None;
        }
        let own = self.top_tenant_max_running.filter(|l| *l != self.tenant_max_running);
        let rest = self.worker_capacity() - own.map_or(0.0, f64::from);
        let cells = (rest.max(0.0) / f64::from(self.tenant_max_running.max(1))).ceil().max(1.0) as u64;
        Some(cells + u64::from(own.is_some()))
    }

    /// Executions of the largest tenant running at once at the peak (its share of the fires ×
    /// the time one run holds a worker).
    pub fn top_tenant_running(&self) -> f64 {
        self.peak_fires_per_sec * self.top_tenant_share * self.worker_mean_duration_ms / 1000.0
    }

    /// Mean days an execution item is stored: the succeeded tier and the audit tier, weighted.
    pub fn stored_days(&self) -> f64 {
        (1.0 - self.audit_share) * self.retention_days + self.audit_share * self.audit_retention_days
    }

    /// Fires due in the peak minute: `spike_fires`, or `peak_fires_per_sec × 60` when unset.
    pub fn peak_minute_fires(&self) -> f64 {
        self.spike_fires.unwrap_or(self.peak_fires_per_sec * TICK_PERIOD_SECONDS)
    }

    /// Parses a scenario from JSON (camelCase keys) and validates it.
    pub fn from_json(json: &str) -> Result<Scenario, String> {
        let scenario: Scenario = serde_json::from_str(json).map_err(|e| format!("scenario JSON: {e}"))?;
        scenario.validate()?;
        Ok(scenario)
    }

    /// Checks shares, rates, sizes and knobs; [`model`](fn@crate::model) clamps knobs to at least 1
    /// regardless.
    pub fn validate(&self) -> Result<(), String> {
        self.validate_rates()?;
        self.validate_shares()?;
        self.validate_knobs()
    }

    fn validate_rates(&self) -> Result<(), String> {
        check_non_negative("peakFiresPerSec", self.peak_fires_per_sec)?;
        check_non_negative("meanFiresPerSec", self.mean_fires_per_sec)?;
        if self.mean_fires_per_sec > self.peak_fires_per_sec {
            return Err("meanFiresPerSec must not exceed peakFiresPerSec".to_string());
        }
        if let Some(spike) = self.spike_fires {
            check_non_negative("spikeFires", spike)?;
        }
        check_positive("scanFiresPerSecPerInvocation", self.scan_fires_per_sec_per_invocation)?;
        check_non_negative("workerMeanDurationMs", self.worker_mean_duration_ms)?;
        if self.worker_concurrency_headroom < 1.0 || !self.worker_concurrency_headroom.is_finite() {
            return Err("workerConcurrencyHeadroom must be at least 1".to_string());
        }
        check_positive("workerMemoryMb", self.worker_memory_mb)?;
        check_positive("tickMemoryMb", self.tick_memory_mb)?;
        check_non_negative("retentionDays", self.retention_days)?;
        check_non_negative("auditRetentionDays", self.audit_retention_days)?;
        check_non_negative("executionItemBytes", self.execution_item_bytes)?;
        check_non_negative("jobItemBytes", self.job_item_bytes)
    }

    fn validate_shares(&self) -> Result<(), String> {
        let mix = &self.class_mix;
        check_share("classMix.everyMinute", mix.every_minute)?;
        check_share("classMix.daily", mix.daily)?;
        check_share("classMix.bucket", mix.bucket)?;
        if (mix.every_minute + mix.daily + mix.bucket - 1.0).abs() > 1e-6 {
            return Err("classMix shares must sum to 1".to_string());
        }
        check_share("topTenantShare", self.top_tenant_share)?;
        check_share("forbidShare", self.forbid_share)?;
        check_share("auditShare", self.audit_share)?;
        if self.tenants == 0 {
            return Err("tenants must be at least 1".to_string());
        }
        if self.top_tenant_share * (self.tenants as f64) < 1.0 - 1e-6 {
            return Err("topTenantShare must be at least 1 / tenants".to_string());
        }
        Ok(())
    }

    fn validate_knobs(&self) -> Result<(), String> {
        let knobs = [
            ("shards", self.shards),
            ("shardsPerScan", self.shards_per_scan),
            ("openParts", self.open_parts),
            ("executionsTables", self.executions_tables),
            ("tenantGateShards", self.tenant_gate_shards),
            ("workerBatchSize", self.worker_batch_size),
            ("tenantMaxRunning", self.tenant_max_running),
            ("topTenantMaxRunning", self.top_tenant_max_running.unwrap_or(1)),
        ];
        match knobs.iter().find(|(_, value)| *value == 0) {
            Some((name, _)) => Err(format!("{name} must be at least 1")),
            None => Ok(()),
        }
    }
}

/// The default share of executions kept for the audit trail: 2 % (failures, cancels, skips and
/// fan-out children are rare in the typical mix).
fn d_audit_share() -> f64 {
    0.02
}

/// The code's default tenant running limit (`resources.json` `defaults.tenantMaxRunning`).
fn d_tenant_max_running() -> u32 {
    500
}

/// Event-source maximum concurrency at twice the peak's need.
fn d_worker_concurrency_headroom() -> f64 {
    2.0
}

/// The audit tier: 90 days.
fn d_audit_retention_days() -> f64 {
    90.0
}

/// Names of the canned scenarios, for [`scenario_by_name`].
pub fn scenario_names() -> &'static [&'static str] {
    &["eventbridge-default", "billion"]
}

/// A canned scenario by name: `eventbridge-default` ([`Scenario::eventbridge_default`]) or
/// `billion` ([`Scenario::billion`]).
pub fn scenario_by_name(name: &str) -> Option<Scenario> {
    match name {
        "eventbridge-default" => Some(Scenario::eventbridge_default()),
        "billion" => Some(Scenario::billion()),
        _ => None,
    }
}
