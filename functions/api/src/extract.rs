//! The extractors: a handler names what it needs (`Auth`, `Now`, `P<JobPath>`, `Q<ListQuery>`,
//! `Body<NewJob>`, `IfMatch`), and every one of them refuses bad input with the API's own error,
//! naming the field, parameter or header (`retry.maxAttempts`, `limit`, `If-Match`).

use crate::error::ApiError;
use axum::extract::{FromRequest, FromRequestParts, RawPathParams, Request};
use axum::http::header::IF_MATCH;
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use bytes::Bytes;
use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use sundial_api_types::ErrorCode;
use sundial_core::control::Caller;
use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::{ObjectBuilder, Required, Type};

/// The authenticated caller (the caller layer put it there, or answered 401/403).
#[derive(Debug, Clone)]
pub struct Auth(pub Caller);

impl<S: Send + Sync> FromRequestParts<S> for Auth {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        parts.extensions.get::<Caller>().cloned().map(Auth).ok_or_else(|| {
            tracing::error!("a handler that needs a caller ran without the caller layer");
            ApiError::internal()
        })
    }
}

/// The instant the request runs at: the API's clock, or for a retried `Idempotency-Key` request
/// that took over a dead one, the first request's instant (crate::layers::idempotency).
#[derive(Debug, Clone, Copy)]
pub struct Now(pub DateTime<Utc>);

impl<S: Send + Sync> FromRequestParts<S> for Now {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        parts.extensions.get::<Now>().copied().ok_or_else(|| {
            tracing::error!("a handler that needs the time ran without the clock layer");
            ApiError::internal()
        })
    }
}

/// Path parameters as a struct, by name (`jobId`, `version`): a value its type refuses is 400 on
/// that parameter.
#[derive(Debug)]
pub struct P<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for P<T> {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let raw = RawPathParams::from_request_parts(parts, state)
            .await
            .map_err(|_| ApiError::invalid("path", "a path parameter is not valid UTF-8"))?;
        let map: serde_json::Map<String, serde_json::Value> =
            raw.iter().map(|(k, v)| (k.to_string(), serde_json::Value::String(v.to_string()))).collect();
        serde_path_to_error::deserialize(serde_json::Value::Object(map)).map(P).map_err(named)
    }
}

/// Query parameters as a struct, by name: a value its type refuses is 400 on that parameter;
/// parameters the operation does not know are ignored.
#[derive(Debug)]
pub struct Q<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for Q<T> {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let raw = parts.uri.query().unwrap_or_default();
        // The last of a repeated parameter wins, as in a plain form decoder.
        let map: serde_json::Map<String, serde_json::Value> = form_urlencoded::parse(raw.as_bytes())
            .map(|(k, v)| (k.into_owned(), serde_json::Value::String(v.into_owned())))
            .collect();
        serde_path_to_error::deserialize(serde_json::Value::Object(map)).map(Q).map_err(named)
    }
}

/// A parameter error: its path is the parameter's name.
fn named(e: serde_path_to_error::Error<serde_json::Error>) -> ApiError {
    let field = e.path().to_string();
    let msg = e.into_inner().to_string();
    let missing = msg.strip_prefix("missing field `").and_then(|r| r.split_once('`')).map(|(n, _)| n);
    match missing {
        Some(name) => ApiError::invalid(name, "required"),
        None => ApiError::invalid(if field == "." { "path".to_string() } else { field }, msg),
    }
}

/// A body type: how it is read from the request's bytes (the body layer has bounded and
/// type-checked them).
pub trait FromBody: Sized {
    /// Reads the body.
    fn from_body(body: &[u8]) -> Result<Self, ApiError>;
}

/// The request body, read by [`FromBody`].
#[derive(Debug)]
pub struct Body<T>(pub T);

impl<S: Send + Sync, T: FromBody> FromRequest<S> for Body<T> {
    type Rejection = ApiError;
    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = Bytes::from_request(req, state).await.map_err(|_| {
            ApiError::new(StatusCode::BAD_REQUEST, ErrorCode::InvalidJson, "the body could not be read")
                .field("body")
        })?;
        T::from_body(&bytes).map(Body)
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
                ErrorCode::InvalidJson,
                format!("the body is not valid JSON: {msg}"),
            )
            .field("body");
        }
        ApiError::invalid(body_field(&path, &msg), msg)
    })
}

/// The field a body error is about. The path already ends with an unknown field; a missing field
/// is named only in the message, under the path of its parent; inside internally tagged enums
/// (`target`, `misfire`) serde buffers the object, so the path stops at the enum and an unknown
/// field is named only in the message too.
fn body_field(path: &str, msg: &str) -> String {
    let missing = msg.strip_prefix("missing field `").and_then(|r| r.split_once('`')).map(|(n, _)| n);
    let unknown = msg.strip_prefix("unknown field `").and_then(|r| r.split_once('`')).map(|(n, _)| n);
    let unknown = unknown.filter(|n| path != *n && !path.ends_with(&format!(".{n}")));
    match (missing.or(unknown), path) {
        (Some(name), ".") => name.to_string(),
        (Some(name), parent) => format!("{parent}.{name}"),
        (None, ".") => "body".to_string(),
        (None, p) => p.to_string(),
    }
}

/// `If-Match: "3"`, `W/"3"` or `3`: the version the change is for (optional).
#[derive(Debug, Clone, Copy)]
pub struct IfMatch(pub Option<u64>);

/// `If-Match`, required (an edit): 428 without it.
#[derive(Debug, Clone, Copy)]
pub struct IfMatchRequired(pub u64);

fn if_match(headers: &HeaderMap) -> Result<Option<u64>, ApiError> {
    let Some(v) = headers.get(IF_MATCH) else { return Ok(None) };
    let bad = || ApiError::invalid("If-Match", "must be the job's ETag (\"3\") or version (3)");
    let v = v.to_str().map_err(|_| bad())?.trim();
    let v = v.strip_prefix("W/").unwrap_or(v).trim_matches('"');
    v.parse::<u64>().map(Some).map_err(|_| bad())
}

impl<S: Send + Sync> FromRequestParts<S> for IfMatch {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        if_match(&parts.headers).map(IfMatch)
    }
}

impl<S: Send + Sync> FromRequestParts<S> for IfMatchRequired {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        if_match(&parts.headers)?.map(IfMatchRequired).ok_or_else(|| {
            ApiError::new(
                StatusCode::PRECONDITION_REQUIRED,
                ErrorCode::PreconditionRequired,
                "send If-Match with the job's ETag or version",
            )
            .field("If-Match")
        })
    }
}

/// A header parameter of the document.
fn header_param(name: &str, required: bool, pattern: &str, description: &str) -> Parameter {
    let schema = ObjectBuilder::new().schema_type(Type::String).pattern(Some(pattern));
    ParameterBuilder::new()
        .name(name)
        .parameter_in(ParameterIn::Header)
        .required(if required { Required::True } else { Required::False })
        .description(Some(description))
        .schema(Some(schema))
        .build()
}

const IF_MATCH_PATTERN: &str = "^(W/)?(\"[0-9]{1,19}\"|[0-9]{1,19})$";
const IF_MATCH_DOC: &str = "the job's ETag (`\"3\"`, `W/\"3\"`) or version (`3`); a stale one is 412";

impl utoipa::IntoParams for IfMatch {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        vec![header_param("If-Match", false, IF_MATCH_PATTERN, IF_MATCH_DOC)]
    }
}

impl utoipa::IntoParams for IfMatchRequired {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        vec![header_param("If-Match", true, IF_MATCH_PATTERN, IF_MATCH_DOC)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sundial_model::JobDefinition;

    #[test]
    fn body_errors_name_the_field() {
        let e = parse_body::<JobDefinition>(br#"{"schedule":{"expression":"* * * * *","timezone":"UTC"},"target":{"type":"http","url":"https://x"},"retry":{"maxAttempts":-1}}"#).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("retry.maxAttempts"), "{e:?}");
        let e = parse_body::<JobDefinition>(br#"{"schedule":{"expression":"* * * * *","timezone":"UTC"},"target":{"type":"http","url":"https://x"},"retry":{"tries":3}}"#).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("retry.tries"), "{e:?}");
        let e = parse_body::<JobDefinition>(br#"{"schedule":{"expression":"* * * * *","timezone":"UTC"},"target":{"type":"http","url":"https://x"},"colour":1}"#).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("colour"), "{e:?}");
        let e = parse_body::<JobDefinition>(br#"{"schedule":"#).unwrap_err();
        assert_eq!((e.code, e.field.as_deref()), (ErrorCode::InvalidJson, Some("body")));
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
