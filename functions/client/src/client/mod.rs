//! The client: one HTTP connection pool, the auth mode, the retry loop, and one method per
//! operation of functions/api/openapi.json.
//!
//! [`ClientBuilder`] sets a [`Client`] up (`builder.rs`); every operation builds one logical
//! request that the retry loop sends, attempt by attempt (`request.rs`). The operations are
//! grouped by resource: jobs, business calendars, resource limits, executions and dead letters,
//! and any list read page by page (`lists.rs`).

mod builder;
mod calendars;
mod executions;
mod jobs;
mod lists;
mod notice;
mod request;
mod resource_limits;
#[cfg(test)]
mod tests;

pub use builder::ClientBuilder;
pub use notice::RetryNotice;
pub(crate) use request::enc;
pub use request::idempotency_key;

use crate::auth::Auth;
use crate::retry::{Clock, RetryPolicy};
use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::connect::HttpConnector;
use notice::OnRetry;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

type Connector = hyper_rustls::HttpsConnector<HttpConnector>;
type Http = hyper_util::client::legacy::Client<Connector, Full<Bytes>>;

/// The header the local run's server reads the tenant from (`sundial_api::local`).
pub const TENANT_HEADER: &str = "x-sundial-tenant";

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

impl Client {
    /// The API's base URL.
    pub fn base_url(&self) -> &str {
        &self.inner.base
    }
}
