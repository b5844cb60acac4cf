//! Issue 15, "idempotency": create, trigger-now and backfill under client retries. Before the
//! fix the header was ignored: a retry after a timeout triggered the job twice.

use crate::common::{at, job_body, Harness};
use serde_json::{json, Value};
use sundial_store::idem::{self, IdemState};

async fn post_with_key(h: &Harness, path: &str, body: &Value, key: &str) -> crate::common::Answer {
    h.call(
        "acme",
        "POST",
        path,
        Some(&body.to_string()),
        &[("content-type", "application/json"), ("idempotency-key", key)],
    )
    .await
}

async fn executions(h: &Harness, job: &str) -> Vec<Value> {
    h.get("acme", &format!("/v1/jobs/{job}/executions?limit=100")).await.body["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[tokio::test]
async fn retries_with_the_same_key_get_the_first_answer_and_do_nothing_twice() {
    // GIVEN an API
    let h = Harness::new("idem", at("2026-12-01T10:00:10Z")).await;
    // WHEN a create is retried with its key
    let body = job_body("hourly", "0 0 * * * *");
    let first = post_with_key(&h, "/v1/jobs", &body, "create-1").await;
    assert_eq!(first.status, 201, "{}", first.body);
    h.clock.advance(chrono::Duration::seconds(2));
    let again = post_with_key(&h, "/v1/jobs", &body, "create-1").await;
    // THEN the retry gets the same answer, marked as a replay
    assert_eq!((again.status, &again.body), (201, &first.body));
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.header("etag"), first.header("etag"));
    // AND the key with another body is 422, and writes nothing
    let other = post_with_key(&h, "/v1/jobs", &job_body("other", "0 0 * * * *"), "create-1").await;
    assert_eq!((other.status, other.error_field()), (422, Some("Idempotency-Key")), "{}", other.body);
    assert_eq!(h.get("acme", "/v1/jobs/other").await.status, 404);

    // WHEN trigger-now is retried with its key, seconds later
    let before = executions(&h, "hourly").await.len();
    let t1 = post_with_key(&h, "/v1/jobs/hourly/trigger", &json!({}), "run-1").await;
    assert_eq!(t1.status, 202, "{}", t1.body);
    h.clock.advance(chrono::Duration::seconds(5));
    let t2 = post_with_key(&h, "/v1/jobs/hourly/trigger", &json!({}), "run-1").await;
    // THEN the same execution, and only one
    assert_eq!((t2.status, &t2.body["executionId"]), (202, &t1.body["executionId"]), "{}", t2.body);
    assert_eq!(executions(&h, "hourly").await.len(), before + 1);
    // AND without a key, a retry is a second run (the behaviour the key exists for)
    let t3 = h.post("acme", "/v1/jobs/hourly/trigger", &json!({})).await;
    assert_eq!(t3.status, 202);
    assert_ne!(t3.body["executionId"], t1.body["executionId"]);

    // WHEN a backfill is retried with its key
    let range = json!({"from": "2026-12-01T06:00:00Z", "to": "2026-12-01T08:00:00Z"});
    let b1 = post_with_key(&h, "/v1/jobs/hourly/backfill", &range, "fill-1").await;
    let b2 = post_with_key(&h, "/v1/jobs/hourly/backfill", &range, "fill-1").await;
    // THEN the same report (created 3, not "existing 3")
    assert_eq!((b1.status, b1.body["created"].as_u64()), (202, Some(3)), "{}", b1.body);
    assert_eq!(b2.body, b1.body);
}

#[tokio::test]
async fn a_request_that_died_mid_way_is_retried_at_its_instant_and_never_runs_twice() {
    // GIVEN a job triggered with a key, whose process then "died" before storing the answer:
    // the record is put back to running with a lease that has run out
    let h = Harness::new("idem-crash", at("2026-12-01T10:00:10Z")).await;
    h.create("acme", "hourly", "0 0 * * * *").await;
    let t1 = post_with_key(&h, "/v1/jobs/hourly/trigger", &json!({}), "run-9").await;
    assert_eq!(t1.status, 202, "{}", t1.body);
    let (ddb, table) = (&h.env.clients.ddb, &h.env.cfg.jobs_table);
    let rec = idem::get(ddb, table, "acme", "run-9").await.unwrap().expect("a record");
    assert!(matches!(rec.state, IdemState::Done(202)), "{rec:?}");
    let dead = idem::Claim {
        fingerprint: &rec.fingerprint,
        at_ms: rec.at_ms,
        lease_ms: rec.at_ms + 1,
        owner: "dead-process",
        expires_at: rec.at_ms / 1000 + 86_400,
    };
    assert!(idem::claim(ddb, table, "acme", "run-9", &dead, Some(&rec)).await.unwrap());
    let before = executions(&h, "hourly").await.len();
    // WHEN the client retries while the dead request's lease still runs, THEN 409 in progress
    let running = idem::get(ddb, table, "acme", "run-9").await.unwrap().expect("a record");
    assert_eq!(running.state, IdemState::Running);
    let busy = post_with_key(&h, "/v1/jobs/hourly/trigger", &json!({}), "run-9").await;
    assert_eq!(
        (busy.status, busy.body["error"]["code"].as_str()),
        (409, Some("idempotency_in_progress")),
        "{}",
        busy.body
    );
    assert_eq!(busy.header("retry-after"), Some("1"));
    // (the lease ended at at_ms + 1 ms, so any later retry takes it over)
    h.clock.advance(chrono::Duration::seconds(40));
    let t2 = post_with_key(&h, "/v1/jobs/hourly/trigger", &json!({}), "run-9").await;
    // THEN it runs again at the first request's instant: the execution is already there, so
    // no second run (409 already_exists), and no new execution
    assert_eq!((t2.status, t2.body["error"]["code"].as_str()), (409, Some("already_exists")), "{}", t2.body);
    assert_eq!(executions(&h, "hourly").await.len(), before);
}

#[tokio::test]
async fn a_running_key_is_409_and_bad_keys_are_400() {
    let h = Harness::new("idem-running", at("2026-12-01T10:00:10Z")).await;
    h.create("acme", "hourly", "0 0 * * * *").await;
    // GIVEN a key held by a running request (lease 30 s from now)
    let (ddb, table) = (&h.env.clients.ddb, &h.env.cfg.jobs_table);
    let now_ms = at("2026-12-01T10:00:10Z").timestamp_millis();
    let c = idem::Claim {
        fingerprint: "x",
        at_ms: now_ms,
        lease_ms: now_ms + 30_000,
        owner: "other",
        expires_at: 0,
    };
    assert!(idem::claim(ddb, table, "acme", "busy", &c, None).await.unwrap());
    // WHEN the same key comes with the request it was claimed for... (fingerprint differs: 422)
    let a = post_with_key(&h, "/v1/jobs/hourly/trigger", &json!({}), "busy").await;
    assert_eq!(a.status, 422, "{}", a.body);
    // AND keys that are empty, too long or not visible ASCII are 400
    for bad in ["x".repeat(256), "a b".to_string()] {
        let a = post_with_key(&h, "/v1/jobs/hourly/trigger", &json!({}), &bad).await;
        assert_eq!((a.status, a.error_field()), (400, Some("Idempotency-Key")), "{bad:?}: {}", a.body);
    }
}
