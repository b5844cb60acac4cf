//! GetItem, Query, Scan and BatchGetItem. Reads are always strongly consistent (the simulator
//! has one copy of every item); Query and Scan page exactly as DynamoDB does: `Limit` counts
//! items read before the filter, a page stops at 1 MB read, and a page cut short by either
//! carries `LastEvaluatedKey`.

use super::eval::{holds, project};
use super::expr::{self, Cond, Elem, Op, Operand, Path, Placeholders};
use super::table::{KeyDef, PKey, RKey, Span, Table};
use super::value::{item_from_json, item_size, item_to_json, Item, KeyVal};
use super::{table_name, Dynamo};
use crate::error::ApiError;
use serde_json::{json, Value};
use std::ops::Bound;

const PAGE_BYTES: usize = 1024 * 1024;

fn projection_of(req: &Value, ph: &Placeholders) -> Result<Option<Vec<Path>>, ApiError> {
    req["ProjectionExpression"].as_str().map(|p| expr::projection(p, ph)).transpose()
}

pub(crate) fn get_item(db: &Dynamo, req: &Value) -> Result<Value, ApiError> {
    let t = db.table(&table_name(req)?)?;
    let ph = Placeholders::from_request(req)?;
    let proj = projection_of(req, &ph)?;
    ph.check_all_used()?;
    let pk = t.key_of(&item_from_json(&req["Key"])?)?;
    Ok(match t.get(&pk) {
        Some(item) => {
            let out = proj.map(|p| project(item, &p));
            json!({ "Item": item_to_json(out.as_ref().unwrap_or(item)) })
        }
        None => json!({}),
    })
}

fn key_error(m: &str) -> ApiError {
    ApiError::validation(format!("Query condition missed key schema element: {m}"))
}

fn conjuncts(c: &Cond, out: &mut Vec<Cond>) {
    match c {
        Cond::And(a, b) => {
            conjuncts(a, out);
            conjuncts(b, out);
        }
        other => out.push(other.clone()),
    }
}

fn attr_of(o: &Operand) -> Option<&str> {
    match o {
        Operand::Path(p) if p.len() == 1 => match &p[0] {
            Elem::Attr(a) => Some(a),
            Elem::Index(_) => None,
        },
        _ => None,
    }
}

fn key_val(o: &Operand, d: &KeyDef) -> Result<KeyVal, ApiError> {
    match o {
        Operand::Value(v) => KeyVal::of(v, &d.ty).ok_or_else(|| {
            ApiError::validation(format!("One or more parameter values were invalid: Condition parameter type does not match schema type for {}", d.name))
        }),
        _ => Err(ApiError::validation("Invalid KeyConditionExpression: a key condition compares a key with a value")),
    }
}

/// The smallest string above every string that starts with `p`, if there is one.
fn successor(p: &str) -> Option<String> {
    let mut chars: Vec<char> = p.chars().collect();
    while let Some(c) = chars.pop() {
        if let Some(n) = (c as u32 + 1..=char::MAX as u32).find_map(char::from_u32) {
            chars.push(n);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// The partition key value and the sort key span of a key condition.
fn key_span(c: &Cond, hash: &KeyDef, range: Option<&KeyDef>) -> Result<(KeyVal, Span), ApiError> {
    let mut parts = Vec::new();
    conjuncts(c, &mut parts);
    let (mut h, mut span, mut ranged) = (None, Span::all(), false);
    for p in &parts {
        let (name, new_span) = match p {
            Cond::Cmp(a, op, v) => {
                let name = attr_of(a).ok_or_else(|| key_error("a key condition names a key attribute"))?;
                if name == hash.name && *op == Op::Eq {
                    h = Some(key_val(v, hash)?);
                    continue;
                }
                let d = range.filter(|r| r.name == name).ok_or_else(|| key_error(name))?;
                let k = key_val(v, d)?;
                let s = match op {
                    Op::Eq => Span { lower: Bound::Included(k.clone()), upper: Bound::Included(k) },
                    Op::Lt => Span { lower: Bound::Unbounded, upper: Bound::Excluded(k) },
                    Op::Le => Span { lower: Bound::Unbounded, upper: Bound::Included(k) },
                    Op::Gt => Span { lower: Bound::Excluded(k), upper: Bound::Unbounded },
                    Op::Ge => Span { lower: Bound::Included(k), upper: Bound::Unbounded },
                    Op::Ne => return Err(ApiError::validation(
                        "Invalid KeyConditionExpression: Invalid operator used in KeyConditionExpression: <>",
                    )),
                };
                (name, s)
            }
            Cond::Between(a, lo, hi) => {
                let name = attr_of(a).ok_or_else(|| key_error("BETWEEN names the sort key"))?;
                let d = range.filter(|r| r.name == name).ok_or_else(|| key_error(name))?;
                let (lo, hi) = (key_val(lo, d)?, key_val(hi, d)?);
                if lo > hi {
                    return Err(ApiError::validation("Invalid KeyConditionExpression: The BETWEEN operator requires upper bound to be greater than or equal to lower bound"));
                }
                (name, Span { lower: Bound::Included(lo), upper: Bound::Included(hi) })
            }
            Cond::BeginsWith(a, v) => {
                let name = attr_of(a).ok_or_else(|| key_error("begins_with names the sort key"))?;
                let d = range.filter(|r| r.name == name).ok_or_else(|| key_error(name))?;
                match key_val(v, d)? {
                    KeyVal::S(s) => {
                        let upper = successor(&s).map_or(Bound::Unbounded, |n| Bound::Excluded(KeyVal::S(n)));
                        (name, Span { lower: Bound::Included(KeyVal::S(s)), upper })
                    }
                    _ => return Err(ApiError::validation("Invalid KeyConditionExpression: Incorrect operand type for operator or function; operator or function: begins_with")),
                }
            }
            _ => return Err(ApiError::validation("Invalid operator used in KeyConditionExpression")),
        };
        if ranged {
            return Err(ApiError::validation(format!(
                "KeyConditionExpressions must only contain one condition per key: {name}"
            )));
        }
        ranged = true;
        span = new_span;
    }
    Ok((h.ok_or_else(|| key_error(&hash.name))?, span))
}

/// What a read returns of an item: the index's projection, then the request's.
struct Shape {
    gsi: Option<usize>,
    proj: Option<Vec<Path>>,
    count_only: bool,
}

impl Shape {
    /// An index's items are already as the index projects them; then the request's projection.
    fn apply(&self, item: &Item) -> Item {
        match &self.proj {
            Some(p) => project(item, p),
            None => item.clone(),
        }
    }
}

/// Reads one page from `items`, returning the response.
fn page<'a>(
    t: &Table,
    items: impl Iterator<Item = &'a Item>,
    limit: Option<usize>,
    filter: Option<&Cond>,
    shape: &Shape,
) -> Value {
    let (mut out, mut scanned, mut bytes, mut last) = (Vec::new(), 0usize, 0usize, None);
    for item in items {
        scanned += 1;
        bytes += item_size(item);
        let shown = shape.apply(item);
        if filter.is_none_or(|f| holds(&shown, f)) {
            out.push(shown);
        }
        if limit == Some(scanned) || bytes >= PAGE_BYTES {
            last = Some(t.keys_only(item, shape.gsi));
            break;
        }
    }
    let mut resp = json!({ "Count": out.len(), "ScannedCount": scanned });
    if !shape.count_only {
        resp["Items"] = Value::Array(out.iter().map(item_to_json).collect());
    }
    if let Some(k) = last {
        resp["LastEvaluatedKey"] = item_to_json(&k);
    }
    resp
}

struct ReadArgs {
    gsi: Option<usize>,
    limit: Option<usize>,
    filter: Option<Cond>,
    shape: Shape,
    start: Option<Item>,
}

fn read_args(t: &Table, req: &Value, ph: &Placeholders) -> Result<ReadArgs, ApiError> {
    let gsi = req["IndexName"].as_str().map(|n| t.gsi(n)).transpose()?;
    if gsi.is_some() && req["ConsistentRead"] == true {
        return Err(ApiError::validation("Consistent reads are not supported on global secondary indexes"));
    }
    let limit = match req["Limit"].as_u64() {
        Some(0) => return Err(ApiError::validation("Limit must be at least 1")),
        l => l.map(|l| l as usize),
    };
    let filter =
        req["FilterExpression"].as_str().map(|f| expr::condition(f, "FilterExpression", ph)).transpose()?;
    let select = req["Select"].as_str().unwrap_or("");
    let shape = Shape { gsi, proj: projection_of(req, ph)?, count_only: select == "COUNT" };
    let start = req.get("ExclusiveStartKey").filter(|v| !v.is_null()).map(item_from_json).transpose()?;
    Ok(ReadArgs { gsi, limit, filter, shape, start })
}

/// The index sort key and table key of an `ExclusiveStartKey`.
fn start_of(t: &Table, gsi: Option<usize>, k: &Item) -> Result<(KeyVal, RKey, PKey), ApiError> {
    let bad = || {
        ApiError::validation(
            "The provided starting key is invalid: The provided key element does not match the schema",
        )
    };
    let pk = t.pkey(k).map_err(|_| bad())?;
    match gsi {
        None => Ok((pk.0.clone(), pk.1.clone(), pk)),
        Some(i) => {
            let g = &t.gsis[i];
            let h = k.get(&g.hash.name).and_then(|v| KeyVal::of(v, &g.hash.ty)).ok_or_else(bad)?;
            let r = match &g.range {
                Some(d) => Some(k.get(&d.name).and_then(|v| KeyVal::of(v, &d.ty)).ok_or_else(bad)?),
                None => None,
            };
            Ok((h, r, pk))
        }
    }
}

pub(crate) fn query(db: &Dynamo, req: &Value) -> Result<Value, ApiError> {
    let t = db.table(&table_name(req)?)?;
    let ph = Placeholders::from_request(req)?;
    let kc_text = req["KeyConditionExpression"].as_str().ok_or_else(|| {
        ApiError::validation(
            "Either the KeyConditions or KeyConditionExpression parameter must be specified in the request.",
        )
    })?;
    let kc = expr::condition(kc_text, "KeyConditionExpression", &ph)?;
    let a = read_args(t, req, &ph)?;
    ph.check_all_used()?;
    let (hash, range) = match a.gsi {
        Some(i) => (&t.gsis[i].hash, t.gsis[i].range.as_ref()),
        None => (&t.hash, t.range.as_ref()),
    };
    let (h, span) = key_span(&kc, hash, range)?;
    let forward = req["ScanIndexForward"].as_bool().unwrap_or(true);
    let start = a.start.as_ref().map(|k| start_of(t, a.gsi, k)).transpose()?;
    if start.as_ref().is_some_and(|(sh, _, _)| *sh != h) {
        return Err(ApiError::validation(
            "The provided starting key is outside query boundaries based on provided conditions",
        ));
    }
    let items = t.query(a.gsi, &h, &span, forward, start.map(|(_, r, p)| (r, p))).filter(|i| holds(i, &kc));
    Ok(page(t, items, a.limit, a.filter.as_ref(), &a.shape))
}

pub(crate) fn scan(db: &Dynamo, req: &Value) -> Result<Value, ApiError> {
    let t = db.table(&table_name(req)?)?;
    if req.get("TotalSegments").is_some_and(|v| !v.is_null()) {
        return Err(ApiError::unknown_operation("DynamoDB", "parallel Scan (Segment/TotalSegments)"));
    }
    let ph = Placeholders::from_request(req)?;
    let a = read_args(t, req, &ph)?;
    ph.check_all_used()?;
    let start = a.start.as_ref().map(|k| start_of(t, a.gsi, k)).transpose()?;
    Ok(page(t, t.scan(a.gsi, start), a.limit, a.filter.as_ref(), &a.shape))
}

/// BatchGetItem; `unprocessed()` says whether to leave a key for the caller's retry (the
/// `ddb_unprocessed` fault: DynamoDB does so under load).
pub(crate) fn batch_get(
    db: &Dynamo,
    req: &Value,
    unprocessed: &mut dyn FnMut() -> bool,
) -> Result<Value, ApiError> {
    let ri =
        req["RequestItems"].as_object().ok_or_else(|| ApiError::validation("RequestItems is required"))?;
    let total: usize = ri.values().map(|r| r["Keys"].as_array().map_or(0, Vec::len)).sum();
    if total == 0 || total > 100 {
        return Err(ApiError::validation(
            "Too many items requested for the BatchGetItem call (1 to 100 keys)",
        ));
    }
    let (mut responses, mut left) = (serde_json::Map::new(), serde_json::Map::new());
    for (given, r) in ri {
        let name = given.rsplit_once(":table/").map_or(given.as_str(), |(_, n)| n);
        let t = db.table(name)?;
        let ph = Placeholders::from_request(r)?;
        let proj = projection_of(r, &ph)?;
        ph.check_all_used()?;
        let (mut seen, mut found, mut skipped) = (Vec::new(), Vec::new(), Vec::new());
        for k in r["Keys"].as_array().into_iter().flatten() {
            let pk = t.key_of(&item_from_json(k)?)?;
            if seen.contains(&pk) {
                return Err(ApiError::validation("Provided list of item keys contains duplicates"));
            }
            if unprocessed() {
                skipped.push(k.clone());
            } else if let Some(item) = t.get(&pk) {
                found.push(item_to_json(&proj.as_ref().map_or_else(|| item.clone(), |p| project(item, p))));
            }
            seen.push(pk);
        }
        responses.insert(name.to_string(), Value::Array(found));
        if !skipped.is_empty() {
            let mut rest = r.clone();
            rest["Keys"] = Value::Array(skipped);
            left.insert(given.clone(), rest);
        }
    }
    Ok(json!({ "Responses": responses, "UnprocessedKeys": left }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ddb::value::Av;

    #[test]
    fn successor_bounds_a_prefix() {
        assert_eq!(successor("ab").as_deref(), Some("ac"));
        assert_eq!(successor("a\u{10FFFF}").as_deref(), Some("b"));
        assert_eq!(successor(""), None);
    }

    #[test]
    fn key_span_reads_hash_and_range() {
        let ph = Placeholders::default();
        let _ = &ph;
        let hash = KeyDef { name: "pk".into(), ty: "S".into() };
        let range = KeyDef { name: "sk".into(), ty: "N".into() };
        let c = Cond::And(
            Box::new(Cond::Cmp(
                Operand::Path(vec![Elem::Attr("pk".into())]),
                Op::Eq,
                Operand::Value(Av::S("p".into())),
            )),
            Box::new(Cond::Cmp(
                Operand::Path(vec![Elem::Attr("sk".into())]),
                Op::Gt,
                Operand::Value(Av::N("3".into())),
            )),
        );
        let (h, span) = key_span(&c, &hash, Some(&range)).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(h, KeyVal::S("p".into()));
        assert!(matches!(span.lower, Bound::Excluded(KeyVal::N(_))));
        assert!(matches!(span.upper, Bound::Unbounded));
    }
}
