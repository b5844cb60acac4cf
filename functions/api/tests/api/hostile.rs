//! Issue 15, "crashes from input": input that parses must never panic a handler. Each request
//! here crashed the handler before the fix (a panic the Lambda turns into a bare 500 and the
//! local server into a dropped connection); each must now be a 400 that names the field, and
//! write nothing.

use crate::common::{at, job_body, Harness};
use serde_json::json;

#[tokio::test]
async fn non_ascii_cursors_are_a_400_on_every_list() {
    // GIVEN an API with one job
    let h = Harness::new("hostile-cursor", at("2026-12-01T10:00:00Z")).await;
    h.create("acme", "nightly", "0 30 2 * * *").await;
    // WHEN every paginated list gets a cursor that is not ASCII (é, percent-encoded), or hex
    // digits split by a multi-byte character
    for cursor in ["%C3%A9", "a%C3%A9b", "%E2%82%AC%E2%82%AC", "0%C3%A90"] {
        for list in [
            "/v1/jobs",
            "/v1/executions?status=DEAD",
            "/v1/dlq",
            "/v1/jobs/nightly/executions",
            "/v1/operations",
        ] {
            let sep = if list.contains('?') { '&' } else { '?' };
            let a = h.get("acme", &format!("{list}{sep}cursor={cursor}")).await;
            // THEN each is refused on `cursor`
            assert_eq!((a.status, a.error_field()), (400, Some("cursor")), "{list} {cursor}: {}", a.body);
        }
    }
}

#[tokio::test]
async fn instants_far_outside_the_supported_range_are_a_400() {
    // GIVEN an API with one every-minute job
    let h = Harness::new("hostile-instants", at("2026-12-01T10:00:00Z")).await;
    h.create("acme", "minutely", "0 * * * * *").await;
    let far_past = "-262143-01-01T00:00:00Z";
    let far_future = "+262142-12-31T23:59:59Z";
    // WHEN backfill, preview and create get instants at chrono's limits
    let cases = [
        ("/v1/jobs/minutely/backfill", json!({"from": far_past, "to": "2026-12-01T09:00:00Z"}), "from"),
        ("/v1/jobs/minutely/backfill", json!({"from": "2026-12-01T09:00:00Z", "to": far_past}), "to"),
        (
            "/v1/preview",
            json!({"schedule": {"expression": "0 * * * * *", "timezone": "UTC"}, "after": far_past}),
            "after",
        ),
        (
            "/v1/preview",
            json!({"schedule": {"expression": "0 * * * * *", "timezone": "UTC"}, "after": far_future}),
            "after",
        ),
        (
            "/v1/preview",
            json!({"schedule": {"expression": "0 0 9 * * *", "timezone": "Pacific/Kiritimati", "start": far_future}}),
            "schedule.start",
        ),
        (
            "/v1/preview",
            json!({"schedule": {"expression": "0 0 9 * * *", "timezone": "Pacific/Kiritimati", "end": far_past}}),
            "schedule.end",
        ),
        ("/v1/jobs", with_schedule("start", far_future), "schedule.start"),
        ("/v1/jobs", with_schedule("end", far_past), "schedule.end"),
    ];
    for (path, body, field) in cases {
        let a = h.post("acme", path, &body).await;
        // THEN each is refused on the field that carries the instant
        assert_eq!((a.status, a.error_field()), (400, Some(field)), "{path} {body}: {}", a.body);
    }
    // AND nothing was written: the job has no execution, and `kiri` does not exist
    let execs = h.get("acme", "/v1/jobs/minutely/executions").await;
    assert_eq!(execs.body["items"].as_array().map(Vec::len), Some(0), "{}", execs.body);
    assert_eq!(h.get("acme", "/v1/jobs/kiri").await.status, 404);
}

fn with_schedule(key: &str, v: &str) -> serde_json::Value {
    let mut b = job_body("kiri", "0 0 9 * * *");
    b["schedule"]["timezone"] = json!("Pacific/Kiritimati");
    b["schedule"][key] = json!(v);
    b
}
