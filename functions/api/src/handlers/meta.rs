//! The routes served without a caller: this document, and the web console's files.

use crate::Api;
use axum::extract::{Path, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};

/// This document (generated from the handlers and the wire types; `functions/api/openapi.json`
/// is its checked-in copy).
#[utoipa::path(get, path = "/openapi.json", operation_id = "openApi", tag = "meta", security(()),
    responses((status = 200, description = "The OpenAPI document", content_type = "application/json", body = Object)))]
pub(crate) async fn open_api() -> Response {
    let mut r = crate::doc::json().into_response();
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

/// `GET /console`.
pub(crate) async fn console_index(State(api): State<Api>, headers: HeaderMap) -> Response {
    crate::console::serve(None, &headers, api.console_settings())
}

/// `GET /console/{file}`.
pub(crate) async fn console_file(
    State(api): State<Api>,
    Path(file): Path<String>,
    headers: HeaderMap,
) -> Response {
    crate::console::serve(Some(&file), &headers, api.console_settings())
}
