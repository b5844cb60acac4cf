//! The versioned, audited write of a definition (a job's, a calendar's): one
//! `TransactWriteItems` of the current item conditional on the version the caller read, the
//! immutable snapshot of the new version, and the operations-log entry.

use super::error::StoreError;
use super::expr::{Expr, WithExpr};
use super::items::{attr, n, Item};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::builders::PutBuilder;
use aws_sdk_dynamodb::types::{Put, TransactWriteItem};

/// One versioned write, in `table`.
#[derive(Debug, Clone)]
pub(crate) struct VersionedWrite<'a> {
    /// The table of all three items.
    pub(crate) table: &'a str,
    /// The current item, written `IF attribute_not_exists(pk)` when `expected` is `None`, else
    /// `IF ver = expected`.
    pub(crate) current: Item,
    /// The version the caller read (`None`: no item yet).
    pub(crate) expected: Option<u64>,
    /// The new version's snapshot.
    pub(crate) snapshot: Item,
    /// Write the snapshot only if none is there (`IF attribute_not_exists(pk)`).
    pub(crate) snapshot_if_absent: bool,
    /// The operations-log entry.
    pub(crate) audit: Item,
}

/// How a versioned write ended, when it did not fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Versioned {
    /// All three items written.
    Written,
    /// The current item or the snapshot failed its condition: someone else changed it.
    Conflict,
}

fn absent() -> Expr {
    let mut e = Expr::new();
    e.cond_not_exists(attr::PK);
    e
}

fn build(p: PutBuilder) -> Result<TransactWriteItem, StoreError> {
    let put: Put =
        p.build().map_err(|e| StoreError::Permanent { op: "TransactWriteItems", message: e.to_string() })?;
    Ok(TransactWriteItem::builder().put(put).build())
}

impl VersionedWrite<'_> {
    /// The three puts, in order: current, snapshot, audit entry.
    fn actions(self) -> Result<[TransactWriteItem; 3], StoreError> {
        let cond = match self.expected {
            None => absent(),
            Some(v) => {
                let mut e = Expr::new();
                e.cond_eq(attr::VERSION, n(v));
                e
            }
        };
        let current = Put::builder().table_name(self.table).set_item(Some(self.current)).expr(cond);
        let mut snapshot = Put::builder().table_name(self.table).set_item(Some(self.snapshot));
        if self.snapshot_if_absent {
            snapshot = snapshot.expr(absent());
        }
        let audit = Put::builder().table_name(self.table).set_item(Some(self.audit));
        Ok([build(current)?, build(snapshot)?, build(audit)?])
    }

    /// Writes the three items in one transaction. A transaction cancelled for another reason
    /// than a failed condition (a concurrent transaction on the same item) is transient.
    pub(crate) async fn send(self, ddb: &aws_sdk_dynamodb::Client) -> Result<Versioned, StoreError> {
        let [current, snapshot, audit] = self.actions()?;
        let res = ddb
            .transact_write_items()
            .transact_items(current)
            .transact_items(snapshot)
            .transact_items(audit)
            .send()
            .await;
        let err = match res {
            Ok(_) => return Ok(Versioned::Written),
            Err(e) => e,
        };
        // Why a cancelled transaction was cancelled: one reason per item, in order.
        let reasons: Option<Vec<String>> = err.as_service_error().and_then(|s| match s {
            TransactWriteItemsError::TransactionCanceledException(c) => Some(
                c.cancellation_reasons().iter().map(|r| r.code().unwrap_or("None").to_string()).collect(),
            ),
            _ => None,
        });
        match reasons {
            Some(r) if r.iter().take(2).any(|c| c == "ConditionalCheckFailed") => Ok(Versioned::Conflict),
            Some(r) => Err(StoreError::Transient {
                op: "TransactWriteItems",
                message: format!("transaction cancelled: {}", r.join(", ")),
            }),
            None => Err(StoreError::from_sdk("TransactWriteItems", err)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodb::types::AttributeValue;

    fn item(sk: &str) -> Item {
        Item::from([
            (attr::PK.into(), AttributeValue::S("p".into())),
            (attr::SK.into(), AttributeValue::S(sk.into())),
        ])
    }

    fn write(expected: Option<u64>, snapshot_if_absent: bool) -> [TransactWriteItem; 3] {
        VersionedWrite {
            table: "t",
            current: item("C"),
            expected,
            snapshot: item("V#2"),
            snapshot_if_absent,
            audit: item("O"),
        }
        .actions()
        .unwrap()
    }

    fn cond(a: &TransactWriteItem) -> Option<&str> {
        a.put().and_then(|p| p.condition_expression())
    }

    #[test]
    fn the_current_item_is_conditional_on_the_version_read_or_on_being_new() {
        let edit = write(Some(1), false);
        assert_eq!(cond(&edit[0]), Some("#ver = :v0"));
        let names = edit[0].put().and_then(|p| p.expression_attribute_names()).unwrap();
        assert_eq!(names.get("#ver").map(String::as_str), Some(attr::VERSION));
        assert_eq!(
            edit[0].put().and_then(|p| p.expression_attribute_values()).and_then(|v| v.get(":v0")),
            Some(&n(1))
        );
        assert_eq!(cond(&edit[1]), None);
        assert_eq!(cond(&edit[2]), None);
        let new = write(None, true);
        assert_eq!(cond(&new[0]), Some("attribute_not_exists(#pk)"));
        assert_eq!(cond(&new[1]), Some("attribute_not_exists(#pk)"));
        assert_eq!(cond(&new[2]), None);
        let items: Vec<_> = new.iter().map(|a| a.put().unwrap().item()["sk"].clone()).collect();
        assert_eq!(items, ["C", "V#2", "O"].map(|s| AttributeValue::S(s.into())));
    }
}
