//! SQS cases: delays, visibility and redelivery with receive counts, visibility changes,
//! batches with per-entry results, redrive to a DLQ, queue attribute counts, long polls.
//! Waits are tokio sleeps: simulated time on the simulator, real (a few seconds) on emulators.

use super::{ensure, fail, Outcome};
use aws_sdk_sqs::error::ProvideErrorMetadata;
use aws_sdk_sqs::types::{
    DeleteMessageBatchRequestEntry, MessageSystemAttributeName, QueueAttributeName,
    SendMessageBatchRequestEntry,
};
use aws_sdk_sqs::Client;
use std::future::Future;
use std::time::Duration;

/// Runs `body` on a fresh queue (with `attrs`), then deletes it whatever happened.
async fn with_queue<'a, F, Fut>(
    sdk: &'a aws_config::SdkConfig,
    name: &str,
    attrs: &[(QueueAttributeName, String)],
    body: F,
) -> Outcome
where
    F: FnOnce(Client, String) -> Fut,
    Fut: Future<Output = Outcome> + 'a,
{
    let sqs = Client::new(sdk);
    let mut req = sqs.create_queue().queue_name(name);
    for (k, v) in attrs {
        req = req.attributes(k.clone(), v);
    }
    let url =
        req.send().await.map_err(fail("CreateQueue"))?.queue_url.ok_or("CreateQueue returned no URL")?;
    let out = body(sqs.clone(), url.clone()).await;
    let _ = sqs.delete_queue().queue_url(&url).send().await;
    out
}

async fn receive(
    sqs: &Client,
    url: &str,
    max: i32,
    visibility: Option<i32>,
) -> Result<Vec<aws_sdk_sqs::types::Message>, String> {
    let out = sqs
        .receive_message()
        .queue_url(url)
        .max_number_of_messages(max)
        .set_visibility_timeout(visibility)
        .message_system_attribute_names(MessageSystemAttributeName::All)
        .wait_time_seconds(0)
        .send()
        .await
        .map_err(fail("ReceiveMessage"))?;
    Ok(out.messages.unwrap_or_default())
}

fn receive_count(m: &aws_sdk_sqs::types::Message) -> Option<u32> {
    m.attributes()?.get(&MessageSystemAttributeName::ApproximateReceiveCount)?.parse().ok()
}

async fn counts(sqs: &Client, url: &str) -> Result<(u64, u64, u64), String> {
    let out = sqs
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::All)
        .send()
        .await
        .map_err(fail("GetQueueAttributes"))?;
    let get = |k: QueueAttributeName| {
        out.attributes().and_then(|a| a.get(&k)).and_then(|v| v.parse().ok()).unwrap_or(u64::MAX)
    };
    Ok((
        get(QueueAttributeName::ApproximateNumberOfMessages),
        get(QueueAttributeName::ApproximateNumberOfMessagesNotVisible),
        get(QueueAttributeName::ApproximateNumberOfMessagesDelayed),
    ))
}

pub(super) async fn delay(sdk: &aws_config::SdkConfig, prefix: &str) -> Outcome {
    with_queue(sdk, &format!("{prefix}q"), &[], |sqs, url| async move {
        sqs.send_message()
            .queue_url(&url)
            .message_body("later")
            .delay_seconds(2)
            .send()
            .await
            .map_err(fail("SendMessage"))?;
        ensure!(
            receive(&sqs, &url, 10, None).await?.is_empty(),
            "a message delayed 2 s was received at once"
        );
        let (visible, _, delayed) = counts(&sqs, &url).await?;
        ensure!(visible == 0 && delayed == 1, "delayed message counted visible {visible}, delayed {delayed}");
        tokio::time::sleep(Duration::from_millis(2_500)).await;
        let got = receive(&sqs, &url, 10, None).await?;
        ensure!(
            got.len() == 1 && got[0].body() == Some("later"),
            "after its delay the message was not received: {got:?}"
        );
        Ok(())
    })
    .await
}

pub(super) async fn visibility_and_redelivery(sdk: &aws_config::SdkConfig, prefix: &str) -> Outcome {
    with_queue(sdk, &format!("{prefix}q"), &[], |sqs, url| async move {
        sqs.send_message().queue_url(&url).message_body("m").send().await.map_err(fail("SendMessage"))?;
        let first = receive(&sqs, &url, 1, Some(1)).await?;
        ensure!(first.len() == 1 && receive_count(&first[0]) == Some(1), "first receive: {first:?}");
        let (_, in_flight, _) = counts(&sqs, &url).await?;
        ensure!(in_flight == 1, "a received message is not counted in flight ({in_flight})");
        ensure!(receive(&sqs, &url, 1, None).await?.is_empty(), "a message in flight was received again");
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        let again = receive(&sqs, &url, 1, Some(30)).await?;
        ensure!(again.len() == 1, "the message did not come back after its visibility timeout");
        ensure!(again[0].message_id() == first[0].message_id(), "redelivery changed the message id");
        ensure!(
            receive_count(&again[0]) == Some(2),
            "ApproximateReceiveCount after redelivery: {:?}",
            receive_count(&again[0])
        );
        ensure!(
            again[0].receipt_handle() != first[0].receipt_handle(),
            "redelivery reused the receipt handle"
        );
        let handle = again[0].receipt_handle().unwrap_or_default();
        sqs.delete_message()
            .queue_url(&url)
            .receipt_handle(handle)
            .send()
            .await
            .map_err(fail("DeleteMessage"))?;
        let (v, f, d) = counts(&sqs, &url).await?;
        ensure!((v, f, d) == (0, 0, 0), "after the delete the queue holds {v}/{f}/{d}");
        Ok(())
    })
    .await
}

pub(super) async fn change_visibility(sdk: &aws_config::SdkConfig, prefix: &str) -> Outcome {
    with_queue(sdk, &format!("{prefix}q"), &[], |sqs, url| async move {
        sqs.send_message().queue_url(&url).message_body("m").send().await.map_err(fail("SendMessage"))?;
        let got = receive(&sqs, &url, 1, Some(300)).await?;
        let handle = got.first().and_then(|m| m.receipt_handle()).ok_or("nothing received")?;
        sqs.change_message_visibility()
            .queue_url(&url)
            .receipt_handle(handle)
            .visibility_timeout(0)
            .send()
            .await
            .map_err(fail("ChangeMessageVisibility"))?;
        let again = receive(&sqs, &url, 1, Some(300)).await?;
        ensure!(again.len() == 1, "visibility 0 did not make the message receivable again");
        ensure!(
            receive_count(&again[0]) == Some(2),
            "receive count after a visibility change: {:?}",
            receive_count(&again[0])
        );
        Ok(())
    })
    .await
}

fn entry(id: &str, body: &str) -> Result<SendMessageBatchRequestEntry, String> {
    SendMessageBatchRequestEntry::builder()
        .id(id)
        .message_body(body)
        .build()
        .map_err(fail("SendMessageBatchRequestEntry"))
}

pub(super) async fn batches(sdk: &aws_config::SdkConfig, prefix: &str) -> Outcome {
    with_queue(sdk, &format!("{prefix}q"), &[], |sqs, url| async move {
        let out = sqs
            .send_message_batch()
            .queue_url(&url)
            .entries(entry("a", "1")?)
            .entries(entry("b", "2")?)
            .entries(entry("c", "3")?)
            .send()
            .await
            .map_err(fail("SendMessageBatch"))?;
        let mut ok: Vec<&str> = out.successful().iter().map(|s| s.id()).collect();
        ok.sort();
        ensure!(
            ok == ["a", "b", "c"] && out.failed().is_empty(),
            "batch send: ok {ok:?}, failed {:?}",
            out.failed()
        );
        let e = sqs
            .send_message_batch()
            .queue_url(&url)
            .entries(entry("a", "1")?)
            .entries(entry("a", "2")?)
            .send()
            .await
            .err()
            .ok_or("a batch with repeated ids was accepted")?;
        ensure!(
            e.code() == Some("AWS.SimpleQueueService.BatchEntryIdsNotDistinct")
                || e.code() == Some("BatchEntryIdsNotDistinct"),
            "repeated ids: {:?}",
            e.code()
        );
        let got = receive(&sqs, &url, 10, Some(60)).await?;
        ensure!(got.len() == 3, "received {} of 3 batch-sent messages", got.len());
        let mut del = sqs.delete_message_batch().queue_url(&url);
        for (i, m) in got.iter().enumerate() {
            let e = DeleteMessageBatchRequestEntry::builder()
                .id(format!("d{i}"))
                .receipt_handle(m.receipt_handle().unwrap_or_default())
                .build()
                .map_err(fail("DeleteMessageBatchRequestEntry"))?;
            del = del.entries(e);
        }
        let out = del.send().await.map_err(fail("DeleteMessageBatch"))?;
        ensure!(
            out.successful().len() == 3 && out.failed().is_empty(),
            "batch delete: {} ok, failed {:?}",
            out.successful().len(),
            out.failed()
        );
        Ok(())
    })
    .await
}

pub(super) async fn redrive_to_dlq(sdk: &aws_config::SdkConfig, prefix: &str) -> Outcome {
    with_queue(sdk, &format!("{prefix}dlq"), &[], |sqs, dlq_url| async move {
        let dlq = sqs
            .get_queue_attributes()
            .queue_url(&dlq_url)
            .attribute_names(QueueAttributeName::QueueArn)
            .send()
            .await
            .map_err(fail("GetQueueAttributes"))?;
        let arn = dlq
            .attributes()
            .and_then(|a| a.get(&QueueAttributeName::QueueArn))
            .cloned()
            .ok_or("the DLQ has no QueueArn")?;
        let policy = serde_json::json!({ "deadLetterTargetArn": arn, "maxReceiveCount": 2 }).to_string();
        let attrs = [(QueueAttributeName::RedrivePolicy, policy)];
        let sdk2 = sdk;
        with_queue(sdk2, &format!("{prefix}q"), &attrs, |sqs, url| async move {
            sqs.send_message()
                .queue_url(&url)
                .message_body("poison")
                .send()
                .await
                .map_err(fail("SendMessage"))?;
            for n in 1..=2 {
                let got = receive(&sqs, &url, 1, Some(0)).await?;
                ensure!(
                    got.len() == 1 && receive_count(&got[0]) == Some(n),
                    "receive {n} before the redrive: {got:?}"
                );
            }
            let got = receive(&sqs, &url, 1, Some(0)).await?;
            ensure!(got.is_empty(), "a message past maxReceiveCount 2 was delivered a third time");
            let dead = receive(&sqs, &dlq_url, 1, None).await?;
            ensure!(dead.len() == 1 && dead[0].body() == Some("poison"), "the DLQ holds {dead:?}");
            Ok(())
        })
        .await
    })
    .await
}

pub(super) async fn queue_attributes(sdk: &aws_config::SdkConfig, prefix: &str) -> Outcome {
    let attrs = [(QueueAttributeName::VisibilityTimeout, "45".to_string())];
    with_queue(sdk, &format!("{prefix}q"), &attrs, |sqs, url| async move {
        for b in ["1", "2", "3"] {
            sqs.send_message().queue_url(&url).message_body(b).send().await.map_err(fail("SendMessage"))?;
        }
        ensure!(receive(&sqs, &url, 1, None).await?.len() == 1, "nothing received");
        let (v, f, d) = counts(&sqs, &url).await?;
        ensure!((v, f, d) == (2, 1, 0), "visible/in flight/delayed = {v}/{f}/{d}, want 2/1/0");
        let out = sqs
            .get_queue_attributes()
            .queue_url(&url)
            .attribute_names(QueueAttributeName::All)
            .send()
            .await
            .map_err(fail("GetQueueAttributes"))?;
        let a = out.attributes().ok_or("no attributes")?;
        ensure!(
            a.get(&QueueAttributeName::VisibilityTimeout).map(String::as_str) == Some("45"),
            "VisibilityTimeout: {:?}",
            a.get(&QueueAttributeName::VisibilityTimeout)
        );
        let arn = a.get(&QueueAttributeName::QueueArn).cloned().unwrap_or_default();
        ensure!(arn.starts_with("arn:aws:sqs:") && arn.ends_with(&format!(":{prefix}q")), "QueueArn {arn}");
        let found =
            sqs.get_queue_url().queue_name(format!("{prefix}q")).send().await.map_err(fail("GetQueueUrl"))?;
        ensure!(
            found.queue_url() == Some(url.as_str()),
            "GetQueueUrl {:?} vs CreateQueue {url}",
            found.queue_url()
        );
        let e = sqs
            .get_queue_url()
            .queue_name(format!("{prefix}none"))
            .send()
            .await
            .err()
            .ok_or("GetQueueUrl found a missing queue")?;
        let code = e.code().unwrap_or_default();
        ensure!(
            code.contains("NonExistentQueue") || code.contains("QueueDoesNotExist"),
            "missing queue: {code}"
        );
        Ok(())
    })
    .await
}

pub(super) async fn long_poll_returns_on_arrival(sdk: &aws_config::SdkConfig, prefix: &str) -> Outcome {
    with_queue(sdk, &format!("{prefix}q"), &[], |sqs, url| async move {
        let sender = sqs.clone();
        let to = url.clone();
        let send = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(1_000)).await;
            sender.send_message().queue_url(&to).message_body("late").send().await.map(|_| ())
        });
        let start = tokio::time::Instant::now();
        let out = sqs
            .receive_message()
            .queue_url(&url)
            .wait_time_seconds(10)
            .send()
            .await
            .map_err(fail("ReceiveMessage"))?;
        let waited = start.elapsed();
        send.await.map_err(|e| format!("sender task: {e}"))?.map_err(fail("SendMessage"))?;
        ensure!(out.messages().len() == 1, "a 10 s long poll returned {} messages", out.messages().len());
        ensure!(
            waited >= Duration::from_millis(900) && waited < Duration::from_secs(8),
            "the long poll returned after {waited:?}"
        );
        Ok(())
    })
    .await
}

/// Message attributes come back by name; ten at most per receive.
pub(super) async fn attributes_and_receive_limit(sdk: &aws_config::SdkConfig, prefix: &str) -> Outcome {
    with_queue(sdk, &format!("{prefix}q"), &[], |sqs, url| async move {
        let attr = aws_sdk_sqs::types::MessageAttributeValue::builder()
            .data_type("String")
            .string_value("acme")
            .build()
            .map_err(fail("MessageAttributeValue"))?;
        sqs.send_message()
            .queue_url(&url)
            .message_body("a")
            .message_attributes("tenant", attr)
            .send()
            .await
            .map_err(fail("SendMessage"))?;
        let out = sqs
            .receive_message()
            .queue_url(&url)
            .message_attribute_names("tenant")
            .visibility_timeout(0)
            .send()
            .await
            .map_err(fail("ReceiveMessage"))?;
        let m = out.messages().first().ok_or("nothing received")?;
        let tenant = m.message_attributes().and_then(|a| a.get("tenant")).and_then(|v| v.string_value());
        ensure!(tenant == Some("acme"), "message attribute tenant: {tenant:?}");
        let handle = m.receipt_handle().unwrap_or_default();
        sqs.delete_message()
            .queue_url(&url)
            .receipt_handle(handle)
            .send()
            .await
            .map_err(fail("DeleteMessage"))?;
        for i in 0..12 {
            sqs.send_message()
                .queue_url(&url)
                .message_body(format!("m{i}"))
                .send()
                .await
                .map_err(fail("SendMessage"))?;
        }
        let got = receive(&sqs, &url, 10, Some(60)).await?;
        ensure!(!got.is_empty() && got.len() <= 10, "MaxNumberOfMessages 10 returned {}", got.len());
        Ok(())
    })
    .await
}

/// A delete with a receipt handle older than the message's latest receive is accepted, as SQS
/// documents ("the request succeeds, but the message might not be deleted"); the latest handle
/// deletes.
pub(super) async fn stale_receipt_delete(sdk: &aws_config::SdkConfig, prefix: &str) -> Outcome {
    with_queue(sdk, &format!("{prefix}q"), &[], |sqs, url| async move {
        sqs.send_message().queue_url(&url).message_body("m").send().await.map_err(fail("SendMessage"))?;
        let first = receive(&sqs, &url, 1, Some(0)).await?;
        let stale = first.first().and_then(|m| m.receipt_handle()).ok_or("nothing received")?.to_string();
        let again = receive(&sqs, &url, 1, Some(30)).await?;
        ensure!(again.len() == 1, "a message with visibility 0 was not received again");
        sqs.delete_message()
            .queue_url(&url)
            .receipt_handle(&stale)
            .send()
            .await
            .map_err(fail("DeleteMessage with a stale handle"))?;
        let fresh = again[0].receipt_handle().unwrap_or_default();
        sqs.delete_message()
            .queue_url(&url)
            .receipt_handle(fresh)
            .send()
            .await
            .map_err(fail("DeleteMessage"))?;
        let (v, f, d) = counts(&sqs, &url).await?;
        ensure!((v, f, d) == (0, 0, 0), "after a delete with the latest handle the queue holds {v}/{f}/{d}");
        Ok(())
    })
    .await
}
