//! A small builder for the update and condition expressions every module writes.
//!
//! Every attribute name and value goes through a placeholder (`#n0`, `:v0`), so callers never
//! trip over DynamoDB's ~570 reserved words (`status`, `owner`, `date`...), and the modules can
//! combine their own condition (state, fencing token) with the caller's extra changes in one
//! conditional write: the check and the effect are one atomic step, never read-then-write.

use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::HashMap;

/// A DynamoDB item or key.
pub type Item = HashMap<String, AttributeValue>;

/// Extra changes a caller wants applied in the same conditional write as a transition or a
/// fenced write (for example "SET credit_ref = ..., ADD paid_out_total amount").
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Update {
    sets: Vec<(String, AttributeValue)>,
    adds: Vec<(String, AttributeValue)>,
}

impl Update {
    /// No extra changes.
    pub fn new() -> Self {
        Update::default()
    }

    /// `SET attr = value`.
    pub fn set(mut self, attr: impl Into<String>, value: AttributeValue) -> Self {
        self.sets.push((attr.into(), value));
        self
    }

    /// `ADD attr delta` on a number (creates it at `delta` when absent). Not idempotent by
    /// itself: use it only inside a guarded write, where the guard makes the whole write
    /// happen once.
    pub fn add(mut self, attr: impl Into<String>, delta: i64) -> Self {
        self.adds.push((attr.into(), AttributeValue::N(delta.to_string())));
        self
    }

    /// The attribute names this update touches.
    pub fn attributes(&self) -> impl Iterator<Item = &str> {
        self.sets.iter().chain(self.adds.iter()).map(|(a, _)| a.as_str())
    }

    /// Whether it touches `attr` (a module's own attributes may not be set by the caller: the
    /// write would name the same path twice, which DynamoDB rejects).
    pub(crate) fn touches(&self, attr: &str) -> bool {
        self.attributes().any(|a| a == attr)
    }
}

/// Accumulates placeholders for one request.
#[derive(Debug, Default)]
pub(crate) struct Expr {
    pub(crate) names: HashMap<String, String>,
    pub(crate) values: HashMap<String, AttributeValue>,
    next: usize,
}

impl Expr {
    pub(crate) fn name(&mut self, attr: &str) -> String {
        if let Some((k, _)) = self.names.iter().find(|(_, v)| v.as_str() == attr) {
            return k.clone();
        }
        let k = format!("#n{}", self.names.len());
        self.names.insert(k.clone(), attr.to_owned());
        k
    }

    pub(crate) fn value(&mut self, v: AttributeValue) -> String {
        let k = format!(":v{}", self.next);
        self.next += 1;
        self.values.insert(k.clone(), v);
        k
    }

    /// Renders `SET a = :x, ... ADD b :y` from the module's own sets plus the caller's update.
    pub(crate) fn update_expression(
        &mut self,
        own_sets: Vec<(&str, AttributeValue)>,
        extra: &Update,
    ) -> String {
        let mut sets = Vec::new();
        for (a, v) in own_sets.into_iter().chain(extra.sets.iter().map(|(a, v)| (a.as_str(), v.clone()))) {
            let (n, v) = (self.name(a), self.value(v));
            sets.push(format!("{n} = {v}"));
        }
        let mut adds = Vec::new();
        for (a, v) in &extra.adds {
            let (n, v) = (self.name(a), self.value(v.clone()));
            adds.push(format!("{n} {v}"));
        }
        let mut out = String::new();
        if !sets.is_empty() {
            out.push_str("SET ");
            out.push_str(&sets.join(", "));
        }
        if !adds.is_empty() {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str("ADD ");
            out.push_str(&adds.join(", "));
        }
        out
    }

    /// `#a = :v AND ...` for the caller's required equalities (empty when none).
    pub(crate) fn equalities(&mut self, require: &[(String, AttributeValue)]) -> Vec<String> {
        require
            .iter()
            .map(|(a, v)| {
                let (n, v) = (self.name(a), self.value(v.clone()));
                format!("{n} = {v}")
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_and_value_is_a_placeholder() {
        // GIVEN an update touching a reserved word and a counter
        let u = Update::new().set("status", AttributeValue::S("X".into())).add("count", 1);
        // WHEN it is rendered after a module's own SET
        let mut e = Expr::default();
        let text = e.update_expression(vec![("owner", AttributeValue::N("3".into()))], &u);
        // THEN no attribute name appears literally, and each value has its own placeholder
        assert_eq!(text, "SET #n0 = :v0, #n1 = :v1 ADD #n2 :v2");
        assert_eq!(e.names["#n1"], "status");
        assert_eq!(e.values[":v2"], AttributeValue::N("1".into()));
    }

    #[test]
    fn a_name_used_twice_shares_one_placeholder() {
        // GIVEN a condition and an update on the same attribute
        let mut e = Expr::default();
        let a = e.name("status");
        let b = e.name("status");
        // THEN both use the same placeholder (DynamoDB rejects unused names)
        assert_eq!(a, b);
        assert_eq!(e.names.len(), 1);
    }
}
