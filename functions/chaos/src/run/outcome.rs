//! What a run reports: the trigger's, the fleet's and the delivery faults' figures, the
//! proxy's fault counts and the checker's report, as JSON and as a summary for people.

use crate::check::{self, Report};
use serde::Serialize;
use std::collections::BTreeMap;

/// What the message thief and the reconciler did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DeliveryStats {
    /// Messages silently dropped (received and deleted unread).
    pub lost: u64,
    /// Messages moved to the pool's DLQ while their execution was open.
    pub dead_lettered: u64,
    /// Undecodable job items planted in the due index.
    pub poison_items: u64,
    /// Reconciler runs.
    pub reconcile_runs: u64,
    /// Messages the reconciler re-sent.
    pub resent: u64,
    /// Reconciler runs that failed (injected faults; the next run repeats).
    pub reconcile_failed: u64,
}

/// What the trigger side did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TickStats {
    /// Scans run (a doubled tick counts two).
    pub scans: u64,
    /// Ticks run as two concurrent scans.
    pub duplicate_ticks: u64,
    /// Scans told to crash mid-way.
    pub crashed_scans: u64,
    /// Scans that failed for another reason (injected faults beyond the SDK's retries).
    pub failed_scans: u64,
    /// Ticks not run because of the outage.
    pub skipped_in_outage: u64,
    /// Ticks that died mid-range: they scanned only the first shards.
    pub died_mid_range: u64,
    /// Executions created by the scans.
    pub created: u64,
    /// Puts absorbed by an existing execution (doubled ticks, repeated work after crashes).
    pub duplicate_puts: u64,
    /// Missed fires (late past the threshold) the scans planned.
    pub missed: u64,
    /// How long scans took (ms).
    pub scan_ms: check::Lag,
}

/// What the controller did to the workers.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FleetStats {
    /// SIGKILLs (each followed by a restart).
    pub kills: u64,
    /// SIGSTOPs past the lease (each followed by SIGCONT).
    pub pauses: u64,
    /// Worker processes started in all.
    pub starts: u64,
}

/// The outcome of a run.
#[derive(Debug, Clone, Serialize)]
pub struct RunOutcome {
    /// The seed.
    pub seed: u64,
    /// Jobs.
    pub jobs: u32,
    /// Firing phase (s).
    pub firing_secs: f64,
    /// The outage, as ms offsets from the run's first fire.
    pub outage_ms: (i64, i64),
    /// Faults the proxy injected, by kind (plus `latency`, `requests`).
    pub faults: BTreeMap<String, u64>,
    /// Trigger side.
    pub ticks: TickStats,
    /// Worker side.
    pub fleet: FleetStats,
    /// Message loss, DLQ overflow, poison items, and the reconciler.
    pub delivery: DeliveryStats,
    /// Lease takeovers the workers reported.
    pub worker_takeovers: u64,
    /// Times a worker found its clock too far off to judge leases.
    pub clock_skew_reports: u64,
    /// The checker's report.
    #[serde(skip)]
    pub report: Report,
    /// The checker's violations (empty = promise kept).
    pub violations: Vec<String>,
    /// Wall time of the whole run (s).
    pub wall_secs: f64,
}

impl RunOutcome {
    /// The outcome as JSON (the checker's lists reduced to counts).
    pub fn to_json(&self) -> serde_json::Value {
        let r = &self.report;
        let lag = |l: &check::Lag| serde_json::json!({"n": l.count, "minMs": l.min_ms, "p50Ms": l.p50_ms, "p99Ms": l.p99_ms, "maxMs": l.max_ms});
        let mut v = serde_json::to_value(self).unwrap_or_default();
        v["report"] = serde_json::json!({
            "firesExpected": r.fires_expected,
            "executions": r.executions,
            "lost": r.missing.len(),
            "unscheduled": r.unexpected.len(),
            "notFinal": r.not_final.len(),
            "byStatus": r.by_status,
            "doubledEffects": r.doubled_effects.len(),
            "effectsApplied": r.effects_applied,
            "duplicatesAbsorbed": r.duplicates_absorbed,
            "staleAccepted": r.stale_accepted.len(),
            "staleRefusedResource": r.stale_refused_resource,
            "staleRefusedStore": r.stale_refused_store,
            "takeovers": r.takeovers,
            "lagBeforeOutage": lag(&r.lag_before_outage),
            "lagAfterOutage": lag(&r.lag_after_outage),
            "ranDuringOutage": r.ran_during_outage,
            "lagBacklog": lag(&r.lag_backlog),
            "lagSteadyAfter": lag(&r.lag_steady_after),
            "createdLagBeforeOutage": lag(&r.created_lag_before_outage),
        });
        v
    }

    /// A human-readable summary.
    pub fn summary(&self) -> String {
        let mut s = String::new();
        s += &format!(
            "chaos run seed {} — {} jobs, {:.0} s of firing, outage {:.0} s, wall {:.0} s\n",
            self.seed,
            self.jobs,
            self.firing_secs,
            (self.outage_ms.1 - self.outage_ms.0) as f64 / 1000.0,
            self.wall_secs
        );
        s += &self.checker_lines();
        s += &self.fault_lines();
        s += &self.lag_lines();
        if self.violations.is_empty() {
            s += "PROMISE KEPT: no violations\n";
        } else {
            for v in &self.violations {
                s += &format!("VIOLATION: {v}\n");
            }
        }
        s
    }

    /// The summary's lines on what the checker counted: fires, effects, stale writes.
    fn checker_lines(&self) -> String {
        let r = &self.report;
        let mut s = String::new();
        s += &format!(
            "fires expected {:>6}   executions {:>6}   lost {}   unscheduled {}   not final {}\n",
            r.fires_expected,
            r.executions,
            r.missing.len(),
            r.unexpected.len(),
            r.not_final.len()
        );
        s += &format!("by status {:?}\n", r.by_status);
        s += &format!(
            "effects applied {}   doubled {}   duplicates absorbed {}   succeeded without effect {}\n",
            r.effects_applied,
            r.doubled_effects.len(),
            r.duplicates_absorbed,
            r.succeeded_without_effect.len()
        );
        s += &format!(
            "stale writes accepted {}   refused: resource {} + execution store {}\n",
            r.stale_accepted.len(),
            r.stale_refused_resource,
            r.stale_refused_store
        );
        s += &format!(
            "takeovers (timelines) {}   clock-skew distrust reports {}\n",
            r.takeovers, self.clock_skew_reports
        );
        s
    }

    /// The summary's lines on the faults injected: the proxy's, the ticks', the deliveries',
    /// the workers'.
    fn fault_lines(&self) -> String {
        let f = |k: &str| self.faults.get(k).copied().unwrap_or(0);
        let mut s = String::new();
        s += &format!(
            "faults: requests {}  latency {}  500 {}  503 {}  ddb-throughput {}  ddb-throttling {}  sqs-throttled {}  reset {}  applied-then-dropped {}\n",
            f("requests"),
            f("latency"),
            f("http_500"),
            f("http_503"),
            f("ddb_provisioned_throughput_exceeded"),
            f("ddb_throttling"),
            f("sqs_request_throttled"),
            f("reset_before_forward"),
            f("applied_then_dropped")
        );
        s += &format!(
            "ticks: scans {}  doubled {}  crashed {}  failed {}  skipped in outage {}  created {}  duplicate puts {}  missed {}\n",
            self.ticks.scans,
            self.ticks.duplicate_ticks,
            self.ticks.crashed_scans,
            self.ticks.failed_scans,
            self.ticks.skipped_in_outage,
            self.ticks.created,
            self.ticks.duplicate_puts,
            self.ticks.missed
        );
        let d = &self.delivery;
        s += &format!(
            "delivery faults: messages lost {}  moved to the DLQ {}  poison job items {}  ticks died mid-range {}   reconciler: runs {} re-sent {} failed runs {}\n",
            d.lost, d.dead_lettered, d.poison_items, self.ticks.died_mid_range, d.reconcile_runs, d.resent, d.reconcile_failed
        );
        s += &format!(
            "workers: kills {}  pauses past lease {}  processes started {}\n",
            self.fleet.kills, self.fleet.pauses, self.fleet.starts
        );
        s
    }

    /// The summary's lines on scan durations and start lags around the outage.
    fn lag_lines(&self) -> String {
        let r = &self.report;
        let mut s = String::new();
        let line = |name: &str, l: &check::Lag| {
            format!(
                "{name}: n {} min {} p50 {} p99 {} max {} ms\n",
                l.count, l.min_ms, l.p50_ms, l.p99_ms, l.max_ms
            )
        };
        s += &line("scan duration", &self.ticks.scan_ms);
        s += &line("created − scheduled before outage", &r.created_lag_before_outage);
        s += &line("start lag before outage", &r.lag_before_outage);
        s += &line("start lag after outage end", &r.lag_after_outage);
        s += &line("  of which the backlog (scheduled in the outage)", &r.lag_backlog);
        s += &line("  of which fires scheduled after the outage", &r.lag_steady_after);
        s += &format!("fires in the outage that ran during it (queued ahead): {}\n", r.ran_during_outage);
        s
    }
}
