//! The `ecs` target: run a task of a tenant's ECS task definition (a Fargate or EC2 batch job)
//! with the fire's identity as environment overrides of one container, and track it to its
//! end: done when that container exited 0, failed (retry policy applies) on any other exit or
//! a task that never started; as the tenant (docs/targets.md, "ECS tasks"). The call:
//! `sundial-core`'s `execution/target/ecs.rs`.

use serde::{Deserialize, Serialize};
use sundial_schedule::openapi::pattern_strings;
use utoipa::openapi::schema::{Array, Object, ObjectBuilder, Type};
use utoipa::ToSchema;

use super::view::PolicyView;
use crate::arn::Arn;
use crate::codes;
use crate::outbound::{glob_match, invalid, refuse, Refusal, TargetAllow};

/// Most subnets an `ecs` target's `awsvpc` configuration takes (RunTask's limit).
pub const MAX_ECS_SUBNETS: usize = 16;
/// Most security groups an `ecs` target's `awsvpc` configuration takes (RunTask's limit).
pub const MAX_ECS_SECURITY_GROUPS: usize = 5;

/// An `ecs` target. The patterns are [`ecs_arn`]'s and [`is_ecs_name`]'s: the ARNs carry no
/// `maxLength`, as the validator bounds only their names. What JSON Schema cannot say here
/// (one region and account for both ARNs, subnets for `FARGATE`, groups only with subnets) is
/// a 400 naming the field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(
    description = "Run a task of a tenant's ECS task definition (RunTask, as the tenant) with the fire's identity as environment overrides of one container, and track it to its end; done when that container exited 0, failed (the retry policy applies) on any other exit code or a task that never started"
)]
pub struct EcsTarget {
    /// the cluster's ARN, `arn:<partition>:ecs:<region>:<account>:cluster/<name>` (a name of
    /// 1-255 of [A-Za-z0-9_-]); the tenant's allowlist (ecsClusters) applies when set
    #[schema(
        min_length = 36,
        pattern = "^arn:aws[^:]*:ecs:[a-z0-9-]+:[0-9]{12}:cluster/[A-Za-z0-9_-]{1,255}$",
        examples("arn:aws:ecs:eu-west-1:123456789012:cluster/batch")
    )]
    pub cluster_arn: String,
    /// the task definition's ARN with its revision (`…:task-definition/<family>:<revision>`), in
    /// the cluster's region and account: each fire runs exactly that revision; it must carry the
    /// tag sundial-tenant=<tenant>; the tenant's allowlist (ecsTaskDefinitions, family globs)
    /// applies when set
    #[schema(
        min_length = 46,
        pattern = "^arn:aws[^:]*:ecs:[a-z0-9-]+:[0-9]{12}:task-definition/[A-Za-z0-9_-]{1,255}:[1-9][0-9]{0,8}$",
        examples("arn:aws:ecs:eu-west-1:123456789012:task-definition/settle:3")
    )]
    pub task_definition_arn: String,
    /// the container (of the task definition) that gets the SUNDIAL_* environment overrides
    /// (SUNDIAL_EXECUTION_ID, SUNDIAL_FENCING_TOKEN, SUNDIAL_IDEMPOTENCY_KEY,
    /// SUNDIAL_SCHEDULED_AT, SUNDIAL_ATTEMPT, SUNDIAL_TENANT, SUNDIAL_JOB_ID, the invocation when
    /// small) and whose exit code decides the run (0 = success)
    #[schema(min_length = 1, max_length = 255, pattern = "^[A-Za-z0-9_-]{1,255}$")]
    pub container_name: String,
    // `FARGATE` (default) or `EC2`: described by `launch_type_schema`.
    #[serde(default, skip_serializing_if = "EcsLaunchType::is_default")]
    #[schema(schema_with = launch_type_schema)]
    pub launch_type: EcsLaunchType,
    // The task's subnets (`awsvpc`; required for `FARGATE`): described by `subnets_schema`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(schema_with = subnets_schema)]
    pub subnets: Vec<String>,
    // The task's security groups (`awsvpc`): described by `security_groups_schema`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(schema_with = security_groups_schema)]
    pub security_groups: Vec<String>,
    /// whether the task's network interface gets a public IP (awsvpc networking: ignored
    /// without subnets; default false)
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[schema(default = false)]
    pub assign_public_ip: bool,
}

/// How an `ecs` target's task is placed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum EcsLaunchType {
    /// AWS Fargate (serverless; `awsvpc` networking, so the target names subnets).
    #[default]
    Fargate,
    /// The cluster's EC2 container instances.
    Ec2,
}

impl EcsLaunchType {
    /// The default, left out when a definition is written.
    pub fn is_default(&self) -> bool {
        *self == EcsLaunchType::Fargate
    }

    /// The RunTask value.
    pub fn as_str(&self) -> &'static str {
        match self {
            EcsLaunchType::Fargate => "FARGATE",
            EcsLaunchType::Ec2 => "EC2",
        }
    }
}

impl EcsTarget {
    /// Judges the target: both ARNs (one region and account), the container, the network, then
    /// the tenant's cluster and task definition globs.
    pub fn check(&self, view: &PolicyView<'_>) -> Result<(), Refusal> {
        let cluster = ecs_arn(&self.cluster_arn, "cluster").ok_or_else(|| {
            invalid(
                "target.clusterArn",
                "must be an ECS cluster ARN: arn:<partition>:ecs:<region>:<account>:cluster/<name>",
            )
        })?;
        let family = ecs_arn(&self.task_definition_arn, "task-definition")
            .filter(|a| is_family_and_revision(a.name))
            .ok_or_else(|| {
                invalid(
                    "target.taskDefinitionArn",
                    "must be an ECS task definition ARN with its revision: arn:<partition>:ecs:<region>:<account>:task-definition/<family>:<revision>",
                )
            })?;
        if (family.partition, family.region, family.account)
            != (cluster.partition, cluster.region, cluster.account)
        {
            return Err(invalid("target.taskDefinitionArn", "must be in the cluster's region and account"));
        }
        if !is_ecs_name(&self.container_name) {
            return Err(invalid("target.containerName", "must be 1-255 of [A-Za-z0-9_-]"));
        }
        self.check_network()?;
        self.check_network_given(view)?;
        view.listed("ECS cluster", "target.clusterArn", &self.cluster_arn, |a| &a.ecs_clusters)?;
        view.listed("ECS task definition", "target.taskDefinitionArn", self.family_arn(), |a| {
            &a.ecs_task_definitions
        })
    }

    /// The subnets and groups: ids, at most RunTask's limits, none twice; subnets for a
    /// `FARGATE` task, groups only with subnets.
    fn check_network(&self) -> Result<(), Refusal> {
        check_ids("target.subnets", &self.subnets, "subnet-", MAX_ECS_SUBNETS)?;
        check_ids("target.securityGroups", &self.security_groups, "sg-", MAX_ECS_SECURITY_GROUPS)?;
        if self.launch_type == EcsLaunchType::Fargate && self.subnets.is_empty() {
            return Err(invalid(
                "target.subnets",
                "a FARGATE task needs at least one subnet (awsvpc networking)",
            ));
        }
        if self.subnets.is_empty() && !self.security_groups.is_empty() {
            return Err(invalid("target.securityGroups", "need subnets (awsvpc networking)"));
        }
        Ok(())
    }

    /// The network is the tenant's own: each subnet and group one the deployment gave it
    /// (`ecsSubnets`, `ecsSecurityGroups`), at least one group with subnets, a public IP only
    /// where `ecsPublicIp` allows it. A deployment without allowlists gives no tenant a
    /// network: ECS places a task wherever RunTask says, with its service-linked role, so the
    /// tenant's own IAM cannot be what keeps B's container out of A's subnet and security group
    /// (docs/tenancy.md, "ECS tasks").
    fn check_network_given(&self, view: &PolicyView<'_>) -> Result<(), Refusal> {
        let Some(tenants) = &view.policy.tenants else {
            if self.subnets.is_empty() && !self.assign_public_ip {
                return Ok(());
            }
            let field = if self.subnets.is_empty() { "target.assignPublicIp" } else { "target.subnets" };
            return Err(refuse(
                codes::TARGET_NOT_ALLOWED,
                field,
                "this deployment gives no tenant an ECS network: subnets, security groups and a public IP are allowed only through the tenant's allowlist (tenantTargets: ecsSubnets, ecsSecurityGroups, ecsPublicIp)",
            ));
        };
        let allow = tenants.of(view.tenant);
        let given = |globs: fn(&TargetAllow) -> &Vec<String>, id: &str| {
            allow.is_some_and(|a| globs(a).iter().any(|g| glob_match(g, id)))
        };
        let not_given = |field: String, what: &str| {
            refuse(
                codes::TARGET_NOT_ALLOWED,
                field,
                format!("this deployment does not give tenant {:?} this {what}", view.tenant),
            )
        };
        for (i, s) in self.subnets.iter().enumerate() {
            if !given(|a| &a.ecs_subnets, s) {
                return Err(not_given(format!("target.subnets[{i}]"), "subnet"));
            }
        }
        for (i, g) in self.security_groups.iter().enumerate() {
            if !given(|a| &a.ecs_security_groups, g) {
                return Err(not_given(format!("target.securityGroups[{i}]"), "security group"));
            }
        }
        if !self.subnets.is_empty() && self.security_groups.is_empty() {
            return Err(refuse(
                codes::TARGET_NOT_ALLOWED,
                "target.securityGroups",
                "name at least one of the tenant's security groups: without, ECS gives the task the VPC's default group, which no tenant was given",
            ));
        }
        if self.assign_public_ip && !allow.is_some_and(|a| a.ecs_public_ip) {
            return Err(not_given("target.assignPublicIp".into(), "public IP (ecsPublicIp)"));
        }
        Ok(())
    }

    /// The task definition's ARN without its revision: the family the tenant's globs name.
    pub fn family_arn(&self) -> &str {
        let arn = self.task_definition_arn.as_str();
        arn.rsplit_once(':').filter(|(_, r)| r.chars().all(|c| c.is_ascii_digit())).map_or(arn, |(f, _)| f)
    }
}

/// The parts of an ECS ARN `arn:<partition>:ecs:<region>:<account>:<kind>/<name>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EcsArn<'a> {
    /// `aws`, `aws-cn`, ...
    pub partition: &'a str,
    /// The region.
    pub region: &'a str,
    /// The 12-digit account.
    pub account: &'a str,
    /// What follows `<kind>/` (a task definition's `family[:revision]`).
    pub name: &'a str,
}

/// Splits an ECS ARN of `kind` (`cluster`, `task-definition`) whose name is 1-255 of
/// `[A-Za-z0-9_-]` (a task definition's may end `:<revision>`).
pub fn ecs_arn<'a>(arn: &'a str, kind: &str) -> Option<EcsArn<'a>> {
    let a = Arn::regional(arn, "ecs")?;
    let name = a.resource.strip_prefix(kind)?.strip_prefix('/')?;
    (kind == "task-definition" || is_ecs_name(name)).then_some(EcsArn {
        partition: a.partition,
        region: a.region,
        account: a.account,
        name,
    })
}

/// 1-255 of `[A-Za-z0-9_-]`: an ECS cluster, task definition family or container name.
pub fn is_ecs_name(s: &str) -> bool {
    (1..=255).contains(&s.len()) && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// `family:revision` (a revision of 1-9 digits, not 0): a job names the revision it runs, so
/// its tag can be read with a call scoped to it (docs/tenancy.md).
fn is_family_and_revision(s: &str) -> bool {
    s.split_once(':').is_some_and(|(family, rev)| {
        is_ecs_name(family)
            && (1..=9).contains(&rev.len())
            && rev.chars().all(|c| c.is_ascii_digit())
            && !rev.starts_with('0')
    })
}

/// AWS resource ids `prefix` + 8 or 17 lowercase hex digits, at most `max`, none twice.
fn check_ids(field: &str, ids: &[String], prefix: &str, max: usize) -> Result<(), Refusal> {
    if ids.len() > max {
        return Err(invalid(field, format!("at most {max}")));
    }
    for (i, id) in ids.iter().enumerate() {
        let hex = id.strip_prefix(prefix).unwrap_or("");
        if !matches!(hex.len(), 8 | 17)
            || !hex.chars().all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
        {
            return Err(invalid(
                format!("{field}[{i}]"),
                format!("must be {prefix} and 8 or 17 lowercase hex digits"),
            ));
        }
        if ids[..i].contains(id) {
            return Err(invalid(format!("{field}[{i}]"), format!("{id:?} is listed twice")));
        }
    }
    Ok(())
}

/// `launchType`: [`EcsLaunchType`]'s values, inline with the default, as `priority` is (a
/// reference could carry neither the field's description nor its default).
fn launch_type_schema() -> Object {
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

/// `subnets`: distinct subnet ids, at most [`MAX_ECS_SUBNETS`].
fn subnets_schema() -> Array {
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

/// `securityGroups`: distinct group ids, at most [`MAX_ECS_SECURITY_GROUPS`].
fn security_groups_schema() -> Array {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codes;
    use crate::target::testing::{allowlist, field, refusal};
    use crate::target::Target;

    const ACCT: &str = "arn:aws:ecs:eu-west-1:123456789012";
    const SG: [&str; 1] = ["sg-0a1b2c3d"];

    fn task(cluster: &str, def: &str, container: &str, subnets: &[&str], sgs: &[&str]) -> Target {
        Target::Ecs(EcsTarget {
            cluster_arn: cluster.to_string(),
            task_definition_arn: def.to_string(),
            container_name: container.to_string(),
            launch_type: EcsLaunchType::Fargate,
            subnets: subnets.iter().map(|s| s.to_string()).collect(),
            security_groups: sgs.iter().map(|s| s.to_string()).collect(),
            assign_public_ip: false,
        })
    }

    fn policy() -> crate::outbound::TargetPolicy {
        allowlist(
            r#"{"acme": {"ecsClusters": ["arn:aws:ecs:*:123456789012:cluster/batch"],
                         "ecsTaskDefinitions": ["arn:aws:ecs:*:123456789012:task-definition/acme-*"],
                         "ecsSubnets": ["subnet-0a1b2c3d"],
                         "ecsSecurityGroups": ["sg-0a1b2c3d", "sg-0123456789abcdef0"]}}"#,
        )
    }

    #[test]
    fn ecs_targets_are_checked_against_both_globs() {
        let policy = policy();
        let cluster = format!("{ACCT}:cluster/batch");
        let def = format!("{ACCT}:task-definition/acme-settle:12");
        let sub = ["subnet-0a1b2c3d"];
        // GIVEN a revision of an allowed family, on the cluster
        assert_eq!(
            refusal(&policy, "acme", &task(&cluster, &def, "main", &sub, &["sg-0123456789abcdef0"])),
            None
        );
        // AND a family without a revision is refused: the run must name what it runs
        let latest = format!("{ACCT}:task-definition/acme-settle");
        assert_eq!(
            refusal(&policy, "acme", &task(&cluster, &latest, "main", &sub, &SG)),
            field("target.taskDefinitionArn", codes::BAD_TARGET)
        );
        // THEN another family, another cluster, another account are refused, naming the field
        let other = format!("{ACCT}:task-definition/globex-settle:1");
        assert_eq!(
            refusal(&policy, "acme", &task(&cluster, &other, "main", &sub, &SG)),
            field("target.taskDefinitionArn", codes::TARGET_NOT_ALLOWED)
        );
        let other_cluster = format!("{ACCT}:cluster/prod");
        assert_eq!(
            refusal(&policy, "acme", &task(&other_cluster, &def, "main", &sub, &SG)),
            field("target.clusterArn", codes::TARGET_NOT_ALLOWED)
        );
        let elsewhere = "arn:aws:ecs:eu-west-1:210987654321:task-definition/acme-settle:1";
        assert_eq!(
            refusal(&policy, "acme", &task(&cluster, elsewhere, "main", &sub, &SG)),
            field("target.taskDefinitionArn", codes::BAD_TARGET)
        );
    }

    #[test]
    fn malformed_ecs_fields_are_named() {
        let policy = policy();
        let cluster = format!("{ACCT}:cluster/batch");
        let def = format!("{ACCT}:task-definition/acme-settle:12");
        let sub = ["subnet-0a1b2c3d"];
        for bad in [
            "batch",
            "arn:aws:ecs:eu-west-1:123456789012:service/batch",
            "arn:aws:ecs:eu-west-1:12345:cluster/batch",
            "arn:aws:ecs:eu-west-1:123456789012:cluster/ba.tch",
        ] {
            assert_eq!(
                refusal(&policy, "acme", &task(bad, &def, "main", &sub, &SG)),
                field("target.clusterArn", codes::BAD_TARGET),
                "{bad}"
            );
        }
        for bad in
            ["acme-settle:1", "task-definition/acme:0", "task-definition/acme:x", "task-definition/ac.me:1"]
        {
            let arn = format!("{ACCT}:{bad}");
            let arn = if bad.starts_with("task-definition") { arn } else { bad.to_string() };
            assert_eq!(
                refusal(&policy, "acme", &task(&cluster, &arn, "main", &sub, &SG)),
                field("target.taskDefinitionArn", codes::BAD_TARGET),
                "{bad}"
            );
        }
        assert_eq!(
            refusal(&policy, "acme", &task(&cluster, &def, "", &sub, &SG)),
            field("target.containerName", codes::BAD_TARGET)
        );
    }

    #[test]
    fn an_ecs_network_is_ids_within_runtasks_limits() {
        let policy = policy();
        let cluster = format!("{ACCT}:cluster/batch");
        let def = format!("{ACCT}:task-definition/acme-settle:12");
        let sub = ["subnet-0a1b2c3d"];
        assert_eq!(
            refusal(&policy, "acme", &task(&cluster, &def, "main", &[], &[])),
            field("target.subnets", codes::BAD_TARGET)
        );
        assert_eq!(
            refusal(&policy, "acme", &task(&cluster, &def, "main", &["subnet-XYZ"], &[])),
            field("target.subnets[0]", codes::BAD_TARGET)
        );
        assert_eq!(
            refusal(&policy, "acme", &task(&cluster, &def, "main", &sub, &["sg-1", "sg-0a1b2c3d"])),
            field("target.securityGroups[0]", codes::BAD_TARGET)
        );
        assert_eq!(
            refusal(
                &policy,
                "acme",
                &task(&cluster, &def, "main", &["subnet-0a1b2c3d", "subnet-0a1b2c3d"], &[])
            ),
            field("target.subnets[1]", codes::BAD_TARGET)
        );
        // AND an EC2 task may go without awsvpc networking, but not with groups and no subnets
        let ec2 = |sgs: &[&str]| {
            Target::Ecs(EcsTarget {
                cluster_arn: cluster.clone(),
                task_definition_arn: def.clone(),
                container_name: "main".into(),
                launch_type: EcsLaunchType::Ec2,
                subnets: vec![],
                security_groups: sgs.iter().map(|s| s.to_string()).collect(),
                assign_public_ip: false,
            })
        };
        assert_eq!(refusal(&policy, "acme", &ec2(&[])), None);
        assert_eq!(
            refusal(&policy, "acme", &ec2(&["sg-0a1b2c3d"])),
            field("target.securityGroups", codes::BAD_TARGET)
        );
    }

    #[test]
    fn an_ecs_network_must_be_one_the_tenant_was_given() {
        // GIVEN acme given one subnet and one group, globex given a subnet of its own
        let policy = allowlist(
            r#"{"acme": {"ecsClusters": ["*"], "ecsTaskDefinitions": ["*"],
                         "ecsSubnets": ["subnet-0a1b2c3d"], "ecsSecurityGroups": ["sg-0a1b2c3d"]},
                "globex": {"ecsClusters": ["*"], "ecsTaskDefinitions": ["*"], "ecsPublicIp": true,
                           "ecsSubnets": ["subnet-1111aaaa"], "ecsSecurityGroups": ["sg-1111aaaa"]}}"#,
        );
        let cluster = format!("{ACCT}:cluster/shared");
        let def = format!("{ACCT}:task-definition/globex-tool:3");
        let with = |subnets: &[&str], sgs: &[&str], public: bool| {
            let Target::Ecs(mut t) = task(&cluster, &def, "main", subnets, sgs) else { unreachable!() };
            t.assign_public_ip = public;
            Target::Ecs(t)
        };
        // THEN globex in its own network passes, with the public IP it was given
        assert_eq!(refusal(&policy, "globex", &with(&["subnet-1111aaaa"], &["sg-1111aaaa"], true)), None);
        // AND globex naming acme's subnet, or acme's group, is refused naming the entry
        assert_eq!(
            refusal(
                &policy,
                "globex",
                &with(&["subnet-1111aaaa", "subnet-0a1b2c3d"], &["sg-1111aaaa"], false)
            ),
            field("target.subnets[1]", codes::TARGET_NOT_ALLOWED)
        );
        assert_eq!(
            refusal(&policy, "globex", &with(&["subnet-1111aaaa"], &["sg-0a1b2c3d"], false)),
            field("target.securityGroups[0]", codes::TARGET_NOT_ALLOWED)
        );
        // AND no group at all (the VPC's default group) is refused, as is a public IP not given
        assert_eq!(
            refusal(&policy, "globex", &with(&["subnet-1111aaaa"], &[], false)),
            field("target.securityGroups", codes::TARGET_NOT_ALLOWED)
        );
        assert_eq!(
            refusal(&policy, "acme", &with(&["subnet-0a1b2c3d"], &["sg-0a1b2c3d"], true)),
            field("target.assignPublicIp", codes::TARGET_NOT_ALLOWED)
        );
        // AND a tenant the allowlists do not list gets no network
        assert_eq!(
            refusal(&policy, "initech", &with(&["subnet-0a1b2c3d"], &["sg-0a1b2c3d"], false)),
            field("target.subnets[0]", codes::TARGET_NOT_ALLOWED)
        );
    }

    #[test]
    fn without_allowlists_an_ecs_target_names_no_network() {
        // GIVEN an open deployment (no tenantTargets)
        let open = crate::outbound::TargetPolicy::default();
        let cluster = format!("{ACCT}:cluster/shared");
        let def = format!("{ACCT}:task-definition/globex-tool:3");
        // THEN a FARGATE task naming a subnet and group is refused on its subnets
        assert_eq!(
            refusal(&open, "globex", &task(&cluster, &def, "main", &["subnet-0a1b2c3d"], &SG)),
            field("target.subnets", codes::TARGET_NOT_ALLOWED)
        );
        // AND an EC2 task in its definition's network mode passes, but not with a public IP
        let Target::Ecs(mut ec2) = task(&cluster, &def, "main", &[], &[]) else { unreachable!() };
        ec2.launch_type = EcsLaunchType::Ec2;
        assert_eq!(refusal(&open, "globex", &Target::Ecs(ec2.clone())), None);
        ec2.assign_public_ip = true;
        assert_eq!(
            refusal(&open, "globex", &Target::Ecs(ec2)),
            field("target.assignPublicIp", codes::TARGET_NOT_ALLOWED)
        );
    }

    #[test]
    fn network_allowlist_entries_are_ids_or_globs_of_their_kind() {
        for bad in [
            r#"{"acme": {"ecsSubnets": ["sg-0a1b2c3d"]}}"#,
            r#"{"acme": {"ecsSecurityGroups": ["0a1b2c3d"]}}"#,
        ] {
            assert!(crate::outbound::TenantTargets::parse(bad).is_err(), "{bad}");
        }
        assert!(crate::outbound::TenantTargets::parse(
            r#"{"acme": {"ecsSubnets": ["subnet-*"], "ecsSecurityGroups": ["*"], "ecsPublicIp": false}}"#
        )
        .is_ok());
    }

    #[test]
    fn an_ecs_target_reads_and_writes_its_defaults_compactly() {
        let json = r#"{"type":"ecs","clusterArn":"arn:aws:ecs:eu-west-1:123456789012:cluster/batch","taskDefinitionArn":"arn:aws:ecs:eu-west-1:123456789012:task-definition/acme:1","containerName":"main","subnets":["subnet-0a1b2c3d"]}"#;
        let t: Target = serde_json::from_str(json).unwrap();
        assert!(matches!(
            &t,
            Target::Ecs(EcsTarget { launch_type: EcsLaunchType::Fargate, assign_public_ip: false, .. })
        ));
        assert_eq!(serde_json::to_string(&t).unwrap(), json);
        let ec2 = json.replace(r#","subnets""#, r#","launchType":"EC2","subnets""#);
        assert!(matches!(
            serde_json::from_str(&ec2).unwrap(),
            Target::Ecs(EcsTarget { launch_type: EcsLaunchType::Ec2, .. })
        ));
        let typo = json.replace("containerName", "container");
        assert!(serde_json::from_str::<Target>(&typo).is_err());
    }
}
