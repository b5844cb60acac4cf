//! TransactWriteItems (every action planned against the same state, all applied or none, the
//! cancellation reasons in request order) and BatchWriteItem (unconditional puts and deletes,
//! never partially processed by the simulator).

use super::table::PKey;
use super::value::item_to_json;
use super::write::{commit, plan, Plan};
use super::{table_name, Dynamo};
use crate::error::ApiError;
use serde_json::{json, Value};
use std::collections::{BTreeMap, VecDeque};

const MAX_ACTIONS: usize = 100;
const TOKEN_MS: i64 = 10 * 60 * 1000;

/// The tokens of transactions committed in the last ten minutes: a retry with the same token
/// and the same request (the SDK retries a lost response with the token it generated) succeeds
/// without applying again, as DynamoDB does; the same token with another request is refused.
#[derive(Default)]
pub(crate) struct Tokens {
    by_token: BTreeMap<String, (u64, i64)>,
    by_time: VecDeque<(i64, String)>,
}

impl Tokens {
    fn expire(&mut self, now: i64) {
        while let Some((at, t)) = self.by_time.front().cloned() {
            if now - at < TOKEN_MS {
                break;
            }
            self.by_time.pop_front();
            if self.by_token.get(&t).is_some_and(|(_, a)| *a == at) {
                self.by_token.remove(&t);
            }
        }
    }
}

/// The request without its token, as a hash (a retry resends the same bytes, so any stable
/// rendering will do).
fn request_hash(req: &Value) -> u64 {
    let mut r = req.clone();
    if let Some(m) = r.as_object_mut() {
        m.remove("ClientRequestToken");
    }
    sundial_hash::fnv1a(r.to_string().as_bytes())
}

pub(crate) fn transact_write(db: &mut Dynamo, req: &Value, now: i64) -> Result<Value, ApiError> {
    let token = req["ClientRequestToken"].as_str().map(str::to_string);
    if let Some(t) = &token {
        db.tokens.expire(now);
        if let Some((h, _)) = db.tokens.by_token.get(t) {
            if *h == request_hash(req) {
                return Ok(json!({}));
            }
            return Err(ApiError::new(
                400,
                "IdempotentParameterMismatchException",
                "The request uses the same client token as a previous, but non-identical request.",
            ));
        }
    }
    let out = transact_apply(db, req)?;
    if let Some(t) = token {
        db.tokens.by_token.insert(t.clone(), (request_hash(req), now));
        db.tokens.by_time.push_back((now, t));
    }
    Ok(out)
}

fn transact_apply(db: &mut Dynamo, req: &Value) -> Result<Value, ApiError> {
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
