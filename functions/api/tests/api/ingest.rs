//! Event sources other than the API (docs/events.md): a tenant's SQS queue and a tenant's bus,
//! through the ingest function's handler, against the emulator's real queues and tables.

use crate::common::{job_body, Harness};
use chrono::{DateTime, TimeZone, Utc};
use serde_json::{json, Value};
use sundial_api::ingest::{BusDelivery, Fate, Ingest, IngestEvent};
use sundial_core::config::{EventSource, EventSourceSettings};
use sundial_tests::fixtures::tenant_queue;
use sundial_tests::trigger::executions;

/// A declared queue source.
fn queue_source(tenant: &str, arn: &str) -> EventSource {
    EventSource { tenant: tenant.into(), queue_arn: Some(arn.into()), bus: None }
}

async fn queue_arn(h: &Harness, url: &str) -> String {
    sundial_tests::fixtures::queue_arn(&h.env, url).await.expect("the queue's ARN")
}

/// Sends `bodies` to the queue at `url` and receives them as the event source mapping would hand
/// them to the function: one SQS event, with each message's id and `SentTimestamp`.
async fn deliver(
    h: &Harness,
    url: &str,
    arn: &str,
    bodies: &[String],
) -> (Value, Vec<(String, DateTime<Utc>)>) {
    for b in bodies {
        h.env.clients.sqs.send_message().queue_url(url).message_body(b).send().await.expect("send");
    }
    let mut got = Vec::new();
    for _ in 0..20 {
        let out = h
            .env
            .clients
            .sqs
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(10)
            .message_system_attribute_names(aws_sdk_sqs::types::MessageSystemAttributeName::All)
            .visibility_timeout(300)
            .wait_time_seconds(1)
            .send()
            .await
            .expect("receive");
        got.extend(out.messages.unwrap_or_default());
        if got.len() >= bodies.len() {
            break;
        }
    }
    assert_eq!(got.len(), bodies.len(), "every message received");
    // The function runs after the messages were sent (the manual clock, set to the real one).
    h.clock.set(Utc::now());
    let mut ids = Vec::new();
    let records: Vec<Value> = got
        .iter()
        .map(|m| {
            let sent = m
                .attributes()
                .and_then(|a| a.get(&aws_sdk_sqs::types::MessageSystemAttributeName::SentTimestamp))
                .cloned()
                .expect("SentTimestamp");
            let id = m.message_id.clone().unwrap_or_default();
            let ms: i64 = sent.parse().expect("ms");
            ids.push((
                m.body.clone().unwrap_or_default(),
                Utc.timestamp_millis_opt(ms).single().expect("instant"),
            ));
            let _ = &id;
            json!({
                "messageId": id,
                "receiptHandle": m.receipt_handle.clone().unwrap_or_default(),
                "body": m.body.clone().unwrap_or_default(),
                "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": sent},
                "messageAttributes": {},
                "md5OfBody": m.md5_of_body.clone().unwrap_or_default(),
                "eventSource": "aws:sqs",
                "eventSourceARN": arn,
                "awsRegion": "us-east-1"
            })
        })
        .collect();
    (json!({ "Records": records }), ids)
}

async fn handle(ingest: &Ingest, event: &Value) -> Result<Value, String> {
    let ev: IngestEvent = serde_json::from_value(event.clone()).expect("an ingest event");
    ingest.handle(ev).await
}

fn failures(out: &Value) -> usize {
    out["batchItemFailures"].as_array().map(Vec::len).expect("an SQS batch response")
}

async fn rejections(h: &Harness, tenant: &str) -> Vec<Value> {
    let ops = h.get(tenant, "/v1/operations").await;
    assert_eq!(ops.status, 200, "{}", ops.body);
    ops.body["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|o| o["action"] == "event_rejected")
        .collect()
}

#[tokio::test]
async fn events_on_a_tenants_queue_fire_its_jobs_once_each_and_what_cannot_fire_is_logged_naming_the_field() {
    // GIVEN (the real clock: the emulator stamps SentTimestamp with it) acme's daily job that
    // takes events once per period, one that takes each event, and globex's job
    let h = Harness::new("ingest-sqs", Utc::now()).await;
    let mut load = job_body("load", "0 0 6 * * *");
    load["events"] = json!({"oncePerPeriod": true});
    let mut each = job_body("each", "0 0 6 * * *");
    each["events"] = json!({});
    let mut theirs = job_body("theirs", "0 0 6 * * *");
    theirs["events"] = json!({});
    for (tenant, body) in [("acme", &load), ("acme", &each), ("globex", &theirs)] {
        let a = h.post(tenant, "/v1/jobs", body).await;
        assert_eq!(a.status, 201, "{}", a.body);
    }
    // AND acme's queue, tagged acme, declared as acme's source; and a queue tagged globex that
    // is (wrongly) declared as acme's
    let files = tenant_queue(&h.env, "files", "acme").await.expect("queue");
    let files_arn = queue_arn(&h, &files).await;
    let stray = tenant_queue(&h.env, "stray", "globex").await.expect("queue");
    let stray_arn = queue_arn(&h, &stray).await;
    let sources = EventSourceSettings {
        sources: vec![queue_source("acme", &files_arn), queue_source("acme", &stray_arn)],
    };
    let ingest = Ingest::new(h.api.clone(), sources, h.env.clients.sqs.clone());

    // WHEN a batch arrives on acme's queue: a file, the same file announced twice, an event
    // without a key, globex's job, a body that is not JSON, and one naming a tenant
    let bodies = [
        json!({"jobId": "load", "key": "file-1.csv", "params": {"file": "file-1.csv"}}).to_string(),
        json!({"jobId": "load", "key": "file-1.csv"}).to_string(),
        json!({"jobId": "each"}).to_string(),
        json!({"jobId": "theirs"}).to_string(),
        "not json".to_string(),
        json!({"jobId": "each", "tenant": "globex"}).to_string(),
    ];
    let (batch, sent) = deliver(&h, &files, &files_arn, &bodies).await;
    let out = handle(&ingest, &batch).await.expect("an SQS batch is answered");
    // THEN no record is left for redelivery: each fired or was refused for good
    assert_eq!(failures(&out), 0, "{out}");
    // AND the file is the next 06:00 fire, one execution for both announcements, run now
    let six = ingest_next_six(h.api.now());
    let loads = executions(&h.env, "acme", "load").await.expect("executions");
    assert_eq!(loads.len(), 1, "{loads:?}");
    assert_eq!(loads[0].scheduled_at, six);
    assert_eq!(loads[0].timeline[0].code.as_deref(), Some("event"));
    assert_eq!(loads[0].timeline[0].actor, format!("source:sqs:{}", files_arn.rsplit(':').next().unwrap()));
    assert_eq!(loads[0].definition.params, json!({"v": 1, "file": "file-1.csv"}));
    // AND the event without a key is its own execution at the message's SentTimestamp
    let eaches = executions(&h.env, "acme", "each").await.expect("executions");
    let sent_each = sent.iter().find(|(b, _)| b == &bodies[2]).map(|(_, t)| *t).expect("sent");
    assert_eq!(eaches.iter().map(|e| e.scheduled_at).collect::<Vec<_>>(), vec![sent_each]);
    // AND globex's job did not fire, and globex's log holds nothing of acme's
    assert!(executions(&h.env, "globex", "theirs").await.expect("executions").is_empty());
    assert!(rejections(&h, "globex").await.is_empty());
    // AND acme's operations log says why each refused message did not fire, naming the field
    let refused = rejections(&h, "acme").await;
    let details: Vec<String> =
        refused.iter().map(|o| o["detail"].as_str().unwrap_or_default().to_string()).collect();
    assert_eq!(refused.len(), 3, "{details:?}");
    assert!(details.iter().any(|d| d.contains(": body: is not JSON")), "{details:?}");
    assert!(details.iter().any(|d| d.contains(": tenant: unknown field")), "{details:?}");
    assert!(
        refused
            .iter()
            .any(|o| o["jobId"] == "theirs"
                && o["detail"].as_str().unwrap_or_default().contains("job not found")),
        "{details:?}"
    );

    // WHEN the whole batch is delivered again (SQS delivers at least once)
    let again = handle(&ingest, &batch).await.expect("answered");
    // THEN nothing new: each message is the execution it was
    assert_eq!(failures(&again), 0);
    assert_eq!(executions(&h.env, "acme", "load").await.expect("executions").len(), 1);
    assert_eq!(executions(&h.env, "acme", "each").await.expect("executions").len(), 1);
    // AND each new execution was sent to its pool once
    let pool =
        sundial_tests::fixtures::receive(&h.env, h.env.queue_url("default"), 60).await.expect("receive");
    assert_eq!(pool.len(), 2, "{pool:?}");

    // WHEN a message arrives on the queue tagged for globex but declared as acme's, and one
    // from a queue nobody declared
    let (stray_batch, _) =
        deliver(&h, &stray, &stray_arn, &[json!({"jobId": "each", "key": "stray-1"}).to_string()]).await;
    let out = handle(&ingest, &stray_batch).await.expect("answered");
    let mut record = batch["Records"][2].clone();
    record["eventSourceARN"] = json!(format!("{files_arn}-other"));
    record["messageId"] = json!("m-undeclared");
    let undeclared = json!({"Records": [record]});
    let logged = rejections(&h, "acme").await.len();
    let out2 = handle(&ingest, &undeclared).await.expect("answered");
    // THEN neither fires nor writes anyone's log: each is left on its queue for redelivery
    assert_eq!(failures(&out), 1, "{out}");
    assert_eq!(out2["batchItemFailures"][0]["itemIdentifier"], "m-undeclared", "{out2}");
    assert_eq!(executions(&h.env, "acme", "each").await.expect("executions").len(), 1);
    assert_eq!(rejections(&h, "acme").await.len(), logged);
    assert!(rejections(&h, "globex").await.is_empty());
    h.env.cleanup().await;
}

/// The next 06:00 UTC at or after `now`.
fn ingest_next_six(now: DateTime<Utc>) -> DateTime<Utc> {
    let day = now.date_naive().and_hms_opt(6, 0, 0).expect("06:00").and_utc();
    if day >= now {
        day
    } else {
        day + chrono::Duration::days(1)
    }
}

#[tokio::test]
async fn events_on_a_tenants_bus_fire_once_per_event_id_and_a_stamp_not_declared_fires_nothing() {
    // GIVEN acme's job that takes each event, and acme's bus declared as its source
    let h = Harness::new("ingest-bus", Utc::now()).await;
    let mut each = job_body("each", "0 0 6 * * *");
    each["events"] = json!({});
    assert_eq!(h.post("acme", "/v1/jobs", &each).await.status, 201);
    let sources = EventSourceSettings {
        sources: vec![EventSource {
            tenant: "acme".into(),
            queue_arn: None,
            bus: Some("s-tenant-acme".into()),
        }],
    };
    let ingest = Ingest::new(h.api.clone(), sources, h.env.clients.sqs.clone());
    let time = (h.api.now() - chrono::Duration::seconds(30)).format("%Y-%m-%dT%H:%M:%SZ").to_string();
    let delivery = |tenant: &str, id: &str, detail: Value| {
        json!({
            "sundialEventSource": {"tenant": tenant, "bus": "s-tenant-acme"},
            "event": {"version": "0", "id": id, "detail-type": "Sundial Event", "source": "acme.files",
                      "account": "111111111111", "time": time, "region": "us-east-1", "resources": [],
                      "detail": detail},
        })
    };

    // WHEN an event arrives, and EventBridge delivers it again
    let first =
        handle(&ingest, &delivery("acme", "ev-1", json!({"jobId": "each", "params": {"n": 2}}))).await;
    let repeat =
        handle(&ingest, &delivery("acme", "ev-1", json!({"jobId": "each", "params": {"n": 2}}))).await;
    // THEN both are one execution, at the event's time, with its parameters
    let first = first.expect("fired");
    assert_eq!(first["created"], json!(true), "{first}");
    assert_eq!(repeat.expect("fired")["executionId"], first["executionId"]);
    let es = executions(&h.env, "acme", "each").await.expect("executions");
    assert_eq!(es.len(), 1);
    assert_eq!(es[0].scheduled_at.format("%Y-%m-%dT%H:%M:%SZ").to_string(), time);
    assert_eq!(es[0].definition.params, json!({"v": 1, "n": 2}));

    // WHEN an event's detail names no job
    let bad = handle(&ingest, &delivery("acme", "ev-2", json!({"job": "each"}))).await.expect("consumed");
    // THEN it is refused for good, naming the field, in acme's log
    assert!(bad["rejected"].as_str().unwrap_or_default().starts_with("detail.job:"), "{bad}");
    assert_eq!(rejections(&h, "acme").await.len(), 1);

    // WHEN a delivery is stamped with a tenant the bus was not declared for
    let forged = handle(&ingest, &delivery("globex", "ev-3", json!({"jobId": "each"}))).await;
    // THEN it fails (Lambda retries, then the function's dead-letter queue) and fires nothing
    assert!(forged.is_err(), "{forged:?}");
    assert_eq!(executions(&h.env, "acme", "each").await.expect("executions").len(), 1);
    // AND a typed delivery says the same
    let d: BusDelivery =
        serde_json::from_value(delivery("acme", "ev-1", json!({"jobId": "each"}))).expect("typed");
    assert!(matches!(ingest.handle_bus(&d).await, Fate::Fired { created: false, .. }));
    h.env.cleanup().await;
}

#[tokio::test]
async fn refused_events_past_the_minutes_limit_are_counted_not_logged() {
    use sundial_core::control::events::MAX_LOGGED_REJECTIONS_PER_MINUTE as MAX;
    // GIVEN acme's queue declared as its source
    let h = Harness::new("ingest-flood", Utc::now()).await;
    let files = tenant_queue(&h.env, "flood", "acme").await.expect("queue");
    let files_arn = queue_arn(&h, &files).await;
    let sources = EventSourceSettings { sources: vec![queue_source("acme", &files_arn)] };
    let ingest = Ingest::new(h.api.clone(), sources, h.env.clients.sqs.clone());
    // WHEN anyone the queue admits sends more refusable messages in one minute than are logged
    let bodies: Vec<String> = (0..MAX + 5).map(|i| format!("not json {i}")).collect();
    let (batch, _) = deliver(&h, &files, &files_arn, &bodies).await;
    h.clock.set(Utc.with_ymd_and_hms(2026, 12, 6, 12, 0, 10).single().expect("instant"));
    let out = handle(&ingest, &batch).await.expect("an SQS batch is answered");
    // THEN every message is refused for good (none left for redelivery)
    assert_eq!(failures(&out), 0, "{out}");
    // AND the log holds the minute's first MAX refusals and one entry saying the rest are
    // counted, not logged: the flood writes a bounded number of audit entries
    let refused = rejections(&h, "acme").await;
    let details: Vec<&str> = refused.iter().map(|o| o["detail"].as_str().unwrap_or_default()).collect();
    assert_eq!(refused.len(), MAX as usize + 1, "{details:?}");
    assert_eq!(details.iter().filter(|d| d.contains("counted, not logged")).count(), 1, "{details:?}");
    // AND the next minute logs again
    h.clock.set(Utc.with_ymd_and_hms(2026, 12, 6, 12, 1, 10).single().expect("instant"));
    let (again, _) = deliver(&h, &files, &files_arn, &["still not json".to_string()]).await;
    h.clock.set(Utc.with_ymd_and_hms(2026, 12, 6, 12, 1, 10).single().expect("instant"));
    assert_eq!(failures(&handle(&ingest, &again).await.expect("answered")), 0);
    assert_eq!(rejections(&h, "acme").await.len(), MAX as usize + 2);
    h.env.cleanup().await;
}
