//! The model itself: from a scenario, the measured costs, the limits and the prices to a
//! [`Report`].

use crate::costs::{ClassCost, Costs, ItemKind, Table};
use crate::limits::Limits;
use crate::prices::Prices;
use crate::provisioned::provisioned_cost;
use crate::report::{
    CapacityUnit, CellsAlternative, LambdaLoad, MonthlyCost, PartitionKind, PartitionLoad, PerFire, Report,
    SpikeLoad, SqsLoad, TableLoad,
};
use crate::scenario::{knob, Scenario};
use crate::{
    BYTES_PER_GB, EVENTUALLY_CONSISTENT_FACTOR, EVERY_MINUTE_READS_PER_TICK, ITEM_OVERHEAD_BYTES,
    MAX_JOB_FIRES_PER_SEC, MIN_SCAN_SECONDS, READ_UNIT_BYTES, SECONDS_PER_MONTH, TICKS_PER_MONTH,
    TICK_INVOCATION_SECONDS, TICK_PERIOD_SECONDS, TOLERANCE,
};

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
    let provisioned = provisioned_cost(s, &per_fire, limits, prices, &cost);
    let with_cells = (s.tenant_limits && !s.tenant_cells && s.gate_share() > 0.0).then(|| {
        let cells = model(&Scenario { tenant_cells: true, ..s.clone() }, c, limits, prices);
        let per_million_fires = cells.cheapest_per_million_fires();
        CellsAlternative {
            pools: cells.scenario.cell_pools().unwrap_or(1),
            mode: cells.cheapest_mode(),
            per_million_fires,
            ratio_to_eventbridge: per_million_fires * cells.cost.fires
                / 1e6
                / cells.cost.eventbridge_scheduler.max(f64::MIN_POSITIVE),
        }
    });
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
        provisioned,
        with_cells,
    }
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
        ItemKind::TenantGate => s.gate_share(),
        ItemKind::Watermark => 0.0,
        _ => 1.0,
    }
}

/// Mixed units per fire spent on one table, writes or reads; `ahead`: only those the tick spends
/// the minute before the fire.
fn table_units(s: &Scenario, c: &Costs, table: Table, unit: CapacityUnit, ahead: bool) -> f64 {
    ItemKind::ALL
        .into_iter()
        .filter(|kind| kind.table() == table)
        .map(|kind| applied_share(s, kind) * mixed(s, c, |cc| class_units(cc, kind, unit, ahead)))
        .sum()
}

fn class_units(cc: &ClassCost, kind: ItemKind, unit: CapacityUnit, ahead: bool) -> f64 {
    match (unit, ahead) {
        (CapacityUnit::Wcu, false) => cc.write(kind),
        (CapacityUnit::Rcu, false) => cc.read(kind),
        (CapacityUnit::Wcu, true) => cc.write_ahead(kind),
        (CapacityUnit::Rcu, true) => cc.read_ahead(kind),
    }
}

fn per_fire(s: &Scenario, c: &Costs) -> PerFire {
    PerFire {
        jobs_table_writes: table_units(s, c, Table::Jobs, CapacityUnit::Wcu, false),
        jobs_table_reads: table_units(s, c, Table::Jobs, CapacityUnit::Rcu, false),
        executions_table_writes: table_units(s, c, Table::Executions, CapacityUnit::Wcu, false),
        executions_table_reads: table_units(s, c, Table::Executions, CapacityUnit::Rcu, false),
        jobs_table_writes_ahead: table_units(s, c, Table::Jobs, CapacityUnit::Wcu, true),
        jobs_table_reads_ahead: table_units(s, c, Table::Jobs, CapacityUnit::Rcu, true),
        executions_table_writes_ahead: table_units(s, c, Table::Executions, CapacityUnit::Wcu, true),
        executions_table_reads_ahead: table_units(s, c, Table::Executions, CapacityUnit::Rcu, true),
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
pub(crate) fn ceil_count(x: f64) -> u32 {
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
pub(crate) fn job_read_units(s: &Scenario) -> f64 {
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
/// taken to be part of that measured rate); workers `peak / batch × duration` (Little's law). The
/// tick starts every scan at the top of the minute, so the scans' burst concurrency is their
/// count; the total uses the larger of burst and mean.
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

/// Stored GB: executions kept for their tier ([`Scenario::stored_days`]) plus one item per schedule.
fn storage_gb(s: &Scenario) -> f64 {
    let executions = s.mean_fires_per_sec * s.stored_days() * 86_400.0;
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

/// `a / b`, or 0 when `b` is 0.
fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}
