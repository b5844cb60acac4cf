//! Provisioned mode, priced with the plan the planner applies in production
//! (`sundial-throughput`): the scenario's day minute by minute, the plan run at every minute with
//! the forecast the tick has, and the units it provisions billed by the hour.
//!
//! The day is the scenario's two rates: the first minute of every hour at `peak_fires_per_sec`
//! (the top-of-the-hour spike real users write), the other 59 at the rate that makes the mean.
//! The tick puts a minute's executions during the minute before, so each minute's demand is the
//! units the tick spends on the next minute's fires (measured: the bench's tick phase) plus the
//! rest of the units of its own fires (the worker's and the verification's). Index units are pooled with their table's (as
//! the rest of the model counts them), which leaves out the per-index rounding up of a few units.

use sundial_throughput::{simulate, Settings, Simulation};

use crate::limits::Limits;
use crate::prices::{Prices, ReservedPrice};
use crate::report::{MonthlyCost, PerFire, PlannedTable, ProvisionedCost, ReservedCost};
use crate::scenario::{knob, Scenario};
use crate::{SECONDS_PER_MONTH, TICK_PERIOD_SECONDS};

/// Minutes in the simulated day.
const MINUTES_PER_DAY: usize = 1_440;
/// Minutes in an hour, the period of the spike.
const MINUTES_PER_HOUR: usize = 60;

/// Fires per second in each minute of the scenario's day.
pub(crate) fn day_profile(s: &Scenario) -> Vec<f64> {
    let peak = s.peak_fires_per_sec;
    let hour = MINUTES_PER_HOUR as f64;
    let base = ((hour * s.mean_fires_per_sec - peak) / (hour - 1.0)).clamp(0.0, peak);
    (0..MINUTES_PER_DAY).map(|m| if m % MINUTES_PER_HOUR == 0 { peak } else { base }).collect()
}

/// Units one fire costs a table: all of them, and those spent the minute before it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FireUnits {
    pub wcu: f64,
    pub rcu: f64,
    pub ahead_wcu: f64,
    pub ahead_rcu: f64,
}

impl FireUnits {
    fn scaled(self, k: f64) -> FireUnits {
        FireUnits {
            wcu: self.wcu * k,
            rcu: self.rcu * k,
            ahead_wcu: self.ahead_wcu * k,
            ahead_rcu: self.ahead_rcu * k,
        }
    }
}

/// The demand of one table each minute: the units the tick spends ahead on the next minute's
/// fires, plus the rest of this minute's fires' units, plus fixed units per second.
pub(crate) fn table_day(profile: &[f64], u: FireUnits, fixed_wcu: f64) -> Vec<(f64, f64)> {
    let n = profile.len();
    (0..n)
        .map(|m| {
            let (now, next) = (profile[m], profile[(m + 1) % n]);
            let wcu = now * (u.wcu - u.ahead_wcu) + next * u.ahead_wcu;
            let rcu = now * (u.rcu - u.ahead_rcu) + next * u.ahead_rcu;
            (wcu + fixed_wcu, rcu)
        })
        .collect()
}

fn planned(tables: u32, sim: Simulation) -> PlannedTable {
    PlannedTable {
        tables,
        mean_wcu: sim.mean_wcu,
        mean_rcu: sim.mean_rcu,
        peak_wcu: sim.peak_wcu,
        peak_rcu: sim.peak_rcu,
        low_wcu: sim.low_wcu,
        low_rcu: sim.low_rcu,
        decreases_per_day: sim.decreases,
        short_minutes: sim.short_minutes,
    }
}

/// Provisioned mode for the scenario: the plan's units over its day, billed by the hour, in place
/// of the on-demand request lines of `on_demand`.
pub(crate) fn provisioned_cost(
    s: &Scenario,
    pf: &PerFire,
    limits: &Limits,
    prices: &Prices,
    on_demand: &MonthlyCost,
) -> ProvisionedCost {
    let settings =
        Settings { max_units: limits.table_wcu.min(limits.table_rcu) as u64, ..Settings::default() };
    let profile = day_profile(s);
    let tables = knob(s.executions_tables);
    let watermarks = knob(s.shards) / TICK_PERIOD_SECONDS;
    let jobs_units = FireUnits {
        wcu: pf.jobs_table_writes,
        rcu: pf.jobs_table_reads,
        ahead_wcu: pf.jobs_table_writes_ahead,
        ahead_rcu: pf.jobs_table_reads_ahead,
    };
    let exec_units = FireUnits {
        wcu: pf.executions_table_writes,
        rcu: pf.executions_table_reads,
        ahead_wcu: pf.executions_table_writes_ahead,
        ahead_rcu: pf.executions_table_reads_ahead,
    };
    let jobs_day = table_day(&profile, jobs_units, watermarks);
    let exec_day = table_day(&profile, exec_units.scaled(1.0 / tables), 0.0);
    let jobs = planned(1, simulate(&jobs_day, &settings));
    let executions = planned(s.executions_tables.max(1), simulate(&exec_day, &settings));
    let hours = SECONDS_PER_MONTH / 3_600.0;
    let wcu = jobs.mean_wcu + tables * executions.mean_wcu;
    let rcu = jobs.mean_rcu + tables * executions.mean_rcu;
    let dynamo_writes = wcu * hours * prices.dynamo_wcu_hour;
    let dynamo_reads = rcu * hours * prices.dynamo_rcu_hour;
    let demand_wcu = s.mean_fires_per_sec * (pf.jobs_table_writes + pf.executions_table_writes) + watermarks;
    let demand_rcu = s.mean_fires_per_sec * (pf.jobs_table_reads + pf.executions_table_reads);
    let total =
        on_demand.total - on_demand.dynamo_writes - on_demand.dynamo_reads + dynamo_writes + dynamo_reads;
    let millions = on_demand.fires / 1e6;
    let base = Base {
        low_wcu: jobs.low_wcu + u64::from(s.executions_tables.max(1)) * executions.low_wcu,
        low_rcu: jobs.low_rcu + u64::from(s.executions_tables.max(1)) * executions.low_rcu,
        mean_wcu: wcu,
        mean_rcu: rcu,
        without_dynamo: on_demand.total - on_demand.dynamo_writes - on_demand.dynamo_reads,
        millions,
        eventbridge: on_demand.eventbridge_scheduler,
    };
    let reserved = prices.reserved.iter().map(|t| base.reserved(t, prices)).collect();
    ProvisionedCost {
        jobs,
        executions,
        dynamo_writes,
        dynamo_reads,
        write_utilisation: if wcu > 0.0 { demand_wcu / wcu } else { 0.0 },
        read_utilisation: if rcu > 0.0 { demand_rcu / rcu } else { 0.0 },
        total,
        per_million_fires: if millions > 0.0 { total / millions } else { 0.0 },
        ratio_to_eventbridge: if on_demand.eventbridge_scheduler > 0.0 {
            total / on_demand.eventbridge_scheduler
        } else {
            0.0
        },
        reserved,
    }
}

/// What a reservation is priced on: the plan's low and mean units (all tables), and the rest of
/// the bill.
struct Base {
    low_wcu: u64,
    low_rcu: u64,
    mean_wcu: f64,
    mean_rcu: f64,
    without_dynamo: f64,
    millions: f64,
    eventbridge: f64,
}

impl Base {
    fn reserved(&self, term: &ReservedPrice, prices: &Prices) -> ReservedCost {
        let hours = SECONDS_PER_MONTH / 3_600.0;
        let (rw, rr) = (self.low_wcu / 100 * 100, self.low_rcu / 100 * 100);
        let over_w = (self.mean_wcu - rw as f64).max(0.0);
        let over_r = (self.mean_rcu - rr as f64).max(0.0);
        let dynamo_writes = (rw as f64 * term.wcu_hour() + over_w * prices.dynamo_wcu_hour) * hours;
        let dynamo_reads = (rr as f64 * term.rcu_hour() + over_r * prices.dynamo_rcu_hour) * hours;
        let total = self.without_dynamo + dynamo_writes + dynamo_reads;
        ReservedCost {
            term_years: term.term_years,
            reserved_wcu: rw,
            reserved_rcu: rr,
            dynamo_writes,
            dynamo_reads,
            total,
            per_million_fires: if self.millions > 0.0 { total / self.millions } else { 0.0 },
            ratio_to_eventbridge: if self.eventbridge > 0.0 { total / self.eventbridge } else { 0.0 },
        }
    }
}
