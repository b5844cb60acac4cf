//! The OpenAPI schemas of the definition types that `#[derive(utoipa::ToSchema)]` on the types
//! themselves cannot give:
//! - [`StoredDefinition`]: a [`JobDefinition`] as read back, every default filled in;
//! - list fields whose items carry a pattern or whose entries must be distinct (`uniqueItems`
//!   comes from utoipa only for set types).
//!
//! [`Target`]'s schema (one component per kind under a `oneOf`) is `crate::target`'s.

use std::borrow::Cow;

use utoipa::openapi::schema::Schema;
use utoipa::openapi::RefOr;
use utoipa::{PartialSchema, ToSchema};

use crate::definition::JobDefinition;
use crate::target::Target;
use sundial_schedule::ScheduleSpec;

/// A [`JobDefinition`] as stored and read back (`Job.definition`): the same fields, with every
/// default filled in, so the ones with a default are always present. Schema only: the value is
/// a `JobDefinition`; name this type in `#[schema(value_type = StoredDefinition)]`.
pub enum StoredDefinition {}

impl PartialSchema for StoredDefinition {
    fn schema() -> RefOr<Schema> {
        let mut schema = JobDefinition::schema();
        if let RefOr::T(Schema::Object(o)) = &mut schema {
            // Required: what `JobDefinition`'s Serialize always writes, read off a definition
            // whose optional fields are all empty (those it skips then are the ones it may skip).
            let bare = JobDefinition::new(ScheduleSpec::new("", ""), Target::http(""));
            if let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(bare) {
                o.required = o.properties.keys().filter(|k| fields.contains_key(*k)).cloned().collect();
            }
            o.description = Some("A definition as stored: every default filled in.".into());
            o.examples.clear();
        }
        schema
    }
}

impl ToSchema for StoredDefinition {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("StoredDefinition")
    }

    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((JobDefinition::name().into_owned(), JobDefinition::schema()));
        JobDefinition::schemas(schemas);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::definition::{MAX_FIRE_ALL_CAP, MAX_START_DEADLINE_SECS};
    use crate::{limits, RetryPolicy};
    use serde_json::{json, Value};

    fn json_of(s: RefOr<Schema>) -> Value {
        serde_json::to_value(s).unwrap()
    }

    #[test]
    fn the_definition_schema_has_the_validators_bounds_and_serdes_defaults() {
        let def = json_of(JobDefinition::schema());
        let p = &def["properties"];
        assert_eq!(p["timeoutSecs"]["maximum"], json!(limits::MAX_TIMEOUT_SECS));
        assert_eq!(p["startDeadlineSecs"]["maximum"], json!(MAX_START_DEADLINE_SECS));
        assert_eq!(p["shards"]["maximum"], json!(crate::children::MAX_CHILDREN));
        assert_eq!(p["mapReduce"]["properties"]["maxItems"]["maximum"], json!(crate::mapreduce::MAX_ITEMS));
        assert_eq!(p["mapReduce"]["properties"]["maxItems"]["default"], json!(crate::mapreduce::MAX_ITEMS));
        let bare =
            serde_json::to_value(JobDefinition::new(ScheduleSpec::new("", ""), Target::http(""))).unwrap();
        for field in ["pool", "misfireThresholdSecs", "concurrency", "timeoutSecs"] {
            assert_eq!(p[field]["default"], bare[field], "{field}");
        }
        assert_eq!(p["priority"]["default"], json!(crate::priority::Priority::default()));

        let retry = json_of(RetryPolicy::schema());
        let r = &retry["properties"];
        assert_eq!(r["maxAttempts"]["maximum"], json!(limits::MAX_ATTEMPTS));
        assert_eq!(r["baseDelaySecs"]["maximum"], json!(limits::MAX_RETRY_DELAY_SECS));
        assert_eq!(r["maxDelaySecs"]["maximum"], json!(limits::MAX_RETRY_DELAY_SECS));
        assert_eq!(r["maxAgeSecs"]["maximum"], json!(u32::MAX));
        let defaults = serde_json::to_value(RetryPolicy::default()).unwrap();
        for (field, schema) in r.as_object().unwrap() {
            assert_eq!(schema["default"], defaults[field], "retry.{field}");
        }

        let mut misfire = Vec::new();
        sundial_schedule::MisfirePolicy::schemas(&mut misfire);
        let fire_all = misfire.into_iter().find(|(n, _)| n == "FireAll").unwrap().1;
        assert_eq!(json_of(fire_all)["properties"]["cap"]["maximum"], json!(MAX_FIRE_ALL_CAP));
    }

    #[test]
    fn the_stored_form_requires_what_serialize_always_writes() {
        let stored = json_of(StoredDefinition::schema());
        let bare =
            serde_json::to_value(JobDefinition::new(ScheduleSpec::new("", ""), Target::http(""))).unwrap();
        let mut required: Vec<&str> =
            stored["required"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        let mut written: Vec<&str> = bare.as_object().unwrap().keys().map(String::as_str).collect();
        required.sort_unstable();
        written.sort_unstable();
        assert_eq!(required, written);
        assert_eq!(stored["properties"], json_of(JobDefinition::schema())["properties"]);
    }
}
