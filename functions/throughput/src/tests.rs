use super::*;
use proptest::prelude::*;

const T0: i64 = 1_796_083_200; // 2026-12-01T00:00:00Z, a UTC midnight

fn flat(from: i64, minutes: i64, wcu: f64, rcu: f64) -> Vec<MinuteDemand> {
    (from..from + minutes).map(|minute| MinuteDemand { minute, wcu, rcu }).collect()
}

fn tp(wcu: u64, rcu: u64) -> Throughput {
    Throughput { wcu, rcu }
}

#[test]
fn a_spike_inside_the_lead_is_provisioned_now_with_headroom() {
    // GIVEN 100 WCU/s until a spike of 1,000 four minutes from now
    let mut d = flat(T0 / 60, 20, 100.0, 10.0);
    d[4].wcu = 1_000.0;
    // WHEN the plan runs with 5 minutes of lead
    let p = plan(T0, tp(125, 13), &d, &Decreases::default(), &Settings::default());
    // THEN it raises to 1,250 (25 % headroom) and spends no decrease
    assert_eq!(p.target, tp(1_250, 13));
    assert!(!p.decrease && !p.capped);
}

#[test]
fn after_the_spike_it_decreases_to_the_horizon_need() {
    let d = flat(T0 / 60, 20, 100.0, 10.0);
    let p = plan(T0, tp(1_250, 13), &d, &Decreases::default(), &Settings::default());
    assert_eq!(p.target, tp(125, 13));
    assert!(p.decrease);
}

#[test]
fn a_spike_inside_the_horizon_holds_the_units_instead_of_spending_a_decrease() {
    let mut d = flat(T0 / 60, 20, 100.0, 10.0);
    d[12].wcu = 1_000.0;
    let p = plan(T0, tp(1_250, 13), &d, &Decreases::default(), &Settings::default());
    assert_eq!(p.target, tp(1_250, 13));
    assert!(!p.decrease);
}

#[test]
fn a_forecast_that_does_not_cover_the_horizon_never_decreases() {
    let d = flat(T0 / 60, 5, 100.0, 10.0);
    let p = plan(T0, tp(1_250, 13), &d, &Decreases::default(), &Settings::default());
    assert_eq!(p.target, tp(1_250, 13));
}

#[test]
fn the_minimum_is_one_unit_and_the_quota_caps() {
    let d = flat(T0 / 60, 20, 0.0, 1e9);
    let p = plan(T0, tp(5, 5), &d, &Decreases::default(), &Settings::default());
    assert_eq!(p.target, tp(1, 40_000));
    assert!(p.capped);
}

#[test]
fn the_ration_is_four_at_any_time_then_one_per_quiet_hour() {
    let mut r = Decreases::default();
    for i in 0..4 {
        assert!(r.allowed(T0 + i * 60), "decrease {i}");
        r = r.after_decrease(T0 + i * 60);
    }
    assert!(!r.allowed(T0 + 4 * 60));
    assert!(!r.allowed(T0 + 3 * 60 + 3_599));
    assert!(r.allowed(T0 + 3 * 60 + 3_600));
    // a new UTC day starts a new ration
    assert!(Decreases::reported(T0 - 60, 27, Some(T0 - 60)).allowed(T0));
    assert!(!Decreases::reported(T0 + 80_000, 27, Some(T0)).allowed(T0 + 86_399));
}

#[test]
fn an_hourly_top_of_the_hour_spike_costs_one_decrease_an_hour_and_is_never_short() {
    // GIVEN a day with 288 fires/s and 1,000 at each top of the hour (the canned 10M load)
    let day: Vec<(f64, f64)> =
        (0..1_440).map(|m| if m % 60 == 0 { (1_000.0, 100.0) } else { (288.0, 29.0) }).collect();
    // WHEN the plan runs every minute
    let s = simulate(&day, &Settings::default());
    // THEN it spends at most 27 decreases, never falls short, and costs well under the peak
    assert!(s.decreases <= DECREASES_PER_DAY, "{s:?}");
    assert_eq!(s.short_minutes, 0, "{s:?}");
    assert!(s.mean_wcu < 0.6 * s.peak_wcu as f64, "{s:?}");
}

fn demand() -> impl Strategy<Value = Vec<(f64, f64)>> {
    proptest::collection::vec((0.0..5_000.0_f64, 0.0..5_000.0_f64), 1..200)
}

proptest! {
    #[test]
    fn the_plan_never_provisions_less_than_the_lead_window_needs(
        d in demand(), cw in 1u64..10_000, cr in 1u64..10_000, today in 0u32..30, ago in 0i64..7_200,
        now_off in 0i64..3_600,
    ) {
        let now = T0 + now_off;
        let first = now / 60;
        let forecast: Vec<MinuteDemand> = d.iter().enumerate()
            .map(|(i, (w, r))| MinuteDemand { minute: first + i as i64, wcu: *w, rcu: *r }).collect();
        let s = Settings::default();
        let hist = Decreases::reported(now, today, Some(now - ago));
        let p = plan(now, tp(cw, cr), &forecast, &hist, &s);
        for x in forecast.iter().take(s.lead_minutes as usize + 1) {
            prop_assert!(p.target.wcu as f64 >= (x.wcu * s.headroom).min(s.max_units as f64).floor());
            prop_assert!(p.target.rcu as f64 >= (x.rcu * s.headroom).min(s.max_units as f64).floor());
        }
        prop_assert!(p.target.wcu >= 1 && p.target.rcu >= 1);
        prop_assert!(p.target.wcu <= s.max_units.max(cw) && p.target.rcu <= s.max_units.max(cr));
        if p.target.wcu < cw || p.target.rcu < cr {
            prop_assert!(p.decrease && hist.allowed(now));
        }
    }

    #[test]
    fn a_day_of_plans_stays_within_the_decrease_ration_and_is_never_short(
        d in proptest::collection::vec((0.0..30_000.0_f64, 0.0..30_000.0_f64), 1_440),
    ) {
        let s = simulate(&d, &Settings::default());
        prop_assert!(s.decreases <= DECREASES_PER_DAY);
        prop_assert_eq!(s.short_minutes, 0);
    }
}
