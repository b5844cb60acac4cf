//! Reconciliation: compare our ledger with the far side's and list every difference.
//!
//! The per-item layers keep *our* tables right; whether the far side applied each request
//! exactly once is something we can only check after the fact. Reconciliation is the final
//! defence for effects outside the system (docs/idempotency.md,
//! "Which layer covers which failure"): it catches a far side that ignored an idempotency key, an
//! outcome left unknown, and a local bug that wrote an item twice.
//!
//! Both ledgers are lists of [`LedgerEntry`] keyed by the *business* key (merchant + date), not
//! by idempotency key: two credits for one merchant under two different keys are exactly the
//! double payment we are looking for. [`reconcile`] is pure, so it is tested without a network.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// One booked movement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LedgerEntry {
    /// The business key the two sides share (e.g. `m00042:2026-11-30`).
    pub key: String,
    /// Amount in minor units (cents): never floating point for money.
    pub amount: i64,
    /// This side's own reference (detail row id, far-side transaction id), for the operator.
    pub reference: String,
}

/// A business key booked a different number of times or amount on the two sides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Difference {
    /// The business key.
    pub key: String,
    /// Local entries for it.
    pub local: Vec<LedgerEntry>,
    /// Far-side entries for it.
    pub far: Vec<LedgerEntry>,
}

/// The result of a comparison.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// Keys booked exactly once on each side with the same amount.
    pub matched: usize,
    /// Booked locally, absent on the far side (unpaid, or an outcome still unknown).
    pub missing_far: Vec<Difference>,
    /// Booked on the far side, absent locally (paid without a local record).
    pub missing_local: Vec<Difference>,
    /// Booked once on each side with different amounts.
    pub amount_mismatch: Vec<Difference>,
    /// Booked more than once locally (a duplicate detail row).
    pub duplicate_local: Vec<Difference>,
    /// Booked more than once on the far side (a double payment).
    pub duplicate_far: Vec<Difference>,
}

impl Report {
    /// No difference at all.
    pub fn is_clean(&self) -> bool {
        self.differences() == 0
    }

    /// How many keys differ (a key is counted once per list it appears in).
    pub fn differences(&self) -> usize {
        self.missing_far.len()
            + self.missing_local.len()
            + self.amount_mismatch.len()
            + self.duplicate_local.len()
            + self.duplicate_far.len()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} matched, {} missing on the far side, {} missing locally, {} amount mismatches, \
             {} duplicated locally, {} duplicated on the far side",
            self.matched,
            self.missing_far.len(),
            self.missing_local.len(),
            self.amount_mismatch.len(),
            self.duplicate_local.len(),
            self.duplicate_far.len()
        )
    }
}

/// Compares the two ledgers key by key.
pub fn reconcile(
    local: impl IntoIterator<Item = LedgerEntry>,
    far: impl IntoIterator<Item = LedgerEntry>,
) -> Report {
    let mut by_key: BTreeMap<String, (Vec<LedgerEntry>, Vec<LedgerEntry>)> = BTreeMap::new();
    for e in local {
        by_key.entry(e.key.clone()).or_default().0.push(e);
    }
    for e in far {
        by_key.entry(e.key.clone()).or_default().1.push(e);
    }
    let mut report = Report::default();
    for (key, (local, far)) in by_key {
        let diff = || Difference { key: key.clone(), local: local.clone(), far: far.clone() };
        if local.len() > 1 {
            report.duplicate_local.push(diff());
        }
        if far.len() > 1 {
            report.duplicate_far.push(diff());
        }
        match (local.len(), far.len()) {
            (0, _) => report.missing_local.push(diff()),
            (_, 0) => report.missing_far.push(diff()),
            (1, 1) if local[0].amount == far[0].amount => report.matched += 1,
            (1, 1) => report.amount_mismatch.push(diff()),
            _ => {}
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(key: &str, amount: i64, r: &str) -> LedgerEntry {
        LedgerEntry { key: key.into(), amount, reference: r.into() }
    }

    #[test]
    fn identical_ledgers_are_clean() {
        // GIVEN the same two bookings on both sides, in different orders
        let local = vec![e("a", 10, "d1"), e("b", 20, "d2")];
        let far = vec![e("b", 20, "t2"), e("a", 10, "t1")];
        // WHEN reconciled
        let r = reconcile(local, far);
        // THEN everything matches
        assert!(r.is_clean(), "{r}");
        assert_eq!(r.matched, 2);
    }

    #[test]
    fn every_kind_of_difference_is_listed_under_its_key() {
        // GIVEN one key of each kind of difference, plus one clean key
        let local = vec![
            e("ok", 1, "d"),
            e("unpaid", 5, "d"),
            e("amt", 7, "d"),
            e("dup-l", 3, "d1"),
            e("dup-l", 3, "d2"),
            e("dup-f", 4, "d"),
        ];
        let far = vec![
            e("ok", 1, "t"),
            e("stray", 9, "t"),
            e("amt", 8, "t"),
            e("dup-l", 3, "t"),
            e("dup-f", 4, "t1"),
            e("dup-f", 4, "t2"),
        ];
        // WHEN reconciled
        let r = reconcile(local, far);
        // THEN each difference is in its own list, and only the clean key matches
        let keys = |v: &[Difference]| v.iter().map(|d| d.key.clone()).collect::<Vec<_>>();
        assert_eq!(r.matched, 1);
        assert_eq!(keys(&r.missing_far), ["unpaid"]);
        assert_eq!(keys(&r.missing_local), ["stray"]);
        assert_eq!(keys(&r.amount_mismatch), ["amt"]);
        assert_eq!(keys(&r.duplicate_local), ["dup-l"]);
        assert_eq!(keys(&r.duplicate_far), ["dup-f"]);
        assert_eq!(r.duplicate_far[0].far.len(), 2);
        assert_eq!(r.differences(), 5);
        assert!(!r.is_clean());
    }

    #[test]
    fn a_double_payment_under_two_idempotency_keys_is_still_caught() {
        // GIVEN one local booking and two far-side credits for the same business key, which
        // carried different idempotency keys (as a per-attempt key would)
        let r = reconcile(
            vec![e("m1:2026-11-30", 100, "d")],
            vec![e("m1:2026-11-30", 100, "k-attempt1"), e("m1:2026-11-30", 100, "k-attempt2")],
        );
        // THEN it is reported as a far-side duplicate
        assert_eq!(r.duplicate_far.len(), 1);
        assert!(!r.is_clean());
    }
}
