//! Resource limits for the API (`docs/resources.md`).
//!
//! A limit spans every tenant (at most 20 runs on the legacy database, whoever's jobs they
//! are), so no tenant may set one: only callers whose tenant is one of the deployment's
//! **operator tenants** (`SUNDIAL_OPERATOR_TENANTS`, CDK prop `operatorTenants`) may put or
//! delete a limit. Every tenant may read them (a job must name one to use it) and its share of
//! each (`perTenant`, default half the limit rounded up: no tenant holds every unit); how many
//! executions hold each, which ones (other tenants' ids) and who set the limit only an operator
//! sees (a count of holders would show other tenants' activity).
//!
//! A job's `resources` must name defined limits when it is created or edited (400
//! `resources[i]` otherwise): a typo would otherwise leave its executions waiting for a limit
//! nobody defines. A limit deleted later makes them wait (fail closed, `ResourceUndefined`).

use super::{Caller, Control, ControlError};
use crate::execution::resource_limits::ResourceGates;
use chrono::{DateTime, Utc};
use sundial_model::keys;
use sundial_model::JobDefinition;
use sundial_store::resource_limits::{self as store, ResourceLimit, MAX_RESOURCE_LIMIT};

/// A limit with who holds it now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceView {
    /// The stored limit.
    pub limit: ResourceLimit,
    /// Live holders: global execution id and lease end (ms); read for operators only (empty
    /// for other callers).
    pub holders: Vec<(String, i64)>,
    /// Whether the caller is an operator (sees holder ids and who set the limit).
    pub operator: bool,
}

/// Whether `caller` is a platform operator.
pub fn is_operator(ctl: &Control, caller: &Caller) -> bool {
    ctl.settings.operator_tenants.contains(&caller.tenant)
}

fn require_operator(ctl: &Control, caller: &Caller) -> Result<(), ControlError> {
    if is_operator(ctl, caller) {
        return Ok(());
    }
    Err(ControlError::Forbidden {
        message: "resource limits span every tenant: only callers of an operator tenant (SUNDIAL_OPERATOR_TENANTS) may change them".into(),
    })
}

fn name_ok(name: &str) -> Result<(), ControlError> {
    keys::validate_id("resource", name).map_err(|e| ControlError::invalid("resource", e.reason))
}

fn gates(ctl: &Control) -> ResourceGates {
    let cfg = ctl.cfg();
    ResourceGates::new(ctl.ctx.ddb.clone(), cfg.jobs_table.clone(), cfg.executions_table.clone())
}

/// Sets (or creates) the limit of `name` to `limit` (0..=[`MAX_RESOURCE_LIMIT`]; 0 holds every
/// execution that uses it), and one tenant's share of it to `per_tenant` (1..=`limit`; `None`:
/// [`store::default_per_tenant`]). Operators only. True in the second place when it was created.
pub async fn put(
    ctl: &Control,
    caller: &Caller,
    name: &str,
    limit: i64,
    per_tenant: Option<i64>,
    now: DateTime<Utc>,
) -> Result<(ResourceLimit, bool), ControlError> {
    require_operator(ctl, caller)?;
    name_ok(name)?;
    let limit = u32::try_from(limit).ok().filter(|l| *l <= MAX_RESOURCE_LIMIT).ok_or_else(|| {
        ControlError::invalid("limit", format!("must be an integer between 0 and {MAX_RESOURCE_LIMIT}"))
    })?;
    let per_tenant = per_tenant
        .map(|p| {
            u32::try_from(p).ok().filter(|p| (1..=limit).contains(p)).ok_or_else(|| {
                ControlError::invalid(
                    "perTenant",
                    format!("must be an integer between 1 and the limit ({limit})"),
                )
            })
        })
        .transpose()?;
    let stored = store::put_limit_shared(
        &ctl.ctx.ddb,
        &ctl.cfg().jobs_table,
        name,
        limit,
        per_tenant,
        &caller.actor(),
        now,
    )
    .await?;
    let created = stored.version == 1;
    Ok((stored, created))
}

/// Deletes the limit of `name`. Operators only. Executions of jobs still naming it then wait
/// until it is defined again.
pub async fn delete(ctl: &Control, caller: &Caller, name: &str) -> Result<(), ControlError> {
    require_operator(ctl, caller)?;
    name_ok(name)?;
    if !store::delete_limit(&ctl.ctx.ddb, &ctl.cfg().jobs_table, name).await? {
        return Err(ControlError::NotFound { what: "resource" });
    }
    Ok(())
}

/// One limit with its live holders.
pub async fn get(
    ctl: &Control,
    caller: &Caller,
    name: &str,
    now: DateTime<Utc>,
) -> Result<ResourceView, ControlError> {
    name_ok(name)?;
    let limit = store::get_limit(&ctl.ctx.ddb, &ctl.cfg().jobs_table, name, true)
        .await?
        .ok_or(ControlError::NotFound { what: "resource" })?;
    let operator = is_operator(ctl, caller);
    // Only operators see holders (their count too): other callers' reads skip the gate.
    let holders = if operator {
        gates(ctl).holders(name, limit.limit, now.timestamp_millis()).await?
    } else {
        Vec::new()
    };
    Ok(ResourceView { limit, holders, operator })
}

/// Every limit (without holders: one read per limit would make the listing cost grow with
/// the platform; `get` one to see them).
pub async fn list(ctl: &Control) -> Result<Vec<ResourceLimit>, ControlError> {
    Ok(store::list_limits(&ctl.ctx.ddb, &ctl.cfg().jobs_table).await?)
}

/// Checks that every resource `def` names has a limit (create and edit): 400 on
/// `resources[i]` for the first that has none.
pub async fn check_declared(ctl: &Control, def: &JobDefinition) -> Result<(), ControlError> {
    for (i, r) in def.resources.iter().enumerate() {
        if store::get_limit(&ctl.ctx.ddb, &ctl.cfg().jobs_table, r, false).await?.is_none() {
            return Err(ControlError::invalid(
                format!("resources[{i}]"),
                format!("no resource limit named {r:?} is defined (an operator defines it: PUT /v1/resources/{r})"),
            ));
        }
    }
    Ok(())
}
