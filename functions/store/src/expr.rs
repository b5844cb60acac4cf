//! The one builder of DynamoDB expressions: updates (`SET`, `REMOVE`, `ADD` to a string set, `list_append`),
//! conditions, key conditions, filters and projections.
//!
//! Every attribute name goes through a `#name` placeholder and every value through a `:vN`
//! placeholder, so no attribute can collide with one of DynamoDB's reserved words (`status`,
//! `state`, `next`, ...) and no value is ever spliced into expression text. A store function
//! says what it means (`e.set(attr::STATUS, ..).cond_eq(attr::TOKEN, ..)`), and
//! [`WithExpr::expr`] puts the pieces on the request.

use aws_sdk_dynamodb::operation::put_item::builders::PutItemFluentBuilder;
use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::types::builders::PutBuilder;
use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::HashMap;

/// A comparison operator of a condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    /// `=`
    Eq,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `<>`
    Ne,
    /// `>`
    Gt,
}

impl Cmp {
    fn as_str(self) -> &'static str {
        match self {
            Cmp::Eq => "=",
            Cmp::Lt => "<",
            Cmp::Le => "<=",
            Cmp::Ne => "<>",
            Cmp::Gt => ">",
        }
    }
}

/// An expression under construction. Conditions (and key conditions, and filters) are joined
/// with `AND`. Two expressions are equal when they render the same request.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Expr {
    set: Vec<String>,
    remove: Vec<String>,
    add: Vec<String>,
    delete: Vec<String>,
    cond: Vec<String>,
    key: Vec<String>,
    filter: Vec<String>,
    projection: Vec<String>,
    names: HashMap<String, String>,
    values: HashMap<String, AttributeValue>,
    /// What the update writes, for telling its own landing from a race (`crate::landed`).
    written: crate::landed::Written,
}

impl Expr {
    /// An empty expression.
    pub fn new() -> Self {
        Expr::default()
    }

    /// The placeholder of attribute (or map key) `a`: `#a` when `a` is a plain name, else
    /// `#k0`, `#k1`, ... (a map key such as an execution id `job@ms` is not placeholder text).
    fn name(&mut self, a: &str) -> String {
        let plain = !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        let mut candidate = plain.then(|| format!("#{a}"));
        let mut numbered = 0;
        loop {
            let k = candidate.take().unwrap_or_else(|| {
                numbered += 1;
                format!("#k{}", numbered - 1)
            });
            match self.names.get(&k) {
                None => {
                    self.names.insert(k.clone(), a.to_string());
                    return k;
                }
                Some(existing) if existing == a => return k,
                Some(_) => {}
            }
        }
    }

    fn entry(&mut self, map: &str, key: &str) -> String {
        format!("{}.{}", self.name(map), self.name(key))
    }

    fn val(&mut self, v: AttributeValue) -> String {
        let k = format!(":v{}", self.values.len());
        self.values.insert(k.clone(), v);
        k
    }

    fn compare(&mut self, a: &str, op: Cmp, v: AttributeValue) -> String {
        let (n, v) = (self.name(a), self.val(v));
        format!("{n} {} {v}", op.as_str())
    }

    /// `SET a = v`.
    pub fn set(&mut self, a: &str, v: AttributeValue) -> &mut Self {
        self.written.set(a, &v);
        let (n, v) = (self.name(a), self.val(v));
        self.set.push(format!("{n} = {v}"));
        self
    }

    /// `SET map.key = v` (one entry of a map attribute).
    pub fn set_entry(&mut self, map: &str, key: &str, v: AttributeValue) -> &mut Self {
        self.written.opaque();
        let (n, v) = (self.entry(map, key), self.val(v));
        self.set.push(format!("{n} = {v}"));
        self
    }

    /// `SET a = list_append(a, items)`: appends to a list attribute.
    pub fn append(&mut self, a: &str, items: Vec<AttributeValue>) -> &mut Self {
        self.written.append(a, &items);
        let (n, v) = (self.name(a), self.val(AttributeValue::L(items)));
        self.set.push(format!("{n} = list_append({n}, {v})"));
        self
    }

    /// Appends one event to an execution's audit timeline, in the same write as the transition
    /// it records.
    pub fn append_event(&mut self, ev: &sundial_model::AuditEvent) -> &mut Self {
        self.append(super::items::attr::TIMELINE, vec![super::items::audit_to_av(ev)])
    }

    /// `SET a = a + by` (the attribute must exist).
    pub fn increment(&mut self, a: &str, by: i64) -> &mut Self {
        self.written.opaque();
        let (n, v) = (self.name(a), self.val(AttributeValue::N(by.to_string())));
        self.set.push(format!("{n} = {n} + {v}"));
        self
    }

    /// `SET a = if_not_exists(a, 0) + by` (a counter that may not exist yet).
    pub fn add(&mut self, a: &str, by: i64) -> &mut Self {
        self.written.opaque();
        let (n, v) = (self.name(a), self.val(AttributeValue::N(by.to_string())));
        let zero = self.val(AttributeValue::N("0".into()));
        self.set.push(format!("{n} = if_not_exists({n}, {zero}) + {v}"));
        self
    }

    /// `ADD a :set`: puts strings into a string-set attribute (created if absent); a string
    /// already there is not added twice.
    pub fn add_strings(&mut self, a: &str, items: Vec<String>) -> &mut Self {
        self.written.add_strings(a, &items);
        let (n, v) = (self.name(a), self.val(AttributeValue::Ss(items)));
        self.add.push(format!("{n} {v}"));
        self
    }

    /// `DELETE a :set`: takes strings out of a string-set attribute (absent ones are no error;
    /// a set left empty is removed).
    pub fn delete_strings(&mut self, a: &str, items: Vec<String>) -> &mut Self {
        self.written.delete_strings(a, &items);
        let (n, v) = (self.name(a), self.val(AttributeValue::Ss(items)));
        self.delete.push(format!("{n} {v}"));
        self
    }

    /// `REMOVE a`.
    pub fn remove(&mut self, a: &str) -> &mut Self {
        self.written.remove(a);
        let n = self.name(a);
        self.remove.push(n);
        self
    }

    /// `REMOVE map.key`.
    pub fn remove_entry(&mut self, map: &str, key: &str) -> &mut Self {
        self.written.opaque();
        let n = self.entry(map, key);
        self.remove.push(n);
        self
    }

    /// Condition `a = v`.
    pub fn cond_eq(&mut self, a: &str, v: AttributeValue) -> &mut Self {
        self.cond_cmp(a, Cmp::Eq, v)
    }

    /// Condition `a <op> v`.
    pub fn cond_cmp(&mut self, a: &str, op: Cmp, v: AttributeValue) -> &mut Self {
        if op == Cmp::Eq {
            self.written.holds(a, &v);
        }
        let c = self.compare(a, op, v);
        self.cond.push(c);
        self
    }

    /// Condition `attribute_exists(a)`.
    pub fn cond_exists(&mut self, a: &str) -> &mut Self {
        let n = self.name(a);
        self.cond.push(format!("attribute_exists({n})"));
        self
    }

    /// Condition `attribute_not_exists(a)`: on a key attribute, "no such item yet".
    pub fn cond_not_exists(&mut self, a: &str) -> &mut Self {
        let n = self.name(a);
        self.cond.push(format!("attribute_not_exists({n})"));
        self
    }

    /// Condition `(attribute_not_exists(a) OR a <op> v)`: absent, or compares.
    pub fn cond_absent_or(&mut self, a: &str, op: Cmp, v: AttributeValue) -> &mut Self {
        let n = self.name(a);
        let c = self.compare(a, op, v);
        self.cond.push(format!("(attribute_not_exists({n}) OR {c})"));
        self
    }

    /// Condition `(attribute_not_exists(a) OR size(a) < max OR contains(a, member))`: a set
    /// that may take `member` without growing past `max` (it is there already, or there is
    /// room).
    pub fn cond_set_room(&mut self, a: &str, max: usize, member: &str) -> &mut Self {
        let n = self.name(a);
        let (m, v) =
            (self.val(AttributeValue::N(max.to_string())), self.val(AttributeValue::S(member.into())));
        self.cond.push(format!("(attribute_not_exists({n}) OR size({n}) < {m} OR contains({n}, {v}))"));
        self
    }

    /// Condition `attribute_exists(map.key)`.
    pub fn cond_entry_exists(&mut self, map: &str, key: &str) -> &mut Self {
        let n = self.entry(map, key);
        self.cond.push(format!("attribute_exists({n})"));
        self
    }

    /// Key condition `a = v` (the partition key of a Query).
    pub fn key_eq(&mut self, a: &str, v: AttributeValue) -> &mut Self {
        let c = self.compare(a, Cmp::Eq, v);
        self.key.push(c);
        self
    }

    /// Key condition `a <op> v` (a sort key bound).
    pub fn key_cmp(&mut self, a: &str, op: Cmp, v: AttributeValue) -> &mut Self {
        let c = self.compare(a, op, v);
        self.key.push(c);
        self
    }

    /// Key condition `a BETWEEN lo AND hi` (a sort key range, both ends included).
    pub fn key_between(&mut self, a: &str, lo: AttributeValue, hi: AttributeValue) -> &mut Self {
        let (n, lo, hi) = (self.name(a), self.val(lo), self.val(hi));
        self.key.push(format!("{n} BETWEEN {lo} AND {hi}"));
        self
    }

    /// Key condition `begins_with(a, prefix)`.
    pub fn key_begins_with(&mut self, a: &str, prefix: &str) -> &mut Self {
        let (n, v) = (self.name(a), self.val(AttributeValue::S(prefix.to_string())));
        self.key.push(format!("begins_with({n}, {v})"));
        self
    }

    /// Filter `a = v` (applied after the read: the items read are still billed).
    pub fn filter_eq(&mut self, a: &str, v: AttributeValue) -> &mut Self {
        let c = self.compare(a, Cmp::Eq, v);
        self.filter.push(c);
        self
    }

    /// Filter `attribute_not_exists(a)`.
    pub fn filter_not_exists(&mut self, a: &str) -> &mut Self {
        let n = self.name(a);
        self.filter.push(format!("attribute_not_exists({n})"));
        self
    }

    /// Filter `a IN (v1, v2, ...)`.
    pub fn filter_in(&mut self, a: &str, vs: impl IntoIterator<Item = AttributeValue>) -> &mut Self {
        let n = self.name(a);
        let vs: Vec<String> = vs.into_iter().map(|v| self.val(v)).collect();
        self.filter.push(format!("{n} IN ({})", vs.join(", ")));
        self
    }

    /// Projection: read only these attributes.
    pub fn project(&mut self, attrs: &[&str]) -> &mut Self {
        for a in attrs {
            let n = self.name(a);
            self.projection.push(n);
        }
        self
    }

    fn update_text(&self) -> Option<String> {
        let mut parts = Vec::new();
        if !self.set.is_empty() {
            parts.push(format!("SET {}", self.set.join(", ")));
        }
        if !self.remove.is_empty() {
            parts.push(format!("REMOVE {}", self.remove.join(", ")));
        }
        if !self.add.is_empty() {
            parts.push(format!("ADD {}", self.add.join(", ")));
        }
        if !self.delete.is_empty() {
            parts.push(format!("DELETE {}", self.delete.join(", ")));
        }
        (!parts.is_empty()).then(|| parts.join(" "))
    }

    /// Whether `item`, returned by this update's failed condition, is what the update itself
    /// wrote on an earlier attempt whose response was lost (`crate::landed`).
    pub(crate) fn landed(&self, item: &HashMap<String, AttributeValue>) -> bool {
        self.written.landed(item)
    }

    /// The update and condition expressions as a request carries them (for request-shape tests).
    #[cfg(test)]
    pub(crate) fn rendered(&self) -> (Option<String>, Option<String>) {
        (self.update_text(), Expr::and(&self.cond))
    }

    fn and(clauses: &[String]) -> Option<String> {
        (!clauses.is_empty()).then(|| clauses.join(" AND "))
    }

    fn names(&mut self) -> Option<HashMap<String, String>> {
        let n = std::mem::take(&mut self.names);
        (!n.is_empty()).then_some(n)
    }

    fn values(&mut self) -> Option<HashMap<String, AttributeValue>> {
        let v = std::mem::take(&mut self.values);
        (!v.is_empty()).then_some(v)
    }
}

/// Puts an [`Expr`] on a request. Each request kind takes only the clauses it understands; a
/// clause it would ignore is a bug, caught in debug builds.
pub trait WithExpr: Sized {
    /// This request with `e`'s expressions, names and values.
    fn expr(self, e: Expr) -> Self;
}

impl WithExpr for UpdateItemFluentBuilder {
    fn expr(self, mut e: Expr) -> Self {
        debug_assert!(e.key.is_empty() && e.filter.is_empty() && e.projection.is_empty());
        self.set_update_expression(e.update_text())
            .set_condition_expression(Expr::and(&e.cond))
            .set_expression_attribute_names(e.names())
            .set_expression_attribute_values(e.values())
    }
}

impl WithExpr for PutItemFluentBuilder {
    fn expr(self, mut e: Expr) -> Self {
        debug_assert!(e.update_text().is_none() && e.key.is_empty() && e.filter.is_empty());
        self.set_condition_expression(Expr::and(&e.cond))
            .set_expression_attribute_names(e.names())
            .set_expression_attribute_values(e.values())
    }
}

impl WithExpr for PutBuilder {
    fn expr(self, mut e: Expr) -> Self {
        debug_assert!(e.update_text().is_none() && e.key.is_empty() && e.filter.is_empty());
        self.set_condition_expression(Expr::and(&e.cond))
            .set_expression_attribute_names(e.names())
            .set_expression_attribute_values(e.values())
    }
}

impl WithExpr for aws_sdk_dynamodb::types::builders::UpdateBuilder {
    fn expr(self, mut e: Expr) -> Self {
        debug_assert!(e.key.is_empty() && e.filter.is_empty() && e.projection.is_empty());
        self.set_update_expression(e.update_text())
            .set_condition_expression(Expr::and(&e.cond))
            .set_expression_attribute_names(e.names())
            .set_expression_attribute_values(e.values())
    }
}

impl WithExpr for QueryFluentBuilder {
    fn expr(self, mut e: Expr) -> Self {
        debug_assert!(e.update_text().is_none() && e.cond.is_empty());
        let projection = (!e.projection.is_empty()).then(|| e.projection.join(", "));
        self.set_key_condition_expression(Expr::and(&e.key))
            .set_filter_expression(Expr::and(&e.filter))
            .set_projection_expression(projection)
            .set_expression_attribute_names(e.names())
            .set_expression_attribute_values(e.values())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::items::{attr, n};
    use sundial_model::ExecStatus;

    fn s(v: &str) -> AttributeValue {
        AttributeValue::S(v.to_string())
    }

    #[test]
    fn expressions_use_placeholders_for_every_name() {
        let mut e = Expr::default();
        e.set(attr::STATUS, s(ExecStatus::Running.as_str()))
            .remove(attr::ATT_PK)
            .cond_eq(attr::TOKEN, n(3))
            .cond_absent_or(attr::CANCEL, Cmp::Eq, AttributeValue::Bool(false));
        assert_eq!(e.set, vec!["#st = :v0"]);
        assert_eq!(e.remove, vec!["#att_pk"]);
        assert_eq!(e.cond, vec!["#tok = :v1", "(attribute_not_exists(#cx) OR #cx = :v2)"]);
        assert_eq!(e.names.get("#cx").map(String::as_str), Some("cx"));
    }

    #[test]
    fn an_update_reads_as_set_then_remove_and_a_condition_joins_with_and() {
        let mut e = Expr::new();
        e.append(attr::TIMELINE, vec![n(1)])
            .set(attr::LEASE_UNTIL, n(5))
            .remove(attr::ATT_PK)
            .remove(attr::ATT_SK)
            .cond_eq(attr::STATUS, s("READY"))
            .cond_cmp(attr::AVAILABLE, Cmp::Le, n(9));
        assert_eq!(
            e.update_text().as_deref(),
            Some("SET #tl = list_append(#tl, :v0), #lu = :v1 REMOVE #att_pk, #att_sk")
        );
        assert_eq!(Expr::and(&e.cond).as_deref(), Some("#st = :v2 AND #avail <= :v3"));
        let mut only_remove = Expr::new();
        only_remove.remove(attr::NEXT);
        assert_eq!(only_remove.update_text().as_deref(), Some("REMOVE #next"));
    }

    #[test]
    fn a_gate_entry_write_bumps_the_version_in_the_same_update() {
        let mut e = Expr::new();
        e.remove_entry(attr::RUNNING, "job-1@1700000000000")
            .increment(attr::GATE_VERSION, 1)
            .cond_entry_exists(attr::RUNNING, "job-1@1700000000000");
        let ver = format!("#{}", attr::GATE_VERSION);
        assert_eq!(e.update_text(), Some(format!("SET {ver} = {ver} + :v0 REMOVE #hs.#k0")));
    }

    #[test]
    fn map_entries_keyed_by_ids_get_numbered_placeholders() {
        let mut e = Expr::new();
        e.set_entry(attr::RUNNING, "job-1@1700000000000", n(5))
            .cond_entry_exists(attr::RUNNING, "job-1@1700000000000");
        assert_eq!(e.set, vec!["#hs.#k0 = :v0"]);
        assert_eq!(e.cond, vec!["attribute_exists(#hs.#k0)"]);
        assert_eq!(e.names.get("#k0").map(String::as_str), Some("job-1@1700000000000"));
        // A plain attribute that happens to look like a numbered placeholder keeps them apart.
        e.set("k0", n(1));
        assert_eq!(e.set[1], "#k1 = :v1");
        assert_eq!(e.names.get("#k1").map(String::as_str), Some("k0"));
    }

    #[test]
    fn query_clauses_share_one_set_of_placeholders() {
        let mut e = Expr::new();
        e.key_eq(attr::PK, s("p"))
            .key_between(attr::SK, s("a"), s("b"))
            .filter_in(attr::STATUS, [s(ExecStatus::Ready.as_str()), s(ExecStatus::Running.as_str())])
            .project(&[attr::SK, attr::STATUS]);
        assert_eq!(Expr::and(&e.key).as_deref(), Some("#pk = :v0 AND #sk BETWEEN :v1 AND :v2"));
        assert_eq!(e.filter, vec!["#st IN (:v3, :v4)"]);
        assert_eq!(e.projection, vec!["#sk", "#st"]);
        assert_eq!(e.names.len(), 3);
    }
}
