//! EventBridge target: puts the [`Invocation`] as the `detail` of one event on a tenant's bus
//! (`source` [`SOURCE`], `detail-type` the job's or [`DEFAULT_DETAIL_TYPE`]). Fire and forget:
//! the attempt succeeds when the bus accepted the event. The invocation carries the execution
//! id and fencing token, so a rule's consumer deduplicates by the id and fences by the token (a
//! takeover puts a second event with a higher token).
//!
//! A refused put is stored (and shown to the tenant) as its code and a generic sentence; AWS's
//! message, which names roles and accounts, is logged with the execution id.

use super::Invocation;
use aws_sdk_eventbridge::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use sundial_model::retry::RunError;

/// The `source` of the events a job puts.
pub const SOURCE: &str = "sundial.job";

/// The `detail-type` when the job names none.
pub const DEFAULT_DETAIL_TYPE: &str = "SundialJobFired";

/// Puts events on tenants' buses.
#[derive(Debug, Clone)]
pub struct EventBridgeCaller {
    client: aws_sdk_eventbridge::Client,
}

impl EventBridgeCaller {
    /// A target using `client` (the tenant's session).
    pub fn new(client: aws_sdk_eventbridge::Client) -> Self {
        EventBridgeCaller { client }
    }

    /// Puts one event on `bus_arn`.
    pub async fn put(
        &self,
        bus_arn: &str,
        detail_type: Option<&str>,
        inv: &Invocation,
    ) -> Result<(), RunError> {
        let entry = aws_sdk_eventbridge::types::PutEventsRequestEntry::builder()
            .event_bus_name(bus_arn)
            .source(SOURCE)
            .detail_type(detail_type.unwrap_or(DEFAULT_DETAIL_TYPE))
            .detail(inv.to_json())
            .build();
        match self.client.put_events().entries(entry).send().await {
            Ok(out) if out.failed_entry_count() == 0 => Ok(()),
            Ok(out) => {
                let first = out.entries().iter().find(|e| e.error_code().is_some());
                let code = first.and_then(|e| e.error_code()).unwrap_or("Failed").to_string();
                tracing::warn!(execution = %inv.execution_id, bus_arn, code, detail = ?first.and_then(|e| e.error_message()), "the EventBridge target refused the event");
                let message = format!("the EventBridge target refused the event ({code})");
                Err(if code.contains("Throttl") || code.contains("Internal") {
                    RunError::retryable(code, message)
                } else {
                    RunError::permanent(code, message)
                })
            }
            Err(e) => {
                tracing::warn!(execution = %inv.execution_id, bus_arn, detail = %DisplayErrorContext(&e), "the EventBridge target failed");
                Err(classify(e))
            }
        }
    }
}

fn classify<E, R>(e: SdkError<E, R>) -> RunError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    super::aws_error::classify_aws(e, "EventBridge target", "EventBridgePut")
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_eventbridge::operation::put_events::PutEventsError;

    #[test]
    fn a_refused_put_is_permanent_and_stored_without_arns_a_throttled_one_retries() {
        let err = |code: &str, status: u16| {
            classify(super::super::aws_error::refused(code, status, PutEventsError::generic))
        };
        let denied = err("AccessDeniedException", 400);
        assert!(!denied.is_retryable());
        assert!(
            !denied.message.contains("arn:") && denied.message.contains("AccessDenied"),
            "{}",
            denied.message
        );
        assert!(err("ThrottlingException", 400).is_retryable());
    }
}
