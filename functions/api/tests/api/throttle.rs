//! Issue 28 (M1, per-tenant API throttling): each tenant has its own request budget per second
//! (`SUNDIAL_TENANT_API_RPS`), so one tenant exhausting it is answered 429 `throttled` with
//! `Retry-After` while every other tenant is served as before. Before the fix the only throttle
//! was the API stage's, shared by all tenants.

use crate::common::{at, Harness};
use sundial_api::ApiSettings;
use sundial_core::control::ControlSettings;

/// The settings the deployed function reads with `SUNDIAL_TENANT_API_RPS=3`.
fn three_a_second() -> ApiSettings {
    ApiSettings::from_lookup(|n| (n == "SUNDIAL_TENANT_API_RPS").then(|| "3".to_string()))
        .expect("valid settings")
}

#[tokio::test]
async fn one_tenant_past_its_budget_is_throttled_and_another_is_not() {
    let now = at("2026-12-01T10:00:00.250Z");
    let h = Harness::with_api_settings(
        "throttle",
        &["default"],
        now,
        ControlSettings::default(),
        three_a_second(),
    )
    .await;
    // GIVEN tenant A has made its three requests of this second
    for i in 0..3 {
        let a = h.get("acme", "/v1/jobs").await;
        assert_eq!(a.status, 200, "request {i}: {}", a.body);
    }
    // WHEN it makes a fourth, a read or a write
    let a = h.get("acme", "/v1/jobs").await;
    // THEN 429 throttled, with Retry-After
    assert_eq!((a.status, a.body["error"]["code"].as_str()), (429, Some("throttled")), "{}", a.body);
    assert_eq!(a.header("retry-after"), Some("1"));
    let w = h.post("acme", "/v1/jobs", &crate::common::job_body("late", "0 0 12 * * *")).await;
    assert_eq!(w.status, 429, "{}", w.body);
    assert_eq!(h.get("acme", "/v1/jobs/late").await.status, 429);
    // AND tenant B, in the same second, is served: A's budget is A's alone
    for i in 0..3 {
        let b = h.get("globex", "/v1/jobs").await;
        assert_eq!(b.status, 200, "globex request {i}: {}", b.body);
    }
    // AND the next second A is served again (and the refused write created nothing)
    h.clock.advance(chrono::Duration::seconds(1));
    let a = h.get("acme", "/v1/jobs/late").await;
    assert_eq!(a.status, 404, "{}", a.body);
    h.env.cleanup().await;
}

#[tokio::test]
async fn zero_turns_the_throttle_off() {
    let settings = ApiSettings::from_lookup(|n| (n == "SUNDIAL_TENANT_API_RPS").then(|| "0".to_string()))
        .expect("valid settings");
    let h = Harness::with_api_settings(
        "throttle-off",
        &["default"],
        at("2026-12-01T10:00:00Z"),
        ControlSettings::default(),
        settings,
    )
    .await;
    for i in 0..30 {
        let a = h.get("acme", "/v1/jobs").await;
        assert_eq!(a.status, 200, "request {i}: {}", a.body);
    }
    h.env.cleanup().await;
}
