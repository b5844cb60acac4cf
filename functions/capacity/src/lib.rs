//! Capacity model for Sundial, the serverless job scheduler on DynamoDB + SQS + Lambda.
//!
//! Given a [`Scenario`] (schedules, how their fires are spread over time, the peak rate and the
//! configurable knobs) and the measured per-fire request [`Costs`] (from the metering
//! interceptor), [`model`] computes the peak load of each table and of the hottest partition of
//! each kind, Lambda concurrency, SQS requests and the monthly bill beside EventBridge Scheduler.
//! [`Report::violations`] lists every limit that is passed with a suggested fix, [`fit`] raises
//! the knobs to the smallest values that clear what they can, and [`render_markdown`] renders
//! reports side by side. Everything here is pure: no I/O, no clock, no randomness.
//!
//! Conventions used throughout:
//! - "peak" rates are per second at `peak_fires_per_sec`; monthly figures use
//!   `mean_fires_per_sec` over a 30-day month ([`SECONDS_PER_MONTH`]).
//! - Three trigger classes, mixed by [`ClassMix`] (share of fires): every-minute jobs sit in the
//!   `due` partition `E#{shard}` and daily jobs (at most one fire a day, always in the same UTC
//!   minute) in `D#{minute of day}#{shard}`; neither is moved on a fire, their position is the
//!   shard watermark. Bucket-class jobs are moved from minute bucket `{minute}#{shard}` to minute
//!   bucket on every fire (job item write plus a delete and a put of the `due` entry).
//! - `slot` and `tenantGate` costs are conditional: units per fire of a job that uses a slot
//!   (concurrency policy FORBID) or of a tenant with a concurrency limit. The model scales them by
//!   `forbid_share` and by the `tenant_limits` switch. Every other item kind is an average per fire.
//! - Per-fire `watermark` units are ignored: the model adds one watermark write per shard per
//!   tick (`shards / 60` WCU/s) itself, while a measured per-fire figure is the bench's own shard
//!   count amortised over its jobs.
//! - Worker Lambda invocations per fire are `1 / worker_batch_size`, at the peak and in the bill;
//!   [`ClassCost::lambda_invokes`] is informational only and never used (so it cannot be counted
//!   twice; the bench runs an ECS-style worker and reports 0).
//! - Index writes count against the table that owns the index (a conservative reading of the
//!   per-table quota).
//! - A quantity is over its limit when it exceeds it beyond float noise; being exactly at a
//!   limit is not a violation.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

/// Seconds in the billing month used for every monthly figure (30 days).
pub const SECONDS_PER_MONTH: f64 = 2_592_000.0;
/// Seconds between two ticks; also the deadline of one scan invocation.
pub const TICK_PERIOD_SECONDS: f64 = 60.0;
/// Ticks (one a minute) in the billing month.
pub const TICKS_PER_MONTH: f64 = SECONDS_PER_MONTH / TICK_PERIOD_SECONDS;
/// Bytes covered by one DynamoDB read request unit (a strongly consistent read of 4 KiB).
pub const READ_UNIT_BYTES: f64 = 4096.0;
/// Read units per 4 KiB for eventually consistent reads, which every GSI query is.
pub const EVENTUALLY_CONSISTENT_FACTOR: f64 = 0.5;
/// DynamoDB's billed storage overhead per item, in bytes.
pub const ITEM_OVERHEAD_BYTES: f64 = 100.0;
/// Bytes in one billed GB of storage (AWS bills GiB).
pub const BYTES_PER_GB: f64 = 1_073_741_824.0;
/// Highest fire rate of a single job the model assumes (one fire per second).
pub const MAX_JOB_FIRES_PER_SEC: f64 = 1.0;
/// Billed duration of the tick invocation itself, which only fans out the scans.
pub const TICK_INVOCATION_SECONDS: f64 = 1.0;
/// Shortest duration the model assumes for one scan invocation.
pub const MIN_SCAN_SECONDS: f64 = 1.0;
/// Reads of every `E#{shard}` partition per tick: the scan and the verification pass.
pub const EVERY_MINUTE_READS_PER_TICK: f64 = 2.0;
/// Upper bound of the searches [`fit`] runs for `open_parts`, `tenant_gate_shards` and tables.
pub const FIT_SEARCH_BOUND: u32 = 1 << 20;
/// Relative tolerance under which a quantity still counts as within its limit.
const TOLERANCE: f64 = 1e-9;

// ---------------------------------------------------------------------------------------------
// Inputs
// ---------------------------------------------------------------------------------------------

/// Kind of item a measured request unit was spent on; the keys of [`ClassCost`] maps.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "camelCase")]
pub enum ItemKind {
    /// An execution item (executions table): put, claim, finish.
    Execution,
    /// The sparse keys-only `open` GSI of the executions table.
    OpenIndex,
    /// The job item (jobs table), e.g. advancing its next fire.
    Job,
    /// The sparse `due` GSI of the jobs table (a key move is a delete plus a put).
    DueIndex,
    /// The per-shard watermark item; ignored per fire because it is modelled from `shards`.
    Watermark,
    /// The per-job slot item of FORBID jobs (claim and finish), in the executions table.
    Slot,
    /// The per-tenant running gate item `T#{tenant}#RUN`, in the executions table.
    TenantGate,
    /// Anything else the interceptor could not attribute; counted against the jobs table.
    Other,
}

/// The DynamoDB table an item kind lives in.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum Table {
    /// Jobs table: jobs, the `due` index, watermarks, anything unattributed.
    Jobs,
    /// Executions table(s): executions, the `open` index, slots, tenant gates.
    Executions,
}

impl ItemKind {
    /// Every item kind, in the order used for validation messages.
    pub const ALL: [ItemKind; 8] = [
        ItemKind::Execution,
        ItemKind::OpenIndex,
        ItemKind::Job,
        ItemKind::DueIndex,
        ItemKind::Watermark,
        ItemKind::Slot,
        ItemKind::TenantGate,
        ItemKind::Other,
    ];

    /// The map key of this kind in [`ClassCost`] (`execution`, `openIndex`, ...).
    pub fn key(self) -> &'static str {
        match self {
            ItemKind::Execution => "execution",
            ItemKind::OpenIndex => "openIndex",
            ItemKind::Job => "job",
            ItemKind::DueIndex => "dueIndex",
            ItemKind::Watermark => "watermark",
            ItemKind::Slot => "slot",
            ItemKind::TenantGate => "tenantGate",
            ItemKind::Other => "other",
        }
    }

    /// The kind named by a map key, if it is one of the known keys.
    pub fn parse(key: &str) -> Option<ItemKind> {
        ItemKind::ALL.into_iter().find(|kind| kind.key() == key)
    }

    /// The kind a bench `writesByKind` / `readsByKind` key is attributed to: `execution`,
    /// `index:open`, `job`, `index:due`, `watermark`, `slot`, `tenantGate`; anything else
    /// (`other`, `query`, `index:attention`, `index:by_tenant`, ...) is [`ItemKind::Other`].
    pub fn from_bench_key(key: &str) -> ItemKind {
        match key {
            "execution" => ItemKind::Execution,
            "index:open" => ItemKind::OpenIndex,
            "job" => ItemKind::Job,
            "index:due" => ItemKind::DueIndex,
            "watermark" => ItemKind::Watermark,
            "slot" => ItemKind::Slot,
            "tenantGate" => ItemKind::TenantGate,
            _ => ItemKind::Other,
        }
    }

    /// The table whose capacity this kind consumes.
    pub fn table(self) -> Table {
        match self {
            ItemKind::Execution | ItemKind::OpenIndex | ItemKind::Slot | ItemKind::TenantGate => {
                Table::Executions
            }
            ItemKind::Job | ItemKind::DueIndex | ItemKind::Watermark | ItemKind::Other => Table::Jobs,
        }
    }
}

/// Measured request costs of one fire of one trigger class.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClassCost {
    /// Write request units per fire, keyed by [`ItemKind::key`].
    #[serde(default)]
    pub writes: BTreeMap<String, f64>,
    /// Read request units per fire, keyed by [`ItemKind::key`].
    #[serde(default)]
    pub reads: BTreeMap<String, f64>,
    /// SQS requests per fire (send, receive and delete, batched).
    pub sqs_requests: f64,
    /// Measured Lambda invocations per fire. Informational only: the model always uses
    /// `1 / worker_batch_size` worker invocations per fire (the bench's ECS-style worker reports
    /// 0), and models tick and scan invocations from the tick period and `shards`.
    #[serde(default)]
    pub lambda_invokes: f64,
}

impl ClassCost {
    /// Write units per fire spent on `kind` (0 when not measured).
    pub fn write(&self, kind: ItemKind) -> f64 {
        self.writes.get(kind.key()).copied().unwrap_or(0.0)
    }

    /// Read units per fire spent on `kind` (0 when not measured).
    pub fn read(&self, kind: ItemKind) -> f64 {
        self.reads.get(kind.key()).copied().unwrap_or(0.0)
    }

    /// Checks that every key is a known item kind and every number is finite and non-negative.
    pub fn validate(&self, class: &str) -> Result<(), String> {
        check_map(class, "writes", &self.writes)?;
        check_map(class, "reads", &self.reads)?;
        check_non_negative(&format!("{class}.sqsRequests"), self.sqs_requests)?;
        check_non_negative(&format!("{class}.lambdaInvokes"), self.lambda_invokes)
    }
}

/// Measured per-fire costs of the three trigger classes.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Costs {
    /// Jobs firing at least once a minute (the `E#{shard}` class, never moved).
    pub every_minute: ClassCost,
    /// Jobs firing at most once a day in a fixed UTC minute (the `D#{minute of day}#{shard}`
    /// class, never moved).
    pub daily: ClassCost,
    /// Jobs moved from minute bucket to minute bucket (the `{minute}#{shard}` class).
    pub bucket: ClassCost,
}

impl Costs {
    /// Example costs in the shape the bench measures. Every-minute and daily: execution 3
    /// writes (put, claim, finish), no job or `due` writes (never moved); reads execution 1.5
    /// (claim read, verification read) and job 0.5. Bucket: execution 3, open index 2, job 1,
    /// due index 2 (delete + put of the GSI entry); reads execution 1, job 0.5. All three: slot 2
    /// and tenant gate 2 per fire that uses them (claim and finish; conditional, see the crate
    /// docs), 0.3 SQS requests, and `lambda_invokes` 0 as the bench's ECS-style worker reports
    /// (the model uses `1 / worker_batch_size`).
    pub fn example() -> Costs {
        let conditional = [(ItemKind::Slot, 2.0), (ItemKind::TenantGate, 2.0)];
        let unmoved = ClassCost {
            writes: units(&[&[(ItemKind::Execution, 3.0)][..], &conditional].concat()),
            reads: units(&[(ItemKind::Execution, 1.5), (ItemKind::Job, 0.5)]),
            sqs_requests: 0.3,
            lambda_invokes: 0.0,
        };
        let bucket = ClassCost {
            writes: units(
                &[
                    &[
                        (ItemKind::Execution, 3.0),
                        (ItemKind::OpenIndex, 2.0),
                        (ItemKind::Job, 1.0),
                        (ItemKind::DueIndex, 2.0),
                    ][..],
                    &conditional,
                ]
                .concat(),
            ),
            reads: units(&[(ItemKind::Execution, 1.0), (ItemKind::Job, 0.5)]),
            sqs_requests: 0.3,
            lambda_invokes: 0.0,
        };
        Costs { every_minute: unmoved.clone(), daily: unmoved, bucket }
    }

    /// Parses costs from JSON (camelCase keys) and validates them.
    pub fn from_json(json: &str) -> Result<Costs, String> {
        let costs: Costs = serde_json::from_str(json).map_err(|e| format!("costs JSON: {e}"))?;
        costs.validate()?;
        Ok(costs)
    }

    /// Builds the three classes from the JSON documents the bench binary writes, one per class:
    /// `{"jobs": n, "perExecution": {"tick": {...}, "worker": {...}}}`, where each phase has
    /// optional `writesByKind`, `readsByKind` (units per execution), `sqsRequests` and
    /// `lambdaInvokes`; other fields (`writeUnits`, `requests`, ...) are ignored.
    ///
    /// Units are summed over tick and worker and attributed with [`ItemKind::from_bench_key`]
    /// (several keys landing on `other` add up); kinds that sum to 0 are left out.
    /// `sqs_requests` is tick + worker. `lambda_invokes` is tick + worker as measured but never
    /// used by the model, which takes `1 / worker_batch_size`. The `watermark` kind is kept for
    /// reference but ignored by the model, which adds `shards / 60` watermark writes itself.
    pub fn from_bench(every_minute: &str, daily: &str, bucket: &str) -> Result<Costs, String> {
        Ok(Costs {
            every_minute: class_from_bench("everyMinute", every_minute)?,
            daily: class_from_bench("daily", daily)?,
            bucket: class_from_bench("bucket", bucket)?,
        })
    }

    /// Checks the three classes (known item kinds, finite non-negative numbers).
    pub fn validate(&self) -> Result<(), String> {
        self.every_minute.validate("everyMinute")?;
        self.daily.validate("daily")?;
        self.bucket.validate("bucket")
    }
}

/// One document written by the bench binary (only the fields the model uses).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BenchDocument {
    per_execution: BenchPhases,
}

/// The two phases of one execution the bench meters.
#[derive(Deserialize)]
struct BenchPhases {
    tick: BenchPhase,
    worker: BenchPhase,
    /// The verification pass's re-read of every-minute and daily fires (absent in older
    /// documents: counted as nothing).
    #[serde(default)]
    verify: Option<BenchPhase>,
}

/// Units per execution of one phase; every key is optional (present only when nonzero).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BenchPhase {
    #[serde(default)]
    writes_by_kind: BTreeMap<String, f64>,
    #[serde(default)]
    reads_by_kind: BTreeMap<String, f64>,
    #[serde(default)]
    sqs_requests: f64,
    #[serde(default)]
    lambda_invokes: f64,
}

/// One class's costs from its bench document: tick + worker (+ verify), kinds mapped, then
/// validated.
fn class_from_bench(class: &str, json: &str) -> Result<ClassCost, String> {
    let doc: BenchDocument = serde_json::from_str(json).map_err(|e| format!("{class} bench JSON: {e}"))?;
    let mut phases = vec![("tick", &doc.per_execution.tick), ("worker", &doc.per_execution.worker)];
    if let Some(v) = &doc.per_execution.verify {
        phases.push(("verify", v));
    }
    let (mut writes, mut reads) = (BTreeMap::new(), BTreeMap::new());
    let (mut sqs_requests, mut lambda_invokes) = (0.0, 0.0);
    for (name, phase) in phases {
        let at = format!("{class}.perExecution.{name}");
        add_bench_units(&mut writes, &phase.writes_by_kind, &format!("{at}.writesByKind"))?;
        add_bench_units(&mut reads, &phase.reads_by_kind, &format!("{at}.readsByKind"))?;
        check_non_negative(&format!("{at}.sqsRequests"), phase.sqs_requests)?;
        check_non_negative(&format!("{at}.lambdaInvokes"), phase.lambda_invokes)?;
        sqs_requests += phase.sqs_requests;
        lambda_invokes += phase.lambda_invokes;
    }
    writes.retain(|_, v| *v != 0.0);
    reads.retain(|_, v| *v != 0.0);
    let cost = ClassCost { writes, reads, sqs_requests, lambda_invokes };
    cost.validate(class)?;
    Ok(cost)
}

/// Adds one phase's units, keyed by bench kind, onto `into`, keyed by [`ItemKind::key`].
fn add_bench_units(
    into: &mut BTreeMap<String, f64>,
    by_kind: &BTreeMap<String, f64>,
    at: &str,
) -> Result<(), String> {
    for (key, value) in by_kind {
        check_non_negative(&format!("{at}.{key}"), *value)?;
        *into.entry(ItemKind::from_bench_key(key).key().to_string()).or_insert(0.0) += value;
    }
    Ok(())
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
    /// Logical shards of the `due` index (knob; powers of two up to 65,536 in [`fit`]).
    pub shards: u32,
    /// Shards handled by one scan invocation (knob; [`fit`] lowers it).
    pub shards_per_scan: u32,
    /// Partitions of the `open` index per executions table (knob).
    pub open_parts: u32,
    /// Executions tables, split by shard range (knob).
    pub executions_tables: u32,
    /// Number of tenants.
    pub tenants: u64,
    /// Share of all fires that belong to the largest tenant.
    pub top_tenant_share: f64,
    /// Whether tenant concurrency limits are on (every tenant's fires then touch its gate).
    pub tenant_limits: bool,
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
    /// Days executions are kept.
    pub retention_days: f64,
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
            tenant_gate_shards: 1,
            forbid_share: 0.5,
            worker_batch_size: 10,
            worker_mean_duration_ms: 200.0,
            worker_memory_mb: 256.0,
            tick_memory_mb: 512.0,
            scan_fires_per_sec_per_invocation: 500.0,
            retention_days: 30.0,
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
            ..Scenario::eventbridge_default()
        }
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

    /// Checks shares, rates, sizes and knobs; [`model`] clamps knobs to at least 1 regardless.
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
        check_positive("workerMemoryMb", self.worker_memory_mb)?;
        check_positive("tickMemoryMb", self.tick_memory_mb)?;
        check_non_negative("retentionDays", self.retention_days)?;
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
        ];
        match knobs.iter().find(|(_, value)| *value == 0) {
            Some((name, _)) => Err(format!("{name} must be at least 1")),
            None => Ok(()),
        }
    }
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

/// Service limits the model checks against.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    /// Write units per second one DynamoDB partition (table or GSI) accepts.
    pub partition_wcu: f64,
    /// Read units per second one DynamoDB partition (table or GSI) accepts.
    pub partition_rcu: f64,
    /// On-demand write units per second per table (default account quota, adjustable).
    pub table_wcu: f64,
    /// On-demand read units per second per table (default account quota, adjustable).
    pub table_rcu: f64,
    /// Share of the table quota a plan may use (`min_executions_tables` and [`fit`]).
    pub table_headroom: f64,
    /// Concurrent Lambda executions per account (default quota, adjustable).
    pub lambda_concurrency: f64,
    /// Largest shard count [`fit`] may choose.
    pub max_shards: u32,
}

impl Limits {
    /// AWS defaults: 1,000 WCU / 3,000 RCU per partition, 40,000 WCU / 40,000 RCU per
    /// on-demand table, 80 % headroom, 1,000 concurrent Lambda executions, 65,536 shards.
    pub fn aws_default() -> Limits {
        Limits {
            partition_wcu: 1_000.0,
            partition_rcu: 3_000.0,
            table_wcu: 40_000.0,
            table_rcu: 40_000.0,
            table_headroom: 0.8,
            lambda_concurrency: 1_000.0,
            max_shards: 65_536,
        }
    }
}

/// Unit prices in US dollars.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Prices {
    /// DynamoDB on-demand, per million write request units.
    pub dynamo_write_per_million: f64,
    /// DynamoDB on-demand, per million read request units.
    pub dynamo_read_per_million: f64,
    /// DynamoDB standard table class storage, per GB-month.
    pub dynamo_storage_per_gb_month: f64,
    /// SQS standard queue, per million requests.
    pub sqs_per_million: f64,
    /// Lambda, per million requests.
    pub lambda_per_million_requests: f64,
    /// Lambda compute, per GB-second.
    pub lambda_per_gb_second: f64,
    /// EventBridge Scheduler, per million scheduled invocations.
    pub eventbridge_scheduler_per_million: f64,
}

impl Prices {
    /// us-east-1 on-demand list prices as of 2026: DynamoDB $0.625 per million WRU,
    /// $0.125 per million RRU, $0.25 per GB-month; SQS standard $0.40 per million requests;
    /// Lambda $0.20 per million requests and $0.0000133334 per GB-second (arm64);
    /// EventBridge Scheduler $1.00 per million invocations.
    pub fn us_east_1() -> Prices {
        Prices {
            dynamo_write_per_million: 0.625,
            dynamo_read_per_million: 0.125,
            dynamo_storage_per_gb_month: 0.25,
            sqs_per_million: 0.40,
            lambda_per_million_requests: 0.20,
            lambda_per_gb_second: 0.000_013_333_4,
            eventbridge_scheduler_per_million: 1.00,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Outputs
// ---------------------------------------------------------------------------------------------

/// Per-fire units after mixing the classes and applying the conditional kinds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PerFire {
    /// Write units per fire on the jobs table (job, due index, other; watermarks excluded).
    pub jobs_table_writes: f64,
    /// Read units per fire on the jobs table.
    pub jobs_table_reads: f64,
    /// Write units per fire on the executions tables (execution, open index, slot, gate).
    pub executions_table_writes: f64,
    /// Read units per fire on the executions tables.
    pub executions_table_reads: f64,
    /// Write units per fire on the `open` index.
    pub open_index_writes: f64,
    /// Write units per fire on a tenant gate (0 when tenant limits are off).
    pub tenant_gate_writes: f64,
    /// Write units on the `due` index per bucket-class fire (not mixed).
    pub due_index_writes_per_bucket_fire: f64,
    /// SQS requests per fire.
    pub sqs_requests: f64,
    /// Worker Lambda invocations per fire: `1 / worker_batch_size` (not the measured
    /// [`ClassCost::lambda_invokes`]); used at the peak and in the monthly bill.
    pub worker_invokes: f64,
}

/// What happens in the peak minute.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SpikeLoad {
    /// Fires due in the peak minute (all classes).
    pub fires: f64,
    /// Bucket-class fires in the peak minute (`fires × class_mix.bucket`).
    pub bucket_fires: f64,
    /// Bucket-class fires of one shard in the peak minute.
    pub bucket_fires_per_shard: f64,
    /// Daily-class fires in the peak minute (`fires × class_mix.daily`).
    pub daily_fires: f64,
    /// Daily-class fires of one shard in the peak minute: the jobs in its `D#{minute}#{shard}`.
    pub daily_fires_per_shard: f64,
    /// Every-minute-class jobs, bounded by `peak × class_mix.every_minute × 60`.
    pub every_minute_jobs: f64,
    /// Every-minute-class jobs of one shard.
    pub every_minute_jobs_per_shard: f64,
}

/// Peak load of one table (for executions: of each of the `tables` tables).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TableLoad {
    /// How many tables of this kind share the load.
    pub tables: u32,
    /// Peak write units per second on one table, indexes included.
    pub peak_wcu: f64,
    /// Peak read units per second on one table, indexes included.
    pub peak_rcu: f64,
    /// `peak_wcu / table_wcu`.
    pub wcu_of_limit: f64,
    /// `peak_rcu / table_rcu`.
    pub rcu_of_limit: f64,
}

/// Capacity unit of a partition load.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum CapacityUnit {
    /// Write capacity units.
    Wcu,
    /// Read capacity units.
    Rcu,
}

impl CapacityUnit {
    /// `WCU` or `RCU`.
    pub fn label(self) -> &'static str {
        match self {
            CapacityUnit::Wcu => "WCU",
            CapacityUnit::Rcu => "RCU",
        }
    }
}

/// The kinds of hot partition the model checks.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum PartitionKind {
    /// `OPEN#{part}` of the `open` index: writes at put and at the final write.
    OpenIndex,
    /// `{minute}#{shard}` of the `due` index: writes when a spike moves to its next bucket.
    DueBucketWrites,
    /// `{minute}#{shard}` of the `due` index: the spike bucket read by its scan.
    DueBucketReads,
    /// `D#{minute of day}#{shard}` of the `due` index: the spike minute's daily jobs read by
    /// its scan (the verification pass re-reads it two minutes later, in another tick).
    DailyReads,
    /// `E#{shard}` of the `due` index: read twice a tick (scan and verification pass).
    EveryMinuteReads,
    /// `W#{shard}`: one write per shard per tick.
    Watermark,
    /// One job item `T#{tenant}#J#{job}`.
    JobItem,
    /// One slot item (FORBID jobs), in the job's partition.
    SlotItem,
    /// The executions partition of one job.
    ExecutionPartition,
    /// The running gate `T#{top}#RUN` of the largest tenant.
    TenantGate,
}

impl PartitionKind {
    /// Every partition kind, in report order.
    pub const ALL: [PartitionKind; 10] = [
        PartitionKind::OpenIndex,
        PartitionKind::DueBucketWrites,
        PartitionKind::DueBucketReads,
        PartitionKind::DailyReads,
        PartitionKind::EveryMinuteReads,
        PartitionKind::Watermark,
        PartitionKind::JobItem,
        PartitionKind::SlotItem,
        PartitionKind::ExecutionPartition,
        PartitionKind::TenantGate,
    ];

    /// Human-readable name including the key pattern.
    pub fn label(self) -> &'static str {
        match self {
            PartitionKind::OpenIndex => "open index OPEN#{part}",
            PartitionKind::DueBucketWrites => "due bucket {minute}#{shard} writes",
            PartitionKind::DueBucketReads => "due bucket {minute}#{shard} reads",
            PartitionKind::DailyReads => "daily D#{minute of day}#{shard} reads",
            PartitionKind::EveryMinuteReads => "every-minute E#{shard} reads (scan + verification)",
            PartitionKind::Watermark => "watermark item W#{shard}",
            PartitionKind::JobItem => "job item T#{tenant}#J#{job}",
            PartitionKind::SlotItem => "slot item of one job",
            PartitionKind::ExecutionPartition => "executions of one job",
            PartitionKind::TenantGate => "tenant gate item T#{top}#RUN",
        }
    }
}

/// Peak load on the hottest single partition of one kind.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PartitionLoad {
    /// Which partition.
    pub kind: PartitionKind,
    /// Capacity unit of `peak_per_sec` and `limit`.
    pub unit: CapacityUnit,
    /// Peak units per second on the hottest partition of this kind.
    pub peak_per_sec: f64,
    /// Units per second one partition accepts.
    pub limit: f64,
    /// `peak_per_sec / limit`.
    pub of_limit: f64,
}

/// Lambda invocations and concurrency at the peak.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LambdaLoad {
    /// Concurrency of the tick (one invocation a minute).
    pub tick_concurrency: f64,
    /// Scan invocations the tick fans out each minute: `ceil(shards / shards_per_scan)`.
    pub scan_invocations_per_minute: u32,
    /// Fires one scan invocation handles in the peak minute.
    pub scan_fires_per_invocation: f64,
    /// Seconds one scan invocation needs in the peak minute (at least [`MIN_SCAN_SECONDS`]).
    pub scan_seconds_per_invocation: f64,
    /// Mean scan concurrency: invocations × seconds / 60.
    pub scan_concurrency: f64,
    /// Scan concurrency at the top of the minute, when the tick starts all scans together.
    pub scan_burst_concurrency: f64,
    /// Seconds one scan invocation needs at the mean rate (for the bill).
    pub scan_seconds_at_mean: f64,
    /// Worker invocations per second at the peak: `peak / batch`.
    pub worker_invocations_per_sec: f64,
    /// Worker concurrency at the peak: invocations/s × mean duration.
    pub worker_concurrency: f64,
    /// tick + max(scan burst, scan mean) + workers.
    pub total_concurrency: f64,
    /// The account limit it is compared with.
    pub account_limit: f64,
}

/// SQS load. Standard queues have effectively unlimited throughput: no limit is checked.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SqsLoad {
    /// Requests per second at the peak.
    pub peak_requests_per_sec: f64,
    /// Requests per month at the mean rate.
    pub requests_per_month: f64,
}

/// Monthly bill in US dollars beside EventBridge Scheduler's for the same fires.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MonthlyCost {
    /// Fires per month at the mean rate.
    pub fires: f64,
    /// DynamoDB write request units (per-fire writes plus watermarks).
    pub dynamo_writes: f64,
    /// DynamoDB read request units.
    pub dynamo_reads: f64,
    /// Stored GB: retained executions plus job items, each with the per-item overhead.
    pub storage_gb: f64,
    /// DynamoDB storage.
    pub dynamo_storage: f64,
    /// SQS requests.
    pub sqs: f64,
    /// Lambda requests (workers, ticks, scans).
    pub lambda_requests: f64,
    /// Lambda GB-seconds (workers, ticks, scans).
    pub lambda_compute: f64,
    /// Sum of the lines above.
    pub total: f64,
    /// `total` per million fires.
    pub per_million_fires: f64,
    /// EventBridge Scheduler for the same fires.
    pub eventbridge_scheduler: f64,
    /// `total / eventbridge_scheduler`.
    pub ratio_to_eventbridge: f64,
}

/// Everything [`model`] computes for one scenario.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The scenario, knobs included, as modelled.
    pub scenario: Scenario,
    /// The limits checked.
    pub limits: Limits,
    /// Per-fire units after mixing the classes.
    pub per_fire: PerFire,
    /// The peak minute.
    pub spike: SpikeLoad,
    /// The jobs table.
    pub jobs_table: TableLoad,
    /// Each executions table.
    pub executions_table: TableLoad,
    /// `ceil(peak executions units / (table limit × headroom))`, writes or reads, at least 1.
    pub min_executions_tables: u32,
    /// Hottest partition of each kind, in [`PartitionKind::ALL`] order.
    pub partitions: Vec<PartitionLoad>,
    /// Lambda.
    pub lambda: LambdaLoad,
    /// SQS.
    pub sqs: SqsLoad,
    /// Monthly bill.
    pub cost: MonthlyCost,
}

/// Which limit a [`Violation`] is about.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum Check {
    /// Jobs table writes over the per-table quota.
    JobsTableWrites,
    /// Jobs table reads over the per-table quota.
    JobsTableReads,
    /// One executions table's writes over the per-table quota.
    ExecutionsTableWrites,
    /// One executions table's reads over the per-table quota.
    ExecutionsTableReads,
    /// A hot partition over the per-partition limit.
    Partition(PartitionKind),
    /// One scan invocation cannot finish within the tick.
    ScanDuration,
    /// Lambda concurrency over the account quota.
    LambdaConcurrency,
}

/// A knob [`fit`] can turn.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum Knob {
    /// `shards` (powers of two).
    Shards,
    /// `shards_per_scan` (lowered).
    ShardsPerScan,
    /// `open_parts`.
    OpenParts,
    /// `executions_tables`.
    ExecutionsTables,
    /// `tenant_gate_shards`.
    TenantGateShards,
}

/// A quantity over its limit.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Violation {
    /// Which limit.
    pub check: Check,
    /// What is over, by how much, e.g. `tenant gate item T#{top}#RUN: 2,400 WCU/s > 1,000`.
    pub what: String,
    /// Suggested fix, e.g. `split the gate into ≥ 3 items (tenant_gate_shards)`.
    pub fix: String,
    /// The knob that clears it, or `None` when it needs a quota raise or a design change.
    pub knob: Option<Knob>,
}

// ---------------------------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------------------------

/// Computes the capacity report of one scenario. Pure; knobs of 0 are treated as 1.
pub fn model(s: &Scenario, c: &Costs, limits: &Limits, prices: &Prices) -> Report {
    let per_fire = per_fire(s, c);
    let spike = spike_load(s);
    let jobs_table = jobs_table(s, &per_fire, limits);
    let executions_table = executions_table(s, &per_fire, limits);
    let min_executions_tables = min_executions_tables(s, &per_fire, limits);
    let partitions = partitions(s, c, &per_fire, &spike, limits);
    let lambda = lambda_load(s, &per_fire, &spike, limits);
    let sqs = SqsLoad {
        peak_requests_per_sec: s.peak_fires_per_sec * per_fire.sqs_requests,
        requests_per_month: s.mean_fires_per_sec * SECONDS_PER_MONTH * per_fire.sqs_requests,
    };
    let cost = monthly_cost(s, &per_fire, &lambda, prices);
    Report {
        scenario: s.clone(),
        limits: limits.clone(),
        per_fire,
        spike,
        jobs_table,
        executions_table,
        min_executions_tables,
        partitions,
        lambda,
        sqs,
        cost,
    }
}

/// A knob clamped to at least 1, as f64.
fn knob(value: u32) -> f64 {
    f64::from(value.max(1))
}

/// Per-fire units of one class mixed by the scenario's class shares.
fn mixed(s: &Scenario, c: &Costs, units: impl Fn(&ClassCost) -> f64) -> f64 {
    let mix = &s.class_mix;
    mix.every_minute * units(&c.every_minute) + mix.daily * units(&c.daily) + mix.bucket * units(&c.bucket)
}

/// How much of a kind's measured units apply: slots only for FORBID fires, gates only with
/// limits, watermarks never (they are modelled from `shards`).
fn applied_share(s: &Scenario, kind: ItemKind) -> f64 {
    match kind {
        ItemKind::Slot => s.forbid_share,
        ItemKind::TenantGate if !s.tenant_limits => 0.0,
        ItemKind::Watermark => 0.0,
        _ => 1.0,
    }
}

/// Mixed units per fire spent on one table, writes or reads.
fn table_units(s: &Scenario, c: &Costs, table: Table, unit: CapacityUnit) -> f64 {
    ItemKind::ALL
        .into_iter()
        .filter(|kind| kind.table() == table)
        .map(|kind| applied_share(s, kind) * mixed(s, c, |cc| class_units(cc, kind, unit)))
        .sum()
}

fn class_units(cc: &ClassCost, kind: ItemKind, unit: CapacityUnit) -> f64 {
    match unit {
        CapacityUnit::Wcu => cc.write(kind),
        CapacityUnit::Rcu => cc.read(kind),
    }
}

fn per_fire(s: &Scenario, c: &Costs) -> PerFire {
    PerFire {
        jobs_table_writes: table_units(s, c, Table::Jobs, CapacityUnit::Wcu),
        jobs_table_reads: table_units(s, c, Table::Jobs, CapacityUnit::Rcu),
        executions_table_writes: table_units(s, c, Table::Executions, CapacityUnit::Wcu),
        executions_table_reads: table_units(s, c, Table::Executions, CapacityUnit::Rcu),
        open_index_writes: mixed(s, c, |cc| cc.write(ItemKind::OpenIndex)),
        tenant_gate_writes: applied_share(s, ItemKind::TenantGate)
            * mixed(s, c, |cc| cc.write(ItemKind::TenantGate)),
        due_index_writes_per_bucket_fire: c.bucket.write(ItemKind::DueIndex),
        sqs_requests: mixed(s, c, |cc| cc.sqs_requests),
        worker_invokes: 1.0 / knob(s.worker_batch_size),
    }
}

/// The peak minute. The spike's fires split by the class mix; daily jobs fire in a fixed minute
/// of the day, so the spike minute's daily fires are exactly the jobs in its `D#` partitions.
/// Every-minute-class jobs fire at least once a minute, so their number is at most their fires
/// per minute at the peak rate: `peak × class_mix.every_minute × 60`.
fn spike_load(s: &Scenario) -> SpikeLoad {
    let shards = knob(s.shards);
    let fires = s.peak_minute_fires();
    let bucket_fires = fires * s.class_mix.bucket;
    let daily_fires = fires * s.class_mix.daily;
    let every_minute_jobs = s.peak_fires_per_sec * s.class_mix.every_minute * TICK_PERIOD_SECONDS;
    SpikeLoad {
        fires,
        bucket_fires,
        bucket_fires_per_shard: bucket_fires / shards,
        daily_fires,
        daily_fires_per_shard: daily_fires / shards,
        every_minute_jobs,
        every_minute_jobs_per_shard: every_minute_jobs / shards,
    }
}

/// Jobs table: `peak × jobs writes per fire + shards / 60` (one watermark write per shard per
/// tick); reads `peak × jobs reads per fire`.
fn jobs_table(s: &Scenario, pf: &PerFire, limits: &Limits) -> TableLoad {
    let wcu = s.peak_fires_per_sec * pf.jobs_table_writes + knob(s.shards) / TICK_PERIOD_SECONDS;
    let rcu = s.peak_fires_per_sec * pf.jobs_table_reads;
    table_load(1, wcu, rcu, limits)
}

/// One executions table: the executions load (executions, `open` index, slots, tenant gates)
/// split evenly over `executions_tables` (by shard range, and shards are uniform hashes of jobs).
/// Tenant gates are taken to split with the rest; the gate's own hot item is checked separately
/// ([`PartitionKind::TenantGate`]).
fn executions_table(s: &Scenario, pf: &PerFire, limits: &Limits) -> TableLoad {
    let tables = knob(s.executions_tables);
    let wcu = s.peak_fires_per_sec * pf.executions_table_writes / tables;
    let rcu = s.peak_fires_per_sec * pf.executions_table_reads / tables;
    table_load(s.executions_tables.max(1), wcu, rcu, limits)
}

fn table_load(tables: u32, wcu: f64, rcu: f64, limits: &Limits) -> TableLoad {
    TableLoad {
        tables,
        peak_wcu: wcu,
        peak_rcu: rcu,
        wcu_of_limit: wcu / limits.table_wcu,
        rcu_of_limit: rcu / limits.table_rcu,
    }
}

/// `ceil(peak executions units / (table limit × headroom))`, for writes and for reads, the larger.
fn min_executions_tables(s: &Scenario, pf: &PerFire, limits: &Limits) -> u32 {
    let wcu = s.peak_fires_per_sec * pf.executions_table_writes;
    let rcu = s.peak_fires_per_sec * pf.executions_table_reads;
    let by_writes = ceil_count(wcu / (limits.table_wcu * limits.table_headroom));
    let by_reads = ceil_count(rcu / (limits.table_rcu * limits.table_headroom));
    by_writes.max(by_reads).max(1)
}

/// `ceil(x)` as a count, ignoring float noise just above an integer.
fn ceil_count(x: f64) -> u32 {
    if x.is_finite() {
        (x * (1.0 - TOLERANCE)).ceil().max(0.0) as u32
    } else {
        u32::MAX
    }
}

/// Units per second a scan puts on one `due` partition when it handles `items` items of that
/// partition, each costing `units_per_item`.
///
/// The scan invocation that owns a shard handles that shard's items at up to `scan_rate` items
/// per second, so the items of one partition are written (or read) over
/// `max(1 s, items / scan_rate)`. The worst one-second window therefore sees
/// `min(items, scan_rate)` items, hence `min(items, scan_rate) × units_per_item`. For the bucket
/// writes this is the worst case in which every bucket job of the shard moves to the same next
/// bucket (e.g. all hourly jobs at :00); all `dueIndex` units are charged to the destination,
/// which is conservative (the delete half lands on the source bucket).
pub fn scan_partition_rate(items: f64, scan_rate: f64, units_per_item: f64) -> f64 {
    items.min(scan_rate) * units_per_item
}

/// Read units of one job item read through the `due` index (eventually consistent).
fn job_read_units(s: &Scenario) -> f64 {
    s.job_item_bytes / READ_UNIT_BYTES * EVENTUALLY_CONSISTENT_FACTOR
}

/// The largest per-fire units any class spends on one item kind.
fn max_class_write(c: &Costs, kind: ItemKind) -> f64 {
    c.every_minute.write(kind).max(c.daily.write(kind)).max(c.bucket.write(kind))
}

fn partitions(
    s: &Scenario,
    c: &Costs,
    pf: &PerFire,
    spike: &SpikeLoad,
    limits: &Limits,
) -> Vec<PartitionLoad> {
    PartitionKind::ALL
        .into_iter()
        .map(|kind| {
            let (unit, peak) = partition_peak(kind, s, c, pf, spike);
            let limit = match unit {
                CapacityUnit::Wcu => limits.partition_wcu,
                CapacityUnit::Rcu => limits.partition_rcu,
            };
            PartitionLoad { kind, unit, peak_per_sec: peak, limit, of_limit: peak / limit }
        })
        .collect()
}

/// Peak units per second on the hottest partition of one kind:
/// - open index: `peak × openIndex units / (open_parts × executions_tables)`; puts and final
///   writes happen at different times but both are taken at the peak rate, and each executions
///   table has its own `open` index;
/// - due bucket writes / reads, daily `D#` reads and `E#` reads: [`scan_partition_rate`] with
///   the bucket class's share of the spike (bucket), the daily share (`D#`), and the every-minute
///   jobs × [`EVERY_MINUTE_READS_PER_TICK`] (`E#`: scan and verification pass may read it in the
///   same second). The verification pass re-reads a `D#` partition two minutes after its scan,
///   i.e. in another tick, so the `D#` peak is one read;
/// - watermark: 1 write per shard per tick; job, slot, executions of one job: at most
///   [`MAX_JOB_FIRES_PER_SEC`] × the class's units;
/// - tenant gate: `peak × top_tenant_share × tenantGate units / tenant_gate_shards`.
fn partition_peak(
    kind: PartitionKind,
    s: &Scenario,
    c: &Costs,
    pf: &PerFire,
    spike: &SpikeLoad,
) -> (CapacityUnit, f64) {
    let rate = s.scan_fires_per_sec_per_invocation;
    match kind {
        PartitionKind::OpenIndex => (
            CapacityUnit::Wcu,
            s.peak_fires_per_sec * pf.open_index_writes / (knob(s.open_parts) * knob(s.executions_tables)),
        ),
        PartitionKind::DueBucketWrites => (
            CapacityUnit::Wcu,
            scan_partition_rate(spike.bucket_fires_per_shard, rate, pf.due_index_writes_per_bucket_fire),
        ),
        PartitionKind::DueBucketReads => {
            (CapacityUnit::Rcu, scan_partition_rate(spike.bucket_fires_per_shard, rate, job_read_units(s)))
        }
        PartitionKind::DailyReads => {
            (CapacityUnit::Rcu, scan_partition_rate(spike.daily_fires_per_shard, rate, job_read_units(s)))
        }
        PartitionKind::EveryMinuteReads => (
            CapacityUnit::Rcu,
            scan_partition_rate(
                spike.every_minute_jobs_per_shard,
                rate,
                EVERY_MINUTE_READS_PER_TICK * job_read_units(s),
            ),
        ),
        PartitionKind::Watermark => (CapacityUnit::Wcu, 1.0 / TICK_PERIOD_SECONDS),
        PartitionKind::JobItem => {
            (CapacityUnit::Wcu, MAX_JOB_FIRES_PER_SEC * max_class_write(c, ItemKind::Job))
        }
        PartitionKind::SlotItem => {
            let used = if s.forbid_share > 0.0 { 1.0 } else { 0.0 };
            (CapacityUnit::Wcu, used * MAX_JOB_FIRES_PER_SEC * max_class_write(c, ItemKind::Slot))
        }
        PartitionKind::ExecutionPartition => {
            (CapacityUnit::Wcu, MAX_JOB_FIRES_PER_SEC * max_class_write(c, ItemKind::Execution))
        }
        PartitionKind::TenantGate => (
            CapacityUnit::Wcu,
            s.peak_fires_per_sec * s.top_tenant_share * pf.tenant_gate_writes / knob(s.tenant_gate_shards),
        ),
    }
}

/// Shards one scan invocation covers (never more than there are shards).
fn shards_in_scan(s: &Scenario) -> u32 {
    s.shards_per_scan.max(1).min(s.shards.max(1))
}

/// Seconds a scan invocation needs for `fires_per_minute` fires spread over all shards.
fn scan_seconds(s: &Scenario, fires_per_minute: f64) -> f64 {
    let fires = fires_per_minute * f64::from(shards_in_scan(s)) / knob(s.shards);
    (fires / s.scan_fires_per_sec_per_invocation.max(f64::MIN_POSITIVE)).max(MIN_SCAN_SECONDS)
}

/// Lambda at the peak: scans `ceil(shards / shards_per_scan)` a minute, each handling
/// `spike × shards_per_scan / shards` fires at the measured scan rate (the verification pass is
/// taken to be part of that measured rate); workers `peak / batch × duration` (Little's law). The tick starts every scan at the top of the minute,
/// so the scans' burst concurrency is their count; the total uses the larger of burst and mean.
fn lambda_load(s: &Scenario, pf: &PerFire, spike: &SpikeLoad, limits: &Limits) -> LambdaLoad {
    let invocations = s.shards.max(1).div_ceil(shards_in_scan(s));
    let scan_fires = spike.fires * f64::from(shards_in_scan(s)) / knob(s.shards);
    let scan_seconds_peak = scan_seconds(s, spike.fires);
    let scan_concurrency = f64::from(invocations) * scan_seconds_peak / TICK_PERIOD_SECONDS;
    let scan_burst = f64::from(invocations);
    let worker_invocations = s.peak_fires_per_sec * pf.worker_invokes;
    let worker_concurrency = worker_invocations * s.worker_mean_duration_ms / 1000.0;
    let tick_concurrency = 1.0;
    LambdaLoad {
        tick_concurrency,
        scan_invocations_per_minute: invocations,
        scan_fires_per_invocation: scan_fires,
        scan_seconds_per_invocation: scan_seconds_peak,
        scan_concurrency,
        scan_burst_concurrency: scan_burst,
        scan_seconds_at_mean: scan_seconds(s, s.mean_fires_per_sec * TICK_PERIOD_SECONDS),
        worker_invocations_per_sec: worker_invocations,
        worker_concurrency,
        total_concurrency: tick_concurrency + scan_burst.max(scan_concurrency) + worker_concurrency,
        account_limit: limits.lambda_concurrency,
    }
}

/// Stored GB: executions kept for `retention_days` plus one item per schedule.
fn storage_gb(s: &Scenario) -> f64 {
    let executions = s.mean_fires_per_sec * s.retention_days * 86_400.0;
    let bytes = executions * (s.execution_item_bytes + ITEM_OVERHEAD_BYTES)
        + s.schedules as f64 * (s.job_item_bytes + ITEM_OVERHEAD_BYTES);
    bytes / BYTES_PER_GB
}

/// Lambda GB-seconds per month: workers (`fires / batch` invocations × duration × memory), one
/// tick a minute and the scans at the mean rate.
fn lambda_gb_seconds(s: &Scenario, pf: &PerFire, lambda: &LambdaLoad, fires: f64) -> f64 {
    let worker = fires * pf.worker_invokes * s.worker_mean_duration_ms / 1000.0 * s.worker_memory_mb / 1024.0;
    let scans = f64::from(lambda.scan_invocations_per_minute) * lambda.scan_seconds_at_mean;
    let tick = TICKS_PER_MONTH * (TICK_INVOCATION_SECONDS + scans) * s.tick_memory_mb / 1024.0;
    worker + tick
}

/// Monthly bill at the mean rate. DynamoDB reads are the measured per-fire reads only (the scan
/// reads modelled for hot partitions are part of them when the interceptor meters queries).
fn monthly_cost(s: &Scenario, pf: &PerFire, lambda: &LambdaLoad, prices: &Prices) -> MonthlyCost {
    let fires = s.mean_fires_per_sec * SECONDS_PER_MONTH;
    let writes =
        fires * (pf.jobs_table_writes + pf.executions_table_writes) + knob(s.shards) * TICKS_PER_MONTH;
    let reads = fires * (pf.jobs_table_reads + pf.executions_table_reads);
    let gb = storage_gb(s);
    let lambda_requests =
        fires * pf.worker_invokes + TICKS_PER_MONTH * (1.0 + f64::from(lambda.scan_invocations_per_minute));
    let lines = [
        writes / 1e6 * prices.dynamo_write_per_million,
        reads / 1e6 * prices.dynamo_read_per_million,
        gb * prices.dynamo_storage_per_gb_month,
        fires * pf.sqs_requests / 1e6 * prices.sqs_per_million,
        lambda_requests / 1e6 * prices.lambda_per_million_requests,
        lambda_gb_seconds(s, pf, lambda, fires) * prices.lambda_per_gb_second,
    ];
    let total: f64 = lines.iter().sum();
    let eventbridge = fires / 1e6 * prices.eventbridge_scheduler_per_million;
    MonthlyCost {
        fires,
        dynamo_writes: lines[0],
        dynamo_reads: lines[1],
        storage_gb: gb,
        dynamo_storage: lines[2],
        sqs: lines[3],
        lambda_requests: lines[4],
        lambda_compute: lines[5],
        total,
        per_million_fires: ratio(total, fires / 1e6),
        eventbridge_scheduler: eventbridge,
        ratio_to_eventbridge: ratio(total, eventbridge),
    }
}

/// The smallest power of two ≥ `n`, or `u32::MAX` when there is none.
fn pow2_or_max(n: u32) -> u32 {
    n.checked_next_power_of_two().unwrap_or(u32::MAX)
}

/// `a / b`, or 0 when `b` is 0.
fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

// ---------------------------------------------------------------------------------------------
// Violations
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Fit
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Markdown
// ---------------------------------------------------------------------------------------------

/// One markdown table with a column per report, followed by the list of violations.
pub fn render_markdown(reports: &[Report]) -> String {
    let mut out = String::new();
    let names: Vec<String> = reports.iter().map(|r| cell(&r.scenario.name)).collect();
    let _ = writeln!(out, "| | {} |", names.join(" | "));
    let _ = writeln!(out, "|---|{}", "---:|".repeat(reports.len()));
    for (label, cells) in rows(reports) {
        let _ = writeln!(out, "| {label} | {} |", cells.join(" | "));
    }
    out.push_str("\nViolations:\n\n");
    for r in reports {
        out.push_str(&violation_lines(r));
    }
    out
}

fn violation_lines(r: &Report) -> String {
    let violations = r.violations();
    if violations.is_empty() {
        return format!("- {}: none\n", r.scenario.name);
    }
    violations
        .iter()
        .map(|v| {
            let raise = if v.knob.is_none() { " [needs a quota raise or design change]" } else { "" };
            format!("- {}: {} → {}{raise}\n", r.scenario.name, v.what, v.fix)
        })
        .collect()
}

/// Text safe inside a table cell.
fn cell(text: &str) -> String {
    text.replace('|', "/")
}

type Row = (String, Vec<String>);

fn row(label: &str, reports: &[Report], value: impl Fn(&Report) -> String) -> Row {
    (cell(label), reports.iter().map(value).collect())
}

fn rows(reports: &[Report]) -> Vec<Row> {
    let mut rows = scenario_rows(reports);
    rows.extend(table_rows(reports));
    rows.extend(PartitionKind::ALL.into_iter().map(|kind| partition_row(reports, kind)));
    rows.extend(lambda_rows(reports));
    rows.extend(cost_rows(reports));
    rows
}

fn scenario_rows(reports: &[Report]) -> Vec<Row> {
    vec![
        row("schedules", reports, |r| num(r.scenario.schedules as f64)),
        row("peak fires/s", reports, |r| num(r.scenario.peak_fires_per_sec)),
        row("mean fires/s", reports, |r| num(r.scenario.mean_fires_per_sec)),
        row("fires in the peak minute", reports, |r| num(r.spike.fires)),
        row("shards", reports, |r| num(f64::from(r.scenario.shards))),
        row("shards per scan", reports, |r| num(f64::from(r.scenario.shards_per_scan))),
        row("open parts (per executions table)", reports, |r| num(f64::from(r.scenario.open_parts))),
        row("executions tables (min needed)", reports, |r| {
            format!("{} ({})", r.scenario.executions_tables, r.min_executions_tables)
        }),
        row("tenant gate shards", reports, |r| num(f64::from(r.scenario.tenant_gate_shards))),
    ]
}

fn with_pct(value: f64, of_limit: f64) -> String {
    format!("{} ({})", num(value), pct(of_limit))
}

fn table_rows(reports: &[Report]) -> Vec<Row> {
    vec![
        row("jobs table WCU/s", reports, |r| with_pct(r.jobs_table.peak_wcu, r.jobs_table.wcu_of_limit)),
        row("jobs table RCU/s", reports, |r| with_pct(r.jobs_table.peak_rcu, r.jobs_table.rcu_of_limit)),
        row("each executions table WCU/s", reports, |r| {
            with_pct(r.executions_table.peak_wcu, r.executions_table.wcu_of_limit)
        }),
        row("each executions table RCU/s", reports, |r| {
            with_pct(r.executions_table.peak_rcu, r.executions_table.rcu_of_limit)
        }),
    ]
}

fn partition_row(reports: &[Report], kind: PartitionKind) -> Row {
    let unit = reports.iter().find_map(|r| r.partition(kind)).map_or("", |p| p.unit.label());
    let label = format!("hottest {} {unit}/s", kind.label());
    row(&label, reports, |r| match r.partition(kind) {
        Some(p) => with_pct(p.peak_per_sec, p.of_limit),
        None => "-".to_string(),
    })
}

fn lambda_rows(reports: &[Report]) -> Vec<Row> {
    vec![
        row("scan invocations/min", reports, |r| num(f64::from(r.lambda.scan_invocations_per_minute))),
        row("scan seconds per invocation (peak minute)", reports, |r| {
            num(r.lambda.scan_seconds_per_invocation)
        }),
        row("scan concurrency mean / burst", reports, |r| {
            format!("{} / {}", num(r.lambda.scan_concurrency), num(r.lambda.scan_burst_concurrency))
        }),
        row("worker concurrency", reports, |r| num(r.lambda.worker_concurrency)),
        row("Lambda concurrency total", reports, |r| {
            with_pct(r.lambda.total_concurrency, r.lambda.total_concurrency / r.lambda.account_limit)
        }),
        row("SQS requests/s at peak (no limit)", reports, |r| num(r.sqs.peak_requests_per_sec)),
        row("SQS requests/month", reports, |r| num(r.sqs.requests_per_month)),
    ]
}

fn cost_rows(reports: &[Report]) -> Vec<Row> {
    vec![
        row("fires/month", reports, |r| num(r.cost.fires)),
        row("DynamoDB writes $/month", reports, |r| money(r.cost.dynamo_writes)),
        row("DynamoDB reads $/month", reports, |r| money(r.cost.dynamo_reads)),
        row("DynamoDB storage $/month", reports, |r| {
            format!("{} ({} GB)", money(r.cost.dynamo_storage), num(r.cost.storage_gb))
        }),
        row("SQS $/month", reports, |r| money(r.cost.sqs)),
        row("Lambda requests $/month", reports, |r| money(r.cost.lambda_requests)),
        row("Lambda GB-s $/month", reports, |r| money(r.cost.lambda_compute)),
        row("Sundial total $/month", reports, |r| money(r.cost.total)),
        row("Sundial $ per million fires", reports, |r| money(r.cost.per_million_fires)),
        row("EventBridge Scheduler $/month", reports, |r| money(r.cost.eventbridge_scheduler)),
        row("Sundial / EventBridge Scheduler", reports, |r| format!("{:.2}×", r.cost.ratio_to_eventbridge)),
    ]
}

/// A number for people: thousands separators from 100 up, otherwise one or two decimals.
fn num(x: f64) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    let a = x.abs();
    if a >= 100.0 {
        grouped(x)
    } else if a >= 10.0 || a == a.trunc() {
        format!("{}", (x * 10.0).round() / 10.0)
    } else {
        format!("{x:.2}")
    }
}

/// `x` rounded to an integer with a comma every three digits.
fn grouped(x: f64) -> String {
    let digits = format!("{:.0}", x.abs().round());
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    if x < 0.0 && out != "0" {
        format!("-{out}")
    } else {
        out
    }
}

fn money(x: f64) -> String {
    if x.abs() >= 100.0 {
        format!("${}", grouped(x))
    } else {
        format!("${x:.2}")
    }
}

fn pct(fraction: f64) -> String {
    let p = fraction * 100.0;
    if p >= 100.0 {
        format!("{}%", grouped(p))
    } else if p >= 10.0 {
        format!("{}%", p.round())
    } else if p > 0.0 && p < 0.05 {
        "<0.1%".to_string()
    } else {
        format!("{:.1}%", (p * 10.0).round() / 10.0)
    }
}

// ---------------------------------------------------------------------------------------------
// Validation helpers
// ---------------------------------------------------------------------------------------------

fn units(pairs: &[(ItemKind, f64)]) -> BTreeMap<String, f64> {
    pairs.iter().map(|(kind, value)| (kind.key().to_string(), *value)).collect()
}

fn check_map(class: &str, which: &str, map: &BTreeMap<String, f64>) -> Result<(), String> {
    for (key, value) in map {
        if ItemKind::parse(key).is_none() {
            let known: Vec<&str> = ItemKind::ALL.iter().map(|k| k.key()).collect();
            return Err(format!("{class}.{which}: unknown item kind {key:?} (known: {})", known.join(", ")));
        }
        check_non_negative(&format!("{class}.{which}.{key}"), *value)?;
    }
    Ok(())
}

fn check_non_negative(name: &str, value: f64) -> Result<(), String> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(format!("{name} must be a finite number ≥ 0"))
    }
}

fn check_positive(name: &str, value: f64) -> Result<(), String> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(format!("{name} must be a finite number > 0"))
    }
}

fn check_share(name: &str, value: f64) -> Result<(), String> {
    if (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(format!("{name} must be between 0 and 1"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            tenant_gate_shards: 1,
            forbid_share: 1.0,
            worker_batch_size: 10,
            worker_mean_duration_ms: 200.0,
            worker_memory_mb: 256.0,
            tick_memory_mb: 512.0,
            scan_fires_per_sec_per_invocation: 500.0,
            retention_days: 30.0,
            execution_item_bytes: 1_200.0,
            job_item_bytes: 4_096.0,
        }
    }

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
        let daily =
            Scenario { class_mix: ClassMix { every_minute: 0.0, daily: 1.0, bucket: 0.0 }, ..small() };
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
        let base = Scenario::eventbridge_default();
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
        // Executions: execution 3 + open 0.2 × 2 + slot 0.5 × 2 + gate 2 = 6.4;
        // reads 0.8 × 1.5 + 0.2 × 1 = 1.4.
        close(r.executions_table.peak_wcu, 6_400.0);
        close(r.executions_table.peak_rcu, 1_400.0);
        close(peak(&r, PartitionKind::OpenIndex), 25.0);
        close(peak(&r, PartitionKind::TenantGate), 200.0);
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

    fn fitted_billion() -> (Scenario, Report) {
        fit(&Scenario::billion(), &Costs::example(), &Limits::aws_default(), &Prices::us_east_1())
    }

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
        let s = Scenario { top_tenant_share: 0.5, ..Scenario::eventbridge_default() };
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

    #[test]
    fn costs_json_round_trip_and_validation() {
        let costs = Costs::example();
        let json = serde_json::to_string(&costs).expect("serialize");
        assert!(
            json.contains("\"everyMinute\"")
                && json.contains("\"daily\"")
                && json.contains("\"openIndex\"")
                && json.contains("sqsRequests")
        );
        assert_eq!(Costs::from_json(&json), Ok(costs));
        let unknown = json.replace("\"dueIndex\"", "\"dueIdx\"");
        assert!(Costs::from_json(&unknown).is_err_and(|e| e.contains("dueIdx")));
        let negative = json.replace("\"job\":1.0", "\"job\":-1.0");
        assert_ne!(negative, json);
        assert!(Costs::from_json(&negative).is_err());
        assert!(Costs::from_json("{").is_err());
    }

    #[test]
    fn scenario_json_round_trip_and_validation() {
        for s in [
            Scenario::eventbridge_default(),
            Scenario::billion(),
            Scenario { spike_fires: Some(1e6), ..small() },
        ] {
            let json = serde_json::to_string(&s).expect("serialize");
            assert_eq!(Scenario::from_json(&json), Ok(s));
        }
        let json = serde_json::to_string(&Scenario::billion()).expect("serialize");
        assert!(json.contains("\"peakFiresPerSec\"") && !json.contains("spikeFires"));
        let bad_mix =
            Scenario { class_mix: ClassMix { every_minute: 0.5, daily: 0.0, bucket: 0.6 }, ..small() };
        assert!(bad_mix.validate().is_err());
        let three =
            Scenario { class_mix: ClassMix { every_minute: 0.3, daily: 0.3, bucket: 0.3 }, ..small() };
        assert!(three.validate().is_err_and(|e| e.contains("sum to 1")));
        let negative =
            Scenario { class_mix: ClassMix { every_minute: 0.6, daily: -0.1, bucket: 0.5 }, ..small() };
        assert!(negative.validate().is_err_and(|e| e.contains("classMix.daily")));
        assert_eq!(Scenario::billion().class_mix, ClassMix { every_minute: 0.1, daily: 0.7, bucket: 0.2 });
        assert!(Scenario { shards: 0, ..small() }.validate().is_err());
        assert!(Scenario { mean_fires_per_sec: 61.0, ..small() }.validate().is_err());
        assert!(Scenario { tenants: 100, top_tenant_share: 0.001, ..small() }.validate().is_err());
        let report = run(&Scenario::billion());
        let back: Report =
            serde_json::from_str(&serde_json::to_string(&report).expect("json")).expect("parse");
        assert_eq!(back.violations(), report.violations());
    }

    #[test]
    fn markdown_has_every_scenario_and_the_violations() {
        let reports =
            vec![run(&Scenario::eventbridge_default()), run(&Scenario::billion()), fitted_billion().1];
        let md = render_markdown(&reports);
        for r in &reports {
            assert!(md.contains(&r.scenario.name));
        }
        assert!(md.starts_with("| | EventBridge default | 1 billion | 1 billion |\n|---|---:|---:|---:|\n"));
        assert!(md.contains("- EventBridge default: none"));
        assert!(md.contains("tenant gate item T#{top}#RUN: 20,000 WCU/s > 1,000"));
        assert!(md.contains("| schedules | 10,000,000 | 1,000,000,000 | 1,000,000,000 |"));
        let columns = md.lines().next().map_or(0, |l| l.matches('|').count());
        for line in md.lines().take_while(|l| l.starts_with('|')) {
            assert_eq!(line.matches('|').count(), columns, "{line}");
        }
    }

    const BENCH_EVERY_MINUTE: &str = r#"{"jobs": 10000, "perExecution": {
        "tick": {"writeUnits": 1.0016, "indexWriteUnits": 0.0, "readUnits": 0.3,
                 "writesByKind": {"execution": 1.0, "watermark": 0.0016, "index:open": 0.0, "job": 0.0,
                                  "index:due": 0.0, "other": 0.0},
                 "readsByKind": {"index:due": 0.12, "execution": 0.5, "query": 0.01},
                 "sqsRequests": 0.1, "lambdaInvokes": 0.0, "requests": {"dynamodb:PutItem": 10000}},
        "worker": {"writeUnits": 2.0, "indexWriteUnits": 0.0, "readUnits": 1.5,
                   "writesByKind": {"execution": 2.0, "slot": 0.0, "tenantGate": 0.0},
                   "readsByKind": {"execution": 1.0, "job": 0.5},
                   "sqsRequests": 0.2, "lambdaInvokes": 0.0, "requests": {}}}}"#;

    /// Keys present only when nonzero: an empty tick phase is valid.
    const BENCH_DAILY: &str = r#"{"jobs": 10000, "perExecution": {"tick": {},
        "worker": {"writesByKind": {"execution": 3.0}, "readsByKind": {"execution": 1.5}}}}"#;

    const BENCH_BUCKET: &str = r#"{"jobs": 10000, "perExecution": {
        "tick": {"writesByKind": {"execution": 1.0, "index:open": 1.0, "job": 1.0, "index:due": 2.0,
                                  "watermark": 0.5, "other": 0.25, "index:attention": 0.5},
                 "readsByKind": {"index:due": 0.25, "query": 0.125, "index:by_tenant": 0.125},
                 "sqsRequests": 0.1},
        "worker": {"writesByKind": {"execution": 2.0, "index:open": 1.0, "slot": 2.0, "tenantGate": 2.0,
                                    "index:by_tenant": 1.0},
                   "readsByKind": {"execution": 1.0, "job": 0.5, "slot": 0.5, "tenantGate": 0.5},
                   "sqsRequests": 0.2, "lambdaInvokes": 0.1}}}"#;

    fn bench_costs() -> Costs {
        Costs::from_bench(BENCH_EVERY_MINUTE, BENCH_DAILY, BENCH_BUCKET).expect("bench costs")
    }

    #[test]
    fn from_bench_adds_the_verification_pass_when_measured() {
        let with_verify = r#"{"perExecution": {"tick": {}, "worker": {"readsByKind": {"execution": 1.0}},
            "verify": {"readsByKind": {"execution": 0.5, "index:due": 0.01}}}}"#;
        let c = Costs::from_bench(with_verify, BENCH_DAILY, BENCH_BUCKET).unwrap_or_else(|e| panic!("{e}"));
        close(c.every_minute.read(ItemKind::Execution), 1.5);
        close(c.every_minute.read(ItemKind::DueIndex), 0.01);
    }

    #[test]
    fn from_bench_maps_kinds_and_sums_tick_and_worker() {
        let c = bench_costs();
        let em = &c.every_minute;
        close(em.write(ItemKind::Execution), 3.0); // tick 1 + worker 2
        close(em.write(ItemKind::Watermark), 0.0016); // kept, but ignored by the model
        assert_eq!(em.writes.len(), 2, "zero kinds are left out: {:?}", em.writes);
        close(em.read(ItemKind::Execution), 1.5);
        close(em.read(ItemKind::Job), 0.5);
        close(em.read(ItemKind::DueIndex), 0.12);
        close(em.read(ItemKind::Other), 0.01); // query
        close(em.sqs_requests, 0.3);
        close(em.lambda_invokes, 0.0);

        let daily = &c.daily;
        close(daily.write(ItemKind::Execution), 3.0);
        close(daily.read(ItemKind::Execution), 1.5);
        close(daily.sqs_requests, 0.0);

        let b = &c.bucket;
        close(b.write(ItemKind::Execution), 3.0);
        close(b.write(ItemKind::OpenIndex), 2.0);
        close(b.write(ItemKind::Job), 1.0);
        close(b.write(ItemKind::DueIndex), 2.0);
        close(b.write(ItemKind::Watermark), 0.5);
        close(b.write(ItemKind::Slot), 2.0);
        close(b.write(ItemKind::TenantGate), 2.0);
        close(b.write(ItemKind::Other), 0.25 + 0.5 + 1.0); // other + index:attention + index:by_tenant
        close(b.read(ItemKind::DueIndex), 0.25);
        close(b.read(ItemKind::Other), 0.25); // query + index:by_tenant
        close(b.read(ItemKind::Slot), 0.5);
        close(b.read(ItemKind::TenantGate), 0.5);
        close(b.sqs_requests, 0.3);
        close(b.lambda_invokes, 0.1); // measured, informational only
        assert_eq!(Costs::from_json(&serde_json::to_string(&c).expect("json")), Ok(c));

        for (bench, kind) in [
            ("execution", ItemKind::Execution),
            ("index:open", ItemKind::OpenIndex),
            ("job", ItemKind::Job),
            ("index:due", ItemKind::DueIndex),
            ("watermark", ItemKind::Watermark),
            ("slot", ItemKind::Slot),
            ("tenantGate", ItemKind::TenantGate),
            ("other", ItemKind::Other),
            ("query", ItemKind::Other),
            ("index:attention", ItemKind::Other),
            ("index:by_tenant", ItemKind::Other),
        ] {
            assert_eq!(ItemKind::from_bench_key(bench), kind, "{bench}");
        }
    }

    #[test]
    fn from_bench_rejects_malformed_documents() {
        let missing = Costs::from_bench(BENCH_EVERY_MINUTE, r#"{"jobs": 1}"#, BENCH_BUCKET);
        assert!(missing.is_err_and(|e| e.starts_with("daily bench JSON")));
        let no_worker = r#"{"perExecution": {"tick": {}}}"#;
        assert!(Costs::from_bench(no_worker, BENCH_DAILY, BENCH_BUCKET).is_err_and(|e| e.contains("worker")));
        let negative = BENCH_BUCKET.replace("\"job\": 0.5", "\"job\": -0.5");
        assert_ne!(negative, BENCH_BUCKET);
        let err = Costs::from_bench(BENCH_EVERY_MINUTE, BENCH_DAILY, &negative).expect_err("negative");
        assert!(err.contains("bucket.perExecution.worker.readsByKind.job"), "{err}");
        assert!(Costs::from_bench(BENCH_EVERY_MINUTE, BENCH_DAILY, "[").is_err());
    }

    #[test]
    fn bench_costs_drive_the_model_without_watermark_or_measured_invocations() {
        let c = bench_costs();
        let s = Scenario::eventbridge_default();
        let r = model(&s, &c, &Limits::aws_default(), &Prices::us_east_1());
        // Jobs table writes: bucket 0.2 × (job 1 + due 2 + other 1.75); the measured watermark
        // units (0.0016 and 0.5) are not counted, only shards / 60.
        close(r.per_fire.jobs_table_writes, 0.2 * 4.75);
        close(r.jobs_table.peak_wcu, 1_000.0 * 0.2 * 4.75 + 4096.0 / 60.0);
        // Executions: 3 + 0.2 × open 2 + 0.2 × (slot 2 × 0.5 + gate 2).
        close(r.per_fire.executions_table_writes, 3.0 + 0.4 + 0.2 * 3.0);
        close(r.per_fire.sqs_requests, 0.1 * 0.3 + 0.2 * 0.3);
        // Workers come from the batch size only: the measured 0.1 of the bucket class is unused.
        close(r.per_fire.worker_invokes, 0.1);
        close(r.lambda.worker_invocations_per_sec, 100.0);
        let mut loud = c.clone();
        for class in [&mut loud.every_minute, &mut loud.daily, &mut loud.bucket] {
            class.lambda_invokes = 7.0;
        }
        assert_eq!(model(&s, &loud, &Limits::aws_default(), &Prices::us_east_1()), r);
        let batch5 =
            model(&Scenario { worker_batch_size: 5, ..s }, &c, &Limits::aws_default(), &Prices::us_east_1());
        close(batch5.per_fire.worker_invokes, 0.2);
        close(batch5.lambda.worker_invocations_per_sec, 200.0);
        // Monthly Lambda requests: fires / 5 workers + (1 tick + 64 scans) a minute.
        let requests = 300.0 * SECONDS_PER_MONTH / 5.0 + TICKS_PER_MONTH * 65.0;
        close(batch5.cost.lambda_requests, requests / 1e6 * 0.2);
    }

    #[test]
    fn canned_scenarios_by_name() {
        assert_eq!(scenario_names(), &["eventbridge-default", "billion"]);
        assert_eq!(scenario_by_name("eventbridge-default"), Some(Scenario::eventbridge_default()));
        assert_eq!(scenario_by_name("billion"), Some(Scenario::billion()));
        assert_eq!(scenario_by_name("1 billion"), None);
        for name in scenario_names() {
            let s = scenario_by_name(name).expect("named scenario");
            assert_eq!(s.class_mix, ClassMix::typical());
            assert_eq!(s.validate(), Ok(()));
        }
    }

    #[test]
    fn number_formatting() {
        assert_eq!(num(2_400.0), "2,400");
        assert_eq!(num(1_000_000_000.0), "1,000,000,000");
        assert_eq!(num(187.5), "188");
        assert_eq!(num(58.59), "58.6");
        assert_eq!(num(1.875), "1.88");
        assert_eq!(num(16.0), "16");
        assert_eq!(num(0.0), "0");
        assert_eq!(money(1_234.5), "$1,235");
        assert_eq!(money(3.127), "$3.13");
        assert_eq!(pct(13.5), "1,350%");
        assert_eq!(pct(0.125), "13%");
        assert_eq!(pct(0.001), "0.1%");
        assert_eq!(pct(0.0001), "<0.1%");
        assert_eq!(pct(0.0), "0.0%");
    }
}
