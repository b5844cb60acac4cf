//! `sundial-testfn`: the Lambda *target* of the execution-plane tests.
//!
//! It receives Sundial's invocation document and decides from `params`:
//! - `{"mode": "ok"}` (default): succeeds, echoing the execution id and fencing token;
//! - `{"mode": "retryable"}`: fails with `errorType = "Transient"`;
//! - `{"mode": "non_retryable"}`: fails with `errorType = "NonRetryable.Validation"`, which the
//!   worker treats as a business error (never retried);
//! - `{"failUntilAttempt": n}`: fails retryably while `attempt < n`, then succeeds.
use lambda_runtime::{run, service_fn, Diagnostic, Error, LambdaEvent};
use serde_json::{json, Value};

async fn handler(event: LambdaEvent<Value>) -> Result<Value, Diagnostic> {
    let inv = event.payload;
    let params = &inv["params"];
    let attempt = inv["attempt"].as_u64().unwrap_or(0);
    let fail =
        |error_type: &str, msg: String| Diagnostic { error_type: error_type.into(), error_message: msg };
    if let Some(n) = params["failUntilAttempt"].as_u64() {
        if attempt < n {
            return Err(fail("Transient", format!("attempt {attempt} < {n}")));
        }
    }
    match params["mode"].as_str().unwrap_or("ok") {
        "retryable" => Err(fail("Transient", "asked to fail retryably".into())),
        "non_retryable" => Err(fail("NonRetryable.Validation", "asked to fail permanently".into())),
        _ => Ok(json!({"ok": true, "executionId": inv["executionId"], "fencingToken": inv["fencingToken"]})),
    }
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    run(service_fn(handler)).await
}
