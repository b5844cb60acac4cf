//! Priorities and back-pressure through the API (docs/priority.md): `priority` is validated by
//! name and returned; a saturated lane (a real deep queue on the emulator) answers create,
//! trigger-now and backfill of work for it with 429 `saturated` and `Retry-After`, while work
//! for the other lane goes through.

use crate::common::{at, job_body, Harness};
use serde_json::json;
use sundial_core::control::ControlSettings;
use sundial_model::priority::Backpressure;

fn low_saturates_at(n: u64) -> ControlSettings {
    ControlSettings {
        backpressure: Backpressure { defer_depth: n, defer_secs: 45, saturated_depth: n },
        ..ControlSettings::default()
    }
}

async fn fill_low_lane(h: &Harness, n: usize) {
    let url = h.env.queues["default"].low_url.clone();
    for c in 0..n.div_ceil(10) {
        let mut req = h.env.clients.sqs.send_message_batch().queue_url(&url);
        for i in 0..10 {
            let e = aws_sdk_sqs::types::SendMessageBatchRequestEntry::builder()
                .id(format!("m{i}"))
                .message_body(format!("{c}-{i}"))
                .build()
                .expect("entry");
            req = req.entries(e);
        }
        req.send().await.expect("filling the low lane");
    }
}

#[tokio::test]
async fn priority_is_validated_by_name_and_returned() {
    let h = Harness::new("prio-valid", at("2026-12-01T10:00:00Z")).await;
    // WHEN a job is created with an unknown priority, THEN 400 on `priority`
    let mut body = job_body("j", "0 30 2 * * *");
    body["priority"] = json!("urgent");
    let a = h.post("acme", "/v1/jobs", &body).await;
    assert_eq!((a.status, a.error_field()), (400, Some("priority")), "{}", a.body);
    // WHEN with `low`, THEN it is stored and returned; without, it is left out (normal)
    body["priority"] = json!("low");
    let a = h.post("acme", "/v1/jobs", &body).await;
    assert_eq!(a.status, 201, "{}", a.body);
    assert_eq!(h.get("acme", "/v1/jobs/j").await.body["definition"]["priority"], json!("low"));
    let n = h.create("acme", "n", "0 30 2 * * *").await;
    assert!(n["definition"].get("priority").is_none(), "{n}");
}

#[tokio::test]
async fn a_saturated_low_lane_answers_429_with_retry_after_for_its_work_only() {
    // GIVEN a low lane holding 20 visible messages, the saturation threshold
    let h =
        Harness::with_settings("prio-429", &["default"], at("2026-12-01T10:00:10Z"), low_saturates_at(20))
            .await;
    let mut early = job_body("early", "0 0 * * * *");
    early["priority"] = json!("low");
    assert_eq!(h.post("acme", "/v1/jobs", &early).await.status, 201, "created while the lane was calm");
    fill_low_lane(&h, 20).await;
    // (a lane's depth is cached for 10 s: the next reads come after that)
    h.clock.set(at("2026-12-01T10:00:25Z"));
    // WHEN a low-priority job is created, THEN 429 saturated + Retry-After, and no job
    let mut low = job_body("low", "0 0 * * * *");
    low["priority"] = json!("low");
    let a = h.post("acme", "/v1/jobs", &low).await;
    assert_eq!((a.status, a.body["error"]["code"].as_str()), (429, Some("saturated")), "{}", a.body);
    assert_eq!(a.header("retry-after"), Some("45"), "{:?}", a.headers);
    // AND the message does not show the shared lane's depth or threshold (other tenants' load;
    // issue 28, L1)
    let msg = a.body["error"]["message"].as_str().unwrap_or_default();
    assert!(!msg.chars().any(|c| c.is_ascii_digit()), "{msg}");
    assert_eq!(h.get("acme", "/v1/jobs/low").await.status, 404);
    // AND triggering the low job made before is refused the same way
    let t = h.post("acme", "/v1/jobs/early/trigger", &json!({})).await;
    assert_eq!((t.status, t.body["error"]["code"].as_str()), (429, Some("saturated")), "{}", t.body);
    assert_eq!(t.header("retry-after"), Some("45"), "{:?}", t.headers);
    // AND a normal job is created and triggered (main lane, calm)
    h.create("acme", "hourly", "0 0 * * * *").await;
    let t = h.post("acme", "/v1/jobs/hourly/trigger", &json!({})).await;
    assert!((200..300).contains(&t.status), "{}", t.body);
    // AND its backfill (bulk work: the low lane) is refused
    let b = h
        .post(
            "acme",
            "/v1/jobs/hourly/backfill",
            &json!({"from": "2026-12-01T07:00:00Z", "to": "2026-12-01T09:00:00Z"}),
        )
        .await;
    assert_eq!((b.status, b.body["error"]["code"].as_str()), (429, Some("saturated")), "{}", b.body);
    assert!(b.header("retry-after").is_some(), "{:?}", b.headers);
}
