//! Issue 28, H1 (detectable part) and L3: the API refuses events that cannot have come from
//! the stack's own API Gateway API (`SUNDIAL_API_ID` set, `requestContext.apiId` different or
//! missing: 403, saying nothing of which API is expected), and the IAM principal-tag tenancy
//! fails closed when the API's account is unknown (no `requestContext.accountId`) instead of
//! skipping the cross-account check. What is not detectable (a principal that may invoke the
//! function directly can copy the right `apiId`) is documented in docs/api.md.

use crate::common::{at, event, job_body, Harness};
use serde_json::{json, Value};
use sundial_api::ApiSettings;
use sundial_core::config::Tenancy;

const ACCOUNT: &str = "123456789012";

fn jwt(tenant: &str) -> Option<Value> {
    Some(json!({"jwt": {"claims": {"sub": format!("{tenant}-user"), "tenant": tenant}, "scopes": null}}))
}

#[tokio::test]
async fn with_the_api_id_set_an_event_from_another_api_or_none_is_refused() {
    // GIVEN the API deployed with its API Gateway API's id (the harness's events say `sundial`)
    let settings = ApiSettings::from_lookup(|n| match n {
        "SUNDIAL_API_ID" => Some("sundial".to_string()),
        "SUNDIAL_TENANT_API_RPS" => Some("0".to_string()),
        _ => None,
    })
    .expect("valid settings");
    let h = Harness::with_api_settings(
        "apiid",
        &["default"],
        at("2026-12-01T10:00:00Z"),
        Default::default(),
        settings,
    )
    .await;
    // WHEN an event of its own API arrives THEN it is served
    let ok = h.send(event("GET", "/v1/jobs", None, &[], jwt("acme"))).await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    // WHEN an event names another API, or none (a direct invoke with a hand-made context)
    let body = job_body("payroll", "0 0 * * * *").to_string();
    let ct = [("content-type", "application/json")];
    let mut other = event("POST", "/v1/jobs", Some(&body), &ct, jwt("acme"));
    other["requestContext"]["apiId"] = json!("a1b2c3d4e5");
    let mut none = event("POST", "/v1/jobs", Some(&body), &ct, jwt("acme"));
    none["requestContext"].as_object_mut().map(|c| c.remove("apiId"));
    for (what, ev) in [("another API", other), ("no API", none)] {
        let a = h.send(ev).await;
        // THEN 403 forbidden, naming no API id, and nothing is written
        assert_eq!((a.status, &a.body["error"]["code"]), (403, &json!("forbidden")), "{what}: {}", a.body);
        let msg = a.body["error"]["message"].as_str().unwrap_or_default();
        assert!(!msg.contains("sundial") && !msg.contains("a1b2c3d4e5"), "{what}: {msg}");
    }
    assert_eq!(h.get("acme", "/v1/jobs/payroll").await.status, 404);
    h.env.cleanup().await;
}

#[tokio::test]
async fn principal_tag_tenancy_refuses_a_context_without_the_api_account() {
    // GIVEN iam-principal-tag tenancy and a role of the API's account tagged acme
    let settings = ApiSettings { tenancy: Tenancy::IamPrincipalTag, ..crate::common::unthrottled() };
    let h = Harness::with_api_settings(
        "noacct",
        &["default"],
        at("2026-12-01T10:00:00Z"),
        Default::default(),
        settings,
    )
    .await;
    let iam = aws_sdk_iam::Client::new(&sundial_tests::sdk_config());
    let role = format!("{}-acme", h.env.cfg.queue_prefix.trim_end_matches('-'));
    let trust = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"lambda.amazonaws.com"},"Action":"sts:AssumeRole"}]}"#;
    iam.create_role()
        .role_name(&role)
        .assume_role_policy_document(trust)
        .tags(aws_sdk_iam::types::Tag::builder().key("sundial-tenant").value("acme").build().unwrap())
        .send()
        .await
        .unwrap_or_else(|e| panic!("create role: {}", aws_sdk_iam::error::DisplayErrorContext(e)));
    let caller = json!({"iam": {"accountId": ACCOUNT, "userArn": format!("arn:aws:sts::{ACCOUNT}:assumed-role/{role}/s"), "callerId": "AROAEXAMPLE"}});
    let served = h.send(event("GET", "/v1/jobs", None, &[], Some(caller.clone()))).await;
    assert_eq!(served.status, 200, "with the account: {}", served.body);
    // WHEN the context carries no account id for the API
    let mut ev = event("GET", "/v1/jobs", None, &[], Some(caller));
    ev["requestContext"].as_object_mut().map(|c| c.remove("accountId"));
    let a = h.send(ev).await;
    // THEN 403: the cross-account check cannot be made, so no tenant
    assert_eq!((a.status, &a.body["error"]["code"]), (403, &json!("forbidden")), "{}", a.body);
    let _ = iam.delete_role().role_name(&role).send().await;
    h.env.cleanup().await;
}
