//! The one definition of Sundial's AWS resources.
//!
//! `resources.json` (next to this crate's `Cargo.toml`) is compiled in here and read by the CDK
//! construct in `infra/`; both sides test against it, so table names, keys, indexes, queue names
//! and env variable names cannot drift between the code and the deployment.

use serde::Deserialize;
use std::sync::OnceLock;

/// The raw JSON, as shipped in this crate.
pub const RESOURCES_JSON: &str = include_str!("../resources.json");

/// The parsed resource definition.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resources {
    /// Tables by logical name (`jobs`, `executions`).
    pub tables: std::collections::BTreeMap<String, TableDef>,
    /// Per-pool queue naming and settings.
    pub queues: QueueDefs,
    /// Env variable names by logical name.
    pub env: EnvNames,
    /// Defaults for deploy-time settings.
    pub defaults: Defaults,
    /// The EMF metric catalogue.
    pub metrics: MetricDefs,
}

/// Every metric the functions emit.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MetricDefs {
    /// CloudWatch namespace.
    pub namespace: String,
    /// The per-pool dimension's name.
    pub pool_dimension: String,
    /// The per-resource dimension's name (resource limits, `docs/resources.md`).
    pub resource_dimension: String,
    /// Metric names by logical name.
    pub names: std::collections::BTreeMap<String, String>,
}

impl MetricDefs {
    /// Whether `name` is in the catalogue.
    pub fn knows(&self, name: &str) -> bool {
        self.names.values().any(|n| n == name)
    }
}

/// A DynamoDB table.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TableDef {
    /// The env variable that carries the deployed table name.
    pub env_var: String,
    /// The name used when that variable is unset (local runs).
    pub default_name: String,
    /// Partition key.
    pub partition_key: KeyAttr,
    /// Sort key.
    pub sort_key: KeyAttr,
    /// The TTL attribute (epoch seconds) for retention.
    pub ttl_attribute: String,
    /// Global secondary indexes.
    pub indexes: Vec<IndexDef>,
}

/// A key attribute.
#[derive(Debug, Clone, Deserialize)]
pub struct KeyAttr {
    /// Attribute name.
    pub name: String,
    /// `S` or `N`.
    #[serde(rename = "type")]
    pub kind: String,
}

/// A global secondary index.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexDef {
    /// Index name.
    pub name: String,
    /// Partition key.
    pub partition_key: KeyAttr,
    /// Sort key.
    pub sort_key: KeyAttr,
    /// `ALL` or `KEYS_ONLY`.
    pub projection: String,
}

/// Queue naming: a pool `p` has queue `{prefix}{p}` and DLQ `{prefix}{p}{dlq_suffix}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueDefs {
    /// Env variable carrying the prefix.
    pub name_prefix_env_var: String,
    /// Prefix used when the variable is unset.
    pub default_prefix: String,
    /// Suffix of each pool's dead-letter queue.
    pub dlq_suffix: String,
    /// Suffix of each pool's outcome-notification queue `{prefix}{p}{notify_suffix}`
    /// (docs/outcomes.md, "HTTPS notifications").
    pub notify_suffix: String,
    /// Receives before SQS moves a message to the DLQ (a backstop: Sundial's own retry budget
    /// sends DEAD executions there first).
    pub max_receive_count: u32,
    /// Retention of both queues.
    pub message_retention_seconds: u32,
    /// Default visibility timeout of pool queues.
    pub visibility_timeout_seconds: u32,
    /// Pools created when none are configured.
    pub default_pools: Vec<String>,
}

/// Env variable names, by logical name. Only [`crate::config`] reads them; `envLoaders` in the
/// JSON says which loader reads which name, and README.md "Settings" documents each one.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EnvNames {
    /// Jobs table name.
    pub jobs_table: String,
    /// Executions table name.
    pub executions_table: String,
    /// Queue name prefix.
    pub queue_prefix: String,
    /// Comma-separated pool names.
    pub pools: String,
    /// Logical shard count.
    pub shards: String,
    /// Name of the scan function the tick fans out to.
    pub scan_function: String,
    /// The tick scans in-process up to this many shards.
    pub tick_in_process_max_shards: String,
    /// Shards per fanned-out scan invocation.
    pub shards_per_scan: String,
    /// Missed-fire executions per tick, all tenants.
    pub catch_up_global: String,
    /// Missed-fire executions per tick per tenant.
    pub catch_up_per_tenant: String,
    /// Whether the tick sets `MessageGroupId` = tenant (SQS fair queues).
    pub fair_queues: String,
    /// The pool a worker serves.
    pub pool: String,
    /// Lease owner id of a worker process.
    pub worker_id: String,
    /// Lease length in seconds.
    pub lease_secs: String,
    /// Extra time after a lease's end before another worker may take it over (ms).
    pub skew_margin_ms: String,
    /// Run time budget across attempts (s).
    pub max_total_run_secs: String,
    /// Per-tenant running limits.
    pub tenant_max_running: String,
    /// The most executions all the stack's workers can run at once (worker).
    pub worker_capacity: String,
    /// The deployment's secret key for ECS run names (worker).
    pub run_name_key: String,
    /// The most executions each pool's workers can run at once, `pool=n,…` (worker).
    pub pool_capacity: String,
    /// The stack's tenant access role, assumed with the tenant's session tag for every outbound
    /// call (worker).
    pub tenant_role_arn: String,
    /// Tenants with a role of their own (JSON tenant → role ARN) (worker).
    pub tenant_roles: String,
    /// Dev only: webhooks may reach loopback over plain `http://` (never set by the CDK).
    pub dev_loopback_targets: String,
    /// Private networks webhooks may reach (comma-separated CIDRs).
    pub private_target_cidrs: String,
    /// Per-tenant target allowlists (JSON).
    pub tenant_targets: String,
    /// Sundial's own Lambda functions, which no job may target (comma-separated globs).
    pub own_functions: String,
    /// The deployment's account id (completes bare function names into ARNs).
    pub account_id: String,
    /// The EventBridge bus `FireMissed` events go to (unset: no events).
    pub event_bus: String,
    /// Concurrent executions of one ECS worker.
    pub worker_slots: String,
    /// Dev and test only: the ECS worker registers its diagnostic handlers (`sleep`, `count`).
    pub diagnostic_handlers: String,
    /// Seconds an ECS worker keeps finishing work after SIGTERM.
    pub shutdown_grace_secs: String,
    /// The JWT claim that carries the tenant (api).
    pub tenant_claim: String,
    /// Where the tenant comes from: `jwt`, `iam-principal-tag` or `iam-account` (api).
    pub tenancy: String,
    /// The IAM tag that names a principal's tenant in `iam-principal-tag` tenancy (api).
    pub tenant_tag: String,
    /// Live jobs per tenant (api).
    pub quota_max_jobs: String,
    /// Shortest interval between two fires of a job, seconds (api).
    pub quota_min_interval_secs: String,
    /// Executions created through the API per tenant per minute (api).
    pub quota_api_executions_per_minute: String,
    /// Trigger-now calls per tenant per minute (api).
    pub quota_triggers_per_minute: String,
    /// Executions per hour a tenant's live jobs may make at most, fan-out and map-reduce items
    /// included (api).
    pub quota_executions_per_hour: String,
    /// Tenants whose callers are platform operators: they set resource limits (api).
    pub operator_tenants: String,
    /// Requests per second one tenant may make to the API; 0: no per-tenant throttle (api).
    pub tenant_api_rps: String,
    /// The id of the stack's API Gateway HTTP API: events naming another (or none) are refused
    /// (api; unset: not checked).
    pub api_id: String,
    /// Lane depth from which the tick defers low-priority fires (tick, api).
    pub backpressure_defer_depth: String,
    /// How long a deferred fire's message is held, seconds (tick, api).
    pub backpressure_defer_secs: String,
    /// Lane depth from which the API refuses new work for the lane (tick, api).
    pub backpressure_saturated_depth: String,
    /// The web console's OIDC issuer.
    pub console_issuer: String,
    /// The web console's OIDC client id.
    pub console_client_id: String,
    /// The workers' log groups, for the console's Logs Insights links.
    pub console_log_groups: String,
    /// The API's base URL (`sundial` CLI).
    pub api_url: String,
    /// Bearer token for the deployed API (`sundial` CLI).
    pub token: String,
    /// Tenant for the local run's API (`sundial` CLI).
    pub tenant: String,
    /// How the CLI authenticates: `none`, `jwt` or `iam` (`sundial` CLI).
    pub auth: String,
    /// The source checkout the local run starts the emulator from (`sundial dev`).
    pub root: String,
    /// Port of the local emulator (`sundial dev`, when `AWS_ENDPOINT_URL` is unset).
    pub emulator_port: String,
    /// The tenants' event sources the ingest function takes events from (JSON, set by the CDK
    /// from `eventSources`; ingest).
    pub event_sources: String,
}

/// Defaults of the settings in [`EnvNames`] (same logical names) and of deploy-time choices.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Defaults {
    /// Logical shard count.
    pub shards: u32,
    /// How far ahead of now the tick queues fires.
    pub horizon_seconds: u32,
    /// The tick scans in-process up to this many shards.
    pub tick_in_process_max_shards: u32,
    /// Shards per fanned-out scan invocation.
    pub shards_per_scan: u32,
    /// Missed-fire executions per tick, all tenants.
    pub catch_up_global: u64,
    /// Missed-fire executions per tick per tenant.
    pub catch_up_per_tenant: u64,
    /// SQS fair queues (`MessageGroupId` = tenant) on the tick's sends.
    pub fair_queues: bool,
    /// The pool a worker serves.
    pub pool: String,
    /// Lease length in seconds.
    pub lease_secs: i64,
    /// Takeover margin after a lease's end (ms).
    pub skew_margin_ms: i64,
    /// Dev only: webhooks may reach loopback over plain `http://`.
    pub dev_loopback_targets: bool,
    /// Concurrent executions of one ECS worker.
    pub worker_slots: u64,
    /// Seconds an ECS worker keeps finishing work after SIGTERM.
    pub shutdown_grace_secs: u64,
    /// The JWT claim that carries the tenant.
    pub tenant_claim: String,
    /// Where the tenant comes from.
    pub tenancy: String,
    /// The IAM tag that names a principal's tenant.
    pub tenant_tag: String,
    /// Live jobs per tenant.
    pub quota_max_jobs: u32,
    /// Shortest interval between two fires of a job (seconds).
    pub quota_min_interval_secs: u32,
    /// Executions created through the API per tenant per minute.
    pub quota_api_executions_per_minute: u32,
    /// Trigger-now calls per tenant per minute.
    pub quota_triggers_per_minute: u32,
    /// Default of `quotaExecutionsPerHour`.
    pub quota_executions_per_hour: u32,
    /// Running executions per tenant when `tenantMaxRunning` is unset.
    pub tenant_max_running: u32,
    /// Requests per second one tenant may make to the API (0: unthrottled).
    pub tenant_api_rps: u32,
    /// Lane depth from which the tick defers low-priority fires.
    pub backpressure_defer_depth: u64,
    /// How long a deferred fire's message is held (seconds).
    pub backpressure_defer_secs: u32,
    /// Lane depth from which the API refuses new work for the lane.
    pub backpressure_saturated_depth: u64,
    /// The API's base URL for the CLI (the local run's).
    pub api_url: String,
    /// Port of the local emulator.
    pub emulator_port: u16,
}

impl Resources {
    /// The compiled-in definition.
    pub fn get() -> &'static Resources {
        static PARSED: OnceLock<Resources> = OnceLock::new();
        PARSED.get_or_init(|| {
            // The JSON is part of the binary and covered by a unit test, so this cannot fail at
            // run time unless the build itself is broken.
            serde_json::from_str(RESOURCES_JSON).expect("resources.json is valid (unit-tested)")
        })
    }

    /// The jobs table definition.
    pub fn jobs(&self) -> &TableDef {
        &self.tables["jobs"]
    }

    /// The executions table definition.
    pub fn executions(&self) -> &TableDef {
        &self.tables["executions"]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_json_parses_and_names_both_tables() {
        let r: Resources = serde_json::from_str(RESOURCES_JSON).unwrap();
        assert_eq!(r.jobs().partition_key.name, "pk");
        assert!(r.jobs().indexes.iter().any(|i| i.name == "due"));
        assert!(r.executions().indexes.iter().any(|i| i.name == "attention"));
        assert_eq!(r.env.jobs_table, r.jobs().env_var);
        assert_eq!(r.env.executions_table, r.executions().env_var);
    }
}
