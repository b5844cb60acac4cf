use super::*;

#[test]
fn provisioned_mode_bills_the_planned_units_by_the_hour_in_place_of_the_request_lines() {
    // GIVEN the canned 10M scenario with the example costs
    let r = run(&Scenario::eventbridge_default());
    let p = &r.provisioned;
    // THEN the plan never falls short, stays within the decrease ration, and the bill swaps only
    // the DynamoDB request lines
    assert_eq!(p.jobs.short_minutes + p.executions.short_minutes, 0);
    assert!(p.jobs.decreases_per_day <= 27 && p.executions.decreases_per_day <= 27);
    let hours = SECONDS_PER_MONTH / 3_600.0;
    let wcu = p.jobs.mean_wcu + p.executions.mean_wcu;
    close(p.dynamo_writes, wcu * hours * 0.000_65);
    close(
        p.total,
        r.cost.total - r.cost.dynamo_writes - r.cost.dynamo_reads + p.dynamo_writes + p.dynamo_reads,
    );
    // AND the units bought cover the demand: utilisation is below 1 and above the 29 % at which
    // provisioned and on-demand prices meet
    assert!(p.write_utilisation < 1.0 && p.write_utilisation > 0.29, "{}", p.write_utilisation);
    assert!(p.total < r.cost.total);
    // AND with a reservation the 3-year term is the cheapest mode
    assert_eq!(r.cheapest_mode(), BillingMode::Reserved { years: 3 });
}

#[test]
fn a_reservation_covers_the_plans_base_in_blocks_of_100_and_the_rest_stays_provisioned() {
    // GIVEN the canned 10M scenario
    let r = run(&Scenario::eventbridge_default());
    let p = &r.provisioned;
    let prices = Prices::us_east_1();
    let hours = SECONDS_PER_MONTH / 3_600.0;
    let low_w = p.jobs.low_wcu + p.executions.low_wcu;
    let mean_w = p.jobs.mean_wcu + p.executions.mean_wcu;
    assert_eq!(p.reserved.len(), prices.reserved.len());
    for (term, price) in p.reserved.iter().zip(&prices.reserved) {
        // THEN the reserved units are the plan's low, rounded down to a block of 100
        assert_eq!(term.reserved_wcu % 100, 0);
        assert!(term.reserved_wcu <= low_w && low_w - term.reserved_wcu < 100, "{term:?} vs {low_w}");
        // AND the write bill is the reserved units at the term's rate plus the rest provisioned
        let want = (term.reserved_wcu as f64 * price.wcu_hour()
            + (mean_w - term.reserved_wcu as f64) * prices.dynamo_wcu_hour)
            * hours;
        close(term.dynamo_writes, want);
        // AND it is cheaper than the plan without a reservation, never more
        assert!(term.total <= p.total, "{term:?}");
    }
    // AND the advertised discounts hold: 1 year ~54 %, 3 years ~77 % below the provisioned rate
    let off = |t: &crate::ReservedPrice| 1.0 - t.wcu_hour() / prices.dynamo_wcu_hour;
    assert!((off(&prices.reserved[0]) - 0.54).abs() < 0.01, "{}", off(&prices.reserved[0]));
    assert!((off(&prices.reserved[1]) - 0.77).abs() < 0.01, "{}", off(&prices.reserved[1]));
}

#[test]
fn the_day_profile_keeps_the_scenarios_peak_and_mean() {
    let s = Scenario::eventbridge_default();
    let day = crate::provisioned::day_profile(&s);
    let mean = day.iter().sum::<f64>() / day.len() as f64;
    close(mean, s.mean_fires_per_sec);
    close(day.iter().cloned().fold(0.0, f64::max), s.peak_fires_per_sec);
}

#[test]
fn the_crossover_is_a_small_deployment() {
    let s = Scenario::eventbridge_default();
    let x = crossover_schedules(&s, &Costs::example(), &Limits::aws_default(), &Prices::us_east_1());
    let x = x.expect("provisioned is cheaper at some scale");
    assert!(x < s.schedules, "{x}");
}

#[test]
fn a_minute_pays_the_next_minutes_puts_and_its_own_fires_other_units() {
    use crate::provisioned::{table_day, FireUnits};
    // 3 WU a fire, the put (1) the minute before; 2 RU all in the fire's minute; a spike at 1
    let u = FireUnits { wcu: 3.0, rcu: 2.0, ahead_wcu: 1.0, ahead_rcu: 0.0 };
    let d = table_day(&[10.0, 100.0, 10.0], u, 0.5);
    // 0: 10 × 2 + 100 puts (+ 0.5 fixed); 1: 100 × 2 + 10 puts; 2: 10 × 2 + 10 (wraps to 0)
    assert_eq!(d, vec![(120.5, 20.0), (210.5, 200.0), (30.5, 20.0)]);
    // below what "the larger of the two minutes × every unit" asked: 300 in both 0 and 1
    assert!(d.iter().all(|(w, _)| *w < 300.0));
}

#[test]
fn the_bench_split_lowers_the_planned_peak_not_the_units_a_fire_costs() {
    let costs = Costs::example();
    let mut all_at_fire = costs.clone();
    for c in [&mut all_at_fire.every_minute, &mut all_at_fire.daily, &mut all_at_fire.bucket] {
        c.ahead_writes.clear();
        c.ahead_reads.clear();
    }
    // (10 million: one executions table, below its quota, so the peak is the plan's own)
    let s = Scenario::eventbridge_default();
    let (split, whole) = (
        model(&s, &costs, &Limits::aws_default(), &Prices::us_east_1()),
        model(&s, &all_at_fire, &Limits::aws_default(), &Prices::us_east_1()),
    );
    // the on-demand bill is the same units
    close(split.cost.total, whole.cost.total);
    // the plan's peak on each executions table is lower, and so is the provisioned bill
    assert!(split.provisioned.executions.peak_wcu < whole.provisioned.executions.peak_wcu);
    assert!(split.provisioned.total < whole.provisioned.total);
}

#[test]
fn tenant_cells_take_the_gate_off_every_fire_and_are_recommended_where_they_cost_less() {
    // GIVEN 1 billion, where every tenant's limit is below what the shared pools can run
    let (s, r) = fitted_billion();
    assert_eq!(s.gate_share(), 1.0);
    // THEN the report prices the same load with tenant cells: the stack's 40,000 split into
    // pools of the default limit (500) and one of the largest tenant's own (2,000)
    let cells = r.with_cells.clone().expect("an alternative with cells");
    assert_eq!(s.worker_capacity(), 40_000.0);
    assert_eq!(cells.pools, (40_000 - 2_000) / 500 + 1);
    // AND it writes no gate, so it costs less, and is the configuration recommended
    let with = model(
        &Scenario { tenant_cells: true, ..s.clone() },
        &Costs::example(),
        &Limits::aws_default(),
        &Prices::us_east_1(),
    );
    assert_eq!((with.scenario.gate_share(), with.per_fire.tenant_gate_writes), (0.0, 0.0));
    assert!(with.with_cells.is_none(), "nothing left to split");
    close(cells.per_million_fires, with.cheapest_per_million_fires());
    assert!(cells.per_million_fires < r.cheapest_per_million_fires());
    let rec = r.recommended();
    assert_eq!((rec.cell_pools, rec.per_million_fires), (Some(cells.pools), cells.per_million_fires));
    // AND where no gate is written (10 million: limit 500 ≥ the stack's 400) nothing is offered
    let ten = run(&Scenario::eventbridge_default());
    assert!(ten.with_cells.is_none() && ten.recommended().cell_pools.is_none());
}
