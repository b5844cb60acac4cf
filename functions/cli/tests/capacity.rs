//! `sundial capacity` as a user runs it, on the costs the benches measured (`docs/bench/`).

use serde_json::Value;
use std::process::{Command, Output};

fn sundial(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sundial"))
        .arg("capacity")
        .args(args)
        .env("SUNDIAL_ROOT", concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .output()
        .expect("run sundial")
}

fn json(o: &Output) -> Value {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("--format json prints JSON")
}

#[test]
fn both_scales_fitted_leave_no_partition_over_its_limit() {
    // GIVEN the two canned scales (EventBridge Scheduler's default quota; a billion schedules at
    // 100,000 fires a second) and the measured costs, WHEN fitted
    let v = json(&sundial(&["--format", "json"]));
    let reports = v["reports"].as_array().expect("reports");
    assert_eq!(reports.len(), 2);
    for r in reports {
        let name = r["scenario"]["name"].as_str().unwrap_or_default().to_string();
        // THEN no hot partition of any kind passes its per-partition limit
        for p in r["partitions"].as_array().expect("partitions") {
            let (peak, limit) =
                (p["peakPerSec"].as_f64().unwrap_or(f64::MAX), p["limit"].as_f64().unwrap_or(0.0));
            assert!(peak <= limit, "{name}: {} at {peak} > {limit}", p["kind"]);
        }
        // AND a fire costs what the benches measured: 3 write units for the budget classes
        let costs = &v["costs"];
        for class in ["everyMinute", "daily"] {
            let w = &costs[class]["writes"];
            assert!((w["execution"].as_f64().unwrap_or(0.0) - 3.0).abs() < 0.01, "{class}: {w}");
            assert!(w.get("openIndex").is_none(), "{class} fires carry no open-index entry: {w}");
        }
    }
}

#[test]
fn the_markdown_names_both_scales_and_a_bad_scenario_names_the_flag() {
    let o = sundial(&[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("EventBridge default") && text.contains("1 billion"), "{text}");
    let bad = sundial(&["--scenario", "/nonexistent.json"]);
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("--scenario"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
}

#[test]
fn provisioned_under_the_plan_is_the_cheaper_mode_and_explain_prices_every_unit() {
    // GIVEN the two canned scales and the measured units WHEN modelled
    let v = json(&sundial(&["--format", "json"]));
    for r in v["reports"].as_array().expect("reports") {
        let name = r["scenario"]["name"].as_str().unwrap_or_default().to_string();
        let on_demand = r["cost"]["perMillionFires"].as_f64().unwrap_or(0.0);
        let provisioned = r["provisioned"]["perMillionFires"].as_f64().unwrap_or(f64::MAX);
        // THEN provisioned mode under the plan costs less per fire than on demand
        assert!(provisioned < on_demand, "{name}: {provisioned} ≥ {on_demand}");
        // AND never spends more decreases than DynamoDB allows
        for t in ["jobs", "executions"] {
            assert!(r["provisioned"][t]["decreasesPerDay"].as_u64().unwrap_or(99) <= 27, "{name} {t}");
        }
    }
    // AND at 10 million the plan is never short of the demand
    let ten = &v["reports"][0]["provisioned"];
    assert_eq!(ten["jobs"]["shortMinutes"].as_u64(), Some(0));
    assert_eq!(ten["executions"]["shortMinutes"].as_u64(), Some(0));
    // AND --explain prices the policies' units per fire
    let o = sundial(&["--scenario", "eventbridge-default", "--explain"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("WU tenantGate") && text.contains("WU slot") && text.contains("SQS requests"),
        "{text}"
    );
}

#[test]
fn the_recommended_configuration_costs_at_most_eventbridge_schedulers_dollar_at_both_scales() {
    // GIVEN the two canned scales, the measured units and every configuration the model prices
    let o = sundial(&[]);
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    let row = text.lines().find(|l| l.starts_with("| cheapest: mode")).unwrap_or_else(|| panic!("{text}"));
    let dollars: Vec<f64> = row
        .split('|')
        .filter_map(|cell| cell.rsplit_once('$').and_then(|(_, d)| d.trim().parse().ok()))
        .collect();
    // THEN the cheapest it recommends is at most $1.00 per million fires at 10 million and at
    // 1 billion (EventBridge Scheduler's price)
    assert_eq!(dollars.len(), 2, "{row}");
    assert!(dollars.iter().all(|d| *d <= 1.0), "{row}");
    // AND at 1 billion, where every tenant's fires write its gate on shared pools, it is tenant
    // cells that get there
    let v = json(&sundial(&["--format", "json"]));
    let billion = &v["reports"][1];
    assert!(billion["withCells"]["pools"].as_u64().unwrap_or(0) > 1, "{billion}");
    assert!(row.contains("tenant cells"), "{row}");
    // AND the 10 million scale needs no quota raised and no design change
    assert!(text.contains("- EventBridge default: none"), "{text}");
}
