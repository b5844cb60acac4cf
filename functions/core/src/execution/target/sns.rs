//! SNS target: publishes the [`Invocation`] to a tenant's topic. Fire and forget: the attempt
//! succeeds when the topic accepted the message. The execution id and fencing token also travel
//! as message attributes (subscription filter policies can match them); a FIFO topic gets the
//! execution id as its deduplication id and the job as its group.
//!
//! A refused publish is stored (and shown to the tenant) as its code and a generic sentence;
//! AWS's message, which names roles and accounts, is logged with the execution id.

use super::Invocation;
use aws_sdk_sns::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_sns::types::MessageAttributeValue;
use sundial_model::retry::{codes, RunError};

/// Publishes to tenants' topics.
#[derive(Debug, Clone)]
pub struct SnsCaller {
    client: aws_sdk_sns::Client,
}

fn attr(v: String, kind: &str) -> Result<MessageAttributeValue, RunError> {
    MessageAttributeValue::builder()
        .data_type(kind)
        .string_value(v)
        .build()
        .map_err(|e| RunError::permanent(codes::BAD_TARGET, e.to_string()))
}

impl SnsCaller {
    /// A target using `client` (the tenant's session).
    pub fn new(client: aws_sdk_sns::Client) -> Self {
        SnsCaller { client }
    }

    /// Publishes one message to `topic_arn`.
    pub async fn publish(
        &self,
        topic_arn: &str,
        subject: Option<&str>,
        inv: &Invocation,
    ) -> Result<(), RunError> {
        let mut req = self
            .client
            .publish()
            .topic_arn(topic_arn)
            .message(inv.to_json())
            .set_subject(subject.map(str::to_string))
            .message_attributes("sundial-execution-id", attr(inv.execution_id.clone(), "String")?)
            .message_attributes("sundial-fencing-token", attr(inv.fencing_token.to_string(), "Number")?);
        if topic_arn.ends_with(".fifo") {
            req = req
                .message_group_id(format!("{}:{}", inv.tenant, inv.job_id))
                .message_deduplication_id(inv.execution_id.replace('@', "-"));
        }
        match req.send().await {
            Ok(_) => Ok(()),
            Err(e) => {
                tracing::warn!(execution = %inv.execution_id, topic_arn, detail = %DisplayErrorContext(&e), "the SNS target failed");
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
    super::aws_error::classify_aws(e, "SNS target", "SnsPublish")
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_sns::operation::publish::PublishError;

    #[test]
    fn a_refused_publish_is_permanent_without_arns_a_throttled_one_retries() {
        let err = |code: &str| classify(super::super::aws_error::refused(code, 403, PublishError::generic));
        let denied = err("AuthorizationError");
        assert!(!denied.is_retryable());
        assert!(!denied.message.contains("arn:"), "{}", denied.message);
        assert!(err("Throttled").is_retryable());
    }
}
