//! Caller and tenant. The adapter resolved who is calling before the request reached the router
//! (the Lambda from the authorizer context, [`crate::auth`]; the local run from its headers,
//! [`crate::local`]) and attached the outcome as a [`Resolved`]; this layer answers 401 or 403
//! when there is no caller, and otherwise hands the [`Caller`] to the handlers
//! ([`crate::extract::Auth`]). Nothing in the request itself chooses the tenant in the Lambda.

use crate::error::ApiError;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sundial_core::control::Caller;

/// Who the adapter found calling, or why there is no one.
#[derive(Debug, Clone)]
pub struct Resolved(pub Result<Caller, ApiError>);

/// The layer's function.
pub async fn layer(mut req: Request, next: Next) -> Response {
    let resolved = req.extensions_mut().remove::<Resolved>();
    match resolved.map(|r| r.0) {
        Some(Ok(caller)) => {
            req.extensions_mut().insert(caller);
            next.run(req).await
        }
        Some(Err(e)) => e.into_response(),
        None => {
            tracing::error!("a request reached the API without its adapter's caller");
            ApiError::internal().into_response()
        }
    }
}
