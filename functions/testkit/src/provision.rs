//! Creates Sundial's tables, indexes and per-pool queues (with their low lanes and DLQs) from [`sundial_model::resources`].
//! The table calls themselves are [`sundial_store::tables`]'s; this module orders them (create,
//! wait until ACTIVE, enable TTL) and creates the queues.
//!
//! Used by the local run, the tests and the benches against the emulator. On AWS the CDK
//! construct creates the same resources from the same `resources.json`. Every step is idempotent:
//! provisioning twice changes nothing.

use aws_sdk_sqs::types::QueueAttributeName;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use sundial_core::config::Config;
use sundial_model::resources::{Resources, TableDef};
use sundial_store::tables::{self, TableError};

/// A provisioning step failed.
#[derive(Debug, thiserror::Error)]
pub enum ProvisionError {
    /// DynamoDB refused a table operation.
    #[error("creating table {table}: {source}")]
    Table {
        /// The table.
        table: String,
        /// The SDK error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// SQS refused a queue operation.
    #[error("creating queue {queue}: {source}")]
    Queue {
        /// The queue.
        queue: String,
        /// The SDK error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A table did not become ACTIVE in time.
    #[error("table {0} did not become ACTIVE")]
    NotActive(String),
}

/// URLs and ARNs of one pool's queues.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolQueues {
    /// The pool queue.
    pub url: String,
    /// The pool queue's ARN.
    pub arn: String,
    /// The dead-letter queue.
    pub dlq_url: String,
    /// The dead-letter queue's ARN.
    pub dlq_arn: String,
    /// The low lane `{queue}-low` (low priority and backfills; same DLQ, docs/priority.md).
    pub low_url: String,
    /// The outcome-notification queue `{queue}-notify` (docs/outcomes.md).
    pub notify_url: String,
    /// The outcome-notification queue's ARN.
    pub notify_arn: String,
}

/// Creates both tables (if absent) and waits until they are ACTIVE.
pub async fn ensure_tables(ddb: &aws_sdk_dynamodb::Client, cfg: &Config) -> Result<(), ProvisionError> {
    let r = Resources::get();
    ensure_table(ddb, &cfg.jobs_table, r.jobs()).await?;
    ensure_table(ddb, &cfg.executions_table, r.executions()).await?;
    Ok(())
}

async fn ensure_table(
    ddb: &aws_sdk_dynamodb::Client,
    name: &str,
    def: &TableDef,
) -> Result<(), ProvisionError> {
    let err = |source: TableError| ProvisionError::Table { table: name.to_string(), source };
    tables::create_table(ddb, name, def).await.map_err(err)?;
    for _ in 0..100 {
        if tables::is_active(ddb, name).await.map_err(err)? {
            return tables::enable_ttl(ddb, name, &def.ttl_attribute).await.map_err(err);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(ProvisionError::NotActive(name.to_string()))
}

/// Creates every pool's queue and DLQ (redrive after `maxReceiveCount` receives).
pub async fn ensure_queues(
    sqs: &aws_sdk_sqs::Client,
    cfg: &Config,
) -> Result<BTreeMap<String, PoolQueues>, ProvisionError> {
    let q = &Resources::get().queues;
    let mut out = BTreeMap::new();
    let pools: BTreeSet<&String> = cfg.pools.iter().collect();
    for pool in pools {
        let (dlq_url, dlq_arn) = ensure_queue(
            sqs,
            &cfg.dlq_name(pool),
            &[(QueueAttributeName::MessageRetentionPeriod, q.message_retention_seconds.to_string())],
        )
        .await?;
        let redrive =
            serde_json::json!({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": q.max_receive_count});
        let (url, arn) = ensure_queue(
            sqs,
            &cfg.queue_name(pool),
            &[
                (QueueAttributeName::MessageRetentionPeriod, q.message_retention_seconds.to_string()),
                (QueueAttributeName::VisibilityTimeout, q.visibility_timeout_seconds.to_string()),
                (QueueAttributeName::RedrivePolicy, redrive.to_string()),
            ],
        )
        .await?;
        let (low_url, _) = ensure_queue(
            sqs,
            &cfg.lane_queue_name(pool, sundial_model::priority::Lane::Low),
            &[
                (QueueAttributeName::MessageRetentionPeriod, q.message_retention_seconds.to_string()),
                (QueueAttributeName::VisibilityTimeout, q.visibility_timeout_seconds.to_string()),
                (QueueAttributeName::RedrivePolicy, redrive.to_string()),
            ],
        )
        .await?;
        // Outcome notifications (docs/outcomes.md): no DLQ, their consumer ends each message.
        let (notify_url, notify_arn) = ensure_queue(
            sqs,
            &cfg.notify_queue_name(pool),
            &[
                (QueueAttributeName::MessageRetentionPeriod, q.message_retention_seconds.to_string()),
                (QueueAttributeName::VisibilityTimeout, q.visibility_timeout_seconds.to_string()),
            ],
        )
        .await?;
        out.insert(pool.clone(), PoolQueues { url, arn, dlq_url, dlq_arn, low_url, notify_url, notify_arn });
    }
    Ok(out)
}

async fn ensure_queue(
    sqs: &aws_sdk_sqs::Client,
    name: &str,
    attrs: &[(QueueAttributeName, String)],
) -> Result<(String, String), ProvisionError> {
    let err = |e: Box<dyn std::error::Error + Send + Sync>| ProvisionError::Queue {
        queue: name.to_string(),
        source: e,
    };
    let mut req = sqs.create_queue().queue_name(name);
    for (k, v) in attrs {
        req = req.attributes(k.clone(), v);
    }
    let url = match req.send().await {
        Ok(o) => o.queue_url().unwrap_or_default().to_string(),
        // Same name, different attributes: the queue exists; keep it (never delete a queue with
        // messages in it to "fix" an attribute).
        Err(e) if e.as_service_error().is_some_and(|s| s.is_queue_name_exists()) => sqs
            .get_queue_url()
            .queue_name(name)
            .send()
            .await
            .map_err(|e| err(e.into()))?
            .queue_url()
            .unwrap_or_default()
            .to_string(),
        Err(e) => return Err(err(e.into())),
    };
    let got = sqs
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .map_err(|e| err(e.into()))?;
    let arn =
        got.attributes().and_then(|a| a.get(&QueueAttributeName::QueueArn)).cloned().unwrap_or_default();
    Ok((url, arn))
}

/// Provisions tables and queues; returns the queues by pool.
pub async fn ensure_all(
    clients: &sundial_core::aws::Clients,
    cfg: &Config,
) -> Result<BTreeMap<String, PoolQueues>, ProvisionError> {
    ensure_tables(&clients.ddb, cfg).await?;
    ensure_queues(&clients.sqs, cfg).await
}
