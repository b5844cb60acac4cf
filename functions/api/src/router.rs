//! The router: one [`ApiRequest`] in, one [`ApiResponse`] out. Both entry points — the Lambda
//! ([`crate::lambda`]) and the local run's loopback server ([`crate::local`]) — translate their
//! requests into this shape and call [`Api::handle`], so the local run serves exactly the routes,
//! validation and errors of the deployed API.

use crate::auth::PrincipalTags;
use crate::dto;
use crate::error::ApiError;
use crate::idempotency;
use crate::routes::{matches, Matched, Op};
use bytes::Bytes;
use chrono::{DateTime, Utc};
use lambda_http::http::header::{HeaderName, CONTENT_TYPE, ETAG, IF_MATCH, LOCATION};
use lambda_http::http::{HeaderMap, Method, StatusCode};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;
use sundial_core::config::ApiSettings;
use sundial_core::control::executions::{BackfillRequest, JobExecFilter};
use sundial_core::control::{self, Caller, Control};
use sundial_core::execution::clock::Clock;
use sundial_core::model::{ExecStatus, JobDefinition, JobState};

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

/// Fires per job the tz report compares when `fires` is not sent.
const DEFAULT_REPORT_FIRES: usize = 50;

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

struct Query(HashMap<String, String>);

impl Query {
    fn parse(raw: &str) -> Self {
        Query(form_urlencoded::parse(raw.as_bytes()).into_owned().collect())
    }
    /// The value of `k` when sent. An empty value (`?limit=`) is sent, and refused by whichever
    /// parser reads it: the document allows no empty parameter.
    fn str(&self, k: &str) -> Option<&str> {
        self.0.get(k).map(String::as_str)
    }
    /// An id parameter (`jobId`), validated.
    fn id(&self, k: &'static str) -> Result<Option<&str>, ApiError> {
        match self.str(k) {
            None => Ok(None),
            Some(v) => sundial_core::keys::validate_id(k, v)
                .map(|_| Some(v))
                .map_err(|e| ApiError::invalid(k, e.reason)),
        }
    }
    fn limit(&self) -> Result<Option<u32>, ApiError> {
        match self.str("limit") {
            None => Ok(None),
            Some(v) => match v.parse::<u32>() {
                Ok(n) if (1..=100).contains(&n) => Ok(Some(n)),
                _ => Err(ApiError::invalid("limit", "must be an integer between 1 and 100")),
            },
        }
    }
    fn bool(&self, k: &'static str) -> Result<bool, ApiError> {
        match self.str(k) {
            None | Some("false") => Ok(false),
            Some("true") => Ok(true),
            Some(_) => Err(ApiError::invalid(k, "must be true or false")),
        }
    }
    fn status(&self) -> Result<Option<ExecStatus>, ApiError> {
        match self.str("status") {
            None => Ok(None),
            Some(s) => ExecStatus::parse(&s.to_ascii_uppercase()).map(Some).ok_or_else(|| {
                ApiError::invalid(
                    "status",
                    "must be one of READY, RUNNING, RETRY_WAIT, SUCCEEDED, FAILED, DEAD, CANCELED, SKIPPED, WAITING",
                )
            }),
        }
    }
}

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

/// `If-Match: "3"`, `W/"3"` or `3`.
fn if_match(headers: &HeaderMap) -> Result<Option<u64>, ApiError> {
    let Some(v) = headers.get(IF_MATCH) else { return Ok(None) };
    let bad = || ApiError::invalid("If-Match", "must be the job's ETag (\"3\") or version (3)");
    let v = v.to_str().map_err(|_| bad())?.trim();
    let v = v.strip_prefix("W/").unwrap_or(v).trim_matches('"');
    v.parse::<u64>().map(Some).map_err(|_| bad())
}

fn created(body: Value, location: String, etag: String) -> ApiResponse {
    ApiResponse::json(StatusCode::CREATED, body).header(LOCATION, location).header(ETAG, etag)
}

fn ok(body: Value) -> Res {
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

    async fn route(&self, req: ApiRequest) -> Res {
        let (op, params) = match matches(&req.method, &req.path) {
            Matched::Route(op, p) => (op, p),
            Matched::MethodNotAllowed(allowed) => {
                let e =
                    ApiError::new(StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed", "method not allowed");
                return Ok(ApiResponse::from(e).header(lambda_http::http::header::ALLOW, allowed.join(", ")));
            }
            Matched::NotFound => {
                return Err(ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such route"))
            }
        };
        if let Op::Console | Op::ConsoleFile = op {
            return Ok(crate::console::serve(
                params.first().map(String::as_str),
                &req.headers,
                &self.console,
            ));
        }
        if op == Op::OpenApi {
            let doc: Value = serde_json::from_str(OPENAPI).map_err(|_| {
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", "internal error")
            })?;
            return ok(doc);
        }
        let caller = req.caller.clone()?;
        if req.body.len() > self.settings.max_body_bytes {
            return Err(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                format!(
                    "the body is {} bytes; the limit is {} (pass large parameters by reference in paramsRef)",
                    req.body.len(),
                    self.settings.max_body_bytes
                ),
            )
            .field("body"));
        }
        if !req.body.is_empty() {
            // Required, not merely checked when present: a web page can post `text/plain` or no
            // type cross-site without a CORS preflight, never `application/json`.
            let ct = req.headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
            let media = ct.split(';').next().unwrap_or_default().trim();
            if !media.eq_ignore_ascii_case("application/json") {
                return Err(ApiError::new(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    "unsupported_media_type",
                    "a request body must be sent with Content-Type: application/json",
                )
                .field("Content-Type"));
            }
        }
        let now = self.clock.now();
        if matches!(op, Op::CreateJob | Op::TriggerJob | Op::BackfillJob) {
            if let Some(key) = idempotency::key_of(&req.headers)? {
                return idempotency::run(self, op, &params, &req, &caller, &key, now).await;
            }
        }
        self.exec(op, &params, &req, &caller, now).await
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
        let caller = caller.clone();
        let q = Query::parse(&req.query);
        let p = |i: usize| params.get(i).map(String::as_str).unwrap_or_default();
        let ctl = &*self.control;
        match op {
            Op::OpenApi | Op::Console | Op::ConsoleFile => ok(Value::Null),
            Op::CreateJob => self.create_job(&caller, &req.body, now).await,
            Op::ListJobs => {
                let page =
                    control::jobs::list(ctl, &caller, q.limit()?, q.str("cursor"), q.bool("includeDeleted")?)
                        .await?;
                ok(dto::page(page.items.iter().map(|j| dto::job_at(j, now)).collect(), page.next))
            }
            Op::Preview => {
                let b: dto::PreviewBody = parse_body(&req.body)?;
                let count = b.count.unwrap_or(10);
                if !(1..=1000).contains(&count) {
                    return Err(ApiError::invalid("count", "must be between 1 and 1000"));
                }
                let after = b.after.unwrap_or(now);
                let fires = control::jobs::preview(ctl, &caller, &b.schedule, after, count as usize).await?;
                ok(dto::preview(&fires, b.schedule.business_calendar.is_some()))
            }
            Op::GetJob => {
                let j = control::jobs::get(ctl, &caller, p(0)).await?;
                Ok(ApiResponse::json(StatusCode::OK, dto::job_at(&j, now)).header(ETAG, dto::etag(j.version)))
            }
            Op::UpdateJob => {
                let expected = if_match(&req.headers)?.ok_or_else(|| {
                    ApiError::new(
                        StatusCode::PRECONDITION_REQUIRED,
                        "precondition_required",
                        "send If-Match with the job's ETag or version",
                    )
                    .field("If-Match")
                })?;
                let def = definition_body(&req.body, Some(p(0)))?;
                let v = control::jobs::update(ctl, &caller, p(0), expected, def, now).await?;
                Ok(ApiResponse::json(StatusCode::OK, dto::job_view(&v))
                    .header(ETAG, dto::etag(v.job.version)))
            }
            Op::DeleteJob | Op::PauseJob | Op::ResumeJob => {
                let state = match op {
                    Op::DeleteJob => JobState::Deleted,
                    Op::PauseJob => JobState::Paused,
                    _ => JobState::Enabled,
                };
                let v =
                    control::jobs::set_state(ctl, &caller, p(0), state, if_match(&req.headers)?, now).await?;
                Ok(ApiResponse::json(StatusCode::OK, dto::job_view(&v))
                    .header(ETAG, dto::etag(v.job.version)))
            }
            Op::TriggerJob => {
                let e = control::executions::trigger_now(ctl, &caller, p(0), now).await?;
                let loc = format!("/v1/executions/{}", e.id());
                Ok(ApiResponse::json(StatusCode::ACCEPTED, dto::execution(&e, true)).header(LOCATION, loc))
            }
            Op::BackfillJob => {
                let b: dto::BackfillBody = parse_body(&req.body)?;
                let r = BackfillRequest { from: b.from, to: b.to, pace_secs: b.pace_secs.unwrap_or(1) };
                let rep = control::executions::backfill(ctl, &caller, p(0), &r, now).await?;
                Ok(ApiResponse::json(
                    StatusCode::ACCEPTED,
                    json!({
                        "fires": rep.fires, "created": rep.created, "existing": rep.existing,
                        "lastStartAt": rep.last_start_at.map(dto::time),
                    }),
                ))
            }
            Op::PutCalendar => {
                let spec: sundial_core::schedule::BusinessCalendarSpec = parse_body(&req.body)?;
                let v =
                    control::calendars::put(ctl, &caller, p(0), if_match(&req.headers)?, spec, now).await?;
                let status = if v.created { StatusCode::CREATED } else { StatusCode::OK };
                Ok(ApiResponse::json(status, dto::calendar_view(&v))
                    .header(ETAG, dto::etag(v.calendar.version)))
            }
            Op::GetCalendar => {
                let c = control::calendars::get(ctl, &caller, p(0)).await?;
                Ok(ApiResponse::json(StatusCode::OK, dto::calendar(&c)).header(ETAG, dto::etag(c.version)))
            }
            Op::DeleteCalendar => {
                let c = control::calendars::delete(ctl, &caller, p(0), if_match(&req.headers)?, now).await?;
                ok(json!({"calendarId": c.id, "version": c.version, "deleted": true}))
            }
            Op::ListCalendars => {
                let page = control::calendars::list(ctl, &caller, q.limit()?, q.str("cursor")).await?;
                ok(dto::page(page.items.iter().map(dto::calendar).collect(), page.next))
            }
            Op::GetCalendarVersion => {
                let v: u64 = p(1)
                    .parse()
                    .ok()
                    .filter(|v| *v > 0)
                    .ok_or_else(|| ApiError::invalid("version", "must be a positive integer"))?;
                let c = control::calendars::get_version(ctl, &caller, p(0), v).await?;
                ok(dto::calendar(&c))
            }
            Op::PutResource => {
                let b: dto::ResourceBody = parse_body(&req.body)?;
                let (r, created) = control::resource_limits::put(ctl, &caller, p(0), b.limit, now).await?;
                let status = if created { StatusCode::CREATED } else { StatusCode::OK };
                Ok(ApiResponse::json(status, dto::resource(&r, true)).header(ETAG, dto::etag(r.version)))
            }
            Op::GetResource => {
                let v = control::resource_limits::get(ctl, &caller, p(0), now).await?;
                ok(dto::resource_view(&v))
            }
            Op::DeleteResource => {
                control::resource_limits::delete(ctl, &caller, p(0)).await?;
                ok(json!({"resource": p(0), "deleted": true}))
            }
            Op::ListResources => {
                let operator = control::resource_limits::is_operator(ctl, &caller);
                let all = control::resource_limits::list(ctl).await?;
                ok(dto::page(all.iter().map(|r| dto::resource(r, operator)).collect(), None))
            }
            Op::GetJobVersion => {
                let v: u64 =
                    p(1).parse().map_err(|_| ApiError::invalid("version", "must be a positive integer"))?;
                let j = control::jobs::get_version(ctl, &caller, p(0), v).await?;
                ok(dto::job(&j))
            }
            Op::ListJobVersions => {
                let page =
                    control::jobs::list_versions(ctl, &caller, p(0), q.limit()?, q.str("cursor")).await?;
                ok(dto::page(page.items.iter().map(dto::job).collect(), page.next))
            }
            Op::UpcomingFires => {
                let days = match q.str("days") {
                    None => 28,
                    Some(v) => v
                        .parse::<i64>()
                        .ok()
                        .filter(|d| (1..=90).contains(d))
                        .ok_or_else(|| ApiError::invalid("days", "must be an integer between 1 and 90"))?,
                };
                let j = control::jobs::get(ctl, &caller, p(0)).await?;
                // From `from`, else from now, or from the schedule's start when that is later (a
                // job starting next spring shows its first weeks, not an empty window).
                let from = match q.str("from") {
                    Some(v) => DateTime::parse_from_rfc3339(v)
                        .map(|t| t.with_timezone(&Utc))
                        .map_err(|_| ApiError::invalid("from", "must be an RFC 3339 instant"))?,
                    None => j.definition.schedule.start.map_or(now, |s| s.max(now)),
                };
                let to = from + chrono::Duration::days(days);
                let u = match (j.state, sundial_core::trigger::cache::schedule_of(&j)) {
                    (JobState::Enabled, Ok(s)) => {
                        control::upcoming::upcoming(&j.definition.schedule, &s, from, to)
                    }
                    _ => control::upcoming::Upcoming { fires: vec![], truncated: false, transitions: vec![] },
                };
                ok(dto::upcoming(&u, &j.definition.schedule.timezone, from, to))
            }
            Op::ListJobExecutions => {
                let f = JobExecFilter {
                    status: q.status()?,
                    oldest_first: match q.str("order") {
                        None | Some("desc") => false,
                        Some("asc") => true,
                        Some(_) => return Err(ApiError::invalid("order", "must be asc or desc")),
                    },
                    limit: q.limit()?,
                    cursor: q.str("cursor").map(str::to_string),
                };
                let page = control::executions::list_for_job(ctl, &caller, p(0), &f).await?;
                ok(dto::page(page.items.iter().map(|e| dto::execution(e, false)).collect(), page.next))
            }
            Op::ListExecutions => {
                let st = q.status()?.ok_or_else(|| {
                    ApiError::invalid("status", "required: RETRY_WAIT, FAILED, DEAD or CANCELED (per job: /v1/jobs/{jobId}/executions)")
                })?;
                let page = control::executions::list_by_status(ctl, &caller, st, q.limit()?, q.str("cursor"))
                    .await?;
                ok(dto::page(page.items.iter().map(|e| dto::execution(e, false)).collect(), page.next))
            }
            Op::GetExecution => {
                let snap = control::executions::get_snapshot(ctl, &caller, p(0)).await?;
                let mut v = dto::execution(&snap.exec, true);
                v["checkpoint"] = snap.checkpoint.unwrap_or(Value::Null);
                v["totalRunMs"] = snap.total_run_ms.into();
                if snap.exec.children.is_some() {
                    let kids = control::executions::children(ctl, &caller, p(0)).await?;
                    v["childExecutions"] = kids.iter().map(|c| dto::execution(c, false)).collect();
                }
                ok(v)
            }
            Op::ListChildren => {
                let kids = control::executions::children(ctl, &caller, p(0)).await?;
                ok(dto::page(kids.iter().map(|c| dto::execution(c, false)).collect(), None))
            }
            Op::ExecutionLogs => {
                // The execution must be the caller's (404 otherwise), like every other read.
                let snap = control::executions::get_snapshot(ctl, &caller, p(0)).await?;
                let id = snap.exec.id();
                let lines = match &self.exec_logs {
                    Some(logs) => logs.lines(&caller.tenant, &id),
                    None => Vec::new(),
                };
                let url = crate::console::insights_url(&self.console, &id);
                ok(dto::exec_logs(&id, self.exec_logs.is_some(), &lines, url))
            }
            Op::CancelExecution => {
                let (e, done) = control::executions::cancel(ctl, &caller, p(0), now).await?;
                let status = if done { StatusCode::OK } else { StatusCode::ACCEPTED };
                Ok(ApiResponse::json(status, dto::execution(&e, true)))
            }
            Op::TzReport => {
                let fires = match q.str("fires") {
                    None => DEFAULT_REPORT_FIRES,
                    Some(v) => match v.parse::<usize>() {
                        Ok(n) if (1..=control::tzreport::MAX_REPORT_FIRES).contains(&n) => n,
                        _ => {
                            return Err(ApiError::invalid(
                                "fires",
                                format!(
                                    "must be an integer between 1 and {}",
                                    control::tzreport::MAX_REPORT_FIRES
                                ),
                            ))
                        }
                    },
                };
                let r = control::tzreport::report(ctl, &caller, fires, q.limit()?, q.str("cursor")).await?;
                ok(dto::tz_report(&r))
            }
            Op::ListDlq => {
                let page = control::dlq::list(ctl, &caller, q.limit()?, q.str("cursor")).await?;
                ok(dto::page(page.items.iter().map(|e| dto::execution(e, false)).collect(), page.next))
            }
            Op::ReplayDlq => {
                let b: dto::ReplayBody = parse_body(&req.body)?;
                let max = control::dlq::MAX_REASON_CHARS;
                if b.reason.as_ref().is_some_and(|r| r.chars().count() > max) {
                    return Err(ApiError::invalid("reason", format!("must be at most {max} characters")));
                }
                let reason = b.reason.as_deref().map(str::trim).filter(|r| !r.is_empty());
                let out =
                    control::dlq::replay_many_because(ctl, &caller, &b.execution_ids, reason, now).await?;
                let results: Vec<Value> =
                    out.iter().map(|(id, o)| json!({"executionId": id, "outcome": o.as_str()})).collect();
                ok(json!({"results": results}))
            }
            Op::ReplayOne => {
                use control::dlq::ReplayOutcome as R;
                match control::dlq::replay(ctl, &caller, p(0), now).await? {
                    R::Replayed | R::Resent => {
                        let e = control::executions::get(ctl, &caller, p(0)).await?;
                        Ok(ApiResponse::json(StatusCode::ACCEPTED, dto::execution(&e, true)))
                    }
                    R::NotFound => Err(ApiError::not_found("execution")),
                    R::NotDead(st) => Err(ApiError::new(
                        StatusCode::CONFLICT,
                        "not_dead",
                        format!("only DEAD executions are replayed; this one is {}", st.as_str()),
                    )
                    .field("executionId")),
                    R::TooOld => Err(ApiError::new(
                        StatusCode::CONFLICT,
                        "too_old",
                        "the execution is older than its job's retry.maxAgeSecs; workers would refuse it (trigger the job instead)",
                    )
                    .field("executionId")),
                }
            }
            Op::ListOperations => {
                let page =
                    control::ops::list(ctl, &caller, q.id("jobId")?, q.limit()?, q.str("cursor")).await?;
                ok(dto::page(page.items.iter().map(dto::ops).collect(), page.next))
            }
        }
    }

    async fn create_job(&self, caller: &Caller, body: &[u8], now: DateTime<Utc>) -> Res {
        let mut map: serde_json::Map<String, Value> = parse_body(body)?;
        let job_id = match map.remove("jobId") {
            Some(Value::String(s)) => s,
            Some(_) => return Err(ApiError::invalid("jobId", "must be a string")),
            None => return Err(ApiError::invalid("jobId", "required")),
        };
        let bytes = serde_json::to_vec(&Value::Object(map))
            .map_err(|_| ApiError::invalid("body", "not a JSON object"))?;
        let def: JobDefinition = parse_body(&bytes)?;
        let v = control::jobs::create(&self.control, caller, &job_id, def, now).await?;
        Ok(created(dto::job_view(&v), format!("/v1/jobs/{job_id}"), dto::etag(v.job.version)))
    }
}

/// The definition in an update body (a `jobId` in it must match the path).
fn definition_body(body: &[u8], path_job: Option<&str>) -> Result<JobDefinition, ApiError> {
    let mut map: serde_json::Map<String, Value> = parse_body(body)?;
    match (map.remove("jobId"), path_job) {
        (Some(Value::String(s)), Some(p)) if s != p => {
            return Err(ApiError::invalid("jobId", "does not match the job in the path (ids cannot change)"))
        }
        (Some(Value::String(_)), _) | (None, _) => {}
        (Some(_), _) => return Err(ApiError::invalid("jobId", "must be a string")),
    }
    for k in ["version", "etag", "state"] {
        map.remove(k);
    }
    let bytes = serde_json::to_vec(&Value::Object(map))
        .map_err(|_| ApiError::invalid("body", "not a JSON object"))?;
    parse_body(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn if_match_accepts_etags_and_versions() {
        let mut h = HeaderMap::new();
        assert_eq!(if_match(&h).unwrap(), None);
        for v in ["\"3\"", "W/\"3\"", "3"] {
            h.insert(IF_MATCH, v.parse().unwrap());
            assert_eq!(if_match(&h).unwrap(), Some(3), "{v}");
        }
        h.insert(IF_MATCH, "*".parse().unwrap());
        assert_eq!(if_match(&h).unwrap_err().field.as_deref(), Some("If-Match"));
    }
}
