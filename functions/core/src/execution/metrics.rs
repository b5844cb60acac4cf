//! Execution-plane metrics as CloudWatch EMF lines (namespace `Sundial`, dimension `Pool`).
//!
//! One line per handled message, so a busy worker logs once per execution rather than once per
//! metric. The names are the CDK dashboard's (`infra/`): change them together. As
//! docs/execution.md §9 says: queue wait tells whether capacity is short, start lag whether
//! executions start on time, takeovers and stale-token rejections whether leases are tuned right.

use crate::metrics::Emf;
use std::fmt::Debug;
use std::sync::Mutex;
use sundial_model::ExecStatus;

/// Metric names (the dashboard's).
pub mod names {
    #![allow(missing_docs)]
    pub const QUEUE_WAIT_MS: &str = "QueueWaitMs";
    pub const START_LAG_MS: &str = "StartLagMs";
    pub const DURATION_MS: &str = "DurationMs";
    pub const SUCCEEDED: &str = "ExecutionsSucceeded";
    pub const FAILED: &str = "ExecutionsFailed";
    pub const DEAD: &str = "ExecutionsDead";
    pub const CANCELED: &str = "ExecutionsCanceled";
    pub const SKIPPED: &str = "ExecutionsSkipped";
    pub const RETRIES: &str = "Retries";
    pub const LEASE_TAKEOVERS: &str = "LeaseTakeovers";
    pub const STALE_TOKEN_REJECTIONS: &str = "StaleTokenRejections";
    pub const CLOCK_SKEW_EXCEEDED: &str = "ClockSkewExceeded";
    pub const FIRES_MISSED: &str = "FiresMissed";
    /// Per resource (dimension `Resource`): executions that had to wait for it.
    pub const RESOURCE_WAITS: &str = "ResourceWaits";
    /// Per resource: holders right after a join (Maximum shows how close it runs to its limit).
    pub const RESOURCE_HOLDERS: &str = "ResourceHolders";
    /// Per resource: waits because no limit is defined for it (a job names a deleted limit).
    pub const RESOURCE_UNDEFINED: &str = "ResourceUndefined";
}

/// What one handled message contributes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecMetrics {
    /// The pool (the only dimension).
    pub pool: String,
    /// The execution (logged next to the line, never a dimension).
    pub execution_id: String,
    /// Claim − max(enqueue, fire): time spent deliverable but unclaimed.
    pub queue_wait_ms: Option<i64>,
    /// Claim − scheduled instant, for first attempts only (a retry's lag is its backoff).
    pub start_lag_ms: Option<i64>,
    /// Run time of this attempt.
    pub duration_ms: Option<i64>,
    /// The status this worker recorded, if it finished the execution.
    pub outcome: Option<ExecStatus>,
    /// 1 if this attempt ended in RETRY_WAIT.
    pub retries: u64,
    /// 1 if the claim took over an expired lease.
    pub takeovers: u64,
    /// Writes refused because the token was stale (finish, checkpoint, heartbeat).
    pub stale_rejections: u64,
    /// 1 if this worker's clock was too far from the service's to judge leases.
    pub clock_skew: u64,
    /// 1 if this worker started the execution past its start deadline and reported the miss
    /// (no reconciler had).
    pub fires_missed: u64,
    /// What each resource the execution uses saw (waits, holders): one EMF line per resource,
    /// dimension `Resource` ([`ExecMetrics::resource_emfs`]).
    pub resources: Vec<crate::execution::resource_limits::ResourceUse>,
}

impl ExecMetrics {
    /// Whether there is anything to report.
    pub fn is_empty(&self) -> bool {
        self.queue_wait_ms.is_none()
            && self.start_lag_ms.is_none()
            && self.duration_ms.is_none()
            && self.outcome.is_none()
            && self.retries == 0
            && self.takeovers == 0
            && self.stale_rejections == 0
            && self.clock_skew == 0
            && self.fires_missed == 0
            && self.resources.is_empty()
    }

    /// The EMF record.
    pub fn to_emf(&self) -> Emf {
        // The execution id is a property, not a dimension: searchable in the logs, no metric per
        // execution.
        let mut e =
            Emf::new(&[("Pool", self.pool.as_str())]).property("executionId", self.execution_id.as_str());
        for (name, v) in [
            (names::QUEUE_WAIT_MS, self.queue_wait_ms),
            (names::START_LAG_MS, self.start_lag_ms),
            (names::DURATION_MS, self.duration_ms),
        ] {
            if let Some(v) = v {
                e = e.millis(name, &[v]);
            }
        }
        let outcome = match self.outcome {
            Some(ExecStatus::Succeeded) => Some(names::SUCCEEDED),
            Some(ExecStatus::Failed) => Some(names::FAILED),
            Some(ExecStatus::Dead) => Some(names::DEAD),
            Some(ExecStatus::Canceled) => Some(names::CANCELED),
            Some(ExecStatus::Skipped) => Some(names::SKIPPED),
            _ => None,
        };
        if let Some(name) = outcome {
            e = e.count(name, 1);
        }
        for (name, v) in [
            (names::RETRIES, self.retries),
            (names::LEASE_TAKEOVERS, self.takeovers),
            (names::STALE_TOKEN_REJECTIONS, self.stale_rejections),
            (names::CLOCK_SKEW_EXCEEDED, self.clock_skew),
            (names::FIRES_MISSED, self.fires_missed),
        ] {
            if v > 0 {
                e = e.count(name, v);
            }
        }
        e
    }
}

impl ExecMetrics {
    /// One EMF record per resource looked at, dimension `Resource` only: a resource is shared
    /// by every pool, so its figures are platform-wide.
    pub fn resource_emfs(&self) -> Vec<Emf> {
        self.resources
            .iter()
            .map(|u| {
                let mut e = Emf::new(&[("Resource", u.resource.as_str())])
                    .property("executionId", self.execution_id.as_str());
                if u.waits > 0 {
                    e = e.count(names::RESOURCE_WAITS, u.waits);
                }
                if u.undefined > 0 {
                    e = e.count(names::RESOURCE_UNDEFINED, u.undefined);
                }
                if let Some(h) = u.holders {
                    e = e.count(names::RESOURCE_HOLDERS, h);
                }
                e
            })
            .collect()
    }
}

/// Where metrics go.
pub trait MetricsSink: Send + Sync + Debug {
    /// Records one message's metrics at `now_ms`.
    fn record(&self, m: &ExecMetrics, now_ms: i64);
}

/// Prints EMF lines to stdout (Lambda and ECS `awslogs` ship them to CloudWatch Logs).
#[derive(Debug, Clone, Copy, Default)]
pub struct EmfStdout;

impl MetricsSink for EmfStdout {
    fn record(&self, m: &ExecMetrics, now_ms: i64) {
        if !m.is_empty() {
            m.to_emf().emit(now_ms);
        }
        for e in m.resource_emfs() {
            e.emit(now_ms);
        }
    }
}

/// Keeps records in memory (tests, benchmarks) as well as forwarding nothing.
#[derive(Debug, Default)]
pub struct MemorySink {
    records: Mutex<Vec<ExecMetrics>>,
}

impl MemorySink {
    /// Everything recorded so far.
    pub fn records(&self) -> Vec<ExecMetrics> {
        self.records.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

impl MetricsSink for MemorySink {
    fn record(&self, m: &ExecMetrics, _now_ms: i64) {
        if let Ok(mut r) = self.records.lock() {
            r.push(m.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_successful_first_attempt_renders_the_dashboard_names() {
        let m = ExecMetrics {
            pool: "default".into(),
            execution_id: "j@1".into(),
            queue_wait_ms: Some(12),
            start_lag_ms: Some(340),
            duration_ms: Some(80),
            outcome: Some(ExecStatus::Succeeded),
            ..Default::default()
        };
        let v: serde_json::Value = serde_json::from_str(&m.to_emf().lines(1)[0]).unwrap_or_default();
        assert_eq!(v["_aws"]["CloudWatchMetrics"][0]["Namespace"], "Sundial");
        assert_eq!(v["Pool"], "default");
        assert_eq!(v["StartLagMs"][0], 340);
        assert_eq!(v["QueueWaitMs"][0], 12);
        assert_eq!(v["DurationMs"][0], 80);
        assert_eq!(v["ExecutionsSucceeded"], 1);
        assert!(v.get("Retries").is_none());
        // the execution id is on the line as a property, never a dimension
        assert_eq!(v["executionId"], "j@1");
        assert_eq!(v["_aws"]["CloudWatchMetrics"][0]["Dimensions"], serde_json::json!([["Pool"]]));
    }

    #[test]
    fn resource_figures_go_on_their_own_lines_with_the_resource_dimension() {
        use crate::execution::resource_limits::ResourceUse;
        let m = ExecMetrics {
            pool: "p".into(),
            execution_id: "acme:j@1".into(),
            resources: vec![
                ResourceUse { resource: "a-db".into(), holders: Some(3), ..Default::default() },
                ResourceUse { resource: "b-db".into(), waits: 1, ..Default::default() },
            ],
            ..Default::default()
        };
        assert!(!m.is_empty());
        let lines: Vec<serde_json::Value> = m
            .resource_emfs()
            .iter()
            .map(|e| serde_json::from_str(&e.lines(1)[0]).unwrap_or_default())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["_aws"]["CloudWatchMetrics"][0]["Dimensions"], serde_json::json!([["Resource"]]));
        assert_eq!((&lines[0]["Resource"], &lines[0]["ResourceHolders"]), (&"a-db".into(), &3.into()));
        assert!(lines[0].get("ResourceWaits").is_none());
        assert_eq!((&lines[1]["Resource"], &lines[1]["ResourceWaits"]), (&"b-db".into(), &1.into()));
        assert_eq!(lines[1]["executionId"], "acme:j@1");
    }

    #[test]
    fn a_rejected_zombie_reports_only_the_rejection() {
        let m = ExecMetrics { pool: "p".into(), stale_rejections: 2, ..Default::default() };
        let v: serde_json::Value = serde_json::from_str(&m.to_emf().lines(1)[0]).unwrap_or_default();
        assert_eq!(v["StaleTokenRejections"], 2);
        assert!(v.get("ExecutionsSucceeded").is_none());
    }
}
