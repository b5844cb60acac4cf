//! One table: items in a B-tree by partition key then sort key, and each global secondary index
//! maintained incrementally on every write (an item is in a sparse index only while it has the
//! index's key attributes). Queries walk a B-tree range; nothing copies a table.

use super::value::{item_size, Av, Item, KeyVal};
use crate::error::ApiError;
use serde_json::{json, Value};
use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;

/// A key attribute: name and scalar type (`S`, `N`, `B`).
#[derive(Debug, Clone)]
pub(crate) struct KeyDef {
    pub(crate) name: String,
    pub(crate) ty: String,
}

pub(crate) type RKey = Option<KeyVal>;
pub(crate) type PKey = (KeyVal, RKey);

/// Ties inside an index entry: the table key, with sentinels below and above every key so a
/// bound on the index sort key alone is a bound on entries.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Tie {
    Min,
    Key(PKey),
    Max,
}

#[derive(Debug, Clone)]
pub(crate) enum Projection {
    All,
    KeysOnly,
    Include(Vec<String>),
}

/// A global secondary index: entries hold the item as the index projects it, as of the last
/// propagated write, so a lagging index answers with the old item, as DynamoDB's does.
pub(crate) struct Gsi {
    pub(crate) name: String,
    pub(crate) hash: KeyDef,
    pub(crate) range: Option<KeyDef>,
    pub(crate) projection: Projection,
    parts: BTreeMap<KeyVal, BTreeMap<(RKey, Tie), Item>>,
    /// Where each item is in the index now.
    at: BTreeMap<PKey, (KeyVal, RKey)>,
    /// Writes not yet propagated: `(when, key, new item or None for a delete)`, in order.
    pending: VecDeque<(i64, PKey, Option<Item>)>,
    described: Value,
    table_keys: Vec<String>,
}

pub(crate) struct Table {
    pub(crate) name: String,
    pub(crate) arn: String,
    pub(crate) hash: KeyDef,
    pub(crate) range: Option<KeyDef>,
    pub(crate) gsis: Vec<Gsi>,
    pub(crate) ttl: Option<String>,
    parts: BTreeMap<KeyVal, BTreeMap<RKey, Item>>,
    created_ms: i64,
    count: usize,
    bytes: usize,
    key_schema: Value,
    attr_defs: Value,
}

/// Bounds on a sort key, as a key condition gives them.
#[derive(Debug, Clone)]
pub(crate) struct Span {
    pub(crate) lower: Bound<KeyVal>,
    pub(crate) upper: Bound<KeyVal>,
}

impl Span {
    pub(crate) fn all() -> Span {
        Span { lower: Bound::Unbounded, upper: Bound::Unbounded }
    }
}

pub(crate) const MAX_ITEM_BYTES: usize = 400 * 1024;

fn key_schema(v: &Value, defs: &BTreeMap<String, String>) -> Result<(KeyDef, Option<KeyDef>), ApiError> {
    let bad = || {
        ApiError::validation(
            "Invalid KeySchema: one HASH key and at most one RANGE key, each in AttributeDefinitions",
        )
    };
    let arr = v.as_array().ok_or_else(bad)?;
    let def = |kt: &str| -> Result<Option<KeyDef>, ApiError> {
        match arr.iter().find(|k| k["KeyType"] == kt) {
            None => Ok(None),
            Some(k) => {
                let name = k["AttributeName"].as_str().ok_or_else(bad)?.to_string();
                let ty = defs.get(&name).ok_or_else(bad)?.clone();
                Ok(Some(KeyDef { name, ty }))
            }
        }
    };
    let hash = def("HASH")?.ok_or_else(bad)?;
    Ok((hash, def("RANGE")?))
}

impl Table {
    pub(crate) fn create(req: &Value, arn: String, now_ms: i64) -> Result<Table, ApiError> {
        let name = req["TableName"]
            .as_str()
            .ok_or_else(|| ApiError::validation("TableName is required"))?
            .to_string();
        let defs: BTreeMap<String, String> = req["AttributeDefinitions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|d| {
                Some((d["AttributeName"].as_str()?.to_string(), d["AttributeType"].as_str()?.to_string()))
            })
            .collect();
        let (hash, range) = key_schema(&req["KeySchema"], &defs)?;
        let mut gsis = Vec::new();
        for g in req["GlobalSecondaryIndexes"].as_array().into_iter().flatten() {
            let (h, r) = key_schema(&g["KeySchema"], &defs)?;
            let projection = match g["Projection"]["ProjectionType"].as_str().unwrap_or("ALL") {
                "KEYS_ONLY" => Projection::KeysOnly,
                "INCLUDE" => Projection::Include(
                    g["Projection"]["NonKeyAttributes"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|a| a.as_str().map(str::to_string))
                        .collect(),
                ),
                _ => Projection::All,
            };
            let gname =
                g["IndexName"].as_str().ok_or_else(|| ApiError::validation("IndexName is required"))?;
            let described = json!({
                "IndexName": gname, "KeySchema": g["KeySchema"], "Projection": g["Projection"],
                "IndexStatus": "ACTIVE", "IndexArn": format!("{arn}/index/{gname}"),
            });
            let mut table_keys = vec![hash.name.clone()];
            table_keys.extend(range.as_ref().map(|r| r.name.clone()));
            let (parts, at, pending) = (BTreeMap::new(), BTreeMap::new(), VecDeque::new());
            let name = gname.to_string();
            gsis.push(Gsi { name, hash: h, range: r, projection, parts, at, pending, described, table_keys });
        }
        if req.get("LocalSecondaryIndexes").is_some_and(|l| !l.is_null()) {
            return Err(ApiError::unknown_operation("DynamoDB", "CreateTable with LocalSecondaryIndexes"));
        }
        let (key_schema, attr_defs) = (req["KeySchema"].clone(), req["AttributeDefinitions"].clone());
        let parts = BTreeMap::new();
        let (ttl, count, bytes) = (None, 0, 0);
        Ok(Table {
            name,
            arn,
            hash,
            range,
            gsis,
            ttl,
            parts,
            created_ms: now_ms,
            count,
            bytes,
            key_schema,
            attr_defs,
        })
    }

    pub(crate) fn describe(&self) -> Value {
        let mut t = json!({
            "TableName": self.name, "TableArn": self.arn, "TableStatus": "ACTIVE",
            "KeySchema": self.key_schema, "AttributeDefinitions": self.attr_defs,
            "CreationDateTime": self.created_ms as f64 / 1000.0,
            "ItemCount": self.count, "TableSizeBytes": self.bytes,
            "BillingModeSummary": { "BillingMode": "PAY_PER_REQUEST" },
            "ProvisionedThroughput": { "ReadCapacityUnits": 0, "WriteCapacityUnits": 0, "NumberOfDecreasesToday": 0 },
        });
        if !self.gsis.is_empty() {
            let gs: Vec<Value> = self
                .gsis
                .iter()
                .map(|g| {
                    let mut d = g.described.clone();
                    d["ItemCount"] = json!(g.at.len());
                    d
                })
                .collect();
            t["GlobalSecondaryIndexes"] = Value::Array(gs);
        }
        t
    }

    pub(crate) fn gsi(&self, name: &str) -> Result<usize, ApiError> {
        self.gsis.iter().position(|g| g.name == name).ok_or_else(|| {
            ApiError::validation(format!("The table does not have the specified index: {name}"))
        })
    }

    fn mismatch() -> ApiError {
        ApiError::validation("The provided key element does not match the schema")
    }

    /// The primary key of `key`, which must hold exactly the key attributes.
    pub(crate) fn key_of(&self, key: &Item) -> Result<PKey, ApiError> {
        let want = 1 + usize::from(self.range.is_some());
        if key.len() != want {
            return Err(Table::mismatch());
        }
        self.pkey(key)
    }

    /// The primary key of a whole item (which may hold other attributes).
    pub(crate) fn pkey(&self, item: &Item) -> Result<PKey, ApiError> {
        let one = |d: &KeyDef| {
            let v = item.get(&d.name).ok_or_else(|| {
                ApiError::validation(format!(
                    "One or more parameter values were invalid: Missing the key {} in the item",
                    d.name
                ))
            })?;
            if matches!(v, Av::S(s) | Av::B(s) if s.is_empty()) {
                return Err(ApiError::validation(format!(
                    "One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty string value. Key: {}",
                    d.name
                )));
            }
            KeyVal::of(v, &d.ty).ok_or_else(Table::mismatch)
        };
        let h = one(&self.hash)?;
        let r = self.range.as_ref().map(one).transpose()?;
        Ok((h, r))
    }

    /// Only the key attributes of `item` (table keys, plus an index's when `gsi` is given).
    pub(crate) fn keys_only(&self, item: &Item, gsi: Option<usize>) -> Item {
        let mut names = vec![&self.hash.name];
        names.extend(self.range.as_ref().map(|r| &r.name));
        if let Some(g) = gsi.map(|i| &self.gsis[i]) {
            names.push(&g.hash.name);
            names.extend(g.range.as_ref().map(|r| &r.name));
        }
        names.into_iter().filter_map(|n| Some((n.clone(), item.get(n)?.clone()))).collect()
    }

    pub(crate) fn get(&self, pk: &PKey) -> Option<&Item> {
        self.parts.get(&pk.0)?.get(&pk.1)
    }

    /// Checks a new item against the limits and the indexes' key types before it is written.
    pub(crate) fn validate(&self, item: &Item) -> Result<(), ApiError> {
        if item_size(item) > MAX_ITEM_BYTES {
            return Err(ApiError::validation("Item size has exceeded the maximum allowed size"));
        }
        for g in &self.gsis {
            for d in std::iter::once(&g.hash).chain(g.range.as_ref()) {
                if let Some(v) = item.get(&d.name) {
                    if KeyVal::of(v, &d.ty).is_none() || matches!(v, Av::S(s) if s.is_empty()) {
                        return Err(ApiError::validation(format!(
                            "One or more parameter values were invalid: Type mismatch for Index Key {} Expected: {} Actual: {} IndexName: {}",
                            d.name,
                            d.ty,
                            v.type_name(),
                            g.name
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    /// Writes `item` under `pk`, returning the item it replaced. The indexes see the write at
    /// `index_at` (now, unless an index lag is injected).
    pub(crate) fn put(&mut self, pk: PKey, item: Item, index_at: i64) -> Option<Item> {
        let old = self.remove_base(&pk);
        for g in &mut self.gsis {
            g.write(index_at, &pk, Some(&item));
        }
        self.count += 1;
        self.bytes += item_size(&item);
        self.parts.entry(pk.0).or_default().insert(pk.1, item);
        old
    }

    pub(crate) fn delete(&mut self, pk: &PKey, index_at: i64) -> Option<Item> {
        let old = self.remove_base(pk)?;
        for g in &mut self.gsis {
            g.write(index_at, pk, None);
        }
        Some(old)
    }

    fn remove_base(&mut self, pk: &PKey) -> Option<Item> {
        let part = self.parts.get_mut(&pk.0)?;
        let old = part.remove(&pk.1)?;
        if part.is_empty() {
            self.parts.remove(&pk.0);
        }
        self.count -= 1;
        self.bytes -= item_size(&old);
        Some(old)
    }

    /// Propagates every index write due by `now`.
    pub(crate) fn settle(&mut self, now: i64) {
        for g in &mut self.gsis {
            g.settle(now);
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.count
    }

    /// All items in key order (for inspection).
    pub(crate) fn all(&self) -> impl Iterator<Item = &Item> + '_ {
        self.parts.values().flat_map(|p| p.values())
    }

    /// The items of partition `h` (of the table, or of index `gsi`) whose sort key is in `span`,
    /// in sort key order (reversed when not `forward`), strictly after `start` (a sort key and,
    /// on an index, the table key) in that order.
    pub(crate) fn query<'a>(
        &'a self,
        gsi: Option<usize>,
        h: &KeyVal,
        span: &Span,
        forward: bool,
        start: Option<(RKey, PKey)>,
    ) -> Box<dyn Iterator<Item = &'a Item> + 'a> {
        let lift = |b: &Bound<KeyVal>| match b {
            Bound::Included(k) => Bound::Included(Some(k.clone())),
            Bound::Excluded(k) => Bound::Excluded(Some(k.clone())),
            Bound::Unbounded => Bound::Unbounded,
        };
        let (mut lo, mut hi) = (lift(&span.lower), lift(&span.upper));
        match gsi {
            None => {
                let Some(part) = self.parts.get(h) else { return Box::new(std::iter::empty()) };
                if let Some((rk, _)) = start {
                    if forward {
                        lo = max_lower(lo, Bound::Excluded(rk));
                    } else {
                        hi = min_upper(hi, Bound::Excluded(rk));
                    }
                }
                if !valid(&lo, &hi) {
                    return Box::new(std::iter::empty());
                }
                let it = part.range((lo, hi)).map(|(_, v)| v);
                if forward {
                    Box::new(it)
                } else {
                    Box::new(it.rev())
                }
            }
            Some(i) => {
                let Some(part) = self.gsis[i].parts.get(h) else { return Box::new(std::iter::empty()) };
                let mut lo = tie_lower(lo);
                let mut hi = tie_upper(hi);
                if let Some((rk, pk)) = start {
                    if forward {
                        lo = max_lower(lo, Bound::Excluded((rk, Tie::Key(pk))));
                    } else {
                        hi = min_upper(hi, Bound::Excluded((rk, Tie::Key(pk))));
                    }
                }
                if !valid(&lo, &hi) {
                    return Box::new(std::iter::empty());
                }
                let it = part.range((lo, hi)).map(|(_, item)| item);
                if forward {
                    Box::new(it)
                } else {
                    Box::new(it.rev())
                }
            }
        }
    }

    /// Every item of the table (or of index `gsi`), in key order, strictly after `start`.
    pub(crate) fn scan<'a>(
        &'a self,
        gsi: Option<usize>,
        start: Option<(KeyVal, RKey, PKey)>,
    ) -> Box<dyn Iterator<Item = &'a Item> + 'a> {
        let span = Span::all();
        let (first, after) = match start {
            Some((h, rk, pk)) => (Bound::Included(h.clone()), Some((h, rk, pk))),
            None => (Bound::Unbounded, None),
        };
        let hashes: Box<dyn Iterator<Item = &KeyVal>> = match gsi {
            None => Box::new(self.parts.range((first, Bound::Unbounded)).map(|(k, _)| k)),
            Some(i) => Box::new(self.gsis[i].parts.range((first, Bound::Unbounded)).map(|(k, _)| k)),
        };
        Box::new(hashes.flat_map(move |h| {
            let st = after.as_ref().filter(|(sh, _, _)| sh == h).map(|(_, rk, pk)| (rk.clone(), pk.clone()));
            self.query(gsi, h, &span, true, st)
        }))
    }
}

impl Gsi {
    fn key_of(&self, item: &Item) -> Option<(KeyVal, RKey)> {
        let h = KeyVal::of(item.get(&self.hash.name)?, &self.hash.ty)?;
        let r = match &self.range {
            Some(d) => Some(KeyVal::of(item.get(&d.name)?, &d.ty)?),
            None => None,
        };
        Some((h, r))
    }

    /// The item as this index projects it.
    fn projected(&self, item: &Item) -> Item {
        let keep = |k: &String| {
            self.table_keys.contains(k)
                || *k == self.hash.name
                || self.range.as_ref().is_some_and(|r| r.name == *k)
                || matches!(&self.projection, Projection::Include(names) if names.contains(k))
        };
        match self.projection {
            Projection::All => item.clone(),
            _ => item.iter().filter(|(k, _)| keep(k)).map(|(k, v)| (k.clone(), v.clone())).collect(),
        }
    }

    /// A write to the table, seen by the index at `when` (in order after earlier writes).
    fn write(&mut self, when: i64, pk: &PKey, item: Option<&Item>) {
        let when = self.pending.back().map_or(when, |(last, _, _)| when.max(*last));
        self.pending.push_back((when, pk.clone(), item.cloned()));
    }

    fn settle(&mut self, now: i64) {
        while self.pending.front().is_some_and(|(when, _, _)| *when <= now) {
            let Some((_, pk, item)) = self.pending.pop_front() else { break };
            self.apply(pk, item);
        }
    }

    fn apply(&mut self, pk: PKey, item: Option<Item>) {
        if let Some((h, r)) = self.at.remove(&pk) {
            if let Some(part) = self.parts.get_mut(&h) {
                part.remove(&(r, Tie::Key(pk.clone())));
                if part.is_empty() {
                    self.parts.remove(&h);
                }
            }
        }
        let Some(item) = item else { return };
        if let Some((h, r)) = self.key_of(&item) {
            let snapshot = self.projected(&item);
            self.parts.entry(h.clone()).or_default().insert((r.clone(), Tie::Key(pk.clone())), snapshot);
            self.at.insert(pk, (h, r));
        }
    }
}

fn tie_lower(b: Bound<RKey>) -> Bound<(RKey, Tie)> {
    match b {
        Bound::Included(k) => Bound::Included((k, Tie::Min)),
        Bound::Excluded(k) => Bound::Excluded((k, Tie::Max)),
        Bound::Unbounded => Bound::Unbounded,
    }
}

fn tie_upper(b: Bound<RKey>) -> Bound<(RKey, Tie)> {
    match b {
        Bound::Included(k) => Bound::Included((k, Tie::Max)),
        Bound::Excluded(k) => Bound::Excluded((k, Tie::Min)),
        Bound::Unbounded => Bound::Unbounded,
    }
}

fn max_lower<T: Ord>(a: Bound<T>, b: Bound<T>) -> Bound<T> {
    match (a, b) {
        (Bound::Unbounded, x) | (x, Bound::Unbounded) => x,
        (Bound::Included(x), Bound::Included(y)) => Bound::Included(x.max(y)),
        (Bound::Excluded(x), Bound::Excluded(y)) => Bound::Excluded(x.max(y)),
        (Bound::Included(i), Bound::Excluded(e)) | (Bound::Excluded(e), Bound::Included(i)) => {
            if i > e {
                Bound::Included(i)
            } else {
                Bound::Excluded(e)
            }
        }
    }
}

fn min_upper<T: Ord>(a: Bound<T>, b: Bound<T>) -> Bound<T> {
    match (a, b) {
        (Bound::Unbounded, x) | (x, Bound::Unbounded) => x,
        (Bound::Included(x), Bound::Included(y)) => Bound::Included(x.min(y)),
        (Bound::Excluded(x), Bound::Excluded(y)) => Bound::Excluded(x.min(y)),
        (Bound::Included(i), Bound::Excluded(e)) | (Bound::Excluded(e), Bound::Included(i)) => {
            if i < e {
                Bound::Included(i)
            } else {
                Bound::Excluded(e)
            }
        }
    }
}

/// Whether `BTreeMap::range` accepts the bounds (it panics on an inverted or empty-excluded range).
fn valid<T: Ord>(lo: &Bound<T>, hi: &Bound<T>) -> bool {
    match (lo, hi) {
        (Bound::Included(a), Bound::Included(b)) => a <= b,
        (Bound::Included(a) | Bound::Excluded(a), Bound::Excluded(b))
        | (Bound::Excluded(a), Bound::Included(b)) => a < b,
        _ => true,
    }
}
