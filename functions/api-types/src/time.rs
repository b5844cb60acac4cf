//! Instants as the API writes them: RFC 3339 in UTC with milliseconds (`2026-12-01T09:00:00.000Z`).
//! Reading accepts any RFC 3339 instant (chrono's own `Deserialize`).

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serializer;

/// The API's text of an instant.
pub fn text(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// `serialize_with` for one instant.
pub fn one<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&text(*t))
}

/// `serialize_with` for an optional instant (`null` when absent).
pub fn opt<S: Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => s.serialize_some(&text(*t)),
        None => s.serialize_none(),
    }
}

/// `serialize_with` for a list of instants.
pub fn many<S: Serializer>(ts: &[DateTime<Utc>], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(ts.iter().map(|t| text(*t)))
}
