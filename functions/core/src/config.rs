//! Runtime configuration, read once in each `main`.
//!
//! On AWS every variable is set by the CDK construct (`infra/lib/sundial-scheduler.ts`, from the
//! names in `resources.json`). Locally, `sundial` and the tests use [`Config::local`], which
//! derives every name from one prefix so parallel tests never share a table or a queue.

use crate::resources::Resources;
use std::env;

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
        Self::from_lookup(|k| env::var(k).ok())
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
            pools,
            shards,
            horizon_secs: r.defaults.horizon_seconds,
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
        }
    }

    /// The environment that makes [`Config::from_env`] return this configuration.
    pub fn to_env(&self) -> Vec<(String, String)> {
        let r = Resources::get();
        vec![
            (r.env.jobs_table.clone(), self.jobs_table.clone()),
            (r.env.executions_table.clone(), self.executions_table.clone()),
            (r.env.queue_prefix.clone(), self.queue_prefix.clone()),
            (r.env.pools.clone(), self.pools.join(",")),
            (r.env.shards.clone(), self.shards.to_string()),
        ]
    }

    /// Queue name of a pool.
    pub fn queue_name(&self, pool: &str) -> String {
        format!("{}{pool}", self.queue_prefix)
    }

    /// Dead-letter queue name of a pool.
    pub fn dlq_name(&self, pool: &str) -> String {
        format!("{}{pool}{}", self.queue_prefix, Resources::get().queues.dlq_suffix)
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
}
