//! [`MisfirePolicy`]'s OpenAPI schema: the API documents each policy as its own component
//! (`FireOnce`, `FireAll`, `SkipMissed`) under a `oneOf` with a `policy` discriminator. utoipa
//! writes that only for an untagged enum of newtype variants, so the wire form (`MisfireBody`,
//! which is what serde reads) is described here by such an enum over one schema-only struct per
//! policy.
//!
//! The schema-only structs are never built; the API's document check holds their schemas to the
//! JSON the serde code reads.

use std::borrow::Cow;

use utoipa::openapi::schema::{Object, Schema};
use utoipa::openapi::RefOr;
use utoipa::{PartialSchema, ToSchema};

use crate::misfire::MisfirePolicy;
use crate::openapi::tag;

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
    use crate::DEFAULT_FIRE_ALL_CAP;
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
}
