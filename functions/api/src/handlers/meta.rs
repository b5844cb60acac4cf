//! The web console's files, served without a caller (the document's own route is in
//! [`crate::doc`]).

use crate::Api;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;

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
