//! PutItem, UpdateItem and DeleteItem, each first computed as a [`Plan`] against the current
//! item (condition checked, new item built and validated) and only then applied, so that a
//! transaction can plan every action before it applies any.

use super::eval::{apply, holds, project, updated_paths};
use super::expr::{self, Path, Placeholders};
use super::table::PKey;
use super::value::{item_from_json, item_to_json, Item};
use super::{table_name, Dynamo};
use crate::error::ApiError;
use serde_json::{json, Value};

pub(crate) enum Write {
    Nothing,
    Put(Item),
    Delete,
}

/// One write, decided but not applied.
pub(crate) struct Plan {
    pub(crate) table: String,
    pub(crate) pk: PKey,
    pub(crate) old: Option<Item>,
    pub(crate) write: Write,
    /// The condition expression did not hold.
    pub(crate) failed: bool,
    /// `ReturnValuesOnConditionCheckFailure` is `ALL_OLD`.
    pub(crate) old_on_failure: bool,
    /// The paths an update expression wrote (for `UPDATED_OLD` / `UPDATED_NEW`).
    pub(crate) updated: Vec<Path>,
}

impl Plan {
    /// The `ConditionalCheckFailedException` of a failed plan (with the old item when asked).
    pub(crate) fn failure(&self) -> ApiError {
        let e = ApiError::new(400, "ConditionalCheckFailedException", "The conditional request failed");
        match (&self.old, self.old_on_failure) {
            (Some(item), true) => e.with("Item", item_to_json(item)),
            _ => e,
        }
    }
}

fn key_arg(req: &Value, field: &str) -> Result<Item, ApiError> {
    item_from_json(req.get(field).ok_or_else(|| ApiError::validation(format!("{field} is required")))?)
}

/// Plans `kind` (`Put`, `Update`, `Delete` or `ConditionCheck`) from its request.
pub(crate) fn plan(db: &Dynamo, kind: &str, req: &Value) -> Result<Plan, ApiError> {
    let name = table_name(req)?;
    let t = db.table(&name)?;
    let ph = Placeholders::from_request(req)?;
    let cond = req["ConditionExpression"]
        .as_str()
        .map(|c| expr::condition(c, "ConditionExpression", &ph))
        .transpose()?;
    let (pk, write, updated) = match kind {
        "Put" => {
            let item = key_arg(req, "Item")?;
            let pk = t.pkey(&item)?;
            t.validate(&item)?;
            (pk, Write::Put(item), Vec::new())
        }
        "Update" => {
            let key = key_arg(req, "Key")?;
            let pk = t.key_of(&key)?;
            let text = req["UpdateExpression"].as_str();
            let u = text.map(|x| expr::update(x, &ph)).transpose()?;
            let mut keys = vec![t.hash.name.as_str()];
            keys.extend(t.range.as_ref().map(|r| r.name.as_str()));
            let updated = u.as_ref().map(|u| updated_paths(u, &keys)).transpose()?.unwrap_or_default();
            ph.check_all_used()?;
            let base = t.get(&pk).cloned().unwrap_or(key);
            let new = match &u {
                Some(u) => apply(&base, u)?,
                None => base,
            };
            t.validate(&new)?;
            (pk, Write::Put(new), updated)
        }
        "Delete" => (t.key_of(&key_arg(req, "Key")?)?, Write::Delete, Vec::new()),
        _ => (t.key_of(&key_arg(req, "Key")?)?, Write::Nothing, Vec::new()),
    };
    ph.check_all_used()?;
    let old = t.get(&pk).cloned();
    let failed = cond.is_some_and(|c| !holds(old.as_ref().unwrap_or(&Item::new()), &c));
    let old_on_failure = req["ReturnValuesOnConditionCheckFailure"] == "ALL_OLD";
    Ok(Plan { table: name, pk, old, write, failed, old_on_failure, updated })
}

/// Applies a plan whose condition held; returns the item it replaced and the new item.
pub(crate) fn commit(db: &mut Dynamo, p: Plan) -> Result<(Option<Item>, Option<Item>), ApiError> {
    let at = db.index_at;
    let t = db.table_mut(&p.table)?;
    let out = match p.write {
        Write::Nothing => return Ok((p.old, None)),
        Write::Put(item) => {
            t.put(p.pk, item.clone(), at);
            (p.old, Some(item))
        }
        Write::Delete => {
            t.delete(&p.pk, at);
            (p.old, None)
        }
    };
    if let Some(log) = &mut db.log {
        log.push((p.table, out.0.clone(), out.1.clone()));
    }
    Ok(out)
}

/// PutItem, UpdateItem or DeleteItem.
pub(crate) fn single(db: &mut Dynamo, op: &str, req: &Value) -> Result<Value, ApiError> {
    let kind = op.trim_end_matches("Item");
    let p = plan(db, kind, req)?;
    let rv = req["ReturnValues"].as_str().unwrap_or("NONE");
    let allowed: &[&str] = match kind {
        "Update" => &["NONE", "ALL_OLD", "ALL_NEW", "UPDATED_OLD", "UPDATED_NEW"],
        _ => &["NONE", "ALL_OLD"],
    };
    if !allowed.contains(&rv) {
        return Err(ApiError::validation(format!(
            "ReturnValues can only be {} for {op}",
            allowed.join(", ")
        )));
    }
    if p.failed {
        return Err(p.failure());
    }
    let updated = p.updated.clone();
    let (old, new) = commit(db, p)?;
    let attrs = match rv {
        "ALL_OLD" => old,
        "ALL_NEW" => new,
        "UPDATED_OLD" => old.map(|o| project(&o, &updated)),
        "UPDATED_NEW" => new.map(|n| project(&n, &updated)),
        _ => None,
    };
    Ok(match attrs.filter(|a| !a.is_empty()) {
        Some(a) => json!({ "Attributes": item_to_json(&a) }),
        None => json!({}),
    })
}
