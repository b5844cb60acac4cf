//! Lambda function target: a synchronous `Invoke` (RequestResponse) with the [`Invocation`]
//! as payload.
//!
//! A function error whose `errorType` contains `NonRetryable` (what `lambda_runtime` sends for a
//! `Diagnostic { error_type: "NonRetryable…" }`) is a business error: permanent. Any other
//! function error (unhandled panics, timeouts inside the function, out of memory) retries, as do
//! throttling and service errors. A missing function or a refused payload is permanent.
//!
//! What is stored (and shown to the tenant as `lastError`) is the error code and a generic
//! sentence: AWS's own message names the worker's role, the account and the function ARN, so it
//! goes to the worker's log, with the execution id, and nowhere else. A function error's
//! `errorMessage` is the tenant's own function speaking and is kept.

use super::Invocation;
use aws_sdk_lambda::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_lambda::operation::invoke::InvokeError;
use aws_sdk_lambda::primitives::Blob;
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;
use sundial_model::retry::{codes, RunError};

/// The marker a handler puts in its error type to say "do not retry".
pub const NON_RETRYABLE_MARKER: &str = "NonRetryable";

/// Invokes Lambda functions.
#[derive(Debug, Clone)]
pub struct LambdaCaller {
    client: aws_sdk_lambda::Client,
}

/// The error document a Lambda function returns with a function error.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct FunctionError {
    #[serde(default)]
    error_type: String,
    #[serde(default)]
    error_message: String,
}

/// Classifies a function error by its `errorType`.
pub fn classify_function_error(payload: &[u8]) -> RunError {
    let fe: FunctionError = serde_json::from_slice(payload).unwrap_or_default();
    let code = if fe.error_type.is_empty() { "Lambda.Unhandled".to_string() } else { fe.error_type.clone() };
    let code: String = code.chars().take(64).collect();
    if fe.error_type.contains(NON_RETRYABLE_MARKER) {
        RunError::permanent(code, fe.error_message)
    } else {
        RunError::retryable(code, fe.error_message)
    }
}

impl LambdaCaller {
    /// A target using `client` (its endpoint decides where functions run: AWS, or
    /// `cargo lambda watch` on loopback in tests).
    pub fn new(client: aws_sdk_lambda::Client) -> Self {
        LambdaCaller { client }
    }

    /// Invokes `function` synchronously.
    pub async fn invoke(&self, function: &str, inv: &Invocation) -> Result<(), RunError> {
        let res = self.client.invoke().function_name(function).payload(Blob::new(inv.to_json())).send().await;
        match res {
            Ok(out) if out.function_error().is_some() => {
                Err(classify_function_error(out.payload().map(|b| b.as_ref()).unwrap_or_default()))
            }
            Ok(_) => Ok(()),
            Err(e) => {
                tracing::warn!(execution = %inv.execution_id, function, detail = %DisplayErrorContext(&e), "the Lambda target failed");
                Err(classify_sdk_error(e))
            }
        }
    }
}

fn classify_sdk_error(e: SdkError<InvokeError, HttpResponse>) -> RunError {
    if let SdkError::ServiceError(s) = &e {
        // Lambda reports function errors as 200 + `X-Amz-Function-Error`; `cargo lambda watch`
        // answers them with an error status and the same `{errorType, errorMessage}` body.
        if s.err().code().is_none() {
            if let Some(body) = s.raw().body().bytes() {
                if serde_json::from_slice::<FunctionError>(body).is_ok_and(|f| !f.error_type.is_empty()) {
                    return classify_function_error(body);
                }
            }
        }
    }
    match &e {
        SdkError::ServiceError(s) => {
            let code = s.err().code().unwrap_or("Unknown").to_string();
            let message = format!("the Lambda target failed ({})", code.trim_end_matches("Exception"));
            let permanent = matches!(
                code.as_str(),
                "ResourceNotFoundException"
                    | "InvalidRequestContentException"
                    | "RequestTooLargeException"
                    | "InvalidParameterValueException"
                    | "AccessDeniedException"
                    | "UnsupportedMediaTypeException"
            );
            if permanent {
                let code = if code == "ResourceNotFoundException" { codes::BAD_TARGET.into() } else { code };
                RunError::permanent(code, message)
            } else {
                RunError::retryable(code, message)
            }
        }
        _ => RunError::retryable("LambdaInvoke", "the Lambda target could not be reached"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_retryable_error_types_are_permanent_and_others_retry() {
        let e =
            classify_function_error(br#"{"errorType":"NonRetryable.Validation","errorMessage":"bad input"}"#);
        assert!(!e.is_retryable());
        assert_eq!(e.code, "NonRetryable.Validation");
        let e = classify_function_error(
            br#"{"errorType":"&alloc::boxed::Box<dyn core::error::Error>","errorMessage":"boom"}"#,
        );
        assert!(e.is_retryable());
        let e = classify_function_error(b"not json");
        assert!(e.is_retryable());
        assert_eq!(e.code, "Lambda.Unhandled");
    }

    /// An error as the SDK returns it for a refused call: AWS's message names the worker's role.
    fn service_error(code: &str, message: &str, status: u16) -> SdkError<InvokeError, HttpResponse> {
        let meta = aws_smithy_types::error::ErrorMetadata::builder().code(code).message(message).build();
        let raw = HttpResponse::new(
            status.try_into().unwrap_or_else(|e| panic!("{e:?}")),
            aws_smithy_types::body::SdkBody::empty(),
        );
        SdkError::service_error(InvokeError::generic(meta), raw)
    }

    #[test]
    fn a_refused_invoke_is_stored_without_role_arns_or_accounts() {
        // Issue 15 (outbound 8): lastError is shown to tenants.
        let e = classify_sdk_error(service_error(
                "AccessDeniedException",
                "User: arn:aws:sts::123456789012:assumed-role/sundial-worker-role/sundial-worker is not authorized to perform: lambda:InvokeFunction on resource: arn:aws:lambda:eu-west-1:123456789012:function:acme-run",
                403,
            ),
        );
        assert!(!e.is_retryable());
        assert!(!e.message.contains("arn:") && !e.message.contains("123456789012"), "{}", e.message);
        assert!(!e.message.contains("sundial-worker-role"), "{}", e.message);
        assert!(e.message.contains("AccessDenied"), "{}", e.message);
    }
}
