//! Request metering: an SDK interceptor that counts what Sundial spends, by component.
//!
//! Attach [`Meter::interceptor`] to the DynamoDB, SQS and Lambda clients of a component (tick,
//! worker, api) and every request is counted by service and operation. DynamoDB capacity is
//! *computed* from the request and response with DynamoDB's published rules — the local
//! emulator reports no real consumed capacity — so benches and tests can check the cost budget
//! (DESIGN §6: ≤ 3 write units, ≤ 0.3 SQS requests per execution) on any endpoint:
//!
//! - PutItem: one write unit per started KiB of the item, plus the same for every index whose
//!   keys the item carries (`ALL` projection) or one per `KEYS_ONLY` index.
//! - UpdateItem: one unit per started KiB of the item (taken from `ReturnValues` if the call
//!   asked for them, else assumed under 1 KiB, which Sundial's items are), plus two for every
//!   index whose key it sets (the index deletes the old entry and puts the new one), one for every
//!   index key it removes, and one for an `ALL`-projected index of an item it changes there.
//! - A failed condition still consumes the write (DynamoDB bills it), so it is counted too.
//! - GetItem: ½ read unit per started 4 KiB (1 if strongly consistent); Query: the same over the
//!   summed size of the returned items, at least ½.

use crate::config::Config;
use crate::resources::{Resources, TableDef};
use aws_sdk_dynamodb::types::AttributeValue;
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::context::{
    BeforeSerializationInterceptorContextRef, FinalizerInterceptorContextRef,
};
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

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
    pub fn interceptor(&self, component: &str) -> MeterInterceptor {
        MeterInterceptor { meter: self.clone(), component: component.to_string() }
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

    /// SDK clients whose every request is booked under `component`.
    pub fn clients(&self, sdk: &aws_config::SdkConfig, component: &str) -> crate::aws::Clients {
        let ddb =
            aws_sdk_dynamodb::config::Builder::from(sdk).interceptor(self.interceptor(component)).build();
        let sqs = aws_sdk_sqs::config::Builder::from(sdk).interceptor(self.interceptor(component)).build();
        let lambda =
            aws_sdk_lambda::config::Builder::from(sdk).interceptor(self.interceptor(component)).build();
        crate::aws::Clients {
            ddb: aws_sdk_dynamodb::Client::from_conf(ddb),
            sqs: aws_sdk_sqs::Client::from_conf(sqs),
            lambda: aws_sdk_lambda::Client::from_conf(lambda),
        }
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

fn kib(bytes: usize) -> f64 {
    bytes.max(1).div_ceil(1024) as f64
}

impl MeterInterceptor {
    fn table(&self, name: Option<&str>) -> Option<&TableDef> {
        name.and_then(|n| self.meter.tables.get(n))
    }

    /// Write units of a PutItem of `item` into `table`: (total, of which indexes).
    fn put_units(&self, table: Option<&str>, item: &HashMap<String, AttributeValue>) -> (f64, f64) {
        let size = item_size(item);
        let mut index = 0.0;
        if let Some(def) = self.table(table) {
            for ix in &def.indexes {
                if item.contains_key(&ix.partition_key.name) && item.contains_key(&ix.sort_key.name) {
                    index += if ix.projection == "ALL" { kib(size) } else { 1.0 };
                }
            }
        }
        (kib(size) + index, index)
    }

    fn update_units(&self, u: &aws_sdk_dynamodb::operation::update_item::UpdateItemInput) -> (f64, f64) {
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
        let mut index = 0.0;
        if let Some(def) = self.table(u.table_name()) {
            for ix in &def.indexes {
                let key_set = set.iter().any(|a| *a == ix.partition_key.name || *a == ix.sort_key.name);
                let key_removed = removed.contains(&ix.partition_key.name);
                if key_set {
                    index += 2.0;
                } else if key_removed {
                    index += 1.0;
                }
            }
        }
        (1.0 + index, index)
    }
}

impl Intercept for MeterInterceptor {
    fn name(&self) -> &'static str {
        "SundialMeter"
    }

    // Not `read_before_execution`: client interceptors run that hook before the operation's
    // configuration (and so its `Metadata`) is in the bag.
    fn read_before_serialization(
        &self,
        context: &BeforeSerializationInterceptorContextRef<'_>,
        _rc: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let Some(meta) = cfg.load::<Metadata>() else { return Ok(()) };
        let key = format!("{}:{}", meta.service().to_ascii_lowercase(), meta.name());
        let input = context.input();
        let (mut w, mut wi) = (0.0, 0.0);
        use aws_sdk_dynamodb::operation as op;
        if let Some(p) = input.downcast_ref::<op::put_item::PutItemInput>() {
            (w, wi) = self.put_units(p.table_name(), p.item().unwrap_or(&HashMap::new()));
        } else if let Some(u) = input.downcast_ref::<op::update_item::UpdateItemInput>() {
            (w, wi) = self.update_units(u);
        } else if input.downcast_ref::<op::delete_item::DeleteItemInput>().is_some() {
            w = 1.0;
        } else if let Some(t) = input.downcast_ref::<op::transact_write_items::TransactWriteItemsInput>() {
            // Transactions cost twice the units of their items.
            for item in t.transact_items() {
                let (a, b) = if let Some(p) = item.put() {
                    self.put_units(Some(p.table_name()), p.item())
                } else {
                    (1.0, 0.0)
                };
                w += 2.0 * a;
                wi += 2.0 * b;
            }
        }
        self.meter.book(&self.component, |u| {
            *u.requests.entry(key).or_default() += 1;
            u.write_units += w;
            u.index_write_units += wi;
        });
        Ok(())
    }

    fn read_after_execution(
        &self,
        context: &FinalizerInterceptorContextRef<'_>,
        _rc: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let Some(Ok(out)) = context.output_or_error() else { return Ok(()) };
        use aws_sdk_dynamodb::operation as op;
        let r = if let Some(g) = out.downcast_ref::<op::get_item::GetItemOutput>() {
            // Consistency is not visible here; price as strongly consistent (the worst case).
            g.item().map(|i| item_size(i).max(1).div_ceil(4096) as f64).unwrap_or(1.0)
        } else if let Some(q) = out.downcast_ref::<op::query::QueryOutput>() {
            let bytes: usize = q.items().iter().map(item_size).sum();
            (bytes.max(1).div_ceil(4096) as f64 * 0.5).max(0.5)
        } else {
            0.0
        };
        if r > 0.0 {
            self.meter.book(&self.component, |u| u.read_units += r);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys;
    use crate::store::items::attr;

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
}
