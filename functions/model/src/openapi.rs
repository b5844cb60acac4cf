//! The OpenAPI schemas of the definition types that `#[derive(utoipa::ToSchema)]` on the types
//! themselves cannot give:
//! - [`Target`]: the API documents each variant as its own component (`LambdaTarget`,
//!   `HttpTarget`, ...) under a `oneOf` with a `type` discriminator. utoipa only writes that
//!   for an untagged enum of newtype variants, so the wire form is described here by such an
//!   enum over one schema-only struct per variant, and `Target`'s schema is that enum's;
//! - [`StoredDefinition`]: a [`JobDefinition`] as read back, every default filled in;
//! - list fields whose items carry a pattern or whose entries must be distinct (`uniqueItems`
//!   comes from utoipa only for set types).
//!
//! The schema-only structs are never built: they exist for their derived schema, which must
//! say what `Target`'s serde form reads and writes (`tests/schema.rs` holds it to the API's
//! document).

use std::borrow::Cow;

use sundial_schedule::openapi::{pattern_strings, ID_PATTERN};
use utoipa::openapi::schema::{Array, Object, ObjectBuilder, Schema, Type};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};

use crate::definition::{EcsLaunchType, JobDefinition, SecretRef, Target, MAX_JOB_RESOURCES};
use crate::outbound::{MAX_ECS_SECURITY_GROUPS, MAX_ECS_SUBNETS};
use sundial_schedule::ScheduleSpec;

/// A job's `resources`: distinct ids, at most [`MAX_JOB_RESOURCES`].
pub(crate) fn resources() -> Array {
    pattern_strings(ID_PATTERN, None)
        .max_items(Some(MAX_JOB_RESOURCES))
        .unique_items(true)
        .description(Some(
            "Platform-wide resource limits its runs use (`[\"legacy-db\"]`, docs/resources.md): an \
             execution starts only holding a unit of each (taken all or none), and gives them back \
             when its attempt ends. Each must name a limit an operator defined (`PUT \
             /v1/resources/{resource}`), else 400 on `resources[i]`; none twice. Absent: none.",
        ))
        .build()
}

/// A broadcast's `members`: 1 to [`MAX_CHILDREN`](crate::children::MAX_CHILDREN) distinct ids.
pub(crate) fn members() -> Array {
    pattern_strings(ID_PATTERN, None)
        .min_items(Some(1))
        .max_items(Some(crate::children::MAX_CHILDREN as usize))
        .unique_items(true)
        .build()
}

impl PartialSchema for Target {
    fn schema() -> RefOr<Schema> {
        TargetWire::schema()
    }
}

impl ToSchema for Target {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("Target")
    }

    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        TargetWire::schemas(schemas);
        // `HttpTarget.headers` is written by hand (`maxProperties`), so its reference is too.
        schemas.push((SecretRef::name().into_owned(), SecretRef::schema()));
        SecretRef::schemas(schemas);
    }
}

/// The wire form of [`Target`]: `{"type": "lambda" | "http" | "sqs" | "sns" | "eventBridge" |
/// "stepFunctions" | "ecs" | "inProcess", ...}`.
#[derive(ToSchema)]
#[serde(untagged)]
#[schema(description = "What a worker calls, by `type`.", discriminator(property_name = "type", mapping(
    ("lambda" = "#/components/schemas/LambdaTarget"),
    ("http" = "#/components/schemas/HttpTarget"),
    ("sqs" = "#/components/schemas/SqsTarget"),
    ("sns" = "#/components/schemas/SnsTarget"),
    ("eventBridge" = "#/components/schemas/EventBridgeTarget"),
    ("stepFunctions" = "#/components/schemas/StepFunctionsTarget"),
    ("ecs" = "#/components/schemas/EcsTarget"),
    ("inProcess" = "#/components/schemas/InProcessTarget"),
)))]
#[allow(dead_code)] // Schema only (module docs).
enum TargetWire {
    Lambda(LambdaTarget),
    Http(HttpTarget),
    Sqs(SqsTarget),
    Sns(SnsTarget),
    EventBridge(EventBridgeTarget),
    StepFunctions(StepFunctionsTarget),
    Ecs(EcsTarget),
    InProcess(InProcessTarget),
}

/// [`Target::Lambda`].
#[derive(ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(description = "Invoke a Lambda function (RequestResponse)")]
#[allow(dead_code)] // Schema only (module docs).
struct LambdaTarget {
    #[schema(schema_with = lambda_tag)]
    r#type: String,
    /// function name or ARN; the tenant's allowlist applies when set
    #[schema(min_length = 1, max_length = 170)]
    function: String,
}

/// [`Target::Http`].
#[derive(ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(description = "POST the invocation to an HTTPS webhook")]
#[allow(dead_code)] // Schema only (module docs).
struct HttpTarget {
    #[schema(schema_with = http_tag)]
    r#type: String,
    /// an https URL (no user@ part); a host that is an IP address must be a public one (or in
    /// the deployment's private CIDR allowlist); the tenant's allowlist applies when set
    #[schema(
        min_length = 8,
        max_length = 2048,
        pattern = "^https://",
        examples("https://hooks.example.com/run")
    )]
    url: String,
    /// Secrets Manager secret holding the Standard Webhooks signing key `whsec_…` (two,
    /// whitespace-separated, during a rotation); requests are then signed (docs/webhooks.md)
    // `null` is read as absent, as `Target`'s serde form does.
    #[serde(default)]
    #[schema(max_length = 2048, pattern = "^arn:[a-z-]+:secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:.+$")]
    signing_secret_arn: Option<String>,
    #[serde(default)]
    #[schema(schema_with = http_headers)]
    headers: (),
}

/// [`Target::Sqs`].
#[derive(ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(description = "Send the invocation to an SQS queue")]
#[allow(dead_code)] // Schema only (module docs).
struct SqsTarget {
    #[schema(schema_with = sqs_tag)]
    r#type: String,
    /// the queue's URL; never one of Sundial's own queues; the tenant's allowlist applies when
    /// set
    #[schema(min_length = 8, max_length = 1024, pattern = "^https?://")]
    queue_url: String,
}

/// [`Target::Sns`].
#[derive(ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(
    description = "Publish the invocation to a tenant's SNS topic, as the tenant; done when the topic accepted it"
)]
#[allow(dead_code)] // Schema only (module docs).
struct SnsTarget {
    #[schema(schema_with = sns_tag)]
    r#type: String,
    /// the topic's ARN; it must carry the tag sundial-tenant=<tenant>; the tenant's allowlist
    /// applies when set
    #[schema(
        min_length = 20,
        max_length = 1024,
        pattern = "^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,251}(\\.fifo)?$"
    )]
    topic_arn: String,
    /// the message's subject: 1-100 printable ASCII characters
    #[serde(default)]
    #[schema(min_length = 1, max_length = 100, pattern = "^[ -~]{1,100}$")]
    subject: Option<String>,
}

/// [`Target::EventBridge`].
#[derive(ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(
    description = "Put the invocation as one event's detail on a tenant's EventBridge bus (source sundial.job), as the tenant; done when the bus accepted it"
)]
#[allow(dead_code)] // Schema only (module docs).
struct EventBridgeTarget {
    #[schema(schema_with = event_bridge_tag)]
    r#type: String,
    /// the bus's ARN; it must carry the tag sundial-tenant=<tenant>; the tenant's allowlist
    /// applies when set
    #[schema(
        min_length = 30,
        max_length = 1600,
        pattern = "^arn:aws[a-z-]*:events:[a-z0-9-]+:[0-9]{12}:event-bus/[A-Za-z0-9._/-]{1,256}$"
    )]
    event_bus_arn: String,
    /// the event's detail-type (default SundialJobFired)
    #[serde(default)]
    #[schema(min_length = 1, max_length = 128)]
    detail_type: Option<String>,
}

/// [`Target::StepFunctions`].
#[derive(ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(
    description = "Start an execution of a tenant's Step Functions state machine (standard workflow) with the invocation as input, named after the fire, as the tenant; done when the execution SUCCEEDED"
)]
#[allow(dead_code)] // Schema only (module docs).
struct StepFunctionsTarget {
    #[schema(schema_with = step_functions_tag)]
    r#type: String,
    /// the state machine's ARN (unqualified); it must carry the tag sundial-tenant=<tenant>; the
    /// tenant's allowlist applies when set
    #[schema(
        min_length = 45,
        max_length = 256,
        pattern = "^arn:aws[a-z-]*:states:[a-z0-9-]+:[0-9]{12}:stateMachine:[A-Za-z0-9_-]{1,80}$"
    )]
    state_machine_arn: String,
}

/// [`Target::Ecs`]. The patterns are `outbound::ecs_arn`'s and `is_ecs_name`'s: the ARNs carry
/// no `maxLength`, as the validator bounds only their names. What JSON Schema cannot say here
/// (one region and account for both ARNs, subnets for `FARGATE`, groups only with subnets) is
/// a 400 naming the field.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(
    description = "Run a task of a tenant's ECS task definition (RunTask, as the tenant) with the fire's identity as environment overrides of one container, and track it to its end; done when that container exited 0, failed (the retry policy applies) on any other exit code or a task that never started"
)]
#[allow(dead_code)] // Schema only (module docs).
struct EcsTarget {
    #[schema(schema_with = ecs_tag)]
    r#type: String,
    /// the cluster's ARN, `arn:<partition>:ecs:<region>:<account>:cluster/<name>` (a name of
    /// 1-255 of [A-Za-z0-9_-]); the tenant's allowlist (ecsClusters) applies when set
    #[schema(
        min_length = 36,
        pattern = "^arn:aws[^:]*:ecs:[a-z0-9-]+:[0-9]{12}:cluster/[A-Za-z0-9_-]{1,255}$",
        examples("arn:aws:ecs:eu-west-1:123456789012:cluster/batch")
    )]
    cluster_arn: String,
    /// the task definition's ARN with its revision (`…:task-definition/<family>:<revision>`), in
    /// the cluster's region and account: each fire runs exactly that revision; it must carry the
    /// tag sundial-tenant=<tenant>; the tenant's allowlist (ecsTaskDefinitions, family globs)
    /// applies when set
    #[schema(
        min_length = 46,
        pattern = "^arn:aws[^:]*:ecs:[a-z0-9-]+:[0-9]{12}:task-definition/[A-Za-z0-9_-]{1,255}:[1-9][0-9]{0,8}$",
        examples("arn:aws:ecs:eu-west-1:123456789012:task-definition/settle:3")
    )]
    task_definition_arn: String,
    /// the container (of the task definition) that gets the SUNDIAL_* environment overrides
    /// (SUNDIAL_EXECUTION_ID, SUNDIAL_FENCING_TOKEN, SUNDIAL_IDEMPOTENCY_KEY,
    /// SUNDIAL_SCHEDULED_AT, SUNDIAL_ATTEMPT, SUNDIAL_TENANT, SUNDIAL_JOB_ID, the invocation when
    /// small) and whose exit code decides the run (0 = success)
    #[schema(min_length = 1, max_length = 255, pattern = "^[A-Za-z0-9_-]{1,255}$")]
    container_name: String,
    #[serde(default)]
    #[schema(schema_with = ecs_launch_type)]
    launch_type: (),
    #[serde(default)]
    #[schema(schema_with = ecs_subnets)]
    subnets: (),
    #[serde(default)]
    #[schema(schema_with = ecs_security_groups)]
    security_groups: (),
    /// whether the task's network interface gets a public IP (awsvpc networking: ignored
    /// without subnets; default false)
    #[serde(default)]
    #[schema(default = false)]
    assign_public_ip: bool,
}

/// [`Target::InProcess`].
#[derive(ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(description = "A Rust handler in the worker process (ECS pools)")]
#[allow(dead_code)] // Schema only (module docs).
struct InProcessTarget {
    #[schema(schema_with = in_process_tag)]
    r#type: String,
    /// a handler registered in the ECS worker
    #[schema(min_length = 1, max_length = 64)]
    handler: String,
}

fn lambda_tag() -> Object {
    sundial_schedule::openapi::tag("lambda")
}
fn http_tag() -> Object {
    sundial_schedule::openapi::tag("http")
}
fn sqs_tag() -> Object {
    sundial_schedule::openapi::tag("sqs")
}
fn sns_tag() -> Object {
    sundial_schedule::openapi::tag("sns")
}
fn step_functions_tag() -> Object {
    sundial_schedule::openapi::tag("stepFunctions")
}
fn ecs_tag() -> Object {
    sundial_schedule::openapi::tag("ecs")
}
fn event_bridge_tag() -> Object {
    sundial_schedule::openapi::tag("eventBridge")
}
fn in_process_tag() -> Object {
    sundial_schedule::openapi::tag("inProcess")
}

/// An `ecs` target's `launchType`: [`EcsLaunchType`]'s values, inline with the default, as
/// `priority` is (a reference could carry neither the field's description nor its default).
fn ecs_launch_type() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some([EcsLaunchType::Fargate, EcsLaunchType::Ec2].map(|t| t.as_str())))
        .default(Some(EcsLaunchType::default().as_str().into()))
        .description(Some(
            "where the task runs: FARGATE (default; needs subnets) or EC2 (the cluster's container \
             instances)",
        ))
        .build()
}

/// An `ecs` target's `subnets`: distinct subnet ids, at most [`MAX_ECS_SUBNETS`].
fn ecs_subnets() -> Array {
    pattern_strings("^subnet-([0-9a-f]{8}|[0-9a-f]{17})$", Some("subnet-0a1b2c3d"))
        .max_items(Some(MAX_ECS_SUBNETS))
        .unique_items(true)
        .description(Some(
            "the task's subnets (awsvpc networking), none twice: required for FARGATE, optional for \
             EC2 (without them the task uses the task definition's network mode); each `subnet-` and \
             8 or 17 lowercase hex digits, else 400 on `target.subnets[i]`",
        ))
        .build()
}

/// An `ecs` target's `securityGroups`: distinct group ids, at most [`MAX_ECS_SECURITY_GROUPS`].
fn ecs_security_groups() -> Array {
    pattern_strings("^sg-([0-9a-f]{8}|[0-9a-f]{17})$", Some("sg-0a1b2c3d"))
        .max_items(Some(MAX_ECS_SECURITY_GROUPS))
        .unique_items(true)
        .description(Some(
            "the task's security groups (awsvpc networking), none twice; only with subnets. Absent: \
             the VPC's default group. Each `sg-` and 8 or 17 lowercase hex digits, else 400 on \
             `target.securityGroups[i]`",
        ))
        .build()
}

fn http_headers() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .max_properties(Some(crate::outbound::MAX_HEADERS))
        .additional_properties(Some(Ref::from_schema_name(SecretRef::name())))
        .description(Some(
            "extra request headers whose values are secrets, e.g. `{\"Authorization\": {\"secretArn\": \
             \"arn:…\"}}`; names Sundial sets itself (webhook-*, x-sundial-*, idempotency-key, \
             content-type, content-length, content-encoding, transfer-encoding, host, connection, \
             user-agent) are refused",
        ))
        .build()
}

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

    fn components<T: ToSchema>() -> Vec<(String, Value)> {
        let mut c = Vec::new();
        T::schemas(&mut c);
        c.into_iter().map(|(n, s)| (n, json_of(s))).collect()
    }

    #[test]
    fn each_target_serialises_to_the_component_its_tag_names() {
        let one_of = json_of(Target::schema());
        let components = components::<Target>();
        let secret =
            SecretRef { secret_arn: "arn:aws:secretsmanager:eu-west-1:123456789012:secret:k".into() };
        let targets = [
            Target::Lambda { function: "f".into() },
            Target::Http {
                url: "https://x.example".into(),
                signing_secret_arn: Some(secret.secret_arn.clone()),
                headers: [("Authorization".to_string(), secret)].into(),
            },
            Target::Sqs { queue_url: "https://sqs.eu-west-1.amazonaws.com/1/q".into() },
            Target::EventBridge {
                event_bus_arn: "arn:aws:events:eu-west-1:123456789012:event-bus/acme".into(),
                detail_type: None,
            },
            Target::Sns { topic_arn: "arn:aws:sns:eu-west-1:123456789012:acme".into(), subject: None },
            Target::StepFunctions {
                state_machine_arn: "arn:aws:states:eu-west-1:123456789012:stateMachine:acme".into(),
            },
            Target::Ecs {
                cluster_arn: "arn:aws:ecs:eu-west-1:123456789012:cluster/batch".into(),
                task_definition_arn: "arn:aws:ecs:eu-west-1:123456789012:task-definition/acme:1".into(),
                container_name: "main".into(),
                launch_type: crate::EcsLaunchType::Ec2,
                subnets: vec!["subnet-0a1b2c3d".into()],
                security_groups: vec!["sg-0a1b2c3d".into()],
                assign_public_ip: true,
            },
            Target::InProcess { handler: "h".into() },
        ];
        assert_eq!(one_of["oneOf"].as_array().unwrap().len(), targets.len());
        for target in targets {
            let wire = serde_json::to_value(&target).unwrap();
            let tag = wire["type"].as_str().unwrap();
            let to = one_of["discriminator"]["mapping"][tag].as_str().unwrap_or_else(|| panic!("{tag}"));
            let name = to.trim_start_matches("#/components/schemas/");
            let (_, schema) = components.iter().find(|(n, _)| n == name).unwrap();
            assert_eq!(schema["properties"]["type"]["enum"], json!([tag]));
            assert_eq!(schema["additionalProperties"], json!(false));
            for key in wire.as_object().unwrap().keys() {
                assert!(schema["properties"].get(key).is_some(), "{name} lacks {key}");
            }
            let required: serde_json::Map<String, Value> = schema["required"]
                .as_array()
                .unwrap()
                .iter()
                .map(|k| (k.as_str().unwrap().to_string(), wire[k.as_str().unwrap()].clone()))
                .collect();
            let read: Target = serde_json::from_value(Value::Object(required)).unwrap();
            assert_eq!(std::mem::discriminant(&read), std::mem::discriminant(&target));
        }
        assert!(components.iter().any(|(n, _)| n == "SecretRef"), "headers' reference is registered");
        let (_, ecs) = components.iter().find(|(n, _)| n == "EcsTarget").unwrap();
        assert_eq!(ecs["properties"]["launchType"]["enum"], json_of(EcsLaunchType::schema())["enum"]);
    }

    /// `pattern` without its anchors, as a generator (proptest's takes none).
    fn matching(pattern: &Value) -> proptest::string::RegexGeneratorStrategy<String> {
        let p = pattern.as_str().unwrap_or_default();
        proptest::string::string_regex(p.trim_start_matches('^').trim_end_matches('$'))
            .unwrap_or_else(|e| panic!("{p}: {e}"))
    }

    #[test]
    fn what_the_ecs_schema_admits_the_validator_accepts() {
        use proptest::collection::btree_set;
        use proptest::test_runner::TestRunner;

        let components = components::<Target>();
        let (_, ecs) = components.iter().find(|(n, _)| n == "EcsTarget").unwrap();
        let p = &ecs["properties"];
        let strategy = (
            matching(&p["clusterArn"]["pattern"]),
            matching(&p["taskDefinitionArn"]["pattern"]),
            matching(&p["containerName"]["pattern"]),
            btree_set(matching(&p["subnets"]["items"]["pattern"]), 1..=MAX_ECS_SUBNETS),
            btree_set(matching(&p["securityGroups"]["items"]["pattern"]), 0..=MAX_ECS_SECURITY_GROUPS),
        );
        let policy = crate::outbound::TargetPolicy::default();
        let pools = vec!["default".to_string()];
        let cfg = || crate::Deployment { pools: &pools, shards: 16, queue_prefix: "t-", targets: &policy };
        TestRunner::default()
            .run(&strategy, |(cluster, def, container, subnets, groups)| {
                // GIVEN values of each pattern, the task definition moved into the cluster's
                // partition, region and account (both patterns share that prefix)
                let prefix = &cluster[..cluster.find(":cluster/").unwrap_or_default()];
                let family = &def[def.find(":task-definition/").unwrap_or_default()..];
                let target = Target::Ecs {
                    cluster_arn: cluster.clone(),
                    task_definition_arn: format!("{prefix}{family}"),
                    container_name: container,
                    launch_type: EcsLaunchType::Fargate,
                    subnets: subnets.into_iter().collect(),
                    security_groups: groups.into_iter().collect(),
                    assign_public_ip: false,
                };
                // THEN the validator accepts the target
                let judged = policy.check(cfg(), "acme", &target).map_err(|r| r.error.to_string());
                proptest::prop_assert_eq!(judged, Ok(()), "{:?}", target);
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{e}"));
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
