//! The consumer of a pool's outcome-notification queue (`{prefix}{pool}-notify`,
//! docs/outcomes.md "HTTPS notifications"): the pool's workers (its Lambda's event source, the
//! ECS loop) hand each message here. A flush only moves a notification from the execution's
//! outbox to that queue, so no finish, claim or reconciler look ever waits on a receiver.
//!
//! One delivery: a slot of the process's [`crate::execution::notify_pool::NotifyPool`] (its
//! tenant over its cap: the message comes back in [`BUSY_RETRY_SECS`], no failure counted),
//! one POST within the pool's timeout as the tenant, then: 2xx, the message is deleted; a
//! failure, a new copy with one failure more, delayed by
//! [`sundial_model::outcome::notify_retry_delay_secs`]; the last allowed failure, an
//! `OutcomeNotifyAbandoned` note on the execution's timeline.

use super::{Disposition, Worker};
use crate::execution::notify_pool::Admit;
use sundial_model::outcome::{notify_retry_delay_secs, NotifyMessage, MAX_NOTIFY_FAILURES};
use sundial_model::retry::RunError;
use sundial_store::executions::ExecKey;

/// Seconds a message waits when its tenant (or the process) has every delivery slot in use.
pub(crate) const BUSY_RETRY_SECS: i32 = 2;

impl Worker {
    /// This worker, delivering notifications through `notifier` within the default caps (a
    /// test's receiver; the worker's own calls as the tenant otherwise).
    pub fn with_notifier(mut self, notifier: std::sync::Arc<dyn crate::execution::notify::Notifier>) -> Self {
        self.notify = crate::execution::notify_pool::NotifyPool::new(notifier);
        self
    }

    /// The pool whose notification queue an ARN or URL names, if it is one (a Lambda's event
    /// source ARN).
    pub fn notify_pool_of_queue(&self, arn_or_url: &str) -> Option<String> {
        self.queues.notify_pool_of_queue(arn_or_url)
    }

    /// The URL of `pool`'s notification queue.
    pub async fn notify_url(&self, pool: &str) -> Result<String, sundial_store::queue::QueueError> {
        self.queues.notify_url(pool).await
    }

    /// Delivers one message of `pool`'s notification queue; what to do with the message.
    pub async fn deliver_notification(&self, pool: &str, body: &str) -> Disposition {
        let msg: NotifyMessage = match serde_json::from_str(body) {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(pool, error = %e, "not a notification message; dropped");
                return Disposition::Delete;
            }
        };
        let _slot = match self.notify.try_acquire(&msg.tenant, &msg.event_id) {
            Ok(slot) => slot,
            Err(Admit::Busy) => return Disposition::RetryAfter(BUSY_RETRY_SECS),
            // Another copy is being delivered in this process: after its timeout, this one
            // finds it done (the receiver deduplicates by `webhook-id` either way).
            Err(Admit::InFlight) => {
                return Disposition::RetryAfter(self.notify.limits().timeout.as_secs() as i32 + 1)
            }
        };
        let now = self.clock.now();
        let notifier = self.notify.notifier();
        let post = notifier.post(&msg.tenant, &msg.to, &msg.event_id, msg.body.clone(), now);
        let r = match tokio::time::timeout(self.notify.limits().timeout, post).await {
            Ok(r) => r,
            Err(_) => Err(RunError::retryable("Timeout", "the notification receiver did not answer in time")),
        };
        let (execution, event) = (msg.execution_id(), msg.kind.as_str());
        match r {
            Ok(()) => {
                tracing::info!(execution, event, "outcome notification delivered");
                Disposition::Delete
            }
            Err(err) if msg.failures + 1 >= MAX_NOTIFY_FAILURES => self.give_up(&msg, &err).await,
            Err(err) => {
                let next = NotifyMessage { failures: msg.failures + 1, ..msg };
                let delay = notify_retry_delay_secs(next.failures, self.settings.notify_retry_base_secs);
                tracing::warn!(execution, event, code = %err.code, error = %err.message, failures = next.failures, delay, "outcome notification failed; retried later");
                match self.queues.send_notify(pool, &next, delay).await {
                    Ok(()) => Disposition::Delete,
                    // The same message comes back (its count not raised): tried again later.
                    Err(e) => {
                        tracing::warn!(execution, error = %e, "notification retry not queued; the message itself comes back");
                        Disposition::RetryAfter(delay.max(BUSY_RETRY_SECS))
                    }
                }
            }
        }
    }

    /// Gives `msg` up after its last allowed failure: a note on its execution's timeline.
    async fn give_up(&self, msg: &NotifyMessage, err: &RunError) -> Disposition {
        let (execution, event) = (msg.execution_id(), msg.kind.as_str());
        tracing::warn!(execution, event, code = %err.code, error = %err.message, "outcome notification given up");
        let key = ExecKey::new(msg.tenant.clone(), msg.job_id.clone(), msg.scheduled_ms);
        let now_ms = self.clock.now_ms();
        let code = sundial_model::retry::codes::OUTCOME_NOTIFY_ABANDONED;
        let actor = format!("notify:{event}");
        let noted = match self.store.get(&key, false).await {
            Ok(Some(s)) => self.store.outbox_give_up(&key, &s.exec, &[], &actor, code, now_ms).await,
            // The execution is gone (its retention passed): nothing to note.
            Ok(None) => Ok(()),
            Err(e) => Err(e),
        };
        match noted {
            Ok(()) => Disposition::Delete,
            Err(e) => {
                tracing::warn!(execution, error = %e, "give-up note not written; the message comes back");
                Disposition::RetryAfter(BUSY_RETRY_SECS * 5)
            }
        }
    }
}
