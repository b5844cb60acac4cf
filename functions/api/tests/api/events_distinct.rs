//! Distinct events never share an execution (protocol review 2026-12-06, N2): an event without
//! `oncePerPeriod` takes the first millisecond at or after its `at` that no other event and no
//! instant of the job's own schedule holds, so two events stamped alike (EventBridge's
//! whole-second `time`, an SQS batch's `SentTimestamp`, a caller's `at`) each run, and an event
//! never replaces or merges with a scheduled fire. A retry of one key is still that event, and
//! a keyless event is known by its stamp: one repeated with the same `at` is the same event.

use crate::common::{at, job_body, Harness};
use serde_json::json;
use sundial_tests::trigger::executions;

#[tokio::test]
async fn events_stamped_alike_each_run_and_none_takes_a_scheduled_instant() {
    // GIVEN an hourly job that takes every event
    let h = Harness::new("events-distinct", at("2026-12-01T10:00:05Z")).await;
    let mut body = job_body("load", "0 0 * * * *");
    body["events"] = json!({});
    assert_eq!(h.post("acme", "/v1/jobs", &body).await.status, 201);
    h.clock.set(at("2026-12-01T10:10:00Z"));
    let post = |key: Option<&str>, when: &str| {
        let mut ev = json!({"at": when});
        if let Some(k) = key {
            ev["key"] = json!(k);
        }
        ev
    };

    // WHEN two files land in the same second, one event lands on the schedule's 10:00 instant,
    // a keyless event is sent twice with its stamp, and the second file's event is delivered
    // again
    let a = h.post("acme", "/v1/jobs/load/events", &post(Some("file-a"), "2026-12-01T10:09:59Z")).await;
    let b = h.post("acme", "/v1/jobs/load/events", &post(Some("file-b"), "2026-12-01T10:09:59Z")).await;
    let s = h.post("acme", "/v1/jobs/load/events", &post(Some("file-s"), "2026-12-01T10:00:00Z")).await;
    let k1 = h.post("acme", "/v1/jobs/load/events", &post(None, "2026-12-01T10:05:00Z")).await;
    let k2 = h.post("acme", "/v1/jobs/load/events", &post(None, "2026-12-01T10:05:00Z")).await;
    let again = h.post("acme", "/v1/jobs/load/events", &post(Some("file-b"), "2026-12-01T10:09:59Z")).await;

    // THEN each distinct event made its own execution
    let id = |r: &crate::common::Answer| {
        r.body["execution"]["executionId"].as_str().unwrap_or_default().to_string()
    };
    for r in [&a, &b, &s, &k1] {
        assert_eq!((r.status, &r.body["created"]), (202, &json!(true)), "{}", r.body);
    }
    let ids: std::collections::BTreeSet<String> = [&a, &b, &s, &k1].iter().map(|r| id(r)).collect();
    assert_eq!(ids.len(), 4, "{ids:?}");
    // AND each at the first free millisecond at or after its stamp
    let ms = |t: &str| at(t).timestamp_millis();
    assert_eq!(id(&a), format!("load@{}", ms("2026-12-01T10:09:59Z")));
    assert_eq!(id(&b), format!("load@{}", ms("2026-12-01T10:09:59Z") + 1));
    assert_eq!(id(&k1), format!("load@{}", ms("2026-12-01T10:05:00Z")));
    // AND the keyless repeat is the same event
    assert_eq!((k2.status, &k2.body["created"], id(&k2)), (202, &json!(false), id(&k1)), "{}", k2.body);
    // AND the schedule's own 10:00 instant is left to the schedule
    assert_eq!(id(&s), format!("load@{}", ms("2026-12-01T10:00:00Z") + 1));
    // AND the redelivered event is the one it was
    assert_eq!((again.status, &again.body["created"]), (202, &json!(false)), "{}", again.body);
    assert_eq!(id(&again), id(&b));
    assert_eq!(executions(&h.env, "acme", "load").await.unwrap().len(), 4);
    h.env.cleanup().await;
}
