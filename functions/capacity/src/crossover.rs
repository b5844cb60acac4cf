//! Where provisioned mode starts to pay: the scenario scaled until its provisioned bill is no
//! more than its on-demand one.
//!
//! Not in `provisioned.rs`: it runs the whole [`model`], which prices provisioned mode with
//! `provisioned.rs`, so there the two files would import each other.

use crate::costs::Costs;
use crate::limits::Limits;
use crate::model::model;
use crate::prices::Prices;
use crate::scenario::Scenario;

/// The scenario scaled by `k`: schedules and rates alike, knobs as they are.
fn scaled(s: &Scenario, k: f64) -> Scenario {
    Scenario {
        schedules: (s.schedules as f64 * k).round().max(1.0) as u64,
        peak_fires_per_sec: s.peak_fires_per_sec * k,
        mean_fires_per_sec: s.mean_fires_per_sec * k,
        spike_fires: s.spike_fires.map(|f| f * k),
        ..s.clone()
    }
}

/// The fewest schedules (the scenario scaled, its knobs kept) from which provisioned mode costs
/// no more than on demand, found by bisection on the scale between 10⁻⁶ and 10³; `None` when
/// provisioned mode is dearer across that range.
pub fn crossover_schedules(s: &Scenario, c: &Costs, limits: &Limits, prices: &Prices) -> Option<u64> {
    let cheaper = |k: f64| {
        let r = model(&scaled(s, k), c, limits, prices);
        r.provisioned.total <= r.cost.total
    };
    let (mut lo, mut hi) = (1e-6_f64, 1e3_f64);
    if !cheaper(hi) {
        return None;
    }
    if cheaper(lo) {
        return Some(scaled(s, lo).schedules);
    }
    for _ in 0..60 {
        let mid = (lo * hi).sqrt();
        if cheaper(mid) {
            hi = mid
        } else {
            lo = mid
        }
    }
    Some(scaled(s, hi).schedules)
}
