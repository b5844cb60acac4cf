//! Fair-queue groups on the API's sends (security review 2026-12 M1): trigger-now and backfill
//! messages name their tenant as the `MessageGroupId`, like the tick's, so SQS fair queues keep
//! one tenant's burst from delaying another's.

use crate::common::*;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trigger_now_and_backfill_messages_carry_the_tenant_as_their_group() {
    // GIVEN a job of tenant acme
    let h = Harness::new("api-fair", at("2026-12-01T10:00:30Z")).await;
    h.create("acme", "hourly", "0 0 * * * *").await;
    // WHEN it is triggered and a past hour backfilled
    let t = h.post("acme", "/v1/jobs/hourly/trigger", &json!({})).await;
    assert!((200..300).contains(&t.status), "{}", t.body);
    let b = h
        .post(
            "acme",
            "/v1/jobs/hourly/backfill",
            &json!({"from": "2026-12-01T09:00:00Z", "to": "2026-12-01T09:00:00Z"}),
        )
        .await;
    assert!((200..300).contains(&b.status), "{}", b.body);
    // THEN every message on the pool's queues says MessageGroupId = acme
    let mut groups = Vec::new();
    for url in [h.env.queue_url("default").to_string(), h.env.queues["default"].low_url.clone()] {
        let out = h
            .env
            .clients
            .sqs
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(10)
            .wait_time_seconds(1)
            .message_system_attribute_names(aws_sdk_sqs::types::MessageSystemAttributeName::All)
            .send()
            .await
            .expect("receive");
        for m in out.messages() {
            groups.push(
                m.attributes()
                    .and_then(|a| a.get(&aws_sdk_sqs::types::MessageSystemAttributeName::MessageGroupId))
                    .cloned(),
            );
        }
    }
    assert!(groups.len() >= 2, "{groups:?}");
    assert!(groups.iter().all(|g| g.as_deref() == Some("acme")), "{groups:?}");
}
