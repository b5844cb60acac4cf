//! Per-tenant limits on executions running at once (the running gate's sizes).

use std::collections::HashMap;

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
