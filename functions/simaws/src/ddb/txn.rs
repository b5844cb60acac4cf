//! TransactWriteItems (every action planned against the same state, all applied or none, the
//! cancellation reasons in request order) and BatchWriteItem (unconditional puts and deletes,
//! never partially processed by the simulator).

use super::table::PKey;
use super::value::item_to_json;
use super::write::{commit, plan, Plan};
use super::{table_name, Dynamo};
use crate::error::ApiError;
use serde_json::{json, Value};

const MAX_ACTIONS: usize = 100;

pub(crate) fn transact_write(db: &mut Dynamo, req: &Value) -> Result<Value, ApiError> {
    let actions =
        req["TransactItems"].as_array().ok_or_else(|| ApiError::validation("TransactItems is required"))?;
    if actions.is_empty() || actions.len() > MAX_ACTIONS {
        return Err(ApiError::validation(format!(
            "1 validation error detected: Value at 'transactItems' failed to satisfy constraint: Member must have length between 1 and {MAX_ACTIONS}"
        )));
    }
    let mut plans: Vec<Plan> = Vec::with_capacity(actions.len());
    let mut keys: Vec<(String, PKey)> = Vec::new();
    for a in actions {
        let obj = a
            .as_object()
            .filter(|o| o.len() == 1)
            .ok_or_else(|| ApiError::validation("each TransactItem holds one action"))?;
        let (kind, body) = obj.iter().next().ok_or_else(|| ApiError::validation("empty TransactItem"))?;
        if !matches!(kind.as_str(), "Put" | "Update" | "Delete" | "ConditionCheck") {
            return Err(ApiError::validation(format!("unknown transaction action {kind}")));
        }
        if kind == "ConditionCheck" && body["ConditionExpression"].as_str().is_none() {
            return Err(ApiError::validation("ConditionCheck requires a ConditionExpression"));
        }
        let p = plan(db, kind, body)?;
        let id = (table_name(body)?, p.pk.clone());
        if keys.contains(&id) {
            return Err(ApiError::validation(
                "Transaction request cannot include multiple operations on one item",
            ));
        }
        keys.push(id);
        plans.push(p);
    }
    if plans.iter().any(|p| p.failed) {
        let reasons: Vec<Value> = plans
            .iter()
            .map(|p| {
                if !p.failed {
                    return json!({ "Code": "None" });
                }
                let mut r =
                    json!({ "Code": "ConditionalCheckFailed", "Message": "The conditional request failed" });
                if let (true, Some(old)) = (p.old_on_failure, &p.old) {
                    r["Item"] = item_to_json(old);
                }
                r
            })
            .collect();
        let codes: Vec<&str> = reasons.iter().map(|r| r["Code"].as_str().unwrap_or("None")).collect();
        let msg = format!(
            "Transaction cancelled, please refer cancellation reasons for specific reasons [{}]",
            codes.join(", ")
        );
        return Err(ApiError::new(400, "TransactionCanceledException", msg)
            .with("CancellationReasons", Value::Array(reasons)));
    }
    for p in plans {
        commit(db, p)?;
    }
    Ok(json!({}))
}

pub(crate) fn batch_write(db: &mut Dynamo, req: &Value) -> Result<Value, ApiError> {
    let ri =
        req["RequestItems"].as_object().ok_or_else(|| ApiError::validation("RequestItems is required"))?;
    let total: usize = ri.values().map(|r| r.as_array().map_or(0, Vec::len)).sum();
    if total == 0 || total > 25 {
        return Err(ApiError::validation(
            "Too many items requested for the BatchWriteItem call (1 to 25 requests)",
        ));
    }
    let mut plans = Vec::new();
    let mut keys: Vec<(String, PKey)> = Vec::new();
    for (name, reqs) in ri {
        for r in reqs.as_array().into_iter().flatten() {
            let mut body = if let Some(p) = r.get("PutRequest") {
                json!({ "Item": p["Item"] })
            } else if let Some(d) = r.get("DeleteRequest") {
                json!({ "Key": d["Key"] })
            } else {
                return Err(ApiError::validation("a WriteRequest holds a PutRequest or a DeleteRequest"));
            };
            body["TableName"] = json!(name);
            let kind = if r.get("PutRequest").is_some() { "Put" } else { "Delete" };
            let p = plan(db, kind, &body)?;
            let id = (table_name(&body)?, p.pk.clone());
            if keys.contains(&id) {
                return Err(ApiError::validation("Provided list of item keys contains duplicates"));
            }
            keys.push(id);
            plans.push(p);
        }
    }
    for p in plans {
        commit(db, p)?;
    }
    Ok(json!({ "UnprocessedItems": {} }))
}
