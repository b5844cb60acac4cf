//! Request metering: an SDK interceptor that counts what Sundial spends, by component.
//!
//! Attach [`Meter::interceptor`] to the DynamoDB, SQS and Lambda clients of a component (tick,
//! worker, api) and every request is counted by service and operation. DynamoDB capacity is
//! *computed* from the request and response with DynamoDB's published rules — the local
//! emulator reports no real consumed capacity — so benches and tests can check the cost budget
//! (docs/performance.md, "Targets": ≤ 3 write units, ≤ 0.3 SQS requests per execution) on any
//! endpoint:
//!
//! - PutItem: one write unit per started KiB of the item, plus the same for every index whose
//!   keys the item carries (`ALL` projection) or one per `KEYS_ONLY` index.
//! - UpdateItem: one unit per started KiB of the item (taken from `ReturnValues` if the call
//!   asked for them, else assumed under 1 KiB, which Sundial's items are), plus two for every
//!   index whose key it sets (the index deletes the old entry and puts the new one), one for every
//!   index key it removes, and one for an `ALL`-projected index of an item it changes there.
//! - A failed condition still consumes the write (DynamoDB bills it), so it is counted too.
//! - GetItem and BatchGetItem: ½ read unit per started 4 KiB of each item, 1 if the request
//!   asked for a strongly consistent read; Query: the same over the summed size of the returned
//!   items, at least one started 4 KiB.

use crate::intercept::{Note, Observe, Observer};
use aws_sdk_dynamodb::types::AttributeValue;
use aws_smithy_runtime_api::client::interceptors::context::{FinalizerInterceptorContextRef, Input};
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use sundial_core::config::Config;
use sundial_model::keys;
use sundial_model::resources::{Resources, TableDef};
use sundial_store::items::attr;

/// Totals of one component.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Usage {
    /// Requests by `service:Operation`.
    pub requests: BTreeMap<String, u64>,
    /// DynamoDB write units (tables and indexes).
    pub write_units: f64,
    /// DynamoDB write units spent on indexes alone.
    pub index_write_units: f64,
    /// DynamoDB read units.
    pub read_units: f64,
    /// Write units by what they wrote ([`item_kind`]: `execution`, `job`, `watermark`, `slot`,
    /// `tenantGate`, `other`, and `index:{name}` for each index): where each unit goes, and what
    /// the capacity model (`sundial capacity`) scales up to its hot partitions.
    pub writes_by_kind: BTreeMap<String, f64>,
    /// Read units by what they read (same kinds; a Query is booked under its index or table).
    pub reads_by_kind: BTreeMap<String, f64>,
}

impl Usage {
    /// Requests to one service (`dynamodb`, `sqs`, `lambda`).
    pub fn service_requests(&self, service: &str) -> u64 {
        self.requests.iter().filter(|(k, _)| k.split(':').next() == Some(service)).map(|(_, v)| v).sum()
    }
}

/// A shared meter; clone it into as many interceptors as there are components.
#[derive(Debug, Clone)]
pub struct Meter {
    tables: Arc<HashMap<String, TableDef>>,
    usage: Arc<Mutex<BTreeMap<String, Usage>>>,
}

impl Meter {
    /// A meter that knows the tables of `cfg` (to price index writes).
    pub fn new(cfg: &Config) -> Self {
        let r = Resources::get();
        let tables = HashMap::from([
            (cfg.jobs_table.clone(), r.jobs().clone()),
            (cfg.executions_table.clone(), r.executions().clone()),
        ]);
        Meter { tables: Arc::new(tables), usage: Arc::new(Mutex::new(BTreeMap::new())) }
    }

    /// An interceptor that books requests under `component`.
    pub fn interceptor(&self, component: &str) -> Observe<MeterInterceptor> {
        Observe(MeterInterceptor { meter: self.clone(), component: component.to_string() })
    }

    /// Usage so far, by component.
    pub fn snapshot(&self) -> BTreeMap<String, Usage> {
        self.usage.lock().map(|u| u.clone()).unwrap_or_default()
    }

    /// Clears the counters.
    pub fn reset(&self) {
        if let Ok(mut u) = self.usage.lock() {
            u.clear();
        }
    }

    fn book(&self, component: &str, f: impl FnOnce(&mut Usage)) {
        if let Ok(mut u) = self.usage.lock() {
            f(u.entry(component.to_string()).or_default());
        }
    }

    /// SDK clients whose every request is booked under `component` (and recorded, when the
    /// access recorder is installed).
    pub fn clients(&self, sdk: &aws_config::SdkConfig, component: &str) -> sundial_core::aws::Clients {
        let metered = crate::intercept::with_interceptors(sundial_core::aws::Clients::plain(sdk), |_| {
            self.interceptor(component)
        });
        sundial_core::aws::decorated(metered)
    }
}

/// The interceptor of one component.
#[derive(Debug, Clone)]
pub struct MeterInterceptor {
    meter: Meter,
    component: String,
}

/// DynamoDB's item size: attribute names plus values (strings and binaries by length, numbers
/// by roughly one byte per two digits plus one, containers 3 bytes plus their elements).
pub fn item_size(item: &HashMap<String, AttributeValue>) -> usize {
    item.iter().map(|(k, v)| k.len() + value_size(v)).sum()
}

fn value_size(v: &AttributeValue) -> usize {
    match v {
        AttributeValue::S(s) => s.len(),
        AttributeValue::N(n) => n.trim_start_matches('-').len().div_ceil(2) + 1,
        AttributeValue::B(b) => b.as_ref().len(),
        AttributeValue::Bool(_) | AttributeValue::Null(_) => 1,
        AttributeValue::L(l) => 3 + l.iter().map(|x| 1 + value_size(x)).sum::<usize>(),
        AttributeValue::M(m) => 3 + m.iter().map(|(k, x)| 1 + k.len() + value_size(x)).sum::<usize>(),
        AttributeValue::Ss(s) => s.iter().map(String::len).sum(),
        AttributeValue::Ns(s) => s.iter().map(|n| n.len().div_ceil(2) + 1).sum(),
        AttributeValue::Bs(s) => s.iter().map(|b| b.as_ref().len()).sum(),
        _ => 0,
    }
}

/// The units of one write: the item's, booked under its kind, and each index's.
struct Units {
    base: f64,
    kind: &'static str,
    index: Vec<(String, f64)>,
}

/// What an item (or a key) is, from its key: `execution`, `slot`, `tenantGate`, `job`,
/// `watermark`, or `other` (job versions, operations log, test items).
pub fn item_kind(pk: &str, sk: &str) -> &'static str {
    if keys::is_watermark_pk(pk) && sk == keys::WATERMARK_SK {
        "watermark"
    } else if sk.starts_with(keys::EXEC_SK_PREFIX) {
        "execution"
    } else if sk == keys::JOB_SLOT_SK {
        "slot"
    } else if sk == keys::TENANT_RUNNING_SK && keys::is_gate_pk(pk) {
        "tenantGate"
    } else if sk == keys::JOB_DEF_SK {
        "job"
    } else {
        "other"
    }
}

fn kind_of_item(item: &HashMap<String, AttributeValue>) -> &'static str {
    let text = |k: &str| item.get(k).and_then(|v| v.as_s().ok()).map(String::as_str).unwrap_or("");
    item_kind(text(attr::PK), text(attr::SK))
}

fn kib(bytes: usize) -> f64 {
    bytes.max(1).div_ceil(1024) as f64
}

impl MeterInterceptor {
    fn table(&self, name: Option<&str>) -> Option<&TableDef> {
        name.and_then(|n| self.meter.tables.get(n))
    }

    /// Write units of a PutItem of `item` into `table`: the item's and each index's.
    fn put_units(&self, table: Option<&str>, item: &HashMap<String, AttributeValue>) -> Units {
        let size = item_size(item);
        let mut units = Units { base: kib(size), kind: kind_of_item(item), index: Vec::new() };
        if let Some(def) = self.table(table) {
            for ix in &def.indexes {
                if item.contains_key(&ix.partition_key.name) && item.contains_key(&ix.sort_key.name) {
                    units.index.push((ix.name.clone(), if ix.projection == "ALL" { kib(size) } else { 1.0 }));
                }
            }
        }
        units
    }

    fn update_units(&self, u: &aws_sdk_dynamodb::operation::update_item::UpdateItemInput) -> Units {
        let names = u.expression_attribute_names().cloned().unwrap_or_default();
        let expr = u.update_expression().unwrap_or_default();
        let resolve = |tok: &str| names.get(tok).cloned().unwrap_or_else(|| tok.to_string());
        // Split "SET a = :x, b = :y REMOVE c, d" into the attributes set and removed.
        let (mut set, mut removed, mut mode) = (Vec::new(), Vec::new(), "");
        for word in expr.split(|c: char| c.is_whitespace() || c == ',') {
            match word {
                "SET" | "REMOVE" | "ADD" | "DELETE" => mode = word,
                w if w.starts_with('#') || w.chars().next().is_some_and(|c| c.is_ascii_alphabetic()) => {
                    let a = resolve(w.split(['=', '[', '.']).next().unwrap_or(w));
                    match mode {
                        "SET" | "ADD" if !expr.contains(&format!("= {w}")) => set.push(a),
                        "REMOVE" | "DELETE" => removed.push(a),
                        _ => {}
                    }
                }
                _ => {}
            }
        }
        let mut units =
            Units { base: 1.0, kind: u.key().map(kind_of_item).unwrap_or("other"), index: Vec::new() };
        if let Some(def) = self.table(u.table_name()) {
            for ix in &def.indexes {
                let key_set = set.iter().any(|a| *a == ix.partition_key.name || *a == ix.sort_key.name);
                let key_removed = removed.contains(&ix.partition_key.name);
                if key_set {
                    units.index.push((ix.name.clone(), 2.0));
                } else if key_removed {
                    units.index.push((ix.name.clone(), 1.0));
                }
            }
        }
        units
    }
}

impl Observer for MeterInterceptor {
    const NAME: &'static str = "SundialMeter";

    fn on_request(&self, meta: &Metadata, input: &Input) {
        let key = format!("{}:{}", meta.service().to_ascii_lowercase(), meta.name());
        let mut writes: Vec<Units> = Vec::new();
        use aws_sdk_dynamodb::operation as op;
        if let Some(p) = input.downcast_ref::<op::put_item::PutItemInput>() {
            writes.push(self.put_units(p.table_name(), p.item().unwrap_or(&HashMap::new())));
        } else if let Some(u) = input.downcast_ref::<op::update_item::UpdateItemInput>() {
            writes.push(self.update_units(u));
        } else if let Some(d) = input.downcast_ref::<op::delete_item::DeleteItemInput>() {
            writes.push(Units {
                base: 1.0,
                kind: d.key().map(kind_of_item).unwrap_or("other"),
                index: vec![],
            });
        } else if let Some(t) = input.downcast_ref::<op::transact_write_items::TransactWriteItemsInput>() {
            // Transactions cost twice the units of their items.
            for item in t.transact_items() {
                let mut w = if let Some(p) = item.put() {
                    self.put_units(Some(p.table_name()), p.item())
                } else {
                    let key =
                        item.update().map(|u| u.key()).or_else(|| item.condition_check().map(|c| c.key()));
                    Units { base: 1.0, kind: key.map(kind_of_item).unwrap_or("other"), index: vec![] }
                };
                w.base *= 2.0;
                w.index.iter_mut().for_each(|(_, u)| *u *= 2.0);
                writes.push(w);
            }
        }
        self.meter.book(&self.component, |u| {
            *u.requests.entry(key).or_default() += 1;
            for w in writes {
                u.write_units += w.base;
                *u.writes_by_kind.entry(w.kind.to_string()).or_default() += w.base;
                for (ix, units) in w.index {
                    u.write_units += units;
                    u.index_write_units += units;
                    *u.writes_by_kind.entry(format!("index:{ix}")).or_default() += units;
                }
            }
        });
    }

    fn note(&self, input: &Input) -> Option<Note> {
        use aws_sdk_dynamodb::operation as op;
        let one = |table: Option<&str>, c: Option<bool>| vec![(table.unwrap_or_default().to_string(), c)];
        Some(if let Some(g) = input.downcast_ref::<op::get_item::GetItemInput>() {
            Note { consistent_read: one(g.table_name(), g.consistent_read()), index: None }
        } else if let Some(q) = input.downcast_ref::<op::query::QueryInput>() {
            Note {
                consistent_read: one(q.table_name(), q.consistent_read()),
                index: q.index_name().map(str::to_string),
            }
        } else if let Some(b) = input.downcast_ref::<op::batch_get_item::BatchGetItemInput>() {
            let consistent_read = b
                .request_items()
                .into_iter()
                .flatten()
                .map(|(t, k)| (t.clone(), k.consistent_read()))
                .collect();
            Note { consistent_read, index: None }
        } else {
            return None;
        })
    }

    fn on_finish(&self, context: &FinalizerInterceptorContextRef<'_>, note: Option<&Note>) {
        let Some(Ok(out)) = context.output_or_error() else { return };
        use aws_sdk_dynamodb::operation as op;
        // The read's consistency, from the note taken of its input (gone by now).
        let consistency = |table: Option<&str>| {
            note.and_then(|n| {
                n.consistent_read.iter().find(|(t, _)| table.is_none_or(|x| x == t)).and_then(|(_, c)| *c)
            })
        };
        let (r, kind) = if let Some(g) = out.downcast_ref::<op::get_item::GetItemOutput>() {
            let kind = g.item().map(kind_of_item).unwrap_or("other");
            let units = g.item().map(|i| item_size(i).max(1).div_ceil(4096) as f64).unwrap_or(1.0);
            (units * read_factor(consistency(None)), kind.to_string())
        } else if let Some(q) = out.downcast_ref::<op::query::QueryOutput>() {
            let bytes: usize = q.items().iter().map(item_size).sum();
            let kind = note
                .and_then(|n| n.index.as_deref())
                .map_or_else(|| "query".to_string(), |ix| format!("index:{ix}"));
            let factor = read_factor(consistency(None));
            ((bytes.max(1).div_ceil(4096) as f64 * factor).max(factor), kind)
        } else if let Some(b) = out.downcast_ref::<op::batch_get_item::BatchGetItemOutput>() {
            let mut units = 0.0;
            let mut kind = "other";
            for (table, items) in b.responses().into_iter().flatten() {
                units += items.iter().map(|i| item_size(i).max(1).div_ceil(4096) as f64).sum::<f64>()
                    * read_factor(consistency(Some(table)));
                kind = items.first().map(|i| kind_of_item(i)).unwrap_or(kind);
            }
            (units, kind.to_string())
        } else {
            (0.0, String::new())
        };
        if r > 0.0 {
            self.meter.book(&self.component, |u| {
                u.read_units += r;
                *u.reads_by_kind.entry(kind).or_default() += r;
            });
        }
    }
}

/// Read units per started 4 KiB: 1 for a strongly consistent read, ½ otherwise (DynamoDB's
/// default when the request does not ask).
fn read_factor(consistent: Option<bool>) -> f64 {
    if consistent == Some(true) {
        1.0
    } else {
        0.5
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item_size_follows_dynamodb_rules() {
        let item = HashMap::from([
            (attr::PK.to_string(), AttributeValue::S(keys::job_pk("a", "b"))), // 2 + 7
            ("n".to_string(), AttributeValue::N("12345".into())),              // 1 + 4
        ]);
        assert_eq!(item_size(&item), 14);
        assert_eq!(kib(1024), 1.0);
        assert_eq!(kib(1025), 2.0);
    }

    #[test]
    fn items_are_told_apart_by_their_keys() {
        assert_eq!(item_kind(&keys::watermark_pk(3), keys::WATERMARK_SK), "watermark");
        assert_eq!(item_kind(&keys::job_pk("t", "j"), &keys::exec_sk(1)), "execution");
        assert_eq!(item_kind(&keys::job_pk("t", "j"), keys::JOB_SLOT_SK), "slot");
        assert_eq!(item_kind(&keys::tenant_running_pk("t"), keys::TENANT_RUNNING_SK), "tenantGate");
        assert_eq!(item_kind(&keys::job_pk("t", "j"), keys::JOB_DEF_SK), "job");
        assert_eq!(item_kind(&keys::job_pk("t", "j"), &keys::job_version_sk(2)), "other");
    }
}
