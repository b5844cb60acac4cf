//! Outbound policy: which targets a job may name, and which addresses a webhook may reach.
//!
//! A scheduler that calls user-supplied URLs, functions and queues from inside a VPC, with its
//! own IAM role, is a confused deputy unless every call is judged first. [`TargetPolicy::check`]
//! (each kind's rules in its room, `crate::target::<kind>`; this module holds what they share)
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

use crate::arn::{is_account, Arn};
use crate::codes;
use crate::validation::ValidationError;

mod address;
mod allow;
mod notify;
mod queue_url;

pub use address::{is_public, AddressPolicy, Cidr};
pub use allow::{glob_match, TargetAllow, TenantTargets};
pub use queue_url::{parse_queue_url, QueueRef};

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
        self.region.as_deref().map_or("aws", crate::arn::partition_of)
    }
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

pub(crate) fn refuse(code: &'static str, field: impl Into<String>, reason: impl Into<String>) -> Refusal {
    Refusal { code, error: ValidationError { field: field.into(), reason: reason.into() } }
}

pub(crate) fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Refusal {
    refuse(codes::BAD_TARGET, field, reason)
}

impl TargetPolicy {
    /// The local run's and the tests' policy: loopback and plain `http://` webhooks allowed.
    pub fn dev_loopback() -> Self {
        TargetPolicy { addresses: AddressPolicy::dev_loopback(), ..TargetPolicy::default() }
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
    pub(crate) fn allowed(
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
    pub(crate) fn check_secret(&self, tenant: &str, field: &str, arn: &str) -> Result<(), Refusal> {
        check_secret_arn(field, arn)?;
        self.allowed(tenant, "secret", field, |a| a.secrets.iter().any(|g| glob_match(g, arn)))
    }
}

/// A Secrets Manager secret ARN (any partition): `arn:<partition>:secretsmanager:<region>:<account>:secret:<name>`.
fn check_secret_arn(field: &str, arn: &str) -> Result<(), Refusal> {
    let ok = arn.len() <= 2048
        && Arn::parse(arn).is_some_and(|a| {
            !a.partition.is_empty()
                && a.service == "secretsmanager"
                && !a.region.is_empty()
                && is_account(a.account)
                && a.name_after("secret:").is_some_and(|n| !n.is_empty())
        });
    if ok {
        Ok(())
    } else {
        Err(invalid(
            field,
            "must be a Secrets Manager secret ARN (arn:aws:secretsmanager:<region>:<account>:secret:<name>)",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::allow::SEGMENT_SEPARATORS;
    use super::*;
    use std::net::IpAddr;

    fn allowlist(json: &str) -> TargetPolicy {
        TargetPolicy {
            tenants: Some(TenantTargets::parse(json).unwrap_or_else(|e| panic!("{e}"))),
            ..TargetPolicy::default()
        }
    }

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
    }
}
