//! The markdown report and the number formats.

use super::*;
use crate::numbers::{money, num, pct};

#[test]
fn markdown_has_every_scenario_and_the_violations() {
    let reports = vec![run(&Scenario::eventbridge_default()), run(&Scenario::billion()), fitted_billion().1];
    let md = render_markdown(&reports);
    for r in &reports {
        assert!(md.contains(&r.scenario.name));
    }
    assert!(md.starts_with("| | EventBridge default | 1 billion | 1 billion |\n|---|---:|---:|---:|\n"));
    assert!(md.contains("- EventBridge default: none"));
    assert!(md.contains("tenant gate item T#{top}#RUN: 20,000 WCU/s > 1,000"));
    assert!(md.contains("| schedules | 10,000,000 | 1,000,000,000 | 1,000,000,000 |"));
    let columns = md.lines().next().map_or(0, |l| l.matches('|').count());
    for line in md.lines().take_while(|l| l.starts_with('|')) {
        assert_eq!(line.matches('|').count(), columns, "{line}");
    }
}

#[test]
fn number_formatting() {
    assert_eq!(num(2_400.0), "2,400");
    assert_eq!(num(1_000_000_000.0), "1,000,000,000");
    assert_eq!(num(187.5), "188");
    assert_eq!(num(58.59), "58.6");
    assert_eq!(num(1.875), "1.88");
    assert_eq!(num(16.0), "16");
    assert_eq!(num(0.0), "0");
    assert_eq!(money(1_234.5), "$1,235");
    assert_eq!(money(3.127), "$3.13");
    assert_eq!(pct(13.5), "1,350%");
    assert_eq!(pct(0.125), "13%");
    assert_eq!(pct(0.001), "0.1%");
    assert_eq!(pct(0.0001), "<0.1%");
    assert_eq!(pct(0.0), "0.0%");
}
