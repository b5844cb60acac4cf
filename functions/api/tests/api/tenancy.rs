//! Tenant isolation: every route refuses another tenant's jobs and executions with 404 (never
//! 403, so ids cannot be probed), lists never show them, and the owner's data is unchanged.

use crate::common::{at, event, job_body, Harness};
use serde_json::{json, Value};
use sundial_api::auth::{Principal, TAG_TTL};
use sundial_api::ApiSettings;
use sundial_core::config::Tenancy;

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
        ("POST", "/v1/jobs/secret/events".into(), Some(r#"{"key": "f1"}"#.into()), vec![json_ct]),
        ("GET", "/v1/jobs/secret/versions".into(), None, vec![]),
        ("GET", "/v1/jobs/secret/dependencies".into(), None, vec![]),
        ("GET", "/v1/jobs/secret/versions/1".into(), None, vec![]),
        ("GET", "/v1/jobs/secret/upcoming".into(), None, vec![]),
        ("GET", "/v1/jobs/secret/upcoming?from=2026-12-02T00:00:00Z&days=2".into(), None, vec![]),
        ("GET", "/v1/jobs/secret/executions".into(), None, vec![]),
        ("GET", format!("/v1/executions/{exec_id}"), None, vec![]),
        ("GET", format!("/v1/executions/{exec_id}/children"), None, vec![]),
        ("GET", format!("/v1/executions/{exec_id}/children?limit=10"), None, vec![]),
        ("GET", format!("/v1/executions/{exec_id}/logs"), None, vec![]),
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
    // AND an IAM principal is no tenant in jwt tenancy (account_tenancy_only_when_asked_for)
    // AND the OpenAPI document is served without a tenant
    let a = h.send(event("GET", "/openapi.json", None, &[], None)).await;
    assert_eq!((a.status, a.body["openapi"].as_str().map(|v| v.starts_with('3'))), (200, Some(true)));
    h.env.cleanup().await;
}

/// An authorizer context of an IAM-signed request by `arn` of `account`.
fn iam_caller(arn: &str, account: &str) -> Value {
    json!({"iam": {"accountId": account, "userArn": arn, "callerId": "AROAEXAMPLE"}})
}

const ACCOUNT: &str = "123456789012";

async fn create_role(iam: &aws_sdk_iam::Client, name: &str, tenant: Option<&str>) {
    let trust = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"lambda.amazonaws.com"},"Action":"sts:AssumeRole"}]}"#;
    let mut req = iam.create_role().role_name(name).assume_role_policy_document(trust);
    if let Some(t) = tenant {
        req = req.tags(aws_sdk_iam::types::Tag::builder().key("sundial-tenant").value(t).build().unwrap());
    }
    req.send()
        .await
        .unwrap_or_else(|e| panic!("create role {name}: {}", aws_sdk_iam::error::DisplayErrorContext(e)));
}

#[tokio::test]
async fn iam_callers_get_the_tenant_tagged_on_their_role_or_user_and_nothing_else() {
    // GIVEN an API in iam-principal-tag tenancy, and on the (emulated) IAM: a role tagged acme,
    // an untagged role, and a user tagged globex
    let settings = ApiSettings { tenancy: Tenancy::IamPrincipalTag, ..crate::common::unthrottled() };
    let h = Harness::with_api_settings(
        "iamtag",
        &["default"],
        at("2026-12-01T10:00:00Z"),
        Default::default(),
        settings,
    )
    .await;
    let iam = aws_sdk_iam::Client::new(&sundial_tests::sdk_config());
    let p = h.env.cfg.queue_prefix.trim_end_matches('-').to_string();
    let (acme_role, untagged_role, globex_user) =
        (format!("{p}-acme"), format!("{p}-untagged"), format!("{p}-globex"));
    create_role(&iam, &acme_role, Some("acme")).await;
    create_role(&iam, &untagged_role, None).await;
    iam.create_user()
        .user_name(&globex_user)
        .path("/teams/")
        .tags(aws_sdk_iam::types::Tag::builder().key("sundial-tenant").value("globex").build().unwrap())
        .send()
        .await
        .unwrap_or_else(|e| panic!("create user: {}", aws_sdk_iam::error::DisplayErrorContext(e)));
    let acme = iam_caller(&format!("arn:aws:sts::{ACCOUNT}:assumed-role/{acme_role}/ci-build-7"), ACCOUNT);
    let globex = iam_caller(&format!("arn:aws:iam::{ACCOUNT}:user/teams/{globex_user}"), ACCOUNT);
    let json_ct = [("content-type", "application/json")];

    // WHEN the acme role's session creates a job
    let body = job_body("payroll", "0 0 * * * *").to_string();
    let a = h.send(event("POST", "/v1/jobs", Some(&body), &json_ct, Some(acme.clone()))).await;
    // THEN it is acme's: stored under acme, audited with the session ARN as principal
    assert_eq!(a.status, 201, "{}", a.body);
    let mine = h.send(event("GET", "/v1/jobs", None, &[], Some(acme.clone()))).await;
    assert_eq!(mine.body["items"][0]["jobId"], "payroll", "{}", mine.body);
    let acme_jwt = h.get("acme", "/v1/operations").await;
    assert_eq!(acme_jwt.status, 401, "a JWT is refused in IAM tenancy: {}", acme_jwt.body);
    // AND the globex user sees none of it
    let theirs = h.send(event("GET", "/v1/jobs", None, &[], Some(globex.clone()))).await;
    assert_eq!((theirs.status, &theirs.body["items"]), (200, &json!([])), "{}", theirs.body);
    let probe = h.send(event("GET", "/v1/jobs/payroll", None, &[], Some(globex))).await;
    assert_eq!(probe.status, 404, "{}", probe.body);

    // WHEN callers without a tenant tag try: an untagged role, another account's tagged role,
    // the account root, a federated user
    let refused = [
        iam_caller(&format!("arn:aws:sts::{ACCOUNT}:assumed-role/{untagged_role}/s"), ACCOUNT),
        iam_caller(&format!("arn:aws:sts::210987654321:assumed-role/{acme_role}/s"), "210987654321"),
        iam_caller(&format!("arn:aws:iam::{ACCOUNT}:root"), ACCOUNT),
        iam_caller(&format!("arn:aws:sts::{ACCOUNT}:federated-user/bob"), ACCOUNT),
    ];
    for who in refused {
        let a =
            h.send(event("GET", "/v1/jobs", None, &[("x-sundial-tenant", "acme")], Some(who.clone()))).await;
        // THEN 403, saying why, whatever the headers claim
        assert_eq!((a.status, &a.body["error"]["code"]), (403, &json!("forbidden")), "{who}: {}", a.body);
    }
    let a = h
        .send(event(
            "GET",
            "/v1/jobs",
            None,
            &[],
            Some(iam_caller(&format!("arn:aws:sts::{ACCOUNT}:assumed-role/{untagged_role}/s"), ACCOUNT)),
        ))
        .await;
    assert!(a.body["error"]["message"].as_str().unwrap().contains("has no sundial-tenant tag"), "{}", a.body);

    // AND a tag change is read again only after the cache's TTL
    let tags = h.api.principal_tags().expect("an IAM reader");
    let role = Principal::Role(untagged_role.clone());
    let t0 = std::time::Instant::now();
    assert_eq!(tags.tag(&role, "sundial-tenant", t0).await.unwrap(), None);
    iam.tag_role()
        .role_name(&untagged_role)
        .tags(aws_sdk_iam::types::Tag::builder().key("sundial-tenant").value("initech").build().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(
        tags.tag(&role, "sundial-tenant", t0 + std::time::Duration::from_secs(1)).await.unwrap(),
        None
    );
    assert_eq!(tags.tag(&role, "sundial-tenant", t0 + TAG_TTL).await.unwrap().as_deref(), Some("initech"));
    for name in [&acme_role, &untagged_role] {
        let _ = iam.delete_role().role_name(name).send().await;
    }
    let _ = iam.delete_user().user_name(&globex_user).send().await;
    h.env.cleanup().await;
}

#[tokio::test]
async fn account_tenancy_only_when_asked_for() {
    // GIVEN an IAM-signed request
    let iam = iam_caller("arn:aws:iam::210987654321:user/ops", "210987654321");
    // WHEN the API runs in the default (jwt) tenancy, THEN it is refused
    let h = Harness::new("acctdefault", at("2026-12-01T10:00:00Z")).await;
    let a = h.send(event("GET", "/v1/jobs", None, &[], Some(iam.clone()))).await;
    assert_eq!((a.status, &a.body["error"]["code"]), (401, &json!("unauthorized")), "{}", a.body);
    h.env.cleanup().await;
    // WHEN it runs in iam-account tenancy, THEN the account is the tenant
    let settings = ApiSettings { tenancy: Tenancy::IamAccount, ..crate::common::unthrottled() };
    let h = Harness::with_api_settings(
        "acct",
        &["default"],
        at("2026-12-01T10:00:00Z"),
        Default::default(),
        settings,
    )
    .await;
    let body = job_body("nightly", "0 0 * * * *").to_string();
    let a = h
        .send(event("POST", "/v1/jobs", Some(&body), &[("content-type", "application/json")], Some(iam)))
        .await;
    assert_eq!(a.status, 201, "{}", a.body);
    let jobs = h.get("210987654321", "/v1/jobs").await;
    assert_eq!(jobs.status, 401, "JWTs are refused in IAM tenancy");
    h.env.cleanup().await;
}
