//! `Idempotency-Key` on create, trigger-now and backfill: a client that retries after a
//! timeout (a 504 from the gateway, a dropped connection) with the same key and the same
//! request gets the first answer again instead of a second job, run or backfill.
//!
//! - The first request with a key claims it ([`sundial_core::store::idem`]: a record with the
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
use crate::router::{Api, ApiRequest, ApiResponse, Res};
use crate::routes::Op;
use chrono::{DateTime, Utc};
use lambda_http::http::header::HeaderName;
use lambda_http::http::{HeaderMap, StatusCode};
use std::sync::atomic::{AtomicU64, Ordering};
use sundial_core::control::{Caller, ControlError};
use sundial_core::store::idem::{self, Claim, IdemRecord, IdemState};
use sundial_core::store::items::ms_to_dt;

/// The request header.
pub const HEADER: &str = "idempotency-key";
/// The answer header marking a replay.
pub const REPLAYED: &str = "idempotent-replayed";
/// How long an answer is kept (seconds).
pub const RETENTION_SECS: i64 = 86_400;
/// How long a running request holds its key (ms).
const LEASE_MS: i64 = 30_000;

/// The `Idempotency-Key` of a request: 1-255 visible ASCII characters, or a 400.
pub fn key_of(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(v) = headers.get(HEADER) else { return Ok(None) };
    let k = v.to_str().unwrap_or_default();
    if k.is_empty() || k.len() > 255 || !k.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ApiError::invalid("Idempotency-Key", "must be 1-255 visible ASCII characters"));
    }
    Ok(Some(k.to_string()))
}

/// FNV-1a (64-bit) of the operation, path and body: stable across builds, unlike `std`'s hasher.
fn fingerprint(op: Op, req: &ApiRequest) -> String {
    let h = [format!("{op:?}").as_bytes(), b"\n", req.path.as_bytes(), b"\n", &req.body[..]]
        .into_iter()
        .fold(sundial_hash::Fnv1a::new(), sundial_hash::Fnv1a::write);
    format!("{:016x}:{}", h.finish(), req.body.len())
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

fn store_error(e: sundial_core::store::StoreError) -> ApiError {
    ControlError::from(e).into()
}

fn in_progress() -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "idempotency_in_progress",
        "a request with this Idempotency-Key is still running; retry shortly",
    )
    .field("Idempotency-Key")
    .retry_after(1)
}

fn replay(rec: &IdemRecord, status: u16) -> Res {
    let (headers, body) = rec.answer.clone().unwrap_or_default();
    let headers: Vec<(String, String)> = serde_json::from_str(&headers).unwrap_or_default();
    let mut r = ApiResponse::json(
        StatusCode::from_u16(status).unwrap_or(StatusCode::OK),
        serde_json::from_str(&body).unwrap_or_default(),
    );
    for (k, v) in headers {
        if let Ok(name) = HeaderName::from_bytes(k.as_bytes()) {
            r = r.header(name, v);
        }
    }
    Ok(r.header(HeaderName::from_static(REPLAYED), "true"))
}

/// Runs `op` under `key` (see the module docs).
pub async fn run(
    api: &Api,
    op: Op,
    params: &[String],
    req: &ApiRequest,
    caller: &Caller,
    key: &str,
    now: DateTime<Utc>,
) -> Res {
    let (ddb, table) = (api.control().ddb(), api.control().cfg().jobs_table.clone());
    let tenant = &caller.tenant;
    let fp = fingerprint(op, req);
    let now_ms = now.timestamp_millis();
    let owner = nonce(now);
    let mut claim = Claim {
        fingerprint: &fp,
        at_ms: now_ms,
        lease_ms: now_ms + LEASE_MS,
        owner: &owner,
        expires_at: now.timestamp() + RETENTION_SECS,
    };
    let mut at = now;
    // A key seen for the first time: one write. Otherwise the record decides.
    if let Err(held) = idem::claim_new(ddb, &table, tenant, key, &claim).await.map_err(store_error)? {
        let prev = match held {
            Some(p) => Some(p),
            None => idem::get(ddb, &table, tenant, key).await.map_err(store_error)?,
        };
        // Gone between the write and the read (its request was refused): someone is at it.
        let Some(p) = prev else { return Err(in_progress()) };
        if p.fingerprint != fp {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "idempotency_key_reused",
                "this Idempotency-Key was used for a different request (operation, path or body) in the last 24 hours",
            )
            .field("Idempotency-Key"));
        }
        match p.state {
            IdemState::Done(status) => return replay(&p, status),
            IdemState::Running if p.lease_ms > now_ms => return Err(in_progress()),
            // Died mid-way: run again at its instant, so the effect cannot double.
            IdemState::Running => at = ms_to_dt(p.at_ms),
        }
        claim.at_ms = p.at_ms;
        if !idem::claim(ddb, &table, tenant, key, &claim, Some(&p)).await.map_err(store_error)? {
            return Err(in_progress());
        }
    }
    let result = api.exec(op, params, req, caller, at).await;
    let answer = result.as_ref().ok().filter(|r| r.status.is_success()).cloned();
    let stored = answer.map(|r| {
        let headers: Vec<(String, String)> =
            r.headers.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        (
            r.status.as_u16(),
            serde_json::to_string(&headers).unwrap_or_default(),
            String::from_utf8(r.body_bytes()).unwrap_or_default(),
        )
    });
    if let Err(e) = idem::finish(ddb, &table, tenant, key, &owner, stored).await {
        // The answer stands; a retry after the lease runs again at the same instant (above).
        tracing::warn!(error = %e, "could not store the Idempotency-Key answer");
    }
    result
}
