//! Before a claim: hold an early delivery briefly, then ask the job's concurrency policy, the
//! tenant's running limit and the job's resource limits whether this execution may start now.
//!
//! Only an execution this worker would claim is admitted (READY/RETRY_WAIT once available, or an
//! expired lease): asking the policy for anything else would take a slot for nothing.

use super::attempt::{Exit, Holds};
use super::{secs_ceil, Delivery, Disposition, Worker};
use crate::execution::claim::{next_step, Step};
use crate::execution::metrics::ExecMetrics;
use crate::execution::policy::{Admission, Seat};
use crate::execution::resource_limits::Acquired;
use crate::model::ExecStatus;
use crate::schedule::Schedule;
use crate::store::error::StoreError;
use crate::store::executions::Snapshot;
use crate::store::jobs;
use crate::trigger::follow::{at_claim, Follow};
use chrono::{DateTime, Utc};
use std::time::Duration;

/// What admission decided.
pub(super) enum Gate {
    /// Try to claim `snapshot` (as read; `None` = not found, the claim reads again) at `now`.
    Claim { snapshot: Box<Option<Snapshot>>, now: DateTime<Utc>, holds: Holds },
    /// Nothing to claim now.
    Done(Disposition),
}

impl Worker {
    pub(super) async fn admit(&self, d: &Delivery<'_>, m: &mut ExecMetrics) -> Result<Gate, StoreError> {
        let key = &d.key;
        let snapshot = self.store.get(key, false).await?;
        let mut now = self.clock.now();
        let claimable =
            |s: &Snapshot, now: DateTime<Utc>| next_step(&s.exec, &self.terms(), now.timestamp_millis());
        // Early delivery (SQS delays are whole seconds, rounded down): hold briefly, then claim.
        if let Some(s) = &snapshot {
            if let Step::NotYet(at) = claimable(s, now) {
                let wait = at - now.timestamp_millis();
                if wait <= self.settings.early_hold_ms {
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_millis(wait.max(0) as u64)) => {}
                        _ = d.stop.cancelled() => return Ok(Gate::Done(Disposition::RetryAfter(0))),
                    }
                    now = self.clock.now();
                }
            }
        }
        // Due and READY: held by a pause, or (first claim of a scheduled execution) put by a scan
        // that read the job before a pause or an edit and escaped the API's sweep (`at_claim`).
        // Never a child (docs/children.md): its parent was checked at its own claim, and a
        // child's definition differs from the job's on purpose (ALLOW, no start deadline).
        let mut snapshot = snapshot;
        if let Some(s) = snapshot.as_ref().filter(|s| {
            s.exec.status == ExecStatus::Ready
                && s.exec.child.is_none()
                && (s.held.is_some() || s.exec.attempt == 0)
                && matches!(claimable(s, now), Step::Claim { .. })
        }) {
            // A hold says all there is to say: no job read.
            let job = match s.held {
                Some(_) => None,
                None => jobs::get_job(self.store.client(), &self.cfg, &key.tenant, &key.job_id).await?,
            };
            let schedule = job.as_ref().and_then(|j| Schedule::parse(&j.definition.schedule, j.anchor).ok());
            let actor = self.actor();
            let now_ms = now.timestamp_millis();
            match at_claim(job.as_ref(), schedule.as_ref(), s) {
                Follow::Cancel(code) => {
                    if self.store.cancel_ready(&s.exec, code, &actor, now_ms).await? {
                        m.outcome = Some(ExecStatus::Canceled);
                        tracing::info!(execution = %key.id(), code, "canceled before its claim: the job was paused or changed at its instant");
                    }
                    return Ok(Gate::Done(Disposition::Delete));
                }
                Follow::Amend => {
                    if let Some(j) = &job {
                        self.store.amend(&s.exec, &j.definition, j.version, &actor, now_ms).await?;
                        snapshot = self.store.get(key, true).await?;
                    }
                }
                Follow::Keep | Follow::Hold | Follow::Release => {}
            }
        }
        let Some(s) = snapshot.as_ref().filter(|s| matches!(claimable(s, now), Step::Claim { .. })) else {
            return Ok(Gate::Claim {
                snapshot: Box::new(snapshot),
                now,
                holds: Holds::new(key.clone(), None),
            });
        };
        let actor = self.actor();
        match self.slots.admit(&s.exec, &actor, now).await? {
            Admission::Admit => {}
            Admission::Skip { reason } => {
                if self.store.skip(key, &s.exec, &actor, &reason, now).await? {
                    m.outcome = Some(ExecStatus::Skipped);
                    tracing::info!(execution = %key.id(), reason, "skipped");
                }
                return Ok(Gate::Done(Disposition::Delete));
            }
            Admission::Wait { until_ms, reason } => {
                tracing::debug!(execution = %key.id(), reason, "policy wait");
                let secs = secs_ceil(until_ms - now.timestamp_millis()).max(1);
                return Ok(Gate::Done(self.wait(d, secs).await));
            }
        }
        let now_ms = now.timestamp_millis();
        let lease_until = now_ms + self.settings.lease_ms;
        let shard = match self.settings.tenant_limits.of(&key.tenant) {
            None => None,
            Some(limit) => match self
                .tenants
                .acquire(key, limit, lease_until, self.settings.skew_margin_ms, now_ms)
                .await?
            {
                Seat::Admitted { shard } => Some(shard),
                Seat::Full { retry_at } => {
                    return Ok(Gate::Done(self.wait(d, secs_ceil(retry_at - now_ms).max(1)).await));
                }
            },
        };
        let holds = Holds::new(key.clone(), shard);
        let names = &s.exec.definition.resources;
        if names.is_empty() {
            return Ok(Gate::Claim { snapshot: Box::new(snapshot), now, holds });
        }
        let margin = self.settings.skew_margin_ms;
        let got = self
            .resources
            .acquire_all(names, &key.global_id(), lease_until, margin, now_ms, &mut m.resources)
            .await;
        match got {
            Ok(Acquired::All(held)) => {
                // The claim is stamped after the gates, so a run's recorded start never precedes
                // the unit it holds.
                let now = self.clock.now();
                Ok(Gate::Claim { snapshot: Box::new(snapshot), now, holds: holds.with_resources(held) })
            }
            Ok(Acquired::Wait { resource, retry_at, undefined }) => {
                holds.end(self, Exit::NotClaimed { canceled: false }).await?;
                if undefined {
                    tracing::warn!(execution = %key.id(), resource, "the job uses a resource with no limit defined; waiting until an operator defines it");
                } else {
                    tracing::debug!(execution = %key.id(), resource, "resource wait");
                }
                Ok(Gate::Done(self.wait(d, secs_ceil(retry_at - now_ms).max(1)).await))
            }
            Err(e) => {
                holds.end(self, Exit::NotClaimed { canceled: false }).await?;
                Err(e)
            }
        }
    }
}
