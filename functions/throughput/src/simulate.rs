//! The plan applied every minute over a demand profile, as the planner applies it in
//! production: what provisioned mode costs for a known load, and whether it ever fell short.

use crate::{plan, Decreases, MinuteDemand, Settings, Throughput};

/// What [`simulate`] found over the profile's last day.
#[derive(Debug, Clone, PartialEq)]
pub struct Simulation {
    /// Mean provisioned write units over the measured day.
    pub mean_wcu: f64,
    /// Mean provisioned read units over the measured day.
    pub mean_rcu: f64,
    /// Highest write units provisioned.
    pub peak_wcu: u64,
    /// Highest read units provisioned.
    pub peak_rcu: u64,
    /// Lowest write units provisioned on the measured day (what a reservation can cover).
    pub low_wcu: u64,
    /// Lowest read units provisioned on the measured day.
    pub low_rcu: u64,
    /// Decreases spent on the measured day.
    pub decreases: u32,
    /// Minutes whose demand exceeded what was provisioned (0 unless the table quota binds).
    pub short_minutes: u32,
}

/// Applies [`plan`] at the start of every minute of `day` (1,440 entries: the demand of each
/// minute of a UTC day, units per second), repeated for two days from the day's peak so the
/// second, measured day starts in a steady state, with the forecast the tick has: every minute
/// of the plan's horizon. Pure.
pub fn simulate(day: &[(f64, f64)], s: &Settings) -> Simulation {
    let minutes = day.len().max(1) as i64;
    let demand_at = |m: i64| {
        let (wcu, rcu) = day.get(m.rem_euclid(minutes) as usize).copied().unwrap_or((0.0, 0.0));
        MinuteDemand { minute: m, wcu, rcu }
    };
    let (pw, pr) = day.iter().fold((0.0_f64, 0.0_f64), |(w, r), d| (w.max(d.0), r.max(d.1)));
    let start = crate::units(pw, s).0;
    let mut current = Throughput { wcu: start, rcu: crate::units(pr, s).0 };
    let mut decreases = Decreases::default();
    let mut out = Simulation {
        mean_wcu: 0.0,
        mean_rcu: 0.0,
        peak_wcu: 0,
        peak_rcu: 0,
        low_wcu: u64::MAX,
        low_rcu: u64::MAX,
        decreases: 0,
        short_minutes: 0,
    };
    let horizon = i64::from(s.horizon_minutes.max(s.lead_minutes));
    for m in 0..2 * minutes {
        let forecast: Vec<MinuteDemand> = (m..=m + horizon).map(demand_at).collect();
        let d = plan(m * 60, current, &forecast, &decreases, s);
        if d.decrease {
            decreases = decreases.after_decrease(m * 60);
        }
        current = d.target;
        if m >= minutes {
            let now = demand_at(m);
            out.mean_wcu += current.wcu as f64 / minutes as f64;
            out.mean_rcu += current.rcu as f64 / minutes as f64;
            out.peak_wcu = out.peak_wcu.max(current.wcu);
            out.peak_rcu = out.peak_rcu.max(current.rcu);
            out.low_wcu = out.low_wcu.min(current.wcu);
            out.low_rcu = out.low_rcu.min(current.rcu);
            out.decreases += u32::from(d.decrease);
            out.short_minutes += u32::from(now.wcu > current.wcu as f64 || now.rcu > current.rcu as f64);
        }
    }
    if out.low_wcu == u64::MAX {
        out.low_wcu = 0;
        out.low_rcu = 0;
    }
    out
}
