//! Bad requests: every one is refused with the right status and names the offending field, and
//! none of them writes anything.

use crate::common::{at, job_body, Harness};
use serde_json::{json, Value};

fn with(mut base: Value, path: &[&str], v: Value) -> Value {
    let mut cur = &mut base;
    for (i, k) in path.iter().enumerate() {
        if i == path.len() - 1 {
            cur[*k] = v.clone();
        } else {
            if cur.get(*k).is_none() {
                cur[*k] = json!({});
            }
            cur = &mut cur[*k];
        }
    }
    base
}

/// (name, method, path, body, headers, status, field)
type RawCase<'a> = (&'a str, &'a str, &'a str, Option<String>, Vec<(&'a str, &'a str)>, u16, &'a str);

#[tokio::test]
async fn bad_requests_name_the_field_and_change_nothing() {
    // GIVEN an API with one pool and no jobs
    let h = Harness::new("validation", at("2026-12-01T10:00:00Z")).await;
    let base = job_body("nightly", "0 30 2 * * *");
    let big_params = json!({"blob": "x".repeat(5_000)});
    let body_cases: Vec<(&str, Value, u16, &str)> = vec![
        (
            "bad cron minute",
            with(base.clone(), &["schedule", "expression"], json!("61 * * * *")),
            400,
            "schedule.expression",
        ),
        (
            "cron with 4 fields",
            with(base.clone(), &["schedule", "expression"], json!("* * * *")),
            400,
            "schedule.expression",
        ),
        (
            "rate of zero",
            with(base.clone(), &["schedule", "expression"], json!("rate(0 seconds)")),
            400,
            "schedule.expression",
        ),
        (
            "unknown zone",
            with(base.clone(), &["schedule", "timezone"], json!("Mars/Olympus_Mons")),
            400,
            "schedule.timezone",
        ),
        (
            "zone of wrong type",
            with(base.clone(), &["schedule", "timezone"], json!(5)),
            400,
            "schedule.timezone",
        ),
        (
            "unknown gap policy",
            with(base.clone(), &["schedule", "onGap"], json!("maybe")),
            400,
            "schedule.onGap",
        ),
        (
            "jitter over a day",
            with(base.clone(), &["schedule", "jitterWindowSecs"], json!(90_000)),
            400,
            "schedule.jitterWindowSecs",
        ),
        ("zero shards", with(base.clone(), &["shards"], json!(0)), 400, "shards"),
        ("too many shards", with(base.clone(), &["shards"], json!(101)), 400, "shards"),
        ("shards of wrong type", with(base.clone(), &["shards"], json!("8")), 400, "shards"),
        (
            "shards and broadcast together",
            with(with(base.clone(), &["shards"], json!(4)), &["broadcast", "members"], json!(["a"])),
            400,
            "broadcast",
        ),
        (
            "no broadcast members",
            with(base.clone(), &["broadcast", "members"], json!([])),
            400,
            "broadcast.members",
        ),
        (
            "a broadcast member twice",
            with(base.clone(), &["broadcast", "members"], json!(["eu", "us", "eu"])),
            400,
            "broadcast.members[2]",
        ),
        (
            "a broadcast member that is no id",
            with(base.clone(), &["broadcast", "members"], json!(["eu", "us east"])),
            400,
            "broadcast.members[1]",
        ),
        ("map-reduce on a webhook", with(base.clone(), &["mapReduce"], json!({})), 400, "mapReduce"),
        (
            "end before start",
            with(
                with(base.clone(), &["schedule", "start"], json!("2026-12-02T00:00:00Z")),
                &["schedule", "end"],
                json!("2026-12-01T00:00:00Z"),
            ),
            400,
            "schedule.end",
        ),
        (
            "negative retry",
            with(base.clone(), &["retry", "maxAttempts"], json!(-1)),
            400,
            "retry.maxAttempts",
        ),
        ("zero attempts", with(base.clone(), &["retry", "maxAttempts"], json!(0)), 400, "retry.maxAttempts"),
        (
            "fractional attempts",
            with(base.clone(), &["retry", "maxAttempts"], json!(1.5)),
            400,
            "retry.maxAttempts",
        ),
        (
            "base delay over max",
            with(
                with(base.clone(), &["retry", "baseDelaySecs"], json!(600)),
                &["retry", "maxDelaySecs"],
                json!(60),
            ),
            400,
            "retry.baseDelaySecs",
        ),
        ("unknown retry field", with(base.clone(), &["retry", "tries"], json!(3)), 400, "retry.tries"),
        ("unknown pool", with(base.clone(), &["pool"], json!("gpu")), 400, "pool"),
        ("timeout as text", with(base.clone(), &["timeoutSecs"], json!("ten")), 400, "timeoutSecs"),
        ("zero timeout", with(base.clone(), &["timeoutSecs"], json!(0)), 400, "timeoutSecs"),
        (
            "zero start deadline",
            with(base.clone(), &["startDeadlineSecs"], json!(0)),
            400,
            "startDeadlineSecs",
        ),
        (
            "start deadline over a week",
            with(base.clone(), &["startDeadlineSecs"], json!(604_801)),
            400,
            "startDeadlineSecs",
        ),
        (
            "negative start deadline",
            with(base.clone(), &["startDeadlineSecs"], json!(-5)),
            400,
            "startDeadlineSecs",
        ),
        (
            "start deadline as text",
            with(base.clone(), &["startDeadlineSecs"], json!("1m")),
            400,
            "startDeadlineSecs",
        ),
        (
            "misfire threshold too long",
            with(base.clone(), &["misfireThresholdSecs"], json!(100_000)),
            400,
            "misfireThresholdSecs",
        ),
        (
            "unknown misfire policy",
            with(base.clone(), &["misfire"], json!({"policy": "panic"})),
            400,
            "misfire.policy",
        ),
        ("unknown concurrency", with(base.clone(), &["concurrency"], json!("SOMETIMES")), 400, "concurrency"),
        (
            "unknown target type",
            with(base.clone(), &["target"], json!({"type": "ftp", "url": "ftp://x"})),
            400,
            "target.type",
        ),
        (
            "non-http url",
            with(base.clone(), &["target"], json!({"type": "http", "url": "ftp://x"})),
            400,
            "target.url",
        ),
        (
            "empty lambda name",
            with(base.clone(), &["target"], json!({"type": "lambda", "function": ""})),
            400,
            "target.function",
        ),
        ("inline params too large", with(base.clone(), &["params"], big_params), 400, "params"),
        ("empty paramsRef", with(base.clone(), &["paramsRef"], json!("")), 400, "paramsRef"),
        ("unknown top-level field", with(base.clone(), &["colour"], json!("red")), 400, "colour"),
        (
            "missing target",
            {
                let mut b = base.clone();
                b.as_object_mut().unwrap().remove("target");
                b
            },
            400,
            "target",
        ),
        (
            "missing jobId",
            {
                let mut b = base.clone();
                b.as_object_mut().unwrap().remove("jobId");
                b
            },
            400,
            "jobId",
        ),
        ("jobId with a space", with(base.clone(), &["jobId"], json!("night ly")), 400, "jobId"),
        ("jobId as number", with(base.clone(), &["jobId"], json!(42)), 400, "jobId"),
        ("body is an array", json!([1, 2]), 400, "body"),
    ];
    let mut n = 0;
    for (name, body, status, field) in &body_cases {
        // WHEN it is posted
        let a = h.post("acme", "/v1/jobs", body).await;
        // THEN it is refused with the status and the field
        assert_eq!(a.status, *status, "{name}: {}", a.body);
        assert_eq!(a.error_field(), Some(*field), "{name}: {}", a.body);
        assert!(a.body["error"]["code"].is_string() && a.body["error"]["message"].is_string(), "{name}");
        n += 1;
    }
    // Requests that are bad before their JSON is read.
    let raw_cases: Vec<RawCase> = vec![
        (
            "oversized body",
            "POST",
            "/v1/jobs",
            Some(format!("{{\"jobId\":\"x\",\"pad\":\"{}\"}}", "y".repeat(20_000))),
            vec![("content-type", "application/json")],
            413,
            "body",
        ),
        (
            "not JSON",
            "POST",
            "/v1/jobs",
            Some("{\"jobId\":".into()),
            vec![("content-type", "application/json")],
            400,
            "body",
        ),
        ("empty body", "POST", "/v1/jobs", None, vec![], 400, "body"),
        (
            "text body",
            "POST",
            "/v1/jobs",
            Some("jobId=x".into()),
            vec![("content-type", "text/plain")],
            415,
            "Content-Type",
        ),
        ("limit of zero", "GET", "/v1/jobs?limit=0", None, vec![], 400, "limit"),
        ("limit as text", "GET", "/v1/jobs?limit=many", None, vec![], 400, "limit"),
        ("forged cursor", "GET", "/v1/jobs?cursor=zz", None, vec![], 400, "cursor"),
        ("unknown status", "GET", "/v1/executions?status=BOGUS", None, vec![], 400, "status"),
        ("status without an index", "GET", "/v1/executions?status=SUCCEEDED", None, vec![], 400, "status"),
        ("malformed execution id", "GET", "/v1/executions/not-an-id", None, vec![], 400, "executionId"),
        ("bad includeDeleted", "GET", "/v1/jobs?includeDeleted=maybe", None, vec![], 400, "includeDeleted"),
        (
            "preview count zero",
            "POST",
            "/v1/preview",
            Some(r#"{"schedule":{"expression":"* * * * *","timezone":"UTC"},"count":0}"#.into()),
            vec![("content-type", "application/json")],
            400,
            "count",
        ),
        (
            "preview nth weekday out of range",
            "POST",
            "/v1/preview",
            Some(r#"{"schedule":{"expression":"0 0 9 ? * MON#6","timezone":"UTC"}}"#.into()),
            vec![("content-type", "application/json")],
            400,
            "schedule.expression",
        ),
        (
            "preview bad cron",
            "POST",
            "/v1/preview",
            Some(r#"{"schedule":{"expression":"* * *","timezone":"UTC"}}"#.into()),
            vec![("content-type", "application/json")],
            400,
            "schedule.expression",
        ),
        (
            "replay nothing",
            "POST",
            "/v1/dlq/replay",
            Some(r#"{"executionIds":[]}"#.into()),
            vec![("content-type", "application/json")],
            400,
            "executionIds",
        ),
        (
            "replay a malformed id",
            "POST",
            "/v1/dlq/replay",
            Some(r#"{"executionIds":["a@1","nope"]}"#.into()),
            vec![("content-type", "application/json")],
            400,
            "executionIds[1]",
        ),
    ];
    for (name, method, path, body, headers, status, field) in &raw_cases {
        let a = h.call("acme", method, path, body.as_deref(), headers).await;
        assert_eq!(a.status, *status, "{name}: {}", a.body);
        assert_eq!(a.error_field(), Some(*field), "{name}: {}", a.body);
        n += 1;
    }
    assert!(n >= 25, "{n} bad requests");
    // AND nothing was written: the tenant has no job
    let list = h.get("acme", "/v1/jobs?includeDeleted=true").await;
    assert_eq!(list.status, 200);
    assert_eq!(list.body["items"].as_array().map(Vec::len), Some(0), "{}", list.body);
    // AND internal details never leak: no SDK or serde position text in any message
    let a = h
        .call("acme", "POST", "/v1/jobs", Some("{\"jobId\":"), &[("content-type", "application/json")])
        .await;
    let msg = a.body["error"]["message"].as_str().unwrap_or_default();
    assert!(!msg.contains("line") && !msg.contains("column"), "{msg}");
    h.env.cleanup().await;
}

#[tokio::test]
async fn backfill_and_update_bodies_are_validated_too() {
    // GIVEN a job
    let h = Harness::new("validation2", at("2026-12-01T10:00:00Z")).await;
    h.create("acme", "hourly", "0 0 * * * *").await;
    // WHEN a backfill range is reversed, in the future, or has an unknown field
    let cases = [
        (json!({"from": "2026-12-01T09:00:00Z", "to": "2026-12-01T08:00:00Z"}), "to"),
        (json!({"from": "2026-12-01T09:00:00Z", "to": "2026-12-01T11:00:00Z"}), "to"),
        (json!({"from": "2026-12-01T08:00:00Z", "to": "2026-12-01T09:00:00Z", "speed": 2}), "speed"),
        (json!({"from": "yesterday", "to": "2026-12-01T09:00:00Z"}), "from"),
        (json!({"from": "2026-11-01T00:00:00Z", "to": "2026-11-01T05:00:00Z"}), "from"),
        (json!({"from": "2026-12-01T08:00:00Z", "to": "2026-12-01T09:00:00Z", "paceSecs": -1}), "paceSecs"),
    ];
    for (body, field) in cases {
        let a = h.post("acme", "/v1/jobs/hourly/backfill", &body).await;
        // THEN 400 names the field
        assert_eq!((a.status, a.error_field()), (400, Some(field)), "{body}: {}", a.body);
    }
    // AND an update with a bad zone names it, and the job keeps version 1
    let mut b = job_body("hourly", "0 0 * * * *");
    b["schedule"]["timezone"] = json!("Europe/Atlantis");
    let a = h
        .call(
            "acme",
            "PUT",
            "/v1/jobs/hourly",
            Some(&b.to_string()),
            &[("content-type", "application/json"), ("if-match", "\"1\"")],
        )
        .await;
    assert_eq!((a.status, a.error_field()), (400, Some("schedule.timezone")), "{}", a.body);
    // AND an update that renames the job is refused
    let b = job_body("other", "0 0 * * * *");
    let a = h
        .call(
            "acme",
            "PUT",
            "/v1/jobs/hourly",
            Some(&b.to_string()),
            &[("content-type", "application/json"), ("if-match", "1")],
        )
        .await;
    assert_eq!((a.status, a.error_field()), (400, Some("jobId")), "{}", a.body);
    assert_eq!(h.get("acme", "/v1/jobs/hourly").await.body["version"], 1);
    h.env.cleanup().await;
}

#[tokio::test]
async fn quartz_day_rules_pass_create_and_preview() {
    // GIVEN an API on 1 Dec 2026 (a Tuesday)
    let h = Harness::new("validation-quartz", at("2026-12-01T10:00:00Z")).await;
    // WHEN a job on the second Monday of the month is created
    let created = h.create("acme", "second-monday", "0 0 9 ? * MON#2").await;
    // THEN its next fires are the second Mondays
    assert_eq!(created["job"]["nextFireAt"], "2026-12-14T09:00:00.000Z", "{created}");
    assert_eq!(created["nextFires"][1], "2027-01-11T09:00:00.000Z", "{created}");
    // WHEN a 5-field last-day-of-month job is created and a DST day previewed
    h.create("acme", "month-end", "30 23 L * *").await;
    let body = json!({
        "schedule": {"expression": "0 30 2 ? 3 SUNL", "timezone": "Europe/Berlin"},
        "count": 2,
        "after": "2026-01-01T00:00:00Z",
    });
    let a = h.post("acme", "/v1/preview", &body).await;
    // THEN 02:30 on the last Sunday of March, in the gap, shifts to 03:00 CEST
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.body["fires"], json!(["2026-03-29T01:00:00.000Z", "2027-03-28T01:00:00.000Z"]));
    // AND an unsupported combination is refused on the field with its exact reason
    let mut bad = job_body("bad", "0 0 9 L,15 * ?");
    bad["schedule"]["timezone"] = json!("UTC");
    let a = h.post("acme", "/v1/jobs", &bad).await;
    assert_eq!((a.status, a.error_field()), (400, Some("schedule.expression")), "{}", a.body);
    assert!(a.body.to_string().contains("'L' cannot be part of a list"), "{}", a.body);
    h.env.cleanup().await;
}

/// Issue 28, L1: an unknown pool is refused without listing the deployment's pools (their
/// names say what other tenants run on).
#[tokio::test]
async fn an_unknown_pool_is_refused_without_listing_the_pools() {
    let h =
        Harness::with_pools("unknown-pool", &["default", "payroll-gpu"], at("2026-12-01T10:00:00Z")).await;
    let mut body = job_body("j", "0 0 12 * * *");
    body["pool"] = json!("gpu");
    let a = h.post("acme", "/v1/jobs", &body).await;
    assert_eq!((a.status, a.error_field()), (400, Some("pool")), "{}", a.body);
    let msg = a.body["error"]["message"].as_str().unwrap_or_default();
    assert!(!msg.contains("payroll-gpu") && !msg.contains("default"), "{msg}");
    h.env.cleanup().await;
}
