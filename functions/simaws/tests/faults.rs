//! Each fault does what `Faults` says, only for the process it is aimed at, and is counted.

use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue as Av, KeySchemaElement, KeyType, ScalarAttributeType,
};
use sundial_simaws::{Aws, Faults};

async fn table(ddb: &aws_sdk_dynamodb::Client) {
    let ad =
        AttributeDefinition::builder().attribute_name("pk").attribute_type(ScalarAttributeType::S).build();
    let ks = KeySchemaElement::builder().attribute_name("pk").key_type(KeyType::Hash).build();
    let (ad, ks) = (ad.unwrap_or_else(|e| panic!("{e}")), ks.unwrap_or_else(|e| panic!("{e}")));
    ddb.create_table()
        .table_name("t")
        .attribute_definitions(ad)
        .key_schema(ks)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
}

fn put(
    ddb: &aws_sdk_dynamodb::Client,
    pk: &str,
) -> aws_sdk_dynamodb::operation::put_item::builders::PutItemFluentBuilder {
    ddb.put_item()
        .table_name("t")
        .item("pk", Av::S(pk.into()))
        .condition_expression("attribute_not_exists(pk)")
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn throttles_and_server_errors_reject_before_applying() {
    let aws = Aws::new(3, 0);
    let ddb = aws_sdk_dynamodb::Client::new(&aws.sdk_config());
    table(&ddb).await;
    aws.set_faults(Faults { throttle: 1.0, ..Default::default() });
    let e = put(&ddb, "a").send().await.err().map(|e| e.code().map(str::to_string));
    let code = e.flatten().unwrap_or_default();
    assert!(code == "ThrottlingException" || code == "ProvisionedThroughputExceededException", "{code}");
    aws.set_faults(Faults { server_error: 1.0, ..Default::default() });
    assert!(put(&ddb, "a").send().await.is_err());
    aws.set_faults(Faults::default());
    assert!(aws.items("t").is_empty(), "a rejected request applied");
    assert!(
        aws.stats().faults["throttle"] >= 3,
        "the SDK retried the throttled put: {:?}",
        aws.stats().faults
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_lost_response_applies_and_the_retry_sees_its_own_write() {
    let aws = Aws::new(3, 0);
    let ddb = aws_sdk_dynamodb::Client::new(&aws.sdk_config());
    table(&ddb).await;
    // Only the first attempt's response is lost: a seed whose first draw is under 0.5.
    aws.set_faults(Faults { lost_response: 0.5, ..Default::default() });
    let mut lost_first = None;
    for i in 0..20 {
        let before = aws.stats().faults.get("lost_response").copied().unwrap_or(0);
        let r = put(&ddb, &format!("k{i}")).send().await;
        let lost = aws.stats().faults.get("lost_response").copied().unwrap_or(0) > before;
        if lost {
            lost_first = Some(r.err().and_then(|e| e.code().map(str::to_string)));
            break;
        }
    }
    let code = lost_first.unwrap_or_else(|| panic!("no response was lost in 20 puts"));
    assert!(
        code.as_deref() == Some("ConditionalCheckFailedException") || code.is_none(),
        "a conditional put whose response was lost either failed on its own write or every retry was lost too: {code:?}"
    );
    assert!(!aws.items("t").is_empty());
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn sqs_faults_lose_duplicate_delay_and_take_sqs_down_for_the_aimed_process_only() {
    let aws = Aws::new(9, 0);
    let sqs = aws_sdk_sqs::Client::new(&aws.sdk_config_for("tick"));
    let other = aws_sdk_sqs::Client::new(&aws.sdk_config_for("worker"));
    let url = sqs
        .create_queue()
        .queue_name("q")
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .queue_url
        .unwrap_or_default();
    let depth = |aws: &Aws| aws.queues().iter().map(|q| q.visible + q.in_flight + q.delayed).sum::<usize>();
    aws.set_faults(Faults { sqs_lose_on_send: 1.0, only_process: Some("tick".into()), ..Default::default() });
    assert!(
        sqs.send_message().queue_url(&url).message_body("x").send().await.is_ok(),
        "a lost send reports success"
    );
    assert_eq!(depth(&aws), 0, "the lost message is not queued");
    other.send_message().queue_url(&url).message_body("y").send().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(depth(&aws), 1, "faults aimed at tick leave the worker alone");
    aws.set_faults(Faults { sqs_duplicate: 1.0, ..Default::default() });
    let got = other.receive_message().queue_url(&url).send().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(got.messages().len(), 1);
    let again = other.receive_message().queue_url(&url).send().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again.messages().first().and_then(|m| m.body()), Some("y"), "the receive left a visible copy");
    aws.set_faults(Faults { sqs_extra_delay_ms: (1.0, 5_000), ..Default::default() });
    other.send_message().queue_url(&url).message_body("z").send().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(aws.queues()[0].delayed <= 1);
    aws.set_faults(Faults { sqs_down: true, ..Default::default() });
    assert!(other.send_message().queue_url(&url).message_body("w").send().await.is_err(), "SQS is down");
    let ddb = aws_sdk_dynamodb::Client::new(&aws.sdk_config());
    assert!(ddb.list_tables().send().await.is_ok(), "DynamoDB works while SQS is down");
    let f = aws.stats().faults;
    for kind in ["sqs_lose_on_send", "sqs_duplicate", "sqs_extra_delay", "sqs_down"] {
        assert!(f.get(kind).is_some_and(|n| *n > 0), "{kind} not counted: {f:?}");
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn latency_is_slept_in_simulated_time() {
    let aws = Aws::new(4, 0);
    let ddb = aws_sdk_dynamodb::Client::new(&aws.sdk_config());
    aws.set_faults(Faults { latency_ms: 1_000, ..Default::default() });
    let t0 = aws.now_ms();
    for _ in 0..10 {
        ddb.list_tables().send().await.unwrap_or_else(|e| panic!("{e}"));
    }
    let spent = aws.now_ms() - t0;
    assert!(
        (1_000..=10_000).contains(&spent),
        "10 requests of up to 1 s latency took {spent} ms of simulated time"
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn batch_get_leaves_keys_unprocessed_for_the_caller_to_retry() {
    use aws_sdk_dynamodb::types::KeysAndAttributes;
    use std::collections::HashMap;
    let aws = Aws::new(8, 0);
    let ddb = aws_sdk_dynamodb::Client::new(&aws.sdk_config());
    table(&ddb).await;
    for i in 0..20 {
        put(&ddb, &format!("k{i}")).send().await.unwrap_or_else(|e| panic!("{e}"));
    }
    aws.set_faults(Faults { ddb_unprocessed: 0.5, ..Default::default() });
    let key = |i: usize| HashMap::from([("pk".to_string(), Av::S(format!("k{i}")))]);
    let mut request = Some(
        KeysAndAttributes::builder()
            .set_keys(Some((0..20).map(key).collect()))
            .build()
            .unwrap_or_else(|e| panic!("{e}")),
    );
    let (mut found, mut rounds) = (0, 0);
    while let Some(keys) = request.take() {
        let out =
            ddb.batch_get_item().request_items("t", keys).send().await.unwrap_or_else(|e| panic!("{e}"));
        found += out.responses().and_then(|r| r.get("t")).map_or(0, Vec::len);
        request = out.unprocessed_keys().and_then(|u| u.get("t")).cloned();
        rounds += 1;
    }
    assert_eq!(found, 20, "every key was read once in all");
    assert!(rounds > 1, "half the keys left unprocessed took more than one round");
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_lagging_index_answers_with_what_it_held() {
    use aws_sdk_dynamodb::types::{GlobalSecondaryIndex, Projection, ProjectionType};
    let aws = Aws::new(2, 0);
    let ddb = aws_sdk_dynamodb::Client::new(&aws.sdk_config());
    let ad = |n: &str| {
        AttributeDefinition::builder().attribute_name(n).attribute_type(ScalarAttributeType::S).build()
    };
    let ks = |n: &str| KeySchemaElement::builder().attribute_name(n).key_type(KeyType::Hash).build();
    let gsi = GlobalSecondaryIndex::builder()
        .index_name("byG")
        .key_schema(ks("g").unwrap_or_else(|e| panic!("{e}")))
        .projection(Projection::builder().projection_type(ProjectionType::All).build())
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    ddb.create_table()
        .table_name("t")
        .attribute_definitions(ad("pk").unwrap_or_else(|e| panic!("{e}")))
        .attribute_definitions(ad("g").unwrap_or_else(|e| panic!("{e}")))
        .key_schema(ks("pk").unwrap_or_else(|e| panic!("{e}")))
        .global_secondary_indexes(gsi)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let in_index = |g: &'static str| {
        let ddb = ddb.clone();
        async move {
            let out = ddb
                .query()
                .table_name("t")
                .index_name("byG")
                .key_condition_expression("g = :g")
                .expression_attribute_values(":g", Av::S(g.into()))
                .send()
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            out.items()
                .iter()
                .filter_map(|i| i.get("v").and_then(|v| v.as_s().ok()).cloned())
                .collect::<Vec<_>>()
        }
    };
    let write = |g: &str, v: &str| {
        ddb.put_item()
            .table_name("t")
            .item("pk", Av::S("a".into()))
            .item("g", Av::S(g.into()))
            .item("v", Av::S(v.into()))
            .send()
    };
    write("open", "1").await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(in_index("open").await, ["1"], "consistent by default");
    aws.set_faults(Faults { gsi_lag_ms: 1_000, ..Default::default() });
    write("done", "2").await.unwrap_or_else(|e| panic!("{e}"));
    tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    let (open, done) = (in_index("open").await, in_index("done").await);
    assert!(
        open == ["1"] && done.is_empty() || open.is_empty() && done == ["2"],
        "a lagging index is old or new, never mixed: {open:?} {done:?}"
    );
    tokio::time::sleep(std::time::Duration::from_millis(1_001)).await;
    assert!(in_index("open").await.is_empty(), "the lag passed");
    assert_eq!(in_index("done").await, ["2"]);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_stalled_process_reaches_aws_only_when_it_wakes_and_others_go_on() {
    let aws = Aws::new(5, 1_000_000);
    let frozen = aws_sdk_dynamodb::Client::new(&aws.sdk_config_for("w1.0"));
    let other = aws_sdk_dynamodb::Client::new(&aws.sdk_config_for("w2.0"));
    table(&other).await;
    let writes = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = writes.clone();
    aws.on_write(std::sync::Arc::new(move |w: &sundial_simaws::AppliedWrite| {
        seen.lock().unwrap_or_else(|p| p.into_inner()).push(w.clone());
    }));
    let wake = aws.now_ms() + 60_000;
    aws.stall("w1.", wake);
    put(&other, "b").send().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(aws.now_ms() < wake, "a process that is not stalled waited");
    put(&frozen, "a").send().await.unwrap_or_else(|e| panic!("{e}"));
    let w = writes.lock().unwrap_or_else(|p| p.into_inner()).clone();
    assert_eq!(w.len(), 2, "{w:?}");
    assert_eq!((w[0].process.as_deref(), w[1].process.as_deref()), (Some("w2.0"), Some("w1.0")));
    assert!(w[1].at_ms >= wake, "the stalled put applied at {} before its wake at {wake}", w[1].at_ms);
    assert!(w[1].old.is_none() && w[1].new.as_ref().is_some_and(|i| i["pk"]["S"] == "a"));
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_delete_hook_sees_the_deleted_body_who_deleted_it_and_what_is_still_live() {
    let aws = Aws::new(5, 0);
    let sqs = aws_sdk_sqs::Client::new(&aws.sdk_config_for("w1.0"));
    let url = sqs.create_queue().queue_name("q").send().await.unwrap_or_else(|e| panic!("{e}")).queue_url;
    let url = url.unwrap_or_default();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let s = seen.clone();
    aws.on_delete(std::sync::Arc::new(
        move |p: Option<&str>, body: &str, live: &mut dyn Iterator<Item = &str>, _now: i64| {
            let live: Vec<String> = live.map(str::to_string).collect();
            s.lock().unwrap_or_else(|p| p.into_inner()).push((p.map(str::to_string), body.to_string(), live));
        },
    ));
    for b in ["one", "two"] {
        sqs.send_message().queue_url(&url).message_body(b).send().await.unwrap_or_else(|e| panic!("{e}"));
    }
    let got = sqs.receive_message().queue_url(&url).max_number_of_messages(1).send().await;
    let m = got.unwrap_or_else(|e| panic!("{e}")).messages.unwrap_or_default().remove(0);
    let handle = m.receipt_handle.unwrap_or_default();
    sqs.delete_message()
        .queue_url(&url)
        .receipt_handle(&handle)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // A stale handle deletes nothing, and the hook hears nothing of it.
    sqs.delete_message()
        .queue_url(&url)
        .receipt_handle(&handle)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let seen = seen.lock().unwrap_or_else(|p| p.into_inner()).clone();
    assert_eq!(seen.len(), 1, "{seen:?}");
    let (who, body, live) = &seen[0];
    assert_eq!(who.as_deref(), Some("w1.0"));
    assert_eq!(body, "one");
    assert_eq!(live, &vec!["two".to_string()]);
}
