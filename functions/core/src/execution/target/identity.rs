//! Tenant identity on outbound calls: every secret, function and queue a worker touches for a
//! tenant is reached *as that tenant*, and must be that tenant's own.
//!
//! A scheduler that reads secrets and calls functions with one shared role is a confused deputy:
//! a tenant that names another tenant's secret gets it read for it. Two lines stand in the way,
//! each enough for what the other might miss (`docs/tenancy.md`):
//! - **AWS's**, where deployed: the worker assumes the stack's tenant access role
//!   (`SUNDIAL_TENANT_ROLE_ARN`), or the tenant's own role (`SUNDIAL_TENANT_ROLES`), with the
//!   session tag `sundial-tenant=<tenant>`. That role may use a secret, function or queue only if
//!   the resource's `sundial-tenant` tag equals the session's (attribute-based access control),
//!   so AWS itself refuses another tenant's resource, whatever Sundial's code does.
//! - **Sundial's**, everywhere (and the only one on an emulator, which does not evaluate IAM
//!   conditions): before a resource is used, its `sundial-tenant` tag is read through the same
//!   session and must name the tenant.
//!
//! Every way a resource can fail that rule (it does not exist, the read is refused, it is tagged
//! for another tenant or not at all) ends in one error, word for word: a tenant learns nothing
//! about resources that are not its own. The detail goes to the worker's log.
//!
//! Sessions and ownership are cached per tenant, inside the worker's per-tenant targets
//! (`super::Remotes`, bounded): a tenant costs one `AssumeRole` per hour per worker process, and
//! a resource one tag read per [`OWNERSHIP_TTL`].

use aws_sdk_lambda::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use sundial_model::retry::{codes, RunError};
pub use sundial_model::tenant::TenantRoles;
use tokio::time::Instant;

/// The tag that names a resource's tenant (on secrets, functions and queues) and the session's.
pub const TENANT_TAG: &str = "sundial-tenant";

/// How long a confirmed owner is trusted before the tag is read again: a re-tagged resource
/// leaves its old tenant within this time.
pub const OWNERSHIP_TTL: Duration = Duration::from_secs(60);

/// Most tenants whose targets (session, secret cache, ownership confirmations) one worker
/// process keeps.
pub const MAX_TENANTS: usize = 1_000;

/// Most confirmed resources kept per tenant.
const MAX_OWNED: usize = 256;

/// What kind of resource a target names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A Secrets Manager secret (signing key or header value).
    Secret,
    /// A Lambda function.
    Function,
    /// An SQS queue.
    Queue,
    /// An EventBridge bus.
    EventBus,
    /// An SNS topic.
    Topic,
    /// A Step Functions state machine.
    StateMachine,
    /// An ECS task definition (a revision).
    TaskDefinition,
}

impl Kind {
    fn noun(self) -> &'static str {
        match self {
            Kind::Secret => "secret",
            Kind::Function => "Lambda function",
            Kind::Queue => "queue",
            Kind::EventBus => "event bus",
            Kind::Topic => "topic",
            Kind::StateMachine => "state machine",
            Kind::TaskDefinition => "task definition",
        }
    }
}

/// The one error of a resource that is not the tenant's (whatever the reason): the same words
/// for "missing", "refused" and "someone else's".
pub fn not_owned(kind: Kind, what: &str, tenant: &str) -> RunError {
    RunError::permanent(
        codes::TARGET_NOT_OWNED,
        format!(
            "the {what} is not available to tenant {tenant:?}: the {} must exist and carry the tag {TENANT_TAG}={tenant}",
            kind.noun()
        ),
    )
}

/// The three clients a tenant's calls go through.
#[derive(Debug, Clone)]
pub struct TenantClients {
    /// Lambda (function targets).
    pub lambda: aws_sdk_lambda::Client,
    /// SQS (queue targets).
    pub sqs: aws_sdk_sqs::Client,
    /// Secrets Manager (webhook secrets).
    pub secrets: aws_sdk_secretsmanager::Client,
    /// EventBridge (`eventBridge` targets).
    pub events: aws_sdk_eventbridge::Client,
    /// SNS (`sns` targets).
    pub sns: aws_sdk_sns::Client,
    /// Step Functions (`stepFunctions` targets).
    pub sfn: aws_sdk_sfn::Client,
    /// ECS (`ecs` targets).
    pub ecs: aws_sdk_ecs::Client,
}

impl TenantClients {
    /// The base clients of a process's `clients` (before any tenant's role session).
    pub fn of(clients: &crate::aws::Clients) -> Self {
        TenantClients {
            lambda: clients.lambda.clone(),
            sqs: clients.sqs.clone(),
            secrets: clients.secrets.clone(),
            events: clients.events.clone(),
            sns: clients.sns.clone(),
            sfn: clients.sfn.clone(),
            ecs: clients.ecs.clone(),
        }
    }
}

/// A role session name for `tenant` (2-64 of `[\w+=,.@-]`; tenant ids are a subset).
fn session_name(tenant: &str) -> String {
    let clean: String = tenant
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || "+=,.@-_".contains(c) { c } else { '-' })
        .take(56)
        .collect();
    format!("sundial-{clean}")
}

/// Clients per tenant: the base clients as the tenant's role session, or the base clients
/// themselves when no role is configured. Not cached here: the caller keeps what it builds
/// (`super::Remotes`, one per tenant).
#[derive(Debug, Clone)]
pub struct TenantSessions {
    base: TenantClients,
    roles: TenantRoles,
}

impl TenantSessions {
    /// Sessions over `base` (whose interceptors and endpoint the tenant clients keep).
    pub fn new(base: TenantClients, roles: TenantRoles) -> Self {
        TenantSessions { base, roles }
    }

    /// `tenant`'s clients, over a new role session (the SDK refreshes its credentials before
    /// they expire, so the caller keeps and reuses them).
    pub async fn clients(&self, tenant: &str) -> TenantClients {
        let Some(role) = self.roles.of(tenant) else { return self.base.clone() };
        let provider = aws_config::sts::AssumeRoleProvider::builder(role)
            .session_name(session_name(tenant))
            .tags([(TENANT_TAG, tenant)])
            .build()
            .await;
        crate::access::note("sts:AssumeRole", "role:tenant-access".into());
        crate::access::note("sts:TagSession", "role:tenant-access".into());
        let creds = aws_sdk_lambda::config::SharedCredentialsProvider::new(provider);
        // One cache for the three clients: one STS call per tenant per session, not three.
        let cache = aws_sdk_lambda::config::IdentityCache::lazy().build();
        // The base client's configuration (endpoint, interceptors) with the session's
        // credentials.
        macro_rules! as_tenant {
            ($sdk:ident, $client:expr) => {
                $sdk::Client::from_conf(
                    $client
                        .config()
                        .to_builder()
                        .credentials_provider(creds.clone())
                        .identity_cache(cache.clone())
                        .build(),
                )
            };
        }
        TenantClients {
            lambda: as_tenant!(aws_sdk_lambda, self.base.lambda),
            sqs: as_tenant!(aws_sdk_sqs, self.base.sqs),
            secrets: as_tenant!(aws_sdk_secretsmanager, self.base.secrets),
            events: as_tenant!(aws_sdk_eventbridge, self.base.events),
            sns: as_tenant!(aws_sdk_sns, self.base.sns),
            sfn: as_tenant!(aws_sdk_sfn, self.base.sfn),
            ecs: as_tenant!(aws_sdk_ecs, self.base.ecs),
        }
    }
}

/// Confirms that resources are a tenant's own (their `sundial-tenant` tag), read through that
/// tenant's clients and cached for [`OWNERSHIP_TTL`].
#[derive(Debug, Clone)]
pub struct Ownership {
    tenant: String,
    clients: TenantClients,
    ttl: Duration,
    confirmed: Arc<Mutex<HashMap<(Kind, String), Instant>>>,
}

/// A tag read's outcome.
enum Tagged {
    /// The tag's value (`None`: the resource carries no such tag).
    Value(Option<String>),
    /// The read failed for a reason that says nothing about ownership (throttling, a 5xx, the
    /// network): retry.
    Unsure(String),
    /// The read was refused or the resource is missing: not the tenant's (detail for the log).
    Refused(String),
}

impl Ownership {
    /// Ownership for `tenant`, read through `clients`.
    pub fn new(tenant: &str, clients: TenantClients) -> Self {
        Ownership { tenant: tenant.to_string(), clients, ttl: OWNERSHIP_TTL, confirmed: Arc::default() }
    }

    /// The tenant.
    pub fn tenant(&self) -> &str {
        &self.tenant
    }

    /// Fails unless `resource` (a secret ARN, function name or ARN, queue URL) carries
    /// `sundial-tenant=<tenant>`. `what` names its use in the message ("signing secret").
    pub async fn check(
        &self,
        kind: Kind,
        resource: &str,
        what: &str,
        execution: &str,
    ) -> Result<(), RunError> {
        let key = (kind, resource.to_string());
        if self
            .confirmed
            .lock()
            .ok()
            .and_then(|m| m.get(&key).copied())
            .is_some_and(|at| at.elapsed() < self.ttl)
        {
            return Ok(());
        }
        let tagged = match kind {
            Kind::Secret => self.secret_tag(resource).await,
            Kind::Function => Box::pin(self.function_tag(resource)).await,
            Kind::Queue => self.queue_tag(resource).await,
            Kind::EventBus => self.bus_tag(resource).await,
            Kind::Topic => self.topic_tag(resource).await,
            Kind::StateMachine => self.machine_tag(resource).await,
            Kind::TaskDefinition => self.task_definition_tag(resource).await,
        };
        match tagged {
            Tagged::Value(Some(v)) if v == self.tenant => {
                if let Ok(mut m) = self.confirmed.lock() {
                    if m.len() >= MAX_OWNED {
                        m.retain(|_, at| at.elapsed() < self.ttl);
                    }
                    if m.len() < MAX_OWNED {
                        m.insert(key, Instant::now());
                    }
                }
                Ok(())
            }
            Tagged::Value(other) => {
                tracing::warn!(execution, kind = kind.noun(), resource, tag = ?other, tenant = %self.tenant, "target not owned by the tenant");
                Err(not_owned(kind, what, &self.tenant))
            }
            Tagged::Refused(detail) => {
                tracing::warn!(execution, kind = kind.noun(), resource, detail, tenant = %self.tenant, "target ownership refused");
                Err(not_owned(kind, what, &self.tenant))
            }
            Tagged::Unsure(detail) => {
                tracing::warn!(
                    execution,
                    kind = kind.noun(),
                    resource,
                    detail,
                    "target ownership could not be read"
                );
                Err(RunError::retryable(
                    codes::TARGET_NOT_OWNED,
                    format!("whether the {what} belongs to the tenant could not be read (will retry)"),
                ))
            }
        }
    }

    async fn secret_tag(&self, arn: &str) -> Tagged {
        match self.clients.secrets.describe_secret().secret_id(arn).send().await {
            Ok(o) => Tagged::Value(tenant_tag(o.tags().iter().map(|t| (t.key(), t.value())))),
            Err(e) => judge(e),
        }
    }

    /// A function's tag, read with `ListTags` on its unqualified ARN. `GetFunction` (granted
    /// for any form of the name: bare, partial, qualified) resolves that ARN; its own `Tags`
    /// are never read, because AWS fills them only for a caller allowed `lambda:ListTags` and
    /// otherwise answers a `TagsError` in their place, which says nothing of the owner (every
    /// function would read as untagged: issue 49, F1). A `TagsError` is "cannot tell", and so
    /// is an answer without an ARN.
    async fn function_tag(&self, function: &str) -> Tagged {
        let got = match self.clients.lambda.get_function().function_name(function).send().await {
            Ok(o) => o,
            Err(e) => return judge(e),
        };
        let Some(arn) = got.configuration().and_then(|c| c.function_arn()).map(unqualified_function_arn)
        else {
            let why = got.tags_error().map_or("no FunctionArn".to_string(), |e| format!("{e:?}"));
            return Tagged::Unsure(format!("GetFunction named no function ARN to read tags of ({why})"));
        };
        match self.clients.lambda.list_tags().resource(arn).send().await {
            Ok(o) => Tagged::Value(o.tags().and_then(|t| t.get(TENANT_TAG)).cloned()),
            Err(e) => judge(e),
        }
    }

    async fn bus_tag(&self, arn: &str) -> Tagged {
        match self.clients.events.list_tags_for_resource().resource_arn(arn).send().await {
            Ok(o) => {
                Tagged::Value(o.tags().iter().find(|t| t.key() == TENANT_TAG).map(|t| t.value().to_string()))
            }
            Err(e) => judge(e),
        }
    }

    async fn topic_tag(&self, arn: &str) -> Tagged {
        match self.clients.sns.list_tags_for_resource().resource_arn(arn).send().await {
            Ok(o) => {
                Tagged::Value(o.tags().iter().find(|t| t.key() == TENANT_TAG).map(|t| t.value().to_string()))
            }
            Err(e) => judge(e),
        }
    }

    async fn machine_tag(&self, arn: &str) -> Tagged {
        match self.clients.sfn.list_tags_for_resource().resource_arn(arn).send().await {
            Ok(o) => Tagged::Value(tenant_tag(o.tags().iter().map(|t| (t.key(), t.value())))),
            Err(e) => judge(e),
        }
    }

    async fn task_definition_tag(&self, arn: &str) -> Tagged {
        match self.clients.ecs.list_tags_for_resource().resource_arn(arn).send().await {
            Ok(o) => Tagged::Value(
                o.tags()
                    .iter()
                    .find(|t| t.key() == Some(TENANT_TAG))
                    .and_then(|t| t.value().map(str::to_string)),
            ),
            Err(e) => judge(e),
        }
    }

    async fn queue_tag(&self, url: &str) -> Tagged {
        match self.clients.sqs.list_queue_tags().queue_url(url).send().await {
            Ok(o) => Tagged::Value(o.tags().and_then(|t| t.get(TENANT_TAG)).cloned()),
            Err(e) => judge(e),
        }
    }
}

/// Throttling, server errors and the network retry; every other answer (missing, refused,
/// invalid) says the resource is not usable by this tenant.
fn judge<E, R>(e: SdkError<E, R>) -> Tagged
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    let detail = DisplayErrorContext(&e).to_string();
    match &e {
        SdkError::ServiceError(s) => {
            let code = s.err().code().unwrap_or_default();
            let transient = code.contains("Throttl")
                || code.contains("TooManyRequests")
                || code.contains("ServiceUnavailable")
                || code.contains("InternalFailure")
                || code.contains("InternalError")
                || code.contains("ServiceException")
                || code == "RequestThrottled"
                || code == "ServerException";
            if transient {
                Tagged::Unsure(detail)
            } else {
                Tagged::Refused(detail)
            }
        }
        _ => Tagged::Unsure(detail),
    }
}

/// `arn:…:function:<name>` of a function ARN that may carry a version or alias
/// (`…:function:<name>:<qualifier>`): Lambda keeps tags on the function, and `ListTags` takes
/// only its unqualified ARN.
fn unqualified_function_arn(arn: &str) -> &str {
    match arn.match_indices(':').nth(6) {
        Some((i, _)) => &arn[..i],
        None => arn,
    }
}

/// The `sundial-tenant` tag's value among `tags` (key, value), as the SDKs whose tags have
/// optional keys and values list them (Secrets Manager, Step Functions).
fn tenant_tag<'a>(mut tags: impl Iterator<Item = (Option<&'a str>, Option<&'a str>)>) -> Option<String> {
    tags.find(|(k, _)| *k == Some(TENANT_TAG)).and_then(|(_, v)| v.map(str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_a_resource_is_not_owned_reads_the_same() {
        // C1: `lastError` must not tell "missing" from "refused" from "someone else's".
        let a = not_owned(Kind::Secret, "signing secret", "acme");
        assert!(!a.is_retryable());
        assert_eq!(a.code, codes::TARGET_NOT_OWNED);
        assert!(a.message.contains("sundial-tenant=acme"), "{}", a.message);
        assert!(!a.message.contains("NotFound") && !a.message.contains("AccessDenied"), "{}", a.message);
    }

    #[test]
    fn tags_are_read_on_the_unqualified_function() {
        let f = "arn:aws:lambda:eu-west-1:123456789012:function:acme-run";
        assert_eq!(unqualified_function_arn(f), f);
        assert_eq!(unqualified_function_arn(&format!("{f}:prod")), f);
        assert_eq!(unqualified_function_arn(&format!("{f}:7")), f);
    }

    /// A Lambda endpoint on loopback answering as AWS does to a caller not allowed
    /// `lambda:ListTags`: `GetFunction` with a `TagsError` and no `Tags`, then `ListTags` with
    /// `list_tags` (status, body). Counts the `ListTags` calls.
    async fn lambda_stub(list_tags: (u16, &'static str)) -> (TenantClients, Arc<Mutex<Vec<String>>>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                let mut buf = vec![0u8; 16 * 1024];
                let n = sock.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).to_string();
                let path = head.split_whitespace().nth(1).unwrap_or_default().to_string();
                log.lock().unwrap_or_else(|p| p.into_inner()).push(path.clone());
                let (status, body) = if path.starts_with("/2015-03-31/functions/") {
                    (
                        200,
                        r#"{"Configuration": {"FunctionName": "acme-run", "FunctionArn": "arn:aws:lambda:eu-west-1:123456789012:function:acme-run:prod"}, "TagsError": {"ErrorCode": "AccessDeniedException", "Message": "not allowed lambda:ListTags"}}"#,
                    )
                } else {
                    list_tags
                };
                let err = if status == 200 {
                    String::new()
                } else {
                    format!(
                        "x-amzn-errortype: {}\r\n",
                        if status == 429 { "TooManyRequestsException" } else { "AccessDeniedException" }
                    )
                };
                let reply = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n{err}content-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(reply.as_bytes()).await;
            }
        });
        let cfg = aws_config::SdkConfig::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .region(aws_config::Region::new("eu-west-1"))
            .credentials_provider(aws_sdk_lambda::config::SharedCredentialsProvider::new(
                aws_sdk_lambda::config::Credentials::new("AKID", "secret", None, None, "stub"),
            ))
            .endpoint_url(url)
            .build();
        let clients = TenantClients {
            lambda: aws_sdk_lambda::Client::new(&cfg),
            sqs: aws_sdk_sqs::Client::new(&cfg),
            secrets: aws_sdk_secretsmanager::Client::new(&cfg),
            events: aws_sdk_eventbridge::Client::new(&cfg),
            sns: aws_sdk_sns::Client::new(&cfg),
            sfn: aws_sdk_sfn::Client::new(&cfg),
            ecs: aws_sdk_ecs::Client::new(&cfg),
        };
        (clients, seen)
    }

    #[tokio::test]
    async fn a_get_function_answer_with_tags_error_and_no_tags_is_not_read_as_untagged() {
        // GIVEN GetFunction answering a TagsError (no lambda:ListTags on real AWS) and ListTags
        // naming acme: THEN acme's alias-qualified function is acme's, read on the function
        let (clients, seen) = lambda_stub((200, r#"{"Tags": {"sundial-tenant": "acme"}}"#)).await;
        let own = Ownership::new("acme", clients);
        own.check(Kind::Function, "acme-run:prod", "function", "x").await.expect("acme's own function");
        let paths = seen.lock().unwrap_or_else(|p| p.into_inner()).clone();
        assert_eq!(paths.len(), 2, "{paths:?}");
        assert!(paths[1].starts_with("/2017-03-31/tags/") && paths[1].ends_with("acme-run"), "{paths:?}");
        // AND another tenant is refused, with the one not-owned error
        let (clients, _) = lambda_stub((200, r#"{"Tags": {"sundial-tenant": "acme"}}"#)).await;
        let e = Ownership::new("globex", clients).check(Kind::Function, "acme-run", "function", "x").await;
        assert_eq!(
            e.map_err(|e| (e.code.clone(), e.is_retryable())),
            Err((codes::TARGET_NOT_OWNED.to_string(), false))
        );
        // AND a ListTags that is throttled is "cannot tell" (retry), never "untagged"
        let (clients, _) = lambda_stub((429, r#"{"message": "slow down"}"#)).await;
        let e = Ownership::new("acme", clients).check(Kind::Function, "acme-run", "function", "x").await;
        assert_eq!(
            e.map_err(|e| (e.code.clone(), e.is_retryable())),
            Err((codes::TARGET_NOT_OWNED.to_string(), true))
        );
    }

    #[test]
    fn session_names_are_valid_for_sts() {
        assert_eq!(session_name("acme"), "sundial-acme");
        let long = session_name(&"x".repeat(100));
        assert!(long.len() <= 64 && long.len() >= 2);
        assert_eq!(session_name("a b/c"), "sundial-a-b-c");
    }
}
