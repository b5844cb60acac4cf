//! The provisioned-capacity planner: once a minute (the tick function's `{"plan": {}}` event,
//! on its own EventBridge rule when the CDK's `tableCapacity` is provisioned), forecast the fires
//! of the coming minutes from the `due` index, turn them into units per table with the measured
//! units per fire, and let the pure plan (`sundial-throughput`) say what to provision.
//!
//! Why a sample: counting every shard's partitions for every coming minute would cost a query
//! per shard and minute; shards are uniform hashes of the jobs, so `sample_shards` evenly spaced
//! shards, scaled by `shards ÷ sample`, estimate the whole (the plan's headroom covers the
//! sampling error). Every-minute jobs are counted once (they fire every minute); daily jobs are
//! in the `D#{minute of day}` partition of their minute, moved jobs in `{minute}#{shard}`.
//!
//! The planner never touches a job or an execution, so it cannot lose or double a fire: a failed
//! run leaves the units as they were, and the next minute plans again from the table as it is.

use chrono::{DateTime, Utc};
use sundial_throughput::{plan, Decreases, MinuteDemand, Settings, Throughput};

use crate::access::{self, Role, Scope};
use crate::Ctx;
use sundial_model::keys;
use sundial_store::error::StoreError;
use sundial_store::throughput::{self as store, Provisioned, ThroughputError};

/// Units one fire costs on a table or one of its indexes, writes and reads (the typical mix's,
/// from `sundial capacity --explain`, which takes them from the checked-in bench documents).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PerFire {
    /// Write units per fire.
    pub wcu: f64,
    /// Read units per fire.
    pub rcu: f64,
    /// Of `wcu`, those the tick spends the minute before the fire (its put, the bucket class's
    /// job advance and index entries); the rest (claim, finish, slots, gates) in the fire's own.
    pub ahead_wcu: f64,
    /// Of `rcu`, those the tick spends the minute before the fire.
    pub ahead_rcu: f64,
}

impl PerFire {
    /// Units with none spent ahead.
    pub const fn at_fire(wcu: f64, rcu: f64) -> PerFire {
        PerFire { wcu, rcu, ahead_wcu: 0.0, ahead_rcu: 0.0 }
    }
}

/// How the planner forecasts and plans.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannerSettings {
    /// Shards counted to estimate all of them.
    pub sample_shards: u32,
    /// Units per fire of each table and index, by `table` or `table/index` (`jobs`, `jobs/due`,
    /// `executions`, `executions/open`); an index not listed gets the plan's minimum.
    pub per_fire: Vec<(String, PerFire)>,
    /// The plan's lead, horizon, headroom and bounds.
    pub plan: Settings,
}

impl Default for PlannerSettings {
    /// 32 sampled shards; per-fire units of the typical mix measured on the current code
    /// (`sundial capacity --explain`, from docs/bench; ahead = the bench's tick phase): jobs
    /// 0.2 WU (the bucket class's advance, ahead) + 1.0 RU (the worker's job read); its `due`
    /// index 0.4 WU ahead + 0.15 RU (0.09 ahead: the scan); executions 5.5 WU (put 1 ahead,
    /// claim, finish, a FORBID half's slot and a limited tenant's gate) + 2.85 RU; its `open`
    /// index 0.4 WU (0.2 ahead); the plan's defaults. The gate is counted whether or not the
    /// stack's limits need it: a forecast short of the load throttles, one over it costs cents.
    fn default() -> Self {
        let pf = |wcu, ahead_wcu, rcu, ahead_rcu| PerFire { wcu, rcu, ahead_wcu, ahead_rcu };
        PlannerSettings {
            sample_shards: 32,
            per_fire: vec![
                ("jobs".into(), pf(0.2, 0.2, 1.0, 0.0)),
                ("jobs/due".into(), pf(0.4, 0.4, 0.15, 0.09)),
                ("executions".into(), pf(5.5, 1.0, 2.85, 0.0)),
                ("executions/open".into(), pf(0.4, 0.2, 0.0, 0.0)),
            ],
            plan: Settings::default(),
        }
    }
}

/// What one run did to one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TablePlan {
    /// `jobs` or `executions`.
    pub table: &'static str,
    /// Units before and after, table then indexes (unchanged when nothing was due).
    pub changes: Vec<(String, Throughput, Throughput)>,
    /// Why nothing was planned (`on demand`, `updating`), if so.
    pub skipped: Option<&'static str>,
}

/// What one planner run found and did.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanReport {
    /// Estimated fires of each coming minute (Unix minute, fires).
    pub forecast: Vec<(i64, f64)>,
    /// Per table.
    pub tables: Vec<TablePlan>,
}

/// One planner run at `now`, as the tick's role.
pub async fn run_plan(
    ctx: &Ctx,
    now: DateTime<Utc>,
    s: &PlannerSettings,
) -> Result<PlanReport, ThroughputError> {
    access::scope(Scope::new(Role::Tick, &ctx.cfg), plan_tables(ctx, now, s)).await
}

async fn plan_tables(
    ctx: &Ctx,
    now: DateTime<Utc>,
    s: &PlannerSettings,
) -> Result<PlanReport, ThroughputError> {
    let minutes = s.plan.horizon_minutes.max(s.plan.lead_minutes) + 1;
    let forecast = forecast(ctx, now, minutes, s.sample_shards).await?;
    let mut tables = Vec::new();
    for (label, name) in [("jobs", &ctx.cfg.jobs_table), ("executions", &ctx.cfg.executions_table)] {
        tables.push(plan_table(ctx, label, name, now, &forecast, s).await?);
    }
    Ok(PlanReport { forecast, tables })
}

/// Evenly spaced shards, `n` of them at most.
pub fn sample(shards: u32, n: u32) -> Vec<u32> {
    let n = n.clamp(1, shards.max(1));
    (0..n).map(|i| (u64::from(i) * u64::from(shards.max(1)) / u64::from(n)) as u32).collect()
}

/// Estimated fires in each of the `minutes` minutes from `now`'s minute.
async fn forecast(
    ctx: &Ctx,
    now: DateTime<Utc>,
    minutes: u32,
    n: u32,
) -> Result<Vec<(i64, f64)>, StoreError> {
    let (ddb, table) = (&ctx.ddb, &ctx.cfg.jobs_table);
    let shards = sample(ctx.cfg.shards, n);
    let scale = f64::from(ctx.cfg.shards.max(1)) / shards.len() as f64;
    let mut every = 0u64;
    for &shard in &shards {
        every += store::count_due(ddb, table, &keys::every_bucket(shard)).await?;
    }
    let first = keys::minute_of(now);
    let mut out = Vec::new();
    for m in first..first + i64::from(minutes) {
        let mut due = every;
        for &shard in &shards {
            due += store::count_due(ddb, table, &keys::daily_bucket(keys::minute_of_day(m), shard)).await?;
            due += store::count_due(ddb, table, &keys::due_bucket(m, shard)).await?;
        }
        out.push((m, due as f64 * scale));
    }
    Ok(out)
}

/// Units per second each minute for `per_fire`: what the tick spends ahead on the next minute's
/// fires (it puts a minute's executions during the minute before) plus the rest of this minute's
/// fires' units, spread over 60 s. The last minute takes its own fires for the next.
pub fn demand(forecast: &[(i64, f64)], p: PerFire) -> Vec<MinuteDemand> {
    forecast
        .iter()
        .enumerate()
        .map(|(i, &(minute, fires))| {
            let next = forecast.get(i + 1).map_or(fires, |f| f.1);
            let per_sec = |at: f64, ahead: f64| (fires * (at - ahead) + next * ahead) / 60.0;
            MinuteDemand { minute, wcu: per_sec(p.wcu, p.ahead_wcu), rcu: per_sec(p.rcu, p.ahead_rcu) }
        })
        .collect()
}

fn per_fire(s: &PlannerSettings, key: &str) -> PerFire {
    s.per_fire.iter().find(|(k, _)| k == key).map_or(PerFire::at_fire(0.0, 0.0), |(_, p)| *p)
}

fn decide(now: DateTime<Utc>, p: &Provisioned, d: &[MinuteDemand], s: &Settings) -> Throughput {
    let hist = Decreases::reported(now.timestamp(), p.decreases_today, p.last_decrease);
    plan(now.timestamp(), p.units, d, &hist, s).target
}

async fn plan_table(
    ctx: &Ctx,
    label: &'static str,
    name: &str,
    now: DateTime<Utc>,
    forecast: &[(i64, f64)],
    s: &PlannerSettings,
) -> Result<TablePlan, ThroughputError> {
    let current = store::describe_throughput(&ctx.ddb, name).await?;
    let skipped = |why| Ok(TablePlan { table: label, changes: Vec::new(), skipped: Some(why) });
    let Some(own) = current.table else { return skipped("on demand") };
    if !current.active {
        return skipped("updating");
    }
    let target = decide(now, &own, &demand(forecast, per_fire(s, label)), &s.plan);
    let mut changes = vec![(label.to_string(), own.units, target)];
    let mut index_updates = Vec::new();
    for (ix, p) in &current.indexes {
        let d = demand(forecast, per_fire(s, &format!("{label}/{ix}")));
        let t = decide(now, p, &d, &s.plan);
        changes.push((format!("{label}/{ix}"), p.units, t));
        if t != p.units {
            index_updates.push((ix.clone(), t));
        }
    }
    let own_update = (target != own.units).then_some(target);
    if own_update.is_some() || !index_updates.is_empty() {
        store::set_throughput(&ctx.ddb, name, own_update, &index_updates).await?;
    }
    Ok(TablePlan { table: label, changes, skipped: None })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sample_is_evenly_spaced_and_never_more_than_the_shards() {
        assert_eq!(sample(4096, 4), vec![0, 1024, 2048, 3072]);
        assert_eq!(sample(3, 32), vec![0, 1, 2]);
        assert_eq!(sample(0, 32), vec![0]);
    }

    #[test]
    fn demand_takes_the_next_minute_for_the_puts_made_ahead() {
        // 3 WU a fire, 1 of them (the put) the minute before; reads all in the fire's minute.
        let p = PerFire { wcu: 3.0, rcu: 1.0, ahead_wcu: 1.0, ahead_rcu: 0.0 };
        let d = demand(&[(10, 60.0), (11, 600.0), (12, 60.0)], p);
        // 10: its 60 fires' claim and finish + the 600 puts of 11; 11: 600 × 2 + 60 puts of 12.
        assert_eq!(d.iter().map(|x| x.wcu).collect::<Vec<_>>(), vec![12.0, 21.0, 3.0]);
        assert_eq!(d.iter().map(|x| x.rcu).collect::<Vec<_>>(), vec![1.0, 10.0, 1.0]);
        // Nothing ahead: each minute its own fires only.
        let d = demand(&[(10, 60.0), (11, 600.0)], PerFire::at_fire(2.0, 0.0));
        assert_eq!(d.iter().map(|x| x.wcu).collect::<Vec<_>>(), vec![2.0, 20.0]);
    }
}
