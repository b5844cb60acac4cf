//! Outbound policy: which targets a job may name, and which addresses a webhook may reach.
//!
//! A scheduler that calls user-supplied URLs, functions and queues from inside a VPC, with its
//! own IAM role, is a confused deputy unless every call is judged first. [`TargetPolicy::check`]
//! is that judgement, and it is the *only* one: the control plane runs it when a job is created
//! or edited (so a target that can never work is refused with the field it is about), and the
//! worker runs it again before every call (so a policy tightened after the job was created
//! still applies, and a definition stored before the policy existed is judged too).
//!
//! What it checks:
//! - **webhooks** (`target.url`): `https://` only (plain `http://` only with the dev-only loopback
//!   setting); an IP-literal host is judged by the [`AddressPolicy`]; a host name is judged
//!   again, on the very addresses connected to, by the webhook client's resolver
//!   (`execution::target::http`), so DNS rebinding between a check and the connect cannot slip
//!   past it. Header names (`target.headers.X`) that Sundial sets itself are refused.
//! - **queues** (`target.queueUrl`): parsed strictly into region, account and name
//!   ([`parse_queue_url`]), so the queue judged is the queue SQS uses; never one of Sundial's own
//!   pool queues or dead-letter queues (a job that sends to them would forge executions).
//! - **per-tenant allowlists** ([`TenantTargets`], `SUNDIAL_TENANT_TARGETS`): when set, a tenant's
//!   Lambda functions and queues (by ARN) and webhook hosts must match one of its `*` globs,
//!   whose `*` stays within one segment ([`glob_match`]).
//! - **secrets** (`target.signingSecretArn`, `target.headers.X.secretArn`): a secret ARN and, with
//!   allowlists, one of the tenant's `secrets` globs (judged on the text: a refusal never says
//!   whether the secret exists).
//! - **in-process handlers** (`target.handler`): with allowlists, one of the tenant's
//!   `inProcess` names.
//! - **private networks**: with allowlists, a tenant's webhooks reach a private address only if
//!   it lies in both the deployment's networks and the tenant's own `cidrs`
//!   ([`TargetPolicy::addresses_for`]).
//! - **pools** ([`TargetPolicy::check_pool`], field `pool`): with allowlists, one of the tenant's
//!   `pools`.
//! - **functions** (`target.function`): never one of Sundial's own (`SUNDIAL_OWN_FUNCTIONS`), by
//!   name or ARN, in any version.
//!
//! The address policy: public unicast addresses are allowed; everything else is refused unless
//! it lies in one of the deployment's private CIDRs (`SUNDIAL_PRIVATE_TARGET_CIDRS`). Loopback,
//! link-local (169.254.0.0/16 holds the instance metadata service), the EC2 IPv6 service
//! addresses (fd00:ec2::/32: metadata, DNS, time), unspecified, multicast and broadcast are
//! refused *even when listed*: no deployment needs a job to reach them, and a CIDR like
//! `169.254.0.0/16` or `fd00::/8` typed in good faith would otherwise open the metadata service.
//! Loopback alone is allowed by `SUNDIAL_DEV_LOOPBACK_TARGETS`, which exists for the local run and
//! the test suite; the CDK construct never sets it (infra/test checks).

use crate::deployment::Deployment;
use crate::priority::Lane;
use crate::retry::{codes, RunError};
use crate::{Target, ValidationError};
use std::net::IpAddr;

mod address;
mod allow;
mod notify;
mod queue_url;

pub use address::{is_public, AddressPolicy, Cidr};
pub use allow::{glob_match, TargetAllow, TenantTargets};
pub use queue_url::{parse_queue_url, QueueRef};

/// Most extra headers a webhook target may name.
pub const MAX_HEADERS: usize = 10;

/// Headers Sundial sets itself, which a job's `headers` may not name (compared lowercase):
/// a job that could set them could forge a signature's inputs or another execution's identity.
pub fn is_reserved_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.starts_with("webhook-")
        || n.starts_with("x-sundial-")
        || matches!(
            n.as_str(),
            "idempotency-key"
                | "content-type"
                | "content-length"
                | "content-encoding"
                | "transfer-encoding"
                | "host"
                | "connection"
                | "user-agent"
        )
}

/// The deployment's outbound policy: addresses and per-tenant allowlists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TargetPolicy {
    /// Which addresses webhooks may reach.
    pub addresses: AddressPolicy,
    /// Per-tenant allowlists; `None` (unset) allows any target the other checks accept.
    pub tenants: Option<TenantTargets>,
    /// Where the deployment runs: completes names and emulator URLs into ARNs.
    pub home: Home,
    /// Sundial's own Lambda functions (`*` globs of names or ARNs), which no job may target.
    pub own_functions: Vec<String>,
}

/// Where the deployment runs. A part that is unknown is never guessed: a value that needs it
/// to become an ARN is matched as written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Home {
    /// The region (`AWS_REGION`).
    pub region: Option<String>,
    /// The account id (`SUNDIAL_ACCOUNT_ID`).
    pub account: Option<String>,
}

impl Home {
    /// The partition of the region (`aws` when the region is unknown).
    pub fn partition(&self) -> &'static str {
        self.region.as_deref().map_or("aws", partition_of)
    }
}

/// The partition a region belongs to.
pub(super) fn partition_of(region: &str) -> &'static str {
    if region.starts_with("cn-") {
        "aws-cn"
    } else if region.starts_with("us-gov-") {
        "aws-us-gov"
    } else {
        "aws"
    }
}

/// `us-east-1`, `cn-north-1`, `us-gov-west-1`: lowercase words and a number, joined by `-`.
pub(super) fn is_region(r: &str) -> bool {
    r.len() <= 32
        && r.contains('-')
        && r.starts_with(|c: char| c.is_ascii_lowercase())
        && r.ends_with(|c: char| c.is_ascii_digit())
        && !r.contains("--")
        && r.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// A refused target: the field and reason (what the API answers at create), and the stable
/// code a run that meets it fails with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{error}")]
pub struct Refusal {
    /// [`codes::ADDRESS_REFUSED`], [`codes::TARGET_NOT_ALLOWED`] or [`codes::BAD_TARGET`].
    pub code: &'static str,
    /// The field (`target.url`, `target.headers.X`, ...) and why.
    pub error: ValidationError,
}

impl From<Refusal> for ValidationError {
    fn from(r: Refusal) -> Self {
        r.error
    }
}

impl From<Refusal> for RunError {
    /// Always permanent: the same definition is refused on every attempt.
    fn from(r: Refusal) -> Self {
        RunError::permanent(r.code, r.error.to_string())
    }
}

fn refuse(code: &'static str, field: impl Into<String>, reason: impl Into<String>) -> Refusal {
    Refusal { code, error: ValidationError { field: field.into(), reason: reason.into() } }
}

fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Refusal {
    refuse(codes::BAD_TARGET, field, reason)
}

impl TargetPolicy {
    /// The local run's and the tests' policy: loopback and plain `http://` webhooks allowed.
    pub fn dev_loopback() -> Self {
        TargetPolicy { addresses: AddressPolicy::dev_loopback(), ..TargetPolicy::default() }
    }

    /// Judges `tenant`'s `target` (see the module header). `cfg` names Sundial's own queues.
    pub fn check<'a>(
        &self,
        cfg: impl Into<Deployment<'a>>,
        tenant: &str,
        target: &Target,
    ) -> Result<(), Refusal> {
        let cfg: Deployment<'a> = cfg.into();
        let listed = |kind: &str, field: &str, value: &str, globs: fn(&TargetAllow) -> &Vec<String>| {
            self.allowed(tenant, kind, field, |a| globs(a).iter().any(|g| glob_match(g, value)))
        };
        match target {
            Target::Http { url, signing_secret_arn, headers } => {
                let host = check_url(&self.addresses_for(tenant), url)?;
                if let Some(arn) = signing_secret_arn {
                    self.check_secret(tenant, "target.signingSecretArn", arn)?;
                }
                if headers.len() > MAX_HEADERS {
                    return Err(invalid("target.headers", format!("at most {MAX_HEADERS} headers")));
                }
                for (name, value) in headers {
                    check_header_name(name)?;
                    self.check_secret(
                        tenant,
                        &format!("target.headers.{name}.secretArn"),
                        &value.secret_arn,
                    )?;
                }
                listed("webhook host", "target.url", &host, |a| &a.http)
            }
            Target::Lambda { function } => {
                let f = FunctionRef::split(function)
                    .filter(|f| function.len() <= 170 && f.is_valid())
                    .ok_or_else(|| invalid("target.function", FUNCTION_SHAPE))?;
                if self.is_own_function(&f, function) {
                    return Err(refuse(
                        codes::TARGET_NOT_ALLOWED,
                        "target.function",
                        "is one of Sundial's own functions",
                    ));
                }
                self.allowed(tenant, "Lambda function", "target.function", |a| {
                    a.lambda.iter().any(|g| function_glob_matches(g, &f, function, &self.home))
                })
            }
            Target::Sqs { queue_url } => {
                let queue = check_queue_url(&cfg, parse_queue_url(queue_url, &self.addresses, &self.home)?)?;
                listed("queue", "target.queueUrl", &queue.arn(), |a| &a.sqs)
            }
            Target::EventBridge { event_bus_arn, detail_type } => {
                if !is_event_bus_arn(event_bus_arn) {
                    return Err(invalid(
                        "target.eventBusArn",
                        "must be an event bus ARN: arn:<partition>:events:<region>:<account>:event-bus/<name>",
                    ));
                }
                if let Some(t) = detail_type {
                    if t.is_empty() || t.chars().count() > 128 {
                        return Err(invalid("target.detailType", "must be 1-128 characters"));
                    }
                }
                listed("event bus", "target.eventBusArn", event_bus_arn, |a| &a.event_bridge)
            }
            Target::Sns { topic_arn, subject } => {
                if !is_topic_arn(topic_arn) {
                    return Err(invalid(
                        "target.topicArn",
                        "must be an SNS topic ARN: arn:<partition>:sns:<region>:<account>:<name>",
                    ));
                }
                if let Some(s) = subject {
                    if s.is_empty() || s.len() > 100 || !s.chars().all(|c| (' '..='~').contains(&c)) {
                        return Err(invalid("target.subject", "must be 1-100 printable ASCII characters"));
                    }
                }
                listed("topic", "target.topicArn", topic_arn, |a| &a.sns)
            }
            Target::StepFunctions { state_machine_arn } => {
                if !is_state_machine_arn(state_machine_arn) {
                    return Err(invalid(
                        "target.stateMachineArn",
                        "must be a state machine ARN: arn:<partition>:states:<region>:<account>:stateMachine:<name>",
                    ));
                }
                listed("state machine", "target.stateMachineArn", state_machine_arn, |a| &a.step_functions)
            }
            Target::Ecs {
                cluster_arn,
                task_definition_arn,
                container_name,
                launch_type,
                subnets,
                security_groups,
                assign_public_ip: _,
            } => {
                let cluster = ecs_arn(cluster_arn, "cluster").ok_or_else(|| {
                    invalid(
                        "target.clusterArn",
                        "must be an ECS cluster ARN: arn:<partition>:ecs:<region>:<account>:cluster/<name>",
                    )
                })?;
                let family = ecs_arn(task_definition_arn, "task-definition")
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
                    return Err(invalid(
                        "target.taskDefinitionArn",
                        "must be in the cluster's region and account",
                    ));
                }
                if !is_ecs_name(container_name) {
                    return Err(invalid("target.containerName", "must be 1-255 of [A-Za-z0-9_-]"));
                }
                check_ids("target.subnets", subnets, "subnet-", MAX_ECS_SUBNETS)?;
                check_ids("target.securityGroups", security_groups, "sg-", MAX_ECS_SECURITY_GROUPS)?;
                if *launch_type == crate::EcsLaunchType::Fargate && subnets.is_empty() {
                    return Err(invalid(
                        "target.subnets",
                        "a FARGATE task needs at least one subnet (awsvpc networking)",
                    ));
                }
                if subnets.is_empty() && !security_groups.is_empty() {
                    return Err(invalid("target.securityGroups", "need subnets (awsvpc networking)"));
                }
                listed("ECS cluster", "target.clusterArn", cluster_arn, |a| &a.ecs_clusters)?;
                let unrevised = task_definition_arn
                    .rsplit_once(':')
                    .filter(|(_, r)| r.chars().all(|c| c.is_ascii_digit()))
                    .map_or(task_definition_arn.as_str(), |(f, _)| f);
                listed("ECS task definition", "target.taskDefinitionArn", unrevised, |a| {
                    &a.ecs_task_definitions
                })
            }
            Target::InProcess { handler } => {
                if handler.is_empty() || handler.len() > 64 {
                    return Err(invalid("target.handler", "must be 1-64 characters"));
                }
                listed("in-process handler", "target.handler", handler, |a| &a.in_process)
            }
        }
    }
}

impl TargetPolicy {
    /// The addresses `tenant`'s webhooks may reach: with allowlists set, the deployment's private
    /// networks narrowed to the tenant's own `cidrs` (a network opened for one tenant's internal
    /// hook is not every tenant's); without, the deployment's. The webhook client's resolver
    /// judges each connection with this, per call.
    pub fn addresses_for(&self, tenant: &str) -> AddressPolicy {
        let Some(tenants) = &self.tenants else { return self.addresses.clone() };
        let own = tenants.of(tenant).map_or(&[][..], |a| a.cidrs.as_slice());
        let private_cidrs = self
            .addresses
            .private_cidrs
            .iter()
            .flat_map(|d| own.iter().filter_map(|t| d.intersection(t)))
            .collect();
        AddressPolicy { private_cidrs, dev_loopback: self.addresses.dev_loopback }
    }

    /// Judges `tenant`'s use of worker pool `pool` (that the pool exists is the definition's
    /// check): with allowlists set, it must match one of the tenant's `pools` globs, so one
    /// tenant cannot fill a pool that is not its own (an ECS pool's slots, say).
    pub fn check_pool(&self, tenant: &str, pool: &str) -> Result<(), Refusal> {
        self.allowed(tenant, "pool", "pool", |a| a.pools.iter().any(|g| glob_match(g, pool)))
    }

    /// The pools of `pools` (the deployment's) that `tenant` may use: `None` when no allowlists
    /// are set (every pool), else those its `pools` globs match (none for a tenant the
    /// allowlists do not list).
    pub fn pools_of<'p>(&self, tenant: &str, pools: &'p [String]) -> Option<Vec<&'p str>> {
        let tenants = self.tenants.as_ref()?;
        let globs = tenants.of(tenant).map_or(&[][..], |a| a.pools.as_slice());
        Some(pools.iter().filter(|p| globs.iter().any(|g| glob_match(g, p))).map(String::as_str).collect())
    }

    /// Whether `tenant`'s allowlist has an entry of `kind` that `matches` (always, when no
    /// allowlists are set). The refusal names the field and the rule, never whether the
    /// resource exists or whose it is.
    fn allowed(
        &self,
        tenant: &str,
        kind: &str,
        field: &str,
        matches: impl Fn(&TargetAllow) -> bool,
    ) -> Result<(), Refusal> {
        let Some(tenants) = &self.tenants else { return Ok(()) };
        if tenants.of(tenant).is_some_and(matches) {
            return Ok(());
        }
        Err(refuse(
            codes::TARGET_NOT_ALLOWED,
            field,
            format!("this deployment does not allow tenant {tenant:?} to use this {kind}"),
        ))
    }

    /// A secret's ARN syntax, then `tenant`'s `secrets` globs. Both are judged on the text
    /// alone: whether such a secret exists is never looked up, so a refusal says nothing of it.
    fn check_secret(&self, tenant: &str, field: &str, arn: &str) -> Result<(), Refusal> {
        check_secret_arn(field, arn)?;
        self.allowed(tenant, "secret", field, |a| a.secrets.iter().any(|g| glob_match(g, arn)))
    }

    /// Whether `f` (written `text`) is one of Sundial's own functions, in any version or alias:
    /// a glob matches its ARN with or without the qualifier (as [`function_glob_matches`]) or,
    /// for a glob of names, its name in any account (refusing too much is harmless here, and a
    /// bare name must not slip past while the account is unknown).
    fn is_own_function(&self, f: &FunctionRef<'_>, text: &str) -> bool {
        let unqualified = FunctionRef { qualifier: None, ..*f };
        let unqualified_text =
            text.rsplit_once(':').filter(|_| f.qualifier.is_some()).map_or(text, |(t, _)| t);
        self.own_functions.iter().any(|g| {
            function_glob_matches(g, f, text, &self.home)
                || function_glob_matches(g, &unqualified, unqualified_text, &self.home)
                || (!g.contains(':') && glob_match(g, f.name))
        })
    }
}

const FUNCTION_SHAPE: &str =
    "must be a function name, name:qualifier, <account>:function:<name>[:qualifier] or a Lambda function ARN (at most 170 characters)";

/// A Lambda function in one of the forms `Invoke` accepts: `name`, `name:qualifier`,
/// `account:function:name[:qualifier]` or `arn:<partition>:lambda:<region>:<account>:function:name[:qualifier]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FunctionRef<'s> {
    partition: Option<&'s str>,
    region: Option<&'s str>,
    account: Option<&'s str>,
    name: &'s str,
    qualifier: Option<&'s str>,
}

impl<'s> FunctionRef<'s> {
    /// Splits `s` by its form, `None` if it has none of them. The characters are not checked
    /// (a glob's `*` is allowed here; [`FunctionRef::is_valid`] checks a job's value).
    fn split(s: &'s str) -> Option<Self> {
        let parts: Vec<&str> = s.split(':').collect();
        let (partition, region, account, rest) = match parts.as_slice() {
            ["arn", partition, "lambda", region, account, "function", rest @ ..] => {
                (Some(*partition), Some(*region), Some(*account), rest)
            }
            [account, "function", rest @ ..] => (None, None, Some(*account), rest),
            rest => (None, None, None, rest),
        };
        let (name, qualifier) = match rest {
            [name] => (*name, None),
            [name, qualifier] => (*name, Some(*qualifier)),
            _ => return None,
        };
        let f = FunctionRef { partition, region, account, name, qualifier };
        [partition, region, account, Some(name), qualifier]
            .iter()
            .flatten()
            .all(|p| !p.is_empty())
            .then_some(f)
    }

    /// Whether every part is spelled as Lambda allows (a job's value; globs are not checked).
    fn is_valid(&self) -> bool {
        let word = |s: &str, max: usize, extra: &[u8]| {
            s.len() <= max
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || extra.contains(&b))
        };
        word(self.name, 64, b"")
            && self.qualifier.is_none_or(|q| word(q, 128, b"$"))
            && self.account.is_none_or(|a| a.len() == 12 && a.bytes().all(|b| b.is_ascii_digit()))
            && self.region.is_none_or(is_region)
            && self.partition.is_none_or(|p| p.starts_with("aws") && word(p, 16, b""))
    }

    /// `arn:<partition>:lambda:<region>:<account>:function:<name>[:<qualifier>]`, the parts it
    /// lacks taken from `home`; `None` when one of them is unknown.
    fn arn(&self, home: &Home) -> Option<String> {
        let region = self.region.or(home.region.as_deref())?;
        let account = self.account.or(home.account.as_deref())?;
        let partition = self.partition.unwrap_or_else(|| partition_of(region));
        let qualifier = self.qualifier.map(|q| format!(":{q}")).unwrap_or_default();
        Some(format!("arn:{partition}:lambda:{region}:{account}:function:{}{qualifier}", self.name))
    }
}

/// Whether `glob` matches the function `f` (written `text`). Both are completed into ARNs with
/// the deployment's region and account, so a name glob means "in this account and region" and
/// a bare name is the function Lambda would invoke; where a part is unknown, each is compared
/// as written (a bare name then matches name globs only).
fn function_glob_matches(glob: &str, f: &FunctionRef<'_>, text: &str, home: &Home) -> bool {
    if glob == "*" {
        return true;
    }
    let value = f.arn(home).unwrap_or_else(|| text.to_string());
    let glob = FunctionRef::split(glob).and_then(|g| g.arn(home)).unwrap_or_else(|| glob.to_string());
    glob_match(&glob, &value)
}

/// Checks a webhook URL's scheme and (for an IP literal) address; returns its host, lowercase
/// and without brackets.
pub fn check_url(addresses: &AddressPolicy, url: &str) -> Result<String, Refusal> {
    let field = "target.url";
    let uri: http::Uri = url.parse().map_err(|_| invalid(field, "is not a valid URL"))?;
    match uri.scheme_str() {
        Some("https") => {}
        Some("http") if addresses.allows_plain_http() => {}
        _ => return Err(invalid(field, "must be an https:// URL")),
    }
    let host = uri.host().unwrap_or_default().trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err(invalid(field, "has no host"));
    }
    if uri.authority().is_some_and(|a| a.as_str().contains('@')) {
        return Err(invalid(field, "must not carry credentials (use target.headers)"));
    }
    if let Ok(ip) = host.parse::<IpAddr>() {
        if !addresses.allows(ip) {
            return Err(refuse(
                codes::ADDRESS_REFUSED,
                field,
                "the address is not public (loopback, link-local, private or reserved) and not in the private networks this deployment opens to the tenant",
            ));
        }
    }
    Ok(host.to_ascii_lowercase())
}

/// A Secrets Manager secret ARN (any partition): `arn:<partition>:secretsmanager:<region>:<account>:secret:<name>`.
fn check_secret_arn(field: &str, arn: &str) -> Result<(), Refusal> {
    let parts: Vec<&str> = arn.splitn(7, ':').collect();
    let ok = arn.len() <= 2048
        && parts.len() == 7
        && parts[0] == "arn"
        && !parts[1].is_empty()
        && parts[2] == "secretsmanager"
        && !parts[3].is_empty()
        && parts[4].len() == 12
        && parts[4].bytes().all(|b| b.is_ascii_digit())
        && parts[5] == "secret"
        && !parts[6].is_empty();
    if ok {
        Ok(())
    } else {
        Err(invalid(
            field,
            "must be a Secrets Manager secret ARN (arn:aws:secretsmanager:<region>:<account>:secret:<name>)",
        ))
    }
}

/// Refuses a header name Sundial sets itself, or one that is not a valid token.
pub fn check_header_name(name: &str) -> Result<(), Refusal> {
    let field = format!("target.headers.{name}");
    if http::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
        return Err(invalid(field, "is not a valid header name"));
    }
    if is_reserved_header(name) {
        return Err(invalid(field, "is set by Sundial and cannot be overridden"));
    }
    Ok(())
}

/// Refuses Sundial's own queues: a current pool's lanes (`{prefix}{pool}`, `{prefix}{pool}-low`)
/// and dead-letter queue, and any other name under the pool queues' prefix (a pool added or
/// renamed later). With an empty prefix only the first rule can apply, so it must name every
/// lane.
/// `arn:<partition>:events:<region>:<account>:event-bus/<name>` with a 12-digit account and a
/// bus name of 1-256 of `[A-Za-z0-9._-/]`.
pub fn is_event_bus_arn(arn: &str) -> bool {
    let parts: Vec<&str> = arn.splitn(6, ':').collect();
    let [a, partition, service, region, account, resource] = parts[..] else { return false };
    let name = resource.strip_prefix("event-bus/").unwrap_or_default();
    a == "arn"
        && partition.starts_with("aws")
        && service == "events"
        && !region.is_empty()
        && region.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && account.len() == 12
        && account.chars().all(|c| c.is_ascii_digit())
        && !name.is_empty()
        && name.len() <= 256
        && name.chars().all(|c| c.is_ascii_alphanumeric() || "._-/".contains(c))
}

/// `arn:<partition>:sns:<region>:<account>:<name>` with a 12-digit account and a topic name of
/// 1-256 of `[A-Za-z0-9_-]` (`.fifo` allowed at its end).
pub fn is_topic_arn(arn: &str) -> bool {
    let parts: Vec<&str> = arn.split(':').collect();
    let [a, partition, service, region, account, name] = parts[..] else { return false };
    let bare = name.strip_suffix(".fifo").unwrap_or(name);
    a == "arn"
        && partition.starts_with("aws")
        && service == "sns"
        && !region.is_empty()
        && region.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && account.len() == 12
        && account.chars().all(|c| c.is_ascii_digit())
        && !bare.is_empty()
        && name.len() <= 256
        && bare.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// `arn:<partition>:states:<region>:<account>:stateMachine:<name>` with a 12-digit account and a
/// name of 1-80 of `[A-Za-z0-9_-]` (unqualified: no version or alias, so its executions' ARNs
/// follow from it).
pub fn is_state_machine_arn(arn: &str) -> bool {
    let parts: Vec<&str> = arn.split(':').collect();
    let [a, partition, service, region, account, kind, name] = parts[..] else { return false };
    a == "arn"
        && partition.starts_with("aws")
        && service == "states"
        && !region.is_empty()
        && region.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && account.len() == 12
        && account.chars().all(|c| c.is_ascii_digit())
        && kind == "stateMachine"
        && (1..=80).contains(&name.len())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Most subnets an `ecs` target's `awsvpc` configuration takes (RunTask's limit).
pub const MAX_ECS_SUBNETS: usize = 16;
/// Most security groups an `ecs` target's `awsvpc` configuration takes (RunTask's limit).
pub const MAX_ECS_SECURITY_GROUPS: usize = 5;

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
    let mut parts = arn.splitn(6, ':');
    let (a, partition, service, region, account, rest) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let name = rest.strip_prefix(kind)?.strip_prefix('/')?;
    let ok = a == "arn"
        && partition.starts_with("aws")
        && service == "ecs"
        && !region.is_empty()
        && region.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && account.len() == 12
        && account.chars().all(|c| c.is_ascii_digit())
        && (kind == "task-definition" || is_ecs_name(name));
    ok.then_some(EcsArn { partition, region, account, name })
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

fn check_queue_url(cfg: &Deployment<'_>, queue: QueueRef) -> Result<QueueRef, Refusal> {
    let base = queue.name.trim_end_matches(".fifo");
    let own = (!cfg.queue_prefix.is_empty() && base.starts_with(cfg.queue_prefix))
        || cfg.pools.iter().any(|p| {
            base == cfg.dlq_name(p) || Lane::ALL.iter().any(|lane| base == cfg.lane_queue_name(p, *lane))
        });
    if own {
        return Err(refuse(codes::TARGET_NOT_ALLOWED, "target.queueUrl", "is one of Sundial's own queues"));
    }
    Ok(queue)
}

#[cfg(test)]
mod tests {
    use super::allow::SEGMENT_SEPARATORS;
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn internal_addresses_are_not_public() {
        for a in [
            "127.0.0.1",
            "169.254.169.254",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "192.88.99.1",
            "::1",
            "::",
            "fe80::1",
            "fd00::1",
            "fec0::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::ffff:0:a9fe:a9fe",
            "::ffff:0:7f00:1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::a9fe:a9fe",
            "64:ff9b:1::808:808",
            "2002:7f00:1::",
            "fd00:ec2::254",
        ] {
            assert!(!is_public(ip(a)), "{a} should be refused");
            assert!(!AddressPolicy::default().allows(ip(a)), "{a} should be refused");
        }
        for a in ["93.184.216.34", "8.8.8.8", "2606:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"] {
            assert!(is_public(ip(a)), "{a} should be allowed");
            assert!(AddressPolicy::default().allows(ip(a)), "{a} should be allowed");
        }
    }

    #[test]
    fn listed_private_networks_are_allowed_but_never_loopback_link_local_or_metadata() {
        // GIVEN a deployment that lists its VPC, a ULA range, and (by mistake) the metadata
        // service's networks and loopback
        let cidrs =
            ["10.1.0.0/16", "fd12::/16", "169.254.0.0/16", "fd00::/8", "127.0.0.0/8", "::1/128", "fe80::/10"];
        let policy = AddressPolicy {
            private_cidrs: cidrs.iter().map(|c| Cidr::parse(c).unwrap_or_else(|e| panic!("{e}"))).collect(),
            dev_loopback: false,
        };
        // THEN the listed private networks are reachable, also through an IPv4-mapped address
        for a in ["10.1.2.3", "fd12::5", "::ffff:10.1.9.9", "fd00::1"] {
            assert!(policy.allows(ip(a)), "{a}");
        }
        // AND nothing else private, nor loopback, link-local or the metadata addresses
        for a in [
            "10.2.0.1",
            "192.168.0.1",
            "127.0.0.1",
            "::1",
            "169.254.169.254",
            "::ffff:169.254.169.254",
            "fd00:ec2::254",
            "fe80::1",
        ] {
            assert!(!policy.allows(ip(a)), "{a}");
        }
        assert!(!policy.allows_plain_http());
        // AND the dev setting allows loopback (and plain http) but still not the metadata service
        let dev = AddressPolicy::dev_loopback();
        assert!(dev.allows(ip("127.0.0.1")) && dev.allows(ip("::1")) && dev.allows_plain_http());
        assert!(!dev.allows(ip("169.254.169.254")) && !dev.allows(ip("10.0.0.1")));
    }

    #[test]
    fn cidrs_parse_and_refuse_nonsense() {
        assert_eq!(Cidr::parse("10.1.0.0/16").map(|c| c.to_string()), Ok("10.1.0.0/16".into()));
        assert!(Cidr::parse("10.1.0.0/33").is_err() && Cidr::parse("nope/8").is_err());
        assert!(Cidr::parse("0.0.0.0/0").is_ok_and(|c| c.contains(ip("8.8.8.8"))));
        assert!(
            Cidr::parse("10.0.0.1").is_ok_and(|c| c.contains(ip("10.0.0.1")) && !c.contains(ip("10.0.0.2")))
        );
    }

    #[test]
    fn globs_match_with_stars_only() {
        assert!(glob_match("*.acme.com", "hooks.acme.com"));
        assert!(!glob_match("*.acme.com", "acme.com.evil.net"));
        assert!(glob_match(
            "arn:aws:lambda:*:*:function:acme-*",
            "arn:aws:lambda:eu-west-1:123:function:acme-run"
        ));
        assert!(!glob_match(
            "arn:aws:lambda:*:*:function:acme-*",
            "arn:aws:lambda:eu-west-1:123:function:globex"
        ));
        assert!(glob_match("a*b*c", "aXXbYYc") && !glob_match("a*b*c", "aXXbYY") && glob_match("*", ""));
    }

    #[test]
    fn a_star_matches_within_one_segment_only() {
        // GIVEN globs whose `*` stands for one region, one name or one host label
        let secret = "arn:aws:secretsmanager:*:123456789012:secret:acme/*";
        let queue = "https://sqs.*.amazonaws.com/123456789012/acme-*";
        // THEN a `*` does not reach across `:` to spell another account further on
        assert!(!glob_match(
            secret,
            "arn:aws:secretsmanager:eu-west-1:999999999999:secret:x:123456789012:secret:acme/y"
        ));
        // AND not across `/`, `?`, `#` or `@`
        assert!(!glob_match(
            queue,
            "https://sqs.us-east-1.amazonaws.com/999999999999/globex-q?x=.amazonaws.com/123456789012/acme-1"
        ));
        assert!(!glob_match(secret, "arn:aws:secretsmanager:eu-west-1:123456789012:secret:acme/x/../globex"));
        assert!(!glob_match("*.acme.com", "evil.net#.acme.com") && !glob_match("*.acme.com", "u@h.acme.com"));
        // AND within its segment it matches as before
        assert!(glob_match(secret, "arn:aws:secretsmanager:eu-west-1:123456789012:secret:acme/token-AbCdEf"));
        assert!(glob_match(queue, "https://sqs.eu-west-1.amazonaws.com/123456789012/acme-inbox"));
        assert!(glob_match("*-*", "a-b-c") && glob_match("a*", "a") && !glob_match("a*b", "a:b"));
        // AND a pattern that is only `*` matches every value
        assert!(glob_match("*", "arn:aws:sqs:eu-west-1:123456789012:q") && glob_match("*", ""));
    }

    /// The code and field `tenant`'s `target` is refused with, if it is.
    fn refusal(policy: &TargetPolicy, tenant: &str, target: &Target) -> Option<(&'static str, String)> {
        let pools = vec!["default".to_string()];
        let cfg = Deployment { pools: &pools, shards: 16, queue_prefix: "t-sundial-", targets: policy };
        policy.check(cfg, tenant, target).err().map(|r| (r.code, r.error.field))
    }

    fn allowlist(json: &str) -> TargetPolicy {
        TargetPolicy {
            tenants: Some(TenantTargets::parse(json).unwrap_or_else(|e| panic!("{e}"))),
            ..TargetPolicy::default()
        }
    }

    fn sqs(url: &str) -> Target {
        Target::Sqs { queue_url: url.to_string() }
    }

    #[test]
    fn event_bus_targets_are_arns_checked_against_the_tenants_globs() {
        let bus = |arn: &str, dt: Option<&str>| Target::EventBridge {
            event_bus_arn: arn.to_string(),
            detail_type: dt.map(str::to_string),
        };
        let policy =
            allowlist(r#"{"acme": {"eventBridge": ["arn:aws:events:*:123456789012:event-bus/acme-*"]}}"#);
        let field = |f: &str, code| Some((code, f.to_string()));
        assert_eq!(
            refusal(&policy, "acme", &bus("arn:aws:events:eu-west-1:123456789012:event-bus/acme-ops", None)),
            None
        );
        assert_eq!(
            refusal(
                &policy,
                "acme",
                &bus("arn:aws:events:eu-west-1:123456789012:event-bus/globex-ops", None)
            ),
            field("target.eventBusArn", codes::TARGET_NOT_ALLOWED)
        );
        for bad in [
            "acme-ops",
            "arn:aws:sqs:eu-west-1:123456789012:acme-ops",
            "arn:aws:events:eu-west-1:1234:event-bus/acme-ops",
            "arn:aws:events:eu-west-1:123456789012:rule/acme-ops",
            "arn:aws:events:eu-west-1:123456789012:event-bus/",
        ] {
            assert_eq!(
                refusal(&policy, "acme", &bus(bad, None)),
                field("target.eventBusArn", codes::BAD_TARGET),
                "{bad}"
            );
        }
        let long = "x".repeat(129);
        let ok_bus = "arn:aws:events:eu-west-1:123456789012:event-bus/acme-ops";
        assert_eq!(
            refusal(&policy, "acme", &bus(ok_bus, Some(&long))),
            field("target.detailType", codes::BAD_TARGET)
        );
        // A tenant without eventBridge globs may name no bus.
        let other = allowlist(r#"{"acme": {"sqs": ["*"]}}"#);
        assert_eq!(
            refusal(&other, "acme", &bus(ok_bus, None)),
            field("target.eventBusArn", codes::TARGET_NOT_ALLOWED)
        );
    }

    #[test]
    fn state_machine_targets_are_arns_checked_against_the_tenants_globs() {
        let machine = |arn: &str| Target::StepFunctions { state_machine_arn: arn.to_string() };
        let policy = allowlist(
            r#"{"acme": {"stepFunctions": ["arn:aws:states:*:123456789012:stateMachine:acme-*"]}}"#,
        );
        let field = |f: &str, code| Some((code, f.to_string()));
        let ok = "arn:aws:states:eu-west-1:123456789012:stateMachine:acme-settle_v2";
        assert_eq!(refusal(&policy, "acme", &machine(ok)), None);
        assert_eq!(
            refusal(
                &policy,
                "acme",
                &machine("arn:aws:states:eu-west-1:123456789012:stateMachine:globex-settle")
            ),
            field("target.stateMachineArn", codes::TARGET_NOT_ALLOWED)
        );
        for bad in [
            "acme-settle",
            "arn:aws:states:eu-west-1:123456789012:execution:acme-settle:run-1",
            "arn:aws:states:eu-west-1:123456789012:stateMachine:acme-settle:1",
            "arn:aws:states:eu-west-1:12345:stateMachine:acme-settle",
            "arn:aws:states:eu-west-1:123456789012:stateMachine:acme.settle",
            "arn:aws:sns:eu-west-1:123456789012:stateMachine:acme-settle",
        ] {
            assert_eq!(
                refusal(&policy, "acme", &machine(bad)),
                field("target.stateMachineArn", codes::BAD_TARGET),
                "{bad}"
            );
        }
        let long = format!("arn:aws:states:eu-west-1:123456789012:stateMachine:acme-{}", "x".repeat(75));
        assert_eq!(refusal(&policy, "acme", &machine(&long)), None);
        let too_long = format!("{long}x");
        assert_eq!(
            refusal(&policy, "acme", &machine(&too_long)),
            field("target.stateMachineArn", codes::BAD_TARGET)
        );
    }

    #[test]
    fn ecs_targets_are_checked_field_by_field_and_against_both_globs() {
        let acct = "arn:aws:ecs:eu-west-1:123456789012";
        let task = |cluster: &str, def: &str, container: &str, subnets: &[&str], sgs: &[&str]| Target::Ecs {
            cluster_arn: cluster.to_string(),
            task_definition_arn: def.to_string(),
            container_name: container.to_string(),
            launch_type: crate::EcsLaunchType::Fargate,
            subnets: subnets.iter().map(|s| s.to_string()).collect(),
            security_groups: sgs.iter().map(|s| s.to_string()).collect(),
            assign_public_ip: false,
        };
        let policy = allowlist(
            r#"{"acme": {"ecsClusters": ["arn:aws:ecs:*:123456789012:cluster/batch"],
                         "ecsTaskDefinitions": ["arn:aws:ecs:*:123456789012:task-definition/acme-*"]}}"#,
        );
        let field = |f: &str, code| Some((code, f.to_string()));
        let cluster = format!("{acct}:cluster/batch");
        let def = format!("{acct}:task-definition/acme-settle:12");
        let sub = ["subnet-0a1b2c3d"];
        // GIVEN a revision of an allowed family, on the cluster
        assert_eq!(
            refusal(&policy, "acme", &task(&cluster, &def, "main", &sub, &["sg-0123456789abcdef0"])),
            None
        );
        // AND a family without a revision is refused: the run must name what it runs
        let latest = format!("{acct}:task-definition/acme-settle");
        assert_eq!(
            refusal(&policy, "acme", &task(&cluster, &latest, "main", &sub, &[])),
            field("target.taskDefinitionArn", codes::BAD_TARGET)
        );
        // THEN another family, another cluster, another account are refused, naming the field
        let other = format!("{acct}:task-definition/globex-settle:1");
        assert_eq!(
            refusal(&policy, "acme", &task(&cluster, &other, "main", &sub, &[])),
            field("target.taskDefinitionArn", codes::TARGET_NOT_ALLOWED)
        );
        let other_cluster = format!("{acct}:cluster/prod");
        assert_eq!(
            refusal(&policy, "acme", &task(&other_cluster, &def, "main", &sub, &[])),
            field("target.clusterArn", codes::TARGET_NOT_ALLOWED)
        );
        let elsewhere = "arn:aws:ecs:eu-west-1:210987654321:task-definition/acme-settle:1";
        assert_eq!(
            refusal(&policy, "acme", &task(&cluster, elsewhere, "main", &sub, &[])),
            field("target.taskDefinitionArn", codes::BAD_TARGET)
        );
        // AND malformed values name their field
        for bad in [
            "batch",
            "arn:aws:ecs:eu-west-1:123456789012:service/batch",
            "arn:aws:ecs:eu-west-1:12345:cluster/batch",
            "arn:aws:ecs:eu-west-1:123456789012:cluster/ba.tch",
        ] {
            assert_eq!(
                refusal(&policy, "acme", &task(bad, &def, "main", &sub, &[])),
                field("target.clusterArn", codes::BAD_TARGET),
                "{bad}"
            );
        }
        for bad in
            ["acme-settle:1", "task-definition/acme:0", "task-definition/acme:x", "task-definition/ac.me:1"]
        {
            let arn = format!("{acct}:{bad}");
            let arn = if bad.starts_with("task-definition") { arn } else { bad.to_string() };
            assert_eq!(
                refusal(&policy, "acme", &task(&cluster, &arn, "main", &sub, &[])),
                field("target.taskDefinitionArn", codes::BAD_TARGET),
                "{bad}"
            );
        }
        assert_eq!(
            refusal(&policy, "acme", &task(&cluster, &def, "", &sub, &[])),
            field("target.containerName", codes::BAD_TARGET)
        );
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
        let ec2 = |sgs: &[&str]| Target::Ecs {
            cluster_arn: cluster.clone(),
            task_definition_arn: def.clone(),
            container_name: "main".into(),
            launch_type: crate::EcsLaunchType::Ec2,
            subnets: vec![],
            security_groups: sgs.iter().map(|s| s.to_string()).collect(),
            assign_public_ip: false,
        };
        assert_eq!(refusal(&policy, "acme", &ec2(&[])), None);
        assert_eq!(
            refusal(&policy, "acme", &ec2(&["sg-0a1b2c3d"])),
            field("target.securityGroups", codes::BAD_TARGET)
        );
    }

    #[test]
    fn an_ecs_target_reads_and_writes_its_defaults_compactly() {
        let json = r#"{"type":"ecs","clusterArn":"arn:aws:ecs:eu-west-1:123456789012:cluster/batch","taskDefinitionArn":"arn:aws:ecs:eu-west-1:123456789012:task-definition/acme:1","containerName":"main","subnets":["subnet-0a1b2c3d"]}"#;
        let t: Target = serde_json::from_str(json).unwrap();
        assert!(matches!(
            &t,
            Target::Ecs { launch_type: crate::EcsLaunchType::Fargate, assign_public_ip: false, .. }
        ));
        assert_eq!(serde_json::to_string(&t).unwrap(), json);
        let ec2 = json.replace(r#","subnets""#, r#","launchType":"EC2","subnets""#);
        assert!(matches!(
            serde_json::from_str(&ec2).unwrap(),
            Target::Ecs { launch_type: crate::EcsLaunchType::Ec2, .. }
        ));
        let typo = json.replace("containerName", "container");
        assert!(serde_json::from_str::<Target>(&typo).is_err());
    }

    #[test]
    fn topic_targets_are_arns_checked_against_the_tenants_globs() {
        let topic = |arn: &str, subject: Option<&str>| Target::Sns {
            topic_arn: arn.to_string(),
            subject: subject.map(str::to_string),
        };
        let policy = allowlist(r#"{"acme": {"sns": ["arn:aws:sns:*:123456789012:acme-*"]}}"#);
        let field = |f: &str, code| Some((code, f.to_string()));
        for ok in [
            "arn:aws:sns:eu-west-1:123456789012:acme-alerts",
            "arn:aws:sns:eu-west-1:123456789012:acme-q.fifo",
        ] {
            assert_eq!(refusal(&policy, "acme", &topic(ok, Some("nightly"))), None, "{ok}");
        }
        assert_eq!(
            refusal(&policy, "acme", &topic("arn:aws:sns:eu-west-1:123456789012:globex-alerts", None)),
            field("target.topicArn", codes::TARGET_NOT_ALLOWED)
        );
        for bad in [
            "acme-alerts",
            "arn:aws:sqs:eu-west-1:123456789012:acme-alerts",
            "arn:aws:sns:eu-west-1:123456789012:acme-alerts:sub-id",
            "arn:aws:sns:eu-west-1:12345:acme-alerts",
            "arn:aws:sns:eu-west-1:123456789012:acme.alerts",
        ] {
            assert_eq!(
                refusal(&policy, "acme", &topic(bad, None)),
                field("target.topicArn", codes::BAD_TARGET),
                "{bad}"
            );
        }
        let ok = "arn:aws:sns:eu-west-1:123456789012:acme-alerts";
        assert_eq!(
            refusal(&policy, "acme", &topic(ok, Some(""))),
            field("target.subject", codes::BAD_TARGET)
        );
        assert_eq!(
            refusal(&policy, "acme", &topic(ok, Some("a\nb"))),
            field("target.subject", codes::BAD_TARGET)
        );
    }

    #[test]
    fn queue_urls_are_parsed_strictly_and_matched_as_arns() {
        // GIVEN acme allowed its own account's acme-* queues, by ARN glob
        let policy = allowlist(r#"{"acme": {"sqs": ["arn:aws:sqs:*:123456789012:acme-*"]}}"#);
        let bad = Some((codes::BAD_TARGET, "target.queueUrl".to_string()));
        let not_allowed = Some((codes::TARGET_NOT_ALLOWED, "target.queueUrl".to_string()));
        // THEN its queues are accepted in both AWS host forms
        for url in [
            "https://sqs.eu-west-1.amazonaws.com/123456789012/acme-inbox",
            "https://eu-west-1.queue.amazonaws.com/123456789012/acme-inbox.fifo",
        ] {
            assert_eq!(refusal(&policy, "acme", &sqs(url)), None, "{url}");
        }
        // AND a queue of another account, or of another partition, is not allowed
        for url in [
            "https://sqs.us-east-1.amazonaws.com/999999999999/acme-inbox",
            "https://sqs.cn-north-1.amazonaws.com.cn/123456789012/acme-inbox",
        ] {
            assert_eq!(refusal(&policy, "acme", &sqs(url)), not_allowed, "{url}");
        }
        let cn = allowlist(r#"{"acme": {"sqs": ["arn:aws-cn:sqs:*:123456789012:acme-*"]}}"#);
        assert_eq!(
            refusal(&cn, "acme", &sqs("https://sqs.cn-north-1.amazonaws.com.cn/123456789012/acme-q")),
            None
        );
        // AND a URL that a second parser could read as another queue is not a queue URL at all
        for url in [
            "https://sqs.us-east-1.amazonaws.com/999999999999/globex-q?x=.amazonaws.com/123456789012/acme-1",
            "https://sqs.us-east-1.amazonaws.com/123456789012/acme-x/../globex-q",
            "https://sqs.us-east-1.amazonaws.com/123456789012/acme-x/%2e%2e/globex-q",
            "https://sqs.us-east-1.amazonaws.com/123456789012/acme-x#globex",
            "https://sqs.us-east-1.amazonaws.com/123456789012/acme-x?",
            "https://user@sqs.us-east-1.amazonaws.com/123456789012/acme-x",
            "https://sqs.us-east-1.amazonaws.com/queue/123456789012/acme-x",
            "https://sqs.us-east-1.amazonaws.com/123456789012/acme-x/",
            "https://sqs.us-east-1.amazonaws.com/12345678901/acme-x",
            "https://sqs.us-east-1.amazonaws.com.evil.net/123456789012/acme-x",
            "https://evil.net/123456789012/acme-x",
            "http://sqs.us-east-1.amazonaws.com/123456789012/acme-x",
            "http://127.0.0.1:4566/000000000000/acme-x",
        ] {
            assert_eq!(refusal(&policy, "acme", &sqs(url)), bad, "{url}");
        }
        // AND a URL-shaped glob is refused when the setting is read, saying what to write
        let e =
            TenantTargets::parse(r#"{"acme": {"sqs": ["https://sqs.*.amazonaws.com/123456789012/acme-*"]}}"#);
        assert!(e.as_ref().is_err_and(|e| e.contains("ARN glob")), "{e:?}");
    }

    #[test]
    fn the_emulators_queue_urls_are_queue_urls_under_the_dev_policy() {
        // GIVEN the dev-loopback policy and the URL shapes MiniStack, moto and LocalStack return
        let mut policy = allowlist(r#"{"acme": {"sqs": ["arn:aws:sqs:*:*:acme-*"]}}"#);
        policy.addresses = AddressPolicy::dev_loopback();
        // THEN each is accepted and matched as an ARN
        for url in [
            "http://127.0.0.1:4566/000000000000/acme-q",
            "http://localhost:4566/000000000000/acme-q",
            "http://127.0.0.1:4567/123456789012/acme-q",
            "http://sqs.us-east-1.localhost.localstack.cloud:4566/000000000000/acme-q",
            "http://[::1]:4566/000000000000/acme-q",
        ] {
            assert_eq!(refusal(&policy, "acme", &sqs(url)), None, "{url}");
            assert_eq!(
                refusal(&policy, "acme", &sqs(&url.replace("acme-q", "globex-q"))),
                Some((codes::TARGET_NOT_ALLOWED, "target.queueUrl".to_string())),
                "{url}"
            );
        }
        // AND a non-loopback host is still held to the AWS shape
        assert_eq!(
            refusal(&policy, "acme", &sqs("http://sqs.evil.net:4566/000000000000/acme-q")),
            Some((codes::BAD_TARGET, "target.queueUrl".to_string()))
        );
    }

    #[test]
    fn an_empty_queue_prefix_still_refuses_every_lane_of_a_pool() {
        // GIVEN a deployment whose pool queues have no prefix (the CDK allows queuePrefix '')
        let policy = TargetPolicy::default();
        let pools = vec!["default".to_string()];
        let cfg = Deployment { pools: &pools, shards: 16, queue_prefix: "", targets: &policy };
        // THEN the pool queue, its low lane and its DLQ are all Sundial's own
        for name in ["default", "default-low", "default-dlq", "default-low.fifo"] {
            let url = format!("https://sqs.us-east-1.amazonaws.com/123456789012/{name}");
            let refused = policy.check(cfg, "acme", &sqs(&url)).err().map(|r| (r.code, r.error.field));
            assert_eq!(refused, Some((codes::TARGET_NOT_ALLOWED, "target.queueUrl".to_string())), "{name}");
        }
        // AND a user's queue named after no pool is a target
        let url = "https://sqs.us-east-1.amazonaws.com/123456789012/default-inbox";
        assert!(policy.check(cfg, "acme", &sqs(url)).is_ok());
    }

    fn lambda(function: &str) -> Target {
        Target::Lambda { function: function.to_string() }
    }

    fn home(region: &str, account: &str) -> Home {
        Home { region: Some(region.into()), account: Some(account.into()) }
    }

    #[test]
    fn sundials_own_functions_are_not_targets() {
        // GIVEN a deployment in eu-west-1 of 123456789012 whose own functions are acme-sundial-*
        // and, by ARN, ops-sched-*; no tenant allowlist
        let mut policy = TargetPolicy {
            own_functions: vec![
                "acme-sundial-*".into(),
                "arn:aws:lambda:*:123456789012:function:ops-sched-*".into(),
            ],
            home: home("eu-west-1", "123456789012"),
            ..TargetPolicy::default()
        };
        let own = Some((codes::TARGET_NOT_ALLOWED, "target.function".to_string()));
        // THEN each is refused by name, qualified name, partial ARN or ARN
        for f in [
            "acme-sundial-api",
            "acme-sundial-tick:live",
            "123456789012:function:acme-sundial-scan",
            "arn:aws:lambda:eu-west-1:123456789012:function:acme-sundial-worker",
            "ops-sched-run",
            "arn:aws:lambda:eu-west-1:123456789012:function:ops-sched-run:3",
        ] {
            assert_eq!(refusal(&policy, "acme", &lambda(f)), own, "{f}");
        }
        let cfg = crate::LocalDeployment::local("t-", &["default"], 16);
        let message = policy.check(&cfg, "acme", &lambda("acme-sundial-api"));
        assert!(message.is_err_and(|r| r.error.reason.contains("Sundial's own functions")));
        // AND other functions are targets, also one of another account under the ARN glob's name
        for f in ["acme-run", "arn:aws:lambda:eu-west-1:999999999999:function:ops-sched-run"] {
            assert_eq!(refusal(&policy, "acme", &lambda(f)), None, "{f}");
        }
        // AND with the account unknown a name glob still refuses the name in any ARN
        policy.home = Home::default();
        let f = "arn:aws:lambda:us-east-1:999999999999:function:acme-sundial-api";
        assert_eq!(refusal(&policy, "acme", &lambda(f)), own);
    }

    #[test]
    fn function_names_are_completed_into_arns_before_matching() {
        // GIVEN a deployment in eu-west-1 of 123456789012; acme allowed acme-* of its account by
        // ARN glob, globex allowed globex-* by name glob (this deployment's account and region)
        let mut policy = allowlist(
            r#"{"acme": {"lambda": ["arn:aws:lambda:*:123456789012:function:acme-*"]},
                "globex": {"lambda": ["globex-*"]}}"#,
        );
        policy.home = home("eu-west-1", "123456789012");
        let not_allowed = Some((codes::TARGET_NOT_ALLOWED, "target.function".to_string()));
        // THEN a bare name and a partial ARN are the function in the deployment's account
        for f in [
            "acme-run",
            "123456789012:function:acme-run",
            "arn:aws:lambda:eu-west-1:123456789012:function:acme-run",
        ] {
            assert_eq!(refusal(&policy, "acme", &lambda(f)), None, "{f}");
        }
        // AND another account's function of the same name is not, nor a qualifier the glob
        // does not name (a `*` never crosses `:`)
        for f in ["arn:aws:lambda:eu-west-1:999999999999:function:acme-run", "acme-run:prod"] {
            assert_eq!(refusal(&policy, "acme", &lambda(f)), not_allowed, "{f}");
        }
        // AND a name glob means this deployment's account and region
        assert_eq!(refusal(&policy, "globex", &lambda("globex-run")), None);
        assert_eq!(
            refusal(&policy, "globex", &lambda("arn:aws:lambda:eu-west-1:123456789012:function:globex-run")),
            None
        );
        for f in [
            "arn:aws:lambda:eu-west-1:999999999999:function:globex-run",
            "arn:aws:lambda:us-east-1:123456789012:function:globex-run",
        ] {
            assert_eq!(refusal(&policy, "globex", &lambda(f)), not_allowed, "{f}");
        }
        // AND what is not a function reference is refused as such
        for f in ["acme run", "arn:aws:lambda:eu-west-1:123456789012:function:", "a:b:c", "", "x:y:z:w"] {
            let bad = Some((codes::BAD_TARGET, "target.function".to_string()));
            assert_eq!(refusal(&policy, "acme", &lambda(f)), bad, "{f:?}");
        }
        // AND with the account unknown names are matched as written, as before
        policy.home = Home::default();
        assert_eq!(refusal(&policy, "acme", &lambda("acme-run")), not_allowed);
        assert_eq!(refusal(&policy, "globex", &lambda("globex-run")), None);
    }

    fn webhook(url: &str, signing: Option<&str>, header: Option<&str>) -> Target {
        let headers = header
            .map(|arn| ("Authorization".to_string(), crate::SecretRef { secret_arn: arn.to_string() }))
            .into_iter()
            .collect();
        Target::Http { url: url.into(), signing_secret_arn: signing.map(str::to_string), headers }
    }

    #[test]
    fn a_tenant_names_only_the_secrets_its_allowlist_lists() {
        // GIVEN acme allowed its acme/* secrets, and globex an allowlist without secrets
        let policy = allowlist(
            r#"{"acme": {"http": ["*.acme.com"], "secrets": ["arn:aws:secretsmanager:*:123456789012:secret:acme/*"]},
                "globex": {"http": ["*.globex.com"]}}"#,
        );
        let ours = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:acme/signing-AbCdEf";
        let partial = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:acme/token";
        let theirs = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:globex/signing-XyZ123";
        let hook = "https://hooks.acme.com/run";
        // THEN acme's own secrets, by full or partial ARN, are accepted as key and as header
        assert_eq!(refusal(&policy, "acme", &webhook(hook, Some(ours), Some(partial))), None);
        // AND another's secret is refused, naming the field and the rule and nothing of the secret
        let not_allowed = |field: &str| Some((codes::TARGET_NOT_ALLOWED, field.to_string()));
        assert_eq!(
            refusal(&policy, "acme", &webhook(hook, Some(theirs), None)),
            not_allowed("target.signingSecretArn")
        );
        assert_eq!(
            refusal(&policy, "acme", &webhook(hook, None, Some(theirs))),
            not_allowed("target.headers.Authorization.secretArn")
        );
        let cfg = crate::LocalDeployment::local("t-", &["default"], 16);
        let reason =
            policy.check(&cfg, "acme", &webhook(hook, Some(theirs), None)).err().map(|r| r.error.reason);
        assert!(reason.as_ref().is_some_and(|r| !r.contains("globex") && r.contains("secret")), "{reason:?}");
        // AND a tenant whose allowlist has no secrets kind may name none
        let own = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:globex/signing-XyZ123";
        assert_eq!(
            refusal(&policy, "globex", &webhook("https://h.globex.com/", Some(own), None)),
            not_allowed("target.signingSecretArn")
        );
        // AND without allowlists any well-formed secret ARN passes (the worker's tag check guards)
        assert_eq!(
            refusal(&TargetPolicy::default(), "acme", &webhook(hook, Some(theirs), Some(theirs))),
            None
        );
    }

    #[test]
    fn a_tenant_runs_only_the_in_process_handlers_its_allowlist_lists() {
        // GIVEN acme allowed the handler `report`, and globex an allowlist without handlers
        let policy = allowlist(r#"{"acme": {"inProcess": ["report", "etl-*"]}, "globex": {"http": ["*"]}}"#);
        let handler = |h: &str| Target::InProcess { handler: h.to_string() };
        let not_allowed = Some((codes::TARGET_NOT_ALLOWED, "target.handler".to_string()));
        // THEN acme runs its handlers and no other (the diagnostic `sleep` and `count` included)
        assert_eq!(refusal(&policy, "acme", &handler("report")), None);
        assert_eq!(refusal(&policy, "acme", &handler("etl-daily")), None);
        for h in ["sleep", "count"] {
            assert_eq!(refusal(&policy, "acme", &handler(h)), not_allowed, "{h}");
        }
        // AND globex runs none
        assert_eq!(refusal(&policy, "globex", &handler("report")), not_allowed);
        // AND without allowlists any registered handler may be named, as before
        assert_eq!(refusal(&TargetPolicy::default(), "globex", &handler("sleep")), None);
    }

    #[test]
    fn pools_of_lists_the_deployments_pools_a_tenants_globs_match() {
        let pools: Vec<String> = ["default", "batch-eu", "batch-us", "ecs"].map(String::from).into();
        let policy = allowlist(
            r#"{"acme": {"pools": ["batch-*"]}, "globex": {"http": ["*"]}, "*": {"pools": ["default"]}}"#,
        );
        assert_eq!(policy.pools_of("acme", &pools), Some(vec!["batch-eu", "batch-us"]));
        assert_eq!(policy.pools_of("globex", &pools), Some(vec![]), "an entry without pools allows none");
        assert_eq!(policy.pools_of("initech", &pools), Some(vec!["default"]), "the \"*\" entry");
        assert_eq!(TargetPolicy::default().pools_of("acme", &pools), None, "no allowlists: every pool");
    }

    #[test]
    fn check_pool_allows_the_listed_pools_and_every_pool_without_allowlists() {
        let policy = allowlist(r#"{"acme": {"pools": ["default", "batch-*"]}, "*": {"http": ["*"]}}"#);
        assert!(
            policy.check_pool("acme", "default").is_ok() && policy.check_pool("acme", "batch-eu").is_ok()
        );
        let refused = policy.check_pool("acme", "ecs").err().map(|r| (r.code, r.error.field));
        assert_eq!(refused, Some((codes::TARGET_NOT_ALLOWED, "pool".to_string())));
        assert!(policy.check_pool("globex", "default").is_err(), "the \"*\" entry lists no pools");
        assert!(TargetPolicy::default().check_pool("globex", "ecs").is_ok());
    }

    #[test]
    fn a_tenant_reaches_only_its_own_private_networks() {
        // GIVEN a deployment that opens 10.1.0.0/16 and 10.2.0.0/16; acme's own network is
        // 10.1.5.0/24 (and, by mistake, 10.9.0.0/16, which the deployment does not open)
        let mut policy = allowlist(
            r#"{"acme": {"http": ["*"], "cidrs": ["10.1.5.0/24", "10.9.0.0/16"]}, "globex": {"http": ["*"]}}"#,
        );
        policy.addresses.private_cidrs = ["10.1.0.0/16", "10.2.0.0/16"]
            .iter()
            .map(|c| Cidr::parse(c).unwrap_or_else(|e| panic!("{e}")))
            .collect();
        let refused = Some((codes::ADDRESS_REFUSED, "target.url".to_string()));
        // THEN acme reaches what lies in both lists, and nothing else private
        assert_eq!(refusal(&policy, "acme", &Target::http("https://10.1.5.9/hook")), None);
        for url in ["https://10.1.6.1/", "https://10.2.0.1/", "https://10.9.0.1/"] {
            assert_eq!(refusal(&policy, "acme", &Target::http(url)), refused, "{url}");
        }
        // AND globex, whose allowlist names no network, reaches public addresses only
        assert_eq!(refusal(&policy, "globex", &Target::http("https://10.1.5.9/hook")), refused);
        assert_eq!(refusal(&policy, "globex", &Target::http("https://93.184.216.34/")), None);
        // AND without allowlists the deployment's networks are every tenant's, as before
        policy.tenants = None;
        assert_eq!(refusal(&policy, "globex", &Target::http("https://10.2.0.1/")), None);
    }

    #[test]
    fn addresses_for_narrows_the_deployments_networks_to_the_tenants() {
        let cidr = |c: &str| Cidr::parse(c).unwrap_or_else(|e| panic!("{e}"));
        let mut policy = allowlist(
            r#"{"acme": {"cidrs": ["10.1.5.0/24", "10.0.0.0/8", "fd12:1::/32"]}, "*": {"http": ["*"]}}"#,
        );
        policy.addresses =
            AddressPolicy { private_cidrs: vec![cidr("10.1.0.0/16"), cidr("fd12::/16")], dev_loopback: true };
        let acme = policy.addresses_for("acme");
        assert_eq!(acme.private_cidrs, [cidr("10.1.5.0/24"), cidr("10.1.0.0/16"), cidr("fd12:1::/32")]);
        assert!(acme.dev_loopback, "the dev setting is the deployment's");
        assert!(policy.addresses_for("globex").private_cidrs.is_empty());
        policy.tenants = None;
        assert_eq!(policy.addresses_for("globex"), policy.addresses);
        assert_eq!(cidr("10.1.0.0/16").intersection(&cidr("10.2.0.0/16")), None);
        assert_eq!(cidr("10.1.0.0/16").intersection(&cidr("::/0")), None);
        // a tenant's networks read and written as strings
        let t =
            TenantTargets::parse(r#"{"acme": {"cidrs": ["10.1.5.0/24"]}}"#).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.to_json(), r#"{"acme":{"cidrs":["10.1.5.0/24"]}}"#, "empty kinds left out");
        assert_eq!(TenantTargets::parse(&t.to_json()), Ok(t));
        assert!(TenantTargets::parse(r#"{"acme": {"cidrs": ["10.1.5.0/33"]}}"#).is_err());
    }

    proptest::proptest! {
        #[test]
        fn a_glob_without_stars_matches_only_itself(p in "[a-z:/-]{0,12}", v in "[a-z:/-]{0,12}") {
            proptest::prop_assert_eq!(glob_match(&p, &v), p == v);
        }

        #[test]
        fn a_star_never_matches_a_separator(
            prefix in "[a-z]{1,5}", mid in "[a-z/:?#@]{1,8}", suffix in "[a-z]{0,5}"
        ) {
            let value = format!("{prefix}{mid}{suffix}");
            let plain = !mid.bytes().any(|b| SEGMENT_SEPARATORS.contains(&b));
            proptest::prop_assert_eq!(glob_match(&format!("{prefix}*{suffix}"), &value), plain);
        }

        #[test]
        fn any_text_is_judged_without_panicking(v in "\\PC{0,80}", g in "[a-z0-9:/*?#@.-]{0,40}") {
            let mut policy = allowlist(
                r#"{"acme": {"lambda": ["arn:aws:lambda:*:123456789012:function:acme-*"],
                             "sqs": ["arn:aws:sqs:*:123456789012:acme-*"],
                             "secrets": ["arn:aws:secretsmanager:*:123456789012:secret:acme/*"]}}"#,
            );
            policy.home = home("eu-west-1", "123456789012");
            policy.own_functions = vec!["sundial-*".into(), g.clone()];
            for target in [
                lambda(&v),
                sqs(&v),
                Target::http(&v),
                webhook("https://h.acme.com/", Some(&v), Some(&v)),
                Target::InProcess { handler: v.clone() },
            ] {
                let _ = refusal(&policy, "acme", &target);
            }
            let _ = glob_match(&g, &v);
        }
    }

    #[test]
    fn reserved_header_names_are_refused() {
        for h in [
            "Webhook-Signature",
            "webhook-id",
            "Idempotency-Key",
            "Content-Type",
            "HOST",
            "X-Sundial-Fencing-Token",
        ] {
            assert!(check_header_name(h).is_err(), "{h}");
        }
        assert!(check_header_name("Authorization").is_ok() && check_header_name("X-Api-Key").is_ok());
        assert!(check_header_name("bad header").is_err());
    }
}
