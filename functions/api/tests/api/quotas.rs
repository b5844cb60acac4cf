//! Issue 15, "no limits per tenant": quotas answer 429 with `Retry-After`, refuse without
//! writing, and free up (a delete, the next minute). Before the fix every request below was
//! accepted: one tenant could create jobs, trigger and backfill without bound.

use crate::common::{at, job_body, Harness};
use serde_json::json;
use sundial_core::control::{ControlSettings, Quotas};

fn tight() -> ControlSettings {
    ControlSettings {
        quotas: Quotas {
            max_jobs: 2,
            min_interval_secs: 60,
            api_executions_per_minute: 5,
            triggers_per_minute: 2,
            ..Quotas::default()
        },
        ..ControlSettings::default()
    }
}

#[tokio::test]
async fn the_job_quota_is_a_429_until_a_job_is_deleted() {
    // GIVEN a tenant allowed two jobs
    let h = Harness::with_settings("quota-jobs", &["default"], at("2026-12-01T10:00:00Z"), tight()).await;
    h.create("acme", "a", "0 30 2 * * *").await;
    h.create("acme", "b", "0 30 2 * * *").await;
    // WHEN it creates a third
    let a = h.post("acme", "/v1/jobs", &job_body("c", "0 30 2 * * *")).await;
    // THEN 429 quota_exceeded with Retry-After, and no job c
    assert_eq!((a.status, a.body["error"]["code"].as_str()), (429, Some("quota_exceeded")), "{}", a.body);
    assert!(a.header("retry-after").is_some_and(|v| v.parse::<u32>().is_ok()), "{:?}", a.headers);
    assert_eq!(h.get("acme", "/v1/jobs/c").await.status, 404);
    // AND another tenant is not affected
    h.create("other", "c", "0 30 2 * * *").await;
    // AND a create refused for another reason (id taken) does not use up the quota
    let dup = h.post("acme", "/v1/jobs", &job_body("a", "0 30 2 * * *")).await;
    assert!(dup.status == 409 || dup.status == 429, "{}", dup.body);
    // WHEN a job is deleted, THEN the third create succeeds
    let del = h.call("acme", "DELETE", "/v1/jobs/b", None, &[]).await;
    assert_eq!(del.status, 200, "{}", del.body);
    h.create("acme", "c", "0 30 2 * * *").await;
}

#[tokio::test]
async fn trigger_now_and_backfill_are_rate_limited_per_minute() {
    // GIVEN a tenant allowed 2 trigger-now calls and 5 API-created executions a minute
    let h = Harness::with_settings("quota-rates", &["default"], at("2026-12-01T10:00:10Z"), tight()).await;
    h.create("acme", "hourly", "0 0 * * * *").await;
    let before = h.get("acme", "/v1/jobs/hourly/executions").await.body;
    // WHEN it backfills six fires at once
    let b = h
        .post(
            "acme",
            "/v1/jobs/hourly/backfill",
            &json!({"from": "2026-12-01T04:00:00Z", "to": "2026-12-01T09:00:00Z"}),
        )
        .await;
    // THEN 429 on `to` (split the range), nothing created
    assert_eq!((b.status, b.error_field()), (429, Some("to")), "{}", b.body);
    assert_eq!(h.get("acme", "/v1/jobs/hourly/executions").await.body, before);
    // WHEN it triggers twice, then a third time in the same minute
    for _ in 0..2 {
        let t = h.post("acme", "/v1/jobs/hourly/trigger", &json!({})).await;
        assert_eq!(t.status, 202, "{}", t.body);
        h.clock.advance(chrono::Duration::seconds(1));
    }
    let t = h.post("acme", "/v1/jobs/hourly/trigger", &json!({})).await;
    // THEN 429 rate_limited, Retry-After = the seconds to the next minute (10:00:12 → 48)
    assert_eq!((t.status, t.body["error"]["code"].as_str()), (429, Some("rate_limited")), "{}", t.body);
    assert_eq!(t.header("retry-after"), Some("48"));
    // AND the next minute it may trigger again; after 1 + 2 of the 5 executions, 3 more are too many
    h.clock.advance(chrono::Duration::seconds(48));
    let t = h.post("acme", "/v1/jobs/hourly/trigger", &json!({})).await;
    assert_eq!(t.status, 202, "{}", t.body);
    let b = h
        .post(
            "acme",
            "/v1/jobs/hourly/backfill",
            &json!({"from": "2026-12-01T08:00:00Z", "to": "2026-12-01T09:00:00Z"}),
        )
        .await;
    assert_eq!(b.status, 202, "{}", b.body);
    let b = h
        .post(
            "acme",
            "/v1/jobs/hourly/backfill",
            &json!({"from": "2026-12-01T05:00:00Z", "to": "2026-12-01T07:00:00Z"}),
        )
        .await;
    assert_eq!(b.status, 429, "{}", b.body);
}

#[tokio::test]
async fn schedules_firing_too_often_and_huge_fire_all_caps_are_refused() {
    // GIVEN a deployment with a 60 s minimum interval
    let h = Harness::with_settings("quota-interval", &["default"], at("2026-12-01T10:00:00Z"), tight()).await;
    // WHEN jobs fire every 10 s, or at 02:30:00 and 02:30:30, or carry fireAll cap 2^32-1
    let mut cap = job_body("cap", "0 * * * * *");
    cap["misfire"] = json!({"policy": "fireAll", "cap": 4_294_967_295u64});
    let cases = [
        (job_body("fast", "rate(10 seconds)"), "schedule.expression"),
        (job_body("pair", "0,30 30 2 * * *"), "schedule.expression"),
        (cap, "misfire.cap"),
    ];
    for (body, field) in cases {
        let a = h.post("acme", "/v1/jobs", &body).await;
        // THEN each is a 400 naming the field
        assert_eq!((a.status, a.error_field()), (400, Some(field)), "{body}: {}", a.body);
    }
    // AND a minutely job is fine
    h.create("acme", "minutely", "0 * * * * *").await;
}
