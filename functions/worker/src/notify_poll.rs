//! The ECS worker's consumer of its pool's outcome-notification queue
//! (`{prefix}{pool}-notify`, docs/outcomes.md "HTTPS notifications"), beside the execution
//! loop ([`crate::long_poll`]) and independent of its slots: a receiver that never answers
//! holds a notification slot of its own tenant ([`sundial_core::execution::notify_pool`]),
//! never an execution slot.
//!
//! Each receive takes up to 10 messages, delivers them concurrently and settles each one:
//! deleted, or made visible again when the consumer asks. On shutdown it stops receiving and
//! waits for the deliveries in flight (each bounded by the notification timeout).

use std::sync::Arc;
use sundial_core::execution::worker::{Disposition, Worker};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Runs until `shutdown` fires, then lets the deliveries in flight end.
pub async fn run(worker: Arc<Worker>, wait_secs: i32, shutdown: CancellationToken) {
    let pool = worker.settings().pool.clone();
    let url = loop {
        match worker.notify_url(&pool).await {
            Ok(u) => break u,
            Err(e) => {
                tracing::error!(pool, error = %e, "no notification queue; retrying in 30 s");
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = tokio::time::sleep(std::time::Duration::from_secs(30)) => {}
                }
            }
        }
    };
    while !shutdown.is_cancelled() {
        let received = tokio::select! {
            _ = shutdown.cancelled() => break,
            r = worker.sqs().receive_message().queue_url(&url).max_number_of_messages(10).wait_time_seconds(wait_secs.clamp(0, 20)).send() => r,
        };
        let msgs = match received {
            Ok(out) => out.messages.unwrap_or_default(),
            Err(e) => {
                tracing::warn!(pool, error = %aws_sdk_sqs::error::DisplayErrorContext(e), "notification receive failed");
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
                }
                continue;
            }
        };
        let mut set = JoinSet::new();
        for m in msgs {
            let (w, pool, url) = (worker.clone(), pool.clone(), url.clone());
            set.spawn(async move {
                let body = m.body().unwrap_or_default();
                let d = w.deliver_notification(&pool, body).await;
                settle(&w, &url, m.receipt_handle().unwrap_or_default(), d).await;
            });
        }
        while set.join_next().await.is_some() {}
    }
}

/// Deletes a delivered (or ended) message, or makes it visible again when asked.
async fn settle(w: &Worker, url: &str, receipt: &str, d: Disposition) {
    let r = match d {
        Disposition::Delete => w
            .sqs()
            .delete_message()
            .queue_url(url)
            .receipt_handle(receipt)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| aws_sdk_sqs::error::DisplayErrorContext(e).to_string()),
        Disposition::Leave => Ok(()),
        Disposition::RetryAfter(secs) => w
            .sqs()
            .change_message_visibility()
            .queue_url(url)
            .receipt_handle(receipt)
            .visibility_timeout(secs)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| aws_sdk_sqs::error::DisplayErrorContext(e).to_string()),
    };
    if let Err(e) = r {
        // The message comes back after its visibility; a delivered one is sent again with the
        // same webhook-id (the receiver deduplicates).
        tracing::warn!(error = %e, "notification message not settled");
    }
}
