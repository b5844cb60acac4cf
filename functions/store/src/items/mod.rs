//! DynamoDB item codecs for [`Job`](sundial_model::Job) and [`Execution`](sundial_model::Execution), one file per item
//! family, and the attribute and index names they share.
//!
//! Attribute names are short on purpose: DynamoDB bills each write per started KiB of the whole
//! item (and an UpdateItem bills the larger of the before and after images), so an execution
//! whose audit timeline and snapshot stay under 1 KiB costs one write unit per transition.

pub mod attr;
mod execution;
pub mod index;
mod job;
mod ops;
mod slots_watermarks;

pub use execution::{
    audit_to_av, execution_from_item, execution_to_item, map_state_of, phase_str, snapshot_from_item,
    status_of, tally_of,
};
pub use job::{
    batch_cover_from_item, batch_cover_item, batch_registry_from_item, batch_registry_item,
    decode_calendar_versions, due_keys, encode_calendar_versions, job_from_item, job_to_item,
    job_version_item, state_str, BatchRegistry,
};
pub use ops::{ops_from_item, ops_item, ops_sk};
pub use slots_watermarks::{running_from_item, slot_from_item, watermark_from_item};

use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, TimeZone, Utc};
use std::collections::HashMap;

/// A DynamoDB item.
pub type Item = HashMap<String, AttributeValue>;

/// A stored item that does not decode: a bug or a hand edit, never user input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("stored item attribute {attr}: {reason}")]
pub struct DecodeError {
    /// The attribute.
    pub attr: &'static str,
    /// Why.
    pub reason: String,
}

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}
/// A number attribute.
pub fn n(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

fn get_s<'a>(item: &'a Item, a: &'static str) -> Result<&'a str, DecodeError> {
    item.get(a)
        .and_then(|v| v.as_s().ok())
        .map(String::as_str)
        .ok_or(DecodeError { attr: a, reason: "missing or not a string".into() })
}
pub(crate) fn get_n_opt(item: &Item, a: &'static str) -> Result<Option<i64>, DecodeError> {
    match item.get(a) {
        None | Some(AttributeValue::Null(_)) => Ok(None),
        Some(v) => v
            .as_n()
            .ok()
            .and_then(|x| x.parse::<i64>().ok())
            .map(Some)
            .ok_or(DecodeError { attr: a, reason: "not an integer".into() }),
    }
}
fn get_n(item: &Item, a: &'static str) -> Result<i64, DecodeError> {
    get_n_opt(item, a)?.ok_or(DecodeError { attr: a, reason: "missing".into() })
}
/// Epoch ms to an instant.
pub fn ms_to_dt(ms: i64) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(ms).single().unwrap_or(DateTime::<Utc>::MIN_UTC)
}
