//! The OpenAPI schemas that `#[derive(utoipa::ToSchema)]` on the definition types cannot give
//! with attributes alone, and the pieces sundial-model builds its own from:
//! - [`MisfirePolicy`]: the API documents each policy as its own component (`FireOnce`,
//!   `FireAll`, `SkipMissed`) under a `oneOf` with a `policy` discriminator. utoipa writes that
//!   only for an untagged enum of newtype variants, so the wire form (`MisfireBody`, which is
//!   what serde reads) is described here by such an enum over one schema-only struct per policy;
//! - lists whose *items* carry a pattern and an example (a field's `example` and `pattern`
//!   would land on the list itself);
//! - the fixed tag property of a variant of an internally tagged enum (`"policy": "fireAll"`).
//!
//! The schema-only structs are never built; the API's document check holds their schemas to the
//! JSON the serde code reads.

use std::borrow::Cow;

use utoipa::openapi::schema::{ArrayBuilder, Object, ObjectBuilder, Schema, Type};
use utoipa::openapi::RefOr;
use utoipa::{PartialSchema, ToSchema};

use crate::misfire::MisfirePolicy;

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

impl PartialSchema for MisfirePolicy {
    fn schema() -> RefOr<Schema> {
        MisfireWire::schema()
    }
}

impl ToSchema for MisfirePolicy {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("Misfire")
    }

    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        MisfireWire::schemas(schemas);
    }
}

/// The wire form of [`MisfirePolicy`] (serde reads it as `MisfireBody`).
#[derive(ToSchema)]
#[serde(untagged)]
#[schema(description = "What happens to fires missed (late by more than misfireThresholdSecs), by `policy`.", discriminator(property_name = "policy", mapping(
    ("fireOnce" = "#/components/schemas/FireOnce"),
    ("fireAll" = "#/components/schemas/FireAll"),
    ("skip" = "#/components/schemas/SkipMissed"),
)))]
#[allow(dead_code)] // Schema only (module docs).
enum MisfireWire {
    FireOnce(FireOnce),
    FireAll(FireAll),
    Skip(SkipMissed),
}

/// [`MisfirePolicy::FireOnce`].
#[derive(ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(description = "one execution for the whole missed range (default)")]
#[allow(dead_code)] // Schema only (module docs).
struct FireOnce {
    #[schema(schema_with = fire_once_tag)]
    policy: String,
}

/// [`MisfirePolicy::FireAll`].
#[derive(ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(description = "one execution per missed fire, at most `cap` (the latest)")]
#[allow(dead_code)] // Schema only (module docs).
struct FireAll {
    #[schema(schema_with = fire_all_tag)]
    policy: String,
    // 1 to sundial-model's `MAX_FIRE_ALL_CAP`, checked with the job definition.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 1000, default = 100)]
    cap: u32,
}

/// [`MisfirePolicy::Skip`].
#[derive(ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(description = "no execution for missed fires")]
#[allow(dead_code)] // Schema only (module docs).
struct SkipMissed {
    #[schema(schema_with = skip_tag)]
    policy: String,
}

fn fire_once_tag() -> Object {
    tag("fireOnce")
}
fn fire_all_tag() -> Object {
    tag("fireAll")
}
fn skip_tag() -> Object {
    tag("skip")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ScheduleSpec, DEFAULT_FIRE_ALL_CAP, MAX_EXPRESSION_LEN, MAX_JITTER_WINDOW_SECS};
    use serde_json::{json, Value};

    fn json_of(s: RefOr<Schema>) -> Value {
        serde_json::to_value(s).unwrap()
    }

    #[test]
    fn each_misfire_policy_serialises_to_the_component_its_tag_names() {
        let one_of = json_of(MisfirePolicy::schema());
        let mut components = Vec::new();
        MisfirePolicy::schemas(&mut components);
        for policy in [MisfirePolicy::FireOnce, MisfirePolicy::FireAll { cap: 7 }, MisfirePolicy::Skip] {
            let wire = serde_json::to_value(policy).unwrap();
            let tag = wire["policy"].as_str().unwrap();
            let target = one_of["discriminator"]["mapping"][tag].as_str().unwrap_or_else(|| panic!("{tag}"));
            let name = target.trim_start_matches("#/components/schemas/");
            let (_, schema) = components.iter().find(|(n, _)| n == name).unwrap();
            let schema = json_of(schema.clone());
            assert_eq!(schema["properties"]["policy"]["enum"], json!([tag]));
            for key in wire.as_object().unwrap().keys() {
                assert!(schema["properties"].get(key).is_some(), "{name} lacks {key}");
            }
            // What the schema requires is what serde reads: a body of the required keys parses.
            let required: serde_json::Map<String, Value> = schema["required"]
                .as_array()
                .unwrap()
                .iter()
                .map(|k| (k.as_str().unwrap().to_string(), wire[k.as_str().unwrap()].clone()))
                .collect();
            let read: MisfirePolicy = serde_json::from_value(Value::Object(required)).unwrap();
            assert_eq!(std::mem::discriminant(&read), std::mem::discriminant(&policy));
        }
        let fire_all = components.iter().find(|(n, _)| n == "FireAll").unwrap().1.clone();
        assert_eq!(json_of(fire_all)["properties"]["cap"]["default"], json!(DEFAULT_FIRE_ALL_CAP));
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
