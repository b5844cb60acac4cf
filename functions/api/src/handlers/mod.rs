//! The operations' handlers, one function per operation, grouped by what they act on. The router
//! ([`crate::router`]) has matched, authorized and size- and type-checked the request; a handler
//! parses what is left (path, query, body, `If-Match`), calls the control plane and shapes the
//! answer.

pub(crate) mod calendars;
pub(crate) mod dlq;
pub(crate) mod executions;
pub(crate) mod jobs;
pub(crate) mod ops;
pub(crate) mod resource_limits;
pub(crate) mod schedules;

use crate::error::ApiError;
use crate::router::{Api, ApiRequest};
use chrono::{DateTime, Utc};
use lambda_http::http::header::IF_MATCH;
use lambda_http::http::HeaderMap;
use std::collections::HashMap;
use sundial_core::control::{Caller, Control};
use sundial_core::model::ExecStatus;

/// One request as its handler sees it.
pub(crate) struct Cx<'a> {
    pub(crate) api: &'a Api,
    pub(crate) ctl: &'a Control,
    pub(crate) caller: &'a Caller,
    pub(crate) req: &'a ApiRequest,
    pub(crate) q: Query,
    pub(crate) now: DateTime<Utc>,
    params: &'a [String],
}

impl<'a> Cx<'a> {
    pub(crate) fn new(
        api: &'a Api,
        params: &'a [String],
        req: &'a ApiRequest,
        caller: &'a Caller,
        now: DateTime<Utc>,
    ) -> Self {
        Cx { api, ctl: api.control(), caller, req, q: Query::parse(&req.query), now, params }
    }

    /// The `i`th path parameter (empty when absent).
    pub(crate) fn p(&self, i: usize) -> &'a str {
        self.params.get(i).map(String::as_str).unwrap_or_default()
    }

    /// The request's `If-Match`.
    pub(crate) fn if_match(&self) -> Result<Option<u64>, ApiError> {
        if_match(&self.req.headers)
    }
}

/// The query string's parameters.
pub(crate) struct Query(HashMap<String, String>);

impl Query {
    fn parse(raw: &str) -> Self {
        Query(form_urlencoded::parse(raw.as_bytes()).into_owned().collect())
    }
    /// The value of `k` when sent. An empty value (`?limit=`) is sent, and refused by whichever
    /// parser reads it: the document allows no empty parameter.
    pub(crate) fn str(&self, k: &str) -> Option<&str> {
        self.0.get(k).map(String::as_str)
    }
    /// An id parameter (`jobId`), validated.
    pub(crate) fn id(&self, k: &'static str) -> Result<Option<&str>, ApiError> {
        match self.str(k) {
            None => Ok(None),
            Some(v) => sundial_core::keys::validate_id(k, v)
                .map(|_| Some(v))
                .map_err(|e| ApiError::invalid(k, e.reason)),
        }
    }
    pub(crate) fn limit(&self) -> Result<Option<u32>, ApiError> {
        match self.str("limit") {
            None => Ok(None),
            Some(v) => match v.parse::<u32>() {
                Ok(n) if (1..=100).contains(&n) => Ok(Some(n)),
                _ => Err(ApiError::invalid("limit", "must be an integer between 1 and 100")),
            },
        }
    }
    /// `limit` bounded by `max` (the children list's pages are larger than other lists').
    pub(crate) fn limit_up_to(&self, max: u32) -> Result<Option<u32>, ApiError> {
        match self.str("limit") {
            None => Ok(None),
            Some(v) => match v.parse::<u32>() {
                Ok(n) if (1..=max).contains(&n) => Ok(Some(n)),
                _ => Err(ApiError::invalid("limit", format!("must be an integer between 1 and {max}"))),
            },
        }
    }
    pub(crate) fn bool(&self, k: &'static str) -> Result<bool, ApiError> {
        match self.str(k) {
            None | Some("false") => Ok(false),
            Some("true") => Ok(true),
            Some(_) => Err(ApiError::invalid(k, "must be true or false")),
        }
    }
    pub(crate) fn status(&self) -> Result<Option<ExecStatus>, ApiError> {
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

/// `If-Match: "3"`, `W/"3"` or `3`.
fn if_match(headers: &HeaderMap) -> Result<Option<u64>, ApiError> {
    let Some(v) = headers.get(IF_MATCH) else { return Ok(None) };
    let bad = || ApiError::invalid("If-Match", "must be the job's ETag (\"3\") or version (3)");
    let v = v.to_str().map_err(|_| bad())?.trim();
    let v = v.strip_prefix("W/").unwrap_or(v).trim_matches('"');
    v.parse::<u64>().map(Some).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

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
