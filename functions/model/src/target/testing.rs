//! What the kinds' tests share: a policy from an allowlist, and the refusal a target meets.

use crate::deployment::Deployment;
use crate::outbound::{TargetPolicy, TenantTargets};
use crate::target::Target;

/// The code and field `tenant`'s `target` is refused with, if it is.
pub(crate) fn refusal(
    policy: &TargetPolicy,
    tenant: &str,
    target: &Target,
) -> Option<(&'static str, String)> {
    let pools = vec!["default".to_string()];
    let cfg = Deployment { pools: &pools, shards: 16, queue_prefix: "t-sundial-", targets: policy };
    policy.check(cfg, tenant, target).err().map(|r| (r.code, r.error.field))
}

/// A policy with `json`'s per-tenant allowlists.
pub(crate) fn allowlist(json: &str) -> TargetPolicy {
    TargetPolicy {
        tenants: Some(TenantTargets::parse(json).unwrap_or_else(|e| panic!("{e}"))),
        ..TargetPolicy::default()
    }
}

/// An expected refusal: `code` on `field`.
pub(crate) fn field(f: &str, code: &'static str) -> Option<(&'static str, String)> {
    Some((code, f.to_string()))
}
