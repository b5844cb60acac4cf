//! Reading and writing the few attribute types this crate stores, with errors that name the
//! table, item and attribute.

use crate::error::{Error, Result};
use crate::update::Item;
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};

pub(crate) fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

pub(crate) fn n(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

pub(crate) fn time(t: DateTime<Utc>) -> AttributeValue {
    AttributeValue::S(t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
}

/// A short, printable form of a key for error messages.
pub(crate) fn key_text(key: &Item) -> String {
    let mut parts: Vec<String> = key
        .iter()
        .map(|(k, v)| match v {
            AttributeValue::S(s) => format!("{k}={s}"),
            AttributeValue::N(n) => format!("{k}={n}"),
            other => format!("{k}={other:?}"),
        })
        .collect();
    parts.sort();
    parts.join(",")
}

pub(crate) fn get_str<'a>(item: &'a Item, table: &str, field: &str) -> Result<Option<&'a str>> {
    match item.get(field) {
        None | Some(AttributeValue::Null(_)) => Ok(None),
        Some(AttributeValue::S(v)) => Ok(Some(v)),
        Some(other) => {
            Err(Error::malformed(table, key_text(item), field, format!("expected a string, got {other:?}")))
        }
    }
}

pub(crate) fn req_str<'a>(item: &'a Item, table: &str, field: &str) -> Result<&'a str> {
    get_str(item, table, field)?.ok_or_else(|| Error::malformed(table, key_text(item), field, "missing"))
}

pub(crate) fn get_u64(item: &Item, table: &str, field: &str) -> Result<Option<u64>> {
    match item.get(field) {
        None | Some(AttributeValue::Null(_)) => Ok(None),
        Some(AttributeValue::N(v)) => v
            .parse::<u64>()
            .map(Some)
            .map_err(|e| Error::malformed(table, key_text(item), field, format!("{v:?} is not a u64: {e}"))),
        Some(other) => {
            Err(Error::malformed(table, key_text(item), field, format!("expected a number, got {other:?}")))
        }
    }
}

pub(crate) fn get_time(item: &Item, table: &str, field: &str) -> Result<Option<DateTime<Utc>>> {
    match get_str(item, table, field)? {
        None => Ok(None),
        Some(v) => DateTime::parse_from_rfc3339(v).map(|t| Some(t.with_timezone(&Utc))).map_err(|e| {
            Error::malformed(table, key_text(item), field, format!("{v:?} is not RFC 3339: {e}"))
        }),
    }
}

pub(crate) fn get_json(item: &Item, table: &str, field: &str) -> Result<Option<serde_json::Value>> {
    match get_str(item, table, field)? {
        None => Ok(None),
        Some(v) => serde_json::from_str(v)
            .map(Some)
            .map_err(|e| Error::malformed(table, key_text(item), field, format!("not JSON: {e}"))),
    }
}
