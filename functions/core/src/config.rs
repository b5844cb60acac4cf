//! Runtime settings: every `SUNDIAL_*` variable a binary reads is read here, and only here
//! (except the `sundial` CLI's API arguments, which clap reads under names from the same file,
//! and the standard `AWS_*` and logging variables of [`crate::telemetry`]).
//!
//! Names and defaults come from `resources.json` (`env`, `defaults`); its `envLoaders` says
//! which loader reads which names in which binaries, and tests hold both sides to it (no
//! `SUNDIAL_` literal elsewhere in the product sources). The CDK construct sets every one on
//! AWS; README.md "Settings" has one row per variable.
//!
//! | loader | binaries | variables |
//! |---|---|---|
//! | [`Config`] | tick, worker, worker-ecs, api | tables, queue prefix, pools, shards, target policy, event bus |
//! | [`TickSettings`] | tick (and the scan function) | fan-out, catch-up budgets |
//! | [`WorkerSettings`] | worker, worker-ecs | pool, worker id, lease, skew margin, budgets, targets |
//! | [`EcsWorkerSettings`] | worker-ecs | slots, shutdown grace |
//! | [`ApiSettings`] | api | tenant claim |
//! | [`BackpressureSettings`] | tick, api | lane depths that defer low-priority fires and refuse new work |
//! | [`LocalRunSettings`] | `sundial dev` | checkout root, emulator port |
//!
//! Each loader has `from_env()` and `from_lookup(get)`, the same with an injected lookup so tests
//! never touch the process environment. Locally, `sundial` and the tests use [`Config::local`],
//! which derives every name from one prefix so parallel tests never share a table or a queue.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;
use sundial_model::resources::Resources;
use sundial_model::tenant::TenantLimits;
pub use sundial_store::config::{process_env, validate_pool_name, Config, ConfigError};

/// How the tick runs (beyond [`Config`]). The scan function is the same binary and reads the
/// same settings.
#[derive(Debug, Clone)]
pub struct TickSettings {
    /// Scan in-process up to this many shards; fan out above it (if a scan function is set).
    pub in_process_max_shards: u32,
    /// Shards per fanned-out scan invocation.
    pub shards_per_scan: u32,
    /// The scan function (name or ARN); `None` = always in-process.
    pub scan_function: Option<String>,
    /// Missed-fire executions per tick, all tenants (the global catch-up rate, docs/trigger.md).
    pub catch_up_global: u64,
    /// Missed-fire executions per tick per tenant.
    pub catch_up_per_tenant: u64,
}

impl Default for TickSettings {
    fn default() -> Self {
        let d = &Resources::get().defaults;
        TickSettings {
            in_process_max_shards: d.tick_in_process_max_shards,
            shards_per_scan: d.shards_per_scan,
            scan_function: None,
            catch_up_global: d.catch_up_global,
            catch_up_per_tenant: d.catch_up_per_tenant,
        }
    }
}

impl TickSettings {
    /// Defaults, overridden by the environment (the CDK construct sets every variable; the
    /// scan function name only on the tick).
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(process_env)
    }

    /// [`TickSettings::from_env`] with an injected lookup.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let n = &Resources::get().env;
        let d = TickSettings::default();
        let num = |name: &str, default: u64| get(name).map_or(Ok(default), |v| positive(name, &v));
        Ok(TickSettings {
            scan_function: get(&n.scan_function).filter(|s| !s.is_empty()),
            in_process_max_shards: num(&n.tick_in_process_max_shards, u64::from(d.in_process_max_shards))?
                as u32,
            shards_per_scan: num(&n.shards_per_scan, u64::from(d.shards_per_scan))? as u32,
            catch_up_global: num(&n.catch_up_global, d.catch_up_global)?,
            catch_up_per_tenant: num(&n.catch_up_per_tenant, d.catch_up_per_tenant)?,
        })
    }
}

/// Back-pressure thresholds ([`sundial_model::priority::Backpressure`]), read by the tick (deferring
/// low-priority fires) and the api (429 `saturated`). The CDK construct sets them from its
/// `backpressure` prop (`infra/lib/sundial-scheduler.ts`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackpressureSettings;

impl BackpressureSettings {
    /// Defaults, overridden by the environment.
    pub fn from_env() -> Result<sundial_model::priority::Backpressure, ConfigError> {
        Self::from_lookup(process_env)
    }

    /// [`BackpressureSettings::from_env`] with an injected lookup.
    pub fn from_lookup(
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<sundial_model::priority::Backpressure, ConfigError> {
        let n = &Resources::get().env;
        let d = sundial_model::priority::Backpressure::default();
        let num = |name: &str, default: u64| get(name).map_or(Ok(default), |v| positive(name, &v));
        let defer_secs = num(&n.backpressure_defer_secs, u64::from(d.defer_secs))?;
        if defer_secs > sundial_store::queue::MAX_DELAY_SECS as u64 {
            return Err(ConfigError::Invalid {
                name: n.backpressure_defer_secs.clone(),
                reason: format!("at most {} (SQS's longest delay)", sundial_store::queue::MAX_DELAY_SECS),
            });
        }
        Ok(sundial_model::priority::Backpressure {
            defer_depth: num(&n.backpressure_defer_depth, d.defer_depth)?,
            defer_secs: defer_secs as u32,
            saturated_depth: num(&n.backpressure_saturated_depth, d.saturated_depth)?,
        })
    }
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
    /// See [`sundial_model::claim::LeaseTerms::skew_margin_ms`].
    pub skew_margin_ms: i64,
    /// Largest tolerated distance between this worker's clock and the service's (ms).
    pub max_skew_ms: i64,
    /// A message that arrives up to this early (SQS delays have 1 s resolution) is held until
    /// its execution is available instead of being returned to the queue (ms).
    pub early_hold_ms: i64,
    /// Run-time budget across attempts (ms), if set.
    pub max_total_run_ms: Option<i64>,
    /// Per-tenant running limits.
    pub tenant_limits: TenantLimits,
    /// The most executions every worker of the stack can run at once (`SUNDIAL_WORKER_CAPACITY`:
    /// the CDK sums each pool's event-source maximum concurrency × batch size, and each ECS
    /// pool's most tasks × slots); `None` when unknown (unbounded). A tenant whose limit is at
    /// least this can never be refused, so its gate is not written ([`Self::tenant_gate_limit`]).
    pub worker_capacity: Option<u32>,
    /// How long a handler may take to stop after its cancellation token fires (ms).
    pub cancel_grace_ms: i64,
    /// The roles outbound calls are made with, per tenant (`docs/tenancy.md`; the entry points
    /// set them from [`TenantRoleSettings`]).
    pub tenant_roles: sundial_model::tenant::TenantRoles,
    /// The deployment's key for ECS run names (`SUNDIAL_RUN_NAME_KEY`; empty: unkeyed):
    /// [`crate::execution::target::ecs::RunNames`].
    pub run_name_key: String,
    /// Base of a notification's retry delays (s; `outcome::notify_retry_delay_secs`; tests: 0).
    pub notify_retry_base_secs: u32,
}

impl WorkerSettings {
    /// Defaults (`resources.json`): 30 s lease, 2 s skew margin; 1 s tolerated skew.
    pub fn new(worker_id: impl Into<String>, pool: impl Into<String>) -> Self {
        let d = &Resources::get().defaults;
        WorkerSettings {
            worker_id: worker_id.into(),
            pool: pool.into(),
            lease_ms: d.lease_secs * 1000,
            skew_margin_ms: d.skew_margin_ms,
            max_skew_ms: 1_000,
            early_hold_ms: 1_500,
            max_total_run_ms: None,
            tenant_limits: TenantLimits::default(),
            worker_capacity: None,
            cancel_grace_ms: 2_000,
            tenant_roles: Default::default(),
            run_name_key: String::new(),
            notify_retry_base_secs: sundial_model::outcome::NOTIFY_RETRY_BASE_SECS,
        }
    }

    /// Reads the settings from the environment (all optional).
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(process_env)
    }

    /// The running limit `tenant`'s executions must be admitted under, or `None` when nothing
    /// needs admitting: the tenant has no limit, or its limit is at least `capacity` (the most of
    /// its executions the workers can run at once, [`Self::tenant_capacity`]), so the gate could
    /// never refuse (its two writes a fire would buy nothing). Exact as long as the capacity is:
    /// the CDK derives it from the same event-source and service settings it deploys.
    pub fn tenant_gate_limit(&self, tenant: &str, capacity: Option<u32>) -> Option<u32> {
        let limit = self.tenant_limits.of(tenant)?;
        match capacity {
            Some(capacity) if limit >= capacity => None,
            _ => Some(limit),
        }
    }

    /// The most of `tenant`'s executions the stack's workers can run at once, for one its pool
    /// `pool` delivered; `None` when unknown (unbounded).
    ///
    /// Without allowlists every pool may run them: [`Self::worker_capacity`]. With them, a tenant
    /// runs only in the pools its `pools` globs match (`cell`: the deployment's pools matched,
    /// [`sundial_model::outbound::TargetPolicy::pools_of`]), each bounded by its capacity
    /// (`capacities`: [`Config::pool_capacity`], `SUNDIAL_POOL_CAPACITY`); a delivery from a pool
    /// outside the cell is refused at its call before the handler runs, so it is admitted under
    /// the stack's figure. A pool of the cell without a known capacity makes the cell's unknown
    /// (the stack's figure again).
    pub fn tenant_capacity(
        &self,
        capacities: &BTreeMap<String, u32>,
        pool: &str,
        cell: Option<&[&str]>,
    ) -> Option<u32> {
        let in_cell = cell
            .filter(|c| c.contains(&pool))
            .and_then(|c| c.iter().map(|p| capacities.get(*p).map(|n| u64::from(*n))).sum::<Option<u64>>());
        match (in_cell, self.worker_capacity) {
            (Some(c), Some(w)) => Some(u32::try_from(c).unwrap_or(u32::MAX).min(w)),
            (Some(c), None) => Some(u32::try_from(c).unwrap_or(u32::MAX)),
            (None, w) => w,
        }
    }

    /// [`WorkerSettings::from_env`] with an injected lookup.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let r = Resources::get();
        let n = &r.env;
        let pool = get(&n.pool).filter(|p| !p.is_empty()).unwrap_or_else(|| r.defaults.pool.clone());
        let id = get(&n.worker_id).filter(|v| !v.is_empty()).unwrap_or_else(default_worker_id);
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
        if let Some(v) = int(&n.lease_secs, 2, i64::from(sundial_model::limits::MAX_LEASE_SECS))? {
            s.lease_ms = v * 1000;
        }
        if let Some(v) = int(&n.skew_margin_ms, 0, 60_000)? {
            s.skew_margin_ms = v;
            s.max_skew_ms = (v / 2).max(1_000);
        }
        if let Some(v) = int(&n.max_total_run_secs, 1, 10_000_000)? {
            s.max_total_run_ms = Some(v * 1000);
        }
        if let Some(v) = int(&n.worker_capacity, 1, i64::from(u32::MAX))? {
            s.worker_capacity = u32::try_from(v).ok();
        }
        // Unset or empty: every tenant gets the default cap (one tenant must not take every
        // slot of a shared pool); a spec without a bare number keeps the default for the rest.
        s.tenant_limits = TenantLimits::parse(&get(&n.tenant_max_running).unwrap_or_default())
            .map_err(|reason| ConfigError::Invalid { name: n.tenant_max_running.clone(), reason })?;
        if s.tenant_limits.default.is_none() {
            s.tenant_limits.default = Some(r.defaults.tenant_max_running);
        }
        s.run_name_key = get(&n.run_name_key).unwrap_or_default();
        Ok(s)
    }
}

/// The roles outbound calls are made with, per tenant (`docs/tenancy.md`): read by the
/// workers, which call targets as the tenant, and by the tick binary, whose reconciler delivers
/// a job's outcome notifications as the tenant (docs/outcomes.md).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TenantRoleSettings {
    /// The shared tenant access role, and the per-tenant ones.
    pub roles: sundial_model::tenant::TenantRoles,
}

impl TenantRoleSettings {
    /// Reads the settings from the environment (all optional).
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(process_env)
    }

    /// [`TenantRoleSettings::from_env`] with an injected lookup.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let n = &Resources::get().env;
        let nonempty = |name: &str| get(name).filter(|v| !v.trim().is_empty());
        let shared = match nonempty(&n.tenant_role_arn) {
            Some(arn) if sundial_model::tenant::is_role_arn(arn.trim()) => Some(arn.trim().to_string()),
            Some(arn) => {
                return Err(ConfigError::Invalid {
                    name: n.tenant_role_arn.clone(),
                    reason: format!("{arn:?} is not an IAM role ARN"),
                })
            }
            None => None,
        };
        let mut roles = sundial_model::tenant::TenantRoles { shared, ..Default::default() };
        if let Some(v) = nonempty(&n.tenant_roles) {
            roles.per_tenant = sundial_model::tenant::TenantRoles::parse_per_tenant(&v)
                .map_err(|reason| ConfigError::Invalid { name: n.tenant_roles.clone(), reason })?;
        }
        Ok(TenantRoleSettings { roles })
    }
}

/// An opaque token + pid: unique per process start, and says nothing about the host. The id is
/// shown to tenants (an execution's `leaseOwner`, its timeline's `worker:` actors), and a host
/// name on Fargate is a private address (`ip-10-…`), so it is not part of it (issue 28, L1).
/// The token is a hash of the start time under the standard library's per-process random hash
/// keys (seeded by the operating system), so it cannot be reversed to the host or guessed.
fn default_worker_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(nanos);
    h.write_u32(std::process::id());
    format!("w{:016x}-{}", h.finish(), std::process::id())
}

/// The ECS worker's poll loop (beyond [`WorkerSettings`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EcsWorkerSettings {
    /// Executions run at once (1-1000).
    pub slots: usize,
    /// How long running work may continue after SIGTERM before it is released.
    pub shutdown_grace: Duration,
    /// Whether the shipped binary registers its diagnostic handlers (`sleep`, which holds a
    /// slot as long as it is asked to, and the map-reduce `count`, which emits as many items).
    /// Off unless `SUNDIAL_DIAGNOSTIC_HANDLERS` says so; the CDK never sets it: they would be
    /// every tenant's to call.
    pub diagnostic_handlers: bool,
}

impl Default for EcsWorkerSettings {
    fn default() -> Self {
        let d = &Resources::get().defaults;
        EcsWorkerSettings {
            slots: d.worker_slots.clamp(1, 1_000) as usize,
            shutdown_grace: Duration::from_secs(d.shutdown_grace_secs),
            diagnostic_handlers: false,
        }
    }
}

impl EcsWorkerSettings {
    /// Reads the settings from the environment (all optional).
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(process_env)
    }

    /// [`EcsWorkerSettings::from_env`] with an injected lookup.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let r = Resources::get();
        let num = |name: &str, default: u64| -> Result<u64, ConfigError> {
            match get(name).filter(|v| !v.is_empty()) {
                None => Ok(default),
                Some(v) => v.parse().map_err(|_| ConfigError::Invalid {
                    name: name.to_string(),
                    reason: format!("{v:?} is not a number"),
                }),
            }
        };
        Ok(EcsWorkerSettings {
            slots: num(&r.env.worker_slots, r.defaults.worker_slots)?.clamp(1, 1_000) as usize,
            shutdown_grace: Duration::from_secs(num(
                &r.env.shutdown_grace_secs,
                r.defaults.shutdown_grace_secs,
            )?),
            diagnostic_handlers: sundial_store::config::flag(
                &r.env.diagnostic_handlers,
                get(&r.env.diagnostic_handlers).as_deref(),
            )?
            .unwrap_or(false),
        })
    }
}

/// Default request body limit of the API (bytes). Job parameters above
/// [`sundial_model::MAX_INLINE_PARAMS_BYTES`] go by reference (`paramsRef`), so a definition
/// never needs more.
pub const DEFAULT_MAX_BODY_BYTES: usize = 16 * 1024;

/// The test suite's IAM recording file (`SUNDIAL_IAM_RECORD`, set by `scripts/test.sh`; never
/// by the CDK, so not a deployed setting in `resources.json`): where [`crate::access`] appends
/// every AWS call a function makes. `None` when unset or empty.
pub fn iam_record_path() -> Option<std::path::PathBuf> {
    std::env::var_os("SUNDIAL_IAM_RECORD").filter(|p| !p.is_empty()).map(std::path::PathBuf::from)
}

/// How the API answers (beyond [`Config`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiSettings {
    /// Largest accepted request body (bytes).
    pub max_body_bytes: usize,
    /// The JWT claim that carries the tenant.
    pub tenant_claim: String,
    /// Where the caller's tenant comes from.
    pub tenancy: Tenancy,
    /// The IAM tag naming a principal's tenant ([`Tenancy::IamPrincipalTag`]).
    pub tenant_tag: String,
    /// Per-tenant quotas.
    pub quotas: Quotas,
    /// Tenants whose callers are platform operators: only they may set and delete resource
    /// limits, which span every tenant (`docs/resources.md`). Empty: nobody may, through the API.
    pub operator_tenants: Vec<String>,
    /// How the web console signs in and links to logs when deployed (`/console/config.json`).
    pub console: ConsoleConfig,
    /// Requests per second one tenant may make, counted in one-second windows after the caller
    /// is known (429 `throttled` beyond); 0: no per-tenant throttle (`SUNDIAL_TENANT_API_RPS`).
    pub tenant_api_rps: u32,
    /// The id of the stack's API Gateway HTTP API (`SUNDIAL_API_ID`): an event whose
    /// `requestContext.apiId` differs or is missing is refused (403), since it cannot have come
    /// through that API. `None`: not checked (the local run, a deployment that does not set it).
    pub api_id: Option<String>,
}

/// The deployed web console's settings, set by the CDK construct from the stack's
/// JWT issuer, the console's client id and the workers' log groups. Unset: the console signs in
/// with the tenant header (local run) or, with IAM auth, says it cannot sign requests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConsoleConfig {
    /// The OIDC issuer the console signs in against (the API's JWT issuer).
    pub issuer: Option<String>,
    /// The console's OIDC client id at that issuer (a public client: code + PKCE).
    pub client_id: Option<String>,
    /// The workers' CloudWatch log groups (Logs Insights links by execution id).
    pub log_groups: Vec<String>,
}

/// Where the API takes the caller's tenant from (README "Tenancy"). Only the authorizer's
/// verified context counts, never the request itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tenancy {
    /// JWT authorizer: the claim [`ApiSettings::tenant_claim`], which the issuer must set and
    /// users must not be able to change (a Cognito group or a pre-token-generation claim, not a
    /// user-writable `custom:` attribute).
    Jwt,
    /// IAM authorizer: the tag [`ApiSettings::tenant_tag`] on the calling IAM role or user, set
    /// by whoever administers IAM. A principal without it, or from another account, is refused.
    IamPrincipalTag,
    /// IAM authorizer: the caller's account is the tenant, so every principal of an account
    /// shares (and can change) every job of that account. Only when asked for explicitly.
    IamAccount,
}

impl Tenancy {
    /// The setting's value.
    pub fn as_str(self) -> &'static str {
        match self {
            Tenancy::Jwt => "jwt",
            Tenancy::IamPrincipalTag => "iam-principal-tag",
            Tenancy::IamAccount => "iam-account",
        }
    }

    fn parse(name: &str, v: &str) -> Result<Self, ConfigError> {
        [Tenancy::Jwt, Tenancy::IamPrincipalTag, Tenancy::IamAccount]
            .into_iter()
            .find(|t| t.as_str() == v)
            .ok_or_else(|| ConfigError::Invalid {
                name: name.to_string(),
                reason: format!("{v:?} is not one of jwt, iam-principal-tag, iam-account"),
            })
    }
}

/// Per-tenant quotas: one tenant cannot crowd out the tick, the queues or the
/// account's Lambda concurrency for the others. Counted in the jobs table
/// ([`sundial_store::quota`]); exceeded is HTTP 429 with `Retry-After`. Defaults and variable
/// names: `resources.json` (`quota*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quotas {
    /// Most live (not deleted) jobs per tenant.
    pub max_jobs: u32,
    /// Shortest gap between two fires of one job (seconds); a schedule firing more often is
    /// refused (400 on `schedule.expression`).
    pub min_interval_secs: u32,
    /// Most executions a tenant creates through the API (trigger-now and backfill) per minute.
    pub api_executions_per_minute: u32,
    /// Most trigger-now calls per tenant per minute.
    pub triggers_per_minute: u32,
    /// Most executions per hour a tenant's live jobs may make together, at their peak: each
    /// job's busiest hour of fires times the executions a fire makes (itself, its shards or
    /// broadcast members, its map-reduce `maxItems`). Charged when a job is created or edited,
    /// given back when it is deleted (docs/api.md, Quotas).
    pub executions_per_hour: u32,
}

impl Default for Quotas {
    fn default() -> Self {
        let d = &Resources::get().defaults;
        Quotas {
            max_jobs: d.quota_max_jobs,
            min_interval_secs: d.quota_min_interval_secs,
            api_executions_per_minute: d.quota_api_executions_per_minute,
            triggers_per_minute: d.quota_triggers_per_minute,
            executions_per_hour: d.quota_executions_per_hour,
        }
    }
}

impl Default for ApiSettings {
    fn default() -> Self {
        ApiSettings {
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            tenant_claim: Resources::get().defaults.tenant_claim.clone(),
            tenancy: Tenancy::parse("tenancy", &Resources::get().defaults.tenancy).unwrap_or(Tenancy::Jwt),
            tenant_tag: Resources::get().defaults.tenant_tag.clone(),
            quotas: Quotas::default(),
            operator_tenants: Vec::new(),
            console: ConsoleConfig::default(),
            tenant_api_rps: Resources::get().defaults.tenant_api_rps,
            api_id: None,
        }
    }
}

impl ApiSettings {
    /// Reads the settings from the environment (the tenant claim and the quotas, set by the
    /// CDK construct).
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(process_env)
    }

    /// [`ApiSettings::from_env`] with an injected lookup.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let n = &Resources::get().env;
        let mut s = ApiSettings::default();
        if let Some(c) = get(&n.tenant_claim).filter(|c| !c.is_empty()) {
            s.tenant_claim = c;
        }
        if let Some(t) = get(&n.tenancy).filter(|t| !t.is_empty()) {
            s.tenancy = Tenancy::parse(&n.tenancy, &t)?;
        }
        if let Some(t) = get(&n.tenant_tag).filter(|t| !t.is_empty()) {
            s.tenant_tag = t;
        }
        if let Some(v) = get(&n.operator_tenants) {
            s.operator_tenants =
                v.split(',').map(str::trim).filter(|t| !t.is_empty()).map(String::from).collect();
            for t in &s.operator_tenants {
                sundial_model::keys::validate_id("tenant", t).map_err(|e| ConfigError::Invalid {
                    name: n.operator_tenants.clone(),
                    reason: e.reason,
                })?;
            }
        }
        if let Some(v) = get(&n.tenant_api_rps) {
            // 0 is allowed here: it turns the throttle off.
            s.tenant_api_rps = v.trim().parse().map_err(|_| ConfigError::Invalid {
                name: n.tenant_api_rps.clone(),
                reason: format!("{v:?} is not a whole number of requests per second (0: off)"),
            })?;
        }
        let set = |name: &str| get(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        s.api_id = set(&n.api_id);
        s.console.issuer = set(&n.console_issuer);
        s.console.client_id = set(&n.console_client_id);
        s.console.log_groups = set(&n.console_log_groups)
            .map(|v| v.split(',').map(str::trim).filter(|g| !g.is_empty()).map(str::to_string).collect())
            .unwrap_or_default();
        let q = &mut s.quotas;
        for (name, field) in [
            (&n.quota_max_jobs, &mut q.max_jobs),
            (&n.quota_min_interval_secs, &mut q.min_interval_secs),
            (&n.quota_api_executions_per_minute, &mut q.api_executions_per_minute),
            (&n.quota_triggers_per_minute, &mut q.triggers_per_minute),
            (&n.quota_executions_per_hour, &mut q.executions_per_hour),
        ] {
            if let Some(v) = get(name) {
                *field = positive(name, &v)?;
            }
        }
        Ok(s)
    }
}

/// What the local run (`sundial dev`) reads from its environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalRunSettings {
    /// The source checkout holding `localstack/` (default: the one the binary was built from).
    pub root: Option<PathBuf>,
    /// The local emulator's port, used when `AWS_ENDPOINT_URL` is unset.
    pub emulator_port: String,
}

impl LocalRunSettings {
    /// Reads the settings from the environment.
    pub fn from_env() -> Self {
        Self::from_lookup(process_env)
    }

    /// [`LocalRunSettings::from_env`] with an injected lookup.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Self {
        let r = Resources::get();
        LocalRunSettings {
            root: get(&r.env.root).map(PathBuf::from),
            emulator_port: get(&r.env.emulator_port).unwrap_or_else(|| r.defaults.emulator_port.to_string()),
        }
    }
}

/// One of a tenant's event sources (docs/events.md), declared by the CDK construct's
/// `eventSources`: the tenant is the source's, never the message's.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EventSource {
    /// The tenant whose jobs the source's events fire.
    pub tenant: String,
    /// The tenant's SQS queue (its ARN); it must carry the tag `sundial-tenant={tenant}`.
    #[serde(default)]
    pub queue_arn: Option<String>,
    /// The tenant's EventBridge bus (its name), made by the construct, whose rule sends its
    /// events to the ingest function stamped with this tenant.
    #[serde(default)]
    pub bus: Option<String>,
}

/// What the ingest function reads (beyond [`Config`], [`ApiSettings`]' quotas and
/// [`BackpressureSettings`]): the tenants' event sources.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventSourceSettings {
    /// Every declared source (`SUNDIAL_EVENT_SOURCES`, a JSON array of
    /// `{tenant, queueArn}` and `{tenant, bus}`).
    pub sources: Vec<EventSource>,
}

impl EventSourceSettings {
    /// Reads the settings from the environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(process_env)
    }

    /// [`EventSourceSettings::from_env`] with an injected lookup.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let name = &Resources::get().env.event_sources;
        let Some(v) = get(name).filter(|v| !v.trim().is_empty()) else {
            return Ok(Self::default());
        };
        let bad = |reason: String| ConfigError::Invalid { name: name.clone(), reason };
        let sources: Vec<EventSource> = serde_json::from_str(&v)
            .map_err(|e| bad(format!("not a JSON array of {{tenant, queueArn | bus}}: {e}")))?;
        for (i, s) in sources.iter().enumerate() {
            sundial_model::keys::validate_id("tenant", &s.tenant)
                .map_err(|e| bad(format!("[{i}].tenant: {}", e.reason)))?;
            if s.queue_arn.is_some() == s.bus.is_some() {
                return Err(bad(format!("[{i}]: give exactly one of queueArn and bus")));
            }
            let not_arn =
                |a: &str| sundial_model::arn::Arn::parse(a).is_none_or(|a| a.resource.contains(':'));
            if s.queue_arn.as_deref().is_some_and(not_arn) {
                return Err(bad(format!("[{i}].queueArn: not an SQS queue ARN")));
            }
        }
        // One tenant per source: a queue or bus declared for two tenants is refused, not guessed.
        for (i, s) in sources.iter().enumerate() {
            let twin = sources[..i].iter().find(|o| {
                o.tenant != s.tenant
                    && ((s.queue_arn.is_some() && o.queue_arn == s.queue_arn)
                        || (s.bus.is_some() && o.bus == s.bus))
            });
            if let Some(o) = twin {
                return Err(bad(format!(
                    "[{i}]: the same source is declared for tenants {:?} and {:?}",
                    o.tenant, s.tenant
                )));
            }
        }
        Ok(EventSourceSettings { sources })
    }

    /// The tenant of the SQS queue `arn`, if it is a declared source.
    pub fn queue_tenant(&self, arn: &str) -> Option<&str> {
        self.sources.iter().find(|s| s.queue_arn.as_deref() == Some(arn)).map(|s| s.tenant.as_str())
    }

    /// Whether `bus` is a declared source of `tenant`.
    pub fn is_bus_of(&self, bus: &str, tenant: &str) -> bool {
        self.sources.iter().any(|s| s.bus.as_deref() == Some(bus) && s.tenant == tenant)
    }

    /// The value of `SUNDIAL_EVENT_SOURCES` for these sources (the local run, the tests).
    pub fn to_env_value(&self) -> String {
        let list: Vec<serde_json::Value> = self
            .sources
            .iter()
            .map(|s| match (&s.queue_arn, &s.bus) {
                (Some(q), _) => serde_json::json!({"tenant": s.tenant, "queueArn": q}),
                (_, b) => serde_json::json!({"tenant": s.tenant, "bus": b}),
            })
            .collect();
        serde_json::Value::Array(list).to_string()
    }
}

/// `v` as a positive integer of type `T`, or [`ConfigError::Invalid`] naming the variable.
fn positive<T: std::str::FromStr + Default + PartialEq>(name: &str, v: &str) -> Result<T, ConfigError> {
    v.trim().parse::<T>().ok().filter(|n| *n != T::default()).ok_or_else(|| ConfigError::Invalid {
        name: name.to_string(),
        reason: format!("{v:?} is not a positive integer"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::collections::{BTreeSet, HashMap};
    use sundial_model::outbound::TargetPolicy;

    #[test]
    fn the_default_worker_id_is_opaque_and_unique_per_process_start() {
        // Issue 28, L1: the id is shown to tenants (`leaseOwner`, timeline actors); on Fargate
        // the host name is `ip-10-…`, a private address.
        let host = std::env::var("HOSTNAME")
            .ok()
            .or_else(|| std::fs::read_to_string("/etc/hostname").ok().map(|h| h.trim().to_string()))
            .unwrap_or_default();
        let (a, b) = (default_worker_id(), default_worker_id());
        assert!(host.is_empty() || !a.contains(&host), "{a} shows the host name {host}");
        assert_ne!(a, b, "two ids of one process differ");
        assert!(a.len() <= 40 && a.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'), "{a}");
    }

    #[test]
    fn from_lookup_names_the_missing_variable() {
        let env: HashMap<&str, &str> = [("SUNDIAL_POOLS", "default")].into();
        let err = Config::from_lookup(|k| env.get(k).map(|v| v.to_string())).unwrap_err();
        assert_eq!(err, ConfigError::Missing("SUNDIAL_JOBS_TABLE".into()));
        assert!(err.to_string().contains("SUNDIAL_JOBS_TABLE"));
    }

    #[test]
    fn local_config_round_trips_through_env() {
        let c = Config::local("t-1-", &["default", "slow"], 64);
        let env: HashMap<String, String> = c.to_env().into_iter().collect();
        assert_eq!(Config::from_lookup(|k| env.get(k).cloned()).unwrap(), c);
        assert_eq!(c.queue_name("slow"), "t-1-sundial-slow");
        assert_eq!(c.dlq_name("slow"), "t-1-sundial-slow-dlq");
    }

    #[test]
    fn the_target_policy_reads_cidrs_and_the_dev_setting_and_names_a_bad_cidr() {
        let n = &Resources::get().env;
        let mut env: HashMap<String, String> = Config::local("x-", &["a"], 8).to_env().into_iter().collect();
        let strict = Config::from_lookup(|k| env.get(k).cloned()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(strict.targets, TargetPolicy::default());
        env.insert(n.private_target_cidrs.clone(), " 10.1.0.0/16, fd12::/16 ".into());
        env.insert(n.dev_loopback_targets.clone(), "true".into());
        let c = Config::from_lookup(|k| env.get(k).cloned()).unwrap_or_else(|e| panic!("{e}"));
        assert!(c.targets.addresses.dev_loopback);
        assert_eq!(c.targets.addresses.private_cidrs.len(), 2);
        let back: HashMap<String, String> = c.to_env().into_iter().collect();
        assert_eq!(Config::from_lookup(|k| back.get(k).cloned()).ok(), Some(c));
        env.insert(n.private_target_cidrs.clone(), "10.1.0.0/16,10.2.0.0/99".into());
        let e = Config::from_lookup(|k| env.get(k).cloned()).err();
        assert!(
            matches!(e, Some(ConfigError::Invalid { ref name, .. }) if *name == n.private_target_cidrs),
            "{e:?}"
        );
    }

    #[test]
    fn tenant_target_allowlists_are_read_and_a_bad_one_is_named() {
        // Issue 15 (outbound 7): SUNDIAL_TENANT_TARGETS, per-tenant allowlists with `*` globs.
        let name = "SUNDIAL_TENANT_TARGETS";
        let mut env: HashMap<String, String> = Config::local("x-", &["a"], 8).to_env().into_iter().collect();
        env.insert(
            name.into(),
            r#"{"acme": {"lambda": ["arn:aws:lambda:*:*:function:acme-*"], "http": ["*.acme.com"]}, "*": {"http": ["*"]}}"#
                .into(),
        );
        let c = Config::from_lookup(|k| env.get(k).cloned()).unwrap_or_else(|e| panic!("{e}"));
        let tenants = c.targets.tenants.clone().unwrap_or_else(|| panic!("{name} not read"));
        assert_eq!(tenants.0.len(), 2);
        let back: HashMap<String, String> = c.to_env().into_iter().collect();
        assert_eq!(Config::from_lookup(|k| back.get(k).cloned()).ok(), Some(c));
        env.insert(name.into(), r#"{"acme": {"lamda": []}}"#.into());
        let e = Config::from_lookup(|k| env.get(k).cloned()).err();
        assert!(matches!(e, Some(ConfigError::Invalid { name: ref n, .. }) if n == name), "{e:?}");
        env.insert(name.into(), String::new());
        let c = Config::from_lookup(|k| env.get(k).cloned()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.targets.tenants, None, "empty is unset: any target the other checks accept");
    }

    #[test]
    fn bad_shard_count_and_pool_are_named() {
        let mut env: HashMap<String, String> = Config::local("x-", &["a"], 8).to_env().into_iter().collect();
        env.insert("SUNDIAL_SHARDS".into(), "zero".into());
        let e = Config::from_lookup(|k| env.get(k).cloned()).unwrap_err();
        assert!(matches!(e, ConfigError::Invalid { ref name, .. } if name == "SUNDIAL_SHARDS"));
        env.insert("SUNDIAL_SHARDS".into(), "8".into());
        env.insert("SUNDIAL_POOLS".into(), "ok,bad pool".into());
        let e = Config::from_lookup(|k| env.get(k).cloned()).unwrap_err();
        assert!(e.to_string().contains("bad pool"), "{e}");
    }

    fn lookup<'a>(env: &'a HashMap<String, String>) -> impl Fn(&str) -> Option<String> + 'a {
        |k| env.get(k).cloned()
    }

    #[test]
    fn quotas_come_from_the_environment_and_a_bad_one_names_its_variable() {
        let n = names();
        let d = ApiSettings::from_lookup(|_| None).unwrap_or_else(|e| panic!("{e}")).quotas;
        assert_eq!(
            d,
            Quotas {
                max_jobs: 10_000,
                min_interval_secs: 1,
                api_executions_per_minute: 1_000,
                triggers_per_minute: 60,
                executions_per_hour: 1_000_000
            }
        );
        let env: HashMap<String, String> = [
            (n.quota_max_jobs.clone(), "50".to_string()),
            (n.quota_min_interval_secs.clone(), "60".into()),
            (n.quota_api_executions_per_minute.clone(), "100".into()),
            (n.quota_triggers_per_minute.clone(), "5".into()),
            (n.quota_executions_per_hour.clone(), "7000".into()),
        ]
        .into();
        let q = ApiSettings::from_lookup(lookup(&env)).unwrap_or_else(|e| panic!("{e}")).quotas;
        assert_eq!(
            q,
            Quotas {
                max_jobs: 50,
                min_interval_secs: 60,
                api_executions_per_minute: 100,
                triggers_per_minute: 5,
                executions_per_hour: 7_000
            }
        );
        for bad in ["0", "-1", "many", "4294967296"] {
            let env: HashMap<String, String> =
                [(n.quota_triggers_per_minute.clone(), bad.to_string())].into();
            match ApiSettings::from_lookup(lookup(&env)) {
                Err(ConfigError::Invalid { name, .. }) => {
                    assert_eq!(name, "SUNDIAL_QUOTA_TRIGGERS_PER_MINUTE")
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
    }

    fn names() -> &'static sundial_model::resources::EnvNames {
        &Resources::get().env
    }

    #[test]
    fn worker_settings_name_the_bad_variable() {
        let n = names();
        let env: HashMap<String, String> = [(n.lease_secs.clone(), "1".into())].into();
        let e = WorkerSettings::from_lookup(lookup(&env)).err();
        assert!(matches!(e, Some(ConfigError::Invalid { ref name, .. }) if *name == n.lease_secs), "{e:?}");
        let env: HashMap<String, String> = [
            (n.lease_secs.clone(), "4".into()),
            (n.worker_id.clone(), "w1".into()),
            (n.pool.clone(), "slow".into()),
            (n.tenant_max_running.clone(), "3".into()),
        ]
        .into();
        let s = WorkerSettings::from_lookup(lookup(&env)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((s.lease_ms, s.worker_id.as_str(), s.pool.as_str()), (4_000, "w1", "slow"));
        assert_eq!(s.tenant_limits.of("any"), Some(3));
        assert_eq!(s.visibility_secs(), 6);
        let env: HashMap<String, String> = [(n.worker_capacity.clone(), "0".into())].into();
        let e = WorkerSettings::from_lookup(lookup(&env)).err();
        assert!(
            matches!(e, Some(ConfigError::Invalid { ref name, .. }) if *name == n.worker_capacity),
            "{e:?}"
        );
    }

    #[test]
    fn a_tenant_limit_the_workers_cannot_exceed_needs_no_gate() {
        let n = names();
        let env: HashMap<String, String> = [
            (n.tenant_max_running.clone(), "500,small=20,big=5000".into()),
            (n.worker_capacity.clone(), "500".into()),
        ]
        .into();
        let s = WorkerSettings::from_lookup(lookup(&env)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.worker_capacity, Some(500));
        // at or above the capacity: never refused, no gate; below it: the gate
        let stack = s.tenant_capacity(&BTreeMap::new(), "default", None);
        assert_eq!(s.tenant_gate_limit("any", stack), None);
        assert_eq!(s.tenant_gate_limit("big", stack), None);
        assert_eq!(s.tenant_gate_limit("small", stack), Some(20));
        let s = WorkerSettings { worker_capacity: Some(501), ..s };
        assert_eq!(
            s.tenant_gate_limit("any", s.tenant_capacity(&BTreeMap::new(), "default", None)),
            Some(500)
        );
    }

    #[test]
    fn a_tenant_confined_to_a_cell_of_pools_is_bounded_by_the_cells_capacity() {
        let n = names();
        let env: HashMap<String, String> = [
            (n.tenant_max_running.clone(), "500,big=2000".into()),
            (n.worker_capacity.clone(), "40000".into()),
        ]
        .into();
        let s = WorkerSettings::from_lookup(lookup(&env)).unwrap_or_else(|e| panic!("{e}"));
        let caps: BTreeMap<String, u32> =
            [("cell-1", 500), ("cell-2", 500), ("big-1", 1000), ("big-2", 1000)]
                .map(|(p, n)| (p.to_string(), n))
                .into();
        // a tenant confined to cell-1 (500 ≤ its 500): no gate, for a fire cell-1 delivered
        let cell = s.tenant_capacity(&caps, "cell-1", Some(&["cell-1"]));
        assert_eq!((cell, s.tenant_gate_limit("small", cell)), (Some(500), None));
        // the largest tenant's cell of two pools sums to its 2,000
        let big = s.tenant_capacity(&caps, "big-2", Some(&["big-1", "big-2"]));
        assert_eq!((big, s.tenant_gate_limit("big", big)), (Some(2000), None));
        // a cell of two 500 pools is more than a 500 limit: the gate
        let two = s.tenant_capacity(&caps, "cell-1", Some(&["cell-1", "cell-2"]));
        assert_eq!((two, s.tenant_gate_limit("small", two)), (Some(1000), Some(500)));
        // a delivery from outside the cell, a pool of unknown capacity, no allowlists: the
        // stack's figure, and the gate
        for c in [
            s.tenant_capacity(&caps, "cell-2", Some(&["cell-1"])),
            s.tenant_capacity(&caps, "cell-1", Some(&["cell-1", "unknown"])),
            s.tenant_capacity(&caps, "cell-1", None),
        ] {
            assert_eq!((c, s.tenant_gate_limit("small", c)), (Some(40000), Some(500)));
        }
        // the stack's figure caps a cell's
        let s = WorkerSettings { worker_capacity: Some(300), ..s };
        assert_eq!(s.tenant_capacity(&caps, "cell-1", Some(&["cell-1"])), Some(300));
    }

    #[test]
    fn unset_variables_give_the_documented_defaults() {
        let none = |_: &str| None;
        let w = WorkerSettings::from_lookup(none).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (w.pool.as_str(), w.lease_ms, w.skew_margin_ms, w.max_skew_ms),
            ("default", 30_000, 2_000, 1_000)
        );
        assert!(w.max_total_run_ms.is_none());
        // Security review 2026-12 M1: a deployment caps every tenant's running executions
        // unless told otherwise (it was unlimited when unset).
        assert_eq!(w.tenant_limits.of("t"), Some(500));
        assert_eq!(
            (
                w.worker_capacity,
                w.tenant_gate_limit("t", w.tenant_capacity(&BTreeMap::new(), "default", None))
            ),
            (None, Some(500))
        );
        assert!(!w.worker_id.is_empty());
        let t = TickSettings::from_lookup(none).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (t.in_process_max_shards, t.shards_per_scan, t.catch_up_global, t.catch_up_per_tenant),
            (256, 256, 5_000, 500)
        );
        assert!(t.scan_function.is_none());
        let e = EcsWorkerSettings::from_lookup(none).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((e.slots, e.shutdown_grace), (10, Duration::from_secs(25)));
        let a = ApiSettings::from_lookup(none).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((a.tenant_claim.as_str(), a.max_body_bytes), ("tenant", 16 * 1024));
        let l = LocalRunSettings::from_lookup(none);
        assert_eq!((l.root, l.emulator_port.as_str()), (None, "4566"));
    }

    #[test]
    fn tick_ecs_and_api_settings_read_their_variables() {
        let n = names();
        let mut env: HashMap<String, String> = [
            (n.scan_function.clone(), "scan-fn".into()),
            (n.tick_in_process_max_shards.clone(), "16".into()),
            (n.shards_per_scan.clone(), "4".into()),
            (n.catch_up_global.clone(), "10".into()),
            (n.catch_up_per_tenant.clone(), "2".into()),
            (n.worker_slots.clone(), "3".into()),
            (n.shutdown_grace_secs.clone(), "7".into()),
            (n.tenant_claim.clone(), "custom:tenant".into()),
            (n.tenancy.clone(), "iam-principal-tag".into()),
            (n.tenant_tag.clone(), "team".into()),
        ]
        .into();
        let t = TickSettings::from_lookup(lookup(&env)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.scan_function.as_deref(), Some("scan-fn"));
        assert_eq!(
            (t.in_process_max_shards, t.shards_per_scan, t.catch_up_global, t.catch_up_per_tenant),
            (16, 4, 10, 2)
        );
        let e = EcsWorkerSettings::from_lookup(lookup(&env)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((e.slots, e.shutdown_grace), (3, Duration::from_secs(7)));
        let a = ApiSettings::from_lookup(lookup(&env)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (a.tenant_claim.as_str(), a.tenancy, a.tenant_tag.as_str()),
            ("custom:tenant", Tenancy::IamPrincipalTag, "team")
        );
        assert_eq!(ApiSettings::default().tenancy, Tenancy::Jwt);
        env.insert(n.tenancy.clone(), "account".into());
        let e = ApiSettings::from_lookup(lookup(&env)).unwrap_err();
        assert!(matches!(e, ConfigError::Invalid { ref name, .. } if *name == n.tenancy), "{e:?}");
        env.insert(n.catch_up_global.clone(), "0".into());
        env.insert(n.worker_slots.clone(), "many".into());
        let e = TickSettings::from_lookup(lookup(&env)).unwrap_err();
        assert!(matches!(e, ConfigError::Invalid { ref name, .. } if *name == n.catch_up_global), "{e:?}");
        let e = EcsWorkerSettings::from_lookup(lookup(&env)).unwrap_err();
        assert!(matches!(e, ConfigError::Invalid { ref name, .. } if *name == n.worker_slots), "{e:?}");
    }

    #[test]
    fn event_sources_name_one_tenant_each_and_bad_ones_name_the_variable() {
        let n = &Resources::get().env;
        let q = "arn:aws:sqs:eu-west-1:111111111111:acme-files";
        let ok =
            format!(r#"[{{"tenant":"acme","queueArn":"{q}"}},{{"tenant":"acme","bus":"s-tenant-acme"}}]"#);
        let env = HashMap::from([(n.event_sources.clone(), ok)]);
        let s = EventSourceSettings::from_lookup(lookup(&env)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.queue_tenant(q), Some("acme"));
        assert_eq!(s.queue_tenant("arn:aws:sqs:eu-west-1:111111111111:other"), None);
        assert!(s.is_bus_of("s-tenant-acme", "acme") && !s.is_bus_of("s-tenant-acme", "globex"));
        assert_eq!(
            EventSourceSettings::from_lookup(lookup(&HashMap::from([(
                n.event_sources.clone(),
                s.to_env_value()
            )]))),
            Ok(s)
        );
        for bad in [
            "{}".to_string(),
            r#"[{"tenant":"acme"}]"#.to_string(),
            r#"[{"tenant":"a b","bus":"x"}]"#.to_string(),
            r#"[{"tenant":"acme","queueArn":"acme-files"}]"#.to_string(),
            format!(r#"[{{"tenant":"acme","queueArn":"{q}"}},{{"tenant":"globex","queueArn":"{q}"}}]"#),
        ] {
            let env = HashMap::from([(n.event_sources.clone(), bad.clone())]);
            let e = EventSourceSettings::from_lookup(lookup(&env)).err();
            assert!(
                matches!(e, Some(ConfigError::Invalid { ref name, .. }) if *name == n.event_sources),
                "{bad}: {e:?}"
            );
        }
        assert_eq!(EventSourceSettings::from_lookup(|_| None), Ok(EventSourceSettings::default()));
    }

    /// The names a loader asks for, whatever it does with them.
    fn names_read(load: impl FnOnce(&dyn Fn(&str) -> Option<String>)) -> BTreeSet<String> {
        // Valid values for the required names, so a loader never stops at the first one missing.
        let valid: HashMap<String, String> =
            Config::local("x-", &["default"], 8).to_env().into_iter().collect();
        let asked = RefCell::new(BTreeSet::new());
        let get = |k: &str| {
            asked.borrow_mut().insert(k.to_string());
            valid.get(k).cloned()
        };
        load(&get);
        asked.into_inner()
    }

    fn resources_json() -> serde_json::Value {
        serde_json::from_str(sundial_model::resources::RESOURCES_JSON).unwrap_or_else(|e| panic!("{e}"))
    }

    /// `envLoaders.{loader}.names` of resources.json, as variable names.
    fn declared(loader: &str) -> BTreeSet<String> {
        let json = resources_json();
        let names = json["envLoaders"][loader]["names"].as_array().cloned().unwrap_or_default();
        assert!(!names.is_empty(), "envLoaders.{loader} lists no names");
        names
            .iter()
            .map(|k| {
                let k = k.as_str().unwrap_or_default();
                json["env"][k]
                    .as_str()
                    .unwrap_or_else(|| panic!("envLoaders.{loader}: {k} is not in env"))
                    .to_string()
            })
            .collect()
    }

    #[test]
    fn each_loader_reads_exactly_the_names_resources_json_gives_it() {
        let cases: [(&str, BTreeSet<String>); 9] = [
            ("TenantRoleSettings", names_read(|g| drop(TenantRoleSettings::from_lookup(g)))),
            ("EventSourceSettings", names_read(|g| drop(EventSourceSettings::from_lookup(g)))),
            ("BackpressureSettings", names_read(|g| drop(BackpressureSettings::from_lookup(g)))),
            ("Config", names_read(|g| drop(Config::from_lookup(g)))),
            ("TickSettings", names_read(|g| drop(TickSettings::from_lookup(g)))),
            ("WorkerSettings", names_read(|g| drop(WorkerSettings::from_lookup(g)))),
            ("EcsWorkerSettings", names_read(|g| drop(EcsWorkerSettings::from_lookup(g)))),
            ("ApiSettings", names_read(|g| drop(ApiSettings::from_lookup(g)))),
            ("LocalRunSettings", names_read(|g| drop(LocalRunSettings::from_lookup(g)))),
        ];
        for (loader, read) in cases {
            assert_eq!(
                read,
                declared(loader),
                "{loader} reads other names than resources.json's envLoaders.{loader}"
            );
        }
    }

    #[test]
    fn every_env_name_has_exactly_one_loader() {
        let json = resources_json();
        let loaders = json["envLoaders"].as_object().cloned().unwrap_or_default();
        let mut seen: HashMap<String, String> = HashMap::new();
        for loader in loaders.keys().filter(|k| !k.starts_with('$')) {
            for name in declared(loader) {
                if let Some(other) = seen.insert(name.clone(), loader.clone()) {
                    panic!("{name} is listed under both {other} and {loader}");
                }
            }
        }
        let env: BTreeSet<String> = json["env"]
            .as_object()
            .map(|m| m.values().filter_map(|v| v.as_str().map(str::to_string)).collect())
            .unwrap_or_default();
        assert_eq!(
            env,
            seen.keys().cloned().collect::<BTreeSet<_>>(),
            "env names without a loader, or the reverse"
        );
        for k in
            json["defaults"].as_object().map(|m| m.keys().cloned().collect::<Vec<_>>()).unwrap_or_default()
        {
            assert!(
                k.starts_with('$') || k == "horizonSeconds" || json["env"].get(&k).is_some(),
                "defaults.{k} names no setting"
            );
        }
    }

    #[test]
    fn the_readme_settings_table_has_one_row_per_variable() {
        let readme = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
        let text = std::fs::read_to_string(&readme).unwrap_or_else(|e| panic!("{}: {e}", readme.display()));
        let section = text.split("\n## Settings\n").nth(1).unwrap_or_default();
        let section = section.split("\n## ").next().unwrap_or_default();
        let mut rows: Vec<String> = section
            .lines()
            .filter_map(|l| l.strip_prefix("| `SUNDIAL_"))
            .filter_map(|l| l.split('`').next().map(|n| format!("SUNDIAL_{n}")))
            .collect();
        rows.sort();
        let json = resources_json();
        let mut env: Vec<String> = json["env"]
            .as_object()
            .map(|m| m.values().filter_map(|v| v.as_str().map(str::to_string)).collect())
            .unwrap_or_default();
        env.sort();
        assert_eq!(rows, env, "README.md \"Settings\" must have exactly one row per resources.json env name");
    }

    /// The product's sources (not tests, benches or the chaos tools): no `SUNDIAL_` variable
    /// name outside this loader, so nothing reads a setting behind its back.
    #[test]
    fn no_product_source_names_a_setting_outside_the_loader() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut offenders = Vec::new();
        for krate in [
            "hash", "schedule", "model", "store", "capacity", "core", "tick", "worker", "api", "cli",
            "client",
        ] {
            let mut dirs = vec![root.join(krate).join("src")];
            while let Some(dir) = dirs.pop() {
                for entry in
                    std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())).flatten()
                {
                    let path = entry.path();
                    if path.is_dir() {
                        dirs.push(path);
                    } else if path.extension().is_some_and(|e| e == "rs")
                        && !path.ends_with("core/src/config.rs")
                        && !path.ends_with("store/src/config.rs")
                        // The ECS target writes `SUNDIAL_*` variables into a task's environment:
                        // names it gives the tenant's container, not settings it reads.
                        && !path.ends_with("core/src/execution/target/ecs.rs")
                    {
                        let text = std::fs::read_to_string(&path).unwrap_or_default();
                        for (i, line) in text.lines().enumerate() {
                            if line.contains("\"SUNDIAL_") {
                                offenders.push(format!("{}:{}: {}", path.display(), i + 1, line.trim()));
                            }
                        }
                    }
                }
            }
        }
        assert!(
            offenders.is_empty(),
            "settings must be read through sundial_core::config:\n{}",
            offenders.join("\n")
        );
    }
}
