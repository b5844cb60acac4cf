//! Per-tenant settings: limits on executions running at once (the running gate's sizes), and
//! the roles a worker assumes to act as a tenant.

use std::collections::{BTreeMap, HashMap};

/// Per-tenant limits on executions running at once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TenantLimits {
    /// The limit of tenants without their own.
    pub default: Option<u32>,
    /// Per-tenant limits.
    pub per_tenant: HashMap<String, u32>,
}

impl TenantLimits {
    /// Parses `"5"`, `"acme=10"` or `"5,acme=10,beta=2"` (empty: no limit).
    pub fn parse(spec: &str) -> Result<Self, String> {
        let mut out = TenantLimits::default();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let bad = || format!("{part:?} is not N or tenant=N with N ≥ 1");
            match part.split_once('=') {
                Some((t, v)) => {
                    let v: u32 = v.trim().parse().ok().filter(|v| *v >= 1).ok_or_else(bad)?;
                    out.per_tenant.insert(t.trim().to_string(), v);
                }
                None => out.default = Some(part.parse().ok().filter(|v| *v >= 1).ok_or_else(bad)?),
            }
        }
        Ok(out)
    }

    /// The limit of `tenant`, if any.
    pub fn of(&self, tenant: &str) -> Option<u32> {
        self.per_tenant.get(tenant).copied().or(self.default)
    }
}

/// Which role a tenant's calls are made with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TenantRoles {
    /// The stack's tenant access role, assumed with the tenant's session tag; `None`: the
    /// worker's own credentials (the local run and the tests, where the code check holds alone).
    pub shared: Option<String>,
    /// Tenants with a role of their own (usually in their own account), assumed the same way.
    pub per_tenant: BTreeMap<String, String>,
}

impl TenantRoles {
    /// The role `tenant`'s calls assume, if any.
    pub fn of(&self, tenant: &str) -> Option<&str> {
        self.per_tenant.get(tenant).or(self.shared.as_ref()).map(String::as_str)
    }

    /// Parses `SUNDIAL_TENANT_ROLES`: a JSON object from tenant to role ARN.
    pub fn parse_per_tenant(json: &str) -> Result<BTreeMap<String, String>, String> {
        let map: BTreeMap<String, String> =
            serde_json::from_str(json).map_err(|e| format!("not a tenant → role ARN map: {e}"))?;
        for (tenant, arn) in &map {
            if !is_role_arn(arn) {
                return Err(format!("tenant {tenant:?}: {arn:?} is not an IAM role ARN"));
            }
        }
        Ok(map)
    }
}

/// `arn:<partition>:iam::<12 digits>:role/<name>`.
pub fn is_role_arn(arn: &str) -> bool {
    crate::arn::Arn::parse(arn).is_some_and(|a| {
        !a.partition.is_empty()
            && a.service == "iam"
            && a.region.is_empty()
            && crate::arn::is_account(a.account)
            && a.name_after("role/").is_some_and(|n| !n.is_empty())
    })
}

#[cfg(test)]
mod role_tests {
    use super::*;

    #[test]
    fn roles_resolve_per_tenant_then_shared() {
        let roles = TenantRoles {
            shared: Some("arn:aws:iam::123456789012:role/sundial-tenant-access".into()),
            per_tenant: [("acme".to_string(), "arn:aws:iam::210987654321:role/sundial".to_string())].into(),
        };
        assert_eq!(roles.of("acme"), Some("arn:aws:iam::210987654321:role/sundial"));
        assert_eq!(roles.of("globex"), Some("arn:aws:iam::123456789012:role/sundial-tenant-access"));
        assert_eq!(TenantRoles::default().of("acme"), None);
    }

    #[test]
    fn per_tenant_roles_must_be_role_arns() {
        assert!(TenantRoles::parse_per_tenant(r#"{"acme":"arn:aws:iam::210987654321:role/sundial"}"#).is_ok());
        for bad in [
            r#"{"acme":"arn:aws:iam::21098765432:role/x"}"#,
            r#"{"acme":"arn:aws:iam::210987654321:user/x"}"#,
            r#"{"acme":"arn:aws:iam::210987654321:role/"}"#,
            r#"["acme"]"#,
        ] {
            assert!(TenantRoles::parse_per_tenant(bad).is_err(), "{bad}");
        }
    }
}
