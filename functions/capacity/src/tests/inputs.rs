//! Costs and scenarios: JSON round trips, validation and the canned scenarios.

use super::*;

#[test]
fn costs_json_round_trip_and_validation() {
    let costs = Costs::example();
    let json = serde_json::to_string(&costs).expect("serialize");
    assert!(
        json.contains("\"everyMinute\"")
            && json.contains("\"daily\"")
            && json.contains("\"openIndex\"")
            && json.contains("sqsRequests")
    );
    assert_eq!(Costs::from_json(&json), Ok(costs));
    let unknown = json.replace("\"dueIndex\"", "\"dueIdx\"");
    assert!(Costs::from_json(&unknown).is_err_and(|e| e.contains("dueIdx")));
    let negative = json.replace("\"job\":1.0", "\"job\":-1.0");
    assert_ne!(negative, json);
    assert!(Costs::from_json(&negative).is_err());
    assert!(Costs::from_json("{").is_err());
}

#[test]
fn scenario_json_round_trip_and_validation() {
    for s in
        [Scenario::eventbridge_default(), Scenario::billion(), Scenario { spike_fires: Some(1e6), ..small() }]
    {
        let json = serde_json::to_string(&s).expect("serialize");
        assert_eq!(Scenario::from_json(&json), Ok(s));
    }
    let json = serde_json::to_string(&Scenario::billion()).expect("serialize");
    assert!(json.contains("\"peakFiresPerSec\"") && !json.contains("spikeFires"));
    let bad_mix = Scenario { class_mix: ClassMix { every_minute: 0.5, daily: 0.0, bucket: 0.6 }, ..small() };
    assert!(bad_mix.validate().is_err());
    let three = Scenario { class_mix: ClassMix { every_minute: 0.3, daily: 0.3, bucket: 0.3 }, ..small() };
    assert!(three.validate().is_err_and(|e| e.contains("sum to 1")));
    let negative =
        Scenario { class_mix: ClassMix { every_minute: 0.6, daily: -0.1, bucket: 0.5 }, ..small() };
    assert!(negative.validate().is_err_and(|e| e.contains("classMix.daily")));
    assert_eq!(Scenario::billion().class_mix, ClassMix { every_minute: 0.1, daily: 0.7, bucket: 0.2 });
    assert!(Scenario { shards: 0, ..small() }.validate().is_err());
    assert!(Scenario { mean_fires_per_sec: 61.0, ..small() }.validate().is_err());
    assert!(Scenario { tenants: 100, top_tenant_share: 0.001, ..small() }.validate().is_err());
    let report = run(&Scenario::billion());
    let back: Report = serde_json::from_str(&serde_json::to_string(&report).expect("json")).expect("parse");
    assert_eq!(back.violations(), report.violations());
}

#[test]
fn canned_scenarios_by_name() {
    assert_eq!(scenario_names(), &["eventbridge-default", "billion"]);
    assert_eq!(scenario_by_name("eventbridge-default"), Some(Scenario::eventbridge_default()));
    assert_eq!(scenario_by_name("billion"), Some(Scenario::billion()));
    assert_eq!(scenario_by_name("1 billion"), None);
    for name in scenario_names() {
        let s = scenario_by_name(name).expect("named scenario");
        assert_eq!(s.class_mix, ClassMix::typical());
        assert_eq!(s.validate(), Ok(()));
    }
}
