//! Before a claim: hold an early delivery briefly, then ask the job's concurrency policy, the
//! tenant's running limit and the job's resource limits whether this execution may start now.
//!
//! Only an execution this worker would claim is admitted (READY/RETRY_WAIT once available, or an
//! expired lease): asking the policy for anything else would take a slot for nothing.

use super::attempt::{Exit, Holds};
use super::dependencies::Deps;
use super::{secs_ceil, Delivery, Disposition, Worker};
use crate::execution::follow::{at_claim_covered, Follow};
use crate::execution::metrics::ExecMetrics;
use crate::execution::policy::{Admission, Seat};
use crate::execution::resource_limits::Acquired;
use chrono::{DateTime, Utc};
use std::ops::ControlFlow;
use std::time::Duration;
use sundial_model::claim::{next_step, Step};
use sundial_model::reconcile::stale_copy;
use sundial_model::ExecStatus;
use sundial_store::error::StoreError;
use sundial_store::executions::{ClaimOutcome, Snapshot};
use sundial_store::jobs;

/// What admission decided.
pub(super) enum Gate {
    /// Try to claim `snapshot` (as read; `None` = not found, the claim reads again) at `now`;
    /// `doomed`: only to end it DEAD (`DependencyNotMet`, this account) without a run.
    Claim { snapshot: Box<Option<Snapshot>>, now: DateTime<Utc>, holds: Holds, doomed: Option<String> },
    /// Nothing to claim now.
    Done(Disposition),
}

/// A phase's answer: go on with the value, or stop with this gate.
type Phase<T> = Result<ControlFlow<Gate, T>, StoreError>;

impl Worker {
    /// Admits one delivery: holds an early one, lets a paused or edited job have its say, then
    /// asks the concurrency policy, the tenant's running limit and the resource limits.
    pub(super) async fn admit(&self, d: &Delivery<'_>, m: &mut ExecMetrics) -> Result<Gate, StoreError> {
        let snapshot = self.store.get(&d.key, false).await?;
        if let Some(s) = snapshot.as_ref().filter(|s| stale_copy(d.msg.wait_gen, s.wait_gen_sent)) {
            tracing::debug!(execution = %d.key.id(), copy = d.msg.wait_gen, current = s.wait_gen_sent, "a stale copy of a waiting execution: dropped");
            return Ok(Gate::Done(Disposition::Delete));
        }
        let now = match self.hold_early(d, snapshot.as_ref()).await {
            ControlFlow::Continue(now) => now,
            ControlFlow::Break(gate) => return Ok(gate),
        };
        let snapshot = match self.follow_job(d, snapshot, now, m).await? {
            ControlFlow::Continue(snapshot) => snapshot,
            ControlFlow::Break(gate) => return Ok(gate),
        };
        let admission = self.admission_id();
        let Some(s) = snapshot.as_ref().filter(|s| self.claimable(s, now) && !self.too_old(d, s, now)) else {
            // Not for this worker to gate, or past its age: the claim ends it DEAD
            // (`MaxAgeExceeded`) instead of letting it wait forever.
            return Ok(Gate::Claim {
                snapshot: Box::new(snapshot),
                now,
                holds: Holds::new(d.key.clone(), admission, None),
                doomed: None,
            });
        };
        // Upstream runs first (docs/dependencies.md): a waiting fire takes no slot or seat.
        match self.dependencies(d, s, now, m).await? {
            ControlFlow::Break(disposition) => return Ok(Gate::Done(disposition)),
            ControlFlow::Continue(Deps::Met) => {}
            ControlFlow::Continue(Deps::Fail(why)) => {
                return Ok(Gate::Claim {
                    snapshot: Box::new(snapshot),
                    now,
                    holds: Holds::new(d.key.clone(), admission, None),
                    doomed: Some(why),
                });
            }
        }
        if let ControlFlow::Break(gate) = self.policy(d, s, now, m).await? {
            return Ok(gate);
        }
        let now_ms = now.timestamp_millis();
        let lease_until = now_ms + self.settings.lease_ms;
        let shard = match self.tenant_seat(d, s, &admission, now_ms, lease_until).await? {
            ControlFlow::Continue(shard) => shard,
            ControlFlow::Break(gate) => return Ok(gate),
        };
        let holds = Holds::new(d.key.clone(), admission, shard).lapsing_at(lease_until);
        if s.exec.definition.resources.is_empty() {
            return Ok(Gate::Claim { snapshot: Box::new(snapshot), now, holds, doomed: None });
        }
        self.resource_gates(d, snapshot, holds, now_ms, m).await
    }

    /// Whether `s` is past its job's `retry.maxAgeSecs`: it has waited (or was delivered) too
    /// long to start, and is not admitted to wait again.
    fn too_old(&self, d: &Delivery<'_>, s: &Snapshot, now: DateTime<Utc>) -> bool {
        now.timestamp_millis() - d.key.scheduled_ms > i64::from(s.exec.definition.retry.max_age_secs) * 1_000
    }

    /// Whether this worker would claim `s` at `now` (READY/RETRY_WAIT once available, or an
    /// expired lease).
    fn claimable(&self, s: &Snapshot, now: DateTime<Utc>) -> bool {
        matches!(next_step(&s.exec, &self.terms(), now.timestamp_millis()), Step::Claim { .. })
    }

    /// Early delivery (SQS delays are whole seconds, rounded down): hold briefly, then claim.
    /// The instant to claim at, or a shutdown's release.
    async fn hold_early(
        &self,
        d: &Delivery<'_>,
        snapshot: Option<&Snapshot>,
    ) -> ControlFlow<Gate, DateTime<Utc>> {
        let now = self.clock.now();
        let Some(s) = snapshot else { return ControlFlow::Continue(now) };
        let Step::NotYet(at) = next_step(&s.exec, &self.terms(), now.timestamp_millis()) else {
            return ControlFlow::Continue(now);
        };
        let wait = at - now.timestamp_millis();
        if wait > self.settings.early_hold_ms {
            return ControlFlow::Continue(now);
        }
        tokio::select! {
            // Branches are polled in written order, so a seed replays the same way in the
            // deterministic simulator (docs/simulation.md).
            biased;
            _ = tokio::time::sleep(Duration::from_millis(wait.max(0) as u64)) => {}
            _ = d.stop.cancelled() => return ControlFlow::Break(Gate::Done(Disposition::RetryAfter(0))),
        }
        ControlFlow::Continue(self.clock.now())
    }

    /// Whether a job change may have its say on `s` before it is claimed: due and READY, held by
    /// a pause or never claimed. Never a child (docs/children.md): its parent was checked at its
    /// own claim, and a child's definition differs from the job's on purpose (ALLOW, no start
    /// deadline).
    fn follows_job(&self, s: &Snapshot, now: DateTime<Utc>) -> bool {
        s.exec.status == ExecStatus::Ready
            && s.exec.child.is_none()
            && (s.held.is_some() || s.exec.never_claimed())
            && self.claimable(s, now)
    }

    /// Due and READY: held by a pause, or (first claim ever of a scheduled execution: not a
    /// reduce, not a replay) put by a scan
    /// that read the job before a pause or an edit and escaped the API's sweep (`at_claim`).
    /// A hold is checked against the job too: one whose pause is still on stands (the fire is
    /// not claimed, the message dropped); a stale one (the job was enabled at the instant) is
    /// released, audited, and the fire is then judged like any other.
    async fn follow_job(
        &self,
        d: &Delivery<'_>,
        mut snapshot: Option<Snapshot>,
        now: DateTime<Utc>,
        m: &mut ExecMetrics,
    ) -> Phase<Option<Snapshot>> {
        let key = &d.key;
        if !snapshot.as_ref().is_some_and(|s| self.follows_job(s, now)) {
            return Ok(ControlFlow::Continue(snapshot));
        }
        let (job, covers) =
            jobs::get_job_and_covers(self.store.client(), &self.cfg, &key.tenant, &key.job_id).await?;
        let schedule = match &job {
            Some(j) => super::job_schedule(self, j).await?,
            None => None,
        };
        let schedule = schedule.as_ref();
        let actor = self.actor();
        let now_ms = now.timestamp_millis();
        for _ in 0..2 {
            let Some(s) = snapshot.as_ref().filter(|s| self.follows_job(s, now)) else { break };
            match at_claim_covered(job.as_ref(), schedule, &covers, s) {
                Follow::Cancel(code) => {
                    if self.store.cancel_ready(&s.exec, code, &actor, now_ms).await? {
                        m.outcome = Some(ExecStatus::Canceled);
                        tracing::info!(execution = %key.id(), code, "canceled before its claim: the job was paused or changed at its instant");
                    }
                    return Ok(ControlFlow::Break(Gate::Done(Disposition::Delete)));
                }
                Follow::Amend => {
                    let Some(j) = &job else { break };
                    self.store.amend(&s.exec, &j.definition, j.version, &actor, now_ms).await?;
                    return Ok(ControlFlow::Continue(self.store.get(key, true).await?));
                }
                Follow::Release => {
                    if self.store.release_hold(&s.exec, &actor, now_ms).await? {
                        tracing::info!(execution = %key.id(), "stale hold released: the job was enabled at its instant");
                    }
                    snapshot = self.store.get(key, true).await?;
                }
                Follow::Hold => {
                    // Never claimed while its pause is on: it stays READY and held for the resume
                    // to decide (its catch-up may replay it, else it is canceled). This copy goes;
                    // the resume sends it again, or the reconciler after its backoff. A fire the
                    // pause's sweep missed is held here (its hold mark, as the sweep's).
                    if let (None, Some(j)) = (s.held, job.as_ref()) {
                        self.store.hold(&s.exec, j.version, &actor, now_ms).await?;
                    }
                    tracing::info!(execution = %key.id(), "held by a pause still on: left READY for the resume");
                    return Ok(ControlFlow::Break(Gate::Done(Disposition::Delete)));
                }
                Follow::Keep => break,
            }
        }
        // A `fireOnce` batch about to be claimed first settles its range (K6).
        if let Some(s) = snapshot.as_ref().filter(|s| {
            s.exec.missed_range.is_some()
                && s.held.is_none()
                && s.exec.never_claimed()
                && self.follows_job(s, now)
        }) {
            return Ok(match self.settle_batch(s, schedule, now).await? {
                ControlFlow::Continue(snapshot) => ControlFlow::Continue(snapshot),
                ControlFlow::Break(disposition) => ControlFlow::Break(Gate::Done(disposition)),
            });
        }
        Ok(ControlFlow::Continue(snapshot))
    }

    /// The job's concurrency policy: admit, skip (audited) or wait.
    async fn policy(
        &self,
        d: &Delivery<'_>,
        s: &Snapshot,
        now: DateTime<Utc>,
        m: &mut ExecMetrics,
    ) -> Phase<()> {
        let key = &d.key;
        let actor = self.actor();
        match self.slots.admit(&s.exec, &actor, now).await? {
            Admission::Admit => Ok(ControlFlow::Continue(())),
            Admission::Skip { reason } => {
                if self.store.skip(key, &s.exec, &actor, &reason, now).await? {
                    m.outcome = Some(ExecStatus::Skipped);
                    tracing::info!(execution = %key.id(), reason, "skipped");
                }
                Ok(ControlFlow::Break(Gate::Done(Disposition::Delete)))
            }
            Admission::Wait { until_ms, reason } => {
                tracing::debug!(execution = %key.id(), reason, "policy wait");
                let secs = secs_ceil(until_ms - now.timestamp_millis()).max(1);
                Ok(ControlFlow::Break(Gate::Done(self.wait_admission(d, s, secs).await)))
            }
        }
    }

    /// A seat under the tenant's running limit, if it has one: the gate shard it holds.
    async fn tenant_seat(
        &self,
        d: &Delivery<'_>,
        s: &Snapshot,
        admission: &str,
        now_ms: i64,
        lease_until: i64,
    ) -> Phase<Option<u32>> {
        let key = &d.key;
        // No limit, or one the workers that may run the tenant's executions cannot exceed (the
        // stack's, or its cell's when the allowlists confine it to some pools): nothing to
        // admit, nothing written.
        let cell = self.cfg.targets.pools_of(&key.tenant, &self.cfg.pools);
        let capacity = self.settings.tenant_capacity(&self.cfg.pool_capacity, d.pool, cell.as_deref());
        let Some(limit) = self.settings.tenant_gate_limit(&key.tenant, capacity) else {
            return Ok(ControlFlow::Continue(None));
        };
        let entry = Holds::tenant_entry(key, admission);
        let margin = self.settings.skew_margin_ms;
        match self.tenants.acquire(key, &entry, limit, lease_until, margin, now_ms).await? {
            Seat::Admitted { shard } => Ok(ControlFlow::Continue(Some(shard))),
            Seat::Full { retry_at } => {
                let secs = secs_ceil(retry_at - now_ms).max(1);
                Ok(ControlFlow::Break(Gate::Done(self.wait_admission(d, s, secs).await)))
            }
        }
    }

    /// A unit of every resource the job uses, or a wait for the first that is full (the tenant
    /// seat is given back).
    async fn resource_gates(
        &self,
        d: &Delivery<'_>,
        snapshot: Option<Snapshot>,
        holds: Holds,
        now_ms: i64,
        m: &mut ExecMetrics,
    ) -> Result<Gate, StoreError> {
        let key = &d.key;
        let lease_until = now_ms + self.settings.lease_ms;
        let margin = self.settings.skew_margin_ms;
        let entry = holds.own_resource_entry();
        let got = self
            .resources
            .acquire_all(names(&snapshot), &entry, lease_until, margin, now_ms, &mut m.resources)
            .await;
        match got {
            Ok(Acquired::All(held)) => {
                // The claim is stamped after the gates, so a run's recorded start never precedes
                // the unit it holds.
                let now = self.clock.now();
                Ok(Gate::Claim {
                    snapshot: Box::new(snapshot),
                    now,
                    holds: holds.with_resources(held, lease_until),
                    doomed: None,
                })
            }
            Ok(Acquired::Wait { resource, retry_at, undefined }) => {
                holds.end(self, Exit::NotClaimed { canceled: false }).await?;
                if undefined {
                    tracing::warn!(execution = %key.id(), resource, "the job uses a resource with no limit defined; waiting until an operator defines it");
                } else {
                    tracing::debug!(execution = %key.id(), resource, "resource wait");
                }
                let secs = secs_ceil(retry_at - now_ms).max(1);
                match snapshot.as_ref() {
                    Some(s) => Ok(Gate::Done(self.wait_admission(d, s, secs).await)),
                    None => Ok(Gate::Done(self.wait(d, secs).await)),
                }
            }
            Err(e) => {
                holds.end(self, Exit::NotClaimed { canceled: false }).await?;
                Err(e)
            }
        }
    }
}

/// The resources the snapshot's job uses (none when it was not found).
fn names(snapshot: &Option<Snapshot>) -> &[String] {
    snapshot.as_ref().map_or(&[], |s| s.exec.definition.resources.as_slice())
}

impl Worker {
    /// Admission, claim, then either the run or the reason there is none.
    pub(super) async fn deliver(
        &self,
        d: &Delivery<'_>,
        m: &mut ExecMetrics,
    ) -> Result<Disposition, StoreError> {
        let (snapshot, now, holds, doomed) = match self.admit(d, m).await? {
            Gate::Claim { snapshot, now, holds, doomed } => (snapshot, now, holds, doomed),
            Gate::Done(disposition) => return Ok(disposition),
        };
        let owner = &self.settings.worker_id;
        match self.store.claim_from(&d.key, *snapshot, owner, &self.terms(), now).await? {
            ClaimOutcome::Claimed(c) => {
                let _running = self.in_flight.enter(&d.key);
                tracing::info!(
                    execution = %d.key.id(),
                    attempt = c.fence.attempt,
                    token = c.fence.token,
                    "claimed by {owner}: attempt {} running",
                    c.fence.attempt
                );
                self.report_late_start(&d.key, &c, now, m).await;
                let r = self.run_claimed(d, *c, holds, doomed, m).await;
                if let Some(status) = m.outcome {
                    let ms = m.duration_ms.unwrap_or_default();
                    tracing::info!(execution = %d.key.id(), "attempt ended: {} after {ms} ms", status.as_str());
                }
                r
            }
            other => {
                let canceled = matches!(other, ClaimOutcome::Finished(ExecStatus::Canceled));
                holds.end(self, Exit::NotClaimed { canceled }).await?;
                Ok(self.unclaimed(d, other, now).await)
            }
        }
    }
}
