//! The Lambda entry point: an SQS event in, a partial batch response out.
//!
//! Each record is handled concurrently by the shared core. A record the core wants back later
//! (retry backoff, someone else's lease, an execution not yet due) first gets its visibility
//! set to that moment with `ChangeMessageVisibility`, then is reported in
//! `batch_item_failures` so the event source mapping does not delete it: the same message
//! carries the retry, no new message is created. Records whose execution reached a final
//! status are reported as successes and deleted by the event source mapping.
//!
//! The batch stops three seconds before the invocation's deadline: running executions are then
//! released (lease end set to zero) and their messages made visible again at once.

use aws_lambda_events::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use sundial_core::execution::worker::{Disposition, NoExtend, Worker};
use sundial_model::priority::Lane;
use tokio::task::{self, JoinSet};
use tokio_util::sync::CancellationToken;

/// How long before the invocation deadline running work is released.
pub const DEADLINE_MARGIN: Duration = Duration::from_secs(3);

/// Handles one SQS event. `stop` fires when the batch must wind down (deadline).
///
/// A record whose task panics (a bug in an in-process handler, say) is reported as a failure:
/// its message id is kept outside the task, keyed by the task's id, because a panicking task
/// returns nothing. Reported as a success, its message would be deleted and its execution,
/// RUNNING under a lease nobody renews, would never be delivered again; kept, the message comes
/// back after its visibility timeout and the next worker takes the expired lease over.
pub async fn handle_event(
    worker: &Arc<Worker>,
    event: SqsEvent,
    stop: &CancellationToken,
) -> SqsBatchResponse {
    let mut set = JoinSet::new();
    let mut message_ids: HashMap<task::Id, String> = HashMap::new();
    for rec in event.records {
        let (w, stop) = (worker.clone(), stop.clone());
        let message_id = rec.message_id.clone().unwrap_or_default();
        let task = set.spawn(async move {
            // The pool's outcome-notification queue (docs/outcomes.md): its own consumer.
            if let Some(pool) = rec.event_source_arn.as_deref().and_then(|a| w.notify_pool_of_queue(a)) {
                return notification(&w, &pool, rec).await;
            }
            let (pool, lane) = rec
                .event_source_arn
                .as_deref()
                .map(|a| w.lane_of_queue(a))
                .unwrap_or_else(|| (w.settings().pool.clone(), Lane::Main));
            let body = rec.body.unwrap_or_default();
            let d = w.handle(&pool, &body, &NoExtend, &stop).await;
            match d {
                Disposition::Delete => false,
                Disposition::Leave => true,
                Disposition::RetryAfter(secs) => {
                    if let Some(rh) = &rec.receipt_handle {
                        set_visibility(&w, &pool, lane, rh, secs).await;
                    }
                    true
                }
            }
        });
        message_ids.insert(task.id(), message_id);
    }
    let mut resp = SqsBatchResponse::default();
    while let Some(r) = set.join_next_with_id().await {
        let (id, kept) = match r {
            Ok((id, kept)) => (id, kept),
            Err(e) => {
                tracing::error!(
                    message_id = message_ids.get(&e.id()).map(String::as_str).unwrap_or_default(),
                    error = %e,
                    "record task failed; its message is kept and returns after its visibility timeout"
                );
                (e.id(), true)
            }
        };
        if kept {
            let mut f = BatchItemFailure::default();
            f.item_identifier = message_ids.remove(&id).unwrap_or_default();
            resp.batch_item_failures.push(f);
        }
    }
    resp
}

/// One record of a notification queue: true to keep its message (it comes back when asked).
async fn notification(w: &Worker, pool: &str, rec: aws_lambda_events::sqs::SqsMessage) -> bool {
    let body = rec.body.unwrap_or_default();
    match w.deliver_notification(pool, &body).await {
        Disposition::Delete => false,
        Disposition::Leave => true,
        Disposition::RetryAfter(secs) => {
            let scope = w.access_scope(pool);
            let receipt = rec.receipt_handle.unwrap_or_default();
            sundial_core::access::scope(scope, async {
                match w.notify_url(pool).await {
                    Ok(url) => change_visibility_of(w, &url, &receipt, secs).await,
                    Err(e) => tracing::error!(pool, error = %e, "no notification queue URL; the message returns after its visibility"),
                }
            })
            .await;
            true
        }
    }
}

async fn set_visibility(w: &Worker, pool: &str, lane: Lane, receipt: &str, secs: i32) {
    sundial_core::access::scope(w.access_scope(pool), change_visibility(w, pool, lane, receipt, secs)).await
}

async fn change_visibility(w: &Worker, pool: &str, lane: Lane, receipt: &str, secs: i32) {
    let url = match w.lane_url(pool, lane).await {
        Ok(u) => u,
        Err(e) => {
            tracing::error!(pool, error = %e, "cannot resolve queue URL; message returns after its current visibility");
            return;
        }
    };
    change_visibility_of(w, &url, receipt, secs).await
}

async fn change_visibility_of(w: &Worker, url: &str, receipt: &str, secs: i32) {
    if let Err(e) = w
        .sqs()
        .change_message_visibility()
        .queue_url(url)
        .receipt_handle(receipt)
        .visibility_timeout(secs)
        .send()
        .await
    {
        tracing::warn!(error = %aws_sdk_sqs::error::DisplayErrorContext(e), "ChangeMessageVisibility failed");
    }
}

/// Time left before the invocation deadline. Lambda sends the deadline as epoch ms; `cargo
/// lambda watch` (1.9) sends the timeout itself (e.g. `600000`), so a value before 2001 is read
/// as a duration from now.
pub fn time_left(deadline_ms: u64, now: SystemTime) -> Duration {
    const EPOCH_2001_MS: u64 = 978_307_200_000;
    if deadline_ms < EPOCH_2001_MS {
        return Duration::from_millis(deadline_ms);
    }
    (SystemTime::UNIX_EPOCH + Duration::from_millis(deadline_ms)).duration_since(now).unwrap_or_default()
}

/// The Lambda function: [`handle_event`] with a stop token that fires [`DEADLINE_MARGIN`] before
/// the invocation's deadline.
pub async fn function_handler(
    worker: Arc<Worker>,
    event: lambda_runtime::LambdaEvent<SqsEvent>,
) -> Result<SqsBatchResponse, lambda_runtime::Error> {
    let stop = CancellationToken::new();
    let left = time_left(event.context.deadline, SystemTime::now());
    tracing::debug!(left_ms = left.as_millis() as u64, records = event.payload.records.len(), "batch");
    let timer = {
        let stop = stop.clone();
        tokio::spawn(async move {
            tokio::time::sleep(left.saturating_sub(DEADLINE_MARGIN)).await;
            stop.cancel();
        })
    };
    let resp = handle_event(&worker, event.payload, &stop).await;
    timer.abort();
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines_are_epoch_ms_or_a_watch_timeout() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_millis(1_796_000_000_000);
        assert_eq!(time_left(1_796_000_030_000, now), Duration::from_secs(30));
        assert_eq!(time_left(1_795_999_000_000, now), Duration::ZERO);
        assert_eq!(time_left(600_000, now), Duration::from_secs(600));
    }
}
