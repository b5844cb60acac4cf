//! The operations audit log through the control plane: record an execution operation, list the
//! caller's log.
//!
//! Entries ([`OpsEntry`]) live in one partition per tenant, newest first (see
//! [`sundial_store::ops`]). Definition changes write their entry in the same transaction as the
//! change ([`sundial_store::jobs::put_job_change`]); execution operations (cancel, replay,
//! trigger, backfill) write it with [`record`] right after their conditional write. Entries
//! expire after [`super::ControlSettings::ops_retention_secs`].

use super::page::{self, Page};
use super::{Caller, Control, ControlError};
use sundial_model::keys;
use sundial_model::OpsEntry;
use sundial_store::StoreError;

/// Appends an entry (for operations whose authoritative record is elsewhere, see module doc).
pub async fn record(ctl: &Control, tenant: &str, e: &OpsEntry) -> Result<(), StoreError> {
    sundial_store::ops::record(ctl.ddb(), &ctl.cfg().jobs_table, tenant, e, ctl.settings.ops_retention_secs)
        .await
}

/// Lists the caller's operations, newest first, optionally for one job.
pub async fn list(
    ctl: &Control,
    caller: &Caller,
    job_id: Option<&str>,
    limit: Option<u32>,
    cursor: Option<&str>,
) -> Result<Page<OpsEntry>, ControlError> {
    if let Some(j) = job_id {
        keys::validate_id("jobId", j).map_err(|e| ControlError::invalid(e.field, e.reason))?;
    }
    let after = match cursor {
        Some(c) => {
            let sk = page::decode("ops", c)?;
            if !keys::is_ops_sk(&sk) {
                return Err(ControlError::invalid("cursor", "not a cursor returned by this list"));
            }
            Some(sk)
        }
        None => None,
    };
    let limit = page::limit(limit, ctl.settings.max_page);
    let found = sundial_store::ops::list(
        ctl.ddb(),
        &ctl.cfg().jobs_table,
        &caller.tenant,
        job_id,
        limit,
        after.as_deref(),
    )
    .await?;
    Ok(Page { items: found.items, next: found.next.map(|sk| page::encode("ops", &sk)) })
}
