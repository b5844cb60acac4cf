//! The access scope every call the API makes runs under ([`sundial_core::access`]): the API's
//! role, so the calls recorded in the tests are checked against the API function's CDK role
//! (docs/iam.md).

use crate::Api;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use sundial_core::access::{scope, Role, Scope};

/// The layer's function.
pub async fn layer(State(api): State<Api>, req: Request, next: Next) -> Response {
    scope(Scope::new(Role::Api, api.control().cfg()), next.run(req)).await
}
