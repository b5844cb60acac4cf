//! The router's own answers through the Lambda adapter: an unknown path, a known path with another
//! method (405 with `Allow`), a trailing slash, and the request id on every answer.

use crate::common::{at, Harness};

#[tokio::test]
async fn unknown_routes_and_methods_get_the_api_s_errors_and_every_answer_a_request_id() {
    // GIVEN an API
    let h = Harness::new("routing", at("2026-12-01T10:00:00Z")).await;
    // WHEN a known path is called with a method it does not serve
    let a = h.call("acme", "PATCH", "/v1/jobs/nightly", None, &[]).await;
    // THEN 405 `method_not_allowed`, with the methods it serves in Allow
    assert_eq!(a.status, 405, "{}", a.body);
    assert_eq!(a.body["error"]["code"], "method_not_allowed");
    let allow = a.header("allow").unwrap_or_default().to_string();
    for m in ["GET", "PUT", "DELETE"] {
        assert!(allow.contains(m), "Allow: {allow}");
    }
    // AND an unknown path is 404 `not_found`
    let b = h.get("acme", "/v2/jobs").await;
    assert_eq!((b.status, b.body["error"]["code"].as_str()), (404, Some("not_found")), "{}", b.body);
    // AND a trailing slash is the same route
    let c = h.get("acme", "/v1/jobs/").await;
    assert_eq!(c.status, 200, "{}", c.body);
    // AND every answer carries a request id: the caller's when sane, else a new one
    assert!(b.header("x-request-id").is_some_and(|v| !v.is_empty()));
    let d = h.call("acme", "GET", "/v1/jobs", None, &[("x-request-id", "trace-42")]).await;
    assert_eq!(d.header("x-request-id"), Some("trace-42"));
    let e = h.call("acme", "GET", "/v1/jobs", None, &[("x-request-id", "bad id\twith tab")]).await;
    assert_ne!(e.header("x-request-id"), Some("bad id\twith tab"));
}
