//! Who is calling: the tenant and principal, from the API Gateway authorizer context only.
//!
//! The tenancy mode (`SUNDIAL_TENANCY`, [`Tenancy`]) says where the tenant comes from:
//! - **`jwt`** (the default): the claim named by `SUNDIAL_TENANT_CLAIM` (default `tenant`); the
//!   principal is `sub`. The claim must be one only the issuer sets (a Cognito group mapped in a
//!   pre-token-generation trigger, an IdP attribute users cannot edit), never a user-writable
//!   Cognito `custom:` attribute: whoever can change the claim can change tenants.
//! - **`iam-principal-tag`**: the tag `SUNDIAL_TENANT_TAG` (default `sundial-tenant`) on the
//!   calling IAM role (for an assumed-role session) or IAM user, read with `iam:ListRoleTags` /
//!   `iam:ListUserTags` and cached for [`TAG_TTL`]. Tags on the role itself are set by IAM
//!   administrators; session tags, which a caller may choose when assuming the role, are not
//!   read. A principal without the tag, of another account, or of a kind that has no tags
//!   (root, federated users) is refused with 403.
//! - **`iam-account`**: the caller's account id is the tenant: every principal of an account
//!   sees and changes every job of that account. Only when set explicitly.
//!
//! Nothing in the request itself (headers, path, body) can choose the tenant in the Lambda; the
//! local run's loopback server is the only place that takes it from a header
//! ([`crate::local`]). A missing or malformed tenant is 401; a principal refused a tenant, 403.

use crate::error::ApiError;
use lambda_http::aws_lambda_events::apigw::{
    ApiGatewayRequestAuthorizer, ApiGatewayRequestAuthorizerIamDescription,
};
use lambda_http::http::StatusCode;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use sundial_api_types::ErrorCode;
use sundial_core::access;
use sundial_core::config::{ApiSettings, Tenancy};
use sundial_core::control::Caller;
use sundial_model::arn::Arn;
use sundial_model::keys;

/// How long a principal's tenant tag is trusted before it is read again: a changed or removed
/// tag takes effect within this time.
pub const TAG_TTL: Duration = Duration::from_secs(300);
/// Principals remembered at most (the cache is emptied when full).
const TAG_CACHE_MAX: usize = 10_000;

fn unauthorized(msg: &str) -> ApiError {
    ApiError::new(StatusCode::UNAUTHORIZED, ErrorCode::Unauthorized, msg)
}

fn forbidden(msg: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::FORBIDDEN, ErrorCode::Forbidden, msg)
}

/// An IAM principal that can carry tags.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Principal {
    /// An assumed-role session: the role's name.
    Role(String),
    /// An IAM user: the user's name.
    User(String),
}

impl Principal {
    /// The principal behind a caller ARN, with its account:
    /// `arn:aws:sts::{account}:assumed-role/{role}/{session}` or
    /// `arn:aws:iam::{account}:user/{path/}{name}`. Anything else (root, federated users,
    /// malformed) is `None`.
    pub fn of_arn(arn: &str) -> Option<(String, Principal)> {
        let Arn { service, account, resource, .. } = Arn::parse(arn)?;
        let principal = match service {
            "sts" => {
                let mut r = resource.splitn(3, '/');
                match (r.next()?, r.next()?, r.next()?) {
                    ("assumed-role", role, _session) if !role.is_empty() => Principal::Role(role.to_string()),
                    _ => return None,
                }
            }
            "iam" => {
                let rest = resource.strip_prefix("user/")?;
                let name = rest.rsplit('/').next().filter(|n| !n.is_empty())?;
                Principal::User(name.to_string())
            }
            _ => return None,
        };
        (!account.is_empty()).then(|| (account.to_string(), principal))
    }
}

/// Reads principals' tenant tags from IAM, cached for [`TAG_TTL`].
#[derive(Debug)]
pub struct PrincipalTags {
    iam: aws_sdk_iam::Client,
    cache: Mutex<HashMap<Principal, (Instant, Option<String>)>>,
}

/// Why a tag could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TagError {
    /// The role or user does not exist (deleted since it signed the request).
    #[error("the principal no longer exists")]
    NoSuchPrincipal,
    /// IAM did not answer or refused (throttling, a missing `iam:List*Tags` grant): try later.
    #[error("IAM: {0}")]
    Unavailable(String),
}

impl PrincipalTags {
    /// A reader over `iam`.
    pub fn new(iam: aws_sdk_iam::Client) -> Self {
        PrincipalTags { iam, cache: Mutex::new(HashMap::new()) }
    }

    /// The value of `tag` on `p` (`None` when it has no such tag), from the cache if fresh.
    pub async fn tag(&self, p: &Principal, tag: &str, now: Instant) -> Result<Option<String>, TagError> {
        if let Ok(c) = self.cache.lock() {
            if let Some((at, v)) = c.get(p) {
                if now.saturating_duration_since(*at) < TAG_TTL {
                    return Ok(v.clone());
                }
            }
        }
        let v = self.read(p, tag).await?;
        if let Ok(mut c) = self.cache.lock() {
            if c.len() >= TAG_CACHE_MAX {
                c.clear();
            }
            c.insert(p.clone(), (now, v.clone()));
        }
        Ok(v)
    }

    async fn read(&self, p: &Principal, tag: &str) -> Result<Option<String>, TagError> {
        // A principal has at most 50 tags: one page.
        let tags = match p {
            Principal::Role(name) => {
                access::note("iam:ListRoleTags", format!("role:{name}"));
                let r = self.iam.list_role_tags().role_name(name).max_items(100).send().await;
                r.map(|o| o.tags).map_err(|e| tag_error(e, |s| s.is_no_such_entity_exception()))?
            }
            Principal::User(name) => {
                access::note("iam:ListUserTags", format!("user:{name}"));
                let r = self.iam.list_user_tags().user_name(name).max_items(100).send().await;
                r.map(|o| o.tags).map_err(|e| tag_error(e, |s| s.is_no_such_entity_exception()))?
            }
        };
        Ok(tags.into_iter().find(|t| t.key == tag).map(|t| t.value))
    }
}

/// A tag read's SDK error: the principal is gone (`no_such`), or IAM is unavailable.
fn tag_error<E, R>(e: aws_sdk_iam::error::SdkError<E, R>, no_such: impl Fn(&E) -> bool) -> TagError
where
    E: std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug,
{
    if e.as_service_error().is_some_and(no_such) {
        return TagError::NoSuchPrincipal;
    }
    TagError::Unavailable(aws_sdk_iam::error::DisplayErrorContext(e).to_string())
}

/// The caller of a request with this authorizer context. `api_account` is the account the API
/// runs in (the request context's `accountId`); `tags` reads principal tags
/// ([`Tenancy::IamPrincipalTag`]).
pub async fn caller_of(
    auth: Option<&ApiGatewayRequestAuthorizer>,
    api_account: Option<&str>,
    settings: &ApiSettings,
    tags: Option<&PrincipalTags>,
) -> Result<Caller, ApiError> {
    let auth =
        auth.ok_or_else(|| unauthorized("no authorizer context: the API must sit behind an authorizer"))?;
    let (tenant, principal) = match (settings.tenancy, &auth.jwt, &auth.iam) {
        (Tenancy::Jwt, Some(jwt), _) => {
            let tenant = jwt.claims.get(&settings.tenant_claim).cloned().unwrap_or_default();
            (tenant, jwt.claims.get("sub").cloned().unwrap_or_default())
        }
        (Tenancy::Jwt, None, _) => {
            return Err(unauthorized("this API takes JWTs (tenancy jwt): the request carries no JWT claims"))
        }
        (_, _, None) => {
            return Err(unauthorized(
                "this API takes IAM-signed requests: the request carries no IAM principal",
            ))
        }
        (Tenancy::IamAccount, _, Some(iam)) => {
            (iam.account_id.clone().unwrap_or_default(), iam.user_arn.clone().unwrap_or_default())
        }
        (Tenancy::IamPrincipalTag, _, Some(iam)) => {
            let tenant = tagged_tenant(iam, api_account, settings, tags).await?;
            (tenant, iam.user_arn.clone().unwrap_or_default())
        }
    };
    if tenant.is_empty() {
        return Err(unauthorized("the token carries no tenant"));
    }
    keys::validate_id("tenant", &tenant).map_err(|_| unauthorized("the token's tenant is not a valid id"))?;
    let principal = if principal.is_empty() { "unknown".to_string() } else { principal };
    Ok(Caller { tenant, principal })
}

async fn tagged_tenant(
    iam: &ApiGatewayRequestAuthorizerIamDescription,
    api_account: Option<&str>,
    settings: &ApiSettings,
    tags: Option<&PrincipalTags>,
) -> Result<String, ApiError> {
    let arn = iam.user_arn.as_deref().unwrap_or_default();
    let tag = &settings.tenant_tag;
    let Some((account, principal)) = Principal::of_arn(arn) else {
        return Err(forbidden(format!(
            "{arn:?} is not an IAM role session or user, so it carries no {tag} tag"
        )));
    };
    // Fail closed: without the API's account (a context that is not API Gateway v2's, or a
    // hand-made one) a principal of another account would get the tenant of a same-named role
    // in the API's account (issue 28, L3).
    match api_account {
        Some(a) if a == account => {}
        Some(_) => {
            return Err(forbidden(format!(
                "callers of account {account} get no tenant: only principals of the API's account are tagged with {tag}"
            )))
        }
        None => {
            return Err(forbidden(format!(
                "the request context names no account for the API, so no caller gets a tenant from its {tag} tag"
            )))
        }
    }
    let tags = tags.ok_or_else(|| {
        tracing::error!("tenancy iam-principal-tag without an IAM client");
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, ErrorCode::Internal, "internal error")
    })?;
    match tags.tag(&principal, tag, Instant::now()).await {
        Ok(Some(t)) => Ok(t),
        Ok(None) => Err(forbidden(format!(
            "{arn} has no {tag} tag: an IAM administrator must tag it with its tenant"
        ))),
        Err(TagError::NoSuchPrincipal) => Err(forbidden(format!("{arn}: the principal no longer exists"))),
        Err(e @ TagError::Unavailable(_)) => {
            tracing::warn!(error = %e, principal = arn, "cannot read the principal's tenant tag");
            Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                ErrorCode::Unavailable,
                "cannot read the caller's tenant tag; try again",
            )
            .retry_after(5))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn principals_are_read_from_caller_arns() {
        let role = Principal::of_arn("arn:aws:sts::123456789012:assumed-role/payments-ci/build-42");
        assert_eq!(role, Some(("123456789012".into(), Principal::Role("payments-ci".into()))));
        let user = Principal::of_arn("arn:aws:iam::123456789012:user/teams/ops/alice");
        assert_eq!(user, Some(("123456789012".into(), Principal::User("alice".into()))));
        let gov = Principal::of_arn("arn:aws-us-gov:sts::123456789012:assumed-role/r/s");
        assert_eq!(gov.map(|p| p.1), Some(Principal::Role("r".into())));
        for bad in [
            "arn:aws:iam::123456789012:root",
            "arn:aws:sts::123456789012:federated-user/bob",
            "arn:aws:iam::123456789012:role/direct",
            "arn:aws:sts::123456789012:assumed-role/",
            "arn:aws:iam::123456789012:user/",
            "arn:aws:sts:::assumed-role/r/s",
            "not an arn",
            "",
        ] {
            assert_eq!(Principal::of_arn(bad), None, "{bad}");
        }
    }
}
