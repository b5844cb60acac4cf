//! The route table: one list of (method, path template, operation) that the router matches and
//! the OpenAPI test compares with `openapi.json`, so the document cannot drift from the code.

use lambda_http::http::Method;

/// What a route does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// The OpenAPI document.
    OpenApi,
    /// Create a job.
    CreateJob,
    /// List jobs.
    ListJobs,
    /// Preview a draft schedule.
    Preview,
    /// Read a job.
    GetJob,
    /// Edit a job (If-Match).
    UpdateJob,
    /// Soft-delete a job.
    DeleteJob,
    /// Pause a job.
    PauseJob,
    /// Resume a job.
    ResumeJob,
    /// Run a job now.
    TriggerJob,
    /// Backfill a past range.
    BackfillJob,
    /// Read one definition version.
    GetJobVersion,
    /// A job's definition versions, newest first.
    ListJobVersions,
    /// A job's executions.
    ListJobExecutions,
    /// Executions by status.
    ListExecutions,
    /// One execution with its timeline.
    GetExecution,
    /// Cancel an execution.
    CancelExecution,
    /// The children of a sharded or broadcast fire.
    ListChildren,
    /// An execution's worker log lines (local run) or a Logs Insights link (deployed).
    ExecutionLogs,
    /// Dead executions.
    ListDlq,
    /// Replay several dead executions.
    ReplayDlq,
    /// Replay one dead execution.
    ReplayOne,
    /// The operations audit log.
    ListOperations,
    /// The tzdb upgrade report.
    TzReport,
    /// Create or edit a business calendar (If-Match to edit).
    PutCalendar,
    /// Read a business calendar.
    GetCalendar,
    /// Delete a business calendar (refused while in use).
    DeleteCalendar,
    /// List business calendars.
    ListCalendars,
    /// Read one calendar version.
    GetCalendarVersion,
    /// List resource limits.
    ListResources,
    /// Set a resource limit (operators only).
    PutResource,
    /// Read a resource limit with its holders.
    GetResource,
    /// Delete a resource limit (operators only).
    DeleteResource,
    /// A job's upcoming fires with the daylight-saving transitions they cross.
    UpcomingFires,
    /// The web console's page (static, no auth; `crate::console`).
    Console,
    /// One of the web console's files, or its `config.json` (static, no auth).
    ConsoleFile,
}

/// One route.
#[derive(Debug, Clone, Copy)]
pub struct Route {
    /// HTTP method (upper case).
    pub method: &'static str,
    /// Path template; `{name}` matches one segment.
    pub path: &'static str,
    /// The operation.
    pub op: Op,
}

/// Every route of the API.
pub const ROUTES: &[Route] = &[
    Route { method: "GET", path: "/openapi.json", op: Op::OpenApi },
    Route { method: "POST", path: "/v1/jobs", op: Op::CreateJob },
    Route { method: "GET", path: "/v1/jobs", op: Op::ListJobs },
    Route { method: "POST", path: "/v1/preview", op: Op::Preview },
    Route { method: "GET", path: "/v1/jobs/{jobId}", op: Op::GetJob },
    Route { method: "PUT", path: "/v1/jobs/{jobId}", op: Op::UpdateJob },
    Route { method: "DELETE", path: "/v1/jobs/{jobId}", op: Op::DeleteJob },
    Route { method: "POST", path: "/v1/jobs/{jobId}/pause", op: Op::PauseJob },
    Route { method: "POST", path: "/v1/jobs/{jobId}/resume", op: Op::ResumeJob },
    Route { method: "POST", path: "/v1/jobs/{jobId}/trigger", op: Op::TriggerJob },
    Route { method: "POST", path: "/v1/jobs/{jobId}/backfill", op: Op::BackfillJob },
    Route { method: "GET", path: "/v1/jobs/{jobId}/versions/{version}", op: Op::GetJobVersion },
    Route { method: "GET", path: "/v1/jobs/{jobId}/versions", op: Op::ListJobVersions },
    Route { method: "GET", path: "/v1/jobs/{jobId}/executions", op: Op::ListJobExecutions },
    Route { method: "GET", path: "/v1/jobs/{jobId}/upcoming", op: Op::UpcomingFires },
    Route { method: "GET", path: "/v1/executions", op: Op::ListExecutions },
    Route { method: "GET", path: "/v1/executions/{executionId}", op: Op::GetExecution },
    Route { method: "POST", path: "/v1/executions/{executionId}/cancel", op: Op::CancelExecution },
    Route { method: "GET", path: "/v1/executions/{executionId}/children", op: Op::ListChildren },
    Route { method: "GET", path: "/v1/executions/{executionId}/logs", op: Op::ExecutionLogs },
    Route { method: "GET", path: "/v1/dlq", op: Op::ListDlq },
    Route { method: "POST", path: "/v1/dlq/replay", op: Op::ReplayDlq },
    Route { method: "POST", path: "/v1/dlq/{executionId}/replay", op: Op::ReplayOne },
    Route { method: "GET", path: "/v1/operations", op: Op::ListOperations },
    Route { method: "GET", path: "/v1/tz-report", op: Op::TzReport },
    Route { method: "GET", path: "/v1/calendars", op: Op::ListCalendars },
    Route { method: "PUT", path: "/v1/calendars/{calendarId}", op: Op::PutCalendar },
    Route { method: "GET", path: "/v1/calendars/{calendarId}", op: Op::GetCalendar },
    Route { method: "DELETE", path: "/v1/calendars/{calendarId}", op: Op::DeleteCalendar },
    Route {
        method: "GET",
        path: "/v1/calendars/{calendarId}/versions/{version}",
        op: Op::GetCalendarVersion,
    },
    Route { method: "GET", path: "/v1/resources", op: Op::ListResources },
    Route { method: "PUT", path: "/v1/resources/{resource}", op: Op::PutResource },
    Route { method: "GET", path: "/v1/resources/{resource}", op: Op::GetResource },
    Route { method: "DELETE", path: "/v1/resources/{resource}", op: Op::DeleteResource },
    // The web console: static files, not API operations, so not in openapi.json (the sync test
    // leaves `/console` out); every call the console makes is one of the routes above.
    Route { method: "GET", path: "/console", op: Op::Console },
    Route { method: "GET", path: "/console/{file}", op: Op::ConsoleFile },
];

/// The result of matching a request path.
#[derive(Debug, PartialEq, Eq)]
pub enum Matched {
    /// A route, with its path parameters (percent-decoded) in template order.
    Route(Op, Vec<String>),
    /// The path exists, the method does not: these methods do.
    MethodNotAllowed(Vec<&'static str>),
    /// No such path.
    NotFound,
}

fn decode(seg: &str) -> Option<String> {
    let bytes = seg.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = seg.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn match_path(template: &str, path: &str) -> Option<Vec<String>> {
    let t: Vec<&str> = template.trim_matches('/').split('/').collect();
    let p: Vec<&str> = path.trim_end_matches('/').trim_start_matches('/').split('/').collect();
    if t.len() != p.len() {
        return None;
    }
    let mut params = Vec::new();
    for (a, b) in t.iter().zip(p.iter()) {
        if a.starts_with('{') {
            let v = decode(b)?;
            if v.is_empty() {
                return None;
            }
            params.push(v);
        } else if a != b {
            return None;
        }
    }
    Some(params)
}

/// Matches a method and path against [`ROUTES`].
pub fn matches(method: &Method, path: &str) -> Matched {
    let mut allowed = Vec::new();
    // Literal segments win over parameters: `/v1/dlq/replay` is not `/v1/dlq/{id}`.
    let mut best: Option<(usize, Op, Vec<String>)> = None;
    for r in ROUTES {
        if let Some(params) = match_path(r.path, path) {
            if r.method == method.as_str() {
                let literals = r.path.split('/').filter(|s| !s.starts_with('{')).count();
                if best.as_ref().is_none_or(|(l, _, _)| literals > *l) {
                    best = Some((literals, r.op, params));
                }
            } else {
                allowed.push(r.method);
            }
        }
    }
    match best {
        Some((_, op, params)) => Matched::Route(op, params),
        None if !allowed.is_empty() => Matched::MethodNotAllowed(allowed),
        None => Matched::NotFound,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_match_with_decoded_parameters() {
        assert_eq!(
            matches(&Method::GET, "/v1/jobs/nightly"),
            Matched::Route(Op::GetJob, vec!["nightly".into()])
        );
        assert_eq!(
            matches(&Method::GET, "/v1/executions/nightly%401764469800000"),
            Matched::Route(Op::GetExecution, vec!["nightly@1764469800000".into()])
        );
        assert_eq!(matches(&Method::POST, "/v1/dlq/replay"), Matched::Route(Op::ReplayDlq, vec![]));
        assert_eq!(
            matches(&Method::PATCH, "/v1/jobs/x"),
            Matched::MethodNotAllowed(vec!["GET", "PUT", "DELETE"])
        );
        assert_eq!(matches(&Method::GET, "/v2/jobs"), Matched::NotFound);
        assert_eq!(matches(&Method::GET, "/v1/jobs/"), Matched::Route(Op::ListJobs, vec![]));
    }
}

#[cfg(test)]
mod openapi_sync {
    //! The checked-in OpenAPI document and [`ROUTES`] describe the same API.
    use super::ROUTES;
    use serde_json::Value;
    use std::collections::BTreeSet;

    fn doc() -> Value {
        serde_json::from_str(crate::router::OPENAPI).expect("openapi.json is JSON")
    }

    #[test]
    fn every_route_is_documented_and_every_documented_operation_is_routed() {
        let doc = doc();
        assert!(doc["openapi"].as_str().unwrap_or_default().starts_with("3."));
        let mut documented = BTreeSet::new();
        for (path, item) in doc["paths"].as_object().expect("paths") {
            for (method, _) in item.as_object().expect("path item") {
                if ["get", "put", "post", "delete", "patch", "head", "options"].contains(&method.as_str()) {
                    documented.insert((method.to_uppercase(), path.clone()));
                }
            }
        }
        let routed: BTreeSet<(String, String)> = ROUTES
            .iter()
            .filter(|r| !r.path.starts_with("/console"))
            .map(|r| (r.method.to_string(), r.path.to_string()))
            .collect();
        assert_eq!(
            routed.difference(&documented).collect::<Vec<_>>(),
            Vec::<&(String, String)>::new(),
            "routes missing from openapi.json"
        );
        assert_eq!(
            documented.difference(&routed).collect::<Vec<_>>(),
            Vec::<&(String, String)>::new(),
            "documented operations the router does not serve"
        );
    }

    #[test]
    fn path_parameters_are_declared_and_refs_resolve() {
        let doc = doc();
        for (path, item) in doc["paths"].as_object().expect("paths") {
            let names: BTreeSet<String> = path
                .split('/')
                .filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
                .map(str::to_string)
                .collect();
            for (method, op) in item.as_object().expect("item") {
                if method == "parameters" {
                    continue;
                }
                let declared: BTreeSet<String> = item["parameters"]
                    .as_array()
                    .into_iter()
                    .chain(op["parameters"].as_array())
                    .flatten()
                    .map(|p| {
                        match p["$ref"].as_str().and_then(|r| r.strip_prefix("#/components/parameters/")) {
                            Some(name) => &doc["components"]["parameters"][name],
                            None => p,
                        }
                    })
                    .filter(|p| p["in"] == "path")
                    .filter_map(|p| p["name"].as_str().map(str::to_string))
                    .collect();
                assert_eq!(declared, names, "{method} {path}");
                assert!(op["operationId"].is_string(), "{method} {path} has an operationId");
            }
        }
        // Every $ref points at a defined component.
        let text = crate::router::OPENAPI;
        for part in text.split("\"$ref\": \"#/components/").skip(1) {
            let target = part.split('"').next().unwrap_or_default();
            let (kind, name) = target.split_once('/').expect("kind/name");
            assert!(doc["components"][kind][name].is_object(), "unresolved $ref {target}");
        }
    }
}
