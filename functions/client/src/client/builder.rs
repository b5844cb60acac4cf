//! [`ClientBuilder`]: the base URL, auth mode, tenant, retry policy, clock and timeout of a
//! [`Client`], and the hook told about each retry.

use super::notice::{OnRetry, RetryNotice};
use super::{Client, Inner};
use crate::auth::Auth;
use crate::error::Error;
use crate::retry::{Clock, RetryPolicy, SystemClock};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use std::sync::Arc;
use std::time::Duration;

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
}
