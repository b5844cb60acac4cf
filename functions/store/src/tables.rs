//! Tables: create one from its definition in [`sundial_model::resources`], see whether it is ACTIVE,
//! enable its TTL, list table names. Provisioning ([`crate::provision`]) orchestrates these on
//! the emulator; on AWS the CDK creates the same tables from the same `resources.json`.
//!
//! Errors are the SDK's own, boxed: provisioning reports them as they are and never retries.

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType, TableStatus, TimeToLiveSpecification,
};
use std::collections::BTreeMap;
use sundial_model::resources::{KeyAttr, TableDef};

/// A table operation's error, as the SDK gave it.
pub type TableError = Box<dyn std::error::Error + Send + Sync>;

fn attr_type(k: &KeyAttr) -> ScalarAttributeType {
    match k.kind.as_str() {
        "N" => ScalarAttributeType::N,
        _ => ScalarAttributeType::S,
    }
}

fn key_schema(pk: &KeyAttr, sk: &KeyAttr) -> Result<Vec<KeySchemaElement>, TableError> {
    let el =
        |k: &KeyAttr, t: KeyType| KeySchemaElement::builder().attribute_name(&k.name).key_type(t).build();
    Ok(vec![el(pk, KeyType::Hash)?, el(sk, KeyType::Range)?])
}

/// Creates table `name` (on-demand billing) with the keys and global secondary indexes of
/// `def`. A table that exists already is left as it is.
pub async fn create_table(
    ddb: &aws_sdk_dynamodb::Client,
    name: &str,
    def: &TableDef,
) -> Result<(), TableError> {
    let mut attrs: BTreeMap<String, ScalarAttributeType> = BTreeMap::new();
    for k in [&def.partition_key, &def.sort_key] {
        attrs.insert(k.name.clone(), attr_type(k));
    }
    let mut req = ddb
        .create_table()
        .table_name(name)
        .billing_mode(BillingMode::PayPerRequest)
        .set_key_schema(Some(key_schema(&def.partition_key, &def.sort_key)?));
    for ix in &def.indexes {
        for k in [&ix.partition_key, &ix.sort_key] {
            attrs.insert(k.name.clone(), attr_type(k));
        }
        let projection = match ix.projection.as_str() {
            "KEYS_ONLY" => ProjectionType::KeysOnly,
            _ => ProjectionType::All,
        };
        req = req.global_secondary_indexes(
            GlobalSecondaryIndex::builder()
                .index_name(&ix.name)
                .set_key_schema(Some(key_schema(&ix.partition_key, &ix.sort_key)?))
                .projection(Projection::builder().projection_type(projection).build())
                .build()?,
        );
    }
    for (n, t) in attrs {
        req = req.attribute_definitions(
            AttributeDefinition::builder().attribute_name(n).attribute_type(t).build()?,
        );
    }
    match req.send().await {
        Ok(_) => Ok(()),
        Err(e) if e.as_service_error().is_some_and(|s| s.is_resource_in_use_exception()) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Whether table `name` is ACTIVE (ready for reads and writes).
pub async fn is_active(ddb: &aws_sdk_dynamodb::Client, name: &str) -> Result<bool, TableError> {
    let d = ddb.describe_table().table_name(name).send().await?;
    Ok(d.table().and_then(|t| t.table_status()) == Some(&TableStatus::Active))
}

/// Enables TTL on `attribute` (epoch seconds) of table `name`; already enabled is fine.
pub async fn enable_ttl(
    ddb: &aws_sdk_dynamodb::Client,
    name: &str,
    attribute: &str,
) -> Result<(), TableError> {
    let ttl = ddb
        .update_time_to_live()
        .table_name(name)
        .time_to_live_specification(
            TimeToLiveSpecification::builder().attribute_name(attribute).enabled(true).build()?,
        )
        .send()
        .await;
    // Enabling TTL twice is refused with a ValidationException ("TimeToLive is already
    // enabled"): that is the state we want. Any other refusal is an error.
    match ttl {
        Ok(_) => Ok(()),
        Err(e) => {
            let already = e.as_service_error().is_some_and(|s| {
                s.meta().code() == Some("ValidationException")
                    && s.meta().message().is_some_and(|m| m.contains("already enabled"))
            });
            if already {
                Ok(())
            } else {
                Err(e.into())
            }
        }
    }
}

/// The first page of table names (at most `limit`, or the service's page size). A cheap probe
/// that the endpoint answers.
pub async fn table_names(
    ddb: &aws_sdk_dynamodb::Client,
    limit: Option<i32>,
) -> Result<Vec<String>, TableError> {
    let out = ddb.list_tables().set_limit(limit).send().await?;
    Ok(out.table_names().to_vec())
}
