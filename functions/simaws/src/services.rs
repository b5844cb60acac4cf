//! The small services: Lambda (`Invoke` through the harness's handler, `GetFunction` and `ListTags` of
//! registered functions), Secrets Manager (create, get, describe, tag) and EventBridge
//! (`PutEvents` recorded in order, `CreateEventBus`).

use crate::call::{Call, Reply, Service};
use crate::ddb::{ACCOUNT, REGION};
use crate::error::ApiError;
use crate::{Aws, Event, Invocation, InvocationType, InvokeOutcome};
use serde_json::{json, Value};
use std::collections::BTreeMap;

pub(crate) struct Secret {
    arn: String,
    value: String,
    version: u64,
    tags: BTreeMap<String, String>,
    created_ms: i64,
}

#[derive(Default)]
pub(crate) struct Services {
    functions: BTreeMap<String, BTreeMap<String, String>>,
    secrets: BTreeMap<String, Secret>,
    pub(crate) events: Vec<Event>,
    buses: BTreeMap<String, String>,
}

fn tag_map(tags: &[(&str, &str)]) -> BTreeMap<String, String> {
    tags.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// A function name from a name, a partial ARN or a full ARN (`...:function:name[:qualifier]`).
fn function_name(f: &str) -> &str {
    match f.split_once(":function:") {
        Some((_, rest)) => rest.split(':').next().unwrap_or(rest),
        // a bare name may carry a version or alias (`name:prod`), as on AWS
        None => f.split(':').next().unwrap_or(f),
    }
}

impl Services {
    pub(crate) fn create_function(&mut self, name: &str, tags: &[(&str, &str)]) {
        self.functions.insert(function_name(name).to_string(), tag_map(tags));
    }

    pub(crate) fn put_secret(&mut self, name: &str, value: &str, tags: &[(&str, &str)], suffix: u64) {
        self.upsert_secret(name, value, tag_map(tags), suffix, 0);
    }

    fn upsert_secret(
        &mut self,
        name: &str,
        value: &str,
        tags: BTreeMap<String, String>,
        suffix: u64,
        now: i64,
    ) -> &Secret {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        let tail: String = (0..6).map(|i| ALPHABET[((suffix >> (i * 8)) % 52) as usize] as char).collect();
        let s = self.secrets.entry(name.to_string()).or_insert_with(|| Secret {
            arn: format!("arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:{name}-{tail}"),
            value: String::new(),
            version: 0,
            tags: BTreeMap::new(),
            created_ms: now,
        });
        s.value = value.to_string();
        s.version += 1;
        s.tags.extend(tags);
        s
    }

    fn secret(&self, id: &str) -> Result<&Secret, ApiError> {
        self.secrets
            .get(id)
            .or_else(|| self.secrets.values().find(|s| s.arn == id))
            .ok_or_else(|| ApiError::not_found("Secrets Manager can't find the specified secret."))
    }
}

fn tags_of(v: &Value) -> BTreeMap<String, String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| Some((t["Key"].as_str()?.to_string(), t["Value"].as_str().unwrap_or("").to_string())))
        .collect()
}

fn tag_list(t: &BTreeMap<String, String>) -> Vec<Value> {
    t.iter().map(|(k, v)| json!({ "Key": k, "Value": v })).collect()
}

pub(crate) fn secrets(aws: &Aws, call: &Call) -> Result<Value, ApiError> {
    let req = &call.json;
    let now = aws.now_ms();
    let mut st = aws.lock();
    let id = req["SecretId"].as_str().unwrap_or_default();
    match call.op.as_str() {
        "CreateSecret" => {
            let name = req["Name"].as_str().unwrap_or_default();
            if st.services.secrets.contains_key(name) {
                return Err(ApiError::new(
                    400,
                    "ResourceExistsException",
                    format!("The operation failed because the secret {name} already exists."),
                ));
            }
            let suffix = st.rng.next_u64();
            let value = req["SecretString"].as_str().unwrap_or_default();
            let s = st.services.upsert_secret(name, value, tags_of(&req["Tags"]), suffix, now);
            Ok(json!({ "ARN": s.arn, "Name": name, "VersionId": format!("v{}", s.version) }))
        }
        "GetSecretValue" => {
            let s = st.services.secret(id)?;
            let name =
                s.arn.rsplit_once(":secret:").map_or("", |(_, n)| n.rsplit_once('-').map_or(n, |(n, _)| n));
            Ok(json!({
                "ARN": s.arn, "Name": name, "SecretString": s.value, "VersionId": format!("v{}", s.version),
                "VersionStages": ["AWSCURRENT"], "CreatedDate": s.created_ms as f64 / 1000.0,
            }))
        }
        "DescribeSecret" => {
            let s = st.services.secret(id)?;
            let name =
                s.arn.rsplit_once(":secret:").map_or("", |(_, n)| n.rsplit_once('-').map_or(n, |(n, _)| n));
            Ok(
                json!({ "ARN": s.arn, "Name": name, "Tags": tag_list(&s.tags), "CreatedDate": s.created_ms as f64 / 1000.0 }),
            )
        }
        "TagResource" => {
            let arn = st.services.secret(id)?.arn.clone();
            let tags = tags_of(&req["Tags"]);
            if let Some(s) = st.services.secrets.values_mut().find(|s| s.arn == arn) {
                s.tags.extend(tags);
            }
            Ok(json!({}))
        }
        "DeleteSecret" => {
            let arn = st.services.secret(id)?.arn.clone();
            st.services.secrets.retain(|_, s| s.arn != arn);
            Ok(json!({ "ARN": arn, "DeletionDate": now as f64 / 1000.0 }))
        }
        op => Err(ApiError::unknown_operation("SecretsManager", op)),
    }
}

pub(crate) fn events(aws: &Aws, call: &Call) -> Result<Value, ApiError> {
    let req = &call.json;
    let now = aws.now_ms();
    let mut st = aws.lock();
    match call.op.as_str() {
        "PutEvents" => {
            let entries = req["Entries"].as_array().cloned().unwrap_or_default();
            if entries.is_empty() || entries.len() > 10 {
                return Err(ApiError::validation("PutEvents takes 1 to 10 entries"));
            }
            let mut out = Vec::new();
            for e in entries {
                let ev = Event {
                    source: e["Source"].as_str().unwrap_or_default().to_string(),
                    detail_type: e["DetailType"].as_str().unwrap_or_default().to_string(),
                    detail: e["Detail"].as_str().unwrap_or_default().to_string(),
                    bus: e["EventBusName"].as_str().unwrap_or("default").to_string(),
                    time_ms: now,
                };
                st.services.events.push(ev);
                out.push(json!({ "EventId": format!("{:016x}", st.rng.next_u64()) }));
            }
            Ok(json!({ "FailedEntryCount": 0, "Entries": out }))
        }
        "CreateEventBus" => {
            let name = req["Name"].as_str().unwrap_or_default().to_string();
            let arn = format!("arn:aws:events:{REGION}:{ACCOUNT}:event-bus/{name}");
            st.services.buses.insert(name, arn.clone());
            Ok(json!({ "EventBusArn": arn }))
        }
        op => Err(ApiError::unknown_operation("EventBridge", op)),
    }
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (b[i], b.get(i + 1).copied().and_then(hex), b.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn lambda_error(status: u16, code: &str, message: &str) -> Reply {
    let e = ApiError::new(status, code, message).with("Type", json!("User"));
    Reply::error(Service::Lambda, &e)
}

pub(crate) async fn lambda(aws: &Aws, call: &Call) -> Reply {
    let rest = call.path.trim_start_matches("/2015-03-31/functions/");
    let function = percent_decode(rest.trim_end_matches("/invocations").trim_end_matches('/'));
    if call.op == "ListTags" {
        // `GET /2017-03-31/tags/{ARN}`: a function's tags, by its unqualified ARN only.
        let arn = percent_decode(call.path.trim_start_matches("/2017-03-31/tags/"));
        let st = aws.lock();
        let name = arn.strip_prefix(&format!("arn:aws:lambda:{REGION}:{ACCOUNT}:function:")).unwrap_or("");
        return match st.services.functions.get(name).filter(|_| !name.contains(':')) {
            Some(tags) => Reply::json(Service::Lambda, &json!({ "Tags": tags })),
            None => lambda_error(404, "ResourceNotFoundException", &format!("Function not found: {arn}")),
        };
    }
    if call.op == "GetFunction" {
        let st = aws.lock();
        let name = function_name(&function);
        return match st.services.functions.get(name) {
            Some(tags) => {
                let arn = format!("arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}");
                let cfg = json!({ "FunctionName": name, "FunctionArn": arn, "State": "Active", "Runtime": "provided.al2023" });
                Reply::json(Service::Lambda, &json!({ "Configuration": cfg, "Tags": tags }))
            }
            None => {
                lambda_error(404, "ResourceNotFoundException", &format!("Function not found: {function}"))
            }
        };
    }
    let invocation_type = match call.invocation_type.as_deref().unwrap_or("RequestResponse") {
        "Event" => InvocationType::Event,
        "DryRun" => InvocationType::DryRun,
        _ => InvocationType::RequestResponse,
    };
    let handler = aws.inner.invoke.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let Some(handler) = handler else {
        return lambda_error(
            404,
            "ResourceNotFoundException",
            &format!("Function not found: {function} (no on_invoke handler)"),
        );
    };
    let inv =
        Invocation { function, payload: call.raw.clone(), invocation_type, process: call.process.clone() };
    match invocation_type {
        InvocationType::DryRun => Reply { status: 204, headers: Vec::new(), body: Vec::new() },
        InvocationType::Event => {
            tokio::spawn(handler(inv));
            Reply { status: 202, headers: Vec::new(), body: Vec::new() }
        }
        InvocationType::RequestResponse => match handler(inv).await {
            InvokeOutcome::Ok(body) => {
                Reply { status: 200, headers: vec![("x-amz-executed-version", "$LATEST".into())], body }
            }
            InvokeOutcome::FunctionError(body) => Reply {
                status: 200,
                headers: vec![
                    ("x-amz-executed-version", "$LATEST".into()),
                    ("x-amz-function-error", "Unhandled".into()),
                ],
                body,
            },
            InvokeOutcome::Throttled => lambda_error(429, "TooManyRequestsException", "Rate Exceeded."),
            InvokeOutcome::NotFound => lambda_error(404, "ResourceNotFoundException", "Function not found"),
        },
    }
}
