//! # sundial-tick
//!
//! One binary, four events: the EventBridge `rate(1 minute)` scheduled event (the tick), a
//! `{"scan": {...}}` request for one shard range (what the tick fans out to, asynchronously,
//! when the shard count calls for it), and `{"reconcile": {}}` (the reconciler's own
//! schedule, on its own function in the CDK app), and `{"plan": {}}` (the provisioned-capacity
//! planner, on its own rule when the tables are provisioned). The handler only maps events to
//! [`sundial_core::trigger`] and [`sundial_core::reconcile`] calls; all logic lives there.

use aws_lambda_events::eventbridge::EventBridgeEvent;
use chrono::{DateTime, Utc};
use lambda_runtime::{Diagnostic, LambdaEvent};
use serde::Deserialize;
use serde_json::{json, Value};
use sundial_core::config::TickSettings;
use sundial_core::reconcile::{self, ReconcileError, ReconcileOptions, ReconcileReport};
use sundial_core::trigger::scan::{ScanError, ScanOptions, ScanReport, SendClock};
use sundial_core::trigger::throughput::{self, PlanReport, PlannerSettings};
use sundial_core::trigger::tick::{run_scan, run_tick, ScanRequest, TickError, TickOutcome};
use sundial_core::Ctx;
use sundial_store::throughput::ThroughputError;

/// The events this function accepts.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum TickEvent {
    /// A fanned-out scan of one shard range.
    Scan {
        /// The range and instant.
        scan: ScanRequest,
    },
    /// One reconciler run (its EventBridge rule sends `{"reconcile": {}}`).
    Reconcile {
        /// Options (none yet; an object so the payload can grow).
        reconcile: ReconcileRequest,
    },
    /// One provisioned-capacity planner run (its own EventBridge rule sends `{"plan": {}}` when
    /// the tables are provisioned).
    Plan {
        /// Options (none yet; an object so the payload can grow).
        plan: PlanRequest,
    },
    /// The per-minute EventBridge scheduled event.
    Scheduled(EventBridgeEvent<Value>),
}

/// The planner's payload.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlanRequest {}

/// The reconciler's payload.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReconcileRequest {
    /// Most executions to examine in this run (default: [`ReconcileOptions::default`]).
    #[serde(default)]
    pub max_per_run: Option<usize>,
}

/// Everything the handler needs, built once per cold start.
#[derive(Debug)]
pub struct TickService {
    /// Clients, names and queues.
    pub ctx: Ctx,
    /// Lambda client for fan-out.
    pub lambda: aws_sdk_lambda::Client,
    /// Fan-out and catch-up settings.
    pub settings: TickSettings,
    /// EventBridge client for the reconciler's `FireMissed` events (to `Config::event_bus`).
    pub events: Option<aws_sdk_eventbridge::Client>,
    /// Back-pressure thresholds (low-priority deferral; `SUNDIAL_BACKPRESSURE_*`).
    pub backpressure: sundial_model::priority::Backpressure,
    /// The control plane's pause, for the reconciler's auto-pauses (docs/outcomes.md).
    pub pause: Option<std::sync::Arc<dyn sundial_core::execution::outcome::AutoPause>>,
}

/// A failed tick, typed for Lambda's error report.
#[derive(Debug, thiserror::Error)]
pub enum HandlerError {
    /// The tick failed (EventBridge's async retry will run it again; every step is idempotent).
    #[error(transparent)]
    Tick(#[from] TickError),
    /// A scan failed.
    #[error(transparent)]
    Scan(#[from] ScanError),
    /// A reconciler run failed (the next run repeats it; every step is idempotent).
    #[error(transparent)]
    Reconcile(#[from] ReconcileError),
    /// A planner run failed (the units stay as they were; the next minute plans again).
    #[error(transparent)]
    Plan(#[from] ThroughputError),
}

impl From<HandlerError> for Diagnostic {
    fn from(e: HandlerError) -> Self {
        let retryable = match &e {
            HandlerError::Tick(TickError::Scan(s)) | HandlerError::Scan(s) => s.is_retryable(),
            HandlerError::Tick(TickError::Invoke { .. }) => true,
            HandlerError::Reconcile(r) => r.is_retryable(),
            HandlerError::Plan(p) => p.is_retryable(),
        };
        Diagnostic {
            error_type: if retryable { "Retryable".into() } else { "NonRetryable".into() },
            error_message: e.to_string(),
        }
    }
}

fn summary(r: &ScanReport) -> Value {
    json!({
        "shards": r.shards, "shardsComplete": r.shards_complete, "buckets": r.buckets,
        "created": r.created, "duplicates": r.duplicates, "sent": r.sent,
        "advanced": r.advanced, "advanceLost": r.advance_lost, "deferred": r.deferred,
        "missed": r.missed.iter().map(|((pool, policy), n)| json!({"pool": pool, "policy": policy, "fires": n})).collect::<Vec<_>>(),
    })
}

fn reconcile_summary(r: &ReconcileReport) -> Value {
    json!({
        "examined": r.examined, "resent": r.resent_total(), "lookedAgain": r.looked_again,
        "closed": r.closed, "raced": r.raced, "missing": r.missing, "failed": r.failed,
        "maxOverdueMs": r.max_overdue_ms, "truncated": r.truncated, "missed": r.missed_total(),
        "outcomeEvents": r.outcome_events,
    })
}

fn plan_summary(r: &PlanReport) -> Value {
    let tables: Vec<Value> = r
        .tables
        .iter()
        .map(|t| {
            let changes: Vec<Value> = t
                .changes
                .iter()
                .map(|(name, from, to)| json!({"name": name, "from": [from.wcu, from.rcu], "to": [to.wcu, to.rcu]}))
                .collect();
            json!({"table": t.table, "skipped": t.skipped, "changes": changes})
        })
        .collect();
    json!({"forecastFires": r.forecast.iter().map(|(_, f)| f.round()).collect::<Vec<_>>(), "tables": tables})
}

impl TickService {
    /// Handles one event at `now` (the caller's clock; a fanned-out scan never runs earlier
    /// than the tick that asked for it).
    pub async fn handle(
        &self,
        event: TickEvent,
        request_id: &str,
        now: DateTime<Utc>,
    ) -> Result<Value, HandlerError> {
        let opts = ScanOptions {
            actor: format!("tick:{request_id}"),
            // The lag metric wants the real instant of each send, not the tick's start.
            send_clock: Some(SendClock(std::sync::Arc::new(Utc::now))),
            backpressure: Some(self.backpressure),
            ..Default::default()
        };
        match event {
            TickEvent::Scan { scan } => {
                let scan = ScanRequest { now_ms: scan.now_ms.max(now.timestamp_millis()), ..scan };
                let r = run_scan(&self.ctx, &scan, &opts).await?;
                Ok(json!({"scan": summary(&r)}))
            }
            TickEvent::Reconcile { reconcile: req } => {
                let defaults = ReconcileOptions::default();
                let opts = ReconcileOptions {
                    actor: format!("reconciler:{request_id}"),
                    max_per_run: req.max_per_run.unwrap_or(defaults.max_per_run),
                    events: self.events.clone(),
                    pause: self.pause.clone(),
                    ..defaults
                };
                let r = match reconcile::reconcile(&self.ctx, now, &opts).await {
                    Ok(r) => r,
                    Err(e) => {
                        if let ReconcileError::Partial { report, .. } = &e {
                            reconcile::emit_metrics(report, now);
                        }
                        return Err(e.into());
                    }
                };
                reconcile::emit_metrics(&r, now);
                Ok(json!({"reconcile": reconcile_summary(&r)}))
            }
            TickEvent::Plan { plan: PlanRequest {} } => {
                let r = throughput::run_plan(&self.ctx, now, &PlannerSettings::default()).await?;
                Ok(json!({"plan": plan_summary(&r)}))
            }
            TickEvent::Scheduled(_) => {
                match run_tick(&self.ctx, Some(&self.lambda), &self.settings, now, &opts).await? {
                    TickOutcome::Scanned(r) => Ok(json!({"tick": summary(&r)})),
                    TickOutcome::FannedOut(n) => Ok(json!({"tick": {"fannedOut": n}})),
                }
            }
        }
    }

    /// The `lambda_runtime` entry point.
    pub async fn handle_lambda(&self, event: LambdaEvent<TickEvent>) -> Result<Value, HandlerError> {
        self.handle(event.payload, &event.context.request_id, Utc::now()).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_scheduled_and_scan_events() {
        let scheduled =
            br#"{"version":"0","id":"53dc4d37","detail-type":"Scheduled Event","source":"aws.events",
            "account":"123456789012","time":"2026-11-30T12:00:00Z","region":"us-east-1",
            "resources":["arn:aws:events:us-east-1:123456789012:rule/sundial-tick"],"detail":{}}"#;
        assert!(matches!(serde_json::from_slice::<TickEvent>(scheduled).unwrap(), TickEvent::Scheduled(_)));
        let scan = br#"{"scan":{"from":0,"to":256,"nowMs":1764504000000,"catchUpGlobal":100,"catchUpPerTenant":10}}"#;
        match serde_json::from_slice::<TickEvent>(scan).unwrap() {
            TickEvent::Scan { scan } => assert_eq!((scan.from, scan.to), (0, 256)),
            other => panic!("{other:?}"),
        }
        let rec = serde_json::from_slice::<TickEvent>(br#"{"reconcile":{}}"#).unwrap();
        assert!(matches!(rec, TickEvent::Reconcile { reconcile: ReconcileRequest { max_per_run: None } }));
        let plan = serde_json::from_slice::<TickEvent>(br#"{"plan":{}}"#).unwrap();
        assert!(matches!(plan, TickEvent::Plan { .. }));
        let rec = serde_json::from_slice::<TickEvent>(br#"{"reconcile":{"maxPerRun":5}}"#).unwrap();
        assert!(matches!(rec, TickEvent::Reconcile { reconcile: ReconcileRequest { max_per_run: Some(5) } }));
    }
}
