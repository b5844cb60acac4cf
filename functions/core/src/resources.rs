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

/// Env variable names.
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
    /// The pool a worker serves.
    pub pool: String,
    /// Whether webhook targets may be private addresses.
    pub allow_private_targets: String,
}

/// Deploy-time defaults.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Defaults {
    /// Logical shard count.
    pub shards: u32,
    /// How far ahead of now the tick queues fires.
    pub horizon_seconds: u32,
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
