//! Secrets a webhook needs (its signing keys, the values of its auth headers), read from AWS
//! Secrets Manager by ARN and cached for a short time.
//!
//! A job holds secrets by reference only: the definition (stored, listed by the API, copied
//! into every execution) never contains a secret value, and rotating one is a Secrets Manager
//! update, not a job edit. The cache keeps a worker from calling Secrets Manager on every fire;
//! its TTL bounds how long a rotated value takes to reach every worker (docs/webhooks.md
//! "Rotating the signing secret" waits for it). Failures are not cached.
//!
//! Errors carry a generic message (the tenant sees it as `lastError`): which secret, and why
//! exactly, is logged with the execution id by the caller, never stored. A missing secret, a
//! refused read and another tenant's secret read the same ([`super::identity::not_owned`]), so
//! `lastError` cannot be used to learn which secret names exist.
//!
//! One cache serves one tenant (the worker keeps one per tenant, read through that tenant's role
//! session): a value read for one tenant is never served to another. With an [`Ownership`], each
//! secret's `sundial-tenant` tag is confirmed before its value is read.

use super::identity::{not_owned, Kind, Ownership};
use aws_sdk_secretsmanager::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use sundial_model::retry::RunError;
use tokio::time::Instant;

/// How long a fetched secret is used before it is read again.
pub const DEFAULT_TTL: Duration = Duration::from_secs(60);

/// The error code of a secret that cannot be read.
pub const SECRET_UNAVAILABLE: &str = "TargetSecretUnavailable";

/// Most values one cache holds (expired entries are dropped first when it is full).
pub const MAX_ENTRIES: usize = 256;

/// A failed read: the classified error to store, and the detail to log (never stored).
#[derive(Debug, Clone)]
pub struct SecretError {
    /// Generic, tenant-visible.
    pub error: RunError,
    /// The SDK's own account of it, for the log.
    pub detail: String,
}

/// Reads and caches secret strings.
#[derive(Debug, Clone)]
pub struct SecretCache {
    client: aws_sdk_secretsmanager::Client,
    ttl: Duration,
    entries: Arc<Mutex<HashMap<String, Fetched>>>,
    owner: Option<Ownership>,
}

/// A value and when it was read.
type Fetched = (Instant, Arc<str>);

impl SecretCache {
    /// A cache over `client` keeping values for `ttl`.
    pub fn new(client: aws_sdk_secretsmanager::Client, ttl: Duration) -> Self {
        SecretCache { client, ttl, entries: Arc::default(), owner: None }
    }

    /// Reads only secrets `owner`'s tenant owns (their `sundial-tenant` tag), confirmed before
    /// every read of a value that is not cached.
    pub fn owned_by(mut self, owner: Ownership) -> Self {
        self.owner = Some(owner);
        self
    }

    /// The secret string of `arn` (from the cache while fresh). `what` names its use in the
    /// tenant-visible message ("signing secret", "header secret").
    pub async fn get(&self, arn: &str, what: &str) -> Result<Arc<str>, SecretError> {
        if let Some(v) = self.cached(arn) {
            return Ok(v);
        }
        if let Some(owner) = &self.owner {
            owner.check(Kind::Secret, arn, what, "").await.map_err(|error| SecretError {
                detail: format!("secret {arn} not confirmed as tenant {:?}'s", owner.tenant()),
                error,
            })?;
        }
        let out = self.client.get_secret_value().secret_id(arn).send().await;
        let value: Arc<str> = match out {
            Ok(o) => match o.secret_string() {
                Some(s) => Arc::from(s),
                None => {
                    return Err(SecretError {
                        error: RunError::permanent(
                            SECRET_UNAVAILABLE,
                            format!("the {what} is not a text secret (SecretString)"),
                        ),
                        detail: "secret has no SecretString (binary secret?)".into(),
                    })
                }
            },
            Err(e) => return Err(classify(e, what, self.owner.as_ref().map_or("", |o| o.tenant()))),
        };
        if let Ok(mut m) = self.entries.lock() {
            if m.len() >= MAX_ENTRIES {
                let ttl = self.ttl;
                m.retain(|_, (at, _)| at.elapsed() < ttl);
            }
            if m.len() < MAX_ENTRIES {
                m.insert(arn.to_string(), (Instant::now(), value.clone()));
            }
        }
        Ok(value)
    }

    fn cached(&self, arn: &str) -> Option<Arc<str>> {
        let m = self.entries.lock().ok()?;
        let (at, v) = m.get(arn)?;
        (at.elapsed() < self.ttl).then(|| v.clone())
    }
}

/// Missing, deleted, refused or undecryptable secrets are the job's (or the deployment's IAM)
/// configuration: permanent, and all told in the same words (which of them it was is logged,
/// not stored). Throttling, service and network errors retry.
fn classify<E, R>(e: SdkError<E, R>, what: &str, tenant: &str) -> SecretError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    let detail = DisplayErrorContext(&e).to_string();
    let error = match &e {
        SdkError::ServiceError(s) => {
            let code = s.err().code().unwrap_or("Unknown");
            match code {
                "ResourceNotFoundException"
                | "AccessDeniedException"
                | "DecryptionFailure"
                | "InvalidRequestException"
                | "InvalidParameterException"
                | "ValidationException" => not_owned(Kind::Secret, what, tenant),
                _ => RunError::retryable(
                    SECRET_UNAVAILABLE,
                    format!("the {what} could not be read (will retry)"),
                ),
            }
        }
        _ => RunError::retryable(SECRET_UNAVAILABLE, format!("the {what} could not be read (unreachable)")),
    };
    SecretError { error, detail }
}
