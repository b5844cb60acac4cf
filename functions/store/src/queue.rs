//! SQS adapter: per-pool queue URLs (cached), batched delayed sends, and dead-letter copies.
//!
//! Batching is part of the cost budget (docs/performance.md, "Targets": ≤ 0.3 SQS requests per
//! execution): ten executions share one `SendMessageBatch`, and each entry carries its own
//! `DelaySeconds` so it reaches a worker on its second rather than somewhere in the minute.

use crate::config::Config;
use aws_sdk_sqs::types::{MessageAttributeValue, SendMessageBatchRequestEntry};
use std::collections::HashMap;
use sundial_model::priority::{Depths, Lane, DEPTH_CACHE_MS};
use sundial_model::ExecMessage;
use tokio::sync::Mutex;

/// SQS's largest per-message delay.
pub const MAX_DELAY_SECS: i64 = sundial_model::limits::SQS_MAX_DELAY_SECS as i64;
/// SQS's largest batch.
pub const MAX_BATCH: usize = 10;
/// Message attribute of a dead letter: the error code that made it DEAD.
pub const DLQ_ERROR_CODE_ATTR: &str = "sundial-error-code";
/// Message attribute of a dead letter: the execution id.
pub const DLQ_EXECUTION_ID_ATTR: &str = "sundial-execution-id";

/// A queue operation failed.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    /// The pool has no queue (a job names a pool that was never provisioned).
    #[error("pool {pool:?}: no queue named {queue} ({source})")]
    UnknownPool {
        /// The pool.
        pool: String,
        /// The queue name looked up.
        queue: String,
        /// The SDK error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// SQS refused or failed the request; retry later (the trigger position is unchanged, so
    /// the next tick repeats the send).
    #[error("sending to pool {pool:?}: {source}")]
    Send {
        /// The pool.
        pool: String,
        /// The SDK error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Some entries of a batch failed even after one retry.
    #[error("sending to pool {pool:?}: {failed} entries failed ({first_code})")]
    Partial {
        /// The pool.
        pool: String,
        /// How many.
        failed: usize,
        /// The first failure's code.
        first_code: String,
    },
}

impl QueueError {
    /// Every queue error is worth retrying on the next tick; an unknown pool only after an
    /// operator creates it.
    pub fn is_retryable(&self) -> bool {
        !matches!(self, QueueError::UnknownPool { .. })
    }
}

/// One message to send.
#[derive(Debug, Clone)]
pub struct Outgoing {
    /// The body.
    pub message: ExecMessage,
    /// Seconds to hold the message (0..=900).
    pub delay_secs: i32,
}

impl Outgoing {
    /// The message for `e`, enqueued at `now`, delayed until its fire instant.
    pub fn for_execution(e: &sundial_model::Execution, now: chrono::DateTime<chrono::Utc>) -> Self {
        Outgoing {
            message: ExecMessage {
                tenant: e.tenant.clone(),
                job_id: e.job_id.clone(),
                scheduled_ms: e.scheduled_at.timestamp_millis(),
                fire_ms: e.fire_at.timestamp_millis(),
                enqueued_ms: now.timestamp_millis(),
                lane: sundial_model::priority::lane_of(e),
                child: e.child.as_ref().map(|c| c.sort_part()),
                wait_gen: 0,
            },
            delay_secs: delay_secs(e.fire_at.timestamp_millis(), now.timestamp_millis()),
        }
    }
}

/// SQS's approximate counts of one queue.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueCounts {
    /// Waiting to be received.
    pub visible: u64,
    /// Received and not deleted yet: running, or held for a retry or a wait.
    pub in_flight: u64,
    /// Sent with a delay that has not passed: fires not due yet.
    pub delayed: u64,
}

/// Resolves pool queue URLs once (GetQueueUrl) and sends batches.
#[derive(Debug)]
pub struct PoolQueues {
    sqs: aws_sdk_sqs::Client,
    cfg: Config,
    urls: Mutex<HashMap<String, String>>,
    /// Lane depths read recently: (pool, lane) → (read at ms, visible messages).
    depths: Mutex<HashMap<(String, Lane), (i64, u64)>>,
    /// Set `MessageGroupId` = tenant on sends (SQS fair queues on standard queues): the
    /// deployment's [`Config::fair_queues`], the same for every function that sends.
    pub fair_groups: bool,
}

impl PoolQueues {
    /// A resolver for the pools of `cfg`.
    pub fn new(sqs: aws_sdk_sqs::Client, cfg: Config) -> Self {
        PoolQueues {
            sqs,
            fair_groups: cfg.fair_queues,
            cfg,
            urls: Mutex::new(HashMap::new()),
            depths: Mutex::new(HashMap::new()),
        }
    }

    /// The SQS client.
    pub fn client(&self) -> &aws_sdk_sqs::Client {
        &self.sqs
    }

    /// The URL of a pool's queue (resolved once with `GetQueueUrl`, then cached).
    pub async fn url(&self, pool: &str) -> Result<String, QueueError> {
        self.url_of(pool, self.cfg.queue_name(pool)).await
    }

    /// The URL of one of a pool's lanes (the main queue, or the low lane `{queue}-low`).
    pub async fn lane_url(&self, pool: &str, lane: Lane) -> Result<String, QueueError> {
        self.url_of(pool, self.cfg.lane_queue_name(pool, lane)).await
    }

    /// The URL of a pool's outcome-notification queue (docs/outcomes.md).
    pub async fn notify_url(&self, pool: &str) -> Result<String, QueueError> {
        self.url_of(pool, self.cfg.notify_queue_name(pool)).await
    }

    /// Sends one outcome notification to `pool`'s notification queue, held `delay_secs`
    /// (0..=900); with fair groups, in its tenant's group.
    pub async fn send_notify(
        &self,
        pool: &str,
        msg: &sundial_model::outcome::NotifyMessage,
        delay_secs: i32,
    ) -> Result<(), QueueError> {
        let url = self.notify_url(pool).await?;
        let body = serde_json::to_string(msg).unwrap_or_default();
        let mut req =
            self.sqs.send_message().queue_url(url).message_body(body).delay_seconds(delay_secs.clamp(0, 900));
        if self.fair_groups {
            req = req.message_group_id(&msg.tenant);
        }
        req.send().await.map(|_| ()).map_err(|e| QueueError::Send { pool: pool.into(), source: e.into() })
    }

    /// The pool whose notification queue an ARN or URL names (`{prefix}{pool}-notify` of a
    /// configured pool), if it is one.
    pub fn notify_pool_of_queue(&self, arn_or_url: &str) -> Option<String> {
        let name = arn_or_url.rsplit([':', '/']).next().unwrap_or_default();
        self.cfg.pools.iter().find(|p| self.cfg.notify_queue_name(p) == name).cloned()
    }

    /// The URL of a pool's dead-letter queue.
    pub async fn dlq_url(&self, pool: &str) -> Result<String, QueueError> {
        self.url_of(pool, self.cfg.dlq_name(pool)).await
    }

    async fn url_of(&self, pool: &str, queue: String) -> Result<String, QueueError> {
        if let Some(u) = self.urls.lock().await.get(&queue) {
            return Ok(u.clone());
        }
        let out = self.sqs.get_queue_url().queue_name(&queue).send().await.map_err(|e| {
            QueueError::UnknownPool { pool: pool.to_string(), queue: queue.clone(), source: e.into() }
        })?;
        let url = out.queue_url().unwrap_or_default().to_string();
        self.urls.lock().await.insert(queue, url.clone());
        Ok(url)
    }

    /// The pool of a queue ARN or URL (its name minus the configured prefix), if it is one of
    /// Sundial's pool queues.
    pub fn pool_of_queue(&self, arn_or_url: &str) -> Option<String> {
        self.lane_of_queue(arn_or_url).map(|(pool, _)| pool)
    }

    /// The pool and lane of a queue ARN or URL: `{prefix}{pool}-low` is `pool`'s low lane when
    /// `pool` is configured (a pool may itself end in `-low`: the configured names decide).
    pub fn lane_of_queue(&self, arn_or_url: &str) -> Option<(String, Lane)> {
        let name = arn_or_url.rsplit([':', '/']).next().unwrap_or_default();
        let rest = name.strip_prefix(&self.cfg.queue_prefix)?;
        if let Some(pool) = rest.strip_suffix(sundial_model::priority::LOW_LANE_SUFFIX) {
            if self.cfg.pools.iter().any(|p| p == pool) && !self.cfg.pools.iter().any(|p| p == rest) {
                return Some((pool.to_string(), Lane::Low));
            }
        }
        Some((rest.to_string(), Lane::Main))
    }

    /// Visible messages of both of a pool's lanes, each read at most once per
    /// [`DEPTH_CACHE_MS`] (one `GetQueueAttributes` per lane) and reused until then. A failed
    /// read is `None` (logged): back-pressure then admits, work is never stopped by a blind
    /// signal.
    pub async fn depths(&self, pool: &str, now_ms: i64) -> Depths {
        let mut d = Depths::default();
        for lane in Lane::ALL {
            let key = (pool.to_string(), lane);
            let cached = self.depths.lock().await.get(&key).copied();
            let v = match cached {
                Some((at, v)) if now_ms - at < DEPTH_CACHE_MS && now_ms >= at => Some(v),
                _ => match self.lane_depth(pool, lane).await {
                    Ok(v) => {
                        self.depths.lock().await.insert(key, (now_ms, v));
                        Some(v)
                    }
                    Err(e) => {
                        tracing::warn!(pool, lane = lane.as_str(), error = %e, "lane depth unknown");
                        None
                    }
                },
            };
            match lane {
                Lane::Main => d.main = v,
                Lane::Low => d.low = v,
            }
        }
        d
    }

    /// Copies a message to its pool's dead-letter queue, with the error code and execution id
    /// as message attributes (what `sundial dlq list` shows). Failures are logged here; the
    /// caller keeps the original message so a later delivery copies again.
    pub async fn dead_letter(
        &self,
        pool: &str,
        body: &str,
        code: &str,
        execution_id: &str,
    ) -> Result<(), QueueError> {
        let url = self.dlq_url(pool).await.inspect_err(|e| {
            tracing::error!(pool, error = %e, "no DLQ for pool");
        })?;
        let attr =
            |v: &str| MessageAttributeValue::builder().data_type("String").string_value(v).build().ok();
        self.sqs
            .send_message()
            .queue_url(url)
            .message_body(body)
            .set_message_attributes(Some(
                [(DLQ_ERROR_CODE_ATTR, attr(code)), (DLQ_EXECUTION_ID_ATTR, attr(execution_id))]
                    .into_iter()
                    .filter_map(|(k, v)| Some((k.to_string(), v?)))
                    .collect(),
            ))
            .send()
            .await
            .map(|_| ())
            .map_err(|e| {
                tracing::error!(pool, error = %aws_sdk_sqs::error::DisplayErrorContext(&e), "DLQ send failed");
                QueueError::Send { pool: pool.into(), source: e.into() }
            })
    }

    /// Messages visible in a pool's queue right now (`ApproximateNumberOfMessages`): a backlog
    /// waiting for workers. Delayed (queued-ahead) and in-flight messages are not counted.
    pub async fn visible_backlog(&self, pool: &str) -> Result<u64, QueueError> {
        self.lane_depth(pool, Lane::Main).await
    }

    /// Visible messages of one lane of a pool right now (uncached).
    pub async fn lane_depth(&self, pool: &str, lane: Lane) -> Result<u64, QueueError> {
        let url = self.lane_url(pool, lane).await?;
        let out = self
            .sqs
            .get_queue_attributes()
            .queue_url(url)
            .attribute_names(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages)
            .send()
            .await
            .map_err(|e| QueueError::Send { pool: pool.into(), source: e.into() })?;
        Ok(out
            .attributes()
            .and_then(|a| a.get(&aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0))
    }

    /// SQS's approximate counts of one of `pool`'s lanes (one `GetQueueAttributes`).
    pub async fn lane_counts(&self, pool: &str, lane: Lane) -> Result<QueueCounts, QueueError> {
        let url = self.lane_url(pool, lane).await?;
        self.counts(pool, url).await
    }

    /// SQS's approximate counts of `pool`'s dead-letter queue.
    pub async fn dlq_counts(&self, pool: &str) -> Result<QueueCounts, QueueError> {
        let url = self.dlq_url(pool).await?;
        self.counts(pool, url).await
    }

    async fn counts(&self, pool: &str, url: String) -> Result<QueueCounts, QueueError> {
        use aws_sdk_sqs::types::QueueAttributeName as A;
        let names = [
            A::ApproximateNumberOfMessages,
            A::ApproximateNumberOfMessagesNotVisible,
            A::ApproximateNumberOfMessagesDelayed,
        ];
        let out = self
            .sqs
            .get_queue_attributes()
            .queue_url(url)
            .set_attribute_names(Some(names.to_vec()))
            .send()
            .await
            .map_err(|e| QueueError::Send { pool: pool.into(), source: e.into() })?;
        let get = |n: &A| out.attributes().and_then(|a| a.get(n)).and_then(|v| v.parse().ok()).unwrap_or(0);
        Ok(QueueCounts { visible: get(&names[0]), in_flight: get(&names[1]), delayed: get(&names[2]) })
    }

    /// Sends messages to a pool in batches of ten, each to its lane's queue (the message
    /// carries its lane); a failed entry is retried once.
    pub async fn send_all(&self, pool: &str, msgs: &[Outgoing]) -> Result<(), QueueError> {
        for lane in Lane::ALL {
            let of_lane: Vec<&Outgoing> = msgs.iter().filter(|m| m.message.lane == lane).collect();
            if !of_lane.is_empty() {
                self.send_lane(pool, lane, &of_lane).await?;
            }
        }
        Ok(())
    }

    async fn send_lane(&self, pool: &str, lane: Lane, msgs: &[&Outgoing]) -> Result<(), QueueError> {
        let url = self.lane_url(pool, lane).await?;
        for chunk in msgs.chunks(MAX_BATCH) {
            let mut pending: Vec<(usize, &Outgoing)> = chunk.iter().copied().enumerate().collect();
            for round in 0..2 {
                let mut req = self.sqs.send_message_batch().queue_url(&url);
                for (i, m) in &pending {
                    let mut e = SendMessageBatchRequestEntry::builder()
                        .id(format!("m{i}"))
                        .message_body(serde_json::to_string(&m.message).unwrap_or_default())
                        .delay_seconds(m.delay_secs);
                    if self.fair_groups {
                        e = e.message_group_id(&m.message.tenant);
                    }
                    req = req.entries(
                        e.build().map_err(|e| QueueError::Send { pool: pool.into(), source: e.into() })?,
                    );
                }
                let out =
                    req.send().await.map_err(|e| QueueError::Send { pool: pool.into(), source: e.into() })?;
                let failed: Vec<String> = out.failed().iter().map(|f| f.id().to_string()).collect();
                if failed.is_empty() {
                    break;
                }
                if round == 1 {
                    return Err(QueueError::Partial {
                        pool: pool.into(),
                        failed: failed.len(),
                        first_code: out.failed().first().map(|f| f.code().to_string()).unwrap_or_default(),
                    });
                }
                pending.retain(|(i, _)| failed.contains(&format!("m{i}")));
            }
        }
        Ok(())
    }
}

/// Seconds to delay a message so it arrives at `fire_ms`, clamped to SQS's 0..=900.
pub fn delay_secs(fire_ms: i64, now_ms: i64) -> i32 {
    let ms = fire_ms - now_ms;
    if ms <= 0 {
        return 0;
    }
    // Round down: arriving up to a second early is corrected by the worker, which waits for
    // `fire_at`; arriving late is not correctable.
    (ms / 1000).min(MAX_DELAY_SECS) as i32
}

#[cfg(test)]
mod tests {
    use super::delay_secs;

    #[test]
    fn delays_round_down_and_clamp() {
        assert_eq!(delay_secs(10_999, 0), 10);
        assert_eq!(delay_secs(0, 5_000), 0);
        assert_eq!(delay_secs(2_000_000, 0), 900);
    }
}
