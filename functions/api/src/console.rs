//! The web console: static files embedded in the binary and served under
//! `/console` by the same router as the API, so the local run and the deployed API both have
//! it, offline, with no CDN.
//!
//! Why it is safe to serve these without auth: they are the same bytes for everyone and hold
//! no tenant data. Every piece of data the console shows comes from the public `/v1` API,
//! called by the page with the caller's own credentials (the tenant header in the local run, a
//! bearer token from the configured issuer when deployed), so the console adds no way around
//! the API's checks. The pages run under a strict Content-Security-Policy (no inline script or
//! style, nothing from another origin except the token endpoint of the issuer), and the API's
//! existing CSRF defences apply unchanged: bodies must be `application/json` and the local
//! server refuses foreign `Origin`s.
//!
//! Caching: each file's ETag is a hash of its bytes; browsers revalidate (`no-cache`) and get
//! `304 Not Modified` while the binary is unchanged.

use crate::error::ApiError;
use axum::body::Body;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, ETAG, IF_NONE_MATCH};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use sundial_api_types::ErrorCode;

/// `/console/config.json`: how the page signs in.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct ConsoleConfig<'a> {
    /// `header`, `oidc` or `iam`.
    auth: &'static str,
    /// The OIDC issuer.
    issuer: Option<&'a str>,
    /// The console's OIDC client id.
    client_id: Option<&'a str>,
}

/// One embedded file: its name under `/console/`, media type and bytes.
struct Asset {
    name: &'static str,
    media: &'static str,
    bytes: &'static [u8],
}

macro_rules! asset {
    ($name:literal, $media:literal) => {
        Asset { name: $name, media: $media, bytes: include_bytes!(concat!("../console/", $name)) }
    };
}

/// Every file of the console. `index.html` is also served at `/console` itself.
const ASSETS: &[Asset] = &[
    asset!("index.html", "text/html; charset=utf-8"),
    asset!("console.css", "text/css; charset=utf-8"),
    asset!("app.js", "text/javascript; charset=utf-8"),
    asset!("api.js", "text/javascript; charset=utf-8"),
    asset!("auth.js", "text/javascript; charset=utf-8"),
    asset!("views.js", "text/javascript; charset=utf-8"),
    asset!("jobform.js", "text/javascript; charset=utf-8"),
    asset!("schedule.js", "text/javascript; charset=utf-8"),
    asset!("ui.js", "text/javascript; charset=utf-8"),
    asset!("chart.js", "text/javascript; charset=utf-8"),
    asset!("strip.js", "text/javascript; charset=utf-8"),
    asset!("overview.js", "text/javascript; charset=utf-8"),
    asset!("favicon.svg", "image/svg+xml"),
];

/// How the console signs its callers in, and where it sends people for logs. Set by the entry
/// point: the local run uses the tenant header; the Lambda reads it from its environment.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConsoleSettings {
    /// `header` (local run: `X-Sundial-Tenant`), `oidc` (JWT: authorization code + PKCE against
    /// `issuer`) or `iam` (SigV4: the console cannot sign; it says so).
    pub auth: ConsoleAuth,
    /// The OIDC issuer (`oidc`).
    pub issuer: Option<String>,
    /// The OIDC client id of the console (`oidc`).
    pub client_id: Option<String>,
    /// The AWS region, for CloudWatch Logs Insights links (deployed only).
    pub region: Option<String>,
    /// The workers' log groups, for Logs Insights links (deployed only).
    pub log_groups: Vec<String>,
}

/// How the console authenticates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ConsoleAuth {
    /// The local run: a tenant header, no sign-in.
    #[default]
    Header,
    /// OIDC authorization code + PKCE, the token kept in memory only.
    Oidc,
    /// IAM (SigV4): not possible from a browser page; the console explains.
    Iam,
}

impl ConsoleAuth {
    fn as_str(self) -> &'static str {
        match self {
            ConsoleAuth::Header => "header",
            ConsoleAuth::Oidc => "oidc",
            ConsoleAuth::Iam => "iam",
        }
    }
}

/// FNV-1a of the bytes: a strong enough validator for files that change only with the binary.
fn etag_of(bytes: &[u8]) -> String {
    format!("\"{:016x}\"", sundial_hash::fnv1a(bytes))
}

/// The origin (`https://host[:port]`) of a URL, for the CSP's `connect-src`.
fn origin_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let host = rest.split(['/', '?', '#']).next()?;
    let ok = matches!(scheme, "https" | "http")
        && !host.is_empty()
        && host.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'));
    ok.then(|| format!("{scheme}://{host}"))
}

impl ConsoleSettings {
    /// The deployed console: OIDC sign-in when the API has a JWT issuer and the console a client
    /// id, otherwise IAM (which a page cannot sign; the console says so).
    pub fn deployed(api: &sundial_core::config::ApiSettings, region: Option<String>) -> Self {
        let c = &api.console;
        let oidc =
            api.tenancy == sundial_core::config::Tenancy::Jwt && c.issuer.is_some() && c.client_id.is_some();
        ConsoleSettings {
            auth: if oidc { ConsoleAuth::Oidc } else { ConsoleAuth::Iam },
            issuer: c.issuer.clone(),
            client_id: c.client_id.clone(),
            region,
            log_groups: c.log_groups.clone(),
        }
    }

    /// The Content-Security-Policy of every console response: only this origin, plus the
    /// issuer (discovery and token endpoint) when signing in with OIDC.
    pub fn csp(&self) -> String {
        let issuer = self.issuer.as_deref().and_then(origin_of).map(|o| format!(" {o}")).unwrap_or_default();
        format!(
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
             connect-src 'self'{issuer}; frame-ancestors 'none'; base-uri 'none'; form-action 'self'; \
             object-src 'none'"
        )
    }

    /// `/console/config.json`: what the page needs to sign in, and nothing else (it is public:
    /// the log group names and region stay server-side, in the Logs Insights link the
    /// authenticated `/v1/executions/{id}/logs` answers; issue 28, L1).
    fn config(&self) -> ConsoleConfig<'_> {
        ConsoleConfig {
            auth: self.auth.as_str(),
            issuer: self.issuer.as_deref(),
            client_id: self.client_id.as_deref(),
        }
    }
}

/// A CloudWatch Logs Insights link over the workers' log groups, filtered by the execution's
/// *global* id (`{tenant}:{job}@{ms}`: a tenant-relative `job@ms` also matches another tenant's
/// execution of a job with the same id; the worker's span and metrics carry the global id),
/// last 7 days (deployed only: `None` without a region and log groups); the console shows it on
/// the execution page. The query detail's values are URI-encoded with `*` in place of `%`.
pub fn insights_url(s: &ConsoleSettings, execution_id: &str) -> Option<String> {
    let region = s.region.as_deref().filter(|_| !s.log_groups.is_empty())?;
    fn esc(v: &str) -> String {
        let mut out = String::new();
        for b in v.bytes() {
            if b.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&b) {
                out.push(b as char);
            } else {
                out.push_str(&format!("*{b:02X}"));
            }
        }
        out
    }
    let query = format!(
        "fields @timestamp, @message, @logStream\n| filter executionId = \"{execution_id}\" or @message like \"{execution_id}\"\n| sort @timestamp asc"
    );
    let groups: String = s.log_groups.iter().map(|g| format!("~'{}", esc(g))).collect();
    let detail = format!(
        "~(end~0~start~-604800~timeType~'RELATIVE~unit~'seconds~editorString~'{}~source~({groups}))",
        esc(&query)
    );
    Some(format!(
        "https://{region}.console.aws.amazon.com/cloudwatch/home?region={region}#logsV2:logs-insights$3FqueryDetail$3D{detail}"
    ))
}

fn hardened(mut r: Response, s: &ConsoleSettings) -> Response {
    let h = r.headers_mut();
    if let Ok(csp) = HeaderValue::from_str(&s.csp()) {
        h.insert(HeaderName::from_static("content-security-policy"), csp);
    }
    h.insert(HeaderName::from_static("x-content-type-options"), HeaderValue::from_static("nosniff"));
    h.insert(HeaderName::from_static("referrer-policy"), HeaderValue::from_static("no-referrer"));
    h.insert(HeaderName::from_static("x-frame-options"), HeaderValue::from_static("DENY"));
    r
}

/// Answers `GET /console` (`name` = None) and `GET /console/{name}`.
pub(crate) fn serve(name: Option<&str>, headers: &HeaderMap, s: &ConsoleSettings) -> Response {
    let name = name.unwrap_or("index.html");
    if name == "config.json" {
        let r = ([(CACHE_CONTROL, "no-store")], Json(s.config())).into_response();
        return hardened(r, s);
    }
    let Some(a) = ASSETS.iter().find(|a| a.name == name) else {
        let e = ApiError::new(StatusCode::NOT_FOUND, ErrorCode::NotFound, "no such console file");
        return hardened(e.into_response(), s);
    };
    let tag = etag_of(a.bytes);
    let matched = headers
        .get(IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim().trim_start_matches("W/") == tag));
    let (status, body) = if matched {
        (StatusCode::NOT_MODIFIED, Body::empty())
    } else {
        (StatusCode::OK, Body::from(a.bytes))
    };
    let mut r = Response::new(body);
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static(a.media));
    if let Ok(t) = HeaderValue::from_str(&tag) {
        h.insert(ETAG, t);
    }
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    hardened(r, s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_is_served_with_its_type_an_etag_and_the_csp() {
        let s = ConsoleSettings::default();
        let h = |r: &Response, n: &str| r.headers().get(n).and_then(|v| v.to_str().ok()).map(str::to_string);
        for a in ASSETS {
            let r = serve(Some(a.name), &HeaderMap::new(), &s);
            assert_eq!(r.status(), StatusCode::OK, "{}", a.name);
            assert_eq!(h(&r, "content-type").as_deref(), Some(a.media));
            assert!(h(&r, "content-security-policy").is_some_and(|c| c.contains("default-src 'self'")));
            let tag = h(&r, "etag").expect("etag");
            let mut again = HeaderMap::new();
            again.insert(IF_NONE_MATCH, tag.parse().expect("header"));
            assert_eq!(serve(Some(a.name), &again, &s).status(), StatusCode::NOT_MODIFIED, "{}", a.name);
        }
        let index = serve(None, &HeaderMap::new(), &s);
        assert_eq!(h(&index, "content-type").as_deref(), Some("text/html; charset=utf-8"));
        assert_eq!(serve(Some("../Cargo.toml"), &HeaderMap::new(), &s).status(), StatusCode::NOT_FOUND);
    }

    #[test]
    fn no_page_has_inline_script_or_style_or_a_foreign_asset() {
        for a in ASSETS.iter().filter(|a| a.name.ends_with(".html")) {
            let html = std::str::from_utf8(a.bytes).expect("utf-8");
            assert!(!html.contains("<script>") && !html.contains("style="), "{}", a.name);
            assert!(!html.contains("<style"), "{}", a.name);
            assert!(!html.contains("http://") && !html.contains("https://"), "{}: no external URL", a.name);
        }
        for a in ASSETS.iter().filter(|a| a.name.ends_with(".js")) {
            let js = std::str::from_utf8(a.bytes).expect("utf-8");
            assert!(!js.contains("eval(") && !js.contains("new Function"), "{}", a.name);
            assert!(!js.contains("localStorage"), "{}: tokens stay in memory", a.name);
        }
    }

    #[test]
    fn deployed_the_console_signs_in_with_oidc_only_when_issuer_and_client_are_set() {
        use sundial_core::config::{ApiSettings, Tenancy};
        let mut api = ApiSettings::default();
        api.console.issuer = Some("https://issuer.example.com/".into());
        assert_eq!(ConsoleSettings::deployed(&api, None).auth, ConsoleAuth::Iam, "no client id");
        api.console.client_id = Some("console".into());
        let s = ConsoleSettings::deployed(&api, Some("eu-west-1".into()));
        assert_eq!((s.auth, s.region.as_deref()), (ConsoleAuth::Oidc, Some("eu-west-1")));
        api.tenancy = Tenancy::IamPrincipalTag;
        assert_eq!(ConsoleSettings::deployed(&api, None).auth, ConsoleAuth::Iam);
    }

    #[test]
    fn the_csp_names_only_the_issuer_origin() {
        let s = ConsoleSettings {
            auth: ConsoleAuth::Oidc,
            issuer: Some("https://login.example.com/realms/x".into()),
            ..Default::default()
        };
        assert!(s.csp().contains("connect-src 'self' https://login.example.com;"), "{}", s.csp());
        let bad =
            ConsoleSettings { issuer: Some("https://x.example;script-src *".into()), ..Default::default() };
        assert!(bad.csp().contains("connect-src 'self';"), "{}", bad.csp());
    }
}
