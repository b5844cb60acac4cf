//! Per-tenant allowlists ([`TenantTargets`]) and the one-segment globs they match with.

use super::Cidr;
use std::collections::BTreeMap;

/// What one tenant may call and use ([`glob_match`] globs, `cidrs` networks); an absent kind
/// allows nothing of that kind.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct TargetAllow {
    /// Lambda functions, matched as ARNs (`arn:aws:lambda:*:123456789012:function:acme-*`): a
    /// job's bare name or partial ARN, and a glob of names, are completed with the deployment's
    /// region and account; where those are unknown both are compared as written. A qualified
    /// function (`acme-run:prod`) needs a glob that names a qualifier (`...:acme-*:*`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lambda: Vec<String>,
    /// SQS queues, matched against the queue URL's canonical ARN
    /// (`arn:aws:sqs:*:123456789012:acme-*`); a URL-shaped glob is refused when read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sqs: Vec<String>,
    /// Webhook host names (`*.acme.com`, `hooks.example.org`), matched lowercase.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub http: Vec<String>,
    /// SNS topic ARN globs (`sns` targets).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sns: Vec<String>,
    /// Step Functions state machine ARN globs (`stepFunctions` targets).
    #[serde(default, rename = "stepFunctions", skip_serializing_if = "Vec::is_empty")]
    pub step_functions: Vec<String>,
    /// ECS task definition globs (`ecs` targets), matched against the task definition's ARN
    /// without its revision (`arn:aws:ecs:*:123456789012:task-definition/acme-*`): a family is
    /// allowed at every revision.
    #[serde(default, rename = "ecsTaskDefinitions", skip_serializing_if = "Vec::is_empty")]
    pub ecs_task_definitions: Vec<String>,
    /// ECS cluster ARN globs (`ecs` targets): where the tenant's tasks may run.
    #[serde(default, rename = "ecsClusters", skip_serializing_if = "Vec::is_empty")]
    pub ecs_clusters: Vec<String>,
    /// Subnets an `ecs` target's task may be placed in (`subnet-0a1b2c3d`, or globs such as
    /// `subnet-*`): ECS creates the task's network interface with its own service-linked role,
    /// so no IAM grant of the tenant's stands between a task and a subnet; this list does. None
    /// listed: the tenant's targets name no subnets (an `EC2` task in its definition's network
    /// mode only).
    #[serde(default, rename = "ecsSubnets", skip_serializing_if = "Vec::is_empty")]
    pub ecs_subnets: Vec<String>,
    /// Security groups an `ecs` target's task may carry (`sg-0a1b2c3d`, or globs). A target with
    /// subnets must name at least one (without, ECS would give the task the VPC's default group,
    /// which was given to nobody).
    #[serde(default, rename = "ecsSecurityGroups", skip_serializing_if = "Vec::is_empty")]
    pub ecs_security_groups: Vec<String>,
    /// Whether the tenant's ECS tasks may get a public IP (`assignPublicIp`); default false.
    #[serde(default, rename = "ecsPublicIp", skip_serializing_if = "std::ops::Not::not")]
    pub ecs_public_ip: bool,
    /// EventBridge bus ARN globs (`eventBridge` targets).
    #[serde(default, rename = "eventBridge", skip_serializing_if = "Vec::is_empty")]
    pub event_bridge: Vec<String>,
    /// Secrets Manager secrets a webhook may name as `signingSecretArn` or a header's
    /// `secretArn`, matched against the ARN as the job gives it, full or partial
    /// (`arn:aws:secretsmanager:*:123456789012:secret:acme/*`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<String>,
    /// In-process handlers (`target.handler`) an ECS worker may run for the tenant
    /// (`report`, `etl-*`).
    #[serde(default, rename = "inProcess", skip_serializing_if = "Vec::is_empty")]
    pub in_process: Vec<String>,
    /// Worker pools the tenant's jobs may run in (`default`, `batch-*`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pools: Vec<String>,
    /// Private networks the tenant's webhooks may reach (`10.1.5.0/24`): only what lies in
    /// both these and the deployment's private networks ([`TargetPolicy::addresses_for`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cidrs: Vec<Cidr>,
}

/// Per-tenant target allowlists (`SUNDIAL_TENANT_TARGETS`): a JSON object from tenant to
/// [`TargetAllow`]; `"*"` applies to every tenant without an entry of its own. A tenant with
/// neither may call no target and use no pool.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(try_from = "BTreeMap<String, TargetAllow>", into = "BTreeMap<String, TargetAllow>")]
pub struct TenantTargets(pub BTreeMap<String, TargetAllow>);

impl TryFrom<BTreeMap<String, TargetAllow>> for TenantTargets {
    type Error = String;

    /// Refuses a glob that could never match what it is compared with: `sqs` and `secrets`
    /// globs are matched against ARNs, so a URL-shaped one would silently allow nothing.
    fn try_from(map: BTreeMap<String, TargetAllow>) -> Result<Self, String> {
        for (tenant, allow) in &map {
            for g in &allow.secrets {
                if g != "*" && !g.starts_with("arn:") {
                    return Err(format!(
                        "tenant {tenant:?}: secrets glob {g:?} must be an ARN glob (arn:aws:secretsmanager:<region>:<account>:secret:<name>)"
                    ));
                }
            }
            for g in &allow.sns {
                if g != "*" && !g.starts_with("arn:") {
                    return Err(format!(
                        "tenant {tenant:?}: sns glob {g:?} must be an ARN glob (arn:aws:sns:<region>:<account>:<name>)"
                    ));
                }
            }
            for g in &allow.step_functions {
                if g != "*" && !g.starts_with("arn:") {
                    return Err(format!(
                        "tenant {tenant:?}: stepFunctions glob {g:?} must be an ARN glob (arn:aws:states:<region>:<account>:stateMachine:<name>)"
                    ));
                }
            }
            for (kind, globs, shape) in [
                (
                    "ecsTaskDefinitions",
                    &allow.ecs_task_definitions,
                    "arn:aws:ecs:<region>:<account>:task-definition/<family>",
                ),
                ("ecsClusters", &allow.ecs_clusters, "arn:aws:ecs:<region>:<account>:cluster/<name>"),
            ] {
                for g in globs {
                    if g != "*" && !g.starts_with("arn:") {
                        return Err(format!(
                            "tenant {tenant:?}: {kind} glob {g:?} must be an ARN glob ({shape})"
                        ));
                    }
                }
            }
            for (kind, globs, prefix) in [
                ("ecsSubnets", &allow.ecs_subnets, "subnet-"),
                ("ecsSecurityGroups", &allow.ecs_security_groups, "sg-"),
            ] {
                for g in globs {
                    if g != "*" && !g.starts_with(prefix) {
                        return Err(format!(
                            "tenant {tenant:?}: {kind} entry {g:?} must be an id or glob starting {prefix} (or *)"
                        ));
                    }
                }
            }
            for g in &allow.event_bridge {
                if g != "*" && !g.starts_with("arn:") {
                    return Err(format!(
                        "tenant {tenant:?}: eventBridge glob {g:?} must be an ARN glob (arn:aws:events:<region>:<account>:event-bus/<name>)"
                    ));
                }
            }
            for g in &allow.sqs {
                if g.contains('/') {
                    return Err(format!(
                        "tenant {tenant:?}: sqs glob {g:?} is a queue URL; queues are matched by ARN, write an ARN glob such as arn:aws:sqs:*:123456789012:acme-*"
                    ));
                }
                if g != "*" && !g.starts_with("arn:") {
                    return Err(format!(
                        "tenant {tenant:?}: sqs glob {g:?} must be an ARN glob (arn:aws:sqs:<region>:<account>:<name>)"
                    ));
                }
            }
        }
        Ok(TenantTargets(map))
    }
}

impl From<TenantTargets> for BTreeMap<String, TargetAllow> {
    fn from(t: TenantTargets) -> Self {
        t.0
    }
}

impl TenantTargets {
    /// Parses the JSON setting.
    pub fn parse(json: &str) -> Result<Self, String> {
        serde_json::from_str(json).map_err(|e| {
            format!("not a tenant → {{lambda, sqs, http, sns, eventBridge, stepFunctions, ecsTaskDefinitions, ecsClusters, ecsSubnets, ecsSecurityGroups, ecsPublicIp, secrets, inProcess, pools, cidrs}} map: {e}")
        })
    }

    /// The JSON setting.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    pub(crate) fn of(&self, tenant: &str) -> Option<&TargetAllow> {
        self.0.get(tenant).or_else(|| self.0.get("*"))
    }
}

/// Characters a `*` never matches: the separators of URLs and ARNs.
pub(super) const SEGMENT_SEPARATORS: &[u8] = b"/?#:@";

/// `*` matches any run of characters within one segment (also none): it never matches one of
/// `/ ? # : @`, so `arn:aws:sqs:*:123456789012:acme-*` cannot match a value that spells another
/// account first and this one further on. A pattern that is only `*` matches every value.
/// Everything else matches itself.
pub fn glob_match(pattern: &str, s: &str) -> bool {
    if pattern == "*" {
        return true;
    }
    let s = s.as_bytes();
    // matched[j]: whether the pattern so far matches s[..j]. Dynamic programming rather than the
    // usual backtracking, which is only right when a `*` may match anything.
    let mut matched = vec![false; s.len() + 1];
    let mut next = vec![false; s.len() + 1];
    matched[0] = true;
    for &c in pattern.as_bytes() {
        for j in 0..=s.len() {
            next[j] = if c == b'*' {
                matched[j] || (j > 0 && next[j - 1] && !SEGMENT_SEPARATORS.contains(&s[j - 1]))
            } else {
                j > 0 && matched[j - 1] && s[j - 1] == c
            };
        }
        std::mem::swap(&mut matched, &mut next);
    }
    matched[s.len()]
}
