//! Emulator fitness: the local emulator must behave like AWS where Sundial's correctness
//! depends on it. Plain moto fails both checks below (lost conditional updates, duplicate SQS
//! deliveries under concurrent consumers); `localstack/sundial_emulator.py` serialises requests
//! to fix that. `localstack/check-lock.sh` runs this test against an emulator with the lock
//! turned off and expects it to FAIL, proving the test can catch the problem. MiniStack passes
//! as shipped (one asyncio loop runs each request to the end, docs/emulators.md); `scripts/test.sh`
//! runs this test against both emulators.

use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::HashSet;
use std::sync::Arc;
use sundial_tests::TestEnv;
use tokio::sync::Mutex;

const CLIENTS: usize = 8;
const INCREMENTS_EACH: usize = 40;
const MESSAGES: usize = 300;
const CONSUMERS: usize = 8;

#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn concurrent_read_then_cas_increments_lose_no_update() -> anyhow::Result<()> {
    // GIVEN one counter item and 8 independent clients
    let env = TestEnv::new("fitness-cas").await?;
    let table = env.cfg.jobs_table.clone();
    let key = |c: &aws_sdk_dynamodb::operation::get_item::builders::GetItemFluentBuilder| {
        c.clone().key("pk", AttributeValue::S("counter".into())).key("sk", AttributeValue::S("c".into()))
    };
    env.clients
        .ddb
        .put_item()
        .table_name(&table)
        .item("pk", AttributeValue::S("counter".into()))
        .item("sk", AttributeValue::S("c".into()))
        .item("n", AttributeValue::N("0".into()))
        .send()
        .await?;

    // WHEN each does read-then-conditional-write increments, retrying on conflict
    let mut tasks = Vec::new();
    for _ in 0..CLIENTS {
        let ddb = sundial_tests::clients().ddb; // a separate client (connection pool) per worker
        let table = table.clone();
        tasks.push(tokio::spawn(async move {
            let mut won = 0usize;
            while won < INCREMENTS_EACH {
                let got = key(&ddb.get_item().table_name(&table).consistent_read(true)).send().await?;
                let n: u64 =
                    got.item().and_then(|i| i.get("n")).and_then(|v| v.as_n().ok()).unwrap().parse()?;
                let put = ddb
                    .update_item()
                    .table_name(&table)
                    .key("pk", AttributeValue::S("counter".into()))
                    .key("sk", AttributeValue::S("c".into()))
                    .update_expression("SET n = :new")
                    .condition_expression("n = :old")
                    .expression_attribute_values(":new", AttributeValue::N((n + 1).to_string()))
                    .expression_attribute_values(":old", AttributeValue::N(n.to_string()))
                    .send()
                    .await;
                match put {
                    Ok(_) => won += 1,
                    Err(e)
                        if e.as_service_error()
                            .is_some_and(|s| s.is_conditional_check_failed_exception()) => {}
                    Err(e) => return Err(anyhow::Error::from(e)),
                }
            }
            anyhow::Ok(won)
        }));
    }
    let mut successes = 0;
    for t in tasks {
        successes += t.await??;
    }

    // THEN every successful CAS is reflected: no lost update
    let got = key(&env.clients.ddb.get_item().table_name(&table).consistent_read(true)).send().await?;
    let n: usize = got.item().and_then(|i| i.get("n")).and_then(|v| v.as_n().ok()).unwrap().parse()?;
    assert_eq!(successes, CLIENTS * INCREMENTS_EACH);
    assert_eq!(
        n, successes,
        "{} successful conditional writes but the counter says {n}: lost updates",
        successes
    );
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn concurrent_sqs_consumers_see_no_duplicate_while_visibility_holds() -> anyhow::Result<()> {
    // GIVEN a queue with 160 messages
    let env = TestEnv::new("fitness-sqs").await?;
    let url = env.queue_url("default").to_string();
    for chunk in (0..MESSAGES).collect::<Vec<_>>().chunks(10) {
        let mut req = env.clients.sqs.send_message_batch().queue_url(&url);
        for i in chunk {
            req = req.entries(
                aws_sdk_sqs::types::SendMessageBatchRequestEntry::builder()
                    .id(format!("m{i}"))
                    .message_body(format!("{i}"))
                    .build()?,
            );
        }
        req.send().await?;
    }

    // WHEN 8 consumers receive with a long visibility timeout until the queue is drained
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut tasks = Vec::new();
    for _ in 0..CONSUMERS {
        let sqs = sundial_tests::clients().sqs;
        let (url, seen) = (url.clone(), seen.clone());
        tasks.push(tokio::spawn(async move {
            let mut empty = 0;
            while empty < 3 {
                let out = sqs
                    .receive_message()
                    .queue_url(&url)
                    .max_number_of_messages(10)
                    .visibility_timeout(120)
                    .wait_time_seconds(1)
                    .send()
                    .await?;
                let msgs = out.messages();
                if msgs.is_empty() {
                    empty += 1;
                    continue;
                }
                empty = 0;
                let mut s = seen.lock().await;
                for m in msgs {
                    s.push(m.body().unwrap_or_default().to_string());
                }
            }
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }

    // THEN each message was received exactly once
    let seen = seen.lock().await;
    let unique: HashSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), MESSAGES, "not every message was received");
    assert_eq!(
        seen.len(),
        MESSAGES,
        "{} deliveries of {} messages: duplicates while visibility held",
        seen.len(),
        MESSAGES
    );
    env.cleanup().await;
    Ok(())
}
