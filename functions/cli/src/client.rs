//! The CLI's HTTP client for the Sundial API (hyper 1 + rustls, the stack the SDK already
//! builds): JSON in, JSON out, errors shown as the API's `{code, field, message}`.

use anyhow::{anyhow, Context};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE, IF_MATCH};
use hyper::{Method, Request, StatusCode};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use sundial_core::resources::{Defaults, EnvNames, Resources};

/// Retries of [`ApiClient::post_once`] after the first attempt.
pub(crate) const RETRIES: u32 = 3;

/// A fresh Idempotency-Key: the process, the clock in nanoseconds and a counter.
fn idempotency_key() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("cli-{}-{nanos}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

fn names() -> &'static EnvNames {
    &Resources::get().env
}

fn defaults() -> &'static Defaults {
    &Resources::get().defaults
}

/// Where the API is and who the caller is. The variable names and the default URL come from
/// `resources.json` (`envLoaders.ApiArgs`), like every other setting.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct ApiArgs {
    /// Base URL of the API (the local run prints it).
    #[arg(long, env = names().api_url.as_str(), default_value = defaults().api_url.as_str(), global = true)]
    pub api_url: String,
    /// Bearer token for the deployed API (JWT with a `tenant` claim).
    #[arg(long, env = names().token.as_str(), hide_env_values = true, global = true)]
    pub token: Option<String>,
    /// Tenant for the local run's API (sent as X-Sundial-Tenant; the deployed API ignores it).
    #[arg(long, env = names().tenant.as_str(), global = true)]
    pub tenant: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text", global = true)]
    pub output: Output,
}

/// How results are printed.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Output {
    /// Tables and lines for people.
    Text,
    /// The API's JSON, for scripts.
    Json,
}

/// An API error answer, or a transport failure.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ApiCallError {
    /// The API answered with an error.
    #[error("{status}: {code}{}: {message}", field.as_ref().map(|f| format!(" ({f})")).unwrap_or_default())]
    Api {
        /// HTTP status.
        status: u16,
        /// Error code.
        code: String,
        /// Field, if named.
        field: Option<String>,
        /// Message.
        message: String,
    },
    /// Could not talk to the API.
    #[error("cannot reach the API at {url}: {source}")]
    Transport {
        /// The URL.
        url: String,
        /// Why.
        #[source]
        source: anyhow::Error,
    },
}

type Connector = hyper_rustls::HttpsConnector<HttpConnector>;

/// A client of one API.
#[derive(Clone)]
pub(crate) struct ApiClient {
    base: String,
    token: Option<String>,
    tenant: Option<String>,
    client: Client<Connector, Full<Bytes>>,
}

impl ApiClient {
    /// A client for `args`.
    pub(crate) fn new(args: &ApiArgs) -> anyhow::Result<Self> {
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_connect_timeout(Some(Duration::from_secs(10)));
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_native_roots(Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
            .context("loading the system's root certificates")?
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        Ok(ApiClient {
            base: args.api_url.trim_end_matches('/').to_string(),
            token: args.token.clone(),
            tenant: args.tenant.clone(),
            client: Client::builder(TokioExecutor::new()).build(https),
        })
    }

    /// Sends a request; returns (status, JSON, ETag) or the API's error.
    pub(crate) async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        if_match: Option<u64>,
    ) -> Result<(StatusCode, Value), ApiCallError> {
        self.send(method, path, body, if_match, None, &mut None).await
    }

    /// POSTs a request that creates something (a job, a run, a backfill) under a fresh
    /// `Idempotency-Key`, retrying what may be retried — no answer, 429, 500, 502, 503, 504, or
    /// 409 `idempotency_in_progress` — up to [`RETRIES`] times with the same key: the server
    /// then answers a retry of a request that already took effect with its first answer, so a
    /// timeout never runs the job twice.
    pub(crate) async fn post_once(&self, path: &str, body: Option<&Value>) -> Result<Value, ApiCallError> {
        let key = idempotency_key();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut retry_after = None;
            let (wait, err) =
                match self.send(Method::POST, path, body, None, Some(&key), &mut retry_after).await {
                    Ok((_, v)) => return Ok(v),
                    Err(e) => {
                        let retryable = match &e {
                            ApiCallError::Transport { .. } => true,
                            ApiCallError::Api { status, code, .. } => {
                                matches!(status, 429 | 500 | 502 | 503 | 504)
                                    || code == "idempotency_in_progress"
                            }
                        };
                        if !retryable || attempt > RETRIES {
                            return Err(e);
                        }
                        let backoff = Duration::from_millis(500 << attempt.min(4));
                        (retry_after.map(|s| Duration::from_secs(s.min(30))).unwrap_or(backoff), e)
                    }
                };
            eprintln!("retrying in {} ms with the same Idempotency-Key after: {err}", wait.as_millis());
            tokio::time::sleep(wait).await;
        }
    }

    /// Sends one request; `retry_after` gets the answer's `Retry-After` seconds, if any.
    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        if_match: Option<u64>,
        idempotency_key: Option<&str>,
        retry_after: &mut Option<u64>,
    ) -> Result<(StatusCode, Value), ApiCallError> {
        let url = format!("{}{path}", self.base);
        let transport = |e: anyhow::Error| ApiCallError::Transport { url: url.clone(), source: e };
        let mut req = Request::builder().method(method).uri(&url);
        if let Some(t) = &self.token {
            req = req.header(AUTHORIZATION, format!("Bearer {t}"));
        }
        if let Some(t) = &self.tenant {
            req = req.header("x-sundial-tenant", t);
        }
        if let Some(v) = if_match {
            req = req.header(IF_MATCH, HeaderValue::from(v));
        }
        if let Some(k) = idempotency_key {
            req = req.header("idempotency-key", k);
        }
        let bytes = match body {
            Some(b) => {
                req = req.header(CONTENT_TYPE, "application/json");
                Bytes::from(serde_json::to_vec(b).map_err(|e| transport(e.into()))?)
            }
            None => Bytes::new(),
        };
        let req = req.body(Full::new(bytes)).map_err(|e| transport(e.into()))?;
        let resp = tokio::time::timeout(Duration::from_secs(60), self.client.request(req))
            .await
            .map_err(|_| transport(anyhow!("timed out after 60 s")))?
            .map_err(|e| transport(e.into()))?;
        let status = resp.status();
        *retry_after = resp
            .headers()
            .get(hyper::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse().ok());
        let body = resp.into_body().collect().await.map_err(|e| transport(e.into()))?.to_bytes();
        let json: Value = if body.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&body).map_err(|e| transport(anyhow!("the answer is not JSON: {e}")))?
        };
        if status.is_success() {
            return Ok((status, json));
        }
        let err = &json["error"];
        Err(ApiCallError::Api {
            status: status.as_u16(),
            code: err["code"].as_str().unwrap_or("error").to_string(),
            field: err["field"].as_str().map(str::to_string),
            message: err["message"].as_str().unwrap_or("(no message)").to_string(),
        })
    }

    /// GET.
    pub(crate) async fn get(&self, path: &str) -> Result<Value, ApiCallError> {
        Ok(self.call(Method::GET, path, None, None).await?.1)
    }

    /// POST.
    pub(crate) async fn post(&self, path: &str, body: Option<&Value>) -> Result<Value, ApiCallError> {
        Ok(self.call(Method::POST, path, body, None).await?.1)
    }
}

/// Percent-encodes one path segment or query value.
pub(crate) fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A server that answers 503 (Retry-After: 0), then a dropped connection, then 202, and
    /// records each request's Idempotency-Key.
    async fn flaky(keys: Arc<Mutex<Vec<String>>>) -> String {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", l.local_addr().unwrap());
        tokio::spawn(async move {
            for i in 0.. {
                let Ok((mut s, _)) = l.accept().await else { return };
                let mut buf = vec![0u8; 8192];
                let n = s.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).to_ascii_lowercase();
                let key = head
                    .lines()
                    .find_map(|l| l.strip_prefix("idempotency-key: "))
                    .unwrap_or("")
                    .trim()
                    .to_string();
                keys.lock().unwrap().push(key);
                let resp = match i {
                    0 => "HTTP/1.1 503 Service Unavailable\r\nretry-after: 0\r\ncontent-type: application/json\r\ncontent-length: 58\r\nconnection: close\r\n\r\n{\"error\":{\"code\":\"unavailable\",\"message\":\"x\",\"field\":null}}",
                    1 => "",
                    _ => "HTTP/1.1 202 Accepted\r\ncontent-type: application/json\r\ncontent-length: 19\r\nconnection: close\r\n\r\n{\"executionId\":\"j\"}",
                };
                let _ = s.write_all(resp.as_bytes()).await;
            }
        });
        url
    }

    #[tokio::test]
    async fn creating_requests_retry_with_one_idempotency_key() {
        let keys = Arc::new(Mutex::new(Vec::new()));
        let url = flaky(keys.clone()).await;
        let args = ApiArgs { api_url: url, token: None, tenant: None, output: Output::Json };
        let c = ApiClient::new(&args).unwrap();
        let v = c.post_once("/v1/jobs/j/trigger", None).await.expect("the third attempt succeeds");
        assert_eq!(v["executionId"], "j");
        let keys = keys.lock().unwrap().clone();
        assert_eq!(keys.len(), 3, "{keys:?}");
        assert!(!keys[0].is_empty() && keys.iter().all(|k| k == &keys[0]), "{keys:?}");
        // A second command gets a key of its own.
        assert_ne!(idempotency_key(), idempotency_key());
    }
}
