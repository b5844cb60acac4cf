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
    assert_eq!(r.cheapest_mode(), BillingMode::Provisioned);
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
