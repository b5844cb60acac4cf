//! The per-minute tick: decides between scanning in-process and fanning out, and emits the
//! scan's metrics.
//!
//! Fan-out splits the logical shards into contiguous ranges and invokes the scan function
//! asynchronously (`InvocationType::Event`) once per range. Ranges, not single shards, keep the
//! invoke count low (docs/performance.md, "Targets": ≤ 0.1 Lambda invocations per execution);
//! contiguous ranges of a fixed logical shard space mean adding scanners never remaps a job
//! (docs/trigger.md, "Shards").

use super::plan::CatchUpBudget;
use super::scan::{scan_shards, ScanError, ScanOptions, ScanReport};
use crate::access::{self, Role, Scope};
use crate::config::TickSettings;
use crate::metrics::Emf;
use crate::Ctx;
use aws_sdk_lambda::primitives::Blob;
use aws_sdk_lambda::types::InvocationType;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::ops::Range;
use tokio::sync::Mutex;

/// The payload the tick sends to a scan function: one shard range at one instant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScanRequest {
    /// First shard (inclusive).
    pub from: u32,
    /// Last shard (exclusive).
    pub to: u32,
    /// The tick's instant (ms), so every range scans the same minute.
    pub now_ms: i64,
    /// Catch-up budget share of this range (missed-fire executions).
    pub catch_up_global: u64,
    /// Per-tenant catch-up budget.
    pub catch_up_per_tenant: u64,
}

/// What the tick did.
#[derive(Debug)]
pub enum TickOutcome {
    /// Scanned everything itself.
    Scanned(ScanReport),
    /// Fanned out this many ranges.
    FannedOut(usize),
}

/// Splits `0..shards` into contiguous ranges of at most `per` shards.
pub fn shard_ranges(shards: u32, per: u32) -> Vec<Range<u32>> {
    let per = per.max(1);
    (0..shards.div_ceil(per)).map(|i| i * per..((i + 1) * per).min(shards)).collect()
}

/// A tick failed.
#[derive(Debug, thiserror::Error)]
pub enum TickError {
    /// The in-process scan failed.
    #[error(transparent)]
    Scan(#[from] ScanError),
    /// An asynchronous invoke of the scan function failed (the tick will be retried by
    /// EventBridge; ranges already invoked are idempotent).
    #[error("invoking scan function {function} for shards {from}..{to}: {message}")]
    Invoke {
        /// Function.
        function: String,
        /// Range start.
        from: u32,
        /// Range end.
        to: u32,
        /// What the SDK said.
        message: String,
    },
}

/// Runs one tick at `now`.
pub async fn run_tick(
    ctx: &Ctx,
    lambda: Option<&aws_sdk_lambda::Client>,
    settings: &TickSettings,
    now: DateTime<Utc>,
    opts: &ScanOptions,
) -> Result<TickOutcome, TickError> {
    let scope = Scope::new(Role::Tick, &ctx.cfg).scan_function(settings.scan_function.as_deref());
    access::scope(scope, tick(ctx, lambda, settings, now, opts)).await
}

async fn tick(
    ctx: &Ctx,
    lambda: Option<&aws_sdk_lambda::Client>,
    settings: &TickSettings,
    now: DateTime<Utc>,
    opts: &ScanOptions,
) -> Result<TickOutcome, TickError> {
    let shards = ctx.cfg.shards;
    match (&settings.scan_function, lambda) {
        (Some(function), Some(lambda)) if shards > settings.in_process_max_shards => {
            let ranges = shard_ranges(shards, settings.shards_per_scan);
            let n = ranges.len() as u64;
            for r in &ranges {
                let req = ScanRequest {
                    from: r.start,
                    to: r.end,
                    now_ms: now.timestamp_millis(),
                    catch_up_global: settings.catch_up_global.div_ceil(n),
                    catch_up_per_tenant: settings.catch_up_per_tenant,
                };
                let payload = serde_json::to_vec(&serde_json::json!({ "scan": req })).unwrap_or_default();
                lambda
                    .invoke()
                    .function_name(function)
                    .invocation_type(InvocationType::Event)
                    .payload(Blob::new(payload))
                    .send()
                    .await
                    .map_err(|e| TickError::Invoke {
                        function: function.clone(),
                        from: r.start,
                        to: r.end,
                        message: aws_sdk_lambda::error::DisplayErrorContext(e).to_string(),
                    })?;
            }
            Ok(TickOutcome::FannedOut(ranges.len()))
        }
        _ => {
            let budget =
                Mutex::new(CatchUpBudget::new(settings.catch_up_global, settings.catch_up_per_tenant));
            let report = scan_shards(ctx, 0..shards, now, &budget, opts)
                .await
                .inspect_err(|e| emit_partial(e, now))?;
            emit_metrics(&report, now);
            Ok(TickOutcome::Scanned(report))
        }
    }
}

/// Runs one fanned-out scan request.
pub async fn run_scan(ctx: &Ctx, req: &ScanRequest, opts: &ScanOptions) -> Result<ScanReport, ScanError> {
    access::scope(Scope::new(Role::Scan, &ctx.cfg), scan(ctx, req, opts)).await
}

async fn scan(ctx: &Ctx, req: &ScanRequest, opts: &ScanOptions) -> Result<ScanReport, ScanError> {
    let now = sundial_store::items::ms_to_dt(req.now_ms);
    let budget = Mutex::new(CatchUpBudget::new(req.catch_up_global, req.catch_up_per_tenant));
    let report = scan_shards(ctx, req.from..req.to.min(ctx.cfg.shards), now, &budget, opts)
        .await
        .inspect_err(|e| emit_partial(e, now))?;
    emit_metrics(&report, now);
    Ok(report)
}

/// The metrics of the shards that worked, and the count of those that failed, when a scan
/// returns [`ScanError::Shards`].
fn emit_partial(e: &ScanError, now: DateTime<Utc>) {
    if let ScanError::Shards { report, .. } = e {
        emit_metrics(report, now);
    }
}

/// EMF lines of a scan: per pool fires and lag; misfires per policy; backlog and buckets.
pub fn emit_metrics(report: &ScanReport, now: DateTime<Utc>) {
    for line in metric_lines(report) {
        line.emit(now.timestamp_millis());
    }
}

/// The EMF records of a scan (names from `resources.json` `metrics.names`).
pub fn metric_lines(report: &ScanReport) -> Vec<Emf> {
    let mut out = Vec::new();
    for (pool, lags) in &report.lag_ms {
        let late: Vec<i64> = lags.iter().map(|l| (*l).max(0)).collect();
        out.push(
            Emf::new(&[("Pool", pool)])
                .count("FiresDispatched", lags.len() as u64)
                .millis("ScheduleLagMs", &late),
        );
    }
    for (pool, n) in &report.low_deferred {
        out.push(Emf::new(&[("Pool", pool)]).count("LowPriorityDeferred", *n));
    }
    for ((pool, policy), n) in &report.missed {
        out.push(Emf::new(&[("Pool", pool)]).count("Misfires", *n));
        out.push(Emf::new(&[("Policy", policy)]).count("MisfiresByPolicy", *n));
    }
    out.push(
        Emf::new(&[])
            .count("CatchUpBacklog", report.deferred)
            .count("BucketsScanned", report.buckets)
            .count("DuplicatePutsAbsorbed", report.duplicates)
            .count("ShardsBehind", u64::from(report.shards - report.shards_complete))
            .count("ShardsFailed", u64::from(report.shards_failed))
            .count("InvalidJobs", report.invalid)
            .count("FiresVerified", report.verified)
            .count("VerifyIndexed", report.verify_tracked),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_cover_every_shard_once() {
        let r = shard_ranges(4096, 256);
        assert_eq!(r.len(), 16);
        assert_eq!(r[0], 0..256);
        assert_eq!(r[15], 3840..4096);
        let r = shard_ranges(10, 4);
        assert_eq!(r, vec![0..4, 4..8, 8..10]);
        assert_eq!(r.iter().map(|x| x.len()).sum::<usize>(), 10);
    }
}
