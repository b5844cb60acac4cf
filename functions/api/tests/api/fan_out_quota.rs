//! Security review 2026-12 M1: an execution created through the API counts every execution it
//! makes. A trigger-now of a job with 100 shards made 101 executions and was charged one token;
//! a backfill of 1,000 such fires made 101,000 and was charged 1,000.

use crate::common::{at, job_body, Harness};
use serde_json::json;
use sundial_core::control::{ControlSettings, Quotas};

fn allowing(executions_per_minute: u32) -> ControlSettings {
    ControlSettings {
        quotas: Quotas {
            max_jobs: 10,
            min_interval_secs: 60,
            api_executions_per_minute: executions_per_minute,
            triggers_per_minute: 100,
            ..Quotas::default()
        },
        ..ControlSettings::default()
    }
}

#[tokio::test]
async fn trigger_now_and_backfill_are_charged_for_every_child_they_make() {
    // GIVEN a tenant allowed 10 API-created executions a minute, and a job with 4 shards (a
    // fire makes 5 executions: the parent and 4 children)
    let h = Harness::with_settings("quota-fan", &["default"], at("2026-12-01T10:00:30Z"), allowing(10)).await;
    let mut body = job_body("sharded", "0 0 * * * *");
    body["shards"] = json!(4);
    let a = h.post("acme", "/v1/jobs", &body).await;
    assert_eq!(a.status, 201, "{}", a.body);
    // WHEN it triggers the job twice (10 executions), THEN both are accepted
    // (a second apart: one trigger per instant)
    for s in ["2026-12-01T10:00:31Z", "2026-12-01T10:00:32Z"] {
        h.clock.set(at(s));
        let t = h.post("acme", "/v1/jobs/sharded/trigger", &json!({})).await;
        assert!((200..300).contains(&t.status), "{}", t.body);
    }
    // AND a third trigger (15) is refused 429 rate_limited, with Retry-After
    h.clock.set(at("2026-12-01T10:00:33Z"));
    let t = h.post("acme", "/v1/jobs/sharded/trigger", &json!({})).await;
    assert_eq!((t.status, t.body["error"]["code"].as_str()), (429, Some("rate_limited")), "{}", t.body);
    assert!(t.header("retry-after").is_some(), "{:?}", t.headers);
    // WHEN the next minute comes, a backfill of 3 fires (15 executions) is refused as a whole,
    // naming the range
    h.clock.set(at("2026-12-01T10:01:30Z"));
    let b = h
        .post(
            "acme",
            "/v1/jobs/sharded/backfill",
            &json!({"from": "2026-12-01T07:00:00Z", "to": "2026-12-01T09:00:00Z"}),
        )
        .await;
    assert_eq!((b.status, b.body["error"]["code"].as_str()), (429, Some("rate_limited")), "{}", b.body);
    assert_eq!(b.error_field(), Some("to"), "{}", b.body);
    // AND a backfill of 2 fires (10 executions) is accepted
    let b = h
        .post(
            "acme",
            "/v1/jobs/sharded/backfill",
            &json!({"from": "2026-12-01T08:00:00Z", "to": "2026-12-01T09:00:00Z"}),
        )
        .await;
    assert!((200..300).contains(&b.status), "{}", b.body);
}
