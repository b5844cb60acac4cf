//! HTTPS notifications of outcome events (`outcomeNotify`, docs/outcomes.md "HTTPS
//! notifications"): the bus event's `detail` plus `detailType`, POSTed to the job's receiver
//! as the tenant, judged and signed exactly as a webhook target's call.
//!
//! The flush ([`super::outcome::Outcomes`]) decides when to call and what a failure means (the
//! notification's own outbox entry stays for the next flush, up to
//! [`sundial_model::outcome::MAX_NOTIFY_FAILURES`]), the pool ([`super::notify_pool`]) runs the
//! call off the flush's path; this module only delivers one.

use super::target::Remotes;
use crate::config::Config;
use chrono::{DateTime, Utc};
use std::sync::Arc;
use std::time::Duration;
use sundial_model::outcome::OutcomeNotify;
use sundial_model::retry::RunError;

/// A boxed future (the [`Notifier`] is a trait object): the handlers' own.
pub use super::target::in_process::BoxFuture;

/// How long one notification may take (connect, send and answer). A receiver that never
/// answers holds one of its own tenant's delivery slots this long ([`super::notify_pool`]),
/// never a flush, a worker's finish or the reconciler.
pub const DEFAULT_NOTIFY_TIMEOUT: Duration = Duration::from_secs(3);

/// Delivers one notification.
pub trait Notifier: Send + Sync + std::fmt::Debug {
    /// POSTs `body` (JSON) for `tenant` to `to`, signed with `event_id` as its `webhook-id`:
    /// `Ok` once the receiver answered 2xx.
    fn post<'a>(
        &'a self,
        tenant: &'a str,
        to: &'a OutcomeNotify,
        event_id: &'a str,
        body: String,
        now: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<(), RunError>>;
}

/// The notifier over the worker's webhook clients: each tenant's own (its role session, secret
/// cache and address policy), after the deployment's target policy judged the receiver again
/// (a policy tightened since the job was saved applies).
#[derive(Debug, Clone)]
pub struct HttpNotifier {
    remotes: Arc<Remotes>,
    cfg: Config,
    timeout: Duration,
}

impl HttpNotifier {
    /// Notifies through `remotes`, judged by `cfg`'s target policy.
    pub fn new(remotes: Arc<Remotes>, cfg: Config) -> Self {
        HttpNotifier { remotes, cfg, timeout: DEFAULT_NOTIFY_TIMEOUT }
    }

    /// A notifier of its own over a process's `clients` (the tick binary's reconciler, which
    /// has no worker): each tenant's calls over its role session of `roles`, judged by `cfg`.
    pub fn for_tenants(
        clients: &crate::aws::Clients,
        roles: sundial_model::tenant::TenantRoles,
        cfg: Config,
    ) -> Self {
        use super::target::identity::{TenantClients, TenantSessions};
        let remotes =
            Remotes::new(TenantSessions::new(TenantClients::of(clients), roles), cfg.targets.clone());
        HttpNotifier::new(Arc::new(remotes), cfg)
    }

    /// Gives each notification at most `timeout`.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    async fn deliver(
        &self,
        tenant: &str,
        to: &OutcomeNotify,
        event_id: &str,
        body: String,
        now: DateTime<Utc>,
    ) -> Result<(), RunError> {
        self.cfg.targets.check_notify(&self.cfg, tenant, to)?;
        let remote = self.remotes.of(tenant).await?;
        let send = remote.http.post_event(
            &to.url,
            to.signing_secret_arn.as_deref(),
            event_id,
            body,
            now.timestamp(),
        );
        match tokio::time::timeout(self.timeout, crate::access::as_tenant(send)).await {
            Ok(r) => r,
            Err(_) => Err(RunError::retryable("Timeout", "the notification receiver did not answer in time")),
        }
    }
}

impl Notifier for HttpNotifier {
    fn post<'a>(
        &'a self,
        tenant: &'a str,
        to: &'a OutcomeNotify,
        event_id: &'a str,
        body: String,
        now: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<(), RunError>> {
        Box::pin(self.deliver(tenant, to, event_id, body, now))
    }
}
