//! Resource limits through the API: only operator tenants set them; every
//! tenant reads them and its share (holder count and ids only for operators); a job's `resources` must name defined
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
    // THEN every tenant reads it and its share, without who set it or how many hold it; the
    // operator sees those too
    let a = h.get("acme", "/v1/resources/legacy-db").await;
    assert_eq!((a.status, &a.body["limit"], &a.body["perTenant"]), (200, &json!(3), &json!(2)), "{}", a.body);
    assert!(
        a.body.get("updatedBy").is_none()
            && a.body.get("holders").is_none()
            && a.body.get("holding").is_none(),
        "{}",
        a.body
    );
    let a = h.get("ops", "/v1/resources/legacy-db").await;
    assert_eq!(
        (a.body["updatedBy"].as_str(), &a.body["holders"], &a.body["holding"]),
        (Some("api:ops-user"), &json!([]), &json!(0)),
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

/// Issue 28, M5: one tenant may hold at most its share of a platform-wide limit (`perTenant`,
/// default half the limit rounded up), so it cannot take every unit; and how many units are
/// held (other tenants' activity) only operators see.
#[tokio::test]
async fn a_tenant_holds_at_most_its_share_of_a_limit_and_only_operators_see_holding() {
    use sundial_core::execution::resource_limits::{Acquired, ResourceGates};
    let h = harness("res-share").await;
    let a = put(&h, "ops", "legacy-db", &json!({"limit": 4})).await;
    assert_eq!(a.status, 201, "{}", a.body);
    let gates = || {
        ResourceGates::new(
            h.env.clients.ddb.clone(),
            h.env.cfg.jobs_table.clone(),
            h.env.cfg.executions_table.clone(),
        )
    };
    let now_ms = chrono::Utc::now().timestamp_millis();
    let take = |id: String| {
        let g = gates();
        async move {
            let mut uses = Vec::new();
            g.acquire_all(&["legacy-db".into()], &id, now_ms + 600_000, 200, now_ms, &mut uses).await.unwrap()
        }
    };
    // GIVEN acme holding two units of legacy-db (limit 4: its default share is 2)
    for i in 0..2 {
        assert!(matches!(take(format!("acme:ledger@{i}")).await, Acquired::All(_)), "acme unit {i}");
    }
    // WHEN acme asks for a third THEN it waits, though two units are free
    assert!(
        matches!(take("acme:ledger@2".into()).await, Acquired::Wait { undefined: false, .. }),
        "acme took more than its share"
    );
    // AND another tenant still gets the rest
    for i in 0..2 {
        assert!(matches!(take(format!("beta:export@{i}")).await, Acquired::All(_)), "beta unit {i}");
    }
    // AND a tenant reads the limit and its share, but not how many units are held
    let a = h.get("acme", "/v1/resources/legacy-db").await;
    assert_eq!((a.status, &a.body["limit"], &a.body["perTenant"]), (200, &json!(4), &json!(2)), "{}", a.body);
    assert!(a.body.get("holding").is_none() && a.body.get("holders").is_none(), "{}", a.body);
    // AND an operator sees both
    let a = h.get("ops", "/v1/resources/legacy-db").await;
    assert_eq!(
        (&a.body["holding"], a.body["holders"].as_array().map(Vec::len)),
        (&json!(4), Some(4)),
        "{}",
        a.body
    );
    // WHEN the operator sets the share to 3 THEN acme's third unit waits only for a free one
    let a = put(&h, "ops", "legacy-db", &json!({"limit": 5, "perTenant": 3})).await;
    assert_eq!((a.status, &a.body["perTenant"]), (200, &json!(3)), "{}", a.body);
    assert!(matches!(take("acme:ledger@2".into()).await, Acquired::All(_)), "acme's third unit");
    assert!(matches!(take("acme:ledger@3".into()).await, Acquired::Wait { .. }), "acme's fourth unit");
    // AND a share above the limit (or 0) is refused, naming the field
    for bad in [json!({"limit": 5, "perTenant": 6}), json!({"limit": 5, "perTenant": 0})] {
        let a = put(&h, "ops", "legacy-db", &bad).await;
        assert_eq!((a.status, a.error_field()), (400, Some("perTenant")), "{bad}: {}", a.body);
    }
    h.env.cleanup().await;
}
