//! Security review 2026-12 M1: no per-tenant fire budget. One tenant's `rate(1 second)` job with
//! 100 shards, or a map-reduce job emitting 100,000 items a fire, was metered as one job. Now a
//! tenant's live jobs may make at most `executionsPerHour` executions an hour together, each
//! counted at its busiest hour (fires × executions per fire), charged at create and edit and
//! given back at delete.

use crate::common::{at, job_body, Harness};
use serde_json::json;
use sundial_core::control::{ControlSettings, Quotas};

fn budget(executions_per_hour: u32) -> ControlSettings {
    ControlSettings {
        quotas: Quotas { executions_per_hour, ..Quotas::default() },
        ..ControlSettings::default()
    }
}

#[tokio::test]
async fn a_tenants_jobs_share_one_hourly_execution_budget_counted_with_their_children() {
    // GIVEN a tenant allowed 200 executions an hour, with a job firing every minute (60)
    let h =
        Harness::with_settings("exec-budget", &["default"], at("2026-12-01T10:00:00Z"), budget(200)).await;
    h.create("acme", "a", "0 * * * * *").await;
    // WHEN it creates a job firing every minute with 2 shards (60 × 3 = 180: 240 in all)
    let mut sharded = job_body("b", "0 * * * * *");
    sharded["shards"] = json!(2);
    let refused = h.post("acme", "/v1/jobs", &sharded).await;
    // THEN 429 quota_exceeded naming the shards, and no job b
    assert_eq!(
        (refused.status, refused.body["error"]["code"].as_str()),
        (429, Some("quota_exceeded")),
        "{}",
        refused.body
    );
    assert_eq!(refused.error_field(), Some("shards"), "{}", refused.body);
    assert_eq!(h.get("acme", "/v1/jobs/b").await.status, 404);
    // AND a map-reduce job whose items alone exceed the budget is refused naming maxItems
    let mut mr = job_body("m", "0 0 * * * *");
    mr["target"] = json!({"type": "inProcess", "handler": "count"});
    mr["mapReduce"] = json!({"maxItems": 500});
    let refused = h.post("acme", "/v1/jobs", &mr).await;
    assert_eq!(
        (refused.status, refused.error_field()),
        (429, Some("mapReduce.maxItems")),
        "{}",
        refused.body
    );
    // AND another tenant has a budget of its own
    let other = h.post("other", "/v1/jobs", &sharded).await;
    assert_eq!(other.status, 201, "{}", other.body);
    // WHEN job a is deleted, THEN b fits (180)
    assert_eq!(h.call("acme", "DELETE", "/v1/jobs/a", None, &[]).await.status, 200);
    assert_eq!(h.post("acme", "/v1/jobs", &sharded).await.status, 201);
    // AND editing b to 3 shards (240) is refused and leaves b as it was
    let mut more = sharded.clone();
    more["shards"] = json!(3);
    more.as_object_mut().map(|o| o.remove("jobId"));
    let put = h
        .call(
            "acme",
            "PUT",
            "/v1/jobs/b",
            Some(&more.to_string()),
            &[("content-type", "application/json"), ("if-match", "1")],
        )
        .await;
    assert_eq!((put.status, put.error_field()), (429, Some("shards")), "{}", put.body);
    assert_eq!(h.get("acme", "/v1/jobs/b").await.body["version"], 1);
    // AND editing it down to 1 shard (120) gives 60 back: a job of 60 an hour then fits
    let mut fewer = sharded.clone();
    fewer["shards"] = json!(1);
    fewer.as_object_mut().map(|o| o.remove("jobId"));
    let put = h
        .call(
            "acme",
            "PUT",
            "/v1/jobs/b",
            Some(&fewer.to_string()),
            &[("content-type", "application/json"), ("if-match", "1")],
        )
        .await;
    assert_eq!(put.status, 200, "{}", put.body);
    h.create("acme", "c", "30 * * * * *").await;
}
