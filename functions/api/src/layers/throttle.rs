//! The per-tenant request throttle ([`sundial_core::config::ApiSettings::tenant_api_rps`]): one
//! conditional `UpdateItem` on a counter item `T#{tenant}#QUOTA` / `api#{second}` (expiring a
//! minute later), so one tenant past its budget is 429 `throttled` and no other tenant notices.
//! If the counter cannot be written the request goes on: the throttle protects other tenants;
//! it is not a reason to fail.

use crate::error::ApiError;
use crate::extract::Now;
use crate::Api;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sundial_api_types::ErrorCode;
use sundial_core::control::Caller;

/// The layer's function.
pub async fn layer(State(api): State<Api>, req: Request, next: Next) -> Response {
    let rps = api.settings().tenant_api_rps;
    let (Some(caller), Some(Now(now))) = (req.extensions().get::<Caller>(), req.extensions().get::<Now>())
    else {
        return next.run(req).await;
    };
    if rps == 0 {
        return next.run(req).await;
    }
    let second = now.timestamp();
    let counter = format!("api#{second}");
    let ctl = api.control();
    let taken = sundial_store::quota::take(
        ctl.ddb(),
        &ctl.cfg().jobs_table,
        &caller.tenant,
        &counter,
        1,
        rps,
        Some(second + 60),
    )
    .await;
    match taken {
        Ok(true) => next.run(req).await,
        Ok(false) => ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            ErrorCode::Throttled,
            format!("at most {rps} requests a second per tenant; retry after the Retry-After seconds"),
        )
        .retry_after(1)
        .into_response(),
        Err(e) => {
            tracing::warn!(tenant = %caller.tenant, error = %e, "the per-tenant throttle could not count a request; let through");
            next.run(req).await
        }
    }
}
