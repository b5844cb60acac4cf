//! One logical request ([`Call`]), the retry loop that sends it until it succeeds or fails for
//! good, and one attempt: headers, auth (a bearer token or a SigV4 signature over the exact
//! bytes sent), the exchange under the per-attempt timeout, and the API's error.

use super::{Client, RetryNotice, TENANT_HEADER};
use crate::auth::{self, Auth};
use crate::error::{api_error, Error};
use crate::retry::{next_wait, parse_retry_after, Safety};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE, IF_MATCH, RETRY_AFTER, USER_AGENT};
use hyper::{Method, Request};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::time::Duration;

/// One logical request; each attempt is built (and signed) from it again.
pub(super) struct Call {
    method: Method,
    path: String,
    body: Option<Bytes>,
    if_match: Option<u64>,
    idempotency_key: Option<String>,
}

impl Call {
    pub(super) fn new(method: Method, path: String) -> Call {
        Call { method, path, body: None, if_match: None, idempotency_key: None }
    }

    pub(super) fn json(mut self, body: &impl Serialize) -> Result<Call, Error> {
        let bytes = serde_json::to_vec(body).map_err(|e| Error::Invalid(format!("the request body: {e}")))?;
        self.body = Some(Bytes::from(bytes));
        Ok(self)
    }

    pub(super) fn if_match(mut self, version: Option<u64>) -> Call {
        self.if_match = version;
        self
    }

    /// A creating POST: one fresh `Idempotency-Key` for every attempt of this call.
    pub(super) fn once(mut self) -> Call {
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
    /// Sends `call` until it succeeds, fails for good, or the retry budget is spent.
    pub(super) async fn execute<T: DeserializeOwned>(&self, call: Call) -> Result<T, Error> {
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
}
