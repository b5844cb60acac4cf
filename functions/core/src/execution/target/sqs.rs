//! SQS target: sends the [`Invocation`] to a user's queue.
//!
//! The execution id and fencing token also travel as message attributes, so a consumer can
//! deduplicate without parsing the body. For FIFO queues the execution id is the deduplication
//! id (a retried send within SQS's five-minute window is absorbed) and the job id the group.
//!
//! A failed send is stored (and shown to the tenant) as its code and a generic sentence; AWS's
//! message, which names the worker's role and the account, is logged with the execution id.

use super::Invocation;
use aws_sdk_sqs::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_sqs::types::MessageAttributeValue;
use sundial_model::retry::{codes, RunError};

/// Sends to user queues.
#[derive(Debug, Clone)]
pub struct SqsCaller {
    client: aws_sdk_sqs::Client,
}

fn attr(v: String, kind: &str) -> Result<MessageAttributeValue, RunError> {
    MessageAttributeValue::builder()
        .data_type(kind)
        .string_value(v)
        .build()
        .map_err(|e| RunError::permanent(codes::BAD_TARGET, e.to_string()))
}

impl SqsCaller {
    /// A target using `client`.
    pub fn new(client: aws_sdk_sqs::Client) -> Self {
        SqsCaller { client }
    }

    /// Sends one message.
    pub async fn send(&self, queue_url: &str, inv: &Invocation) -> Result<(), RunError> {
        let mut req = self
            .client
            .send_message()
            .queue_url(queue_url)
            .message_body(inv.to_json())
            .message_attributes("sundial-execution-id", attr(inv.execution_id.clone(), "String")?)
            .message_attributes("sundial-fencing-token", attr(inv.fencing_token.to_string(), "Number")?);
        if queue_url.ends_with(".fifo") {
            req = req
                .message_group_id(format!("{}:{}", inv.tenant, inv.job_id))
                .message_deduplication_id(inv.execution_id.replace('@', "-"));
        }
        match req.send().await {
            Ok(_) => Ok(()),
            Err(e) => {
                tracing::warn!(execution = %inv.execution_id, queue_url, detail = %DisplayErrorContext(&e), "the SQS target failed");
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
    super::aws_error::classify_aws(e, "SQS target", "SqsSend")
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_sqs::operation::send_message::SendMessageError;
    use aws_smithy_runtime_api::client::orchestrator::HttpResponse;

    #[test]
    fn a_refused_send_is_stored_without_role_arns_accounts_or_the_queue_url() {
        // Issue 15 (outbound 8): lastError is shown to tenants.
        let meta = aws_smithy_types::error::ErrorMetadata::builder()
            .code("AccessDenied")
            .message("User: arn:aws:sts::123456789012:assumed-role/sundial-worker-role/w is not authorized to perform: sqs:sendmessage on resource: arn:aws:sqs:eu-west-1:123456789012:acme-inbox")
            .build();
        let raw = HttpResponse::new(
            403u16.try_into().unwrap_or_else(|e| panic!("{e:?}")),
            aws_smithy_types::body::SdkBody::empty(),
        );
        let e = classify(SdkError::service_error(SendMessageError::generic(meta), raw));
        assert!(!e.is_retryable());
        assert!(!e.message.contains("arn:") && !e.message.contains("123456789012"), "{}", e.message);
        assert!(e.message.contains("AccessDenied"), "{}", e.message);
    }
}
