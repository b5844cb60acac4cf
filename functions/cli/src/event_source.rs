//! The local run's event source (docs/events.md): a queue of the local tenant, tagged
//! `sundial-tenant`, fed to the same ingest handler the deployed `ingest` function runs. The loop
//! below stands in for Lambda's event source mapping: it receives a batch, hands it to the
//! handler as an SQS event, and deletes what the handler did not report as failed.
//!
//! `sundial events send` puts one event on such a queue (the local run's, or a tenant's own on
//! AWS): `{jobId, key?, params?, at?}`.

use anyhow::Context;
use aws_sdk_sqs::types::{MessageSystemAttributeName, QueueAttributeName};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::sync::Arc;
use sundial_api::ingest::{Ingest, IngestEvent};
use sundial_api::Api;
use sundial_core::config::{EventSource, EventSourceSettings};
use tokio_util::sync::CancellationToken;

/// The local run's event queue, after the table prefix: `{prefix}{tenant}-events`.
pub(crate) fn queue_name(prefix: &str, tenant: &str) -> String {
    format!("{prefix}{tenant}-events")
}

/// Creates the tenant's event queue (tagged for it) and returns its URL and the loop that feeds
/// it to the ingest handler until `stop`.
pub(crate) async fn start(
    api: Api,
    sqs: aws_sdk_sqs::Client,
    prefix: &str,
    tenant: &str,
    fast: bool,
    stop: CancellationToken,
) -> anyhow::Result<(String, impl std::future::Future<Output = ()>)> {
    let name = queue_name(prefix, tenant);
    let url = sqs
        .create_queue()
        .queue_name(&name)
        .tags("sundial-tenant", tenant)
        .send()
        .await
        .with_context(|| format!("creating the event queue {name}"))?
        .queue_url
        .context("CreateQueue returned no URL")?;
    // Tags of a queue that existed already are not changed by CreateQueue.
    sqs.tag_queue().queue_url(&url).tags("sundial-tenant", tenant).send().await?;
    let attrs = sqs
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await?;
    let arn = attrs
        .attributes()
        .and_then(|a| a.get(&QueueAttributeName::QueueArn))
        .cloned()
        .context("the event queue has no ARN")?;
    let sources = EventSourceSettings {
        sources: vec![EventSource { tenant: tenant.into(), queue_arn: Some(arn.clone()), bus: None }],
    };
    let ingest = Arc::new(Ingest::new(api, sources, sqs.clone()));
    let wait = if fast { 1 } else { 5 };
    let feed = feed(ingest, sqs, url.clone(), arn, wait, stop);
    Ok((url, feed))
}

/// Receive, ingest, delete: what Lambda's event source mapping does for the deployed function.
async fn feed(
    ingest: Arc<Ingest>,
    sqs: aws_sdk_sqs::Client,
    url: String,
    arn: String,
    wait: i32,
    stop: CancellationToken,
) {
    loop {
        let received = tokio::select! {
            _ = stop.cancelled() => return,
            r = sqs
                .receive_message()
                .queue_url(&url)
                .max_number_of_messages(10)
                .wait_time_seconds(wait)
                .visibility_timeout(30)
                .message_system_attribute_names(MessageSystemAttributeName::All)
                .send() => r,
        };
        let msgs = match received {
            Ok(o) => o.messages.unwrap_or_default(),
            Err(e) => {
                eprintln!("event queue: {}", aws_sdk_sqs::error::DisplayErrorContext(&e));
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                continue;
            }
        };
        if msgs.is_empty() {
            continue;
        }
        let records: Vec<Value> = msgs
            .iter()
            .map(|m| {
                let attrs: serde_json::Map<String, Value> = m
                    .attributes()
                    .map(|a| {
                        a.iter().map(|(k, v)| (k.as_str().to_string(), Value::String(v.clone()))).collect()
                    })
                    .unwrap_or_default();
                json!({
                    "messageId": m.message_id(), "receiptHandle": m.receipt_handle(), "body": m.body(),
                    "md5OfBody": m.md5_of_body(), "attributes": attrs, "messageAttributes": {},
                    "eventSource": "aws:sqs", "eventSourceARN": arn, "awsRegion": "us-east-1",
                })
            })
            .collect();
        let event: IngestEvent = match serde_json::from_value(json!({ "Records": records })) {
            Ok(e) => e,
            Err(e) => {
                eprintln!("event queue: a batch that is not an SQS event: {e}");
                continue;
            }
        };
        let failed: HashSet<String> = match ingest.handle(event).await {
            Ok(v) => v["batchItemFailures"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|f| f["itemIdentifier"].as_str().map(str::to_string))
                .collect(),
            Err(e) => {
                eprintln!("event queue: {e}");
                continue;
            }
        };
        for m in msgs.iter().filter(|m| !failed.contains(m.message_id().unwrap_or_default())) {
            if let Some(rh) = m.receipt_handle() {
                let _ = sqs.delete_message().queue_url(&url).receipt_handle(rh).send().await;
            }
        }
    }
}

/// `sundial events send`: one event on a tenant's event queue.
#[derive(clap::Args, Debug)]
pub(crate) struct SendArgs {
    /// The queue's URL (the local run prints its own).
    #[arg(long)]
    queue_url: String,
    /// The job the event fires.
    job_id: String,
    #[command(flatten)]
    event: crate::api_cmds::EventFields,
}

/// `sundial events …`.
#[derive(clap::Subcommand, Debug)]
pub(crate) enum EventsCmd {
    /// Put one event `{jobId, key?, params?, at?}` on a tenant's event queue (docs/events.md).
    Send(SendArgs),
}

/// Runs an `events` command. Against a loopback `AWS_ENDPOINT_URL` (the local run's emulator)
/// with dummy credentials; otherwise with the standard AWS credential chain.
pub(crate) async fn run(cmd: EventsCmd) -> anyhow::Result<()> {
    let EventsCmd::Send(a) = cmd;
    let crate::api_cmds::EventFields { key, params, at } = a.event;
    let mut body = serde_json::Map::new();
    body.insert("jobId".into(), Value::String(a.job_id.clone()));
    if let Some(k) = key {
        body.insert("key".into(), Value::String(k));
    }
    if let Some(p) = params {
        let v: Value = serde_json::from_str(&p).context("--params: not JSON")?;
        body.insert("params".into(), v);
    }
    if let Some(at) = at {
        chrono::DateTime::parse_from_rfc3339(&at).context("--at: not an RFC 3339 instant")?;
        body.insert("at".into(), Value::String(at));
    }
    let sqs = aws_sdk_sqs::Client::new(&sdk_config().await);
    let out = sqs
        .send_message()
        .queue_url(&a.queue_url)
        .message_body(Value::Object(body).to_string())
        .send()
        .await
        .map_err(|e| anyhow::anyhow!("{}", aws_sdk_sqs::error::DisplayErrorContext(&e)))?;
    println!("sent message {} for job {}", out.message_id().unwrap_or_default(), a.job_id);
    Ok(())
}

async fn sdk_config() -> aws_config::SdkConfig {
    match std::env::var("AWS_ENDPOINT_URL").ok().filter(|ep| crate::local_aws::is_loopback(ep)) {
        Some(ep) => crate::local_aws::sdk_config(&ep),
        None => aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await,
    }
}
