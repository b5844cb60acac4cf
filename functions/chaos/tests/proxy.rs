//! The fault proxy against the emulator: each fault kind as an SDK client sees it.
//!
//! Every test starts its own proxy (any free port) in front of the emulator and its own table or
//! queue. With a fault at 1000 per mille, the number of requests the proxy counts for one SDK
//! call tells whether the SDK classified the answer as retryable: 3 (the standard retry mode's
//! attempts) means retried, 1 means surfaced at once.

use aws_sdk_dynamodb::types::AttributeValue;
use std::net::SocketAddr;
use sundial_chaos::effect::{EffectStore, FenceOutcome};
use sundial_chaos::emulator;
use sundial_chaos::proxy::{decide, Fault, FaultPlan, Proxy, Service};

fn any_port() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

fn name(label: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!("t{}-{}-chaos-{label}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

/// A fresh table (created directly on the emulator), and a DynamoDB client through `proxy`.
async fn table_behind(proxy: &Proxy, label: &str) -> (String, aws_sdk_dynamodb::Client, EffectStore) {
    let table = name(label);
    let direct = aws_sdk_dynamodb::Client::new(&emulator::sdk_config(&emulator::endpoint()));
    EffectStore::new(direct.clone(), &table).create_table().await.unwrap_or_else(|e| panic!("{e}"));
    let via = aws_sdk_dynamodb::Client::new(&emulator::sdk_config(&proxy.endpoint()));
    (table, via, EffectStore::new(direct, "unused"))
}

async fn item_exists(table: &str, pk: &str) -> bool {
    let direct = aws_sdk_dynamodb::Client::new(&emulator::sdk_config(&emulator::endpoint()));
    let out = direct
        .get_item()
        .table_name(table)
        .key("pk", AttributeValue::S(pk.into()))
        .consistent_read(true)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{}", aws_sdk_dynamodb::error::DisplayErrorContext(e)));
    out.item.is_some()
}

/// Deletes a test's table (at the end of a passing test; a failing one leaves it to inspect).
async fn drop_table(table: &str) {
    let direct = aws_sdk_dynamodb::Client::new(&emulator::sdk_config(&emulator::endpoint()));
    let _ = direct.delete_table().table_name(table).send().await;
}

fn only(f: impl Fn(&mut FaultPlan)) -> FaultPlan {
    let mut p = FaultPlan::CALM;
    f(&mut p);
    p
}

async fn put(via: &aws_sdk_dynamodb::Client, table: &str, pk: &str) -> Result<(), String> {
    via.put_item()
        .table_name(table)
        .item("pk", AttributeValue::S(pk.into()))
        .condition_expression("attribute_not_exists(pk)")
        .send()
        .await
        .map(|_| ())
        .map_err(|e| {
            let code =
                e.as_service_error().and_then(|s| aws_sdk_dynamodb::error::ProvideErrorMetadata::code(s));
            code.map(str::to_string)
                .unwrap_or_else(|| format!("{}", aws_sdk_dynamodb::error::DisplayErrorContext(e)))
        })
}

#[tokio::test]
async fn dynamodb_throttling_errors_are_classified_as_throttling_and_retried() {
    // GIVEN a proxy that throttles every DynamoDB request
    let plan = only(|p| p.throttle_permille = 1000);
    let proxy =
        Proxy::start(any_port(), &emulator::endpoint(), 11, plan).await.unwrap_or_else(|e| panic!("{e}"));
    let (table, via, _) = table_behind(&proxy, "throttle").await;
    // WHEN one PutItem is sent through it
    let err = put(&via, &table, "a").await.err().unwrap_or_default();
    // THEN the SDK saw DynamoDB's throttling codes, retried them (3 attempts), and gave up
    assert!(
        err == "ProvisionedThroughputExceededException" || err == "ThrottlingException",
        "unexpected error {err}"
    );
    assert_eq!(proxy.stats().requests(), 3);
    let s = proxy.stats();
    assert_eq!(s.faults(Fault::DdbThroughputExceeded) + s.faults(Fault::DdbThrottling), 3);
    // AND nothing was written
    assert!(!item_exists(&table, "a").await);
    drop_table(&table).await;
}

#[tokio::test]
async fn sqs_request_throttled_is_classified_as_throttling_and_retried() {
    // GIVEN a queue, and a proxy that throttles every SQS request
    let q = name("q");
    let direct = aws_sdk_sqs::Client::new(&emulator::sdk_config(&emulator::endpoint()));
    let url = direct
        .create_queue()
        .queue_name(&q)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{}", aws_sdk_sqs::error::DisplayErrorContext(e)))
        .queue_url
        .unwrap_or_default();
    let plan = only(|p| p.throttle_permille = 1000);
    let proxy =
        Proxy::start(any_port(), &emulator::endpoint(), 12, plan).await.unwrap_or_else(|e| panic!("{e}"));
    let via = aws_sdk_sqs::Client::new(&emulator::sdk_config(&proxy.endpoint()));
    // WHEN a message is sent through it
    let err = via.send_message().queue_url(&url).message_body("x").send().await.err();
    // THEN the SDK surfaced the modelled RequestThrottled error after retrying
    let err = err.unwrap_or_else(|| panic!("the send succeeded through a throttling proxy"));
    let code = err
        .as_service_error()
        .and_then(|s| aws_sdk_sqs::error::ProvideErrorMetadata::code(s))
        .map(str::to_string);
    assert_eq!(
        code.as_deref(),
        Some("RequestThrottled"),
        "{}",
        aws_sdk_sqs::error::DisplayErrorContext(&err)
    );
    assert!(matches!(
        err.as_service_error(),
        Some(aws_sdk_sqs::operation::send_message::SendMessageError::RequestThrottled(_))
    ));
    assert_eq!(proxy.stats().requests(), 3);
    assert_eq!(proxy.stats().faults(Fault::SqsThrottled), 3);
    let _ = direct.delete_queue().queue_url(&url).send().await;
}

#[tokio::test]
async fn http_500_and_503_are_retried_by_status() {
    for (plan, fault, code) in [
        (only(|p| p.http500_permille = 1000), Fault::Http500, "InternalServerError"),
        (only(|p| p.http503_permille = 1000), Fault::Http503, "ServiceUnavailable"),
    ] {
        // GIVEN a proxy answering every request with the status
        let proxy =
            Proxy::start(any_port(), &emulator::endpoint(), 13, plan).await.unwrap_or_else(|e| panic!("{e}"));
        let (table, via, _) = table_behind(&proxy, "5xx").await;
        // WHEN a PutItem goes through
        let err = put(&via, &table, "a").await.err().unwrap_or_default();
        // THEN it was retried and failed with the injected code
        assert_eq!(err, code);
        assert_eq!((proxy.stats().requests(), proxy.stats().faults(fault)), (3, 3));
        drop_table(&table).await;
    }
}

#[tokio::test]
async fn a_reset_before_forwarding_is_retried_and_applies_nothing() {
    let proxy = Proxy::start(any_port(), &emulator::endpoint(), 14, only(|p| p.reset_permille = 1000))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (table, via, _) = table_behind(&proxy, "reset").await;
    // WHEN a PutItem goes through a proxy that resets every connection
    let err = put(&via, &table, "a").await.err().unwrap_or_default();
    // THEN the SDK reports a dispatch failure (an I/O error) after three attempts
    assert!(err.contains("dispatch failure") || err.contains("io error"), "{err}");
    assert_eq!(proxy.stats().faults(Fault::Reset), 3);
    assert!(!item_exists(&table, "a").await, "a reset before forwarding must not apply the write");
    drop_table(&table).await;
}

/// A seed whose first request is applied-then-dropped and whose second passes, for `plan`.
fn seed_dropping_only_the_first(plan: &FaultPlan) -> u64 {
    (0..100_000u64)
        .find(|s| {
            decide(*s, 0, plan, Service::DynamoDb).fault == Some(Fault::DropAfterApply)
                && decide(*s, 1, plan, Service::DynamoDb).fault.is_none()
        })
        .unwrap_or_else(|| panic!("no such seed"))
}

#[tokio::test]
async fn a_dropped_answer_leaves_the_write_applied_and_the_retry_sees_its_own_write() {
    // GIVEN a proxy that applies the first request and resets instead of answering, then passes
    let plan = only(|p| p.drop_after_apply_permille = 500);
    let seed = seed_dropping_only_the_first(&plan);
    let proxy =
        Proxy::start(any_port(), &emulator::endpoint(), seed, plan).await.unwrap_or_else(|e| panic!("{e}"));
    let (table, via, _) = table_behind(&proxy, "drop").await;
    // WHEN a conditional PutItem goes through
    let err = put(&via, &table, "a").await.err();
    // THEN the SDK retried after the reset, and its retry failed its own condition: the caller
    // is told "already exists" although its own first attempt wrote the item ("did it happen?")
    assert_eq!(err.as_deref(), Some("ConditionalCheckFailedException"));
    assert!(item_exists(&table, "a").await);
    assert_eq!((proxy.stats().requests(), proxy.stats().faults(Fault::DropAfterApply)), (2, 1));
    drop_table(&table).await;
}

#[tokio::test]
async fn the_fenced_resource_recognises_its_own_dropped_write() {
    // GIVEN the same drop-then-pass proxy in front of the chaos handler's resource table
    let plan = only(|p| p.drop_after_apply_permille = 500);
    let seed = seed_dropping_only_the_first(&plan);
    let proxy =
        Proxy::start(any_port(), &emulator::endpoint(), seed, plan).await.unwrap_or_else(|e| panic!("{e}"));
    let (table, via, _) = table_behind(&proxy, "fence").await;
    let store = EffectStore::new(via, &table);
    // WHEN the handler fences execution j@1 with token 4
    let got = store.fence("j@1", 4).await.unwrap_or_else(|e| panic!("{e}"));
    // THEN the lost answer is resolved from the stored token: it was this write
    assert_eq!(got, FenceOutcome::AcceptedOnRetry);
    // AND an older token is refused afterwards (through a calm proxy)
    proxy.set_plan(FaultPlan::CALM);
    assert_eq!(store.fence("j@1", 3).await.unwrap_or_else(|e| panic!("{e}")), FenceOutcome::Refused);
    let all = store.all().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].tokens, vec![4], "the dropped write was applied exactly once");
    drop_table(&table).await;
}

#[tokio::test]
async fn latency_delays_requests_without_failing_them() {
    // GIVEN a proxy that delays every request by up to 50 ms
    let plan = only(|p| {
        p.latency_permille = 1000;
        p.max_latency_ms = 50;
    });
    let proxy =
        Proxy::start(any_port(), &emulator::endpoint(), 15, plan).await.unwrap_or_else(|e| panic!("{e}"));
    let (table, via, _) = table_behind(&proxy, "lat").await;
    // WHEN two writes go through
    put(&via, &table, "a").await.unwrap_or_else(|e| panic!("{e}"));
    put(&via, &table, "b").await.unwrap_or_else(|e| panic!("{e}"));
    // THEN both were delayed and applied
    assert_eq!((proxy.stats().requests(), proxy.stats().delayed()), (2, 2));
    assert!(item_exists(&table, "b").await);
    drop_table(&table).await;
}

#[tokio::test]
async fn a_calm_proxy_is_transparent_for_sqs_round_trips() {
    let proxy = Proxy::start(any_port(), &emulator::endpoint(), 16, FaultPlan::CALM)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let via = aws_sdk_sqs::Client::new(&emulator::sdk_config(&proxy.endpoint()));
    let q = name("calm");
    let url = via
        .create_queue()
        .queue_name(&q)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{}", aws_sdk_sqs::error::DisplayErrorContext(e)))
        .queue_url
        .unwrap_or_default();
    via.send_message().queue_url(&url).message_body("hello").send().await.unwrap_or_else(|e| panic!("{e}"));
    let got = via
        .receive_message()
        .queue_url(&url)
        .wait_time_seconds(2)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .messages
        .unwrap_or_default();
    assert_eq!(got.first().and_then(|m| m.body.as_deref()), Some("hello"));
    assert_eq!(proxy.stats().snapshot().get("reset_before_forward"), Some(&0));
    let _ = via.delete_queue().queue_url(&url).send().await;
}
