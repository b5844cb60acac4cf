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
            "/v1/tz-report",
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
    let before = h.get("acme", "/v1/jobs/minutely/executions").await.body;
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
    // AND nothing was written: the job has the executions it had (its next fire), and `kiri`
    // does not exist
    assert_eq!(h.get("acme", "/v1/jobs/minutely/executions").await.body, before);
    assert_eq!(h.get("acme", "/v1/jobs/kiri").await.status, 404);
}

fn with_schedule(key: &str, v: &str) -> serde_json::Value {
    let mut b = job_body("kiri", "0 0 9 * * *");
    b["schedule"]["timezone"] = json!("Pacific/Kiritimati");
    b["schedule"][key] = json!(v);
    b
}

#[tokio::test]
async fn unknown_fields_are_refused_at_every_level_of_every_body() {
    // GIVEN an API with one job
    let h = Harness::new("hostile-unknown", at("2026-12-01T10:00:00Z")).await;
    h.create("acme", "nightly", "0 30 2 * * *").await;
    let job = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut b = job_body("other", "0 30 2 * * *");
        f(&mut b);
        b
    };
    // WHEN a body carries a misspelt or unsupported field at any depth (these were accepted and
    // silently ignored before: `onGAP` and `jitterWindowSec` in the schedule, `holidays` in the
    // exclusions, `cap` on a `fireOnce` misfire)
    let cases: Vec<(&str, serde_json::Value, &str)> = vec![
        ("/v1/jobs", job(&|b| b["colour"] = json!(1)), "colour"),
        ("/v1/jobs", job(&|b| b["schedule"]["onGAP"] = json!("skip")), "schedule.onGAP"),
        ("/v1/jobs", job(&|b| b["schedule"]["jitterWindowSec"] = json!(30)), "schedule.jitterWindowSec"),
        (
            "/v1/jobs",
            job(&|b| b["schedule"]["exclusions"] = json!({"holidays": ["2026-12-25"]})),
            "schedule.exclusions.holidays",
        ),
        ("/v1/jobs", job(&|b| b["misfire"] = json!({"policy": "skip", "cap": 3})), "misfire.cap"),
        (
            "/v1/jobs",
            job(&|b| b["misfire"] = json!({"policy": "fireAll", "cap": 3, "max": 1})),
            "misfire.max",
        ),
        ("/v1/jobs", job(&|b| b["retry"]["tries"] = json!(3)), "retry.tries"),
        ("/v1/jobs", job(&|b| b["target"]["method"] = json!("GET")), "target.method"),
        (
            "/v1/preview",
            json!({"schedule": {"expression": "* * * * *", "timezone": "UTC", "tz": "UTC"}}),
            "schedule.tz",
        ),
        (
            "/v1/preview",
            json!({"schedule": {"expression": "* * * * *", "timezone": "UTC"}, "limit": 3}),
            "limit",
        ),
        (
            "/v1/jobs/nightly/backfill",
            json!({"from": "2026-11-30T00:00:00Z", "to": "2026-11-30T03:00:00Z", "pace": 1}),
            "pace",
        ),
        ("/v1/dlq/replay", json!({"executionIds": [], "all": true}), "all"),
    ];
    for (path, body, field) in cases {
        let a = h.post("acme", path, &body).await;
        // THEN each is a 400 naming the unknown field by its path
        assert_eq!((a.status, a.error_field()), (400, Some(field)), "{path} {body}: {}", a.body);
    }
    // AND nothing was created
    assert_eq!(h.get("acme", "/v1/jobs/other").await.status, 404);
}
