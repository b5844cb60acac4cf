//! The instant a request runs at, from the API's clock (a manual clock in tests), put on the
//! request as [`Now`] so every handler and layer below reads the same instant.

use crate::extract::Now;
use crate::Api;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;

/// The layer's function.
pub async fn layer(State(api): State<Api>, mut req: Request, next: Next) -> Response {
    req.extensions_mut().insert(Now(api.now()));
    next.run(req).await
}
