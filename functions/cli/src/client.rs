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
