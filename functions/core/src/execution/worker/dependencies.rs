//! Before the concurrency policy: a fire whose job declares `after` waits for its upstream runs
//! (docs/dependencies.md). It holds no slot, no gate entry and no lease while it waits: it
//! registers on each unmet upstream run's item and sleeps on a delayed copy of its message; the
//! upstream's final write names it, and the worker that wrote it sends it a fresh copy at once
//! ([`Worker::wake_downstream`]). The delayed copy is only a backstop for a lost wake.

use super::{secs_ceil, Delivery, Disposition, Worker};
use crate::execution::metrics::ExecMetrics;
use chrono::{DateTime, Utc};
use std::ops::ControlFlow;
use sundial_model::dependency::{self, OnDependencyDeadline, Upstream, Verdict};
use sundial_model::retry::codes;
use sundial_model::{ExecStatus, Execution, JobState};
use sundial_store::error::StoreError;
use sundial_store::executions::{ExecKey, Registration, Snapshot};
use sundial_store::jobs;
use sundial_store::queue::Outgoing;

/// What a fire with dependencies does once they are decided.
pub(super) enum Deps {
    /// Met (or none, or run anyway past the deadline): go on to the policy.
    Met,
    /// Past the deadline under `fail`: claim it only to end it DEAD with this account.
    Fail(String),
}

impl Worker {
    /// The dependency phase of admission (see the module doc): go on (met, or condemned), or
    /// stop with this delivery's disposition (it waits, or was skipped).
    pub(super) async fn dependencies(
        &self,
        d: &Delivery<'_>,
        s: &Snapshot,
        now: DateTime<Utc>,
        m: &mut ExecMetrics,
    ) -> Result<ControlFlow<Disposition, Deps>, StoreError> {
        let e = &s.exec;
        // Only a READY fire waits (a retry or a takeover started already); a child was
        // admitted with its parent; a manual run (trigger-now) is an operator's
        // explicit "now" (docs/dependencies.md); a fire that already chose to run past its
        // deadline does not ask again.
        let base = dependency::deadline_base(e);
        let noted =
            |code: &str| e.timeline.iter().any(|ev| ev.at >= base && ev.code.as_deref() == Some(code));
        if e.definition.after.is_empty()
            || sundial_mutants::active(sundial_mutants::Mutant::DependencyNeverWaits)
            || e.status != ExecStatus::Ready
            || e.child.is_some()
            || e.timeline.first().and_then(|ev| ev.code.as_deref()) == Some(sundial_model::MANUAL_CODE)
            || noted(codes::DEPENDENCY_DEADLINE_RUN)
        {
            return Ok(ControlFlow::Continue(Deps::Met));
        }
        let key = &d.key;
        let looked = self.look_upstream(key, e).await?;
        let pairs: Vec<(&dependency::Dependency, Upstream)> =
            looked.iter().map(|(d, u, _)| (*d, u.clone())).collect();
        let now_ms = now.timestamp_millis();
        let unmet = dependency::describe_unmet(&looked);
        let actor = self.actor();
        match dependency::verdict(e, &pairs, now_ms) {
            Verdict::Go => Ok(ControlFlow::Continue(Deps::Met)),
            Verdict::Wait { look_at } => {
                tracing::info!(execution = %key.id(), unmet, "waiting for its upstream runs");
                let secs = secs_ceil(look_at - now_ms).max(1);
                // The first wait notes it; the note changed the item, so the wait's reconciler
                // write reads it again.
                let fresh = if noted(codes::WAITING_FOR_UPSTREAM) {
                    None
                } else {
                    self.store.note_ready(e, codes::WAITING_FOR_UPSTREAM, &actor, now_ms).await?;
                    self.store.get(key, true).await?
                };
                Ok(ControlFlow::Break(self.wait_admission(d, fresh.as_ref().unwrap_or(s), secs).await))
            }
            Verdict::Deadline(OnDependencyDeadline::Run) => {
                tracing::warn!(execution = %key.id(), unmet, "dependency deadline passed: running anyway (onDependencyDeadline: run)");
                self.store.note_ready(e, codes::DEPENDENCY_DEADLINE_RUN, &actor, now_ms).await?;
                Ok(ControlFlow::Continue(Deps::Met))
            }
            Verdict::Deadline(OnDependencyDeadline::Skip) => {
                let reason = format!("upstream runs not satisfied by the dependency deadline: {unmet}");
                if let Some(waiters) =
                    self.store.skip_with(key, e, &actor, codes::DEPENDENCY_NOT_MET, &reason, now).await?
                {
                    m.outcome = Some(ExecStatus::Skipped);
                    tracing::info!(execution = %key.id(), reason, "skipped");
                    self.wake_downstream(key, &waiters).await;
                }
                Ok(ControlFlow::Break(Disposition::Delete))
            }
            Verdict::Deadline(OnDependencyDeadline::Fail) => {
                // Condemned on the item first: a worker that takes over the claim below (this
                // one died between the claim and the DEAD finish) reads the note and ends it
                // DEAD too, instead of running it (found by the simulator, seed 7006).
                if !self.store.note_ready(e, codes::DEPENDENCY_NOT_MET, &actor, now_ms).await? {
                    // Changed since it was read: look again at the next delivery.
                    return Ok(ControlFlow::Break(Disposition::RetryAfter(1)));
                }
                Ok(ControlFlow::Continue(Deps::Fail(format!(
                    "upstream runs not satisfied by the dependency deadline: {unmet}"
                ))))
            }
        }
    }

    /// Looks at each upstream run of `e` (of `key`): its state, and its instant when its job
    /// has a fire there; registers `e` as a waiter on those not yet satisfied.
    async fn look_upstream<'e>(
        &self,
        key: &ExecKey,
        e: &'e Execution,
    ) -> Result<Vec<(&'e dependency::Dependency, Upstream, Option<i64>)>, StoreError> {
        let mut looked: Vec<(&dependency::Dependency, Upstream, Option<i64>)> = Vec::new();
        for dep in &e.definition.after {
            let job = jobs::get_job(self.store.client(), &self.cfg, &key.tenant, &dep.job).await?;
            let schedule = match job.as_ref().filter(|j| j.state != JobState::Deleted) {
                Some(j) => super::job_schedule(self, j).await?,
                None => None,
            };
            let Some(at) = schedule.as_ref().and_then(|sch| dep.upstream_instant(e.scheduled_at, sch)) else {
                looked.push((dep, Upstream::NoFire, None));
                continue;
            };
            let up = ExecKey::new(key.tenant.clone(), dep.job.clone(), at.timestamp_millis());
            // A satisfying status is final (SUCCEEDED stays, any end stays ended), so even an
            // eventually consistent read that shows one is right; anything else is asked of the
            // item itself, by the registration's conditional write.
            let seen = self.store.get(&up, false).await?.map(|u| u.exec.status);
            let state = match seen {
                Some(st) if dep.status.satisfied_by(st) => Upstream::Run(st),
                _ => match self.store.wait_on(&up, &key.id(), dep.status).await? {
                    Registration::Registered(st) | Registration::Satisfied(st) => Upstream::Run(st),
                    Registration::Missing => Upstream::NotPut,
                },
            };
            looked.push((dep, state, Some(up.scheduled_ms)));
        }
        Ok(looked)
    }

    /// Wakes the executions `ids` (of `key`'s tenant) that wait for `key` as an upstream and
    /// are still READY: each gets a new chain (wait generation raised, reconciler look moved)
    /// and one copy sent now. A failure is logged: the waiter's backstop copy still comes.
    pub(super) async fn wake_downstream(&self, key: &ExecKey, ids: &[String]) {
        for id in ids {
            let Ok((job, ms)) = sundial_model::keys::parse_execution_id(id) else {
                tracing::warn!(execution = %key.id(), waiter = id, "a waiter id that does not parse; skipped");
                continue;
            };
            let wk = ExecKey::new(key.tenant.clone(), job, ms);
            match self.wake_ready(&wk).await {
                Ok(true) => {
                    tracing::debug!(execution = %wk.id(), upstream = %key.id(), "woken by its upstream's end")
                }
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(execution = %wk.id(), error = %e, "could not wake a fire waiting for its upstream; its backstop look will")
                }
            }
        }
    }

    /// A new chain for READY `wk`: its wait generation raised with the reconciler's look moved
    /// past the wake (a lost wake is re-sent by the reconciler), one copy sent now, then the
    /// raise marked sent, from which on older copies drop themselves (as a wait's,
    /// [`Worker::wait_admission`]: a worker that dies before the mark leaves them standing).
    /// False when it is not READY (it has its own messages) or changed meanwhile (whoever
    /// changed it acts).
    pub(super) async fn wake_ready(
        &self,
        wk: &ExecKey,
    ) -> Result<bool, Box<dyn std::error::Error + Send + Sync>> {
        let Some(s) = self.store.get(wk, true).await? else { return Ok(false) };
        if s.exec.status != ExecStatus::Ready {
            return Ok(false);
        }
        let now = self.clock.now();
        let look = now.timestamp_millis() + 2 * sundial_model::reconcile::GRACE_MS;
        let Some(gen) = self.store.note_wait(wk, &s, look).await? else { return Ok(false) };
        let mut wake = Outgoing::for_execution(&s.exec, now);
        wake.message.wait_gen = gen;
        // A failed send is never marked: the queued copies still stand for it.
        self.queues.send_all(&s.exec.definition.pool, &[wake]).await?;
        self.mark_sent(wk, gen).await;
        Ok(true)
    }
}
