//! Provisioned throughput of a table and its indexes: read it (`DescribeTable`), set it
//! (`UpdateTable`), and count the jobs waiting in one `due` partition (`Query` with
//! `Select=COUNT`), which is what the planner forecasts the coming minutes from
//! (`sundial_core::trigger::throughput`). The plan itself is pure (`sundial-throughput`).
//!
//! Errors say whether to retry: a table that is already updating, or DynamoDB's control plane
//! throttling, is [`ThroughputError::Busy`] (the next minute's run tries again); a refusal such
//! as a spent decrease ration is [`ThroughputError::Refused`] (the next run plans again from the
//! table as it is, so retrying the same request is pointless).

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::{
    AttributeValue, GlobalSecondaryIndexUpdate, ProvisionedThroughput, ProvisionedThroughputDescription,
    Select, TableStatus, UpdateGlobalSecondaryIndexAction,
};
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;
use sundial_throughput::Throughput;

use crate::error::StoreError;
use crate::expr::{Expr, WithExpr};
use crate::items::{attr, index, Item};

/// A throughput call failed.
#[derive(Debug, thiserror::Error)]
pub enum ThroughputError {
    /// The table is updating, or the control plane is throttling: retry at the next run.
    #[error("DynamoDB {op} on {table}: busy ({message})")]
    Busy {
        /// The operation.
        op: &'static str,
        /// The table.
        table: String,
        /// What DynamoDB said.
        message: String,
    },
    /// DynamoDB refused the change (decreases spent, quota, validation): the next run plans
    /// again from the table as it is.
    #[error("DynamoDB {op} on {table}: refused ({message})")]
    Refused {
        /// The operation.
        op: &'static str,
        /// The table.
        table: String,
        /// What DynamoDB said.
        message: String,
    },
    /// Any other store failure.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl ThroughputError {
    /// Whether the same call may succeed if repeated later.
    pub fn is_retryable(&self) -> bool {
        match self {
            ThroughputError::Busy { .. } => true,
            ThroughputError::Refused { .. } => false,
            ThroughputError::Store(e) => e.is_retryable(),
        }
    }

    fn from_sdk<E>(op: &'static str, table: &str, e: SdkError<E, HttpResponse>) -> Self
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        let code = e.code().unwrap_or_default().to_string();
        let message = format!("{}", aws_sdk_dynamodb::error::DisplayErrorContext(&e));
        let table = table.to_string();
        match code.as_str() {
            "ResourceInUseException" => ThroughputError::Busy { op, table, message },
            "LimitExceededException" | "ValidationException" => {
                ThroughputError::Refused { op, table, message }
            }
            _ => ThroughputError::Store(StoreError::from_sdk(op, e)),
        }
    }
}

/// The provisioned units of a table or index, and its decreases today.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Provisioned {
    /// Units now.
    pub units: Throughput,
    /// `NumberOfDecreasesToday`.
    pub decreases_today: u32,
    /// `LastDecreaseDateTime`, Unix seconds.
    pub last_decrease: Option<i64>,
}

/// What `DescribeTable` says about a table's throughput.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableThroughput {
    /// The table's own units; `None` when it bills on demand.
    pub table: Option<Provisioned>,
    /// Each provisioned global secondary index, by name.
    pub indexes: Vec<(String, Provisioned)>,
    /// Whether the table and every index are ACTIVE (an update is refused otherwise).
    pub active: bool,
}

fn provisioned(p: Option<&ProvisionedThroughputDescription>) -> Option<Provisioned> {
    let p = p?;
    let (wcu, rcu) = (p.write_capacity_units()?, p.read_capacity_units()?);
    if wcu <= 0 || rcu <= 0 {
        return None; // on demand reports 0 units
    }
    Some(Provisioned {
        units: Throughput { wcu: wcu as u64, rcu: rcu as u64 },
        decreases_today: p.number_of_decreases_today().unwrap_or(0).max(0) as u32,
        last_decrease: p.last_decrease_date_time().map(|t| t.secs()),
    })
}

/// Reads the provisioned units of `table` and of its indexes.
pub async fn describe_throughput(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
) -> Result<TableThroughput, ThroughputError> {
    let out = ddb
        .describe_table()
        .table_name(table)
        .send()
        .await
        .map_err(|e| ThroughputError::from_sdk("DescribeTable", table, e))?;
    let Some(t) = out.table() else {
        return Err(ThroughputError::Refused {
            op: "DescribeTable",
            table: table.into(),
            message: "no table".into(),
        });
    };
    let indexes: Vec<(String, Provisioned)> = t
        .global_secondary_indexes()
        .iter()
        .filter_map(|ix| Some((ix.index_name()?.to_string(), provisioned(ix.provisioned_throughput())?)))
        .collect();
    let ix_active = t
        .global_secondary_indexes()
        .iter()
        .all(|ix| ix.index_status().is_none_or(|s| s.as_str() == "ACTIVE"));
    Ok(TableThroughput {
        table: provisioned(t.provisioned_throughput()),
        indexes,
        active: t.table_status() == Some(&TableStatus::Active) && ix_active,
    })
}

fn units(u: Throughput) -> Result<ProvisionedThroughput, StoreError> {
    let clamp = |v: u64| i64::try_from(v).unwrap_or(i64::MAX).max(1);
    ProvisionedThroughput::builder()
        .write_capacity_units(clamp(u.wcu))
        .read_capacity_units(clamp(u.rcu))
        .build()
        .map_err(|e| StoreError::Permanent { op: "UpdateTable", message: e.to_string() })
}

/// Sets the units of `table` (when `own` is given) and of the named indexes, in one request.
pub async fn set_throughput(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    own: Option<Throughput>,
    indexes: &[(String, Throughput)],
) -> Result<(), ThroughputError> {
    let mut req = ddb.update_table().table_name(table);
    if let Some(u) = own {
        req = req.provisioned_throughput(units(u)?);
    }
    for (name, u) in indexes {
        let action = UpdateGlobalSecondaryIndexAction::builder()
            .index_name(name)
            .provisioned_throughput(units(*u)?)
            .build()
            .map_err(|e| StoreError::Permanent { op: "UpdateTable", message: e.to_string() })?;
        req =
            req.global_secondary_index_updates(GlobalSecondaryIndexUpdate::builder().update(action).build());
    }
    req.send().await.map_err(|e| ThroughputError::from_sdk("UpdateTable", table, e))?;
    Ok(())
}

/// How many jobs wait in the `due` partition `due_pk` (every page counted).
pub async fn count_due(ddb: &aws_sdk_dynamodb::Client, table: &str, due_pk: &str) -> Result<u64, StoreError> {
    let mut total = 0u64;
    let mut start: Option<Item> = None;
    loop {
        let mut e = Expr::new();
        e.key_eq(attr::DUE_PK, AttributeValue::S(due_pk.to_string()));
        let out = ddb
            .query()
            .table_name(table)
            .index_name(index::due()?)
            .expr(e)
            .select(Select::Count)
            .set_exclusive_start_key(start.take())
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("Query", e))?;
        total += out.count().max(0) as u64;
        match out.last_evaluated_key() {
            Some(k) if !k.is_empty() => start = Some(k.clone()),
            _ => return Ok(total),
        }
    }
}
