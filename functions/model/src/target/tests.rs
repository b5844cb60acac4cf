//! What holds for every kind: the wire form the schema describes, and a policy that judges
//! any text without panicking.

use super::*;
use crate::outbound::Home;
use crate::target::http::SecretRef;
use crate::target::testing::{allowlist, refusal};
use serde_json::{json, Value};

fn json_of(s: RefOr<Schema>) -> Value {
    serde_json::to_value(s).unwrap()
}

fn components<T: ToSchema>() -> Vec<(String, Value)> {
    let mut c = Vec::new();
    T::schemas(&mut c);
    c.into_iter().map(|(n, s)| (n, json_of(s))).collect()
}

fn one_of_each() -> Vec<Target> {
    let secret = SecretRef { secret_arn: "arn:aws:secretsmanager:eu-west-1:123456789012:secret:k".into() };
    vec![
        Target::lambda("f"),
        Target::Http(HttpTarget {
            url: "https://x.example".into(),
            signing_secret_arn: Some(secret.secret_arn.clone()),
            headers: [("Authorization".to_string(), secret)].into(),
        }),
        Target::sqs("https://sqs.eu-west-1.amazonaws.com/1/q"),
        Target::EventBridge(EventBridgeTarget {
            event_bus_arn: "arn:aws:events:eu-west-1:123456789012:event-bus/acme".into(),
            detail_type: None,
        }),
        Target::Sns(SnsTarget { topic_arn: "arn:aws:sns:eu-west-1:123456789012:acme".into(), subject: None }),
        Target::step_functions("arn:aws:states:eu-west-1:123456789012:stateMachine:acme"),
        Target::Ecs(EcsTarget {
            cluster_arn: "arn:aws:ecs:eu-west-1:123456789012:cluster/batch".into(),
            task_definition_arn: "arn:aws:ecs:eu-west-1:123456789012:task-definition/acme:1".into(),
            container_name: "main".into(),
            launch_type: EcsLaunchType::Ec2,
            subnets: vec!["subnet-0a1b2c3d".into()],
            security_groups: vec!["sg-0a1b2c3d".into()],
            assign_public_ip: true,
        }),
        Target::in_process("h"),
    ]
}

#[test]
fn each_target_serialises_to_the_component_its_tag_names() {
    let one_of = json_of(Target::schema());
    let components = components::<Target>();
    let targets = one_of_each();
    assert_eq!(one_of["oneOf"].as_array().unwrap().len(), targets.len());
    for target in targets {
        let wire = serde_json::to_value(&target).unwrap();
        let tag = wire["type"].as_str().unwrap();
        assert_eq!(tag, target.kind());
        let to = one_of["discriminator"]["mapping"][tag].as_str().unwrap_or_else(|| panic!("{tag}"));
        let name = to.trim_start_matches("#/components/schemas/");
        let (_, schema) = components.iter().find(|(n, _)| n == name).unwrap();
        assert_eq!(schema["properties"]["type"]["enum"], json!([tag]));
        assert_eq!(schema["required"][0], json!("type"), "{name}: type first, as serde writes it");
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
        // AND the full form reads back as it was written
        assert_eq!(serde_json::from_value::<Target>(wire).unwrap(), target);
    }
    assert!(components.iter().any(|(n, _)| n == "SecretRef"), "headers' reference is registered");
    let (_, ecs) = components.iter().find(|(n, _)| n == "EcsTarget").unwrap();
    assert_eq!(ecs["properties"]["launchType"]["enum"], json_of(EcsLaunchType::schema())["enum"]);
}

#[test]
fn every_kind_refuses_a_field_it_does_not_have_and_reads_old_spellings() {
    for target in one_of_each() {
        let mut wire = serde_json::to_value(&target).unwrap();
        wire["unknownField"] = json!(1);
        let read = serde_json::from_value::<Target>(wire);
        assert!(read.as_ref().is_err_and(|e| e.to_string().contains("unknownField")), "{read:?}");
    }
    let old: Target = serde_json::from_str(r#"{"type":"in_process","handler":"h"}"#).unwrap();
    assert_eq!(old, Target::in_process("h"));
    let old: Target = serde_json::from_str(r#"{"type":"sqs","queue_url":"https://q"}"#).unwrap();
    assert_eq!(old, Target::sqs("https://q"));
    let nulls: Target =
        serde_json::from_str(r#"{"type":"http","url":"https://x","signingSecretArn":null}"#).unwrap();
    assert_eq!(nulls, Target::http("https://x"));
    assert!(serde_json::from_str::<Target>(r#"{"type":"ftp","url":"x"}"#).is_err());
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
        btree_set(matching(&p["securityGroups"]["items"]["pattern"]), 1..=MAX_ECS_SECURITY_GROUPS),
    );
    // (a network the tenant was given: which one is the allowlist's judgement, not the schema's)
    let policy = allowlist(
        r#"{"acme": {"ecsClusters": ["*"], "ecsTaskDefinitions": ["*"],
                     "ecsSubnets": ["*"], "ecsSecurityGroups": ["*"]}}"#,
    );
    let pools = vec!["default".to_string()];
    let cfg = || Deployment { pools: &pools, shards: 16, queue_prefix: "t-", targets: &policy };
    TestRunner::default()
        .run(&strategy, |(cluster, def, container, subnets, groups)| {
            // GIVEN values of each pattern, the task definition moved into the cluster's
            // partition, region and account (both patterns share that prefix)
            let prefix = &cluster[..cluster.find(":cluster/").unwrap_or_default()];
            let family = &def[def.find(":task-definition/").unwrap_or_default()..];
            let target = Target::Ecs(EcsTarget {
                cluster_arn: cluster.clone(),
                task_definition_arn: format!("{prefix}{family}"),
                container_name: container,
                launch_type: EcsLaunchType::Fargate,
                subnets: subnets.into_iter().collect(),
                security_groups: groups.into_iter().collect(),
                assign_public_ip: false,
            });
            // THEN the validator accepts the target
            let judged = policy.check(cfg(), "acme", &target).map_err(|r| r.error.to_string());
            proptest::prop_assert_eq!(judged, Ok(()), "{:?}", target);
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
}

fn webhook(url: &str, signing: Option<&str>, header: Option<&str>) -> Target {
    let headers = header
        .map(|arn| ("Authorization".to_string(), SecretRef { secret_arn: arn.to_string() }))
        .into_iter()
        .collect();
    Target::Http(HttpTarget { url: url.into(), signing_secret_arn: signing.map(str::to_string), headers })
}

proptest::proptest! {
    #[test]
    fn any_text_is_judged_without_panicking(v in "\\PC{0,80}", g in "[a-z0-9:/*?#@.-]{0,40}") {
        let mut policy = allowlist(
            r#"{"acme": {"lambda": ["arn:aws:lambda:*:123456789012:function:acme-*"],
                         "sqs": ["arn:aws:sqs:*:123456789012:acme-*"],
                         "secrets": ["arn:aws:secretsmanager:*:123456789012:secret:acme/*"]}}"#,
        );
        policy.home = Home { region: Some("eu-west-1".into()), account: Some("123456789012".into()) };
        policy.own_functions = vec!["sundial-*".into(), g.clone()];
        for target in [
            Target::lambda(&v),
            Target::sqs(&v),
            Target::http(&v),
            webhook("https://h.acme.com/", Some(&v), Some(&v)),
            Target::in_process(v.clone()),
            Target::step_functions(&v),
        ] {
            let _ = refusal(&policy, "acme", &target);
        }
    }
}
