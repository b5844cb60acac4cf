//! Business calendars for the trigger plane: the resolved chain a job's trigger position was
//! computed with, kept per process by (tenant, chain of `id@version`).
//!
//! Calendar versions are immutable, so an entry never goes stale and needs no TTL. Cost: a
//! warm scan pays nothing per fire for a calendar it has seen; the first job of a chain it has
//! not seen costs one GetItem per chain level (a few KiB each, 1 RCU per 4 KiB). A calendar
//! edit does not invalidate anything here: it re-plans the jobs that use it
//! ([`crate::control::calendars`]), which then name the new versions.

use super::weighted::Weighted;
use std::sync::{Arc, Mutex, OnceLock};
use sundial_model::Job;
use sundial_schedule::BusinessDays;
use sundial_store::calendars::get_calendar_version;
use sundial_store::items::encode_calendar_versions;
use sundial_store::StoreError;

/// The calendar cache's default budget (bytes).
pub const DEFAULT_CALENDAR_BYTES: usize = 32 * 1024 * 1024;

type Key = (String, String);

fn cache() -> &'static Mutex<Weighted<Key, Arc<BusinessDays>>> {
    static CACHE: OnceLock<Mutex<Weighted<Key, Arc<BusinessDays>>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(Weighted::new(DEFAULT_CALENDAR_BYTES)))
}

/// Sets the cache's budget (bytes) for this process.
pub(super) fn set_byte_budget(bytes: usize) {
    if let Ok(mut c) = cache().lock() {
        c.set_budget(bytes);
    }
}

/// The resolved chain, if this process has it.
pub fn cached(tenant: &str, chain: &[(String, u64)]) -> Option<Arc<BusinessDays>> {
    let key = (tenant.to_string(), encode_calendar_versions(chain));
    cache().lock().ok().and_then(|c| c.get(&key))
}

/// Keeps a resolved chain (the control plane resolves the versions in force and keeps them, so
/// the preview and dispatch right after a change find them).
pub fn remember(tenant: &str, days: Arc<BusinessDays>) {
    let key = (tenant.to_string(), encode_calendar_versions(days.chain()));
    if let Ok(mut c) = cache().lock() {
        let bytes = days.approx_bytes() + key.0.len() + key.1.len() + 64;
        c.insert(tenant, key, days, bytes);
    }
}

/// Why a job's calendar chain could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A version the job names is not stored (or no longer valid): permanent for this job.
    #[error("calendar {id} version {version}: {reason}")]
    Missing {
        /// The calendar.
        id: String,
        /// The version.
        version: u64,
        /// Why.
        reason: String,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Makes sure the chain `job` names is in the cache (nothing to do without one).
pub async fn ensure(ddb: &aws_sdk_dynamodb::Client, table: &str, job: &Job) -> Result<(), LoadError> {
    if job.calendar_versions.is_empty() || cached(&job.tenant, &job.calendar_versions).is_some() {
        return Ok(());
    }
    let mut levels = Vec::with_capacity(job.calendar_versions.len());
    for (id, version) in &job.calendar_versions {
        let missing = |reason: String| LoadError::Missing { id: id.clone(), version: *version, reason };
        let cal = get_calendar_version(ddb, table, &job.tenant, id, *version)
            .await?
            .ok_or_else(|| missing("not stored".into()))?;
        let level = cal.spec.validate().map_err(|e| missing(e.to_string()))?;
        levels.push((id.clone(), *version, level));
    }
    let days = BusinessDays::resolve(&levels).map_err(|e| LoadError::Missing {
        id: job.calendar_versions.last().map(|c| c.0.clone()).unwrap_or_default(),
        version: job.calendar_versions.last().map(|c| c.1).unwrap_or_default(),
        reason: e.to_string(),
    })?;
    remember(&job.tenant, Arc::new(days));
    Ok(())
}
