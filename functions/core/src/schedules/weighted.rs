//! A cache bounded by bytes, with a per-tenant share: what the schedule and calendar caches
//! keep in a function's memory.
//!
//! Counting entries did not bound memory: a parsed cron schedule holds ordinal sets (131 years
//! of them) and a resolved calendar chain up to 5 levels of 1,000 dates, and a tenant that edits
//! jobs or calendars in a loop (each version a new key) and lists them could grow one warm API
//! instance past its 256 MB, failing every request in flight there, other tenants' too. Here
//! each entry carries an estimate of its bytes; one tenant may hold at most a quarter of the
//! budget (past it, that tenant's own entries are dropped, nobody else's), and the whole cache
//! is cleared only when several tenants together reach the budget.

use std::collections::HashMap;
use std::hash::Hash;

/// The share of the budget one tenant may hold (1/N).
pub const TENANT_SHARE_DIVISOR: usize = 4;

/// The cache. `K` must name the tenant it belongs to when inserted.
#[derive(Debug)]
pub struct Weighted<K, V> {
    budget: usize,
    total: usize,
    by_tenant: HashMap<String, usize>,
    entries: HashMap<K, (String, usize, V)>,
}

impl<K: Hash + Eq, V: Clone> Weighted<K, V> {
    /// An empty cache of `budget` bytes.
    pub fn new(budget: usize) -> Self {
        Weighted { budget, total: 0, by_tenant: HashMap::new(), entries: HashMap::new() }
    }

    /// Changes the budget (a function with less memory asks for less); entries over it go.
    pub fn set_budget(&mut self, budget: usize) {
        self.budget = budget;
        if self.total > budget {
            self.clear();
        }
    }

    /// The most one tenant may hold.
    pub fn share(&self) -> usize {
        self.budget / TENANT_SHARE_DIVISOR
    }

    /// The bytes held (estimated).
    pub fn bytes(&self) -> usize {
        self.total
    }

    /// The bytes `tenant` holds (estimated).
    pub fn bytes_of(&self, tenant: &str) -> usize {
        self.by_tenant.get(tenant).copied().unwrap_or(0)
    }

    /// The value of `key`, if held.
    pub fn get(&self, key: &K) -> Option<V> {
        self.entries.get(key).map(|(_, _, v)| v.clone())
    }

    /// Keeps `value` of `tenant` under `key`, weighing `bytes`. An entry larger than a tenant's
    /// share is not kept at all.
    pub fn insert(&mut self, tenant: &str, key: K, value: V, bytes: usize) {
        if bytes > self.share() {
            return;
        }
        if let Some((t, b, _)) = self.entries.remove(&key) {
            self.release(&t, b);
        }
        if self.bytes_of(tenant) + bytes > self.share() {
            // The tenant's own entries make room; nobody else's.
            let mut freed = 0;
            self.entries.retain(|_, (t, b, _)| {
                let keep = t != tenant;
                if !keep {
                    freed += *b;
                }
                keep
            });
            self.total -= freed;
            self.by_tenant.remove(tenant);
        }
        if self.total + bytes > self.budget {
            self.clear();
        }
        self.total += bytes;
        *self.by_tenant.entry(tenant.to_string()).or_insert(0) += bytes;
        self.entries.insert(key, (tenant.to_string(), bytes, value));
    }

    fn release(&mut self, tenant: &str, bytes: usize) {
        self.total -= bytes;
        if let Some(b) = self.by_tenant.get_mut(tenant) {
            *b -= bytes;
            if *b == 0 {
                self.by_tenant.remove(tenant);
            }
        }
    }

    /// Drops everything.
    pub fn clear(&mut self) {
        self.entries.clear();
        self.by_tenant.clear();
        self.total = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_tenant_holds_at_most_its_share_and_never_evicts_another() {
        // GIVEN a 40 KiB cache (10 KiB a tenant) holding one entry of tenant b
        let mut c: Weighted<(String, u32), u32> = Weighted::new(40 * 1024);
        c.insert("b", ("b".into(), 0), 7, 1024);
        // WHEN tenant a inserts 1,000 entries of 1 KiB
        for i in 0..1_000 {
            c.insert("a", ("a".into(), i), i, 1024);
            // THEN it never holds more than its share, nor the cache more than its budget
            assert!(c.bytes_of("a") <= c.share() && c.bytes() <= 40 * 1024);
        }
        // AND b's entry is still there, a's latest too
        assert_eq!(c.get(&("b".into(), 0)), Some(7));
        assert_eq!(c.get(&("a".into(), 999)), Some(999));
        // AND an entry larger than a share is not kept
        c.insert("c", ("c".into(), 0), 1, 11 * 1024);
        assert_eq!(c.get(&("c".into(), 0)), None);
    }

    #[test]
    fn replacing_an_entry_counts_it_once_and_a_smaller_budget_sheds_entries() {
        let mut c: Weighted<u32, u32> = Weighted::new(1_000);
        c.insert("a", 1, 1, 100);
        c.insert("a", 1, 2, 150);
        assert_eq!((c.bytes(), c.bytes_of("a"), c.get(&1)), (150, 150, Some(2)));
        c.set_budget(100);
        assert_eq!((c.bytes(), c.get(&1)), (0, None));
    }
}
