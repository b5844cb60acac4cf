//! Forward-compatible reads: a client built against an older document must read answers that
//! carry fields it does not know. The wire types of answers ignore unknown fields themselves, but
//! a definition in an answer is the model's [`JobDefinition`], which refuses unknown fields at
//! every level (the server must refuse them in request bodies). [`definition`] reads such a
//! definition by dropping each field the type refuses as unknown and reading again: what this
//! client knows is kept exactly, what a newer server added is ignored.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use sundial_model::JobDefinition;

/// Fields dropped at most per value (a bound on the retries, far above any real answer).
const MAX_DROPPED: usize = 256;

/// `deserialize_with` for a definition inside an answer.
pub fn definition<'de, D: Deserializer<'de>>(d: D) -> Result<JobDefinition, D::Error> {
    read(Value::deserialize(d)?).map_err(serde::de::Error::custom)
}

/// `deserialize_with` for any strict type inside an answer (calendar definitions, schedules).
pub fn strict<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<T, D::Error> {
    read(Value::deserialize(d)?).map_err(serde::de::Error::custom)
}

/// Reads `T` from `v`, dropping the fields `T` refuses as unknown.
pub fn read<T: DeserializeOwned>(mut v: Value) -> Result<T, serde_json::Error> {
    for _ in 0..MAX_DROPPED {
        let err = match serde_path_to_error::deserialize::<_, T>(&v) {
            Ok(t) => return Ok(t),
            Err(e) => e,
        };
        let Some(name) = unknown_field(&err.inner().to_string()) else { return Err(err.into_inner()) };
        let mut path: Vec<String> = err.path().iter().map(|s| s.to_string()).collect();
        if path.last().is_some_and(|l| *l == name) {
            path.pop();
        }
        if !drop_field(&mut v, &path, &name) {
            return Err(err.into_inner());
        }
    }
    serde_json::from_value(v)
}

/// The name in serde's "unknown field `x`, expected ..." message.
fn unknown_field(msg: &str) -> Option<String> {
    let rest = msg.strip_prefix("unknown field `")?;
    rest.split_once('`').map(|(n, _)| n.to_string())
}

/// Removes `name` from the object at `path` (segments as serde_path_to_error prints them), or,
/// where the path stops early (inside an internally tagged enum), from the first object under
/// it that has the field.
fn drop_field(v: &mut Value, path: &[String], name: &str) -> bool {
    let Some((seg, rest)) = path.split_first() else { return drop_first(v, name) };
    let index = seg.trim_start_matches('[').trim_end_matches(']').parse::<usize>().ok();
    let has_next = match &*v {
        Value::Object(m) => m.contains_key(seg.as_str()),
        Value::Array(a) => index.is_some_and(|i| i < a.len()),
        _ => false,
    };
    if !has_next {
        return drop_first(v, name);
    }
    match v {
        Value::Object(m) => m.get_mut(seg.as_str()).is_some_and(|n| drop_field(n, rest, name)),
        Value::Array(a) => index.and_then(|i| a.get_mut(i)).is_some_and(|n| drop_field(n, rest, name)),
        _ => false,
    }
}

fn drop_first(v: &mut Value, name: &str) -> bool {
    match v {
        Value::Object(m) => m.remove(name).is_some() || m.values_mut().any(|c| drop_first(c, name)),
        Value::Array(a) => a.iter_mut().any(|c| drop_first(c, name)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_definition_from_a_newer_server_is_read_without_the_fields_this_client_does_not_know() {
        // GIVEN a definition with fields added at three depths, one inside the tagged target
        let v = json!({
            "schedule": {"expression": "0 30 2 * * *", "timezone": "UTC", "newScheduleField": 1},
            "target": {"type": "http", "url": "https://h.example/run", "newTargetField": true},
            "retry": {"maxAttempts": 2, "newRetryField": "x"},
            "newTopLevelField": {"a": 1},
        });
        // WHEN read leniently
        let d: JobDefinition = read(v).unwrap_or_else(|e| panic!("{e}"));
        // THEN what this client knows is kept
        assert_eq!(d.schedule.expression, "0 30 2 * * *");
        assert_eq!(d.retry.max_attempts, 2);
        // AND a definition that is wrong in a known field is still an error
        let bad = json!({"schedule": {"expression": 5, "timezone": "UTC"}, "target": {"type": "http", "url": "https://h"}});
        assert!(read::<JobDefinition>(bad).is_err());
    }
}
