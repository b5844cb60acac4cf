//! The OpenAPI pieces that `#[derive(utoipa::ToSchema)]` on the definition types cannot give
//! with attributes alone, which this crate's schemas and sundial-model's are built of:
//! - lists whose *items* carry a pattern and an example (a field's `example` and `pattern`
//!   would land on the list itself);
//! - the fixed tag property of a variant of an internally tagged enum (`"policy": "fireAll"`).
//!
//! [`MisfirePolicy`](crate::MisfirePolicy)'s own schema, one component per policy, is in
//! `misfire_schema.rs`.

use utoipa::openapi::schema::{ArrayBuilder, Object, ObjectBuilder, Type};

/// An id (`jobId`, pool, calendar, resource, member): what [`crate::id::validate_id`] accepts.
pub const ID_PATTERN: &str = "^[A-Za-z0-9_-]{1,64}$";

/// A local date as the calendars take it, `YYYY-MM-DD` (its range is checked after).
pub const DATE_PATTERN: &str = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$";

/// A weekday as the calendars take it: `mon`..`sun` or a full English name, any case.
pub const WEEKDAY_PATTERN: &str = "^[A-Za-z]{3,9}$";

/// A string matching `pattern`, with an example when given.
pub fn pattern_string(pattern: &str, example: Option<&str>) -> ObjectBuilder {
    let s = ObjectBuilder::new().schema_type(Type::String).pattern(Some(pattern));
    match example {
        Some(e) => s.examples([e]),
        None => s,
    }
}

/// A list of strings, each matching `pattern`.
pub fn pattern_strings(pattern: &str, example: Option<&str>) -> ArrayBuilder {
    ArrayBuilder::new().items(pattern_string(pattern, example))
}

/// The tag property of one variant of an internally tagged enum: a string that must be `value`.
pub fn tag(value: &str) -> Object {
    ObjectBuilder::new().schema_type(Type::String).enum_values(Some([value])).build()
}

/// A calendar's list of weekdays.
pub(crate) fn weekdays() -> ArrayBuilder {
    pattern_strings(WEEKDAY_PATTERN, Some("sat"))
}

/// A calendar's list of local dates, `example` one of them.
pub(crate) fn dates(example: &str) -> ArrayBuilder {
    pattern_strings(DATE_PATTERN, Some(example))
}

#[cfg(test)]
mod tests {
    use crate::{ScheduleSpec, MAX_EXPRESSION_LEN, MAX_JITTER_WINDOW_SECS};
    use serde_json::{json, Value};
    use utoipa::openapi::{RefOr, Schema};
    use utoipa::PartialSchema;

    fn json_of(s: RefOr<Schema>) -> Value {
        serde_json::to_value(s).unwrap()
    }

    #[test]
    fn the_schedule_schema_has_the_parsers_bounds_and_serdes_defaults() {
        let s = json_of(ScheduleSpec::schema());
        let p = &s["properties"];
        assert_eq!(p["expression"]["maxLength"], json!(MAX_EXPRESSION_LEN));
        assert_eq!(p["jitterWindowSecs"]["maximum"], json!(MAX_JITTER_WINDOW_SECS));
        let defaults = serde_json::to_value(ScheduleSpec::new("", "")).unwrap();
        for field in ["onGap", "onOverlap", "jitterWindowSecs"] {
            assert_eq!(p[field]["default"], defaults[field], "{field}");
        }
    }
}
