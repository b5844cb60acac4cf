//! How a target's failed AWS call is classified and shown to the tenant.

use sundial_model::retry::RunError;

/// A failed AWS call of a target as the tenant sees it (`lastError` is shown to tenants): the
/// service's error code and a generic sentence naming the `target` ("the SQS target"), never
/// AWS's message (it names roles, accounts and resources; the caller logs it with the
/// execution). Throttling and the service's own failures are retried; any other answer (missing
/// resource, access denied, invalid input) says the job's target is wrong. No answer at all
/// (timeout, dispatch) is retried as `unreachable`.
pub(crate) fn classify_aws<E, R>(
    e: aws_smithy_runtime_api::client::result::SdkError<E, R>,
    target: &str,
    unreachable: &str,
) -> RunError
where
    E: aws_smithy_types::error::metadata::ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    use aws_smithy_runtime_api::client::result::SdkError;
    match &e {
        SdkError::ServiceError(s) => {
            let code = s.err().code().unwrap_or("Unknown").to_string();
            let short = code.rsplit('.').next().unwrap_or_default().trim_end_matches("Exception");
            let message = format!("the {target} failed ({short})");
            const TRANSIENT: [&str; 5] =
                ["Throttl", "InternalError", "InternalException", "ServiceUnavailable", "KmsThrottled"];
            if TRANSIENT.iter().any(|t| code.contains(t)) || code == "KMSThrottlingException" {
                RunError::retryable(code, message)
            } else {
                RunError::permanent(code, message)
            }
        }
        _ => RunError::retryable(unreachable, format!("the {target} could not be reached")),
    }
}

/// A refused AWS call as the SDK hands it to a target: `code`, an IAM-style message naming an
/// ARN, and the HTTP `status` (the targets' classification tests).
#[cfg(test)]
pub(crate) fn refused<E>(
    code: &str,
    status: u16,
    make: impl FnOnce(aws_smithy_types::error::ErrorMetadata) -> E,
) -> aws_smithy_runtime_api::client::result::SdkError<
    E,
    aws_smithy_runtime_api::client::orchestrator::HttpResponse,
> {
    let meta = aws_smithy_types::error::ErrorMetadata::builder()
        .code(code)
        .message("User: arn:aws:sts::123456789012:assumed-role/sundial-tenant/acme is not authorized")
        .build();
    let raw = aws_smithy_runtime_api::client::orchestrator::HttpResponse::new(
        status.try_into().unwrap_or_else(|e| panic!("{e:?}")),
        aws_smithy_types::body::SdkBody::empty(),
    );
    aws_smithy_runtime_api::client::result::SdkError::service_error(make(meta), raw)
}
