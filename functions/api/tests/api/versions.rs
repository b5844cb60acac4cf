//! `GET /v1/jobs/{jobId}/versions`: a job's versions, newest first, paged; the caller's only.

use crate::common::{at, job_body, Harness};
use serde_json::Value;

fn versions(v: &Value) -> Vec<u64> {
    v["items"].as_array().into_iter().flatten().filter_map(|j| j["version"].as_u64()).collect()
}

#[tokio::test]
async fn versions_are_listed_newest_first_one_page_at_a_time() {
    // GIVEN a job edited twice (versions 1, 2, 3), with executions in its partition too
    let h = Harness::new("versions", at("2026-12-01T10:00:05Z")).await;
    h.create("acme", "report", "0 0 6 * * *").await;
    for (v, expr) in [(1, "0 0 7 * * *"), (2, "0 0 8 * * *")] {
        let body = job_body("report", expr).to_string();
        let m = v.to_string();
        let a = h
            .call(
                "acme",
                "PUT",
                "/v1/jobs/report",
                Some(&body),
                &[("content-type", "application/json"), ("if-match", &m)],
            )
            .await;
        assert_eq!(a.status, 200, "{}", a.body);
    }
    let t = h.post("acme", "/v1/jobs/report/trigger", &serde_json::json!({})).await;
    assert!(t.status < 300, "{}", t.body);
    // WHEN the versions are listed two at a time
    let p1 = h.get("acme", "/v1/jobs/report/versions?limit=2").await;
    assert_eq!(p1.status, 200, "{}", p1.body);
    // THEN newest first, each the immutable definition of its version, then the rest
    assert_eq!(versions(&p1.body), [3, 2]);
    assert_eq!(p1.body["items"][1]["definition"]["schedule"]["expression"], "0 0 7 * * *");
    let cursor = p1.body["nextCursor"].as_str().unwrap_or_default().to_string();
    assert!(!cursor.is_empty(), "{}", p1.body);
    let p2 = h.get("acme", &format!("/v1/jobs/report/versions?limit=2&cursor={cursor}")).await;
    assert_eq!(p2.status, 200, "{}", p2.body);
    assert_eq!(versions(&p2.body), [1]);
    assert_eq!(p2.body["items"][0]["definition"]["schedule"]["expression"], "0 0 6 * * *");
    assert_eq!(p2.body["nextCursor"], Value::Null);
    // AND all of them in one page by default
    assert_eq!(versions(&h.get("acme", "/v1/jobs/report/versions").await.body), [3, 2, 1]);
    // AND another tenant gets 404; a bad cursor or limit is a 400 naming it
    assert_eq!(h.get("other", "/v1/jobs/report/versions").await.status, 404);
    let bad = h.get("acme", "/v1/jobs/report/versions?cursor=zz").await;
    assert_eq!((bad.status, bad.error_field()), (400, Some("cursor")), "{}", bad.body);
    let bad = h.get("acme", "/v1/jobs/report/versions?limit=0").await;
    assert_eq!((bad.status, bad.error_field()), (400, Some("limit")), "{}", bad.body);
}

#[tokio::test]
async fn an_invalid_edit_is_refused_as_invalid_whatever_version_it_names() {
    // GIVEN a job at version 1 (found by the fuzzer: an invalid body with a stale If-Match was
    // answered 412, as if it were valid and only late)
    let h = Harness::new("versions-invalid", at("2026-12-01T10:00:05Z")).await;
    h.create("acme", "report", "0 0 6 * * *").await;
    let mut body = job_body("report", "0 0 7 * * *");
    body["timeoutSecs"] = serde_json::json!(0);
    let body = body.to_string();
    for stale in ["0", "1"] {
        // WHEN an edit whose definition is invalid names a stale or the current version
        let a = h
            .call(
                "acme",
                "PUT",
                "/v1/jobs/report",
                Some(&body),
                &[("content-type", "application/json"), ("if-match", stale)],
            )
            .await;
        // THEN it is a 400 naming the field, and the job is unchanged
        assert_eq!(a.status, 400, "If-Match {stale}: {}", a.body);
        assert_eq!(a.error_field(), Some("timeoutSecs"), "{}", a.body);
    }
    let j = h.get("acme", "/v1/jobs/report").await;
    assert_eq!(j.body["version"], 1, "{}", j.body);
}
