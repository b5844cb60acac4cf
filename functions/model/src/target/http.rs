//! The `http` target: POST the invocation to an HTTPS webhook with `Idempotency-Key:
//! <executionId>`, signed per Standard Webhooks when it names a signing secret
//! (docs/webhooks.md). The call: `sundial-core`'s `execution/target/http.rs`, whose resolver
//! judges a host name again on the very addresses it connects to.

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};
use utoipa::openapi::schema::{Object, ObjectBuilder, Type};
use utoipa::openapi::Ref;
use utoipa::ToSchema;

use super::view::PolicyView;
use crate::codes;
use crate::outbound::{invalid, refuse, AddressPolicy, Refusal};

/// Most extra headers a webhook target may name.
pub const MAX_HEADERS: usize = 10;

/// An `http` target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(description = "POST the invocation to an HTTPS webhook")]
pub struct HttpTarget {
    /// an https URL (no user@ part); a host that is an IP address must be a public one (or in
    /// the deployment's private CIDR allowlist); the tenant's allowlist applies when set
    #[schema(
        min_length = 8,
        max_length = 2048,
        pattern = "^https://",
        examples("https://hooks.example.com/run")
    )]
    pub url: String,
    /// Secrets Manager secret holding the Standard Webhooks signing key `whsec_…` (two,
    /// whitespace-separated, during a rotation); requests are then signed (docs/webhooks.md)
    // The value never enters Sundial's tables; the worker reads it when it calls. `null` is
    // read as absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 2048, pattern = "^arn:[a-z-]+:secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:.+$")]
    pub signing_secret_arn: Option<String>,
    // Extra request headers whose values are secrets, by reference: described by
    // `headers_schema`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schema(schema_with = headers_schema)]
    pub headers: BTreeMap<String, SecretRef>,
}

/// A value held in AWS Secrets Manager, by reference (the secret's string is the value).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(
    description = "A value held in AWS Secrets Manager, by reference; workers read it when they call (CDK prop allowedTargetSecretArns grants them access)."
)]
pub struct SecretRef {
    /// The secret's ARN.
    #[schema(max_length = 2048, pattern = "^arn:[a-z-]+:secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:.+$")]
    pub secret_arn: String,
}

impl HttpTarget {
    /// An unsigned webhook without extra headers.
    pub fn new(url: impl Into<String>) -> Self {
        HttpTarget { url: url.into(), signing_secret_arn: None, headers: BTreeMap::new() }
    }

    /// Judges the URL (scheme, an IP literal's address), the secrets (syntax and the tenant's
    /// `secrets` globs), the header names, then the tenant's `http` host globs.
    pub fn check(&self, view: &PolicyView<'_>) -> Result<(), Refusal> {
        let host = check_url(&view.policy.addresses_for(view.tenant), &self.url)?;
        if let Some(arn) = &self.signing_secret_arn {
            view.check_secret("target.signingSecretArn", arn)?;
        }
        if self.headers.len() > MAX_HEADERS {
            return Err(invalid("target.headers", format!("at most {MAX_HEADERS} headers")));
        }
        for (name, value) in &self.headers {
            check_header_name(name)?;
            view.check_secret(&format!("target.headers.{name}.secretArn"), &value.secret_arn)?;
        }
        view.listed("webhook host", "target.url", &host, |a| &a.http)
    }
}

/// Headers Sundial sets itself, which a job's `headers` may not name (compared lowercase):
/// a job that could set them could forge a signature's inputs or another execution's identity.
pub fn is_reserved_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.starts_with("webhook-")
        || n.starts_with("x-sundial-")
        || matches!(
            n.as_str(),
            "idempotency-key"
                | "content-type"
                | "content-length"
                | "content-encoding"
                | "transfer-encoding"
                | "host"
                | "connection"
                | "user-agent"
        )
}

/// Refuses a header name Sundial sets itself, or one that is not a valid token.
pub fn check_header_name(name: &str) -> Result<(), Refusal> {
    let field = format!("target.headers.{name}");
    if ::http::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
        return Err(invalid(field, "is not a valid header name"));
    }
    if is_reserved_header(name) {
        return Err(invalid(field, "is set by Sundial and cannot be overridden"));
    }
    Ok(())
}

/// Checks a webhook URL's scheme and (for an IP literal) address; returns its host, lowercase
/// and without brackets.
pub fn check_url(addresses: &AddressPolicy, url: &str) -> Result<String, Refusal> {
    let field = "target.url";
    let uri: ::http::Uri = url.parse().map_err(|_| invalid(field, "is not a valid URL"))?;
    match uri.scheme_str() {
        Some("https") => {}
        Some("http") if addresses.allows_plain_http() => {}
        _ => return Err(invalid(field, "must be an https:// URL")),
    }
    let host = uri.host().unwrap_or_default().trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err(invalid(field, "has no host"));
    }
    if uri.authority().is_some_and(|a| a.as_str().contains('@')) {
        return Err(invalid(field, "must not carry credentials (use target.headers)"));
    }
    if let Ok(ip) = host.parse::<IpAddr>() {
        if !addresses.allows(ip) {
            return Err(refuse(
                codes::ADDRESS_REFUSED,
                field,
                "the address is not public (loopback, link-local, private or reserved) and not in the private networks this deployment opens to the tenant",
            ));
        }
    }
    Ok(host.to_ascii_lowercase())
}

/// `headers`: at most [`MAX_HEADERS`] names, each a [`SecretRef`].
fn headers_schema() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .max_properties(Some(MAX_HEADERS))
        .additional_properties(Some(Ref::from_schema_name(SecretRef::name())))
        .description(Some(
            "extra request headers whose values are secrets, e.g. `{\"Authorization\": {\"secretArn\": \
             \"arn:…\"}}`; names Sundial sets itself (webhook-*, x-sundial-*, idempotency-key, \
             content-type, content-length, content-encoding, transfer-encoding, host, connection, \
             user-agent) are refused",
        ))
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outbound::{Cidr, TargetPolicy};
    use crate::target::testing::{allowlist, refusal};
    use crate::target::Target;

    pub(crate) fn webhook(url: &str, signing: Option<&str>, header: Option<&str>) -> Target {
        let headers = header
            .map(|arn| ("Authorization".to_string(), SecretRef { secret_arn: arn.to_string() }))
            .into_iter()
            .collect();
        Target::Http(HttpTarget { url: url.into(), signing_secret_arn: signing.map(str::to_string), headers })
    }

    #[test]
    fn a_tenant_names_only_the_secrets_its_allowlist_lists() {
        // GIVEN acme allowed its acme/* secrets, and globex an allowlist without secrets
        let policy = allowlist(
            r#"{"acme": {"http": ["*.acme.com"], "secrets": ["arn:aws:secretsmanager:*:123456789012:secret:acme/*"]},
                "globex": {"http": ["*.globex.com"]}}"#,
        );
        let ours = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:acme/signing-AbCdEf";
        let partial = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:acme/token";
        let theirs = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:globex/signing-XyZ123";
        let hook = "https://hooks.acme.com/run";
        // THEN acme's own secrets, by full or partial ARN, are accepted as key and as header
        assert_eq!(refusal(&policy, "acme", &webhook(hook, Some(ours), Some(partial))), None);
        // AND another's secret is refused, naming the field and the rule and nothing of the secret
        let not_allowed = |field: &str| Some((codes::TARGET_NOT_ALLOWED, field.to_string()));
        assert_eq!(
            refusal(&policy, "acme", &webhook(hook, Some(theirs), None)),
            not_allowed("target.signingSecretArn")
        );
        assert_eq!(
            refusal(&policy, "acme", &webhook(hook, None, Some(theirs))),
            not_allowed("target.headers.Authorization.secretArn")
        );
        let cfg = crate::LocalDeployment::local("t-", &["default"], 16);
        let reason =
            policy.check(&cfg, "acme", &webhook(hook, Some(theirs), None)).err().map(|r| r.error.reason);
        assert!(reason.as_ref().is_some_and(|r| !r.contains("globex") && r.contains("secret")), "{reason:?}");
        // AND a tenant whose allowlist has no secrets kind may name none
        let own = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:globex/signing-XyZ123";
        assert_eq!(
            refusal(&policy, "globex", &webhook("https://h.globex.com/", Some(own), None)),
            not_allowed("target.signingSecretArn")
        );
        // AND without allowlists any well-formed secret ARN passes (the worker's tag check guards)
        assert_eq!(
            refusal(&TargetPolicy::default(), "acme", &webhook(hook, Some(theirs), Some(theirs))),
            None
        );
    }

    #[test]
    fn a_tenant_reaches_only_its_own_private_networks() {
        // GIVEN a deployment that opens 10.1.0.0/16 and 10.2.0.0/16; acme's own network is
        // 10.1.5.0/24 (and, by mistake, 10.9.0.0/16, which the deployment does not open)
        let mut policy = allowlist(
            r#"{"acme": {"http": ["*"], "cidrs": ["10.1.5.0/24", "10.9.0.0/16"]}, "globex": {"http": ["*"]}}"#,
        );
        policy.addresses.private_cidrs = ["10.1.0.0/16", "10.2.0.0/16"]
            .iter()
            .map(|c| Cidr::parse(c).unwrap_or_else(|e| panic!("{e}")))
            .collect();
        let refused = Some((codes::ADDRESS_REFUSED, "target.url".to_string()));
        // THEN acme reaches what lies in both lists, and nothing else private
        assert_eq!(refusal(&policy, "acme", &Target::http("https://10.1.5.9/hook")), None);
        for url in ["https://10.1.6.1/", "https://10.2.0.1/", "https://10.9.0.1/"] {
            assert_eq!(refusal(&policy, "acme", &Target::http(url)), refused, "{url}");
        }
        // AND globex, whose allowlist names no network, reaches public addresses only
        assert_eq!(refusal(&policy, "globex", &Target::http("https://10.1.5.9/hook")), refused);
        assert_eq!(refusal(&policy, "globex", &Target::http("https://93.184.216.34/")), None);
        // AND without allowlists the deployment's networks are every tenant's, as before
        policy.tenants = None;
        assert_eq!(refusal(&policy, "globex", &Target::http("https://10.2.0.1/")), None);
    }

    #[test]
    fn reserved_header_names_are_refused() {
        for h in [
            "Webhook-Signature",
            "webhook-id",
            "Idempotency-Key",
            "Content-Type",
            "HOST",
            "X-Sundial-Fencing-Token",
        ] {
            assert!(check_header_name(h).is_err(), "{h}");
        }
        assert!(check_header_name("Authorization").is_ok() && check_header_name("X-Api-Key").is_ok());
        assert!(check_header_name("bad header").is_err());
    }
}
