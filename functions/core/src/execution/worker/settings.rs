//! The worker's own settings (beyond [`Config`](crate::config::Config)): lease length and
//! takeover margin, tenant limits, run-time budget, the webhook address policy.

use super::secs_ceil;
use crate::config::ConfigError;
use crate::execution::policy::TenantLimits;
use crate::resources::Resources;
use std::time::Duration;

/// Env variables of the worker's own settings (all optional; defaults in [`WorkerSettings::new`]).
/// The CDK construct sets the ones it wants to tune (`infra/lib/sundial-scheduler.ts`).
pub mod env {
    /// Worker id written as lease owner (default: host name + pid + start time).
    pub const WORKER_ID: &str = "SUNDIAL_WORKER_ID";
    /// Lease length in seconds (default 30).
    pub const LEASE_SECS: &str = "SUNDIAL_LEASE_SECS";
    /// Extra time after a lease's end before another worker may take it over (default 2000).
    pub const SKEW_MARGIN_MS: &str = "SUNDIAL_SKEW_MARGIN_MS";
    /// Per-tenant running limits: `5` or `5,acme=10` (default: none).
    pub const TENANT_MAX_RUNNING: &str = "SUNDIAL_TENANT_MAX_RUNNING";
    /// Total run time budget across attempts, seconds (default: maxAttempts × timeoutSecs).
    pub const MAX_TOTAL_RUN_SECS: &str = "SUNDIAL_MAX_TOTAL_RUN_SECS";
    /// Concurrent executions of one ECS worker (default 8).
    pub const SLOTS: &str = "SUNDIAL_WORKER_SLOTS";
    /// Seconds an ECS worker keeps finishing work after SIGTERM before it releases (default 25).
    pub const SHUTDOWN_GRACE_SECS: &str = "SUNDIAL_SHUTDOWN_GRACE_SECS";
}

/// How a worker behaves (beyond [`Config`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerSettings {
    /// Lease owner id (unique per process).
    pub worker_id: String,
    /// The pool this worker serves (ECS) or the default pool of messages (Lambda).
    pub pool: String,
    /// Lease length (ms). Heartbeats every third of it.
    pub lease_ms: i64,
    /// See [`LeaseTerms::skew_margin_ms`](crate::execution::store::LeaseTerms::skew_margin_ms).
    pub skew_margin_ms: i64,
    /// Largest tolerated distance between this worker's clock and the service's (ms).
    pub max_skew_ms: i64,
    /// A message that arrives up to this early (SQS delays have 1 s resolution) is held until
    /// its execution is available instead of being returned to the queue (ms).
    pub early_hold_ms: i64,
    /// Whether webhooks may target loopback, link-local and private addresses.
    pub allow_private_targets: bool,
    /// Run-time budget across attempts (ms), if set.
    pub max_total_run_ms: Option<i64>,
    /// Per-tenant running limits.
    pub tenant_limits: TenantLimits,
    /// How long a handler may take to stop after its cancellation token fires (ms).
    pub cancel_grace_ms: i64,
}

impl WorkerSettings {
    /// Defaults: 30 s lease, 2 s skew margin, 1 s tolerated skew.
    pub fn new(worker_id: impl Into<String>, pool: impl Into<String>) -> Self {
        WorkerSettings {
            worker_id: worker_id.into(),
            pool: pool.into(),
            lease_ms: 30_000,
            skew_margin_ms: 2_000,
            max_skew_ms: 1_000,
            early_hold_ms: 1_500,
            allow_private_targets: false,
            max_total_run_ms: None,
            tenant_limits: TenantLimits::default(),
            cancel_grace_ms: 2_000,
        }
    }

    /// Reads the settings from the environment (the pool from `SUNDIAL_POOL`, else `default`).
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// [`WorkerSettings::from_env`] with an injected lookup.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let r = Resources::get();
        let pool = get(&r.env.pool).filter(|p| !p.is_empty()).unwrap_or_else(|| "default".into());
        let id = get(env::WORKER_ID).filter(|v| !v.is_empty()).unwrap_or_else(default_worker_id);
        let mut s = WorkerSettings::new(id, pool);
        let int = |name: &str, lo: i64, hi: i64| -> Result<Option<i64>, ConfigError> {
            match get(name).filter(|v| !v.is_empty()) {
                None => Ok(None),
                Some(v) => {
                    v.parse::<i64>().ok().filter(|x| (lo..=hi).contains(x)).map(Some).ok_or_else(|| {
                        ConfigError::Invalid {
                            name: name.into(),
                            reason: format!("{v:?} is not an integer in {lo}..={hi}"),
                        }
                    })
                }
            }
        };
        if let Some(v) = int(env::LEASE_SECS, 2, 43_200)? {
            s.lease_ms = v * 1000;
        }
        if let Some(v) = int(env::SKEW_MARGIN_MS, 0, 60_000)? {
            s.skew_margin_ms = v;
            s.max_skew_ms = (v / 2).max(1_000);
        }
        if let Some(v) = int(env::MAX_TOTAL_RUN_SECS, 1, 10_000_000)? {
            s.max_total_run_ms = Some(v * 1000);
        }
        if let Some(v) = get(env::TENANT_MAX_RUNNING) {
            s.tenant_limits = TenantLimits::parse(&v)
                .map_err(|reason| ConfigError::Invalid { name: env::TENANT_MAX_RUNNING.into(), reason })?;
        }
        s.allow_private_targets = matches!(
            get(&r.env.allow_private_targets).as_deref().map(str::to_ascii_lowercase).as_deref(),
            Some("true" | "1" | "yes")
        );
        Ok(s)
    }

    /// How often a running attempt renews its lease: a third of it (at least 200 ms).
    pub(super) fn heartbeat_every(&self) -> Duration {
        Duration::from_millis((self.lease_ms / 3).max(200) as u64)
    }

    /// The visibility timeout (s) that covers one lease plus the takeover margin.
    pub fn visibility_secs(&self) -> i32 {
        secs_ceil(self.lease_ms + self.skew_margin_ms).max(1)
    }
}

fn default_worker_id() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok().map(|h| h.trim().to_string()))
        .unwrap_or_else(|| "worker".into());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{host}-{}-{nanos:x}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn settings_from_env_name_the_bad_variable() {
        let env: HashMap<&str, &str> = [(env::LEASE_SECS, "1")].into();
        let e = WorkerSettings::from_lookup(|k| env.get(k).map(|v| v.to_string())).err();
        assert!(matches!(e, Some(ConfigError::Invalid { ref name, .. }) if name == env::LEASE_SECS), "{e:?}");
        let env: HashMap<&str, &str> = [
            (env::LEASE_SECS, "4"),
            (env::WORKER_ID, "w1"),
            ("SUNDIAL_POOL", "slow"),
            ("SUNDIAL_ALLOW_PRIVATE_TARGETS", "true"),
            (env::TENANT_MAX_RUNNING, "3"),
        ]
        .into();
        let s = WorkerSettings::from_lookup(|k| env.get(k).map(|v| v.to_string()))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((s.lease_ms, s.worker_id.as_str(), s.pool.as_str()), (4_000, "w1", "slow"));
        assert!(s.allow_private_targets);
        assert_eq!(s.tenant_limits.of("any"), Some(3));
        assert_eq!(s.visibility_secs(), 6);
    }
}
