//! Issue 49, N1: an `ecs` target's network is the tenant's own. ECS creates a task's network
//! interface with its service-linked role, so nothing in IAM keeps tenant B's container out of
//! tenant A's subnet and security group; the deployment's per-tenant allowlist does
//! (`ecsSubnets`, `ecsSecurityGroups`, `ecsPublicIp`), and an open deployment gives no tenant a
//! network. Refused at create naming the field; the worker's refusal at run is
//! `tests/tests/targets.rs` (`ecs_network_not_given`).

use crate::common::{at, unthrottled, Harness};
use serde_json::{json, Value};
use sundial_model::outbound::TenantTargets;

const ACCT: &str = "arn:aws:ecs:eu-west-1:123456789012";

fn ecs_job(job_id: &str, subnets: &[&str], groups: &[&str], public: bool) -> Value {
    json!({
        "jobId": job_id,
        "schedule": {"expression": "0 0 2 * * *", "timezone": "UTC"},
        "target": {
            "type": "ecs",
            "clusterArn": format!("{ACCT}:cluster/shared"),
            "taskDefinitionArn": format!("{ACCT}:task-definition/globex-tool:3"),
            "containerName": "main",
            "subnets": subnets,
            "securityGroups": groups,
            "assignPublicIp": public,
        },
    })
}

#[tokio::test]
async fn an_ecs_target_naming_a_network_the_tenant_was_not_given_is_refused_naming_the_field() {
    // GIVEN acme given subnet-0aaa and its database's group sg-0aaa, globex its own network
    let tenants = TenantTargets::parse(
        r#"{"acme": {"ecsClusters": ["*"], "ecsTaskDefinitions": ["*"], "pools": ["default"],
                     "ecsSubnets": ["subnet-0aaa0000"], "ecsSecurityGroups": ["sg-0aaa0000"]},
            "globex": {"ecsClusters": ["*"], "ecsTaskDefinitions": ["*"], "pools": ["default"],
                       "ecsSubnets": ["subnet-0bbb0000"], "ecsSecurityGroups": ["sg-0bbb0000"]}}"#,
    )
    .expect("allowlist");
    let h = Harness::with_config(
        "ecs-net",
        &["default"],
        at("2026-12-01T10:00:00Z"),
        Default::default(),
        unthrottled(),
        |cfg| cfg.targets.tenants = Some(tenants),
    )
    .await;
    // WHEN globex creates jobs naming acme's subnet, acme's group, no group, a public IP
    for (job, subnets, groups, public, field) in [
        ("a", &["subnet-0aaa0000"][..], &["sg-0bbb0000"][..], false, "target.subnets[0]"),
        ("b", &["subnet-0bbb0000"][..], &["sg-0aaa0000"][..], false, "target.securityGroups[0]"),
        ("c", &["subnet-0bbb0000"][..], &[][..], false, "target.securityGroups"),
        ("d", &["subnet-0bbb0000"][..], &["sg-0bbb0000"][..], true, "target.assignPublicIp"),
    ] {
        let a = h.post("globex", "/v1/jobs", &ecs_job(job, subnets, groups, public)).await;
        // THEN each is refused, naming the field, and nothing is stored
        assert_eq!((a.status, a.error_field()), (400, Some(field)), "{job}: {}", a.body);
        assert_eq!(h.get("globex", &format!("/v1/jobs/{job}")).await.status, 404, "{job}");
    }
    // AND globex in its own network is created
    let ok =
        h.post("globex", "/v1/jobs", &ecs_job("own", &["subnet-0bbb0000"], &["sg-0bbb0000"], false)).await;
    assert_eq!(ok.status, 201, "{}", ok.body);
    h.env.cleanup().await;
}

#[tokio::test]
async fn an_open_deployment_gives_no_tenant_an_ecs_network() {
    // GIVEN a deployment without allowlists (the harness's default)
    let h = Harness::new("ecs-open", at("2026-12-01T10:00:00Z")).await;
    // WHEN a tenant names a subnet THEN it is refused, naming the field and the setting
    let a = h.post("globex", "/v1/jobs", &ecs_job("x", &["subnet-0aaa0000"], &["sg-0aaa0000"], false)).await;
    assert_eq!((a.status, a.error_field()), (400, Some("target.subnets")), "{}", a.body);
    assert!(a.body.to_string().contains("ecsSubnets"), "{}", a.body);
    h.env.cleanup().await;
}
