//! Who is calling: the tenant and principal, from the API Gateway authorizer context only.
//!
//! - **JWT authorizer** (the default): the tenant is the claim named by `SUNDIAL_TENANT_CLAIM`
//!   (default `tenant`; e.g. `custom:tenant` with Cognito), the principal is `sub`.
//! - **IAM authorizer** (the alternative): the tenant is the caller's AWS account id, the
//!   principal its user ARN.
//!
//! Nothing in the request itself (headers, path, body) can choose the tenant in the Lambda; the
//! local run's loopback server is the only place that takes it from a header
//! ([`crate::local`]). A missing or malformed tenant is 401.

use crate::error::ApiError;
use lambda_http::aws_lambda_events::apigw::ApiGatewayRequestAuthorizer;
use lambda_http::http::StatusCode;
use sundial_core::control::Caller;
use sundial_core::keys;

fn unauthorized(msg: &str) -> ApiError {
    ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", msg)
}

/// The caller of a request with this authorizer context.
pub fn caller_of(auth: Option<&ApiGatewayRequestAuthorizer>, tenant_claim: &str) -> Result<Caller, ApiError> {
    let auth =
        auth.ok_or_else(|| unauthorized("no authorizer context: the API must sit behind an authorizer"))?;
    let (tenant, principal) = if let Some(jwt) = &auth.jwt {
        let tenant = jwt.claims.get(tenant_claim).cloned().unwrap_or_default();
        let principal = jwt.claims.get("sub").cloned().unwrap_or_default();
        (tenant, principal)
    } else if let Some(iam) = &auth.iam {
        (iam.account_id.clone().unwrap_or_default(), iam.user_arn.clone().unwrap_or_default())
    } else {
        return Err(unauthorized("the authorizer context has neither JWT claims nor an IAM principal"));
    };
    if tenant.is_empty() {
        return Err(unauthorized("the token carries no tenant"));
    }
    keys::validate_id("tenant", &tenant).map_err(|_| unauthorized("the token's tenant is not a valid id"))?;
    let principal = if principal.is_empty() { "unknown".to_string() } else { principal };
    Ok(Caller { tenant, principal })
}
