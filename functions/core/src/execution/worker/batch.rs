//! A `fireOnce` batch's first claim settles its range with the ordinary fires in it
//! (docs/simulation.md, K6; docs/execution.md, "A batch's first claim").
//!
//! A batch stands for every instant of `(first, through]`. The trigger puts it around the
//! executions it *reads* in that range (`trigger::batch`), but a scan that planned the job from
//! another position can put ordinary fires there after that read: both would run, a doubled
//! effect. So before the batch's first claim its worker
//!
//! 1. records the range on the job's partition (a cover item, `keys::batch_cover_sk`): from then
//!    on, an ordinary fire in the range that has not started cancels itself at its first claim
//!    (`CoveredByBatch`), since that claim reads its job together with the covers;
//! 2. reads the fires in the range (one strongly consistent Query) and cancels each ordinary one
//!    still READY and never claimed (`CoveredByBatch`, a CAS on the execution as read: a worker
//!    that claims it in between wins);
//! 3. records on the batch the instants it does *not* stand for (`missedExcept`): a fire there
//!    already started or was otherwise decided (claimed, skipped, canceled for a pause), or an
//!    inner batch stands for them.
//!
//! Each fire in the range is decided by one CAS on its own item, the batch's or its own worker's,
//! so exactly one of them stands for it, whatever the order. Step 1 comes before step 2, so a fire
//! put after the Query reads the cover. A crash in between is safe: the next delivery does it all
//! again (the put is idempotent, a fire canceled as covered stays covered).

use super::{Disposition, Worker};
use chrono::{DateTime, Duration, Utc};
use std::collections::BTreeSet;
use std::ops::ControlFlow;
use sundial_model::retry::codes::COVERED_BY_BATCH;
use sundial_model::{BatchCover, ExecStatus, Execution};
use sundial_schedule::Schedule;
use sundial_store::executions::{ExecKey, Snapshot};
use sundial_store::{jobs, StoreError};

/// How often one fire's CAS may be lost to concurrent changes before the delivery is retried.
const MAX_RACES: usize = 4;

/// The most instants of an inner batch a batch excepts (an inner batch is itself bounded by the
/// trigger's misfire walk).
const MAX_INNER_INSTANTS: usize = 100_000;

/// What a batch does with one execution found in its range. Pure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum InRange {
    /// Not a fire of the schedule (a manual run, an event of its own, a child), or
    /// a batch that settles after this one (it will except what they share): no instant of the
    /// batch's.
    Ignore,
    /// An ordinary fire not yet started: the batch stands for it, and cancels it.
    Cancel,
    /// Already canceled as covered by this batch (an earlier try of this settling).
    Covered,
    /// It stands for these instants itself: the batch does not.
    Except(DateTime<Utc>, DateTime<Utc>),
    /// A batch already decided that is not among those registered before this one: if it is in
    /// the registry (after this one) it excepted what they share, else (settled before the
    /// registry existed) it stands for its range. Asks for one more read of the registry.
    Unordered(DateTime<Utc>, DateTime<Utc>),
}

/// Decides what the batch does with `e`, an execution in its range, given the batches
/// registered before it (`earlier`, by their own instant). Pure.
pub(crate) fn in_range(e: &Execution, earlier: &[BatchCover]) -> InRange {
    if e.child.is_some() || !(e.stands_for_fire() || e.is_backfilled()) {
        return InRange::Ignore;
    }
    if let Some((a, b)) = e.missed_range {
        if earlier.iter().any(|c| c.first == e.scheduled_at) {
            return InRange::Except(a, b);
        }
        // Not yet settled: it will register after this batch and except what they share.
        if e.status == ExecStatus::Ready && e.never_claimed() {
            return InRange::Ignore;
        }
        return InRange::Unordered(a, b);
    }
    match e.status {
        ExecStatus::Ready if e.never_claimed() => InRange::Cancel,
        ExecStatus::Canceled if e.last_error.as_ref().is_some_and(|(c, _)| c == COVERED_BY_BATCH) => {
            InRange::Covered
        }
        _ => InRange::Except(e.scheduled_at, e.scheduled_at),
    }
}

/// The instants of `mine` (its own and its range) that `earlier` batches stand for instead:
/// those the registry put before it own every instant of theirs it shares. Pure.
fn owned_by_earlier(
    schedule: Option<&Schedule>,
    mine: BatchCover,
    earlier: &[BatchCover],
) -> BTreeSet<DateTime<Utc>> {
    let mut out = BTreeSet::new();
    for c in earlier {
        out.extend(instants(schedule, c.first, c.through, mine));
        if c.first < mine.first && mine.first <= c.through {
            out.insert(mine.first);
        }
    }
    out
}

/// Seconds past the epoch until which `batch`'s cover is kept: a day past the last instant a
/// fire it covers could still start (its age limit, at least a day).
fn cover_expires_at(batch: &Execution, through: DateTime<Utc>) -> i64 {
    let age = i64::from(batch.definition.retry.max_age_secs).max(86_400);
    through.timestamp() + age + 86_400
}

/// The instants in `[a, b]` (bounded by `(first, through]`) an inner execution stands for:
/// `schedule`'s (the batch's job's), or just `a` when it is not known.
fn instants(
    schedule: Option<&Schedule>,
    a: DateTime<Utc>,
    b: DateTime<Utc>,
    cover: BatchCover,
) -> Vec<DateTime<Utc>> {
    let b = b.min(cover.through);
    let mut out = match schedule {
        Some(sch) if a < b => sch.fires_between(a - Duration::milliseconds(1), b, MAX_INNER_INSTANTS),
        _ => vec![a],
    };
    out.retain(|t| cover.covers(*t));
    out
}

impl Worker {
    /// Registers batch `cover` on its job (once: a later try finds it) and returns the batches
    /// registered before it; `None` after losing the registry's CAS too often (retry later).
    async fn register(
        &self,
        tenant: &str,
        job: &str,
        cover: BatchCover,
        expires_at: i64,
        now: DateTime<Utc>,
    ) -> Result<Option<Vec<BatchCover>>, StoreError> {
        let client = self.store.client();
        let now_s = now.timestamp();
        if sundial_mutants::active(sundial_mutants::Mutant::BatchSkipsRegistry) {
            return Ok(Some(Vec::new()));
        }
        for _ in 0..MAX_RACES {
            let reg = jobs::batch_registry(client, &self.cfg, tenant, job).await?;
            if let Some(p) = reg.batches.iter().position(|(c, _)| c.first == cover.first) {
                return Ok(Some(reg.batches[..p].iter().map(|(c, _)| *c).collect()));
            }
            if jobs::register_batch(client, &self.cfg, tenant, job, &reg, (cover, expires_at), now_s).await? {
                return Ok(Some(reg.batches.iter().filter(|(_, x)| *x > now_s).map(|(c, _)| *c).collect()));
            }
        }
        Ok(None)
    }

    /// Settles batch `s` with the fires in its range before its first claim (module docs):
    /// goes on with the batch as it is then, or retries the delivery after losing a race.
    pub(super) async fn settle_batch(
        &self,
        s: &Snapshot,
        schedule: Option<&Schedule>,
        now: DateTime<Utc>,
    ) -> Result<ControlFlow<Disposition, Option<Snapshot>>, StoreError> {
        let batch = &s.exec;
        let Some((first, through)) = batch.missed_range else {
            return Ok(ControlFlow::Continue(Some(s.clone())));
        };
        let cover = BatchCover { first, through };
        let (tenant, job) = (&batch.tenant, &batch.job_id);
        let expires_at = cover_expires_at(batch, through);
        // 0. Its place among the job's batches: the earlier ones stand for what they share.
        let Some(earlier) = self.register(tenant, job, cover, expires_at, now).await? else {
            return Ok(ControlFlow::Break(Disposition::RetryAfter(1)));
        };
        jobs::put_batch_cover(self.store.client(), &self.cfg, tenant, job, cover, expires_at).await?;
        let found = self
            .store
            .fires_between(tenant, job, first.timestamp_millis() + 1, through.timestamp_millis())
            .await?;
        let mut except: BTreeSet<DateTime<Utc>> =
            batch.missed_except.iter().copied().filter(|t| *t == first || cover.covers(*t)).collect();
        except.extend(owned_by_earlier(schedule, cover, &earlier));
        let mut st = Settling {
            batch,
            schedule,
            cover,
            earlier,
            except,
            later: None,
            canceled: 0,
            actor: self.actor(),
            now_ms: now.timestamp_millis(),
        };
        for f in found {
            if let ControlFlow::Break(d) = self.settle_fire(&mut st, f.exec).await? {
                return Ok(ControlFlow::Break(d));
            }
        }
        if let ControlFlow::Break(d) = self.cancel_if_covered_whole(&st).await? {
            return Ok(ControlFlow::Break(d));
        }
        self.record_except(s, st).await
    }

    /// Decides one fire `e` found in the batch's range: cancels it, or adds the instants it
    /// stands for to the batch's exceptions; reads it again after a lost CAS.
    async fn settle_fire(
        &self,
        st: &mut Settling<'_>,
        mut e: Execution,
    ) -> Result<ControlFlow<Disposition>, StoreError> {
        let mut races = 0;
        loop {
            match in_range(&e, &st.earlier) {
                InRange::Ignore | InRange::Covered => break,
                InRange::Except(a, b) => {
                    st.except.extend(instants(st.schedule, a, b, st.cover));
                    break;
                }
                InRange::Unordered(a, b) => {
                    if st.later.is_none() {
                        let (tenant, job) = (&st.batch.tenant, &st.batch.job_id);
                        let reg = jobs::batch_registry(self.store.client(), &self.cfg, tenant, job).await?;
                        st.later = Some(reg.batches.iter().map(|(c, _)| c.first).collect());
                    }
                    if !st.later.as_ref().is_some_and(|l| l.contains(&e.scheduled_at)) {
                        st.except.extend(instants(st.schedule, a, b, st.cover));
                    }
                    break;
                }
                InRange::Cancel => {
                    if self.store.cancel_ready(&e, COVERED_BY_BATCH, &st.actor, st.now_ms).await? {
                        st.canceled += 1;
                        break;
                    }
                }
            }
            races += 1;
            let again = self.store.get(&ExecKey::of(&e), true).await?;
            match again {
                Some(g) if races < MAX_RACES => e = g.exec,
                Some(_) => return Ok(ControlFlow::Break(Disposition::RetryAfter(1))),
                None => break,
            }
        }
        Ok(ControlFlow::Continue(()))
    }

    /// Every instant it would stand for is another's: it runs nothing, and is canceled.
    async fn cancel_if_covered_whole(
        &self,
        st: &Settling<'_>,
    ) -> Result<ControlFlow<Disposition>, StoreError> {
        let Some(sch) = st.schedule else {
            return Ok(ControlFlow::Continue(()));
        };
        let (first, through) = (st.cover.first, st.cover.through);
        let all = sch.fires_between(first - Duration::milliseconds(1), through, MAX_INNER_INSTANTS);
        if all.is_empty() || !all.iter().all(|t| st.except.contains(t)) {
            return Ok(ControlFlow::Continue(()));
        }
        if self.store.cancel_ready(st.batch, COVERED_BY_BATCH, &st.actor, st.now_ms).await? {
            let key = ExecKey::of(st.batch);
            tracing::info!(execution = %key.id(), "fireOnce batch covered whole by batches settled before it; canceled");
            return Ok(ControlFlow::Break(Disposition::Delete));
        }
        Ok(ControlFlow::Break(Disposition::RetryAfter(1)))
    }

    /// Records on batch `s` the instants it does not stand for, and goes on with it as read then.
    async fn record_except(
        &self,
        s: &Snapshot,
        st: Settling<'_>,
    ) -> Result<ControlFlow<Disposition, Option<Snapshot>>, StoreError> {
        let (batch, key) = (st.batch, ExecKey::of(st.batch));
        let except: Vec<DateTime<Utc>> = st.except.into_iter().collect();
        let canceled = st.canceled;
        if canceled > 0 || !except.is_empty() {
            tracing::info!(execution = %key.id(), canceled, excepted = except.len(), "fireOnce batch settled with the fires in its range");
        }
        if except == batch.missed_except {
            return Ok(ControlFlow::Continue(Some(s.clone())));
        }
        if !self.store.except_from_batch(batch, &except, &st.actor, st.now_ms).await? {
            // Changed meanwhile (claimed by another delivery, held, amended): judge it again.
            return Ok(ControlFlow::Break(Disposition::RetryAfter(1)));
        }
        Ok(ControlFlow::Continue(self.store.get(&key, true).await?))
    }
}

/// One settling of a batch: what it has found out so far about the fires in its range.
struct Settling<'a> {
    batch: &'a Execution,
    schedule: Option<&'a Schedule>,
    cover: BatchCover,
    /// The batches registered before it (by their own instant).
    earlier: Vec<BatchCover>,
    /// The instants it does not stand for.
    except: BTreeSet<DateTime<Utc>>,
    /// Every registered batch's own instant, read once an `Unordered` fire asks for them.
    later: Option<Vec<DateTime<Utc>>>,
    /// The fires it canceled as covered.
    canceled: u32,
    actor: String,
    now_ms: i64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use sundial_model::{Job, JobDefinition, Target, MANUAL_CODE};
    use sundial_schedule::ScheduleSpec;

    fn at(s: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_774_829_940 + s, 0).unwrap_or_default()
    }

    fn job() -> (Job, Schedule) {
        let def = JobDefinition::new(ScheduleSpec::new("*/15 * * * * *", "UTC"), Target::http("https://x"));
        let job = Job::new(&crate::config::Config::local("t-", &["default"], 8), "acme", "j", def, at(-60))
            .unwrap_or_else(|e| panic!("{e}"));
        let sch = Schedule::parse(&job.definition.schedule, job.anchor).unwrap_or_else(|e| panic!("{e}"));
        (job, sch)
    }

    fn fire(s: i64, status: ExecStatus, token: u64) -> Execution {
        let (job, sch) = job();
        let mut e = Execution::ready(&job, &sch, at(s), None, at(-1), "tick");
        e.status = status;
        e.fencing_token = token;
        e
    }

    #[test]
    fn an_ordinary_fire_not_started_is_canceled_anything_decided_is_excepted() {
        assert_eq!(in_range(&fire(15, ExecStatus::Ready, 0), &[]), InRange::Cancel);
        assert_eq!(in_range(&fire(15, ExecStatus::Running, 1), &[]), InRange::Except(at(15), at(15)));
        assert_eq!(
            in_range(&fire(15, ExecStatus::Ready, 2), &[]),
            InRange::Except(at(15), at(15)),
            "a retry"
        );
        assert_eq!(in_range(&fire(15, ExecStatus::Skipped, 0), &[]), InRange::Except(at(15), at(15)));
        let mut covered = fire(15, ExecStatus::Canceled, 0);
        covered.last_error = Some((COVERED_BY_BATCH.into(), String::new()));
        assert_eq!(in_range(&covered, &[]), InRange::Covered);
        let mut paused = fire(15, ExecStatus::Canceled, 0);
        paused.last_error = Some(("Paused".into(), String::new()));
        assert_eq!(in_range(&paused, &[]), InRange::Except(at(15), at(15)));
        // An inner batch: registered before this one, it stands for its range; not yet settled,
        // it will register after and except what they share; decided but not registered before,
        // the registry says which
        let mut inner = fire(30, ExecStatus::Ready, 0);
        inner.missed_range = Some((at(30), at(60)));
        let before = [BatchCover { first: at(30), through: at(60) }];
        assert_eq!(in_range(&inner, &before), InRange::Except(at(30), at(60)), "registered before");
        assert_eq!(in_range(&inner, &[]), InRange::Ignore, "settles after");
        inner.status = ExecStatus::Running;
        inner.fencing_token = 1;
        assert_eq!(in_range(&inner, &[]), InRange::Unordered(at(30), at(60)));
        let mut manual = fire(15, ExecStatus::Ready, 0);
        manual.timeline[0].code = Some(MANUAL_CODE.into());
        assert_eq!(in_range(&manual, &[]), InRange::Ignore);
        // A backfilled fire replays the instant: decided with the batch like the fire itself
        // (seed 2016: put before the batch registered, both ran)
        let mut backfilled = fire(15, ExecStatus::Ready, 0);
        backfilled.timeline[0].code = Some(sundial_model::BACKFILL_CODE.into());
        assert_eq!(in_range(&backfilled, &[]), InRange::Cancel, "a backfilled fire not started");
        backfilled.status = ExecStatus::Running;
        backfilled.fencing_token = 1;
        assert_eq!(in_range(&backfilled, &[]), InRange::Except(at(15), at(15)), "one started");
        // An event's execution: of its own (an instant no fire holds), ignored; with
        // `oncePerPeriod` it is the period's fire, settled like one (K14)
        let mut event = fire(15, ExecStatus::Ready, 0);
        event.timeline[0].code = Some(sundial_model::event::EVENT_CODE.into());
        assert_eq!(in_range(&event, &[]), InRange::Ignore, "an event of its own");
        event.definition.events = Some(sundial_model::event::EventTrigger { once_per_period: true });
        assert_eq!(in_range(&event, &[]), InRange::Cancel, "a oncePerPeriod event not started");
        event.status = ExecStatus::Running;
        event.fencing_token = 1;
        assert_eq!(in_range(&event, &[]), InRange::Except(at(15), at(15)), "one started");
    }

    #[test]
    fn the_batches_registered_before_own_every_instant_they_share_the_batchs_own_too() {
        let (_, sch) = job();
        // mine: 0:30 and (0:30, 1:30]; every 15 s
        let mine = BatchCover { first: at(30), through: at(90) };
        let outer = BatchCover { first: at(0), through: at(60) };
        let after = BatchCover { first: at(75), through: at(120) };
        assert_eq!(owned_by_earlier(Some(&sch), mine, &[outer]), [at(30), at(45), at(60)].into());
        assert_eq!(owned_by_earlier(Some(&sch), mine, &[after]), [at(75), at(90)].into());
        assert!(owned_by_earlier(Some(&sch), mine, &[]).is_empty());
    }

    #[test]
    fn an_inner_batch_is_excepted_only_inside_the_cover() {
        let (_, sch) = job();
        let cover = BatchCover { first: at(0), through: at(45) };
        assert_eq!(instants(Some(&sch), at(30), at(90), cover), vec![at(30), at(45)]);
        assert_eq!(instants(None, at(30), at(90), cover), vec![at(30)]);
        assert!(
            instants(Some(&sch), at(0), at(0), cover).is_empty(),
            "the batch's own instant is not covered"
        );
    }
}
