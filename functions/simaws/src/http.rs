//! The SDK-facing side: [`sdk_config`] builds an `SdkConfig` whose HTTP client is the simulated
//! AWS. A request is routed by its `X-Amz-Target` header (the awsJson services) or its path
//! (Lambda's restJson), delayed by a seeded latency, possibly failed by a seeded fault, served
//! under the one lock, and hashed into the trace.

use crate::call::{Call, Reply, Service};
use crate::error::ApiError;
use crate::{ecs, services, sfn, sqs, Aws, State};
use aws_config::retry::RetryConfig;
use aws_config::stalled_stream_protection::StalledStreamProtectionConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_credential_types::provider::SharedCredentialsProvider;
use aws_credential_types::Credentials;
use aws_smithy_async::rt::sleep::{SharedAsyncSleep, TokioSleep};
use aws_smithy_async::time::{SharedTimeSource, TimeSource};
use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient,
    SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::body::SdkBody;
use serde_json::Value;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use sundial_hash::Fnv1a;

/// The endpoint every client of the simulated AWS is configured with (never resolved).
pub const ENDPOINT: &str = "http://sim.aws";

pub(crate) fn sdk_config(aws: &Aws, process: Option<String>) -> SdkConfig {
    let client = SimClient { aws: aws.clone(), process };
    SdkConfig::builder()
        .region(Region::new(crate::ddb::REGION))
        .credentials_provider(SharedCredentialsProvider::new(Credentials::new(
            "sim", "sim", None, None, "simaws",
        )))
        .endpoint_url(ENDPOINT)
        .http_client(SharedHttpClient::new(client))
        .sleep_impl(SharedAsyncSleep::new(TokioSleep::new()))
        .time_source(SharedTimeSource::new(SimClock(aws.clone())))
        // No jitter: a seed must replay the same backoffs.
        .retry_config(RetryConfig::standard().with_use_static_exponential_base(true))
        .timeout_config(TimeoutConfig::disabled())
        .stalled_stream_protection(StalledStreamProtectionConfig::disabled())
        .behavior_version(BehaviorVersion::latest())
        .build()
}

/// The simulated clock as the SDK's time source (request signing, clock skew).
#[derive(Debug)]
struct SimClock(Aws);

impl TimeSource for SimClock {
    fn now(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.0.now_ms().max(0) as u64)
    }
}

#[derive(Clone)]
struct SimClient {
    aws: Aws,
    process: Option<String>,
}

impl std::fmt::Debug for SimClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SimClient({:?})", self.process)
    }
}

impl HttpClient for SimClient {
    fn http_connector(&self, _: &HttpConnectorSettings, _: &RuntimeComponents) -> SharedHttpConnector {
        SharedHttpConnector::new(self.clone())
    }
}

impl HttpConnector for SimClient {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let c = self.clone();
        HttpConnectorFuture::new(async move { c.serve(request).await })
    }
}

/// The `Action` of an awsQuery request (IAM, STS: form-encoded bodies), with its `Version`.
fn query_action(raw: &[u8]) -> Option<String> {
    let body = std::str::from_utf8(raw).ok()?;
    let field =
        |k: &str| body.split('&').find_map(|kv| kv.strip_prefix(k)?.strip_prefix('=').map(str::to_string));
    Some(format!("{} (awsQuery, Version {})", field("Action")?, field("Version").unwrap_or_default()))
}

/// An awsQuery error (what the IAM and STS clients parse), for the operations not modelled.
fn query_error(e: &ApiError) -> Reply {
    let body = format!(
        "<ErrorResponse><Error><Type>Sender</Type><Code>{}</Code><Message>{}</Message></Error><RequestId>sim</RequestId></ErrorResponse>",
        e.code, e.message
    );
    Reply { status: e.status, headers: vec![("content-type", "text/xml".into())], body: body.into_bytes() }
}

fn decode(req: &HttpRequest, process: Option<String>) -> Call {
    let raw = req.body().bytes().map(<[u8]>::to_vec).unwrap_or_default();
    let uri: http::Uri = req.uri().parse().unwrap_or_default();
    let path = uri.path().to_string();
    let target = req.headers().get("x-amz-target").unwrap_or_default();
    let (prefix, op) = target.split_once('.').unwrap_or(("", target));
    let (service, op) = match prefix {
        "DynamoDB_20120810" => (Service::Dynamo, op.to_string()),
        "AmazonSQS" => (Service::Sqs, op.to_string()),
        "secretsmanager" => (Service::Secrets, op.to_string()),
        "AWSEvents" => (Service::Events, op.to_string()),
        "AWSStepFunctions" => (Service::StepFunctions, op.to_string()),
        "AmazonEC2ContainerServiceV20141113" => (Service::Ecs, op.to_string()),
        "" if path.starts_with("/2015-03-31/functions/") => {
            let invoke = path.ends_with("/invocations") && req.method() == "POST";
            (Service::Lambda, if invoke { "Invoke" } else { "GetFunction" }.to_string())
        }
        "" if path.starts_with("/2017-03-31/tags/") && req.method() == "GET" => {
            (Service::Lambda, "ListTags".to_string())
        }
        "" => (Service::Unknown, query_action(&raw).unwrap_or_else(|| format!("{} {path}", req.method()))),
        _ => (Service::Unknown, target.to_string()),
    };
    let json = if service == Service::Lambda || raw.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&raw).unwrap_or(Value::Null)
    };
    let invocation_type = req.headers().get("x-amz-invocation-type").map(str::to_string);
    Call { service, op, json, raw, path, invocation_type, process }
}

fn service_name(s: Service) -> &'static str {
    match s {
        Service::Dynamo => "DynamoDB",
        Service::Sqs => "SQS",
        Service::Secrets => "SecretsManager",
        Service::Events => "EventBridge",
        Service::StepFunctions => "StepFunctions",
        Service::Ecs => "ECS",
        Service::Lambda => "Lambda",
        Service::Unknown => "Unknown",
    }
}

/// A fault decided before the request is applied.
enum Before {
    Serve { lose_response: bool },
    Fail(ApiError),
}

fn throttle_error(s: Service, st: &mut State) -> ApiError {
    match s {
        Service::Dynamo if st.draw() < 0.5 => ApiError::new(
            400,
            "ProvisionedThroughputExceededException",
            "The level of configured provisioned throughput for the table was exceeded (simulated)",
        ),
        Service::Sqs => ApiError::new(400, "RequestThrottled", "Request is throttled (simulated)")
            .with_query_error("RequestThrottled;Sender"),
        Service::Lambda => ApiError::new(429, "TooManyRequestsException", "Rate exceeded (simulated)"),
        _ => ApiError::new(400, "ThrottlingException", "Rate exceeded (simulated)"),
    }
}

fn server_error(s: Service) -> ApiError {
    match s {
        Service::Sqs => ApiError::new(500, "InternalError", "We encountered an internal error (simulated)")
            .with_query_error("InternalError;Receiver"),
        Service::Lambda => ApiError::new(500, "ServiceException", "Internal service error (simulated)"),
        Service::Ecs => ApiError::new(500, "ServerException", "Server error (simulated)"),
        _ => ApiError::new(500, "InternalServerError", "Internal server error (simulated)"),
    }
}

/// The least simulated time any request takes (ms).
pub(crate) const MIN_LATENCY_MS: u64 = 1;

/// Counts the request, draws its latency and decides its faults (in that order, so the draws
/// are the same for the same request sequence).
fn before(st: &mut State, call: &Call) -> (u64, Before) {
    let key = format!("{}.{}", service_name(call.service), call.op);
    *st.stats.requests.entry(key).or_default() += 1;
    if let Some(i) = st.lose_next.iter().position(|op| *op == call.op) {
        st.lose_next.remove(i);
        st.fault("lost_response");
        return (0, Before::Serve { lose_response: true });
    }
    let aimed = st.aimed(call.process.as_ref());
    let f = st.faults.clone();
    if !aimed || call.service == Service::Unknown {
        return (0, Before::Serve { lose_response: false });
    }
    let latency = if f.latency_ms > 0 { st.rng.below(f.latency_ms + 1) } else { 0 };
    if let Some(hot) = f.throttle_matching.as_deref().filter(|h| !h.is_empty()) {
        if call.service == Service::Dynamo && call.raw.windows(hot.len()).any(|w| w == hot.as_bytes()) {
            st.fault("throttle_partition");
            return (latency, Before::Fail(throttle_error(call.service, st)));
        }
    }
    if call.service == Service::Sqs && f.sqs_down {
        st.fault("sqs_down");
        let e = ApiError::new(503, "ServiceUnavailable", "SQS is down (simulated)")
            .with_query_error("ServiceUnavailable;Receiver");
        return (latency, Before::Fail(e));
    }
    if st.chance(f.throttle) {
        st.fault("throttle");
        return (latency, Before::Fail(throttle_error(call.service, st)));
    }
    if st.chance(f.server_error) {
        st.fault("server_error");
        return (latency, Before::Fail(server_error(call.service)));
    }
    let lose_response = st.chance(f.lost_response);
    if lose_response {
        st.fault("lost_response");
    }
    (latency, Before::Serve { lose_response })
}

/// Feeds `v` to the trace with object keys sorted: the SDK serialises its `HashMap`s (items,
/// attribute maps) in a per-process random order, which must not change the trace.
fn hash_json(h: Fnv1a, v: &Value) -> Fnv1a {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            keys.into_iter().fold(h.write(b"{"), |h, k| {
                // The SDK fills idempotency tokens with random UUIDs (DynamoDB's, ECS RunTask's).
                if k == "ClientRequestToken" || k == "clientToken" {
                    return h;
                }
                hash_json(h.write(k.as_bytes()).write(b":"), &m[k])
            })
        }
        Value::Array(a) => a.iter().fold(h.write(b"["), hash_json),
        other => h.write(other.to_string().as_bytes()).write(b","),
    }
}

/// Feeds a request: its parsed JSON canonically (the SDK's map order is random), else its bytes.
fn hash_request(h: Fnv1a, call: &Call) -> Fnv1a {
    match &call.json {
        Value::Null => h.write(&call.raw),
        v => hash_json(h, v),
    }
}

/// Whether `serde_json` writes maps with sorted keys (its default `BTreeMap`; not with the
/// `preserve_order` feature): then a response body, written from the simulator's own values, is
/// already canonical and is hashed as bytes instead of parsed again.
fn sorted_maps() -> bool {
    static SORTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SORTED.get_or_init(|| serde_json::json!({ "b": 1, "a": 2 }).to_string().starts_with(r#"{"a""#))
}

/// Feeds a response body.
fn hash_response(h: Fnv1a, body: &[u8]) -> Fnv1a {
    if sorted_maps() {
        return h.write(body);
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(v) => hash_json(h, &v),
        Err(_) => h.write(body),
    }
}

/// Prints a request and its answer when `SUNDIAL_SIMAWS_TRACE` is set and the process, the
/// operation or the request names its value (a debugging aid: `SUNDIAL_SIMAWS_TRACE=job0000@17`).
fn debug_trace(aws: &Aws, call: &Call, reply: &Reply) {
    static FILTER: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let Some(f) = FILTER.get_or_init(|| std::env::var("SUNDIAL_SIMAWS_TRACE").ok()) else { return };
    let process = call.process.as_deref().unwrap_or("");
    let req = if call.json.is_null() {
        String::from_utf8_lossy(&call.raw).into_owned()
    } else {
        call.json.to_string()
    };
    let body = String::from_utf8_lossy(&reply.body);
    if ![process, call.op.as_str(), req.as_str(), &body].iter().any(|s| s.contains(f.as_str())) {
        return;
    }
    let t = aws.now_ms().rem_euclid(86_400_000);
    let at = format!("{:02}:{:02}:{:02}.{:03}", t / 3_600_000, t / 60_000 % 60, t / 1_000 % 60, t % 1_000);
    eprintln!(
        "{} {process} {} {} -> {} {}",
        at,
        call.op,
        req.chars().take(600).collect::<String>(),
        reply.status,
        body.chars().take(300).collect::<String>()
    );
}

impl SimClient {
    async fn serve(self, req: HttpRequest) -> Result<HttpResponse, ConnectorError> {
        let call = decode(&req, self.process.clone());
        self.wait_out_stall(call.process.as_deref()).await;
        let (latency, plan) = before(&mut self.aws.lock(), &call);
        // A round trip is never instantaneous: a caller that retries at once on an error still
        // moves simulated time forward instead of spinning at one instant.
        let latency = latency.max(MIN_LATENCY_MS);
        if latency > 0 {
            tokio::time::sleep(Duration::from_millis(latency)).await;
        }
        let mut reply = match plan {
            Before::Fail(e) => Reply::error(call.service, &e),
            Before::Serve { lose_response } => {
                let r = self.dispatch(&call).await;
                if lose_response {
                    if call.service == Service::Sqs && r.status == 200 {
                        self.aws.lock().sqs.mark_lost_replies(&r.body);
                    }
                    Reply::error(call.service, &server_error(call.service))
                } else {
                    r
                }
            }
        };
        debug_trace(&self.aws, &call, &reply);
        reply.headers.push(("x-amzn-requestid", format!("sim-{:016x}", self.aws.lock().rng.next_u64())));
        {
            let mut st = self.aws.lock();
            let t = st
                .trace
                .write(call.process.as_deref().unwrap_or("").as_bytes())
                .write(&[0])
                .write(call.op.as_bytes());
            let t = hash_request(t.write(&[0]), &call).write(&reply.status.to_be_bytes());
            st.trace = hash_response(t, &reply.body);
        }
        to_http(reply)
    }

    /// Waits while the calling process is stalled ([`Aws::stall`]).
    async fn wait_out_stall(&self, process: Option<&str>) {
        let Some(p) = process else { return };
        loop {
            let now = self.aws.now_ms();
            let until = {
                let st = self.aws.lock();
                st.stalls
                    .iter()
                    .filter(|(pre, t)| *t > now && p.starts_with(pre.as_str()))
                    .map(|(_, t)| *t)
                    .max()
            };
            match until {
                Some(t) => tokio::time::sleep(Duration::from_millis((t - now) as u64)).await,
                None => return,
            }
        }
    }

    async fn dispatch(&self, call: &Call) -> Reply {
        let aws = &self.aws;
        match call.service {
            Service::Dynamo => {
                let now = aws.now_ms();
                let mut st = aws.lock();
                let f = st.faults_for(call.process.as_ref());
                let (p, lag) = (f.ddb_unprocessed, f.gsi_lag_ms);
                let index_at = if lag > 0 { now + st.rng.below(lag + 1) as i64 } else { now };
                if st.on_write.is_some() {
                    st.ddb.log = Some(Vec::new());
                }
                let State { ddb, rng, stats, .. } = &mut *st;
                let mut unprocessed = || {
                    let hit = p > 0.0 && crate::unit(rng) < p;
                    if hit {
                        *stats.faults.entry("ddb_unprocessed".into()).or_default() += 1;
                    }
                    hit
                };
                let out = ddb.call(&call.op, &call.json, (now, index_at), &mut unprocessed);
                if let (Some(hook), Some(log)) = (st.on_write.clone(), st.ddb.log.take()) {
                    for (table, old, new) in log {
                        hook(&crate::AppliedWrite {
                            process: call.process.clone(),
                            table,
                            at_ms: now,
                            old: old.as_ref().map(crate::ddb::value::item_to_json_map),
                            new: new.as_ref().map(crate::ddb::value::item_to_json_map),
                        });
                    }
                }
                Reply::of(Service::Dynamo, out)
            }
            Service::Sqs => Reply::of(Service::Sqs, sqs::call(aws, call).await),
            Service::Secrets => Reply::of(Service::Secrets, services::secrets(aws, call)),
            Service::Events => Reply::of(Service::Events, services::events(aws, call)),
            Service::StepFunctions => Reply::of(Service::StepFunctions, sfn::call(aws, call)),
            Service::Ecs => Reply::of(Service::Ecs, ecs::call(aws, call)),
            Service::Lambda => services::lambda(aws, call).await,
            Service::Unknown if call.op.contains("(awsQuery") => {
                query_error(&ApiError::unknown_operation("an awsQuery service (IAM, STS, ...)", &call.op))
            }
            Service::Unknown => {
                Reply::error(Service::Unknown, &ApiError::unknown_operation("an unknown service", &call.op))
            }
        }
    }
}

fn to_http(reply: Reply) -> Result<HttpResponse, ConnectorError> {
    let mut b = http::Response::builder().status(reply.status);
    for (k, v) in &reply.headers {
        b = b.header(*k, v.as_str());
    }
    let resp = b.body(SdkBody::from(reply.body)).map_err(|e| ConnectorError::other(Box::new(e), None))?;
    HttpResponse::try_from(resp).map_err(|e| ConnectorError::other(Box::new(e), None))
}
