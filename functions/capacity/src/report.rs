//! What the model computes for one scenario: per-fire units, the peak minute, table, partition,
//! Lambda and SQS load, the monthly bill, and the violations found in them.

use serde::{Deserialize, Serialize};

use crate::limits::Limits;
use crate::scenario::Scenario;

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
    /// Of `jobs_table_writes`, the units the tick spends the minute before the fire.
    #[serde(default)]
    pub jobs_table_writes_ahead: f64,
    /// Of `jobs_table_reads`, the units the tick spends the minute before the fire.
    #[serde(default)]
    pub jobs_table_reads_ahead: f64,
    /// Of `executions_table_writes`, the units the tick spends the minute before the fire.
    #[serde(default)]
    pub executions_table_writes_ahead: f64,
    /// Of `executions_table_reads`, the units the tick spends the minute before the fire.
    #[serde(default)]
    pub executions_table_reads_ahead: f64,
    /// Write units per fire on the `open` index.
    pub open_index_writes: f64,
    /// Write units per fire on a tenant gate (0 when tenant limits are off).
    pub tenant_gate_writes: f64,
    /// Write units on the `due` index per bucket-class fire (not mixed).
    pub due_index_writes_per_bucket_fire: f64,
    /// SQS requests per fire.
    pub sqs_requests: f64,
    /// Worker Lambda invocations per fire: `1 / worker_batch_size` (not the measured
    /// [`ClassCost::lambda_invokes`](crate::ClassCost::lambda_invokes)); used at the peak and in
    /// the monthly bill.
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
    /// Seconds one scan invocation needs in the peak minute (at least
    /// [`MIN_SCAN_SECONDS`](crate::MIN_SCAN_SECONDS)).
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

// Provisioned mode's figures, priced by `provisioned.rs`: here with the rest of the report that
// holds them, so the report does not import the pricing that imports the report.

/// What the plan provisions for one table kind over the day.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PlannedTable {
    /// Tables of this kind (each provisioned alike).
    pub tables: u32,
    /// Mean provisioned WCU of one table.
    pub mean_wcu: f64,
    /// Mean provisioned RCU of one table.
    pub mean_rcu: f64,
    /// Highest WCU provisioned on one table.
    pub peak_wcu: u64,
    /// Highest RCU provisioned on one table.
    pub peak_rcu: u64,
    /// Lowest WCU provisioned on one table over the day.
    pub low_wcu: u64,
    /// Lowest RCU provisioned on one table over the day.
    pub low_rcu: u64,
    /// Decreases spent a day (DynamoDB allows 27).
    pub decreases_per_day: u32,
    /// Minutes a day the demand was above what could be provisioned (the table quota binds).
    pub short_minutes: u32,
}

/// The monthly bill in provisioned mode beside the on-demand one.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ProvisionedCost {
    /// The jobs table.
    pub jobs: PlannedTable,
    /// Each executions table.
    pub executions: PlannedTable,
    /// Provisioned write units bought over the month (WCU-hours) in dollars.
    pub dynamo_writes: f64,
    /// Provisioned read units bought over the month (RCU-hours) in dollars.
    pub dynamo_reads: f64,
    /// Demand ÷ provisioned over the month, write units.
    pub write_utilisation: f64,
    /// Demand ÷ provisioned over the month, read units.
    pub read_utilisation: f64,
    /// The on-demand bill with its DynamoDB request lines replaced by the two above.
    pub total: f64,
    /// `total` per million fires.
    pub per_million_fires: f64,
    /// `total / eventbridge_scheduler`.
    pub ratio_to_eventbridge: f64,
    /// The same plan with its base covered by reserved capacity, one entry per term priced.
    pub reserved: Vec<ReservedCost>,
}

/// Provisioned mode with the base of the plan bought as reserved capacity: the units every
/// minute of the day keeps provisioned (the plan's low, all tables together), rounded down to
/// DynamoDB's blocks of 100, at the term's rate; the rest of the plan at the provisioned rate.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ReservedCost {
    /// Length of the commitment, years.
    pub term_years: u32,
    /// WCU reserved (a multiple of 100).
    pub reserved_wcu: u64,
    /// RCU reserved (a multiple of 100).
    pub reserved_rcu: u64,
    /// DynamoDB write capacity, reserved and provisioned, $/month.
    pub dynamo_writes: f64,
    /// DynamoDB read capacity, reserved and provisioned, $/month.
    pub dynamo_reads: f64,
    /// The provisioned bill with the two lines above.
    pub total: f64,
    /// `total` per million fires.
    pub per_million_fires: f64,
    /// `total / eventbridge_scheduler`.
    pub ratio_to_eventbridge: f64,
}

/// Everything [`model`](fn@crate::model) computes for one scenario.
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
    /// Monthly bill (DynamoDB on demand).
    pub cost: MonthlyCost,
    /// Monthly bill with the tables in provisioned mode under the schedule-driven plan.
    pub provisioned: ProvisionedCost,
    /// The same load with tenant cells, when its tenants' gates are written without them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub with_cells: Option<CellsAlternative>,
}

/// What tenant cells would change: the gate no longer written ([`Scenario::tenant_cells`]).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CellsAlternative {
    /// Pools the stack's capacity is split into.
    pub pools: u64,
    /// Its cheapest billing mode.
    pub mode: BillingMode,
    /// Dollars per million fires in that mode.
    pub per_million_fires: f64,
    /// `per_million_fires` ÷ EventBridge Scheduler's.
    pub ratio_to_eventbridge: f64,
}

/// The configuration [`Report::recommended`] names.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Recommendation {
    /// Billing mode of the tables.
    pub mode: BillingMode,
    /// Whether tenant cells are part of it (and how many pools).
    pub cell_pools: Option<u64>,
    /// Dollars per million fires.
    pub per_million_fires: f64,
}

/// How the tables are billed.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum BillingMode {
    /// Per request (the default, and the only mode without a plan to run).
    OnDemand,
    /// Provisioned units set ahead by the schedule-driven plan.
    Provisioned,
    /// The plan, with its base bought as reserved capacity for this many years.
    Reserved {
        /// Length of the commitment.
        years: u32,
    },
}

impl Report {
    /// The cheapest billing mode for this scenario: on demand, provisioned under the plan, or
    /// the plan with a reservation (a commitment EventBridge Scheduler does not ask for; the
    /// report shows every mode).
    pub fn cheapest_mode(&self) -> BillingMode {
        self.modes().into_iter().min_by(|a, b| a.1.total_cmp(&b.1)).map_or(BillingMode::OnDemand, |(m, _)| m)
    }

    /// Dollars per million fires in the cheapest mode.
    pub fn cheapest_per_million_fires(&self) -> f64 {
        let mode = self.cheapest_mode();
        self.modes().into_iter().find(|(m, _)| *m == mode).map_or(self.cost.per_million_fires, |(_, c)| c)
    }

    /// The cheapest configuration: the cheapest mode as given, or with tenant cells when they
    /// cost less.
    pub fn recommended(&self) -> Recommendation {
        let own = Recommendation {
            mode: self.cheapest_mode(),
            cell_pools: self.scenario.cell_pools(),
            per_million_fires: self.cheapest_per_million_fires(),
        };
        match &self.with_cells {
            Some(c) if c.per_million_fires < own.per_million_fires => Recommendation {
                mode: c.mode,
                cell_pools: Some(c.pools),
                per_million_fires: c.per_million_fires,
            },
            _ => own,
        }
    }

    /// Every mode with its dollars per million fires.
    pub fn modes(&self) -> Vec<(BillingMode, f64)> {
        let mut modes = vec![
            (BillingMode::OnDemand, self.cost.per_million_fires),
            (BillingMode::Provisioned, self.provisioned.per_million_fires),
        ];
        modes.extend(
            self.provisioned
                .reserved
                .iter()
                .map(|r| (BillingMode::Reserved { years: r.term_years }, r.per_million_fires)),
        );
        modes
    }
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
    /// The largest tenant needs more executions running at the peak than its running limit
    /// admits: its fires would wait behind its gate and start late.
    TenantLimit,
}

/// A knob [`fit`](fn@crate::fit) can turn.
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
