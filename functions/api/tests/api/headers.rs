//! Issue 28, L5: every JSON answer of the API carries `X-Content-Type-Options: nosniff` and
//! `Cache-Control: no-store` (a tenant's jobs and errors must not be sniffed as another type or
//! kept by a shared cache), successes and errors alike.

use crate::common::{at, event, Harness};

#[tokio::test]
async fn every_json_answer_is_nosniff_and_no_store() {
    let h = Harness::new("headers", at("2026-12-01T10:00:00Z")).await;
    let answers = [
        ("a list", h.get("acme", "/v1/jobs").await),
        ("a 404", h.get("acme", "/v1/jobs/nope").await),
        ("a 400", h.get("acme", "/v1/jobs?limit=0").await),
        ("a 401", h.send(event("GET", "/v1/jobs", None, &[], None)).await),
        ("an unknown route", h.get("acme", "/v1/nothing").await),
        ("the OpenAPI document", h.send(event("GET", "/openapi.json", None, &[], None)).await),
        ("a create", h.post("acme", "/v1/jobs", &crate::common::job_body("j", "0 0 12 * * *")).await),
    ];
    for (what, a) in answers {
        assert_eq!(a.header("x-content-type-options"), Some("nosniff"), "{what}: {:?}", a.headers);
        assert_eq!(a.header("cache-control"), Some("no-store"), "{what}: {:?}", a.headers);
    }
    h.env.cleanup().await;
}
