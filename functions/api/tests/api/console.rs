//! Issue 19: the web console's files through the Lambda adapter, as API Gateway routes them
//! (public routes: no authorizer context), and nothing else without auth.

use crate::common::{at, event, Harness};
use sundial_api::lambda;

async fn raw(
    h: &Harness,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, lambda_http::http::HeaderMap, String) {
    let req =
        lambda_http::request::from_str(&event("GET", path, None, headers, None).to_string()).expect("event");
    let resp = lambda::handle(&h.api, req).await.expect("infallible");
    let (parts, body) = resp.into_parts();
    let text = match body {
        lambda_http::Body::Text(t) => t,
        _ => String::new(),
    };
    (parts.status.as_u16(), parts.headers, text)
}

#[tokio::test]
async fn the_console_is_served_without_auth_with_its_csp_and_the_api_is_not() {
    let h = Harness::new("console-files", at("2026-12-01T10:00:00Z")).await;
    // GIVEN no authorizer context WHEN the console's page and a module are read
    let (st, hd, html) = raw(&h, "/console", &[]).await;
    // THEN they are served with their types, an ETag and the strict CSP
    assert_eq!(st, 200);
    assert_eq!(hd["content-type"], "text/html; charset=utf-8");
    assert!(hd["content-security-policy"].to_str().is_ok_and(|c| c.starts_with("default-src 'self'")));
    assert!(html.contains("/console/app.js"));
    let (st, hd, _) = raw(&h, "/console/app.js", &[]).await;
    assert_eq!((st, hd["content-type"].to_str().ok()), (200, Some("text/javascript; charset=utf-8")));
    let etag = hd["etag"].to_str().expect("etag").to_string();
    assert_eq!(raw(&h, "/console/app.js", &[("if-none-match", &etag)]).await.0, 304);
    // AND the deployed default (no issuer, no client id) says the console cannot sign in
    let (_, _, cfg) = raw(&h, "/console/config.json", &[]).await;
    assert!(cfg.contains(r#""auth":"iam""#) || cfg.contains(r#""auth":"header""#), "{cfg}");
    // AND the data routes still need the authorizer
    assert_eq!(raw(&h, "/v1/jobs", &[]).await.0, 401);
    assert_eq!(raw(&h, "/console/../v1/jobs", &[]).await.0, 404);
}

/// Issue 28, L1: the public `/console/config.json` holds only what signing in needs (issuer,
/// client id); the workers' log group names and the region are not public.
#[tokio::test]
async fn the_public_console_config_names_no_log_groups_or_region() {
    use sundial_api::console::{ConsoleAuth, ConsoleSettings};
    let h = Harness::new("console-config", at("2026-12-01T10:00:00Z")).await;
    let api = h.api.clone().with_console(ConsoleSettings {
        auth: ConsoleAuth::Oidc,
        issuer: Some("https://issuer.example.com/pool".into()),
        client_id: Some("console-client".into()),
        region: Some("eu-west-1".into()),
        log_groups: vec!["/aws/lambda/Sundial-WorkerDefault-AbC123".into()],
    });
    let h = Harness { api, ..h };
    let (st, _, cfg) = raw(&h, "/console/config.json", &[]).await;
    assert_eq!(st, 200);
    let v: serde_json::Value = serde_json::from_str(&cfg).expect("JSON");
    assert_eq!(
        (&v["issuer"], &v["clientId"]),
        (&serde_json::json!("https://issuer.example.com/pool"), &serde_json::json!("console-client"))
    );
    assert!(!cfg.contains("Sundial-WorkerDefault") && !cfg.contains("eu-west-1"), "{cfg}");
    assert!(v.get("logGroups").is_none() && v.get("region").is_none(), "{cfg}");
}
