//! `GET /v1/pools`: the pools' queues as SQS counts them, for operators only.

use crate::common::{at, unthrottled, Harness};
use serde_json::json;
use sundial_core::control::ControlSettings;

#[tokio::test]
async fn operators_read_each_pools_depth_and_saturation_and_others_are_refused() {
    // GIVEN two pools, one of known capacity, an operator tenant, and two fires of acme's sent
    // to the default pool by trigger-now
    let settings = ControlSettings { operator_tenants: vec!["ops".into()], ..ControlSettings::default() };
    let (pools, now) = (&["default", "batch"][..], at("2026-12-01T09:00:00Z"));
    let h = Harness::with_config("pools-api", pools, now, settings, unthrottled(), |cfg| {
        cfg.pool_capacity = [("default".to_string(), 40)].into();
    })
    .await;
    for id in ["a", "b"] {
        let job = json!({
            "jobId": id,
            "schedule": {"expression": "rate(1 hour)", "timezone": "UTC"},
            "target": {"type": "http", "url": "https://hooks.example.com/run"},
        });
        assert_eq!(h.post("acme", "/v1/jobs", &job).await.status, 201);
        let a = h.post("acme", &format!("/v1/jobs/{id}/trigger"), &json!({})).await;
        assert_eq!(a.status, 202, "{}", a.body);
    }
    // WHEN a tenant that is not an operator asks THEN 403, naming who may
    let a = h.get("acme", "/v1/pools").await;
    assert_eq!((a.status, a.body["error"]["code"].as_str()), (403, Some("forbidden")), "{}", a.body);
    // WHEN the operator asks THEN every pool, in order, with SQS's counts of each lane
    let a = h.get("ops", "/v1/pools").await;
    assert_eq!(a.status, 200, "{}", a.body);
    let pools = a.body["pools"].as_array().cloned().unwrap_or_default();
    let names: Vec<_> = pools.iter().map(|p| p["pool"].as_str().unwrap_or_default()).collect();
    assert_eq!(names, ["default", "batch"]);
    let d = &pools[0];
    let waiting = d["main"]["visible"].as_u64().unwrap_or(0) + d["main"]["delayed"].as_u64().unwrap_or(0);
    assert_eq!(waiting, 2, "the two triggered fires wait in the main lane: {d}");
    assert_eq!((&d["capacity"], &d["saturation"]), (&json!(40), &json!(0.0)), "nothing in flight: {d}");
    assert_eq!(d["deadLetters"], json!({"visible": 0, "inFlight": 0, "delayed": 0}));
    // AND a pool without a known capacity has no saturation
    assert!(pools[1].get("capacity").is_none() && pools[1].get("saturation").is_none(), "{}", pools[1]);
    assert!(a.body["observedAt"].as_str().is_some_and(|t| t.starts_with("2026-12-01T09:00")), "{}", a.body);
    h.env.cleanup().await;
}
