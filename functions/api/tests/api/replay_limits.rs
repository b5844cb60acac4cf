//! Issue 28, M2 (security review 2026-12): dead-letter replay is metered. A replay takes one
//! `exec` token (like trigger-now and backfill), and re-sending a READY replayed execution is
//! limited to one message per execution per [`GAP_SECS`]: repeated POSTs are answered
//! like the first and put no more messages on the queue. Before the fix a replay took no token
//! and every POST sent another message.

use crate::common::{at, Harness};
use serde_json::json;
use sundial_core::control::{ControlSettings, Quotas};
use sundial_core::execution::clock::Clock as _;
use sundial_model::claim::{Finish, LeaseTerms};
use sundial_model::retry::RunError;
use sundial_store::executions::{ClaimOutcome, ExecKey, FinishResult};

/// `sundial_core::control::dlq::RESEND_GAP_SECS` (a literal: the test predates the constant).
const GAP_SECS: i64 = 60;

fn one_exec_a_minute() -> ControlSettings {
    ControlSettings {
        quotas: Quotas { api_executions_per_minute: 1, triggers_per_minute: 10, ..Quotas::default() },
        ..ControlSettings::default()
    }
}

/// Triggers `job` now and runs it out of retries: its execution id, DEAD.
async fn dead_execution(h: &Harness, job: &str) -> (String, ExecKey) {
    let run = h.post("acme", &format!("/v1/jobs/{job}/trigger"), &json!({})).await;
    assert_eq!(run.status, 202, "{}", run.body);
    let id = run.body["executionId"].as_str().unwrap().to_string();
    let (job_id, ms) = sundial_model::keys::parse_execution_id(&id).unwrap();
    let key = ExecKey { tenant: "acme".into(), job_id, scheduled_ms: ms, child: None };
    let store = &h.api.control().execs;
    let terms = LeaseTerms { duration_ms: 30_000, skew_margin_ms: 2_000, may_take_over: true };
    let now = h.clock.now();
    let claimed = match store.claim(&key, "w1", &terms, now).await.unwrap() {
        ClaimOutcome::Claimed(c) => c,
        other => panic!("{other:?}"),
    };
    let dead = Finish::Dead {
        reason: "attempts_exhausted".into(),
        error: RunError::retryable("http_503", "upstream unavailable"),
        digest: "d".into(),
    };
    assert_eq!(store.finish(&key, &claimed.fence, &dead, now).await.unwrap(), FinishResult::Done);
    (id, key)
}

/// Receives and deletes every message on the pool queue: how many were for `key`.
async fn drain(h: &Harness, key: &ExecKey) -> usize {
    let url = h.env.queue_url("default");
    let mut mine = 0;
    loop {
        let out = h
            .env
            .clients
            .sqs
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(10)
            .send()
            .await
            .unwrap();
        if out.messages().is_empty() {
            return mine;
        }
        for m in out.messages() {
            if let Ok(msg) = serde_json::from_str::<sundial_model::ExecMessage>(m.body().unwrap_or_default())
            {
                if (msg.job_id.as_str(), msg.scheduled_ms) == (key.job_id.as_str(), key.scheduled_ms) {
                    mine += 1;
                }
            }
            h.env
                .clients
                .sqs
                .delete_message()
                .queue_url(url)
                .receipt_handle(m.receipt_handle().unwrap())
                .send()
                .await
                .unwrap();
        }
    }
}

#[tokio::test]
async fn a_replay_takes_an_exec_token() {
    // GIVEN a tenant allowed one API-created execution a minute, and a dead execution
    let h =
        Harness::with_settings("replay-rate", &["default"], at("2026-12-01T10:00:05Z"), one_exec_a_minute())
            .await;
    h.create("acme", "flaky", "0 0 12 * * *").await;
    let (id, _) = dead_execution(&h, "flaky").await;
    // WHEN, the next minute, it replays the dead execution
    h.clock.set(at("2026-12-01T10:01:00Z"));
    let r = h.call("acme", "POST", &format!("/v1/dlq/{id}/replay"), None, &[]).await;
    assert_eq!(r.status, 202, "{}", r.body);
    // THEN the replay used that minute's token: a trigger in the same minute is refused
    h.clock.set(at("2026-12-01T10:01:01Z"));
    let t = h.post("acme", "/v1/jobs/flaky/trigger", &json!({})).await;
    assert_eq!((t.status, t.body["error"]["code"].as_str()), (429, Some("rate_limited")), "{}", t.body);
    // AND another tenant's budget is its own
    h.create("globex", "flaky", "0 0 12 * * *").await;
    let g = h.post("globex", "/v1/jobs/flaky/trigger", &json!({})).await;
    assert_eq!(g.status, 202, "{}", g.body);
    h.env.cleanup().await;
}

#[tokio::test]
async fn a_batch_replay_past_the_budget_is_refused_before_replaying_anything() {
    // GIVEN a tenant allowed one API-created execution a minute, and two dead executions
    let h =
        Harness::with_settings("replay-batch", &["default"], at("2026-12-01T10:00:05Z"), one_exec_a_minute())
            .await;
    h.create("acme", "a", "0 0 12 * * *").await;
    h.create("acme", "b", "0 0 12 * * *").await;
    let (a, _) = dead_execution(&h, "a").await;
    h.clock.set(at("2026-12-01T10:01:05Z"));
    let (b, _) = dead_execution(&h, "b").await;
    // WHEN, the next minute, it replays both in one request
    h.clock.set(at("2026-12-01T10:02:00Z"));
    let r = h.post("acme", "/v1/dlq/replay", &json!({"executionIds": [a, b]})).await;
    // THEN 429 rate_limited, and both are still dead
    assert_eq!((r.status, r.body["error"]["code"].as_str()), (429, Some("rate_limited")), "{}", r.body);
    let dlq = h.get("acme", "/v1/dlq").await;
    assert_eq!(dlq.body["items"].as_array().unwrap().len(), 2, "{}", dlq.body);
    // AND one at a time fits
    let r = h.post("acme", "/v1/dlq/replay", &json!({"executionIds": [a]})).await;
    assert_eq!((r.status, &r.body["results"][0]["outcome"]), (200, &json!("replayed")), "{}", r.body);
    h.env.cleanup().await;
}

#[tokio::test]
async fn repeated_replays_of_a_ready_execution_send_one_message_per_gap() {
    // GIVEN a dead execution, replayed once (one message on the queue)
    let h = Harness::new("replay-resend", at("2026-12-01T10:00:05Z")).await;
    h.create("acme", "flaky", "0 0 12 * * *").await;
    let (id, key) = dead_execution(&h, "flaky").await;
    drain(&h, &key).await;
    h.clock.set(at("2026-12-01T10:05:00Z"));
    let first = h.call("acme", "POST", &format!("/v1/dlq/{id}/replay"), None, &[]).await;
    assert_eq!(first.status, 202, "{}", first.body);
    assert_eq!(drain(&h, &key).await, 1);
    // WHEN the tenant repeats the replay ten times within the gap
    for i in 0..10 {
        h.clock.set(at("2026-12-01T10:05:00Z") + chrono::Duration::seconds(i));
        let again = h.call("acme", "POST", &format!("/v1/dlq/{id}/replay"), None, &[]).await;
        // THEN each is answered like the first
        assert_eq!((again.status, &again.body["status"]), (202, &json!("READY")), "{}", again.body);
        let batch = h.post("acme", "/v1/dlq/replay", &json!({"executionIds": [id]})).await;
        assert_eq!(batch.body["results"][0]["outcome"], json!("resent"), "{}", batch.body);
    }
    // AND no message was added to the queue
    assert_eq!(drain(&h, &key).await, 0);
    // AND once the gap has passed, one more replay re-sends it once
    h.clock.set(at("2026-12-01T10:05:00Z") + chrono::Duration::seconds(GAP_SECS));
    for _ in 0..3 {
        let later = h.call("acme", "POST", &format!("/v1/dlq/{id}/replay"), None, &[]).await;
        assert_eq!(later.status, 202, "{}", later.body);
    }
    assert_eq!(drain(&h, &key).await, 1);
    h.env.cleanup().await;
}
