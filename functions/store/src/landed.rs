//! Whether a conditional update that failed its condition had in fact landed before: what an
//! [`crate::expr::Expr`] writes, kept beside its text, checked against the item a failed
//! condition returns.
//!
//! A response lost on the way back (a timeout, a dropped connection, a 500 after the write) is
//! retried by the SDK, and the retry then fails its own condition, because the first attempt
//! changed what the condition tests. The caller would take its own write for another process's
//! and act on that: the reconciler raising a wait generation and never sending the new chain's
//! message, a worker taking its own claim for someone else's live lease, its own finish for a
//! takeover (docs/simulation.md, K8). The item the failed condition returns tells: if it holds
//! every value the update sets and appends, lacks every attribute it removes, and still holds
//! every `=` condition on an attribute the update leaves alone, it is what this update wrote.
//! Each update also carries a write id ([`write_id`], kept in `wid`): two updates that set the
//! same values at the same millisecond (one worker handling two copies of one message at once)
//! are still told apart. An update that only removes, or that counts (`a = a + 1`: the count
//! cannot tell whose), is never taken for landed.

use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

/// A write id unique to this update: a per-process random salt (std's randomly keyed hasher)
/// with a per-process counter. Only its equality matters; nothing reads its value.
pub(crate) fn write_id() -> String {
    static SALT: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let salt = *SALT.get_or_init(|| std::collections::hash_map::RandomState::new().build_hasher().finish());
    format!("{salt:016x}.{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// What an update writes, as far as the item after it shows.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Written {
    sets: Vec<(String, AttributeValue)>,
    appends: Vec<(String, Vec<AttributeValue>)>,
    removes: Vec<String>,
    added: Vec<(String, Vec<String>)>,
    deleted: Vec<(String, Vec<String>)>,
    holds: Vec<(String, AttributeValue)>,
    /// A write the item cannot show (a counter, a map entry).
    opaque: bool,
}

impl Written {
    pub(crate) fn set(&mut self, a: &str, v: &AttributeValue) {
        self.sets.push((a.to_string(), v.clone()));
    }

    pub(crate) fn append(&mut self, a: &str, items: &[AttributeValue]) {
        self.appends.push((a.to_string(), items.to_vec()));
    }

    pub(crate) fn remove(&mut self, a: &str) {
        self.removes.push(a.to_string());
    }

    pub(crate) fn add_strings(&mut self, a: &str, items: &[String]) {
        self.added.push((a.to_string(), items.to_vec()));
    }

    pub(crate) fn delete_strings(&mut self, a: &str, items: &[String]) {
        self.deleted.push((a.to_string(), items.to_vec()));
    }

    /// A condition `a = v`.
    pub(crate) fn holds(&mut self, a: &str, v: &AttributeValue) {
        self.holds.push((a.to_string(), v.clone()));
    }

    pub(crate) fn opaque(&mut self) {
        self.opaque = true;
    }

    fn writes(&self, a: &str) -> bool {
        self.sets.iter().any(|(n, _)| n == a)
            || self.appends.iter().any(|(n, _)| n == a)
            || self.removes.iter().any(|r| r == a)
            || self.added.iter().any(|(n, _)| n == a)
            || self.deleted.iter().any(|(n, _)| n == a)
    }

    /// Whether `item` (returned by the failed condition) is what this update wrote (module doc).
    pub(crate) fn landed(&self, item: &HashMap<String, AttributeValue>) -> bool {
        if self.opaque || (self.sets.is_empty() && self.appends.is_empty()) {
            return false;
        }
        let strings = |a: &str| match item.get(a) {
            Some(AttributeValue::Ss(v)) => v.clone(),
            _ => Vec::new(),
        };
        self.sets.iter().all(|(a, v)| item.get(a) == Some(v))
            && self.appends.iter().all(|(a, tail)| match item.get(a) {
                Some(AttributeValue::L(list)) => list.ends_with(tail),
                _ => false,
            })
            && self.removes.iter().all(|a| !item.contains_key(a))
            && self.added.iter().all(|(a, xs)| xs.iter().all(|x| strings(a).contains(x)))
            && self.deleted.iter().all(|(a, xs)| xs.iter().all(|x| !strings(a).contains(x)))
            && self.holds.iter().filter(|(a, _)| !self.writes(a)).all(|(a, v)| item.get(a) == Some(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> AttributeValue {
        AttributeValue::S(v.into())
    }

    fn item(kv: &[(&str, AttributeValue)]) -> HashMap<String, AttributeValue> {
        kv.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
    }

    fn claim() -> Written {
        let mut w = Written::default();
        w.set("st", &s("RUNNING"));
        w.set("lo", &s("w1"));
        w.append("tl", &[s("claimed by w1")]);
        w.remove("att_pk");
        w.holds("st", &s("READY"));
        w.holds("pk", &s("T#a#J#j"));
        w
    }

    #[test]
    fn an_item_holding_what_the_update_wrote_is_its_landing() {
        let got = item(&[
            ("pk", s("T#a#J#j")),
            ("st", s("RUNNING")),
            ("lo", s("w1")),
            ("tl", AttributeValue::L(vec![s("put"), s("claimed by w1")])),
        ]);
        assert!(claim().landed(&got));
    }

    #[test]
    fn anything_else_on_the_item_is_another_writers() {
        let base = [
            ("pk", s("T#a#J#j")),
            ("st", s("RUNNING")),
            ("lo", s("w1")),
            ("tl", AttributeValue::L(vec![s("put"), s("claimed by w1")])),
        ];
        let with = |k: &str, v: Option<AttributeValue>| {
            let mut i = item(&base);
            match v {
                Some(v) => i.insert(k.to_string(), v),
                None => i.remove(k),
            };
            i
        };
        let w = claim();
        assert!(!w.landed(&with("lo", Some(s("w2")))), "another owner");
        assert!(
            !w.landed(&with("tl", Some(AttributeValue::L(vec![s("claimed by w1"), s("finished")])))),
            "a later event"
        );
        assert!(!w.landed(&with("att_pk", Some(s("x")))), "a removed attribute back");
        assert!(!w.landed(&with("pk", Some(s("T#b#J#j")))), "a condition on an attribute it leaves alone");
        let mut counting = claim();
        counting.opaque();
        assert!(!counting.landed(&item(&base)), "a counter cannot say whose");
        let mut removes_only = Written::default();
        removes_only.remove("open_pk");
        assert!(!removes_only.landed(&HashMap::new()), "an update that only removes shows nothing");
    }

    #[test]
    fn write_ids_are_unique() {
        let ids: std::collections::BTreeSet<String> = (0..1_000).map(|_| write_id()).collect();
        assert_eq!(ids.len(), 1_000);
    }

    #[test]
    fn string_sets_show_what_was_added_and_taken_out() {
        let mut w = Written::default();
        w.set("lu", &AttributeValue::N("5".into()));
        w.add_strings("ob", &["a".into()]);
        w.delete_strings("dw", &["b".into()]);
        let i = |ob: &[&str], dw: &[&str]| {
            let mut m = item(&[("lu", AttributeValue::N("5".into()))]);
            m.insert("ob".into(), AttributeValue::Ss(ob.iter().map(|x| x.to_string()).collect()));
            m.insert("dw".into(), AttributeValue::Ss(dw.iter().map(|x| x.to_string()).collect()));
            m
        };
        assert!(w.landed(&i(&["a", "z"], &["c"])));
        assert!(!w.landed(&i(&["z"], &["c"])));
        assert!(!w.landed(&i(&["a"], &["b"])));
    }
}
