//! The client: one HTTP connection pool, the auth mode, the retry loop, and one method per
//! operation of functions/api/openapi.json.

use crate::auth::{self, Auth};
use crate::error::{api_error, Error};
use crate::page::{ListRequest, Pager, TzReportRequest};
use crate::retry::{next_wait, parse_retry_after, Clock, RetryPolicy, Safety, SystemClock};
use crate::types::{
    BackfillReport, BackfillRequest, BusinessCalendar, BusinessCalendarChange, BusinessCalendarSpec,
    CreateJob, DeletedCalendar, Execution, ExecutionDetail, Job, JobChange, JobDefinition, Page, Preview,
    PreviewRequest, ReplayResults, TzReport, UpcomingFires,
};
use crate::types::{DeletedResource, ExecutionLogs, ResourceLimit};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE, IF_MATCH, RETRY_AFTER, USER_AGENT};
use hyper::{Method, Request};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

type Connector = hyper_rustls::HttpsConnector<HttpConnector>;
type Http = hyper_util::client::legacy::Client<Connector, Full<Bytes>>;

/// The header the local run's server reads the tenant from (`sundial_api::local`).
pub const TENANT_HEADER: &str = "x-sundial-tenant";

/// What [`ClientBuilder::on_retry`] is told before each wait.
#[derive(Debug)]
#[non_exhaustive]
pub struct RetryNotice<'a> {
    /// Attempts made so far.
    pub attempts: u32,
    /// The wait before the next one.
    pub wait: Duration,
    /// Why the last one failed.
    pub error: &'a Error,
    /// The key every attempt of a creating POST carries.
    pub idempotency_key: Option<&'a str>,
}

type OnRetry = Arc<dyn Fn(&RetryNotice<'_>) + Send + Sync>;

/// Sets up a [`Client`].
pub struct ClientBuilder {
    base_url: String,
    auth: Auth,
    tenant: Option<String>,
    retry: RetryPolicy,
    clock: Arc<dyn Clock>,
    timeout: Duration,
    on_retry: Option<OnRetry>,
}

impl ClientBuilder {
    /// The auth mode (default [`Auth::None`]).
    pub fn auth(mut self, auth: Auth) -> Self {
        self.auth = auth;
        self
    }

    /// The tenant sent as `X-Sundial-Tenant`: read by the local run's server only (default
    /// `local`); a deployed API takes the tenant from its authorizer and ignores the header.
    pub fn tenant(mut self, tenant: Option<String>) -> Self {
        self.tenant = tenant;
        self
    }

    /// The retry policy (default [`RetryPolicy::default`]).
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Where time comes from (default [`SystemClock`]); tests inject one that does not sleep.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Per-attempt timeout, answer included (default 60 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Called before each wait between attempts (the CLI prints it).
    pub fn on_retry(mut self, f: impl Fn(&RetryNotice<'_>) + Send + Sync + 'static) -> Self {
        self.on_retry = Some(Arc::new(f));
        self
    }

    /// The client. Fails on a URL that is not `http(s)://host[:port][/base]`, when the system's
    /// root certificates cannot be read, or in IAM mode without a region.
    pub fn build(self) -> Result<Client, Error> {
        let base = self.base_url.trim_end_matches('/').to_string();
        let uri: hyper::Uri =
            base.parse().map_err(|e| Error::Invalid(format!("the API URL {base:?} is not a URL: {e}")))?;
        if !matches!(uri.scheme_str(), Some("http" | "https"))
            || uri.host().is_none()
            || uri.query().is_some()
        {
            return Err(Error::Invalid(format!("the API URL {base:?} is not http(s)://host[:port][/path]")));
        }
        let region = match &self.auth {
            Auth::Iam(iam) => Some(iam.region_for(&base)?),
            _ => None,
        };
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_connect_timeout(Some(Duration::from_secs(10)));
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_native_roots(Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
            .map_err(|e| Error::Invalid(format!("loading the system's root certificates: {e}")))?
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        Ok(Client {
            inner: Arc::new(Inner {
                base,
                http: hyper_util::client::legacy::Client::builder(TokioExecutor::new()).build(https),
                auth: self.auth,
                region,
                tenant: self.tenant,
                retry: self.retry,
                clock: self.clock,
                timeout: self.timeout,
                on_retry: self.on_retry,
            }),
        })
    }
}

/// A client of one Sundial API. Cheap to clone (one shared connection pool).
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    base: String,
    http: Http,
    auth: Auth,
    /// The SigV4 region (IAM mode).
    region: Option<String>,
    tenant: Option<String>,
    retry: RetryPolicy,
    clock: Arc<dyn Clock>,
    timeout: Duration,
    on_retry: Option<OnRetry>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("base", &self.inner.base)
            .field("auth", &self.inner.auth)
            .field("tenant", &self.inner.tenant)
            .field("retry", &self.inner.retry)
            .finish_non_exhaustive()
    }
}

/// One logical request; each attempt is built (and signed) from it again.
struct Call {
    method: Method,
    path: String,
    body: Option<Bytes>,
    if_match: Option<u64>,
    idempotency_key: Option<String>,
}

impl Call {
    fn new(method: Method, path: String) -> Call {
        Call { method, path, body: None, if_match: None, idempotency_key: None }
    }

    fn json(mut self, body: &impl Serialize) -> Result<Call, Error> {
        let bytes = serde_json::to_vec(body).map_err(|e| Error::Invalid(format!("the request body: {e}")))?;
        self.body = Some(Bytes::from(bytes));
        Ok(self)
    }

    fn if_match(mut self, version: Option<u64>) -> Call {
        self.if_match = version;
        self
    }

    /// A creating POST: one fresh `Idempotency-Key` for every attempt of this call.
    fn once(mut self) -> Call {
        self.idempotency_key = Some(idempotency_key());
        self
    }
}

/// A fresh Idempotency-Key: a per-process random value (std's randomly seeded hasher), the
/// process, the clock in nanoseconds and a counter.
pub fn idempotency_key() -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::OnceLock;
    static N: AtomicU64 = AtomicU64::new(0);
    static SEED: OnceLock<u64> = OnceLock::new();
    let seed = *SEED.get_or_init(|| std::collections::hash_map::RandomState::new().build_hasher().finish());
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("sundial-{seed:016x}-{}-{nanos}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

/// Percent-encodes one path segment or query value (RFC 3986 unreserved characters stay).
pub(crate) fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

impl Client {
    /// A client of the API at `base_url` (the local run's `http://127.0.0.1:8080`, or the
    /// deployed `https://{id}.execute-api.{region}.amazonaws.com`).
    pub fn builder(base_url: impl Into<String>) -> ClientBuilder {
        ClientBuilder {
            base_url: base_url.into(),
            auth: Auth::None,
            tenant: None,
            retry: RetryPolicy::default(),
            clock: Arc::new(SystemClock),
            timeout: Duration::from_secs(60),
            on_retry: None,
        }
    }

    /// The API's base URL.
    pub fn base_url(&self) -> &str {
        &self.inner.base
    }

    /// Sends `call` until it succeeds, fails for good, or the retry budget is spent.
    async fn execute<T: DeserializeOwned>(&self, call: Call) -> Result<T, Error> {
        let safety = if call.method == Method::GET || call.idempotency_key.is_some() {
            Safety::Repeatable
        } else {
            Safety::Once
        };
        let (mut attempts, mut waited) = (0, Duration::ZERO);
        loop {
            attempts += 1;
            let err = match self.send(&call).await {
                Ok(bytes) => {
                    return serde_json::from_slice(&bytes)
                        .map_err(|source| Error::Decode { url: self.url(&call), source })
                }
                Err(e) => e,
            };
            let Some(wait) = next_wait(&self.inner.retry, safety, attempts, waited, &err) else {
                return Err(err);
            };
            if let Some(f) = &self.inner.on_retry {
                f(&RetryNotice {
                    attempts,
                    wait,
                    error: &err,
                    idempotency_key: call.idempotency_key.as_deref(),
                });
            }
            self.inner.clock.sleep(wait).await;
            waited += wait;
        }
    }

    fn url(&self, call: &Call) -> String {
        format!("{}{}", self.inner.base, call.path)
    }

    /// One attempt: the answer's body on 2xx, else the API's error.
    async fn send(&self, call: &Call) -> Result<Bytes, Error> {
        let url = self.url(call);
        let invalid = |e: hyper::http::Error| Error::Invalid(format!("{url}: {e}"));
        let mut req = Request::builder()
            .method(call.method.clone())
            .uri(&url)
            .header(USER_AGENT, concat!("sundial-client/", env!("CARGO_PKG_VERSION")));
        if let Some(t) = &self.inner.tenant {
            req = req.header(TENANT_HEADER, t);
        }
        if let Some(v) = call.if_match {
            req = req.header(IF_MATCH, HeaderValue::from(v));
        }
        if let Some(k) = &call.idempotency_key {
            req = req.header("idempotency-key", k);
        }
        if call.body.is_some() {
            req = req.header(CONTENT_TYPE, "application/json");
        }
        let body = call.body.clone().unwrap_or_default();
        let mut req = req.body(Full::new(body.clone())).map_err(invalid)?;
        match &self.inner.auth {
            Auth::None => {}
            Auth::Jwt(token) => {
                let v = HeaderValue::from_str(&format!("Bearer {token}"))
                    .map_err(|_| Error::Invalid("the token is not a valid header value".into()))?;
                req.headers_mut().insert(AUTHORIZATION, v);
            }
            Auth::Iam(iam) => {
                let region = self.inner.region.as_deref().unwrap_or_default();
                let creds = iam.credentials().await?;
                auth::sign(&mut req, &body, &creds, region, auth::EXECUTE_API, self.inner.clock.now())?;
            }
        }
        let transport =
            |e: Box<dyn std::error::Error + Send + Sync>| Error::Transport { url: url.clone(), source: e };
        let exchange = async {
            let resp = self.inner.http.request(req).await.map_err(|e| transport(e.into()))?;
            let status = resp.status();
            let retry_after = resp
                .headers()
                .get(RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| parse_retry_after(v, self.inner.clock.now()));
            let bytes = resp.into_body().collect().await.map_err(|e| transport(e.into()))?.to_bytes();
            Ok::<_, Error>((status, retry_after, bytes))
        };
        let (status, retry_after, bytes) =
            tokio::time::timeout(self.inner.timeout, exchange).await.map_err(|_| {
                transport(format!("no answer within {} s", self.inner.timeout.as_secs()).into())
            })??;
        if status.is_success() {
            Ok(bytes)
        } else {
            Err(Error::Api(api_error(status.as_u16(), &bytes, retry_after)))
        }
    }

    // ---- lists ----

    /// One page of any list.
    pub async fn page<R: ListRequest>(&self, req: &R) -> Result<Page<R::Item>, Error> {
        self.execute(Call::new(Method::GET, req.path_and_query())).await
    }

    /// A pager over any list, from `first`'s cursor (or the start).
    pub fn pages<R: ListRequest>(&self, first: R) -> Pager<R> {
        Pager::new(self.clone(), first)
    }

    /// Every item of a list, following `nextCursor` to the end.
    pub async fn all<R: ListRequest>(&self, first: R) -> Result<Vec<R::Item>, Error> {
        self.pages(first).collect_all().await
    }

    // ---- jobs ----

    /// `POST /v1/jobs` (with an Idempotency-Key, retried with it).
    pub async fn create_job(&self, job: &CreateJob) -> Result<JobChange, Error> {
        self.execute(Call::new(Method::POST, "/v1/jobs".into()).json(job)?.once()).await
    }

    /// `GET /v1/jobs/{jobId}`.
    pub async fn get_job(&self, job_id: &str) -> Result<Job, Error> {
        self.execute(Call::new(Method::GET, format!("/v1/jobs/{}", enc(job_id)))).await
    }

    /// `PUT /v1/jobs/{jobId}` with `If-Match: version`: fails with 412 if the job changed since.
    pub async fn update_job(
        &self,
        job_id: &str,
        definition: &JobDefinition,
        version: u64,
    ) -> Result<JobChange, Error> {
        let call = Call::new(Method::PUT, format!("/v1/jobs/{}", enc(job_id))).json(definition)?;
        self.execute(call.if_match(Some(version))).await
    }

    /// `DELETE /v1/jobs/{jobId}` (soft delete), optionally only at `version`.
    pub async fn delete_job(&self, job_id: &str, version: Option<u64>) -> Result<JobChange, Error> {
        self.execute(Call::new(Method::DELETE, format!("/v1/jobs/{}", enc(job_id))).if_match(version)).await
    }

    /// `POST /v1/jobs/{jobId}/pause`, optionally only at `version`.
    pub async fn pause_job(&self, job_id: &str, version: Option<u64>) -> Result<JobChange, Error> {
        self.execute(Call::new(Method::POST, format!("/v1/jobs/{}/pause", enc(job_id))).if_match(version))
            .await
    }

    /// `POST /v1/jobs/{jobId}/resume`, optionally only at `version`.
    pub async fn resume_job(&self, job_id: &str, version: Option<u64>) -> Result<JobChange, Error> {
        self.execute(Call::new(Method::POST, format!("/v1/jobs/{}/resume", enc(job_id))).if_match(version))
            .await
    }

    /// `POST /v1/jobs/{jobId}/trigger`: run now (with an Idempotency-Key, retried with it).
    pub async fn trigger_job(&self, job_id: &str) -> Result<ExecutionDetail, Error> {
        self.execute(Call::new(Method::POST, format!("/v1/jobs/{}/trigger", enc(job_id))).once()).await
    }

    /// `POST /v1/jobs/{jobId}/backfill` (with an Idempotency-Key, retried with it).
    pub async fn backfill_job(&self, job_id: &str, req: &BackfillRequest) -> Result<BackfillReport, Error> {
        self.execute(Call::new(Method::POST, format!("/v1/jobs/{}/backfill", enc(job_id))).json(req)?.once())
            .await
    }

    /// `GET /v1/jobs/{jobId}/versions/{version}`: an immutable definition version.
    pub async fn get_job_version(&self, job_id: &str, version: u64) -> Result<Job, Error> {
        self.execute(Call::new(Method::GET, format!("/v1/jobs/{}/versions/{version}", enc(job_id)))).await
    }

    /// `GET /v1/jobs/{jobId}/versions`, every page: a job's versions, newest first, at most
    /// `limit` of them (all if `None`). Versions that are gone (the older versions of a deleted
    /// job expire) are not listed.
    pub async fn job_versions(&self, job_id: &str, limit: Option<u64>) -> Result<Vec<Job>, Error> {
        let want = usize::try_from(limit.unwrap_or(u64::MAX)).unwrap_or(usize::MAX);
        let mut out = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let page_size = want.saturating_sub(out.len()).clamp(1, 100);
            let mut path = format!("/v1/jobs/{}/versions?limit={page_size}", enc(job_id));
            if let Some(c) = &cursor {
                path.push_str(&format!("&cursor={}", enc(c)));
            }
            let page: Page<Job> = self.execute(Call::new(Method::GET, path)).await?;
            out.extend(page.items);
            cursor = page.next_cursor;
            if cursor.is_none() || out.len() >= want {
                break;
            }
        }
        out.truncate(want);
        Ok(out)
    }

    /// `GET /v1/jobs/{jobId}/upcoming`: the job's fires over `days` (1-90, default 28) from
    /// `from` (default now, or the schedule's start when later), with the daylight-saving
    /// transitions they cross.
    pub async fn upcoming_fires(
        &self,
        job_id: &str,
        from: Option<chrono::DateTime<chrono::Utc>>,
        days: Option<u32>,
    ) -> Result<UpcomingFires, Error> {
        let mut q = Vec::new();
        if let Some(f) = from {
            q.push(format!("from={}", enc(&f.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))));
        }
        if let Some(d) = days {
            q.push(format!("days={d}"));
        }
        let qs = if q.is_empty() { String::new() } else { format!("?{}", q.join("&")) };
        self.execute(Call::new(Method::GET, format!("/v1/jobs/{}/upcoming{qs}", enc(job_id)))).await
    }

    /// `GET /v1/tz-report`: one page of the tzdb upgrade report, with the compiled release
    /// and the number of jobs examined ([`Client::all`] with the same request reads every
    /// listed job instead).
    pub async fn tz_report(&self, req: &TzReportRequest) -> Result<TzReport, Error> {
        self.execute(Call::new(Method::GET, req.path_and_query())).await
    }

    /// `POST /v1/preview`: the next fires of a draft schedule; nothing is stored.
    pub async fn preview(&self, req: &PreviewRequest) -> Result<Preview, Error> {
        self.execute(Call::new(Method::POST, "/v1/preview".into()).json(req)?).await
    }

    // ---- business calendars ----

    /// `PUT /v1/calendars/{calendarId}`: creates it (`version` `None`), or writes a new version
    /// if it is still at `version` (412 otherwise).
    pub async fn put_calendar(
        &self,
        calendar_id: &str,
        definition: &BusinessCalendarSpec,
        version: Option<u64>,
    ) -> Result<BusinessCalendarChange, Error> {
        let call = Call::new(Method::PUT, format!("/v1/calendars/{}", enc(calendar_id))).json(definition)?;
        self.execute(call.if_match(version)).await
    }

    /// `GET /v1/calendars/{calendarId}`.
    pub async fn get_calendar(&self, calendar_id: &str) -> Result<BusinessCalendar, Error> {
        self.execute(Call::new(Method::GET, format!("/v1/calendars/{}", enc(calendar_id)))).await
    }

    /// `GET /v1/calendars/{calendarId}/versions/{version}`.
    pub async fn get_calendar_version(
        &self,
        calendar_id: &str,
        version: u64,
    ) -> Result<BusinessCalendar, Error> {
        self.execute(Call::new(Method::GET, format!("/v1/calendars/{}/versions/{version}", enc(calendar_id))))
            .await
    }

    /// `DELETE /v1/calendars/{calendarId}` (409 while a job or calendar uses it).
    pub async fn delete_calendar(
        &self,
        calendar_id: &str,
        version: Option<u64>,
    ) -> Result<DeletedCalendar, Error> {
        self.execute(
            Call::new(Method::DELETE, format!("/v1/calendars/{}", enc(calendar_id))).if_match(version),
        )
        .await
    }

    // ---- resource limits (docs/resources.md) ----

    /// `PUT /v1/resources/{resource}`: sets a platform-wide limit (operators only; 403 for
    /// other callers).
    pub async fn put_resource(&self, resource: &str, limit: u32) -> Result<ResourceLimit, Error> {
        let body = serde_json::json!({ "limit": limit });
        self.execute(Call::new(Method::PUT, format!("/v1/resources/{}", enc(resource))).json(&body)?).await
    }

    /// `GET /v1/resources/{resource}`: the limit and how many executions hold it now.
    pub async fn get_resource(&self, resource: &str) -> Result<ResourceLimit, Error> {
        self.execute(Call::new(Method::GET, format!("/v1/resources/{}", enc(resource)))).await
    }

    /// `GET /v1/resources`: every limit (one page).
    pub async fn list_resources(&self) -> Result<Page<ResourceLimit>, Error> {
        self.execute(Call::new(Method::GET, "/v1/resources".to_string())).await
    }

    /// `DELETE /v1/resources/{resource}` (operators only).
    pub async fn delete_resource(&self, resource: &str) -> Result<DeletedResource, Error> {
        self.execute(Call::new(Method::DELETE, format!("/v1/resources/{}", enc(resource)))).await
    }

    // ---- executions and dead letters ----

    /// `GET /v1/executions/{executionId}`: with its timeline.
    pub async fn get_execution(&self, execution_id: &str) -> Result<ExecutionDetail, Error> {
        self.execute(Call::new(Method::GET, format!("/v1/executions/{}", enc(execution_id)))).await
    }

    /// `GET /v1/executions/{executionId}/children`: a sharded or broadcast fire's children, in
    /// order (one page: a fire has at most 100).
    pub async fn list_children(&self, execution_id: &str) -> Result<Page<Execution>, Error> {
        self.execute(Call::new(Method::GET, format!("/v1/executions/{}/children", enc(execution_id)))).await
    }

    /// `GET /v1/executions/{executionId}/logs`: the worker's log lines of one execution (the
    /// local run keeps them), or a CloudWatch Logs Insights link (deployed).
    pub async fn execution_logs(&self, execution_id: &str) -> Result<ExecutionLogs, Error> {
        self.execute(Call::new(Method::GET, format!("/v1/executions/{}/logs", enc(execution_id)))).await
    }

    /// `POST /v1/executions/{executionId}/cancel`: canceled, or cancel requested if running.
    pub async fn cancel_execution(&self, execution_id: &str) -> Result<ExecutionDetail, Error> {
        self.execute(Call::new(Method::POST, format!("/v1/executions/{}/cancel", enc(execution_id)))).await
    }

    /// `POST /v1/dlq/replay`: up to 25 dead executions, one outcome each.
    pub async fn replay_dead_letters(&self, execution_ids: &[String]) -> Result<ReplayResults, Error> {
        self.replay_dead_letters_because(execution_ids, None).await
    }

    /// `POST /v1/dlq/replay` with a reason, recorded in each replay's operations-log entry
    /// (`detail`; at most 500 characters).
    pub async fn replay_dead_letters_because(
        &self,
        execution_ids: &[String],
        reason: Option<&str>,
    ) -> Result<ReplayResults, Error> {
        let mut body = serde_json::json!({ "executionIds": execution_ids });
        if let Some(r) = reason {
            body["reason"] = r.into();
        }
        self.execute(Call::new(Method::POST, "/v1/dlq/replay".into()).json(&body)?).await
    }

    /// `POST /v1/dlq/{executionId}/replay`.
    pub async fn replay_dead_letter(&self, execution_id: &str) -> Result<ExecutionDetail, Error> {
        self.execute(Call::new(Method::POST, format!("/v1/dlq/{}/replay", enc(execution_id)))).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::ListJobs;
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::Mutex;
    use std::time::SystemTime;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A clock that records the waits asked for and returns at once.
    #[derive(Debug, Default)]
    struct Recorder(Mutex<Vec<Duration>>);

    impl Clock for Recorder {
        fn now(&self) -> SystemTime {
            SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_119_200)
        }
        fn sleep(&self, d: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> {
            self.0.lock().unwrap_or_else(|e| e.into_inner()).push(d);
            Box::pin(async {})
        }
    }

    /// A server that answers the given raw responses in turn (`""` drops the connection) and
    /// records each request's head.
    async fn scripted(answers: Vec<&'static str>, heads: Arc<Mutex<Vec<String>>>) -> String {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("{e}"));
        let url = format!("http://{}", l.local_addr().unwrap_or_else(|e| panic!("{e}")));
        tokio::spawn(async move {
            for answer in answers {
                let Ok((mut s, _)) = l.accept().await else { return };
                let mut buf = vec![0u8; 16384];
                let n = s.read(&mut buf).await.unwrap_or(0);
                heads
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(String::from_utf8_lossy(&buf[..n]).to_ascii_lowercase());
                let _ = s.write_all(answer.as_bytes()).await;
            }
        });
        url
    }

    fn json_answer(status: &str, extra: &str, body: &str) -> String {
        format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
    }

    fn leak(s: String) -> &'static str {
        Box::leak(s.into_boxed_str())
    }

    fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
        head.lines().find_map(|l| l.strip_prefix(&format!("{name}: "))).map(str::trim)
    }

    const UNAVAILABLE: &str = r#"{"error":{"code":"unavailable","message":"x","field":null}}"#;

    #[tokio::test]
    async fn creating_requests_retry_429_and_503_with_one_idempotency_key_and_wait_as_told() {
        // GIVEN an API that answers 503 (Retry-After: 1), drops a connection, answers 429 with an
        // HTTP-date 5 s ahead, then 202
        let heads = Arc::new(Mutex::new(Vec::new()));
        let url = scripted(
            vec![
                leak(json_answer("503 Service Unavailable", "retry-after: 1\r\n", UNAVAILABLE)),
                "",
                leak(json_answer(
                    "429 Too Many Requests",
                    "retry-after: Tue, 01 Dec 2026 10:00:05 GMT\r\n",
                    r#"{"error":{"code":"rate_limited","message":"x","field":null}}"#,
                )),
                leak(json_answer(
                    "202 Accepted",
                    "",
                    r#"{"fires":1,"created":1,"existing":0,"lastStartAt":null}"#,
                )),
            ],
            heads.clone(),
        )
        .await;
        let clock = Arc::new(Recorder::default());
        let notices = Arc::new(Mutex::new(Vec::new()));
        let n2 = notices.clone();
        let c = Client::builder(url)
            .clock(clock.clone())
            .on_retry(move |n| n2.lock().unwrap_or_else(|e| e.into_inner()).push(n.attempts))
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        // WHEN a backfill is sent
        let req = BackfillRequest {
            from: chrono::DateTime::UNIX_EPOCH,
            to: chrono::DateTime::UNIX_EPOCH,
            pace_secs: None,
        };
        let report = c.backfill_job("j", &req).await.unwrap_or_else(|e| panic!("{e}"));
        // THEN the fourth attempt succeeds, every attempt carrying the same key
        assert_eq!(report.created, 1);
        let heads = heads.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let keys: Vec<_> =
            heads.iter().map(|h| header(h, "idempotency-key").unwrap_or_default().to_string()).collect();
        assert_eq!(keys.len(), 4, "{heads:?}");
        assert!(!keys[0].is_empty() && keys.iter().all(|k| k == &keys[0]), "{keys:?}");
        // AND it waited what each answer asked for: 1 s, backoff after the drop, the date's 5 s
        let waits = clock.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
        assert_eq!(waits, [Duration::from_secs(1), Duration::from_secs(1), Duration::from_secs(5)]);
        assert_eq!(*notices.lock().unwrap_or_else(|e| e.into_inner()), [1, 2, 3]);
        // AND another call gets another key
        assert_ne!(idempotency_key(), idempotency_key());
    }

    #[tokio::test]
    async fn a_pause_is_not_repeated_after_a_503_and_the_error_is_typed() {
        // GIVEN an API that answers 503 to a pause
        let heads = Arc::new(Mutex::new(Vec::new()));
        let url = scripted(
            vec![leak(json_answer("503 Service Unavailable", "retry-after: 1\r\n", UNAVAILABLE))],
            heads.clone(),
        )
        .await;
        let c = Client::builder(url)
            .clock(Arc::new(Recorder::default()))
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        // WHEN paused
        let err = c.pause_job("j", None).await.err().unwrap_or_else(|| panic!("a 503 is an error"));
        // THEN one attempt, and the error says what the API said
        assert_eq!(heads.lock().unwrap_or_else(|e| e.into_inner()).len(), 1);
        let api = err.api().unwrap_or_else(|| panic!("{err}"));
        assert_eq!(
            (api.status, api.code.as_str(), api.retry_after),
            (503, "unavailable", Some(Duration::from_secs(1)))
        );
        assert!(err.is_retryable());
    }

    #[tokio::test]
    async fn a_pager_follows_next_cursor_to_the_end() {
        // GIVEN a list of three pages
        let heads = Arc::new(Mutex::new(Vec::new()));
        let page = |items: &str, next: &str| {
            leak(json_answer("200 OK", "", &format!(r#"{{"items":{items},"nextCursor":{next}}}"#)))
        };
        let url =
            scripted(vec![page("[]", r#""0a""#), page("[]", r#""0b""#), page("[]", "null")], heads.clone())
                .await;
        let c = Client::builder(url)
            .tenant(Some("acme".into()))
            .auth(Auth::Jwt("tok".into()))
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        // WHEN read to the end
        let all = c
            .all(ListJobs { include_deleted: true, limit: Some(2), cursor: None })
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        // THEN three requests, each with the previous page's cursor and the same parameters
        assert!(all.is_empty());
        let lines: Vec<String> = heads
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|h| h.lines().next().unwrap_or_default().to_string())
            .collect();
        assert_eq!(
            lines,
            [
                "get /v1/jobs?includedeleted=true&limit=2 http/1.1",
                "get /v1/jobs?includedeleted=true&limit=2&cursor=0a http/1.1",
                "get /v1/jobs?includedeleted=true&limit=2&cursor=0b http/1.1",
            ]
        );
        let first = heads.lock().unwrap_or_else(|e| e.into_inner())[0].clone();
        assert_eq!(header(&first, TENANT_HEADER), Some("acme"));
        // AND the JWT mode sends the token as a bearer
        assert_eq!(header(&first, "authorization"), Some("bearer tok"));
    }
}
