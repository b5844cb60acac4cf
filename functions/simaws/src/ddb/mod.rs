//! The simulated DynamoDB: tables (with their sparse global secondary indexes), the item
//! operations with DynamoDB's expression semantics, queries and scans with DynamoDB's paging,
//! and all-or-nothing transactions.
//!
//! Layout: [`value`] (attribute values, exact numbers, key order), [`expr`] (the expression
//! parser), [`eval`] (conditions, updates, projections), [`table`] (items and indexes),
//! [`write`] (Put/Update/Delete as a plan a transaction can also apply), [`read`] (Get, Query,
//! Scan, BatchGetItem), [`txn`] (TransactWriteItems, BatchWriteItem).

pub(crate) mod eval;
pub(crate) mod expr;
mod read;
pub(crate) mod table;
mod txn;
pub(crate) mod value;
mod write;

use crate::error::ApiError;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use table::Table;

pub(crate) const ACCOUNT: &str = "000000000000";
pub(crate) const REGION: &str = "us-east-1";

/// One write applied: (table, old item, new item).
pub(crate) type Applied = (String, Option<value::Item>, Option<value::Item>);

/// Every table of the account.
#[derive(Default)]
pub(crate) struct Dynamo {
    pub(crate) tables: BTreeMap<String, Table>,
    /// Client request tokens of committed transactions, for DynamoDB's ten-minute idempotency.
    pub(crate) tokens: txn::Tokens,
    /// When the indexes see the writes of the current request (now, or later under a lag).
    pub(crate) index_at: i64,
    /// The writes the current request applied, (table, old item, new item), kept only while a
    /// write hook wants them (`Some`).
    pub(crate) log: Option<Vec<Applied>>,
}

/// `TableName` of a request, as a name (an ARN is accepted too).
pub(crate) fn table_name(req: &Value) -> Result<String, ApiError> {
    let t = req["TableName"].as_str().ok_or_else(|| ApiError::validation("TableName is required"))?;
    Ok(t.rsplit_once(":table/").map_or(t, |(_, n)| n).to_string())
}

fn refuse_legacy(req: &Value) -> Result<(), ApiError> {
    for legacy in
        ["Expected", "AttributeUpdates", "KeyConditions", "QueryFilter", "ScanFilter", "AttributesToGet"]
    {
        if req.get(legacy).is_some_and(|v| !v.is_null()) {
            return Err(ApiError::unknown_operation("DynamoDB", &format!("legacy parameter {legacy}")));
        }
    }
    Ok(())
}

impl Dynamo {
    pub(crate) fn table(&self, name: &str) -> Result<&Table, ApiError> {
        self.tables.get(name).ok_or_else(|| {
            ApiError::not_found(format!("Requested resource not found: Table: {name} not found"))
        })
    }

    pub(crate) fn table_mut(&mut self, name: &str) -> Result<&mut Table, ApiError> {
        self.tables.get_mut(name).ok_or_else(|| {
            ApiError::not_found(format!("Requested resource not found: Table: {name} not found"))
        })
    }

    /// Runs operation `op` (the part of `X-Amz-Target` after the dot) on a JSON request.
    /// `unprocessed` draws whether BatchGetItem leaves a key unprocessed; the indexes see this
    /// request's writes at `index_at` (`now_ms` when they are consistent).
    pub(crate) fn call(
        &mut self,
        op: &str,
        req: &Value,
        (now_ms, index_at): (i64, i64),
        unprocessed: &mut dyn FnMut() -> bool,
    ) -> Result<Value, ApiError> {
        refuse_legacy(req)?;
        self.settle(now_ms);
        self.index_at = index_at.max(now_ms);
        let out = self.operation(op, req, now_ms, unprocessed);
        self.settle(now_ms);
        out
    }

    /// Propagates the index writes due by `now`.
    fn settle(&mut self, now: i64) {
        for t in self.tables.values_mut() {
            t.settle(now);
        }
    }

    fn operation(
        &mut self,
        op: &str,
        req: &Value,
        now_ms: i64,
        unprocessed: &mut dyn FnMut() -> bool,
    ) -> Result<Value, ApiError> {
        match op {
            "CreateTable" => self.create_table(req, now_ms),
            "DescribeTable" => Ok(json!({ "Table": self.table(&table_name(req)?)?.describe() })),
            "DeleteTable" => {
                let t = self
                    .tables
                    .remove(&table_name(req)?)
                    .ok_or_else(|| ApiError::not_found("Requested resource not found"))?;
                let mut d = t.describe();
                d["TableStatus"] = json!("DELETING");
                Ok(json!({ "TableDescription": d }))
            }
            "ListTables" => Ok(self.list_tables(req)),
            "UpdateTimeToLive" => {
                let spec = &req["TimeToLiveSpecification"];
                let t = self.table_mut(&table_name(req)?)?;
                t.ttl = spec["Enabled"]
                    .as_bool()
                    .unwrap_or(false)
                    .then(|| spec["AttributeName"].as_str().unwrap_or("").to_string());
                Ok(json!({ "TimeToLiveSpecification": spec }))
            }
            "DescribeTimeToLive" => {
                let t = self.table(&table_name(req)?)?;
                let d = match &t.ttl {
                    Some(a) => json!({ "TimeToLiveStatus": "ENABLED", "AttributeName": a }),
                    None => json!({ "TimeToLiveStatus": "DISABLED" }),
                };
                Ok(json!({ "TimeToLiveDescription": d }))
            }
            "GetItem" => read::get_item(self, req),
            "Query" => read::query(self, req),
            "Scan" => read::scan(self, req),
            "BatchGetItem" => read::batch_get(self, req, unprocessed),
            "PutItem" | "UpdateItem" | "DeleteItem" => write::single(self, op, req),
            "TransactWriteItems" => txn::transact_write(self, req, now_ms),
            "BatchWriteItem" => txn::batch_write(self, req),
            _ => Err(ApiError::unknown_operation("DynamoDB", op)),
        }
    }

    fn create_table(&mut self, req: &Value, now_ms: i64) -> Result<Value, ApiError> {
        let name = table_name(req)?;
        if self.tables.contains_key(&name) {
            return Err(ApiError::new(
                400,
                "ResourceInUseException",
                format!("Table already exists: {name}"),
            ));
        }
        let arn = format!("arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{name}");
        let t = Table::create(req, arn, now_ms)?;
        let d = t.describe();
        self.tables.insert(name, t);
        Ok(json!({ "TableDescription": d }))
    }

    fn list_tables(&self, req: &Value) -> Value {
        let limit = req["Limit"].as_u64().unwrap_or(100).clamp(1, 100) as usize;
        let after = req["ExclusiveStartTableName"].as_str();
        let names: Vec<&String> =
            self.tables.keys().filter(|n| after.is_none_or(|a| n.as_str() > a)).take(limit + 1).collect();
        let mut out = json!({ "TableNames": names.iter().take(limit).collect::<Vec<_>>() });
        if names.len() > limit {
            out["LastEvaluatedTableName"] = json!(names[limit - 1]);
        }
        out
    }
}
