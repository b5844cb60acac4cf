//! Provisioned throughput planned from the schedule itself (pure: no I/O, no clock).
//!
//! A scheduler knows its load ahead: the fires due in each coming minute are in its tables. With
//! DynamoDB in provisioned mode that knowledge replaces auto scaling's guesswork: [`plan`] takes
//! `now`, the table's current provisioned [`Throughput`], the demand of each coming minute
//! ([`MinuteDemand`], units per second) and the table's [`Decreases`] so far, and says what to
//! provision now.
//!
//! Layout:
//! - [`plan`]: one decision. Increases are unlimited but take minutes, so the plan raises to the
//!   highest demand of the next `lead_minutes` (with `headroom`). Decreases are rationed by
//!   DynamoDB ([`Decreases::allowed`]: 4 at any time of a UTC day, then one per hour without a
//!   decrease, 27 a day at most), so the plan spends one only when the next `horizon_minutes`
//!   stay low enough to be worth it, and only with a forecast that covers that horizon.
//! - [`simulate`]: the plan applied every minute over a demand profile, as the tick applies it;
//!   the capacity model uses it to price provisioned mode.
//!
//! Every instant is Unix seconds (UTC), every minute a Unix minute (`seconds / 60`), so the crate
//! needs no time library and the caller's clock is the only clock.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod decreases;
mod simulate;

#[cfg(test)]
mod tests;

pub use decreases::{Decreases, DECREASES_ANY_TIME, DECREASES_PER_DAY, DECREASE_SPACING_SECS};
pub use simulate::{simulate, Simulation};

/// Provisioned units of one table or index. DynamoDB's minimum is 1 of each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Throughput {
    /// Write capacity units.
    pub wcu: u64,
    /// Read capacity units.
    pub rcu: u64,
}

/// The load of one coming minute on one table or index, in units per second at its busiest.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MinuteDemand {
    /// Unix minute (`seconds / 60`).
    pub minute: i64,
    /// Write units per second.
    pub wcu: f64,
    /// Read units per second.
    pub rcu: f64,
}

/// How the plan reads the demand.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Minutes ahead an increase must be in place (DynamoDB takes minutes to apply one).
    pub lead_minutes: u32,
    /// Minutes that must stay low before a decrease is worth spending (decreases are rationed).
    pub horizon_minutes: u32,
    /// Provisioned ÷ demand, at least 1.
    pub headroom: f64,
    /// Smallest share of the current units a decrease must save.
    pub min_decrease_share: f64,
    /// Units never provisioned below (DynamoDB's minimum is 1).
    pub min_units: u64,
    /// Units never provisioned above (the table quota, 40,000 by default).
    pub max_units: u64,
}

impl Default for Settings {
    /// 5 minutes of lead, a 15-minute horizon, 25 % headroom, decreases of at least 20 %,
    /// between 1 and 40,000 units.
    fn default() -> Self {
        Settings {
            lead_minutes: 5,
            horizon_minutes: 15,
            headroom: 1.25,
            min_decrease_share: 0.2,
            min_units: 1,
            max_units: 40_000,
        }
    }
}

/// What [`plan`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// Units to provision now (equal to the current ones when nothing changes).
    pub target: Throughput,
    /// Whether `target` lowers any unit, i.e. spends one of the day's decreases.
    pub decrease: bool,
    /// Whether the demand asked for more than `max_units` (the table quota binds).
    pub capped: bool,
}

impl Decision {
    /// Whether `target` differs from `current`, i.e. an `UpdateTable` is due.
    pub fn changes(&self, current: Throughput) -> bool {
        self.target != current
    }
}

/// The units to provision at `now` (Unix seconds) for the demand of the coming minutes.
///
/// Never below the highest demand × headroom of the next `lead_minutes` (what cannot wait for a
/// later increase); never above `max_units`; lowers a unit only when [`Decreases::allowed`], when
/// the forecast covers the whole horizon (a minute it does not know is not a quiet minute) and
/// when the horizon's need is at least `min_decrease_share` below the current units.
pub fn plan(
    now: i64,
    current: Throughput,
    demand: &[MinuteDemand],
    decreases: &Decreases,
    s: &Settings,
) -> Decision {
    let first = now.div_euclid(60);
    let (lead, lead_capped) = need(demand, first, first + i64::from(s.lead_minutes), s);
    let (horizon, horizon_capped) = need(demand, first, first + i64::from(s.horizon_minutes), s);
    let up = Throughput { wcu: current.wcu.max(lead.wcu), rcu: current.rcu.max(lead.rcu) };
    let worth = |cur: u64, to: u64| (to as f64) <= cur as f64 * (1.0 - s.min_decrease_share);
    let lower = worth(up.wcu, horizon.wcu) || worth(up.rcu, horizon.rcu);
    let known = covers(demand, first, first + i64::from(s.horizon_minutes));
    if lower && known && decreases.allowed(now) {
        let target = Throughput { wcu: up.wcu.min(horizon.wcu), rcu: up.rcu.min(horizon.rcu) };
        let decrease = target.wcu < current.wcu || target.rcu < current.rcu;
        return Decision { target, decrease, capped: horizon_capped };
    }
    Decision { target: up, decrease: false, capped: lead_capped }
}

/// Units for the highest demand of minutes `from..=to` (with headroom, clamped), and whether the
/// clamp to `max_units` bound.
fn need(demand: &[MinuteDemand], from: i64, to: i64, s: &Settings) -> (Throughput, bool) {
    let window = demand.iter().filter(|d| (from..=to).contains(&d.minute));
    let (w, r) = window.fold((0.0_f64, 0.0_f64), |(w, r), d| (w.max(d.wcu), r.max(d.rcu)));
    let (wcu, wcap) = units(w, s);
    let (rcu, rcap) = units(r, s);
    (Throughput { wcu, rcu }, wcap || rcap)
}

/// `ceil(per_sec × headroom)` within `[min_units, max_units]`, and whether the top clamp bound.
fn units(per_sec: f64, s: &Settings) -> (u64, bool) {
    let want = (per_sec.max(0.0) * s.headroom.max(1.0)).ceil();
    let min = s.min_units.max(1);
    let max = s.max_units.max(min);
    if !want.is_finite() || want > max as f64 {
        return (max, true);
    }
    ((want as u64).max(min), false)
}

/// Whether every minute of `from..=to` has a demand entry.
fn covers(demand: &[MinuteDemand], from: i64, to: i64) -> bool {
    (from..=to).all(|m| demand.iter().any(|d| d.minute == m))
}
