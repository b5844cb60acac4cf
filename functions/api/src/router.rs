//! The router: one [`ApiRequest`] in, one [`ApiResponse`] out. Both entry points — the Lambda
//! ([`crate::lambda`]) and the local run's loopback server ([`crate::local`]) — translate their
//! requests into this shape and call [`Api::handle`], so the local run serves exactly the routes,
//! validation and errors of the deployed API.

use crate::auth::PrincipalTags;
use crate::error::ApiError;
use crate::handlers::{calendars, dlq, executions, jobs, ops, resource_limits, schedules, Cx};
use crate::idempotency;
use crate::routes::{matches, Matched, Op};
use bytes::Bytes;
use chrono::{DateTime, Utc};
use lambda_http::http::header::{HeaderName, CONTENT_TYPE};
use lambda_http::http::{HeaderMap, Method, StatusCode};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::sync::Arc;
use sundial_core::config::ApiSettings;
use sundial_core::control::{Caller, Control};
use sundial_core::execution::clock::Clock;
use sundial_core::model::JobState;

/// The OpenAPI document, checked in next to the crate and served at `/openapi.json`.
pub const OPENAPI: &str = include_str!("../openapi.json");

/// A request, whatever carried it.
#[derive(Debug)]
pub struct ApiRequest {
    /// Method.
    pub method: Method,
    /// Path (percent-encoded, without the query).
    pub path: String,
    /// Raw query string (without `?`).
    pub query: String,
    /// Headers.
    pub headers: HeaderMap,
    /// Body (already read; the adapters enforce the size limit while reading when they can).
    pub body: Bytes,
    /// The authenticated caller, or why there is none.
    pub caller: Result<Caller, ApiError>,
}

/// A response.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiResponse {
    /// Status.
    pub status: StatusCode,
    /// Extra headers (Content-Type is [`ApiResponse::content_type`]).
    pub headers: Vec<(HeaderName, String)>,
    /// JSON body.
    pub body: Value,
    /// A body that is not JSON (the console's files), with its media type.
    pub raw: Option<(&'static str, Bytes)>,
}

impl ApiResponse {
    pub(crate) fn json(status: StatusCode, body: Value) -> Self {
        ApiResponse { status, headers: Vec::new(), body, raw: None }
    }

    /// A response whose body is `bytes` of type `media` (the console's static files).
    pub(crate) fn raw(status: StatusCode, media: &'static str, bytes: &'static [u8]) -> Self {
        ApiResponse {
            status,
            headers: Vec::new(),
            body: Value::Null,
            raw: Some((media, Bytes::from_static(bytes))),
        }
    }

    /// The Content-Type: `application/json` except for the console's files.
    pub fn content_type(&self) -> &'static str {
        self.raw.as_ref().map_or("application/json", |(m, _)| m)
    }

    pub(crate) fn header(mut self, name: HeaderName, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    /// Every header to send: the response's own, and on a JSON answer (every API answer; not
    /// the console's files, which set their own) `X-Content-Type-Options: nosniff` and
    /// `Cache-Control: no-store` unless it set them (issue 28, L5).
    pub fn all_headers(&self) -> Vec<(HeaderName, String)> {
        let mut out = self.headers.clone();
        if self.raw.is_none() {
            for (k, v) in [
                (lambda_http::http::header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
                (lambda_http::http::header::CACHE_CONTROL, "no-store"),
            ] {
                if !out.iter().any(|(n, _)| *n == k) {
                    out.push((k, v.to_string()));
                }
            }
        }
        out
    }

    /// The plain 500 an adapter answers when it cannot build a response (a header value that
    /// cannot be sent): the body of [`ApiError`]'s `internal`, with the JSON hardening headers.
    pub fn internal_error_parts() -> (StatusCode, Vec<(HeaderName, String)>, Vec<u8>) {
        let r =
            ApiResponse::from(ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", "internal error"));
        (r.status, r.all_headers(), r.body_bytes())
    }

    /// The body as bytes.
    pub fn body_bytes(&self) -> Vec<u8> {
        if let Some((_, b)) = &self.raw {
            return b.to_vec();
        }
        // Serialising a `Value` cannot fail.
        serde_json::to_vec(&self.body).unwrap_or_default()
    }
}

impl From<ApiError> for ApiResponse {
    fn from(e: ApiError) -> Self {
        let mut r = ApiResponse::json(e.status, e.body());
        let retry_after = e.retry_after.or((e.status == StatusCode::SERVICE_UNAVAILABLE).then_some(1));
        if let Some(secs) = retry_after {
            r = r.header(lambda_http::http::header::RETRY_AFTER, secs.to_string());
        }
        r
    }
}

/// The API: the control plane, a clock and settings.
#[derive(Debug, Clone)]
pub struct Api {
    control: Arc<Control>,
    clock: Arc<dyn Clock>,
    settings: ApiSettings,
    /// Reads principals' tenant tags (`iam-principal-tag` tenancy, [`crate::auth`]).
    tags: Option<Arc<PrincipalTags>>,
    /// How the web console signs in (`/console/config.json`, [`crate::console`]).
    console: crate::console::ConsoleSettings,
    /// The local run's worker log lines per execution ([`crate::exec_logs`]); none deployed.
    exec_logs: Option<Arc<crate::exec_logs::ExecLogs>>,
}

pub(crate) type Res = Result<ApiResponse, ApiError>;

/// Parses a JSON body into `T`, naming the offending field on error (`retry.maxAttempts`).
pub fn parse_body<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    if body.is_empty() {
        return Err(ApiError::invalid("body", "a JSON body is required"));
    }
    // Every request body is a JSON object. serde would also read a struct from an array, by
    // position (the fuzzer's `[null, null]` was a valid calendar), so refuse anything else here.
    if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(ApiError::invalid("body", "must be a JSON object"));
    }
    let de = &mut serde_json::Deserializer::from_slice(body);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let msg = inner.to_string();
        let msg = msg.rsplit_once(" at line ").map(|(m, _)| m.to_string()).unwrap_or(msg);
        if inner.is_syntax() || inner.is_eof() {
            return ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_json",
                format!("the body is not valid JSON: {msg}"),
            )
            .field("body");
        }
        // The path already ends with an unknown field; a missing field is named only in the
        // message, under the path of its parent.
        let missing = msg.strip_prefix("missing field `").and_then(|r| r.split_once('`')).map(|(n, _)| n);
        // Inside internally tagged enums (`target`, `misfire`) serde buffers the object, so the
        // path stops at the enum and an unknown field is named only in the message too.
        let unknown = msg.strip_prefix("unknown field `").and_then(|r| r.split_once('`')).map(|(n, _)| n);
        let unknown = unknown.filter(|n| path != *n && !path.ends_with(&format!(".{n}")));
        let field = match (missing.or(unknown), path.as_str()) {
            (Some(name), ".") => name.to_string(),
            (Some(name), parent) => format!("{parent}.{name}"),
            (None, ".") => "body".to_string(),
            (None, p) => p.to_string(),
        };
        ApiError::invalid(field, msg)
    })
}

pub(crate) fn ok(body: Value) -> Res {
    Ok(ApiResponse::json(StatusCode::OK, body))
}

impl Api {
    /// An API over `control`, reading time from `clock`.
    pub fn new(control: Control, clock: Arc<dyn Clock>, settings: ApiSettings) -> Self {
        Api {
            control: Arc::new(control),
            clock,
            settings,
            tags: None,
            console: Default::default(),
            exec_logs: None,
        }
    }

    /// The same API with the web console signing in as `console` says.
    pub fn with_console(mut self, console: crate::console::ConsoleSettings) -> Self {
        self.console = console;
        self
    }

    /// The same API serving the worker log lines `logs` captured (the local run).
    pub fn with_exec_logs(mut self, logs: Arc<crate::exec_logs::ExecLogs>) -> Self {
        self.exec_logs = Some(logs);
        self
    }

    /// The same API reading principals' tenant tags from IAM (`iam-principal-tag` tenancy).
    pub fn with_iam(mut self, iam: aws_sdk_iam::Client) -> Self {
        self.tags = Some(Arc::new(PrincipalTags::new(iam)));
        self
    }

    /// The principal tag reader, if any.
    pub fn principal_tags(&self) -> Option<&PrincipalTags> {
        self.tags.as_deref()
    }

    /// The settings.
    pub fn settings(&self) -> &ApiSettings {
        &self.settings
    }

    /// The control plane.
    pub fn control(&self) -> &Control {
        &self.control
    }

    /// How the web console signs in.
    pub(crate) fn console_settings(&self) -> &crate::console::ConsoleSettings {
        &self.console
    }

    /// The local run's worker log lines, if any.
    pub(crate) fn exec_logs(&self) -> Option<&crate::exec_logs::ExecLogs> {
        self.exec_logs.as_deref()
    }

    /// Handles one request. Never fails: every error is a JSON error response.
    pub async fn handle(&self, req: ApiRequest) -> ApiResponse {
        let scope = sundial_core::access::Scope::new(sundial_core::access::Role::Api, self.control.cfg());
        sundial_core::access::scope(scope, self.respond(req)).await
    }

    async fn respond(&self, req: ApiRequest) -> ApiResponse {
        let method = req.method.clone();
        let path = req.path.clone();
        // Boxed: the state machine of every route's future is one large value, and on the
        // caller's stack (a 2 MiB Tokio worker or test thread) it overflowed once a calendar
        // edit re-planned jobs (seen on moto: `a_calendar_edit_replans_only_later_fires_and_is_audited`).
        match Box::pin(self.route(req)).await {
            Ok(r) => r,
            Err(e) => {
                if e.status.is_server_error() {
                    tracing::warn!(%method, %path, status = e.status.as_u16(), code = e.code, "request failed");
                }
                e.into()
            }
        }
    }

    /// Matches, authorizes and checks the request, then runs it (under its `Idempotency-Key`
    /// when it has one).
    async fn route(&self, req: ApiRequest) -> Res {
        let (op, params) = match route_of(&req) {
            Ok(m) => m,
            Err(answer) => return answer,
        };
        if let Some(answer) = self.unauthenticated(op, &params, &req) {
            return answer;
        }
        let caller = req.caller.clone()?;
        let now = self.clock.now();
        self.throttle(&caller, now).await?;
        self.check_body(&req)?;
        match idempotency_key(op, &req.headers)? {
            Some(key) => idempotency::run(self, op, &params, &req, &caller, &key, now).await,
            None => self.exec(op, &params, &req, &caller, now).await,
        }
    }

    /// Takes one request from the caller's tenant's budget of this second
    /// ([`ApiSettings::tenant_api_rps`]): one conditional `UpdateItem` on a counter item
    /// `T#{tenant}#QUOTA` / `api#{second}` (expiring a minute later), so one tenant past its
    /// budget is 429 `throttled` and no other tenant notices. If the counter cannot be written
    /// the request goes on (the throttle protects other tenants; it is not a reason to fail).
    async fn throttle(&self, caller: &Caller, now: DateTime<Utc>) -> Result<(), ApiError> {
        let rps = self.settings.tenant_api_rps;
        if rps == 0 {
            return Ok(());
        }
        let second = now.timestamp();
        let counter = format!("api#{second}");
        let ctl = &self.control;
        let table = &ctl.cfg().jobs_table;
        match sundial_core::store::quota::take(
            ctl.ddb(),
            table,
            &caller.tenant,
            &counter,
            1,
            rps,
            Some(second + 60),
        )
        .await
        {
            Ok(true) => Ok(()),
            Ok(false) => Err(ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "throttled",
                format!("at most {rps} requests a second per tenant; retry after the Retry-After seconds"),
            )
            .retry_after(1)),
            Err(e) => {
                tracing::warn!(tenant = %caller.tenant, error = %e, "the per-tenant throttle could not count a request; let through");
                Ok(())
            }
        }
    }

    /// The answer of the routes served without a caller: the console's files and the OpenAPI
    /// document.
    fn unauthenticated(&self, op: Op, params: &[String], req: &ApiRequest) -> Option<Res> {
        match op {
            Op::Console | Op::ConsoleFile => Some(Ok(crate::console::serve(
                params.first().map(String::as_str),
                &req.headers,
                &self.console,
            ))),
            Op::OpenApi => Some(openapi()),
            _ => None,
        }
    }

    /// Refuses a body over the size limit (413) or, when there is one, not sent as JSON (415).
    fn check_body(&self, req: &ApiRequest) -> Result<(), ApiError> {
        let max = self.settings.max_body_bytes;
        if req.body.len() > max {
            return Err(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                format!(
                    "the body is {} bytes; the limit is {max} (pass large parameters by reference in paramsRef)",
                    req.body.len(),
                ),
            )
            .field("body"));
        }
        if req.body.is_empty() || is_json(&req.headers) {
            return Ok(());
        }
        Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "a request body must be sent with Content-Type: application/json",
        )
        .field("Content-Type"))
    }

    /// Runs one matched, authorized, size- and type-checked request at `now`.
    pub(crate) async fn exec(
        &self,
        op: Op,
        params: &[String],
        req: &ApiRequest,
        caller: &Caller,
        now: DateTime<Utc>,
    ) -> Res {
        let cx = &Cx::new(self, params, req, caller, now);
        match op {
            Op::OpenApi | Op::Console | Op::ConsoleFile => ok(Value::Null),
            Op::CreateJob => jobs::create(cx).await,
            Op::ListJobs => jobs::list(cx).await,
            Op::GetJob => jobs::get(cx).await,
            Op::UpdateJob => jobs::update(cx).await,
            Op::DeleteJob => jobs::set_state(cx, JobState::Deleted).await,
            Op::PauseJob => jobs::set_state(cx, JobState::Paused).await,
            Op::ResumeJob => jobs::set_state(cx, JobState::Enabled).await,
            Op::GetJobVersion => jobs::get_version(cx).await,
            Op::ListJobVersions => jobs::list_versions(cx).await,
            Op::Preview => schedules::preview(cx).await,
            Op::UpcomingFires => schedules::upcoming(cx).await,
            Op::TzReport => schedules::tz_report(cx).await,
            Op::TriggerJob => executions::trigger(cx).await,
            Op::BackfillJob => executions::backfill(cx).await,
            Op::ListJobExecutions => executions::list_for_job(cx).await,
            Op::ListExecutions => executions::list_by_status(cx).await,
            Op::GetExecution => executions::get(cx).await,
            Op::ListChildren => executions::children(cx).await,
            Op::ExecutionLogs => executions::logs(cx).await,
            Op::CancelExecution => executions::cancel(cx).await,
            Op::ListDlq => dlq::list(cx).await,
            Op::ReplayDlq => dlq::replay_many(cx).await,
            Op::ReplayOne => dlq::replay_one(cx).await,
            Op::PutCalendar => calendars::put(cx).await,
            Op::GetCalendar => calendars::get(cx).await,
            Op::DeleteCalendar => calendars::delete(cx).await,
            Op::ListCalendars => calendars::list(cx).await,
            Op::GetCalendarVersion => calendars::get_version(cx).await,
            Op::PutResource => resource_limits::put(cx).await,
            Op::GetResource => resource_limits::get(cx).await,
            Op::DeleteResource => resource_limits::delete(cx).await,
            Op::ListResources => resource_limits::list(cx).await,
            Op::ListOperations => ops::list(cx).await,
        }
    }
}

/// The operation and path parameters of the request's route, or the answer when it has none:
/// 405 with `Allow` for a known path, 404 otherwise.
fn route_of(req: &ApiRequest) -> Result<(Op, Vec<String>), Res> {
    match matches(&req.method, &req.path) {
        Matched::Route(op, p) => Ok((op, p)),
        Matched::MethodNotAllowed(allowed) => {
            let e = ApiError::new(StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed", "method not allowed");
            Err(Ok(ApiResponse::from(e).header(lambda_http::http::header::ALLOW, allowed.join(", "))))
        }
        Matched::NotFound => Err(Err(ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such route"))),
    }
}

/// `/openapi.json`.
fn openapi() -> Res {
    let doc: Value = serde_json::from_str(OPENAPI)
        .map_err(|_| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", "internal error"))?;
    ok(doc)
}

/// Whether the Content-Type is `application/json` (parameters such as `charset` aside). Required,
/// not merely checked when present: a web page can post `text/plain` or no type cross-site
/// without a CORS preflight, never `application/json`.
fn is_json(headers: &HeaderMap) -> bool {
    let ct = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let media = ct.split(';').next().unwrap_or_default().trim();
    media.eq_ignore_ascii_case("application/json")
}

/// The `Idempotency-Key` of a request whose operation honours one (create, trigger-now,
/// backfill); other operations ignore the header.
fn idempotency_key(op: Op, headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    match op {
        Op::CreateJob | Op::TriggerJob | Op::BackfillJob => idempotency::key_of(headers),
        _ => Ok(None),
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use sundial_core::model::JobDefinition;

    #[test]
    fn body_errors_name_the_field() {
        let e = parse_body::<JobDefinition>(br#"{"schedule":{"expression":"* * * * *","timezone":"UTC"},"target":{"type":"http","url":"https://x"},"retry":{"maxAttempts":-1}}"#).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("retry.maxAttempts"), "{e:?}");
        let e = parse_body::<JobDefinition>(br#"{"schedule":{"expression":"* * * * *","timezone":"UTC"},"target":{"type":"http","url":"https://x"},"retry":{"tries":3}}"#).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("retry.tries"), "{e:?}");
        let e = parse_body::<JobDefinition>(br#"{"schedule":{"expression":"* * * * *","timezone":"UTC"},"target":{"type":"http","url":"https://x"},"colour":1}"#).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("colour"), "{e:?}");
        let e = parse_body::<JobDefinition>(br#"{"schedule":"#).unwrap_err();
        assert_eq!((e.code, e.field.as_deref()), ("invalid_json", Some("body")));
        assert!(!e.message.contains("line"), "{}", e.message);
    }
}
