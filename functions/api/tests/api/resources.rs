//! Resource limits through the API: only operator tenants set them; every
//! tenant reads them (holder ids only for operators); a job's `resources` must name defined
//! limits, each once; the limit's range; PUT/GET/DELETE round trip.

use crate::common::{at, Harness};
use serde_json::{json, Value};
use sundial_core::control::ControlSettings;

async fn put(h: &Harness, tenant: &str, name: &str, body: &Value) -> crate::common::Answer {
    let headers = [("content-type", "application/json")];
    h.call(tenant, "PUT", &format!("/v1/resources/{name}"), Some(&body.to_string()), &headers).await
}

fn job(id: &str, resources: Value) -> Value {
    json!({
        "jobId": id,
        "schedule": {"expression": "rate(1 minute)", "timezone": "UTC"},
        "target": {"type": "http", "url": "https://hooks.example.com/run"},
        "resources": resources,
    })
}

async fn harness(label: &str) -> Harness {
    let settings = ControlSettings { operator_tenants: vec!["ops".into()], ..ControlSettings::default() };
    Harness::with_settings(label, &["default"], at("2026-12-01T09:00:00Z"), settings).await
}

#[tokio::test]
async fn only_operators_set_limits_and_every_tenant_reads_them() {
    let h = harness("res-api").await;
    // WHEN a tenant that is not an operator sets a limit THEN 403, and nothing is stored
    let a = put(&h, "acme", "legacy-db", &json!({"limit": 20})).await;
    assert_eq!((a.status, a.body["error"]["code"].as_str()), (403, Some("forbidden")), "{}", a.body);
    assert_eq!(h.get("acme", "/v1/resources/legacy-db").await.status, 404);
    // WHEN an operator does THEN 201 with version 1, then 200 with version 2
    let a = put(&h, "ops", "legacy-db", &json!({"limit": 20})).await;
    assert_eq!((a.status, &a.body["limit"], &a.body["version"]), (201, &json!(20), &json!(1)), "{}", a.body);
    assert_eq!(a.header("etag"), Some("\"1\""));
    let a = put(&h, "ops", "legacy-db", &json!({"limit": 3})).await;
    assert_eq!((a.status, &a.body["limit"], &a.body["version"]), (200, &json!(3), &json!(2)), "{}", a.body);
    // THEN every tenant reads it, without who set it; the operator sees that too
    let a = h.get("acme", "/v1/resources/legacy-db").await;
    assert_eq!((a.status, &a.body["limit"], &a.body["holding"]), (200, &json!(3), &json!(0)), "{}", a.body);
    assert!(a.body.get("updatedBy").is_none() && a.body.get("holders").is_none(), "{}", a.body);
    let a = h.get("ops", "/v1/resources/legacy-db").await;
    assert_eq!(
        (a.body["updatedBy"].as_str(), &a.body["holders"]),
        (Some("api:ops-user"), &json!([])),
        "{}",
        a.body
    );
    let a = h.get("beta", "/v1/resources").await;
    assert_eq!(a.body["items"].as_array().map(Vec::len), Some(1), "{}", a.body);
    assert_eq!(a.body["items"][0]["resource"], "legacy-db");
    // AND only an operator deletes it
    let a = h.call("acme", "DELETE", "/v1/resources/legacy-db", None, &[]).await;
    assert_eq!(a.status, 403, "{}", a.body);
    let a = h.call("ops", "DELETE", "/v1/resources/legacy-db", None, &[]).await;
    assert_eq!((a.status, &a.body["deleted"]), (200, &json!(true)), "{}", a.body);
    let a = h.call("ops", "DELETE", "/v1/resources/legacy-db", None, &[]).await;
    assert_eq!(a.status, 404, "{}", a.body);
    h.env.cleanup().await;
}

#[tokio::test]
async fn limits_and_job_resources_are_validated_naming_the_field() {
    let h = harness("res-valid").await;
    for (body, field) in [
        (json!({"limit": -1}), "limit"),
        (json!({"limit": 10_001}), "limit"),
        (json!({"limit": 2.5}), "limit"),
        (json!({"limit": "3"}), "limit"),
        (json!({}), "limit"),
        (json!({"limit": 3, "burst": 1}), "burst"),
    ] {
        let a = put(&h, "ops", "legacy-db", &body).await;
        assert_eq!((a.status, a.error_field()), (400, Some(field)), "{body}: {}", a.body);
    }
    let a = put(&h, "ops", "bad%20name", &json!({"limit": 1})).await;
    assert_eq!((a.status, a.error_field()), (400, Some("resource")), "{}", a.body);
    // 0 is a valid limit: it holds every execution that uses the resource
    assert_eq!(put(&h, "ops", "legacy-db", &json!({"limit": 0})).await.status, 201);
    assert_eq!(put(&h, "ops", "ledger", &json!({"limit": 5})).await.status, 201);

    // A job naming an undefined resource, one twice, a bad name, or too many: 400 on the entry
    for (resources, field) in [
        (json!(["legacy-db", "warehouse"]), "resources[1]"),
        (json!(["legacy-db", "ledger", "legacy-db"]), "resources[2]"),
        (json!(["legacy db"]), "resources[0]"),
        (json!(["a", "b", "c", "d", "e", "f", "g", "h", "i"]), "resources"),
        (json!("legacy-db"), "resources"),
    ] {
        let a = h.post("acme", "/v1/jobs", &job("uses", resources.clone())).await;
        assert_eq!((a.status, a.error_field()), (400, Some(field)), "{resources}: {}", a.body);
    }
    // AND defined ones are accepted and shown on the job; an edit is checked the same way
    let a = h.post("acme", "/v1/jobs", &job("uses", json!(["ledger", "legacy-db"]))).await;
    assert_eq!(a.status, 201, "{}", a.body);
    let j = h.get("acme", "/v1/jobs/uses").await;
    assert_eq!(j.body["definition"]["resources"], json!(["ledger", "legacy-db"]), "{}", j.body);
    let mut edit = job("uses", json!(["nope"]));
    edit.as_object_mut().map(|o| o.remove("jobId"));
    let a = h
        .call(
            "acme",
            "PUT",
            "/v1/jobs/uses",
            Some(&edit.to_string()),
            &[("content-type", "application/json"), ("if-match", "\"1\"")],
        )
        .await;
    assert_eq!((a.status, a.error_field()), (400, Some("resources[0]")), "{}", a.body);
    h.env.cleanup().await;
}
