//! Insert under a natural key: the layer missing in the post-mortem of docs/idempotency.md.
//!
//! The detail table of the settlement had no `UNIQUE(merchant_id, settle_date)`, so both full
//! runs wrote their rows. In DynamoDB the unique constraint is the primary key itself: make the
//! table's key *be* the natural key (hash `merchant_id`, range `settle_date`), and insert with
//! `attribute_not_exists`. A second insert, from any worker, any attempt, any failover, is then
//! reported as [`Insert::Exists`] with the row that won, and the caller carries on from that row
//! (a crashed first writer may have stopped right after it) instead of writing a second one.
//!
//! A random or per-attempt id as the key gives no protection at all: each run writes "its" row.

use crate::attr::key_text;
use crate::error::{Error, Result};
use crate::update::Item;
use aws_sdk_dynamodb::Client;

/// What an insert did.
#[derive(Debug, Clone, PartialEq)]
pub enum Insert {
    /// This call wrote the row.
    Inserted,
    /// A row with this natural key was already there (written by this or another run); it is
    /// returned so the caller can continue from it. Not an error.
    Exists(Item),
}

/// How many times an insert retries when it loses to a row that is then deleted before it can
/// be read back (only possible when something deletes rows concurrently).
const VANISHED_RETRIES: usize = 3;

/// Writes `item` unless an item with the same primary key exists. `key_attrs` names the table's
/// key attributes (the natural key); each must be present in `item`.
pub async fn insert_unique(ddb: &Client, table: &str, item: Item, key_attrs: &[&str]) -> Result<Insert> {
    let first = key_attrs.first().ok_or_else(|| Error::invalid("key_attrs", "names no key attribute"))?;
    let mut key = Item::new();
    for a in key_attrs {
        let v = item.get(*a).ok_or_else(|| Error::invalid("item", format!("lacks key attribute {a:?}")))?;
        key.insert((*a).to_owned(), v.clone());
    }
    for _ in 0..VANISHED_RETRIES {
        let put = ddb
            .put_item()
            .table_name(table)
            .set_item(Some(item.clone()))
            .condition_expression("attribute_not_exists(#k)")
            .expression_attribute_names("#k", *first)
            .send()
            .await;
        match put {
            Ok(_) => return Ok(Insert::Inserted),
            Err(e) if e.as_service_error().is_some_and(|s| s.is_conditional_check_failed_exception()) => {}
            Err(e) => return Err(Error::dynamo("PutItem", table, e)),
        }
        let got = ddb
            .get_item()
            .table_name(table)
            .set_key(Some(key.clone()))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| Error::dynamo("GetItem", table, e))?;
        if let Some(existing) = got.item {
            return Ok(Insert::Exists(existing));
        }
    }
    Err(Error::Contended {
        table: table.to_owned(),
        key: key_text(&key),
        reason: "the row existed on insert but was gone on read-back, repeatedly",
    })
}
