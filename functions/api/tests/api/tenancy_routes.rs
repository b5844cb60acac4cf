//! Issue 28, L6: the tenancy tests cover every operation of `openapi.json`. [`COVERAGE`] maps
//! each (method, path) of the document to the test that shows it never reaches another
//! tenant's data; [`every_operation_of_the_document_has_a_tenancy_case`] fails when the
//! document gains (or loses) an operation the table does not name, so a new route cannot ship
//! without one. Also here: `Idempotency-Key` reuse across tenants, the tz report, and the
//! range check of `upcoming?from=`.

use crate::common::{at, job_body, Harness};
use serde_json::{json, Value};
use std::collections::BTreeSet;

/// The 404 matrix: another tenant's id answers 404, byte for byte as an id that never existed.
const MATRIX: &str = "tenancy::no_route_reaches_another_tenants_jobs_or_executions";
/// Lists of the caller's own items only (same test, its list section).
const LISTS: &str = "tenancy::no_route_reaches_another_tenants_jobs_or_executions (lists, cursors)";
/// Public or caller-independent: no tenant data at all.
const PUBLIC: &str = "tenancy::requests_without_a_tenant_are_unauthorized (public document)";
/// Calendars are per tenant.
const CALENDARS: &str = "calendars::another_tenant_cannot_see_or_use_a_calendar";
/// Resource limits are platform-wide, written by operators only; holders only to operators.
const RESOURCES: &str =
    "resources::only_operators_set_limits_and_every_tenant_reads_them, resources::a_tenant_holds_at_most_its_share_of_a_limit_and_only_operators_see_holding";

/// Every operation of openapi.json and the test that covers its tenancy.
const COVERAGE: &[(&str, &str, &str)] = &[
    ("GET", "/openapi.json", PUBLIC),
    (
        "POST",
        "/v1/jobs",
        "tenancy_routes::an_idempotency_key_is_per_tenant (and ids per tenant: the matrix's same-id jobs)",
    ),
    ("GET", "/v1/jobs", LISTS),
    ("POST", "/v1/preview", CALENDARS),
    ("GET", "/v1/jobs/{jobId}", MATRIX),
    ("PUT", "/v1/jobs/{jobId}", MATRIX),
    ("DELETE", "/v1/jobs/{jobId}", MATRIX),
    ("POST", "/v1/jobs/{jobId}/pause", MATRIX),
    ("POST", "/v1/jobs/{jobId}/resume", MATRIX),
    ("POST", "/v1/jobs/{jobId}/trigger", MATRIX),
    ("POST", "/v1/jobs/{jobId}/backfill", MATRIX),
    ("POST", "/v1/jobs/{jobId}/events", MATRIX),
    ("GET", "/v1/jobs/{jobId}/versions", MATRIX),
    ("GET", "/v1/jobs/{jobId}/dependencies", MATRIX),
    ("GET", "/v1/jobs/{jobId}/versions/{version}", MATRIX),
    ("GET", "/v1/jobs/{jobId}/upcoming", MATRIX),
    ("GET", "/v1/jobs/{jobId}/executions", MATRIX),
    ("GET", "/v1/executions", LISTS),
    ("GET", "/v1/executions/{executionId}", MATRIX),
    ("POST", "/v1/executions/{executionId}/cancel", MATRIX),
    ("GET", "/v1/executions/{executionId}/children", MATRIX),
    ("GET", "/v1/executions/{executionId}/logs", MATRIX),
    ("GET", "/v1/dlq", LISTS),
    (
        "POST",
        "/v1/dlq/replay",
        "tenancy::no_route_reaches_another_tenants_jobs_or_executions (batch replay: not_found)",
    ),
    ("POST", "/v1/dlq/{executionId}/replay", MATRIX),
    ("GET", "/v1/operations", LISTS),
    ("GET", "/v1/tz-report", "tenancy_routes::the_tz_report_lists_the_callers_jobs_only"),
    ("GET", "/v1/calendars", CALENDARS),
    ("GET", "/v1/calendars/{calendarId}", CALENDARS),
    ("PUT", "/v1/calendars/{calendarId}", CALENDARS),
    ("DELETE", "/v1/calendars/{calendarId}", CALENDARS),
    ("GET", "/v1/calendars/{calendarId}/versions/{version}", CALENDARS),
    ("GET", "/v1/resources", RESOURCES),
    ("GET", "/v1/resources/{resource}", RESOURCES),
    ("PUT", "/v1/resources/{resource}", RESOURCES),
    ("DELETE", "/v1/resources/{resource}", RESOURCES),
    // Every tenant's fires are in a pool's queue: operators only, 403 for a tenant.
    ("GET", "/v1/pools", "pools::operators_read_each_pools_depth_and_saturation_and_others_are_refused"),
];

#[test]
fn every_operation_of_the_document_has_a_tenancy_case() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("openapi.json");
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("openapi.json")).expect("JSON");
    let methods = ["get", "put", "post", "delete", "patch", "head", "options"];
    let in_doc: BTreeSet<(String, String)> = doc["paths"]
        .as_object()
        .expect("paths")
        .iter()
        .flat_map(|(p, item)| {
            item.as_object()
                .into_iter()
                .flat_map(|ops| ops.keys())
                .filter(|m| methods.contains(&m.as_str()))
                .map(move |m| (m.to_uppercase(), p.clone()))
        })
        .collect();
    let in_table: BTreeSet<(String, String)> =
        COVERAGE.iter().map(|(m, p, _)| (m.to_string(), p.to_string())).collect();
    assert_eq!(in_table.len(), COVERAGE.len(), "an operation is listed twice");
    let missing: Vec<_> = in_doc.difference(&in_table).collect();
    let stale: Vec<_> = in_table.difference(&in_doc).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "operations without a tenancy case: {missing:?}; cases of operations no longer in openapi.json: {stale:?}"
    );
}

#[tokio::test]
async fn an_idempotency_key_is_per_tenant() {
    // GIVEN acme created a job under Idempotency-Key k-1
    let h = Harness::new("idem-tenants", at("2026-12-01T10:00:00Z")).await;
    let post = |tenant: &'static str, body: Value| {
        let h = &h;
        async move {
            let headers = [("content-type", "application/json"), ("idempotency-key", "k-1")];
            h.call(tenant, "POST", "/v1/jobs", Some(&body.to_string()), &headers).await
        }
    };
    let a = post("acme", job_body("acme-job", "0 0 12 * * *")).await;
    assert_eq!(a.status, 201, "{}", a.body);
    // WHEN globex uses the same key with another body THEN it is globex's own request: created,
    // not a 422 (another request under the key) and not acme's answer replayed
    let g = post("globex", job_body("globex-job", "0 0 12 * * *")).await;
    assert_eq!((g.status, &g.body["job"]["jobId"]), (201, &json!("globex-job")), "{}", g.body);
    assert!(g.header("idempotent-replayed").is_none(), "{:?}", g.headers);
    // AND with acme's very body it creates globex's job of that id, not acme's answer
    let same = post("globex", job_body("acme-job", "0 0 12 * * *")).await;
    assert_eq!(same.status, 422, "globex reused its own key with another body: {}", same.body);
    let other_key = h
        .call(
            "globex",
            "POST",
            "/v1/jobs",
            Some(&job_body("acme-job", "0 0 12 * * *").to_string()),
            &[("content-type", "application/json"), ("idempotency-key", "k-2")],
        )
        .await;
    assert_eq!(other_key.status, 201, "{}", other_key.body);
    // AND acme's key still answers acme's first request, replayed
    let again = post("acme", job_body("acme-job", "0 0 12 * * *")).await;
    assert_eq!((again.status, again.header("idempotent-replayed")), (201, Some("true")), "{}", again.body);
    assert_eq!(h.get("acme", "/v1/jobs").await.body["items"].as_array().map(Vec::len), Some(1));
    h.env.cleanup().await;
}

#[tokio::test]
async fn the_tz_report_lists_the_callers_jobs_only() {
    let h = Harness::new("tz-tenants", at("2026-12-01T10:00:00Z")).await;
    let mut body = job_body("acme-secret", "0 30 1 * * *");
    body["schedule"]["timezone"] = json!("America/Mexico_City");
    assert_eq!(h.post("acme", "/v1/jobs", &body).await.status, 201);
    let a = h.get("globex", "/v1/tz-report?fires=5").await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert!(!a.body.to_string().contains("acme-secret"), "{}", a.body);
    assert!(h.get("acme", "/v1/tz-report?fires=5").await.status == 200);
    h.env.cleanup().await;
}

#[tokio::test]
async fn upcoming_from_out_of_range_is_refused_naming_from() {
    let h = Harness::new("upcoming-from", at("2026-12-01T10:00:00Z")).await;
    h.create("acme", "daily", "0 0 12 * * *").await;
    for from in ["1900-01-01T00:00:00Z", "2200-01-01T00:00:00Z"] {
        let a = h.get("acme", &format!("/v1/jobs/daily/upcoming?from={from}")).await;
        assert_eq!((a.status, a.error_field()), (400, Some("from")), "{from}: {}", a.body);
    }
    let ok = h.get("acme", "/v1/jobs/daily/upcoming?from=2026-12-02T00:00:00Z&days=2").await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    h.env.cleanup().await;
}
