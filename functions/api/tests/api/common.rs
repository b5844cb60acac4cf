//! Shared by the API tests: a private emulator environment, an [`Api`] on a manual clock, and
//! requests sent as API Gateway HTTP API (payload v2) events through the real Lambda adapter
//! (`lambda_http` parsing, authorizer context, router), exactly as the deployed function sees
//! them.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use std::sync::Arc;
use sundial_api::{lambda, Api, ApiSettings};
use sundial_core::control::{Control, ControlSettings};
use sundial_core::Ctx;
use sundial_store::queue::PoolQueues;
use sundial_tests::clock::ManualClock;
use sundial_tests::TestEnv;

pub struct Harness {
    pub env: TestEnv,
    pub api: Api,
    pub clock: Arc<ManualClock>,
}

/// An answer: status, JSON body, headers.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub body: Value,
    pub headers: lambda_http::http::HeaderMap,
}

impl Answer {
    pub fn header(&self, k: &str) -> Option<&str> {
        self.headers.get(k).and_then(|v| v.to_str().ok())
    }
    pub fn error_field(&self) -> Option<&str> {
        self.body["error"]["field"].as_str()
    }
}

impl Harness {
    pub async fn new(label: &str, now: DateTime<Utc>) -> Harness {
        Self::with_pools(label, &["default"], now).await
    }

    pub async fn with_pools(label: &str, pools: &[&str], now: DateTime<Utc>) -> Harness {
        Self::with_settings(label, pools, now, ControlSettings::default()).await
    }

    pub async fn with_settings(
        label: &str,
        pools: &[&str],
        now: DateTime<Utc>,
        settings: ControlSettings,
    ) -> Harness {
        Self::with_api_settings(label, pools, now, settings, unthrottled()).await
    }

    /// A harness whose API has `api` settings (tenancy) and reads IAM tags from the emulator.
    pub async fn with_api_settings(
        label: &str,
        pools: &[&str],
        now: DateTime<Utc>,
        settings: ControlSettings,
        api: ApiSettings,
    ) -> Harness {
        Self::with_config(label, pools, now, settings, api, |_| {}).await
    }

    /// [`Harness::with_api_settings`] with the deployment's configuration changed by `edit`.
    pub async fn with_config(
        label: &str,
        pools: &[&str],
        now: DateTime<Utc>,
        settings: ControlSettings,
        api: ApiSettings,
        edit: impl FnOnce(&mut sundial_core::config::Config),
    ) -> Harness {
        let mut env = TestEnv::with(label, pools, 8).await.expect("emulator environment");
        edit(&mut env.cfg);
        let clock = Arc::new(ManualClock::new(now));
        let trigger = Ctx {
            ddb: env.clients.ddb.clone(),
            cfg: env.cfg.clone(),
            queues: PoolQueues::new(env.clients.sqs.clone(), env.cfg.clone()),
        };
        let api = Api::new(Control::new(trigger, settings), clock.clone(), api)
            .with_iam(aws_sdk_iam::Client::new(&sundial_tests::sdk_config()));
        Harness { env, api, clock }
    }

    /// Sends one request as tenant `tenant` (JWT claims `tenant` and `sub`).
    pub async fn call(
        &self,
        tenant: &str,
        method: &str,
        path_and_query: &str,
        body: Option<&str>,
        headers: &[(&str, &str)],
    ) -> Answer {
        let claims = json!({"sub": format!("{tenant}-user"), "tenant": tenant});
        self.send(event(
            method,
            path_and_query,
            body,
            headers,
            Some(json!({"jwt": {"claims": claims, "scopes": null}})),
        ))
        .await
    }

    /// Sends a raw API Gateway v2 event.
    pub async fn send(&self, event: Value) -> Answer {
        let req = lambda_http::request::from_str(&event.to_string()).expect("a valid API Gateway v2 event");
        let resp = lambda::handle(&self.api, req).await.expect("infallible");
        let (parts, body) = resp.into_parts();
        let bytes: &[u8] = match &body {
            lambda_http::Body::Text(t) => t.as_bytes(),
            lambda_http::Body::Binary(b) => b,
            _ => &[],
        };
        assert_eq!(
            parts.headers.get("content-type").and_then(|v| v.to_str().ok()),
            Some("application/json"),
            "every answer is JSON"
        );
        Answer {
            status: parts.status.as_u16(),
            body: serde_json::from_slice(bytes).expect("a JSON body"),
            headers: parts.headers,
        }
    }

    pub async fn get(&self, tenant: &str, path: &str) -> Answer {
        self.call(tenant, "GET", path, None, &[]).await
    }

    pub async fn post(&self, tenant: &str, path: &str, body: &Value) -> Answer {
        self.call(tenant, "POST", path, Some(&body.to_string()), &[("content-type", "application/json")])
            .await
    }

    /// Creates a job (asserting 201) and returns the answer's body.
    pub async fn create(&self, tenant: &str, job_id: &str, expr: &str) -> Value {
        let a = self.post(tenant, "/v1/jobs", &job_body(job_id, expr)).await;
        assert_eq!(a.status, 201, "{}", a.body);
        a.body
    }
}

/// The default API settings without the per-tenant request throttle: a manual clock never
/// moves on its own, so every request of a test would fall in one second (the throttle has its
/// own tests, throttle.rs).
pub fn unthrottled() -> ApiSettings {
    ApiSettings { tenant_api_rps: 0, ..ApiSettings::default() }
}

/// A create body with an HTTPS target.
pub fn job_body(job_id: &str, expr: &str) -> Value {
    json!({
        "jobId": job_id,
        "schedule": {"expression": expr, "timezone": "UTC"},
        "target": {"type": "http", "url": "https://hooks.example.com/run"},
        "params": {"v": 1},
    })
}

/// An API Gateway HTTP API payload v2 event.
pub fn event(
    method: &str,
    path_and_query: &str,
    body: Option<&str>,
    headers: &[(&str, &str)],
    authorizer: Option<Value>,
) -> Value {
    let (path, query) = path_and_query.split_once('?').unwrap_or((path_and_query, ""));
    let hdrs: serde_json::Map<String, Value> =
        headers.iter().map(|(k, v)| (k.to_string(), Value::String(v.to_string()))).collect();
    let mut ctx = json!({
        "accountId": "123456789012", "apiId": "sundial", "domainName": "sundial.execute-api.us-east-1.amazonaws.com",
        "domainPrefix": "sundial", "requestId": "req-1", "routeKey": "$default", "stage": "$default",
        "time": "01/Dec/2026:10:00:00 +0000", "timeEpoch": 1_796_119_200_000i64,
        "http": {"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1", "userAgent": "test"},
    });
    if let Some(a) = authorizer {
        ctx["authorizer"] = a;
    }
    json!({
        "version": "2.0", "routeKey": "$default", "rawPath": path, "rawQueryString": query,
        "headers": hdrs, "requestContext": ctx, "body": body, "isBase64Encoded": false,
    })
}

/// A parsed RFC 3339 instant.
pub fn at(s: &str) -> DateTime<Utc> {
    sundial_tests::trigger::at(s)
}
