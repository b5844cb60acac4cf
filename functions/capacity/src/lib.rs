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

mod bench;
mod costs;
mod crossover;
mod explain;
mod fit;
mod limits;
mod markdown;
mod model;
mod numbers;
mod prices;
mod provisioned;
mod report;
mod scenario;
mod validate;
mod violations;

#[cfg(test)]
mod tests;

pub use costs::{ClassCost, Costs, ItemKind, Table};
pub use crossover::crossover_schedules;
pub use explain::render_explain;
pub use fit::fit;
pub use limits::Limits;
pub use markdown::render_markdown;
pub use model::{model, scan_partition_rate};
pub use prices::{Prices, ReservedPrice};
pub use report::{
    BillingMode, CapacityUnit, CellsAlternative, Check, Knob, LambdaLoad, MonthlyCost, PartitionKind,
    PartitionLoad, PerFire, PlannedTable, ProvisionedCost, Recommendation, Report, SpikeLoad, SqsLoad,
    TableLoad, Violation,
};
pub use scenario::{scenario_by_name, scenario_names, ClassMix, Scenario};

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
