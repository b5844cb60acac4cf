//! A request as the services see it ([`Call`], decoded by `http`) and their answer ([`Reply`],
//! which `http` turns into the SDK's response).
//!
//! Apart from `http.rs` because `http` routes each call to its service (`sqs`, `ecs`, ...) and
//! every service takes a `Call` and answers a `Reply`: in `http.rs` the router and the services
//! would import each other.

use crate::error::ApiError;
use serde_json::Value;

/// Which service a request is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Service {
    Dynamo,
    Sqs,
    Secrets,
    Events,
    StepFunctions,
    Ecs,
    Lambda,
    Unknown,
}

/// A request, decoded.
pub(crate) struct Call {
    pub(crate) service: Service,
    /// The operation (`PutItem`, `Invoke`, ...).
    pub(crate) op: String,
    pub(crate) json: Value,
    pub(crate) raw: Vec<u8>,
    pub(crate) path: String,
    pub(crate) invocation_type: Option<String>,
    pub(crate) process: Option<String>,
}

/// A response, before it becomes HTTP.
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(&'static str, String)>,
    pub(crate) body: Vec<u8>,
}

impl Reply {
    pub(crate) fn json(service: Service, v: &Value) -> Reply {
        Reply {
            status: 200,
            headers: vec![("content-type", content_type(service).into())],
            body: v.to_string().into_bytes(),
        }
    }

    pub(crate) fn error(service: Service, e: &ApiError) -> Reply {
        let mut headers =
            vec![("content-type", content_type(service).into()), ("x-amzn-errortype", e.code.clone())];
        if let Some(q) = &e.query_error {
            headers.push(("x-amzn-query-error", q.clone()));
        }
        Reply { status: e.status, headers, body: e.json_body().to_string().into_bytes() }
    }

    pub(crate) fn of(service: Service, r: Result<Value, ApiError>) -> Reply {
        match r {
            Ok(v) => Reply::json(service, &v),
            Err(e) => Reply::error(service, &e),
        }
    }
}

fn content_type(s: Service) -> &'static str {
    match s {
        Service::Dynamo | Service::Sqs | Service::StepFunctions => "application/x-amz-json-1.0",
        Service::Secrets | Service::Events | Service::Ecs => "application/x-amz-json-1.1",
        Service::Lambda | Service::Unknown => "application/json",
    }
}
