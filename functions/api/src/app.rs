//! The router: every operation ([`crate::operations`], and [`crate::doc`]'s own route), by
//! its handler (its path and method come from the handler's `#[utoipa::path]`, so the router
//! and the document cannot disagree), and the layers in the order [`crate::layers`] describes.

use crate::doc::public_operations;
use crate::handlers::meta;
use crate::layers::{body, caller, clock, errors, headers, idempotency, request_id, scope, throttle};
use crate::operations::operations;
use crate::Api;
use axum::extract::Request;
use axum::middleware::{from_fn, from_fn_with_state, Next};
use axum::response::Response;
use axum::routing::get;
use axum::Router;

/// The router of `api`.
pub fn router(api: Api) -> Router {
    let (authed, _) = operations().split_for_parts();
    // Route layers run for matched routes only, innermost first: the body is read after the
    // caller and the throttle passed, the key is claimed last.
    let authed = authed
        .route_layer(from_fn_with_state(api.clone(), idempotency::layer))
        .route_layer(from_fn_with_state(api.clone(), body::layer))
        .route_layer(from_fn_with_state(api.clone(), throttle::layer))
        .route_layer(from_fn(caller::layer));
    let (public, _) = public_operations().split_for_parts();
    // The console: static files, not API operations, so not in the document; every call the
    // console makes is one of the operations above.
    let console = Router::new()
        .route("/console", get(meta::console_index))
        .route("/console/{file}", get(meta::console_file));
    let routes = authed
        .merge(public)
        .merge(console)
        .fallback(errors::not_found)
        .method_not_allowed_fallback(errors::method_not_allowed)
        .with_state(api.clone());
    // The outer router has no routes of its own: its layers run before the inner one matches,
    // so a trailing slash is gone before matching (`/v1/jobs/` is `/v1/jobs`).
    Router::new()
        .fallback_service(routes)
        .layer(from_fn(trim_trailing_slash))
        .layer(from_fn_with_state(api.clone(), scope::layer))
        .layer(from_fn_with_state(api, clock::layer))
        .layer(from_fn(errors::layer))
        .layer(from_fn(headers::layer))
        .layer(from_fn(request_id::layer))
}

/// `/v1/jobs/` → `/v1/jobs` (the query kept).
async fn trim_trailing_slash(mut req: Request, next: Next) -> Response {
    let path = req.uri().path();
    if path.len() > 1 && path.ends_with('/') {
        let trimmed = path.trim_end_matches('/');
        let trimmed = if trimmed.is_empty() { "/" } else { trimmed };
        let pq = match req.uri().query() {
            Some(q) => format!("{trimmed}?{q}"),
            None => trimmed.to_string(),
        };
        if let Ok(uri) = pq.parse() {
            *req.uri_mut() = uri;
        }
    }
    next.run(req).await
}
