//! [`Config`]: the names and settings every Sundial function needs (tables, queue prefix,
//! pools, shards, target policy, event bus), read from the environment by the names in
//! `resources.json` (the CDK construct, `infra/lib/sundial-scheduler.ts`, sets them). The
//! planes' own settings (tick, worker, API) are read by `sundial_core::config`, which
//! re-exports this.

use std::collections::BTreeMap;
use sundial_model::outbound::{AddressPolicy, Cidr, Home, TargetPolicy, TenantTargets};
use sundial_model::resources::Resources;

/// The process environment (the default lookup of every loader).
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Names and settings every Sundial function needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The jobs table (definitions, versions, shard watermarks).
    pub jobs_table: String,
    /// The executions table.
    pub executions_table: String,
    /// Prefix of every pool queue name: pool `p` is `{queue_prefix}{p}`.
    pub queue_prefix: String,
    /// Worker pools; each has a queue and a DLQ.
    pub pools: Vec<String>,
    /// Logical shard count (hash(job) mod shards). Much larger than any number of scanners.
    pub shards: u32,
    /// How far past now the tick queues fires (SQS DelaySeconds carries them to their second).
    pub horizon_secs: u32,
    /// What jobs may call: judged by the control plane at create and edit, and by the worker
    /// before every call (see [`sundial_model::outbound`]).
    pub targets: TargetPolicy,
    /// The EventBridge bus that receives `FireMissed` events (the stack's own bus, created by
    /// the CDK construct); `None`: misses are still logged and counted, but no event is sent.
    pub event_bus: Option<String>,
    /// Set `MessageGroupId` = tenant on every send to a pool queue, by every function (tick,
    /// scan, workers, api): SQS fair queues then keep one tenant's backlog from delaying
    /// another's (`SUNDIAL_FAIR_QUEUES`, default true).
    pub fair_queues: bool,
    /// The most executions each pool's workers can run at once (`SUNDIAL_POOL_CAPACITY`,
    /// `pool=n,…`, derived by the CDK from each pool's event sources or tasks): the workers
    /// skip the running gate of a tenant confined to pools it cannot outrun (tenant cells,
    /// docs/capacity.md), and `GET /v1/pools` measures saturation against it. Empty: unknown.
    pub pool_capacity: BTreeMap<String, u32>,
}

impl<'a> From<&'a Config> for sundial_model::Deployment<'a> {
    fn from(c: &'a Config) -> Self {
        sundial_model::Deployment {
            pools: &c.pools,
            shards: c.shards,
            queue_prefix: &c.queue_prefix,
            targets: &c.targets,
        }
    }
}

/// A missing or malformed configuration variable.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    /// A required variable is not set.
    #[error("environment variable {0} is not set (the CDK construct sets it; locally use `sundial` or localstack/env.sh)")]
    Missing(String),
    /// A variable is set but not valid.
    #[error("environment variable {name} is invalid: {reason}")]
    Invalid {
        /// The variable.
        name: String,
        /// Why.
        reason: String,
    },
}

impl Config {
    /// Reads the configuration from the environment, naming the first missing variable.
    pub fn from_env() -> Result<Self, ConfigError> {
        let mut cfg = Self::from_lookup(process_env)?;
        cfg.targets.home.region = runtime_region(process_env);
        Ok(cfg)
    }

    /// Same as [`Config::from_env`] with an injected lookup (testable without touching the
    /// process environment).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let r = Resources::get();
        let need = |name: &str| {
            get(name).filter(|v| !v.is_empty()).ok_or_else(|| ConfigError::Missing(name.to_string()))
        };
        let pools: Vec<String> =
            need(&r.env.pools)?.split(',').map(|p| p.trim().to_string()).filter(|p| !p.is_empty()).collect();
        if pools.is_empty() {
            return Err(ConfigError::Invalid { name: r.env.pools.clone(), reason: "no pool names".into() });
        }
        for p in &pools {
            validate_pool_name(p)
                .map_err(|reason| ConfigError::Invalid { name: r.env.pools.clone(), reason })?;
        }
        let shards = match get(&r.env.shards) {
            None => r.defaults.shards,
            Some(v) => v.parse::<u32>().ok().filter(|n| (1..=65_536).contains(n)).ok_or_else(|| {
                ConfigError::Invalid {
                    name: r.env.shards.clone(),
                    reason: format!("{v:?} is not a shard count between 1 and 65536"),
                }
            })?,
        };
        Ok(Config {
            jobs_table: need(&r.jobs().env_var)?,
            executions_table: need(&r.executions().env_var)?,
            queue_prefix: need(&r.queues.name_prefix_env_var)?,
            shards,
            horizon_secs: r.defaults.horizon_seconds,
            targets: target_policy(&get)?,
            event_bus: get(&r.env.event_bus).filter(|v| !v.is_empty()),
            fair_queues: flag(&r.env.fair_queues, get(&r.env.fair_queues).as_deref())?
                .unwrap_or(r.defaults.fair_queues),
            pool_capacity: parse_pool_capacity(&get(&r.env.pool_capacity).unwrap_or_default(), &pools)
                .map_err(|reason| ConfigError::Invalid { name: r.env.pool_capacity.clone(), reason })?,
            pools,
        })
    }

    /// A local configuration whose every name starts with `prefix` (e.g. `t-3f2a-`).
    pub fn local(prefix: &str, pools: &[&str], shards: u32) -> Self {
        let r = Resources::get();
        Config {
            jobs_table: format!("{prefix}{}", r.jobs().default_name),
            executions_table: format!("{prefix}{}", r.executions().default_name),
            queue_prefix: format!("{prefix}{}", r.queues.default_prefix),
            pools: pools.iter().map(|p| p.to_string()).collect(),
            shards,
            horizon_secs: r.defaults.horizon_seconds,
            targets: TargetPolicy::default(),
            event_bus: None,
            fair_queues: r.defaults.fair_queues,
            pool_capacity: BTreeMap::new(),
        }
    }

    /// The environment that makes [`Config::from_env`] return this configuration.
    pub fn to_env(&self) -> Vec<(String, String)> {
        let r = Resources::get();
        let mut env = vec![
            (r.env.jobs_table.clone(), self.jobs_table.clone()),
            (r.env.executions_table.clone(), self.executions_table.clone()),
            (r.env.queue_prefix.clone(), self.queue_prefix.clone()),
            (r.env.pools.clone(), self.pools.join(",")),
            (r.env.shards.clone(), self.shards.to_string()),
        ];
        // The target policy only where it differs from the default (unset): `cargo lambda
        // watch` refuses a variable with an empty value.
        let t = &self.targets;
        if t.addresses.dev_loopback {
            env.push((r.env.dev_loopback_targets.clone(), "true".into()));
        }
        if !t.addresses.private_cidrs.is_empty() {
            let cidrs: Vec<String> = t.addresses.private_cidrs.iter().map(|c| c.to_string()).collect();
            env.push((r.env.private_target_cidrs.clone(), cidrs.join(",")));
        }
        if let Some(tenants) = &t.tenants {
            env.push((r.env.tenant_targets.clone(), tenants.to_json()));
        }
        if !t.own_functions.is_empty() {
            env.push((r.env.own_functions.clone(), t.own_functions.join(",")));
        }
        if let Some(account) = &t.home.account {
            env.push((r.env.account_id.clone(), account.clone()));
        }
        if !self.fair_queues {
            env.push((r.env.fair_queues.clone(), "false".into()));
        }
        if let Some(bus) = &self.event_bus {
            env.push((r.env.event_bus.clone(), bus.clone()));
        }
        if !self.pool_capacity.is_empty() {
            let v: Vec<String> = self.pool_capacity.iter().map(|(p, n)| format!("{p}={n}")).collect();
            env.push((r.env.pool_capacity.clone(), v.join(",")));
        }
        env
    }

    /// Queue name of a pool.
    pub fn queue_name(&self, pool: &str) -> String {
        sundial_model::Deployment::from(self).queue_name(pool)
    }

    /// Queue name of one of a pool's lanes: the pool queue, or its low lane
    /// `{prefix}{pool}-low` (docs/priority.md).
    pub fn lane_queue_name(&self, pool: &str, lane: sundial_model::priority::Lane) -> String {
        sundial_model::Deployment::from(self).lane_queue_name(pool, lane)
    }

    /// Outcome-notification queue name of a pool (docs/outcomes.md).
    pub fn notify_queue_name(&self, pool: &str) -> String {
        sundial_model::Deployment::from(self).notify_queue_name(pool)
    }

    /// Dead-letter queue name of a pool.
    pub fn dlq_name(&self, pool: &str) -> String {
        sundial_model::Deployment::from(self).dlq_name(pool)
    }
}

/// `pool=n,…` (spaces around either allowed; empty is none): each pool's capacity, 1 or more,
/// for pools of `pools` only.
pub fn parse_pool_capacity(v: &str, pools: &[String]) -> Result<BTreeMap<String, u32>, String> {
    let mut out = BTreeMap::new();
    for part in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (pool, n) = part.split_once('=').ok_or_else(|| format!("{part:?} is not pool=capacity"))?;
        let pool = pool.trim();
        if pool.is_empty() {
            return Err(format!("{part:?} names no pool"));
        }
        if !pools.iter().any(|p| p == pool) {
            return Err(format!("pool {pool:?} is not one of the deployment's pools ({})", pools.join(", ")));
        }
        let n =
            n.trim().parse::<u32>().ok().filter(|n| *n >= 1).ok_or_else(|| {
                format!("pool {pool:?}: {:?} is not an integer in 1..={}", n.trim(), u32::MAX)
            })?;
        if out.insert(pool.to_string(), n).is_some() {
            return Err(format!("pool {pool:?} is given twice"));
        }
    }
    Ok(out)
}

/// The target policy's settings (part of [`Config`]: the control plane judges targets at create
/// with the same policy the worker applies at every call). The CDK construct sets
/// `SUNDIAL_PRIVATE_TARGET_CIDRS` and `SUNDIAL_TENANT_TARGETS` from its `privateTargetCidrs` and
/// `tenantTargets` props, `SUNDIAL_OWN_FUNCTIONS` from its own functions' names and
/// `SUNDIAL_ACCOUNT_ID` from the stack's account, and never sets `SUNDIAL_DEV_LOOPBACK_TARGETS`
/// (the local run and the tests do). The region is the runtime's ([`Config::from_env`]).
fn target_policy(get: &impl Fn(&str) -> Option<String>) -> Result<TargetPolicy, ConfigError> {
    let n = &Resources::get().env;
    let dev_loopback = get(&n.dev_loopback_targets)
        .map(|v| matches!(v.to_ascii_lowercase().as_str(), "true" | "1" | "yes"))
        .unwrap_or(Resources::get().defaults.dev_loopback_targets);
    let private_cidrs = get(&n.private_target_cidrs)
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(Cidr::parse)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|reason| ConfigError::Invalid { name: n.private_target_cidrs.clone(), reason })?;
    // Empty is unset (the CDK sets every name, empty when its prop is not given).
    let tenants = get(&n.tenant_targets)
        .filter(|v| !v.trim().is_empty())
        .map(|v| TenantTargets::parse(&v))
        .transpose()
        .map_err(|reason| ConfigError::Invalid { name: n.tenant_targets.clone(), reason })?;
    let account = get(&n.account_id).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
    if let Some(a) = &account {
        if a.len() != 12 || !a.bytes().all(|b| b.is_ascii_digit()) {
            return Err(ConfigError::Invalid {
                name: n.account_id.clone(),
                reason: format!("{a:?} is not a 12-digit account id"),
            });
        }
    }
    let own_functions = get(&n.own_functions)
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|f| !f.is_empty())
        .map(str::to_string)
        .collect();
    Ok(TargetPolicy {
        addresses: AddressPolicy { private_cidrs, dev_loopback },
        tenants,
        home: Home { region: None, account },
        own_functions,
    })
}

/// The region the runtime runs in: `AWS_REGION` (Lambda sets it, and so does ECS), else
/// `AWS_DEFAULT_REGION`. These are the runtime's own variables, not Sundial settings (the CDK
/// cannot set them on a Lambda function), so only [`Config::from_env`] reads them.
fn runtime_region(get: impl Fn(&str) -> Option<String>) -> Option<String> {
    ["AWS_REGION", "AWS_DEFAULT_REGION"].into_iter().find_map(|n| get(n).filter(|r| !r.trim().is_empty()))
}

/// A true/false setting (`true`/`1`/`yes`, `false`/`0`/`no`, any case); unset or empty: `None`.
pub fn flag(name: &str, value: Option<&str>) -> Result<Option<bool>, ConfigError> {
    match value.map(str::trim).filter(|v| !v.is_empty()).map(str::to_ascii_lowercase).as_deref() {
        None => Ok(None),
        Some("true" | "1" | "yes") => Ok(Some(true)),
        Some("false" | "0" | "no") => Ok(Some(false)),
        Some(v) => {
            Err(ConfigError::Invalid { name: name.into(), reason: format!("{v:?} is not true or false") })
        }
    }
}

/// Pool names become queue names: SQS allows 80 characters of `[A-Za-z0-9_-]`.
pub fn validate_pool_name(p: &str) -> Result<(), String> {
    if p.is_empty() || p.len() > 40 || !p.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        return Err(format!("pool name {p:?} must be 1-40 characters of A-Z, a-z, 0-9, '-' or '_'"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(cfg: &Config) -> HashMap<String, String> {
        cfg.to_env().into_iter().collect()
    }

    #[test]
    fn pool_capacities_are_read_checked_against_the_pools_and_round_trip() {
        let n = &Resources::get().env;
        let mut env = env_of(&Config::local("x-", &["default", "cell-b"], 8));
        env.insert(n.pool_capacity.clone(), " default=120, cell-b = 4 ".into());
        let c = Config::from_lookup(|k| env.get(k).cloned()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.pool_capacity, [("cell-b".to_string(), 4), ("default".to_string(), 120)].into());
        assert_eq!(env_of(&c).get(&n.pool_capacity).map(String::as_str), Some("cell-b=4,default=120"));
        for (v, says) in [
            ("default=0", "\"default\""),
            ("default", "not pool=capacity"),
            ("=5", "names no pool"),
            ("default=1,default=2", "given twice"),
            ("default=x", "\"default\""),
            ("other=5", "not one of the deployment's pools"),
        ] {
            env.insert(n.pool_capacity.clone(), v.into());
            match Config::from_lookup(|k| env.get(k).cloned()) {
                Err(ConfigError::Invalid { name, reason }) => {
                    assert_eq!(name, n.pool_capacity);
                    assert!(reason.contains(says), "{v}: {reason}");
                }
                other => panic!("{v}: {other:?}"),
            }
        }
    }

    #[test]
    fn own_functions_and_the_account_are_read_and_round_trip() {
        // GIVEN the variables the CDK sets for Sundial's own functions and the stack's account
        let n = &Resources::get().env;
        let mut env = env_of(&Config::local("x-", &["a"], 8));
        env.insert(
            n.own_functions.clone(),
            " acme-sundial-*, arn:aws:lambda:*:123456789012:function:ops-* ,".into(),
        );
        env.insert(n.account_id.clone(), "123456789012".into());
        // WHEN the configuration is read
        let c = Config::from_lookup(|k| env.get(k).cloned()).unwrap_or_else(|e| panic!("{e}"));
        // THEN both are in the target policy, and `to_env` carries them to another process
        assert_eq!(
            c.targets.own_functions,
            ["acme-sundial-*", "arn:aws:lambda:*:123456789012:function:ops-*"]
        );
        assert_eq!(c.targets.home.account.as_deref(), Some("123456789012"));
        assert_eq!(c.targets.home.region, None, "the region is the runtime's, not a setting");
        let back = env_of(&c);
        assert_eq!(Config::from_lookup(|k| back.get(k).cloned()).ok(), Some(c));
    }

    #[test]
    fn a_bad_account_id_is_named() {
        let n = &Resources::get().env;
        let mut env = env_of(&Config::local("x-", &["a"], 8));
        env.insert(n.account_id.clone(), "12345".into());
        let e = Config::from_lookup(|k| env.get(k).cloned()).err();
        assert!(matches!(e, Some(ConfigError::Invalid { ref name, .. }) if *name == n.account_id), "{e:?}");
    }

    #[test]
    fn fair_queue_groups_are_on_unless_turned_off_for_every_function() {
        let n = &Resources::get().env;
        let base = env_of(&Config::local("x-", &["a"], 8));
        assert!(Config::from_lookup(|k| base.get(k).cloned()).is_ok_and(|c| c.fair_queues));
        let mut env = base.clone();
        env.insert(n.fair_queues.clone(), "false".into());
        let off = Config::from_lookup(|k| env.get(k).cloned()).unwrap_or_else(|e| panic!("{e}"));
        assert!(!off.fair_queues);
        let back = env_of(&off);
        assert_eq!(Config::from_lookup(|k| back.get(k).cloned()).ok(), Some(off));
        env.insert(n.fair_queues.clone(), "maybe".into());
        let e = Config::from_lookup(|k| env.get(k).cloned()).err();
        assert!(matches!(e, Some(ConfigError::Invalid { ref name, .. }) if *name == n.fair_queues), "{e:?}");
    }

    #[test]
    fn the_region_is_the_runtimes() {
        let env: HashMap<&str, &str> = [("AWS_DEFAULT_REGION", "eu-west-1")].into();
        assert_eq!(runtime_region(|k| env.get(k).map(|v| v.to_string())).as_deref(), Some("eu-west-1"));
        let env: HashMap<&str, &str> =
            [("AWS_REGION", "us-east-2"), ("AWS_DEFAULT_REGION", "eu-west-1")].into();
        assert_eq!(runtime_region(|k| env.get(k).map(|v| v.to_string())).as_deref(), Some("us-east-2"));
        assert_eq!(runtime_region(|_| Some(String::new())), None);
    }
}
