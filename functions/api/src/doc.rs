//! The OpenAPI document, generated: every operation from its handler's `#[utoipa::path]`
//! ([`crate::operations`]), every schema from the wire types, and the answers the layers
//! give added to the operations they guard (a layer that can refuse a request documents that
//! refusal once, here, instead of on every handler). `functions/api/openapi.json` is a golden
//! copy: a test regenerates the document and fails on any difference, so a change of the
//! contract is a visible diff in review (`functions/api/tests/golden.rs`; its header says how to
//! rewrite the copy).

use crate::operations::operations;
use crate::Api;
use axum::http::header::CONTENT_TYPE;
use axum::http::HeaderValue;
use axum::response::IntoResponse;
use std::sync::OnceLock;
use sundial_api_types::ErrorBody;
use utoipa::openapi::path::{Operation, ParameterIn};
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::security::{
    ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme,
};
use utoipa::openapi::{ContentBuilder, OpenApi, Ref, RefOr, Response};
use utoipa::{OpenApi as _, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// The document's description.
const DESCRIPTION: &str = "Jobs, executions, dead letters and the operations log of one tenant. The tenant comes from the authorizer (JWT claim `tenant`, or the IAM caller's tag or account); another tenant's ids answer 404. Every error is `{\"error\": {\"code\", \"message\", \"field\"}}` with `field` naming the offending JSON path, parameter or header, and `code` one of `ErrorCode`. Request bodies must be `application/json`, at most 16 KiB; inline `params` at most 4 KiB (use `paramsRef` for more). Unknown fields are refused at every level of every request body; answers may carry fields a client does not know yet (read them leniently). Per-tenant quotas and the per-tenant request throttle answer 429 with `Retry-After`. Every answer carries `X-Request-Id`. This document is generated from the server's code and is the contract: the test suite fuzzes the API from it (Schemathesis). See docs/api.md.";

#[derive(utoipa::OpenApi)]
#[openapi(
    info(title = "Sundial control plane API", version = "1", description = "see DESCRIPTION"),
    servers((url = "/")),
    tags(
        (name = "jobs", description = "Job definitions: create, read, edit, pause, resume, delete, versions"),
        (name = "calendars", description = "Business calendars shared by jobs: holidays, rest days, make-up working days, versions"),
        (name = "runs", description = "Run a job now, backfill a past range, preview a schedule"),
        (name = "executions", description = "Executions, their timelines, cancellation"),
        (name = "dlq", description = "Dead executions and their replay"),
        (name = "audit", description = "The operations log"),
        (name = "meta", description = "This document"),
        (name = "resources", description = "Platform-wide resource limits (docs/resources.md)"),
        (name = "pools", description = "The worker pools' queues: depth and saturation (operators only)"),
    ),
    components(schemas(ErrorBody, sundial_api_types::ErrorCode)),
)]
struct Base;

/// The answers the layers and the router add, by status: (component name, description).
const LAYER_ANSWERS: &[(&str, &str, &str)] = &[
    ("400", "BadRequest", "A path, query or body field, or a header, is invalid (`field` names it)"),
    ("401", "Unauthorized", "No valid caller (caller layer)"),
    ("403", "Forbidden", "The caller may not do this (caller layer, or an operator-only operation)"),
    ("404", "NotFound", "No such object for this tenant"),
    (
        "409",
        "Conflict",
        "The request conflicts with the object's state, or an Idempotency-Key request still runs",
    ),
    ("412", "PreconditionFailed", "If-Match names another version"),
    ("413", "PayloadTooLarge", "The body is over the size limit (body layer)"),
    ("415", "UnsupportedMediaType", "A body not sent as application/json (body layer)"),
    ("422", "KeyReused", "The Idempotency-Key was used for another request (idempotency layer)"),
    ("428", "PreconditionRequired", "If-Match is required"),
    (
        "429",
        "TooManyRequests",
        "A per-tenant quota, rate or the request throttle (throttle layer); see Retry-After",
    ),
    ("500", "InternalError", "A failure a retry does not mend"),
    ("503", "Unavailable", "A dependency is unavailable; retry after Retry-After"),
];

fn error_response(description: &str) -> Response {
    let content = ContentBuilder::new().schema(Some(ErrorBody::schema_ref())).build();
    ResponseBuilder::new().description(description).content("application/json", content).build()
}

trait SchemaRef {
    fn schema_ref() -> RefOr<utoipa::openapi::Schema>;
}

impl<T: ToSchema> SchemaRef for T {
    fn schema_ref() -> RefOr<utoipa::openapi::Schema> {
        RefOr::Ref(Ref::from_schema_name(T::name()))
    }
}

/// The statuses every authenticated operation can answer, and those its shape adds.
fn layer_statuses(op: &Operation) -> Vec<&'static str> {
    let mut s = vec!["400", "401", "403", "429", "500", "503"];
    if op.request_body.is_some() {
        s.extend(["413", "415"]);
    }
    let has_header = |name: &str| {
        op.parameters.iter().flatten().any(|p| p.parameter_in == ParameterIn::Header && p.name == name)
    };
    if has_header(crate::layers::idempotency::HEADER_NAME) {
        s.extend(["409", "422"]);
    }
    s
}

/// Every operation of `doc`.
fn each_operation(doc: &mut OpenApi, mut f: impl FnMut(&mut Operation)) {
    for item in doc.paths.paths.values_mut() {
        for op in [&mut item.get, &mut item.put, &mut item.post, &mut item.delete, &mut item.patch]
            .into_iter()
            .flatten()
        {
            f(op);
        }
    }
}

/// Adds the layers' answers to every authenticated operation (a status a handler documents
/// itself keeps the handler's description), as references to shared response components.
fn add_layer_answers(doc: &mut OpenApi) {
    each_operation(doc, |op| {
        for status in layer_statuses(op) {
            let Some((_, name, _)) = LAYER_ANSWERS.iter().find(|(s, _, _)| *s == status) else { continue };
            op.responses
                .responses
                .entry(status.to_string())
                .or_insert_with(|| RefOr::Ref(Ref::new(format!("#/components/responses/{name}"))));
        }
    });
    let components = doc.components.get_or_insert_with(Default::default);
    for (_, name, description) in LAYER_ANSWERS {
        components.responses.insert(name.to_string(), RefOr::T(error_response(description)));
    }
}

fn security(doc: &mut OpenApi) {
    let components = doc.components.get_or_insert_with(Default::default);
    let jwt = HttpBuilder::new()
        .scheme(HttpAuthScheme::Bearer)
        .bearer_format("JWT")
        .description(Some(
            "API Gateway JWT authorizer; the tenant is the `tenant` claim (SUNDIAL_TENANT_CLAIM)",
        ))
        .build();
    components.add_security_scheme("jwt", SecurityScheme::Http(jwt));
    components.add_security_scheme(
        "iam",
        SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
            "Authorization",
            "SigV4 (IAM authorizer); the tenant is the caller's `sundial-tenant` tag (or account)",
        ))),
    );
    doc.security = Some(vec![
        SecurityRequirement::new("jwt", Vec::<String>::new()),
        SecurityRequirement::new("iam", Vec::<String>::new()),
    ]);
}

/// The documented operations served without a caller: this document's own route. Here, beside
/// the document, because the document lists it and it serves the document (in the router's
/// file, each would import the other).
pub(crate) fn public_operations() -> OpenApiRouter<Api> {
    OpenApiRouter::new().routes(routes!(open_api))
}

/// This document (generated from the handlers and the wire types; `functions/api/openapi.json`
/// is its checked-in copy).
#[utoipa::path(get, path = "/openapi.json", operation_id = "openApi", tag = "meta", security(()),
    responses((status = 200, description = "The OpenAPI document", content_type = "application/json", body = Object)))]
pub(crate) async fn open_api() -> axum::response::Response {
    let mut r = json().into_response();
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

/// Builds the document.
pub fn document() -> OpenApi {
    let mut doc = Base::openapi();
    doc.info.description = Some(DESCRIPTION.to_string());
    doc.info.license = None;
    let (_, mut authed) = operations().split_for_parts();
    add_layer_answers(&mut authed);
    doc.merge(authed);
    let (_, public) = public_operations().split_for_parts();
    doc.merge(public);
    security(&mut doc);
    doc
}

/// The document as served and checked in (pretty JSON, with a final newline).
pub fn json() -> &'static str {
    static DOC: OnceLock<String> = OnceLock::new();
    DOC.get_or_init(|| {
        let mut s = document().to_pretty_json().unwrap_or_else(|e| {
            tracing::error!(error = %e, "the OpenAPI document could not be written");
            "{}".to_string()
        });
        s.push('\n');
        s
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_has_an_id_and_every_ref_resolves() {
        let doc: serde_json::Value = serde_json::from_str(json()).unwrap_or_default();
        for (path, item) in doc["paths"].as_object().into_iter().flatten() {
            for (method, op) in item.as_object().into_iter().flatten() {
                assert!(op["operationId"].is_string(), "{method} {path} has an operationId");
            }
        }
        for part in json().split("\"$ref\": \"#/components/").skip(1) {
            let target = part.split('"').next().unwrap_or_default();
            let (kind, name) = target.split_once('/').unwrap_or_default();
            assert!(doc["components"][kind][name].is_object(), "unresolved $ref {target}");
        }
    }

    #[test]
    fn the_idempotency_layer_serves_exactly_the_operations_documenting_its_header() {
        let doc: serde_json::Value = serde_json::from_str(json()).unwrap_or_default();
        let mut documented = Vec::new();
        for (path, item) in doc["paths"].as_object().into_iter().flatten() {
            for (method, op) in item.as_object().into_iter().flatten() {
                let named =
                    op["parameters"].as_array().into_iter().flatten().any(|p| p["name"] == "Idempotency-Key");
                if named {
                    documented.push((method.to_uppercase(), path.clone()));
                }
            }
        }
        documented.sort();
        let mut served: Vec<(String, String)> = crate::layers::idempotency::OPERATIONS
            .iter()
            .map(|(m, p, _)| (m.to_string(), p.to_string()))
            .collect();
        served.sort();
        assert_eq!(documented, served);
    }
}
