//! HTTPS webhook target: `POST` the [`Invocation`] with `Idempotency-Key: <executionId>` and the
//! fencing token in `X-Sundial-Fencing-Token`, signed per Standard Webhooks (`webhook-id`,
//! `webhook-timestamp`, and `webhook-signature` when the job names a signing secret; see
//! [`super::signing`]). A receiver must verify the signature before it trusts the fencing token:
//! a header anyone can send fences nothing.
//!
//! Classification: 2xx succeeds; 408, 429, 5xx, connection errors and timeouts retry; any other
//! status (other 4xx, and 3xx since redirects are not followed) is permanent. The status alone
//! decides: at most [`MAX_RESPONSE_BYTES`] of a body are ever read.
//!
//! What is stored (and shown to the tenant as `lastError`) is the code and a generic sentence:
//! the status, the kind of connection failure. The addresses a host resolved to, the
//! connector's own messages and the response body can describe the deployment's network (a
//! webhook inside an allowed private network answers with its internals), so they go to the
//! worker's log with the execution id, never to the execution.
//!
//! Address policy ([`sundial_model::outbound::AddressPolicy`]): a scheduler that POSTs to user-supplied
//! URLs from inside a VPC is a server-side request forgery engine unless it refuses internal
//! addresses. Public addresses are allowed, private ones only inside the deployment's listed
//! networks, and loopback, link-local (the metadata service) and the EC2 service addresses
//! never (loopback only with the dev-only setting). The check runs in the connector's
//! resolver, on the very addresses it connects to, so DNS rebinding between a check and the
//! connect cannot slip past it; IP-literal URLs are checked before the request. Plain `http://`
//! is accepted only with the dev-only loopback setting.

use super::secrets::{SecretCache, SECRET_UNAVAILABLE};
use super::signing::{self, SigningKey};
use super::Invocation;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Uri;
use hyper_util::client::legacy::connect::dns::Name;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::collections::BTreeMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use sundial_model::outbound::AddressPolicy;
use sundial_model::retry::{codes, RunError};
use sundial_model::SecretRef;

/// Header carrying the fencing token.
pub const FENCING_TOKEN_HEADER: &str = "x-sundial-fencing-token";
/// Header carrying the attempt number.
pub const ATTEMPT_HEADER: &str = "x-sundial-attempt";
/// Header carrying the idempotency key (the execution id).
pub const IDEMPOTENCY_KEY_HEADER: &str = "idempotency-key";

/// Most bytes of a response body the worker reads. The outcome is decided by the status; the
/// body only adds a snippet to an error. Reading a body whole would let a receiver (or anything
/// it forwards) stream an endless error page into the worker's memory and take down every
/// execution the process runs. Past the cap the body is dropped, which closes the connection.
pub const MAX_RESPONSE_BYTES: usize = 64 * 1024;

/// Reads at most `cap` bytes of `body`; a body that errors part-way gives what arrived.
async fn read_capped<B>(mut body: B, cap: usize) -> Vec<u8>
where
    B: hyper::body::Body<Data = Bytes> + Unpin,
{
    let mut buf = Vec::new();
    while buf.len() < cap {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    let take = data.len().min(cap - buf.len());
                    buf.extend_from_slice(&data[..take]);
                }
            }
            Some(Err(_)) | None => break,
        }
    }
    buf
}

pub use sundial_model::outbound::is_public;

/// An address the deployment does not allow webhooks to reach.
#[derive(Debug, Clone, thiserror::Error)]
#[error("webhook address {addr} of host {host:?} is not public (loopback, link-local, private or reserved) and not in the deployment's private target networks (SUNDIAL_PRIVATE_TARGET_CIDRS)")]
pub struct AddressRefused {
    /// The host as written in the URL.
    pub host: String,
    /// The refused address.
    pub addr: IpAddr,
}

/// A resolver that refuses the addresses the policy does not allow, used by the connector so
/// the check applies to the addresses actually connected to.
#[derive(Debug, Clone)]
struct GuardedResolver {
    policy: Arc<AddressPolicy>,
}

impl tower_service::Service<Name> for GuardedResolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let policy = self.policy.clone();
        Box::pin(async move {
            let host = name.as_str().to_string();
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            // One refused address refuses the host: the connector may try any of them.
            if let Some(bad) = addrs.iter().find(|a| !policy.allows(a.ip())) {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    AddressRefused { host, addr: bad.ip() },
                ));
            }
            Ok(addrs.into_iter())
        })
    }
}

type Connector = hyper_rustls::HttpsConnector<HttpConnector<GuardedResolver>>;

/// What a job's webhook target asks for.
#[derive(Debug, Clone, Copy)]
pub struct Webhook<'a> {
    /// The URL.
    pub url: &'a str,
    /// ARN of the secret holding the signing key(s), if the job signs.
    pub signing_secret_arn: Option<&'a str>,
    /// Extra headers, each value a secret by reference (names checked by the target policy).
    pub headers: &'a BTreeMap<String, SecretRef>,
}

/// The webhook client.
#[derive(Debug, Clone)]
pub struct HttpCaller {
    client: Client<Connector, Full<Bytes>>,
    policy: Arc<AddressPolicy>,
    secrets: Option<SecretCache>,
}

impl HttpCaller {
    /// A client using the system's root certificates that connects only where `policy` allows.
    pub fn new(policy: AddressPolicy) -> std::io::Result<Self> {
        let policy = Arc::new(policy);
        let mut http = HttpConnector::new_with_resolver(GuardedResolver { policy: policy.clone() });
        http.enforce_http(false);
        http.set_connect_timeout(Some(Duration::from_secs(10)));
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_native_roots(Arc::new(rustls::crypto::aws_lc_rs::default_provider()))?
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        let client =
            Client::builder(TokioExecutor::new()).pool_idle_timeout(Duration::from_secs(30)).build(https);
        Ok(HttpCaller { client, policy, secrets: None })
    }

    /// Reads signing secrets (and header values) through `secrets`. Without it a job that names
    /// a secret fails (permanently, as a configuration error).
    pub fn with_secrets(mut self, secrets: SecretCache) -> Self {
        self.secrets = Some(secrets);
        self
    }

    /// A secret's value, with a generic error for the tenant and the detail in the log.
    async fn secret(&self, arn: &str, what: &str, id: &str) -> Result<std::sync::Arc<str>, RunError> {
        let Some(cache) = &self.secrets else {
            return Err(RunError::permanent(
                SECRET_UNAVAILABLE,
                format!("this worker cannot read the {what}"),
            ));
        };
        cache.get(arn, what).await.map_err(|e| {
            tracing::warn!(execution = %id, secret = arn, detail = %e.detail, code = %e.error.code, "webhook secret unavailable");
            e.error
        })
    }

    /// Checks a URL against the scheme and (for IP literals) address policy before any I/O.
    pub fn check_url(&self, url: &str) -> Result<Uri, RunError> {
        sundial_model::target::http::check_url(&self.policy, url)?;
        url.parse().map_err(|_| RunError::permanent(codes::BAD_TARGET, "target.url: is not a valid URL"))
    }

    /// POSTs the invocation at `now_secs` (unix seconds: the signature's timestamp) and
    /// classifies the outcome.
    pub async fn post(&self, hook: &Webhook<'_>, inv: &Invocation, now_secs: i64) -> Result<(), RunError> {
        let uri = self.check_url(hook.url)?;
        let body = inv.to_json();
        let mut req = hyper::Request::post(uri)
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .header(hyper::header::USER_AGENT, "sundial-worker")
            .header(IDEMPOTENCY_KEY_HEADER, &inv.execution_id)
            .header(FENCING_TOKEN_HEADER, inv.fencing_token.to_string())
            .header(ATTEMPT_HEADER, inv.attempt.to_string())
            // The same id on every retry of one execution: receivers deduplicate by it.
            .header(signing::ID_HEADER, &inv.execution_id)
            .header(signing::TIMESTAMP_HEADER, now_secs.to_string());
        for (name, value) in hook.headers {
            // The policy refused reserved names already; this is the last line before the wire.
            if sundial_model::target::http::check_header_name(name).is_err() {
                return Err(RunError::permanent(
                    codes::BAD_TARGET,
                    format!("target.headers.{name}: not allowed"),
                ));
            }
            let secret = self.secret(&value.secret_arn, "header secret", &inv.execution_id).await?;
            let v = hyper::header::HeaderValue::from_str(secret.trim_end_matches(['\r', '\n'])).map_err(
                |_| {
                    RunError::permanent(
                        SECRET_UNAVAILABLE,
                        format!("the secret of header {name} is not a valid header value"),
                    )
                },
            )?;
            let mut v = v;
            // Kept out of hyper's and the SDK's debug output.
            v.set_sensitive(true);
            req = req.header(name.as_str(), v);
        }
        self.sign_and_send(req, hook.signing_secret_arn, &inv.execution_id, body, now_secs).await
    }

    /// POSTs an outcome event's notification (docs/outcomes.md, "HTTPS notifications"):
    /// `body` signed as a webhook call is, `webhook-id` and `Idempotency-Key` being the event's
    /// id (the same on every delivery of one event). Classified as [`HttpCaller::post`] is.
    pub async fn post_event(
        &self,
        url: &str,
        signing_secret_arn: Option<&str>,
        event_id: &str,
        body: String,
        now_secs: i64,
    ) -> Result<(), RunError> {
        let uri = self.check_url(url)?;
        let req = hyper::Request::post(uri)
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .header(hyper::header::USER_AGENT, "sundial-notify")
            .header(IDEMPOTENCY_KEY_HEADER, event_id)
            .header(signing::ID_HEADER, event_id)
            .header(signing::TIMESTAMP_HEADER, now_secs.to_string());
        self.sign_and_send(req, signing_secret_arn, event_id, body, now_secs).await
    }

    /// Signs `req` (when a secret is named) with `id`, sends it with `body` and classifies the
    /// answer; `id` also names the call in the log.
    async fn sign_and_send(
        &self,
        mut req: hyper::http::request::Builder,
        signing_secret_arn: Option<&str>,
        id: &str,
        body: String,
        now_secs: i64,
    ) -> Result<(), RunError> {
        if let Some(arn) = signing_secret_arn {
            let value = self.secret(arn, "signing secret", id).await?;
            let keys = SigningKey::parse_all(&value).map_err(|e| {
                tracing::warn!(execution = %id, secret = arn, "signing secret is malformed");
                RunError::permanent(SECRET_UNAVAILABLE, e.to_string())
            })?;
            req = req.header(signing::SIGNATURE_HEADER, signing::sign(&keys, id, now_secs, body.as_bytes()));
        }
        let req = req
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| RunError::permanent(codes::BAD_TARGET, format!("webhook request: {e}")))?;
        let resp = match self.client.request(req).await {
            Ok(r) => r,
            Err(e) => {
                if let Some(r) = find_refused(&e) {
                    tracing::warn!(execution = %id, host = %r.host, addr = %r.addr, "webhook address refused");
                    return Err(refused());
                }
                // Refused, reset, timed out or TLS: one code and one sentence for the tenant,
                // or `lastError` would scan ports and services for it. The kind is logged.
                tracing::warn!(execution = %id, kind = connect_failure(&e), detail = %format!("{e}: {}", chain(&e)), "webhook unreachable");
                return Err(unreachable());
            }
        };
        let status = resp.status().as_u16();
        if (200..300).contains(&status) {
            return Ok(());
        }
        // The body is read (so the connection can be reused) but not logged: a receiver that
        // echoes the request's `Authorization` in its error page would put the tenant's secret
        // in Sundial's logs.
        let body = read_capped(resp.into_body(), MAX_RESPONSE_BYTES).await;
        tracing::warn!(execution = %id, status, body_bytes = body.len(), "webhook answered an error");
        let code = format!("Http{status}");
        let message = format!("the webhook answered {status}");
        Err(if matches!(status, 408 | 429) || status >= 500 {
            RunError::retryable(code, message)
        } else {
            RunError::permanent(code, message)
        })
    }
}

/// What the tenant sees of any connection failure.
pub fn unreachable() -> RunError {
    RunError::retryable("HttpConnect", "the webhook could not be reached")
}

fn refused() -> RunError {
    RunError::permanent(
        codes::ADDRESS_REFUSED,
        "the webhook host resolves to an address this deployment does not allow (loopback, link-local, private or reserved)",
    )
}

/// The kind of a connection failure, in words that name no address: the first I/O error kind
/// in the chain.
fn connect_failure(e: &(dyn std::error::Error + 'static)) -> &'static str {
    use std::io::ErrorKind::*;
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            return match io.kind() {
                ConnectionRefused => "connection refused",
                ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof => "connection closed",
                TimedOut => "timed out",
                HostUnreachable | NetworkUnreachable => "unreachable",
                InvalidData => "TLS or protocol error",
                _ => "connection failed",
            };
        }
        cur = err.source();
    }
    "connection failed"
}

/// Finds an [`AddressRefused`] anywhere in an error's source chain (it travels inside an
/// `io::Error` from the resolver through the connector and the client).
fn find_refused(e: &(dyn std::error::Error + 'static)) -> Option<AddressRefused> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(r) = err.downcast_ref::<AddressRefused>() {
            return Some(r.clone());
        }
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            if let Some(r) = io.get_ref().and_then(|i| i.downcast_ref::<AddressRefused>()) {
                return Some(r.clone());
            }
        }
        cur = err.source();
    }
    None
}

fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = Vec::new();
    let mut cur = e.source();
    while let Some(err) = cur {
        parts.push(err.to_string());
        cur = err.source();
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn ip_literal_urls_are_refused_before_any_io_unless_allowed() {
        let strict = HttpCaller::new(AddressPolicy::default()).unwrap_or_else(|e| panic!("client: {e}"));
        for url in ["https://127.0.0.1/x", "https://169.254.169.254/latest/meta-data", "https://[::1]:8443/"]
        {
            let e = strict.check_url(url).err().unwrap_or_else(|| panic!("{url} accepted"));
            assert_eq!(e.code, codes::ADDRESS_REFUSED, "{url}");
            assert!(!e.is_retryable());
        }
        assert_eq!(
            strict.check_url("http://example.com/").err().map(|e| e.code),
            Some(codes::BAD_TARGET.into())
        );
        assert!(strict.check_url("https://example.com/hook").is_ok());
        let lax = HttpCaller::new(AddressPolicy::dev_loopback()).unwrap_or_else(|e| panic!("client: {e}"));
        assert!(lax.check_url("http://127.0.0.1:8080/x").is_ok());
    }

    #[tokio::test]
    async fn a_hostname_resolving_to_loopback_is_refused_at_connect() {
        // GIVEN `localhost`, which resolves to a loopback address
        let strict = HttpCaller::new(AddressPolicy::default()).unwrap_or_else(|e| panic!("client: {e}"));
        let inv: Invocation = serde_json::from_value(serde_json::json!({
            "executionId": "j@1", "fencingToken": 1, "scheduledAt": "2026-01-01T00:00:00Z", "attempt": 1,
            "tenant": "t", "jobId": "j", "params": null
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        // WHEN posting to it THEN the resolver refuses it as a permanent error
        let hook =
            Webhook { url: "https://localhost:1/hook", signing_secret_arn: None, headers: &BTreeMap::new() };
        let e = strict.post(&hook, &inv, 0).await.err();
        assert_eq!(e.map(|e| e.code), Some(codes::ADDRESS_REFUSED.to_string()));
    }

    fn invocation() -> Invocation {
        serde_json::from_value(serde_json::json!({
            "executionId": "t:j@1", "fencingToken": 1, "scheduledAt": "2026-01-01T00:00:00Z", "attempt": 1,
            "tenant": "t", "jobId": "j", "params": null
        }))
        .unwrap_or_else(|e| panic!("{e}"))
    }

    /// A loopback server that answers every request with a chunked `500` whose body would never
    /// end: it writes 16 KiB chunks until the client hangs up, or until `cap` bytes (a bound so a
    /// client that reads everything does not fill the machine's memory). Reports the bytes it
    /// wrote and whether the client cut it off.
    async fn endless_500(cap: usize) -> (String, tokio::sync::oneshot::Receiver<(usize, bool)>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener =
            tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("bind: {e}"));
        let url = format!("http://{}/hook", listener.local_addr().unwrap_or_else(|e| panic!("{e}")));
        let (tx, rx) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let Ok((mut sock, _)) = listener.accept().await else { return };
            let mut req = vec![0u8; 64 * 1024];
            let _ = sock.read(&mut req).await;
            let head = b"HTTP/1.1 500 Internal Server Error\r\ntransfer-encoding: chunked\r\n\r\n";
            let chunk = [b"4000\r\n".as_slice(), &[b'x'; 0x4000], b"\r\n"].concat();
            let mut sent = 0usize;
            let mut cut_off = sock.write_all(head).await.is_err();
            while !cut_off && sent < cap {
                cut_off = sock.write_all(&chunk).await.is_err();
                sent += 0x4000;
            }
            let _ = tx.send((sent, cut_off));
        });
        (url, rx)
    }

    #[tokio::test]
    async fn a_refused_connection_reads_like_any_other_connection_failure() {
        // M3 (security review 2026-12): "connection refused", "timed out" and "TLS error" told
        // apart in `lastError` let a tenant scan ports and services through the worker.
        let listener =
            tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("bind: {e}"));
        let url = format!("http://{}/hook", listener.local_addr().unwrap_or_else(|e| panic!("{e}")));
        drop(listener);
        let client = HttpCaller::new(AddressPolicy::dev_loopback()).unwrap_or_else(|e| panic!("client: {e}"));
        let hook = Webhook { url: &url, signing_secret_arn: None, headers: &BTreeMap::new() };
        let e = client.post(&hook, &invocation(), 0).await.err().unwrap_or_else(|| panic!("no error"));
        assert_eq!(
            (e.code.as_str(), e.message.as_str()),
            ("HttpConnect", "the webhook could not be reached")
        );
        assert!(e.is_retryable());
    }

    #[tokio::test]
    async fn an_endless_error_body_is_cut_off_and_classified_by_its_status() {
        // GIVEN a webhook that answers 500 with a body that never ends
        let cap = 64 * 1024 * 1024;
        let (url, report) = endless_500(cap).await;
        let client = HttpCaller::new(AddressPolicy::dev_loopback()).unwrap_or_else(|e| panic!("client: {e}"));
        // WHEN the worker posts to it
        let e = client
            .post(
                &Webhook { url: &url, signing_secret_arn: None, headers: &BTreeMap::new() },
                &invocation(),
                0,
            )
            .await
            .err()
            .unwrap_or_else(|| panic!("500 succeeded"));
        // THEN the attempt fails as a retryable 500 ...
        assert_eq!((e.code.as_str(), e.is_retryable()), ("Http500", true), "{e}");
        // ... and the client stopped reading: the server was cut off long before its bound (the
        // bytes it got out are the cap plus what the sockets' buffers held).
        let (sent, cut_off) = report.await.unwrap_or_else(|e| panic!("server: {e}"));
        assert!(cut_off, "the client read all {sent} bytes of the error body");
    }

    #[tokio::test]
    async fn refused_and_unreachable_webhooks_are_stored_without_addresses_or_ports() {
        // Issue 15 (outbound 8): lastError is shown to tenants; the addresses a host name
        // resolves to inside the deployment's network are not theirs to learn.
        let strict = HttpCaller::new(AddressPolicy::default()).unwrap_or_else(|e| panic!("client: {e}"));
        let hook = Webhook {
            url: "https://localhost:8443/hook",
            signing_secret_arn: None,
            headers: &BTreeMap::new(),
        };
        let e = strict.post(&hook, &invocation(), 0).await.err().unwrap_or_else(|| panic!("posted"));
        assert_eq!(e.code, codes::ADDRESS_REFUSED);
        assert!(!e.message.contains("127.0.0.1") && !e.message.contains("::1"), "{}", e.message);
        // AND a refused connection names no address or port either
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
        let port = listener.local_addr().map(|a| a.port()).unwrap_or_else(|e| panic!("{e}"));
        drop(listener);
        let dev = HttpCaller::new(AddressPolicy::dev_loopback()).unwrap_or_else(|e| panic!("client: {e}"));
        let url = format!("http://127.0.0.1:{port}/hook");
        let e = dev
            .post(
                &Webhook { url: &url, signing_secret_arn: None, headers: &BTreeMap::new() },
                &invocation(),
                0,
            )
            .await
            .err()
            .unwrap_or_else(|| panic!("posted"));
        assert!(e.is_retryable(), "{e}");
        assert!(!e.message.contains("127.0.0.1") && !e.message.contains(&port.to_string()), "{}", e.message);
    }

    #[tokio::test]
    async fn an_error_body_is_not_stored() {
        // A webhook inside an allowed private network answers with its own internals: the
        // status is the tenant's to see, the body is logged only.
        let (url, _report) = endless_500(1024 * 1024).await;
        let client = HttpCaller::new(AddressPolicy::dev_loopback()).unwrap_or_else(|e| panic!("client: {e}"));
        let e = client
            .post(
                &Webhook { url: &url, signing_secret_arn: None, headers: &BTreeMap::new() },
                &invocation(),
                0,
            )
            .await
            .err();
        let e = e.unwrap_or_else(|| panic!("500 succeeded"));
        assert!(!e.message.contains("xxxx"), "{}", e.message);
    }
}
