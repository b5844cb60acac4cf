//! Tenant isolation: every route refuses another tenant's jobs and executions with 404 (never
//! 403, so ids cannot be probed), lists never show them, and the owner's data is unchanged.

use crate::common::{at, event, job_body, Harness};
use serde_json::json;

/// (method, path, body, headers)
type Case<'a> = (&'a str, String, Option<String>, Vec<(&'a str, &'a str)>);

#[tokio::test]
async fn no_route_reaches_another_tenants_jobs_or_executions() {
    // GIVEN tenant acme with a job, a manual execution and an audit trail
    let h = Harness::new("tenancy", at("2026-12-01T10:00:05Z")).await;
    h.create("acme", "payroll", "0 */5 * * * *").await;
    let run = h.post("acme", "/v1/jobs/payroll/trigger", &json!({})).await;
    assert_eq!(run.status, 202, "{}", run.body);
    let exec_id = run.body["executionId"].as_str().unwrap().to_string();
    // AND tenant globex with a job of the same id (ids are per tenant)
    h.create("globex", "payroll", "0 0 * * * *").await;
    h.create("globex", "only-globex", "0 0 * * * *").await;

    // WHEN globex addresses acme's execution and a job only acme has, on every route
    let mut put = job_body("secret", "0 0 * * * *");
    put.as_object_mut().unwrap().remove("jobId");
    let put = put.to_string();
    let backfill = json!({"from": "2026-12-01T09:00:00Z", "to": "2026-12-01T10:00:00Z"}).to_string();
    h.create("acme", "secret", "0 0 * * * *").await;
    let json_ct = ("content-type", "application/json");
    let cases: Vec<Case> = vec![
        ("GET", "/v1/jobs/secret".into(), None, vec![]),
        ("PUT", "/v1/jobs/secret".into(), Some(put.clone()), vec![json_ct, ("if-match", "1")]),
        ("DELETE", "/v1/jobs/secret".into(), None, vec![]),
        ("POST", "/v1/jobs/secret/pause".into(), None, vec![]),
        ("POST", "/v1/jobs/secret/resume".into(), None, vec![]),
        ("POST", "/v1/jobs/secret/trigger".into(), None, vec![]),
        ("POST", "/v1/jobs/secret/backfill".into(), Some(backfill.clone()), vec![json_ct]),
        ("GET", "/v1/jobs/secret/versions/1".into(), None, vec![]),
        ("GET", "/v1/jobs/secret/executions".into(), None, vec![]),
        ("GET", format!("/v1/executions/{exec_id}"), None, vec![]),
        ("POST", format!("/v1/executions/{exec_id}/cancel"), None, vec![]),
        ("POST", format!("/v1/dlq/{exec_id}/replay"), None, vec![]),
    ];
    for (method, path, body, headers) in &cases {
        let a = h.call("globex", method, path, body.as_deref(), headers).await;
        // THEN each is 404 not_found, exactly as for an id that never existed
        assert_eq!(a.status, 404, "{method} {path}: {}", a.body);
        assert_eq!(a.body["error"]["code"], "not_found", "{method} {path}");
        let never = h
            .call(
                "globex",
                method,
                &path.replace("secret", "never-was").replace(&exec_id, "never-was@1"),
                body.as_deref(),
                headers,
            )
            .await;
        assert_eq!(
            (never.status, &never.body),
            (a.status, &a.body),
            "{method} {path}: indistinguishable from missing"
        );
    }
    // AND the batch replay reports acme's execution as not found for globex
    let a = h.post("globex", "/v1/dlq/replay", &json!({"executionIds": [exec_id]})).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.body["results"][0]["outcome"], "not_found");
    // AND globex's lists show only globex's items
    let jobs = h.get("globex", "/v1/jobs?includeDeleted=true").await;
    let ids: Vec<&str> =
        jobs.body["items"].as_array().unwrap().iter().map(|j| j["jobId"].as_str().unwrap()).collect();
    assert_eq!(ids, vec!["only-globex", "payroll"]);
    let globex_payroll = h.get("globex", "/v1/jobs/payroll").await;
    assert_eq!(
        globex_payroll.body["definition"]["schedule"]["expression"], "0 0 * * * *",
        "globex sees its own payroll"
    );
    for path in ["/v1/executions?status=CANCELED", "/v1/dlq", "/v1/operations"] {
        let a = h.get("globex", path).await;
        assert_eq!(a.status, 200, "{path}");
        let leaked = a.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i.to_string().contains("secret") || i.to_string().contains(&exec_id));
        assert!(!leaked, "{path}: {}", a.body);
    }
    // AND a cursor minted for acme pages through globex's own jobs only
    let acme_page = h.get("acme", "/v1/jobs?limit=1").await;
    let cursor = acme_page.body["nextCursor"].as_str().expect("acme has two jobs").to_string();
    let a = h.get("globex", &format!("/v1/jobs?limit=10&cursor={cursor}")).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert!(a.body["items"].as_array().unwrap().iter().all(|j| j["jobId"] != "secret"), "{}", a.body);

    // AND acme's job and execution are untouched by all of it
    let secret = h.get("acme", "/v1/jobs/secret").await;
    assert_eq!(
        (secret.status, &secret.body["version"], &secret.body["state"]),
        (200, &json!(1), &json!("ENABLED"))
    );
    let e = h.get("acme", &format!("/v1/executions/{exec_id}")).await;
    assert_eq!((e.status, &e.body["status"]), (200, &json!("READY")), "{}", e.body);
    h.env.cleanup().await;
}

#[tokio::test]
async fn requests_without_a_tenant_are_unauthorized() {
    // GIVEN an API
    let h = Harness::new("noauth", at("2026-12-01T10:00:00Z")).await;
    // WHEN a request carries no authorizer, a token without the tenant claim, or a bad tenant
    let cases = [
        None,
        Some(json!({"jwt": {"claims": {"sub": "mallory"}, "scopes": null}})),
        Some(json!({"jwt": {"claims": {"sub": "mallory", "tenant": "acme#J#x"}, "scopes": null}})),
    ];
    for auth in cases {
        let a = h.send(event("GET", "/v1/jobs", None, &[("x-sundial-tenant", "acme")], auth.clone())).await;
        // THEN 401, whatever the headers claim
        assert_eq!((a.status, &a.body["error"]["code"]), (401, &json!("unauthorized")), "{auth:?}");
    }
    // AND an IAM principal is a tenant by its account
    let iam = json!({"iam": {"accountId": "210987654321", "userArn": "arn:aws:iam::210987654321:user/ops", "callerId": "AIDA"}});
    let a = h.send(event("GET", "/v1/jobs", None, &[], Some(iam))).await;
    assert_eq!(a.status, 200, "{}", a.body);
    // AND the OpenAPI document is served without a tenant
    let a = h.send(event("GET", "/openapi.json", None, &[], None)).await;
    assert_eq!((a.status, a.body["openapi"].as_str().map(|v| v.starts_with('3'))), (200, Some(true)));
    h.env.cleanup().await;
}
