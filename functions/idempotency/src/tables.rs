//! Tables for tests and local runs.
//!
//! On AWS the CDK app creates every table (on-demand billing, TTL on `expires_at` for the
//! marker table); these helpers exist so tests and the settlement example can create private
//! tables on the local emulator, each under a unique prefix, without a deployment step.
//!
//! The toolkit's own tables ([`ToolkitTables`]) have one string hash key, [`PK`]. The tables a
//! handler protects (its ledger, its detail table) are its own: [`ensure_table`] creates one
//! with whatever key the handler chose, ideally the natural key itself.

use crate::error::{Error, Result};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
};
use aws_sdk_dynamodb::Client;

/// Hash key attribute of the toolkit's own tables.
pub const PK: &str = "pk";

/// Names of the toolkit's own tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolkitTables {
    /// [`crate::inbox::Inbox`] entries.
    pub inbox: String,
    /// [`crate::outbound::Outbound`] records of unknown outcomes.
    pub outbound: String,
    /// [`crate::marker::DoneMarkers`].
    pub markers: String,
}

impl ToolkitTables {
    /// `{prefix}inbox`, `{prefix}outbound`, `{prefix}markers`.
    pub fn with_prefix(prefix: &str) -> Self {
        ToolkitTables {
            inbox: format!("{prefix}inbox"),
            outbound: format!("{prefix}outbound"),
            markers: format!("{prefix}markers"),
        }
    }

    /// Creates the three tables if they do not exist.
    pub async fn ensure(&self, ddb: &Client) -> Result<()> {
        for t in [&self.inbox, &self.outbound, &self.markers] {
            ensure_table(ddb, t, PK, None).await?;
        }
        Ok(())
    }

    /// Deletes the three tables (tests clean up after themselves).
    pub async fn delete(&self, ddb: &Client) -> Result<()> {
        for t in [&self.inbox, &self.outbound, &self.markers] {
            delete_table(ddb, t).await?;
        }
        Ok(())
    }
}

/// Creates an on-demand table with a string hash key and an optional string range key; an
/// existing table of that name is left as it is.
pub async fn ensure_table(ddb: &Client, name: &str, hash: &str, range: Option<&str>) -> Result<()> {
    let key = |attr: &str, kind: KeyType| {
        KeySchemaElement::builder()
            .attribute_name(attr)
            .key_type(kind)
            .build()
            .map_err(|e| Error::invalid("key schema", e.to_string()))
    };
    let def = |attr: &str| {
        AttributeDefinition::builder()
            .attribute_name(attr)
            .attribute_type(ScalarAttributeType::S)
            .build()
            .map_err(|e| Error::invalid("attribute definition", e.to_string()))
    };
    let mut req = ddb
        .create_table()
        .table_name(name)
        .billing_mode(BillingMode::PayPerRequest)
        .key_schema(key(hash, KeyType::Hash)?)
        .attribute_definitions(def(hash)?);
    if let Some(r) = range {
        req = req.key_schema(key(r, KeyType::Range)?).attribute_definitions(def(r)?);
    }
    match req.send().await {
        Ok(_) => Ok(()),
        Err(e) if e.as_service_error().is_some_and(|s| s.is_resource_in_use_exception()) => Ok(()),
        Err(e) => Err(Error::dynamo("CreateTable", name, e)),
    }
}

/// Deletes a table; a missing table is not an error.
pub async fn delete_table(ddb: &Client, name: &str) -> Result<()> {
    match ddb.delete_table().table_name(name).send().await {
        Ok(_) => Ok(()),
        Err(e) if e.as_service_error().is_some_and(|s| s.is_resource_not_found_exception()) => Ok(()),
        Err(e) => Err(Error::dynamo("DeleteTable", name, e)),
    }
}
