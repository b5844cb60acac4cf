//! A fault-injecting HTTP proxy between Sundial and the emulator, on loopback.
//!
//! Point any SDK client at it (`AWS_ENDPOINT_URL=http://127.0.0.1:<port>`) and it forwards each
//! request to the emulator, except when the seed says otherwise. Per request it may add latency
//! (database jitter), answer with an HTTP 500 or 503, answer with the service's own throttling
//! error, reset the connection before forwarding, or forward the request and then reset the
//! connection instead of returning the answer (the "did it happen?" case: the write was applied
//! but the caller cannot know).
//!
//! It tells DynamoDB from SQS by the `X-Amz-Target` header of the AWS JSON protocol
//! (`DynamoDB_20120810.PutItem`, `AmazonSQS.SendMessage`) and answers in each one's error shape,
//! chosen so the Rust SDK's retry classifiers see what they would see from AWS:
//! - DynamoDB throttling: 400 with `__type` `…#ProvisionedThroughputExceededException` or
//!   `…#ThrottlingException`; both codes are in `aws-runtime`'s `THROTTLING_ERRORS`.
//! - SQS throttling: 400 with `__type` `com.amazonaws.sqs#RequestThrottled` and the
//!   `x-amzn-query-error: RequestThrottled;Sender` header. SQS is `awsQueryCompatible`: the SDK
//!   takes the error code from that header when present, and `RequestThrottled` is a throttling
//!   code. (A header saying `AWS.SimpleQueueService.RequestThrottled` would *not* be classified
//!   as throttling: that prefixed code is not in the list; see the proxy tests.)
//! - 500 / 503: transient by status code (`HttpStatusCodeClassifier`).
//! - Resets: the SDK's HTTP client reports an I/O error or an incomplete message, both
//!   transient.
//!
//! SQS long polls are held by the proxy and re-asked every [`LONG_POLL_INTERVAL`] as short polls
//! (see [`as_short_poll`]), which spares the single-threaded emulator.
//!
//! Decisions are drawn by request index from the seed ([`crate::prng::at`]): the `n`-th request
//! through a proxy with seed `s` always gets the same fault. Which request is the `n`-th depends
//! on arrival order, so a concurrent run is reproducible in its fault mix, not request for
//! request.

use crate::prng;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// How often each fault happens, in requests per thousand (checked in this order, so the sum
/// should stay under 1000), and how much latency to add.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultPlan {
    /// Requests that get extra latency (independent of the faults below).
    pub latency_permille: u32,
    /// Largest added latency (ms); each delayed request gets a uniform draw in `1..=max`.
    pub max_latency_ms: u64,
    /// HTTP 500 (InternalServerError / InternalError).
    pub http500_permille: u32,
    /// HTTP 503 (ServiceUnavailable).
    pub http503_permille: u32,
    /// The service's throttling error.
    pub throttle_permille: u32,
    /// Connection reset before the request is forwarded (not applied).
    pub reset_permille: u32,
    /// Request forwarded and applied, then the connection reset instead of the answer.
    pub drop_after_apply_permille: u32,
}

impl FaultPlan {
    /// No faults: a transparent proxy.
    pub const CALM: FaultPlan = FaultPlan {
        latency_permille: 0,
        max_latency_ms: 0,
        http500_permille: 0,
        http503_permille: 0,
        throttle_permille: 0,
        reset_permille: 0,
        drop_after_apply_permille: 0,
    };

    /// The chaos run's default mix: about one request in eight is delayed and one in fourteen
    /// fails, enough to exercise every retry path without drowning the SDK's retry budget.
    pub const STORMY: FaultPlan = FaultPlan {
        latency_permille: 120,
        max_latency_ms: 400,
        http500_permille: 15,
        http503_permille: 15,
        throttle_permille: 20,
        reset_permille: 10,
        drop_after_apply_permille: 10,
    };
}

/// Which AWS service a request is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Service {
    /// `X-Amz-Target: DynamoDB_20120810.*`.
    DynamoDb,
    /// `X-Amz-Target: AmazonSQS.*`.
    Sqs,
    /// Anything else (passed through untouched).
    Other,
}

/// Classifies a request by its `X-Amz-Target` header.
pub fn classify(target: Option<&str>) -> Service {
    match target {
        Some(t) if t.starts_with("DynamoDB_") => Service::DynamoDb,
        Some(t) if t.starts_with("AmazonSQS.") => Service::Sqs,
        _ => Service::Other,
    }
}

/// A fault injected into one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Fault {
    /// HTTP 500.
    Http500,
    /// HTTP 503.
    Http503,
    /// DynamoDB `ProvisionedThroughputExceededException`.
    DdbThroughputExceeded,
    /// DynamoDB `ThrottlingException`.
    DdbThrottling,
    /// SQS `RequestThrottled`.
    SqsThrottled,
    /// Connection reset, request not forwarded.
    Reset,
    /// Request applied, answer replaced by a connection reset.
    DropAfterApply,
}

impl Fault {
    /// Every fault, for reports.
    pub const ALL: [Fault; 7] = [
        Fault::Http500,
        Fault::Http503,
        Fault::DdbThroughputExceeded,
        Fault::DdbThrottling,
        Fault::SqsThrottled,
        Fault::Reset,
        Fault::DropAfterApply,
    ];

    /// A stable name.
    pub fn name(self) -> &'static str {
        match self {
            Fault::Http500 => "http_500",
            Fault::Http503 => "http_503",
            Fault::DdbThroughputExceeded => "ddb_provisioned_throughput_exceeded",
            Fault::DdbThrottling => "ddb_throttling",
            Fault::SqsThrottled => "sqs_request_throttled",
            Fault::Reset => "reset_before_forward",
            Fault::DropAfterApply => "applied_then_dropped",
        }
    }

    fn index(self) -> usize {
        Fault::ALL.iter().position(|f| *f == self).unwrap_or(0)
    }
}

/// What happens to one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// Added latency (ms), before anything else.
    pub latency_ms: u64,
    /// The fault, if any.
    pub fault: Option<Fault>,
}

/// The decision for the `n`-th request of a proxy with `seed`: pure.
pub fn decide(seed: u64, n: u64, plan: &FaultPlan, service: Service) -> Decision {
    if service == Service::Other {
        return Decision { latency_ms: 0, fault: None };
    }
    let r = prng::at(seed, n);
    let lat = prng::at(seed ^ 0x5EED_1A7E_0000_0001, n);
    let latency_ms = if (lat % 1000) < u64::from(plan.latency_permille) && plan.max_latency_ms > 0 {
        1 + (lat >> 10) % plan.max_latency_ms
    } else {
        0
    };
    let u = (r % 1000) as u32;
    let throttle = match service {
        Service::Sqs => Fault::SqsThrottled,
        _ if (r >> 20) & 1 == 0 => Fault::DdbThroughputExceeded,
        _ => Fault::DdbThrottling,
    };
    let mut edge = 0;
    let mut fault = None;
    for (permille, f) in [
        (plan.http500_permille, Fault::Http500),
        (plan.http503_permille, Fault::Http503),
        (plan.throttle_permille, throttle),
        (plan.reset_permille, Fault::Reset),
        (plan.drop_after_apply_permille, Fault::DropAfterApply),
    ] {
        edge += permille;
        if u < edge {
            fault = Some(f);
            break;
        }
    }
    Decision { latency_ms, fault }
}

/// The error answer a fault stands for, in the service's JSON protocol shape.
pub fn error_response(service: Service, fault: Fault) -> Option<Response<Full<Bytes>>> {
    let (status, ty, query): (u16, &str, Option<&str>) = match (service, fault) {
        (_, Fault::Reset | Fault::DropAfterApply) => return None,
        (Service::Sqs, Fault::Http500) => {
            (500, "com.amazonaws.sqs#InternalError", Some("InternalError;Receiver"))
        }
        (Service::Sqs, Fault::Http503) => {
            (503, "com.amazonaws.sqs#ServiceUnavailable", Some("ServiceUnavailable;Receiver"))
        }
        (Service::Sqs, _) => (400, "com.amazonaws.sqs#RequestThrottled", Some("RequestThrottled;Sender")),
        (_, Fault::Http500) => (500, "com.amazonaws.dynamodb.v20120810#InternalServerError", None),
        (_, Fault::Http503) => (503, "com.amazonaws.dynamodb.v20120810#ServiceUnavailable", None),
        (_, Fault::DdbThrottling) => (400, "com.amazon.coral.availability#ThrottlingException", None),
        (_, _) => (400, "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException", None),
    };
    let body = serde_json::json!({
        "__type": ty,
        "message": format!("injected by sundial-chaos: {}", fault.name()),
    })
    .to_string();
    let mut b = Response::builder()
        .status(status)
        .header("content-type", "application/x-amz-json-1.0")
        .header("x-amzn-requestid", "sundial-chaos-injected");
    if let Some(q) = query {
        b = b.header("x-amzn-query-error", q);
    }
    b.body(Full::new(Bytes::from(body))).ok()
}

/// Counters of what the proxy did.
#[derive(Debug, Default)]
pub struct ProxyStats {
    requests: AtomicU64,
    delayed: AtomicU64,
    faults: [AtomicU64; 7],
    upstream_errors: AtomicU64,
}

impl ProxyStats {
    /// Requests seen.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Requests that got added latency.
    pub fn delayed(&self) -> u64 {
        self.delayed.load(Ordering::Relaxed)
    }

    /// Injected faults of one kind.
    pub fn faults(&self, f: Fault) -> u64 {
        self.faults[f.index()].load(Ordering::Relaxed)
    }

    /// Requests the emulator itself failed to answer.
    pub fn upstream_errors(&self) -> u64 {
        self.upstream_errors.load(Ordering::Relaxed)
    }

    /// Every counter by name (faults by [`Fault::name`], plus `latency` and `requests`).
    pub fn snapshot(&self) -> BTreeMap<String, u64> {
        let mut m: BTreeMap<String, u64> =
            Fault::ALL.iter().map(|f| (f.name().to_string(), self.faults(*f))).collect();
        m.insert("latency".into(), self.delayed());
        m.insert("requests".into(), self.requests());
        m.insert("upstream_errors".into(), self.upstream_errors());
        m
    }
}

/// The proxy could not start.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// Binding the listener failed (permanent for this address).
    #[error("binding the fault proxy to {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}

/// Returned by the service to make hyper drop (reset) the connection without answering.
#[derive(Debug, thiserror::Error)]
#[error("connection reset by the fault proxy ({0})")]
struct Abort(&'static str);

struct Shared {
    seed: u64,
    upstream: String,
    plan: RwLock<FaultPlan>,
    next: AtomicU64,
    stats: Arc<ProxyStats>,
    client: Client<HttpConnector, Full<Bytes>>,
}

/// A running proxy. Dropping it stops it.
pub struct Proxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy").field("addr", &self.addr).field("seed", &self.shared.seed).finish()
    }
}

impl Proxy {
    /// Starts a proxy on `listen` (port 0 = any free port) forwarding to `upstream`
    /// (`http://127.0.0.1:4566`).
    pub async fn start(
        listen: SocketAddr,
        upstream: &str,
        seed: u64,
        plan: FaultPlan,
    ) -> Result<Proxy, ProxyError> {
        let listener =
            TcpListener::bind(listen).await.map_err(|source| ProxyError::Bind { addr: listen, source })?;
        let addr = listener.local_addr().map_err(|source| ProxyError::Bind { addr: listen, source })?;
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(HttpConnector::new());
        let shared = Arc::new(Shared {
            seed,
            upstream: upstream.trim_end_matches('/').to_string(),
            plan: RwLock::new(plan),
            next: AtomicU64::new(0),
            stats: Arc::new(ProxyStats::default()),
            client,
        });
        let stop = CancellationToken::new();
        let task = tokio::spawn(accept_loop(listener, shared.clone(), stop.clone()));
        Ok(Proxy { addr, shared, stop, task })
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://<addr>`, for `AWS_ENDPOINT_URL`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The counters.
    pub fn stats(&self) -> Arc<ProxyStats> {
        self.shared.stats.clone()
    }

    /// The current plan.
    pub fn plan(&self) -> FaultPlan {
        self.shared.plan.read().map(|p| *p).unwrap_or(FaultPlan::CALM)
    }

    /// Replaces the plan (a calm spell, a storm) for the following requests.
    pub fn set_plan(&self, plan: FaultPlan) {
        if let Ok(mut p) = self.shared.plan.write() {
            *p = plan;
        }
    }

    /// Stops accepting and closes every connection.
    pub async fn stop(mut self) {
        self.stop.cancel();
        let task = std::mem::replace(&mut self.task, tokio::spawn(async {}));
        let _ = task.await;
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, stop: CancellationToken) {
    let mut conns = JoinSet::new();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = stop.cancelled() => break,
        };
        let Ok((stream, _)) = accepted else { continue };
        // Linger 0: when a connection is dropped without an answer, the peer sees a reset (RST)
        // at once rather than a clean close it might wait on.
        let _ = stream.set_zero_linger();
        let _ = stream.set_nodelay(true);
        let shared = shared.clone();
        conns.spawn(async move {
            let svc = service_fn(move |req| handle(shared.clone(), req));
            let _ = http1::Builder::new().keep_alive(true).serve_connection(TokioIo::new(stream), svc).await;
        });
        while conns.try_join_next().is_some() {}
    }
    conns.abort_all();
}

async fn handle(shared: Arc<Shared>, req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Abort> {
    let n = shared.next.fetch_add(1, Ordering::Relaxed);
    let stats = &shared.stats;
    stats.requests.fetch_add(1, Ordering::Relaxed);
    let service = classify(req.headers().get("x-amz-target").and_then(|v| v.to_str().ok()));
    let plan = shared.plan.read().map(|p| *p).unwrap_or(FaultPlan::CALM);
    let d = decide(shared.seed, n, &plan, service);
    if d.latency_ms > 0 {
        stats.delayed.fetch_add(1, Ordering::Relaxed);
        tokio::time::sleep(Duration::from_millis(d.latency_ms)).await;
    }
    if let Some(f) = d.fault {
        stats.faults[f.index()].fetch_add(1, Ordering::Relaxed);
        if let Some(resp) = error_response(service, f) {
            // Drain the request body so the connection stays usable for the next request.
            let _ = req.into_body().collect().await;
            return Ok(resp);
        }
        if f == Fault::Reset {
            return Err(Abort("before forwarding"));
        }
    }
    let resp = forward(&shared, req).await;
    if d.fault == Some(Fault::DropAfterApply) {
        return Err(Abort("after the request was applied"));
    }
    Ok(resp)
}

/// How often the proxy re-polls the emulator while it holds an SQS long poll.
pub const LONG_POLL_INTERVAL: Duration = Duration::from_millis(250);

/// For an SQS `ReceiveMessage` with `WaitTimeSeconds > 0`: the wait, and the body rewritten to a
/// short poll. The emulator turns each long poll into a short poll every 50 ms under its one
/// lock, so a few idle consumers keep it busy; the proxy holds long polls itself and asks every
/// [`LONG_POLL_INTERVAL`] instead (a message waits at most that long more to be picked up).
pub fn as_short_poll(target: Option<&str>, body: &[u8]) -> Option<(Duration, Bytes)> {
    if target != Some("AmazonSQS.ReceiveMessage") {
        return None;
    }
    let mut v: serde_json::Value = serde_json::from_slice(body).ok()?;
    let wait = v.get("WaitTimeSeconds").and_then(serde_json::Value::as_u64).filter(|w| *w > 0)?;
    v["WaitTimeSeconds"] = serde_json::json!(0);
    Some((Duration::from_secs(wait.min(20)), Bytes::from(v.to_string())))
}

/// Whether a `ReceiveMessage` answer carries messages (an answer that is not JSON is passed on).
fn has_messages(body: &[u8]) -> bool {
    match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(v) => v.get("Messages").and_then(|m| m.as_array()).is_some_and(|a| !a.is_empty()),
        Err(_) => true,
    }
}

async fn forward(shared: &Shared, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let (parts, body) = req.into_parts();
    let upstream_error = |why: String| {
        shared.stats.upstream_errors.fetch_add(1, Ordering::Relaxed);
        let mut r = Response::new(Full::new(Bytes::from(
            serde_json::json!({"__type": "SundialChaosUpstreamError", "message": why}).to_string(),
        )));
        *r.status_mut() = StatusCode::BAD_GATEWAY;
        r
    };
    let body = match body.collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => return upstream_error(format!("reading the request body: {e}")),
    };
    let target = parts.headers.get("x-amz-target").and_then(|v| v.to_str().ok());
    let (wait, body) = match as_short_poll(target, &body) {
        Some((wait, short)) => (wait, short),
        None => (Duration::ZERO, body),
    };
    let deadline = tokio::time::Instant::now() + wait;
    let path = parts.uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let uri = format!("{}{path}", shared.upstream);
    loop {
        let mut out = Request::builder().method(parts.method.clone()).uri(&uri);
        for (k, v) in &parts.headers {
            if k != hyper::header::CONTENT_LENGTH {
                out = out.header(k, v);
            }
        }
        let out = match out.body(Full::new(body.clone())) {
            Ok(r) => r,
            Err(e) => return upstream_error(format!("building the upstream request: {e}")),
        };
        let resp = match shared.client.request(out).await {
            Ok(r) => r,
            Err(e) => return upstream_error(format!("the emulator did not answer: {e}")),
        };
        let (mut rparts, rbody) = resp.into_parts();
        let rbody = match rbody.collect().await {
            Ok(b) => b.to_bytes(),
            Err(e) => return upstream_error(format!("reading the emulator's answer: {e}")),
        };
        let now = tokio::time::Instant::now();
        if rparts.status.is_success() && !has_messages(&rbody) && now < deadline {
            tokio::time::sleep(LONG_POLL_INTERVAL.min(deadline - now)).await;
            continue;
        }
        rparts.headers.remove("transfer-encoding");
        rparts.headers.remove("connection");
        return Response::from_parts(rparts, Full::new(rbody));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_sqs_long_polls_become_short_polls() {
        let body = br#"{"QueueUrl":"http://q","WaitTimeSeconds":20,"MaxNumberOfMessages":4}"#;
        let (wait, short) = as_short_poll(Some("AmazonSQS.ReceiveMessage"), body).unwrap_or_default();
        assert_eq!(wait, Duration::from_secs(20));
        let v: serde_json::Value = serde_json::from_slice(&short).unwrap_or_default();
        assert_eq!((v["WaitTimeSeconds"].as_u64(), v["MaxNumberOfMessages"].as_u64()), (Some(0), Some(4)));
        assert!(as_short_poll(Some("AmazonSQS.ReceiveMessage"), br#"{"QueueUrl":"q"}"#).is_none());
        assert!(as_short_poll(Some("AmazonSQS.SendMessage"), body).is_none());
        assert!(!has_messages(br#"{"Messages":[]}"#) && !has_messages(b"{}"));
        assert!(has_messages(br#"{"Messages":[{"Body":"x"}]}"#));
    }

    #[test]
    fn targets_are_classified_by_service() {
        assert_eq!(classify(Some("DynamoDB_20120810.UpdateItem")), Service::DynamoDb);
        assert_eq!(classify(Some("AmazonSQS.ReceiveMessage")), Service::Sqs);
        assert_eq!(classify(Some("AWSLambda.Invoke")), Service::Other);
        assert_eq!(classify(None), Service::Other);
    }

    #[test]
    fn decisions_follow_the_seed_and_the_rates() {
        // GIVEN the stormy plan
        let p = FaultPlan::STORMY;
        let draw = |seed| (0..20_000).map(|n| decide(seed, n, &p, Service::DynamoDb)).collect::<Vec<_>>();
        // THEN the same seed gives the same decisions, another seed others
        assert_eq!(draw(1), draw(1));
        assert_ne!(draw(1), draw(2));
        // AND each fault's share is near its rate (4-sigma bands)
        let d = draw(1);
        let count = |f: Fault| d.iter().filter(|x| x.fault == Some(f)).count() as f64 / 20_000.0 * 1000.0;
        assert!((count(Fault::Http500) - 15.0).abs() < 4.0, "{}", count(Fault::Http500));
        let throttles = count(Fault::DdbThroughputExceeded) + count(Fault::DdbThrottling);
        assert!((throttles - 20.0).abs() < 4.5, "{throttles}");
        assert!(count(Fault::DdbThroughputExceeded) > 5.0 && count(Fault::DdbThrottling) > 5.0);
        assert_eq!(count(Fault::SqsThrottled), 0.0, "no SQS errors for DynamoDB requests");
        let delayed = d.iter().filter(|x| x.latency_ms > 0).count() as f64 / 20.0;
        assert!((delayed - 120.0).abs() < 10.0, "{delayed}");
        assert!(d.iter().all(|x| x.latency_ms <= 400));
    }

    #[test]
    fn unknown_services_and_the_calm_plan_pass_through() {
        for n in 0..1_000 {
            assert_eq!(decide(3, n, &FaultPlan::STORMY, Service::Other).fault, None);
            assert_eq!(decide(3, n, &FaultPlan::CALM, Service::Sqs), Decision { latency_ms: 0, fault: None });
        }
    }

    #[test]
    fn error_shapes_match_each_service() {
        let r = error_response(Service::Sqs, Fault::SqsThrottled).unwrap_or_else(|| panic!("no response"));
        assert_eq!(r.status(), 400);
        assert_eq!(r.headers()["x-amzn-query-error"], "RequestThrottled;Sender");
        let r = error_response(Service::DynamoDb, Fault::DdbThroughputExceeded)
            .unwrap_or_else(|| panic!("no response"));
        assert_eq!(r.status(), 400);
        assert!(r.headers().get("x-amzn-query-error").is_none());
        assert!(error_response(Service::DynamoDb, Fault::DropAfterApply).is_none());
        assert_eq!(error_response(Service::DynamoDb, Fault::Http503).map(|r| r.status().as_u16()), Some(503));
    }
}
