//! What a target kind's check is judged against: the deployment's policy and names, and the
//! tenant whose job names the target.

use crate::deployment::Deployment;
use crate::outbound::{glob_match, Refusal, TargetAllow, TargetPolicy};

/// The policy as one tenant's target meets it.
#[derive(Debug, Clone, Copy)]
pub struct PolicyView<'a> {
    /// The deployment's outbound policy (addresses, allowlists, its own functions).
    pub policy: &'a TargetPolicy,
    /// The deployment (its own queues, which no job may target).
    pub deployment: Deployment<'a>,
    /// The tenant whose job names the target.
    pub tenant: &'a str,
}

impl PolicyView<'_> {
    /// Whether `value` matches one of the tenant's `globs` of `kind` (always, when no
    /// allowlists are set); the refusal names `field` and the rule, never whether the resource
    /// exists or whose it is.
    pub fn listed(
        &self,
        kind: &str,
        field: &str,
        value: &str,
        globs: fn(&TargetAllow) -> &Vec<String>,
    ) -> Result<(), Refusal> {
        self.policy.allowed(self.tenant, kind, field, |a| globs(a).iter().any(|g| glob_match(g, value)))
    }

    /// Whether the tenant's allowlist has an entry of `kind` that `matches`.
    pub fn allowed(
        &self,
        kind: &str,
        field: &str,
        matches: impl Fn(&TargetAllow) -> bool,
    ) -> Result<(), Refusal> {
        self.policy.allowed(self.tenant, kind, field, matches)
    }

    /// A secret's ARN syntax, then the tenant's `secrets` globs (judged on the text alone).
    pub fn check_secret(&self, field: &str, arn: &str) -> Result<(), Refusal> {
        self.policy.check_secret(self.tenant, field, arn)
    }
}
