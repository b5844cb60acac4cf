//! `Idempotency-Key` on create, trigger-now and backfill: a client that retries after a
//! timeout (a 504 from the gateway, a dropped connection) with the same key and the same
//! request gets the first answer again instead of a second job, run or backfill.
//!
//! - The first request with a key claims it ([`sundial_store::idem`]: a record with the
//!   request's fingerprint, the instant it runs at, a 30 s lease and an owner nonce), runs, and
//!   stores a 2xx answer for 24 hours.
//! - A retry with the same key and the same request gets that answer back, with
//!   `Idempotent-Replayed: true`. The same key with another request (other operation, path or
//!   body) is 422 `idempotency_key_reused`; while the first is still running, 409
//!   `idempotency_in_progress` with `Retry-After: 1`.
//! - Any other answer (4xx, 5xx) deletes the record: a refused request leaves nothing stored,
//!   and a retry runs anew (and, the request being the same, is refused the same way).
//! - A request that dies mid-way (the process killed after its writes, before storing the
//!   answer) leaves the lease to expire; the retry then takes the key over and runs again *at
//!   the first request's instant*. Trigger-now then finds its execution already there (409, no
//!   second run); a create finds the job (409 `already_exists`); a backfill counts the fires it
//!   created as `existing`. The answer differs in that one case, the effect never doubles.

use crate::error::ApiError;
use crate::extract::Now;
use crate::Api;
use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::http::header::HeaderName;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use chrono::{DateTime, Utc};
use http_body_util::BodyExt;
use std::sync::atomic::{AtomicU64, Ordering};
use sundial_api_types::ErrorCode;
use sundial_core::control::{Caller, ControlError};
use sundial_store::idem::{self, Claim, IdemRecord, IdemState};
use sundial_store::items::ms_to_dt;
use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::{ObjectBuilder, Required, Type};

/// The request header.
pub const HEADER_NAME: &str = "Idempotency-Key";
/// The answer header marking a replay.
pub const REPLAYED: &str = "idempotent-replayed";
/// How long an answer is kept (seconds).
pub const RETENTION_SECS: i64 = 86_400;
/// How long a running request holds its key (ms).
const LEASE_MS: i64 = 30_000;

/// The operations that honour the header (method, route, and the name its fingerprint uses);
/// every other operation ignores it. A test holds this list to the operations whose document
/// names the header.
pub const OPERATIONS: &[(Method, &str, &str)] = &[
    (Method::POST, "/v1/jobs", "CreateJob"),
    (Method::POST, "/v1/jobs/{jobId}/trigger", "TriggerJob"),
    (Method::POST, "/v1/jobs/{jobId}/backfill", "BackfillJob"),
    (Method::POST, "/v1/jobs/{jobId}/events", "PostJobEvent"),
];

/// The `Idempotency-Key` header as the document names it on the operations above. Here, beside
/// [`HEADER_NAME`], rather than with the extractors: this layer reads [`crate::extract::Now`],
/// so `extract.rs` naming the header would make the two files import each other.
pub struct IdempotencyKeyHeader;

impl utoipa::IntoParams for IdempotencyKeyHeader {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        let schema = ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(Some(1))
            .max_length(Some(255))
            .pattern(Some("^[!-~]+$"));
        let p = ParameterBuilder::new()
            .name(HEADER_NAME)
            .parameter_in(ParameterIn::Header)
            .required(Required::False)
            .description(Some("Makes the request safe to retry: for 24 hours the same key with the same request gets the first answer again (with `Idempotent-Replayed: true`), the same key with another request is 422, and while the first still runs 409 `idempotency_in_progress`. Answers other than 2xx are not kept."))
            .schema(Some(schema))
            .build();
        vec![p]
    }
}

/// The `Idempotency-Key` of a request: 1-255 visible ASCII characters, or a 400.
pub fn key_of(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(v) = headers.get(HEADER_NAME) else { return Ok(None) };
    let k = v.to_str().unwrap_or_default();
    if k.is_empty() || k.len() > 255 || !k.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ApiError::invalid("Idempotency-Key", "must be 1-255 visible ASCII characters"));
    }
    Ok(Some(k.to_string()))
}

/// FNV-1a (64-bit) of the operation, path and body: stable across builds, unlike `std`'s hasher.
fn fingerprint(op: &str, path: &str, body: &[u8]) -> String {
    let h = [op.as_bytes(), b"\n", path.as_bytes(), b"\n", body]
        .into_iter()
        .fold(sundial_hash::Fnv1a::new(), sundial_hash::Fnv1a::write);
    format!("{:016x}:{}", h.finish(), body.len())
}

fn nonce(now: DateTime<Utc>) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}-{}",
        std::process::id(),
        now.timestamp_nanos_opt().unwrap_or_default(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

fn store_error(e: sundial_store::StoreError) -> ApiError {
    ControlError::from(e).into()
}

fn in_progress() -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        ErrorCode::IdempotencyInProgress,
        "a request with this Idempotency-Key is still running; retry shortly",
    )
    .field("Idempotency-Key")
    .retry_after(1)
}

fn replay(rec: &IdemRecord, status: u16) -> Response {
    let (headers, body) = rec.answer.clone().unwrap_or_default();
    let headers: Vec<(String, String)> = serde_json::from_str(&headers).unwrap_or_default();
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    let h = r.headers_mut();
    h.insert(axum::http::header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    for (k, v) in headers {
        if let (Ok(name), Ok(value)) = (HeaderName::from_bytes(k.as_bytes()), HeaderValue::from_str(&v)) {
            h.insert(name, value);
        }
    }
    h.insert(HeaderName::from_static(REPLAYED), HeaderValue::from_static("true"));
    r
}

/// The operation's name when it honours the header.
fn operation(req: &Request) -> Option<&'static str> {
    let route = req.extensions().get::<MatchedPath>()?.as_str();
    OPERATIONS.iter().find(|(m, p, _)| m == req.method() && *p == route).map(|(_, _, n)| *n)
}

/// The layer's function.
pub async fn layer(State(api): State<Api>, req: Request, next: Next) -> Response {
    let Some(op) = operation(&req) else { return next.run(req).await };
    let key = match key_of(req.headers()) {
        Ok(Some(k)) => k,
        Ok(None) => return next.run(req).await,
        Err(e) => return e.into_response(),
    };
    let (Some(caller), Some(Now(now))) =
        (req.extensions().get::<Caller>().cloned(), req.extensions().get::<Now>().copied())
    else {
        return next.run(req).await;
    };
    match run(&api, op, &caller, &key, now, req, next).await {
        Ok(r) | Err(r) => r,
    }
}

/// Runs the request under `key` (see the module docs): `Err` is an answer given without running.
async fn run(
    api: &Api,
    op: &str,
    caller: &Caller,
    key: &str,
    now: DateTime<Utc>,
    req: Request,
    next: Next,
) -> Result<Response, Response> {
    let (ddb, table) = (api.control().ddb(), api.control().cfg().jobs_table.clone());
    let tenant = &caller.tenant;
    let (mut parts, body) = req.into_parts();
    let body: Bytes = body.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    let fp = fingerprint(op, parts.uri.path(), &body);
    let now_ms = now.timestamp_millis();
    let owner = nonce(now);
    let mut claim = Claim {
        fingerprint: &fp,
        at_ms: now_ms,
        lease_ms: now_ms + LEASE_MS,
        owner: &owner,
        expires_at: now.timestamp() + RETENTION_SECS,
    };
    let fail = |e: ApiError| e.into_response();
    // A key seen for the first time: one write. Otherwise the record decides.
    if let Err(held) =
        idem::claim_new(ddb, &table, tenant, key, &claim).await.map_err(|e| fail(store_error(e)))?
    {
        let prev = match held {
            Some(p) => Some(p),
            None => idem::get(ddb, &table, tenant, key).await.map_err(|e| fail(store_error(e)))?,
        };
        // Gone between the write and the read (its request was refused): someone is at it.
        let Some(p) = prev else { return Err(fail(in_progress())) };
        if p.fingerprint != fp {
            return Err(fail(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                ErrorCode::IdempotencyKeyReused,
                "this Idempotency-Key was used for a different request (operation, path or body) in the last 24 hours",
            )
            .field("Idempotency-Key")));
        }
        match p.state {
            IdemState::Done(status) => return Err(replay(&p, status)),
            IdemState::Running if p.lease_ms > now_ms => return Err(fail(in_progress())),
            // Died mid-way: run again at its instant, so the effect cannot double.
            IdemState::Running => {
                parts.extensions.insert(Now(ms_to_dt(p.at_ms)));
            }
        }
        claim.at_ms = p.at_ms;
        if !idem::claim(ddb, &table, tenant, key, &claim, Some(&p)).await.map_err(|e| fail(store_error(e)))? {
            return Err(fail(in_progress()));
        }
    }
    let resp = next.run(Request::from_parts(parts, Body::from(body))).await;
    Ok(keep_answer(api, tenant, key, &owner, resp).await)
}

/// Stores a 2xx answer under the key (status, headers but the type and request id, body) and
/// gives it back; any other answer is released, not kept.
async fn keep_answer(api: &Api, tenant: &str, key: &str, owner: &str, resp: Response) -> Response {
    let (ddb, table) = (api.control().ddb(), &api.control().cfg().jobs_table);
    let (rparts, rbody) = resp.into_parts();
    let rbytes: Bytes = rbody.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    let stored = rparts.status.is_success().then(|| {
        let headers: Vec<(String, String)> = rparts
            .headers
            .iter()
            .filter(|(k, _)| {
                *k != axum::http::header::CONTENT_TYPE && *k != crate::layers::request_id::HEADER
            })
            .filter_map(|(k, v)| Some((k.to_string(), v.to_str().ok()?.to_string())))
            .collect();
        (
            rparts.status.as_u16(),
            serde_json::to_string(&headers).unwrap_or_default(),
            String::from_utf8_lossy(&rbytes).into_owned(),
        )
    });
    if let Err(e) = idem::finish(ddb, table, tenant, key, owner, stored).await {
        // The answer stands; a retry after the lease runs again at the same instant (above).
        tracing::warn!(error = %e, "could not store the Idempotency-Key answer");
    }
    Response::from_parts(rparts, Body::from(rbytes))
}
