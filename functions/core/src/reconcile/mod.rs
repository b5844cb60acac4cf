//! # The reconciler: every due execution is eventually delivered (docs/reconciler.md)
//!
//! The trigger persists an execution, then sends its message; a worker acts on the message. The
//! execution item is the intent, the message only a delivery of it. Deliveries get lost: a send
//! fails after the put, a message is dropped, a worker panics after taking it, a message is
//! dead-lettered while its execution is still open. The reconciler repairs all of these from the
//! execution records alone:
//!
//! ```text
//! every run:  for each partition OPEN#0..15 of the `open` index
//!               Query open_due <= now                      (only executions due for a look)
//!               read the execution                          (½ read unit)
//!               judge (rules::judge, pure):
//!                 final            → close   (REMOVE open_pk, open_due)
//!                 someone acts     → look again at the backoff end / lease end + grace
//!                 nothing acts     → note "Resent" + open_due = now + backoff (one CAS),
//!                                    then send the message again (SQS)
//! ```
//!
//! - **Idempotent.** The CAS on (status, token, open_due) as read means two reconcilers never
//!   both re-send one execution; a re-sent message that meets a live one is absorbed by the
//!   worker's claim (fencing token), as any duplicate delivery is.
//! - **Bounded.** At most [`ReconcileOptions::max_per_run`] executions per run, re-sends of one
//!   execution back off from 2 to 60 minutes ([`rules::backoff_ms`]).
//! - **O(open executions).** The sparse `open` index holds only executions that are not final;
//!   a run reads the entries that are due, never the table.
//! - **Audited and measured.** Each re-send is a note on the execution's timeline (code
//!   `Resent`, actor `reconciler:<id>`); `ExecutionsResent` (per pool), `ReconcileExamined` and
//!   `ReconcileOverdueMs` are emitted, and the CDK app alarms on re-sends.
//! - **A held fire is not lost.** A fire queued ahead of a pause stays READY and held while the
//!   pause lasts (`execution::follow`): it is re-sent on the same backoff, so a worker judges
//!   the hold again (the pause may have ended, the job been deleted), but it is no missed start
//!   and no lost delivery: counted apart (`held_resent`), not in `ExecutionsResent`.

mod mapreduce;
mod options;
mod report;
pub use crate::missed;
pub use sundial_model::reconcile as rules;

pub use options::ReconcileOptions;
use report::Done;
pub use report::{ReconcileError, ReconcileReport};
pub use rules::{backoff_ms, first_look, judge, Verdict, GRACE_MS};

use crate::execution::outcome::Outcomes;
use crate::Ctx;
use chrono::{DateTime, Utc};
use futures_util::stream::{self, StreamExt};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use sundial_store::executions::{ExecKey, ExecStore, Snapshot};
use sundial_store::open::OpenEntry;
use sundial_store::queue::Outgoing;

/// One reconciler run at `now`.
pub async fn reconcile(
    ctx: &Ctx,
    now: DateTime<Utc>,
    opts: &ReconcileOptions,
) -> Result<ReconcileReport, ReconcileError> {
    let scope = crate::access::Scope::new(crate::access::Role::Reconcile, &ctx.cfg);
    crate::access::scope(scope, run(ctx, now, opts)).await
}

async fn run(
    ctx: &Ctx,
    now: DateTime<Utc>,
    opts: &ReconcileOptions,
) -> Result<ReconcileReport, ReconcileError> {
    let execs = ctx.execs();
    let now_ms = now.timestamp_millis();
    let mut report = ReconcileReport::default();
    let due = read_due(&execs, now_ms, opts, &mut report).await?;
    let shift = (GRACE_MS - opts.grace_ms).max(0);
    report.max_overdue_ms = due.iter().map(|e| now_ms + shift - e.due).max().unwrap_or(0);
    let backlogged = if due.is_empty() { BTreeSet::new() } else { backlogged_lanes(ctx).await };
    let pass = &Pass::new(ctx, execs, opts, backlogged);
    let results: Vec<(OpenEntry, Result<Done, ReconcileError>)> = stream::iter(due)
        .map(|entry| async move {
            let r = pass.look_at(&entry, now).await;
            (entry, r)
        })
        .buffer_unordered(opts.concurrency.max(1))
        .collect()
        .await;
    let mut first = None;
    report.outcome_events = pass.outcome_events.load(Ordering::Relaxed);
    let outgoing = tally(results, &mut report, &mut first);
    resend(ctx, outgoing, &mut report, &mut first).await;
    match first {
        None => Ok(report),
        Some(first) => Err(ReconcileError::Partial {
            failed: report.failed,
            first: Box::new(first),
            report: Box::new(report),
        }),
    }
}

/// The `open` entries due for a look, partition by partition, up to `max_per_run` (the report
/// says when the run stopped short).
async fn read_due(
    execs: &ExecStore,
    now_ms: i64,
    opts: &ReconcileOptions,
    report: &mut ReconcileReport,
) -> Result<Vec<OpenEntry>, ReconcileError> {
    let mut due: Vec<OpenEntry> = Vec::new();
    'parts: for part in 0..sundial_model::keys::OPEN_PARTITIONS {
        if part == 5 && sundial_mutants::active(sundial_mutants::Mutant::ReconcileSkipsPartition) {
            continue;
        }
        let mut start = None;
        loop {
            let left = opts.max_per_run.saturating_sub(due.len());
            if left == 0 {
                report.truncated = true;
                break 'parts;
            }
            let cutoff = now_ms + (GRACE_MS - opts.grace_ms).max(0);
            let page = execs.open_due(part, cutoff, left.min(500) as i32, start).await?;
            due.extend(page.items);
            match page.next {
                Some(n) => start = Some(n),
                None => break,
            }
        }
    }
    Ok(due)
}

/// Pool lanes with a visible backlog (one GetQueueAttributes per pool lane and run, only when
/// something is due): an execution is judged by its own lane's queue (docs/priority.md).
async fn backlogged_lanes(ctx: &Ctx) -> BTreeSet<(String, sundial_model::priority::Lane)> {
    let mut backlogged = BTreeSet::new();
    for pool in &ctx.cfg.pools {
        for lane in sundial_model::priority::Lane::ALL {
            match ctx.queues.lane_depth(pool, lane).await {
                Ok(n) if n >= rules::BACKLOG_MIN_VISIBLE => {
                    backlogged.insert((pool.clone(), lane));
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(pool, lane = lane.as_str(), error = %e, "queue depth unknown; treating the lane as not backlogged")
                }
            }
        }
    }
    backlogged
}

/// The messages one run re-sends to one pool, and how many of them are of held executions.
#[derive(Default)]
struct Sends {
    msgs: Vec<Outgoing>,
    held: u64,
}

/// Counts each look's outcome in the report and collects the messages to re-send per pool;
/// the first failure is kept for the run's error.
fn tally(
    results: Vec<(OpenEntry, Result<Done, ReconcileError>)>,
    report: &mut ReconcileReport,
    first: &mut Option<ReconcileError>,
) -> BTreeMap<String, Sends> {
    let mut outgoing: BTreeMap<String, Sends> = BTreeMap::new();
    for (entry, r) in results {
        report.examined += 1;
        match r {
            Ok(Done::Resent(pool, msg)) => outgoing.entry(pool).or_default().msgs.push(*msg),
            Ok(Done::HeldResent(pool, msg)) => {
                let sends = outgoing.entry(pool).or_default();
                sends.msgs.push(*msg);
                sends.held += 1;
            }
            Ok(Done::Missed(pool, failed)) => {
                *report.missed.entry(pool).or_default() += 1;
                if let Some(e) = failed {
                    tracing::error!(execution = %entry.key.global_id(), error = %e, "start deadline miss recorded but not reported");
                    report.failed += 1;
                    first.get_or_insert(e.into());
                }
            }
            Ok(Done::LookedAgain) => report.looked_again += 1,
            Ok(Done::Backlogged) => report.deferred_backlog += 1,
            Ok(Done::Closed) => report.closed += 1,
            Ok(Done::Raced) => report.raced += 1,
            Ok(Done::Missing) => report.missing += 1,
            Err(e) => {
                tracing::error!(execution = %entry.key.global_id(), error = %e, "reconcile failed; the next run retries it");
                report.failed += 1;
                first.get_or_insert(e);
            }
        }
    }
    outgoing
}

/// Marked first, sent second (batched per pool): a crash in between delays the send to the
/// next look, it never loses it; a failed send is retried the same way.
async fn resend(
    ctx: &Ctx,
    outgoing: BTreeMap<String, Sends>,
    report: &mut ReconcileReport,
    first: &mut Option<ReconcileError>,
) {
    for (pool, Sends { msgs, held }) in outgoing {
        match ctx.queues.send_all(&pool, &msgs).await {
            Ok(()) => {
                mark_sent(ctx, &msgs).await;
                report.held_resent += held;
                let lost = msgs.len() as u64 - held;
                if lost > 0 {
                    *report.resent.entry(pool).or_default() += lost;
                }
            }
            Err(e) => {
                tracing::error!(pool, error = %e, count = msgs.len(), "re-send failed; the next look after the backoff retries it");
                report.failed += msgs.len() as u64;
                first.get_or_insert(e.into());
            }
        }
    }
}

/// The re-sends in `msgs` were sent: each execution's new generation is marked sent
/// (`ExecStore::note_wait_sent`), from which on the copies queued before drop themselves. Until
/// then they stand, so a re-send that was marked but not sent (its send failed, or the
/// reconciler stopped in between) leaves them standing: the full mix's seed 701 with cancels,
/// where undoing an unsent re-send to the generation below it marked a worker's unsent wake
/// as sent and made the live copy stale. A failure is logged: the older copies then stand
/// beside the new one until the next raise.
async fn mark_sent(ctx: &Ctx, msgs: &[Outgoing]) {
    let execs = ctx.execs();
    for m in msgs {
        let key = ExecKey::of_message(&m.message);
        if let Err(e) = execs.note_wait_sent(&key, m.message.wait_gen).await {
            tracing::warn!(execution = %key.id(), error = %e, "could not mark a re-send sent; its older copies still stand");
        }
    }
}

/// What every look of one run shares: the clients, the settings, the lanes found backlogged, and
/// the one count the looks add to. The looks run concurrently (`buffer_unordered`) and share it
/// by reference, so that count is atomic.
struct Pass<'a> {
    execs: ExecStore,
    reporter: missed::MissReporter,
    outcomes: Outcomes,
    opts: &'a ReconcileOptions,
    /// Pool lanes with a visible backlog ([`backlogged_lanes`]).
    backlogged: BTreeSet<(String, sundial_model::priority::Lane)>,
    /// Outcome events the looks sent ([`ReconcileReport::outcome_events`]).
    outcome_events: AtomicU64,
}

impl<'a> Pass<'a> {
    fn new(
        ctx: &Ctx,
        execs: ExecStore,
        opts: &'a ReconcileOptions,
        backlogged: BTreeSet<(String, sundial_model::priority::Lane)>,
    ) -> Self {
        let reporter = missed::MissReporter::new(ctx.ddb.clone(), opts.events.clone(), &ctx.cfg);
        // Notifications go to their pool's queue, whose consumer delivers them: no run waits
        // on a receiver (docs/outcomes.md).
        let queues = std::sync::Arc::new(sundial_store::queue::PoolQueues::new(
            ctx.queues.client().clone(),
            ctx.cfg.clone(),
        ));
        let outcomes = Outcomes::new(execs.clone(), reporter.clone(), opts.pause.clone()).with_queues(queues);
        Pass { execs, reporter, outcomes, opts, backlogged, outcome_events: AtomicU64::new(0) }
    }

    /// One due execution: read, brought up to date (outcome events nobody sent, a finish
    /// deadline passed), judged, and the verdict acted on.
    async fn look_at(&self, entry: &OpenEntry, now: DateTime<Utc>) -> Result<Done, ReconcileError> {
        let Some(seen) = self.execs.get(&entry.key, false).await? else { return Ok(Done::Missing) };
        let Some(seen) = self.flush_outbox(entry, seen, now).await? else { return Ok(Done::Missing) };
        let Some(seen) = self.finish_missed(entry, seen, now).await? else { return Ok(Done::Missing) };
        let now_ms = now.timestamp_millis();
        let grace = self.opts.grace_ms.clamp(1, GRACE_MS);
        // A held execution (its job was paused) is not a missed start; a reported one is done.
        let reported = seen.missed_at.is_some() || seen.held.is_some();
        let verdict = judge(&seen.exec, seen.resends, reported, now_ms, grace);
        if matches!(verdict, Verdict::Resend(_)) && self.waits_its_turn(&seen, now_ms, grace) {
            // A grace from now, in the index's terms (which count in default graces).
            if self.execs.look_again(&entry.key, &seen, now_ms + GRACE_MS).await? {
                return Ok(Done::Backlogged);
            }
            return Ok(Done::Raced);
        }
        self.act(entry, &seen, verdict, now).await
    }

    /// Outcome events a worker wrote and did not send (it crashed, or its PutEvents failed):
    /// sent, then the execution read again (`None`: it is gone).
    async fn flush_outbox(
        &self,
        entry: &OpenEntry,
        seen: Snapshot,
        now: DateTime<Utc>,
    ) -> Result<Option<Snapshot>, ReconcileError> {
        if seen.outbox.is_empty() {
            return Ok(Some(seen));
        }
        let flushed =
            Box::pin(self.outcomes.flush(&seen.exec, seen.exec.status, &seen.outbox, false, now)).await?;
        self.count_sent(flushed.sent.len());
        Ok(self.execs.get(&entry.key, true).await?)
    }

    /// Not finished by its finish deadline (still open, or finished after it): reported once,
    /// through the outbox the mark writes (docs/outcomes.md, "Finish deadlines"), then the
    /// execution read again (`None`: it is gone).
    ///
    /// A mark that lost a race (the fire finished, late, between the read and the mark) judges
    /// the fire again as it is now, a few times: the look that follows must not close a late
    /// finish unreported (the full mix's seed 1047: a worker's late finish landed 30 ms before
    /// the mark, and the same look then closed it).
    async fn finish_missed(
        &self,
        entry: &OpenEntry,
        mut seen: Snapshot,
        now: DateTime<Utc>,
    ) -> Result<Option<Snapshot>, ReconcileError> {
        let now_ms = now.timestamp_millis();
        for _ in 0..3 {
            if rules::finish_missed(&seen.exec, seen.finish_missed_at.is_some(), now_ms).is_none() {
                return Ok(Some(seen));
            }
            let kind = sundial_model::outcome::OutcomeKind::FinishDeadlineMissed;
            let pending = sundial_model::outcome::members(
                &[sundial_model::outcome::OutboxEntry::new(kind, seen.exec.attempt)],
                seen.exec.definition.outcome_notify.is_some(),
            );
            let next = rules::delivery_look(&seen.exec);
            let actor = &self.opts.actor;
            if self.execs.mark_finish_missed(&entry.key, &seen, &pending, next, actor, now_ms).await? {
                let status = seen.exec.status;
                let flushed = Box::pin(self.outcomes.flush(&seen.exec, status, &pending, true, now)).await?;
                self.count_sent(flushed.sent.len());
                return Ok(self.execs.get(&entry.key, true).await?);
            }
            let Some(now_seen) = self.execs.get(&entry.key, true).await? else { return Ok(None) };
            seen = now_seen;
        }
        Ok(Some(seen))
    }

    /// Whether a re-send is put off: its pool lane has a backlog and it is not that late, so it
    /// may just be waiting its turn.
    fn waits_its_turn(&self, seen: &Snapshot, now_ms: i64, grace: i64) -> bool {
        self.backlogged
            .contains(&(seen.exec.definition.pool.clone(), sundial_model::priority::lane_of(&seen.exec)))
            && rules::overdue_ms(&seen.exec, now_ms) < grace * rules::BACKLOG_GRACES
    }

    /// Acts on the verdict with one write conditioned on what was read (`Raced`: it changed
    /// meanwhile, a worker acted).
    async fn act(
        &self,
        entry: &OpenEntry,
        seen: &Snapshot,
        verdict: Verdict,
        now: DateTime<Utc>,
    ) -> Result<Done, ReconcileError> {
        let execs = &self.execs;
        Ok(match verdict {
            Verdict::Close => {
                if execs.close_open(&entry.key, seen).await? {
                    Done::Closed
                } else {
                    Done::Raced
                }
            }
            // Already where it should be (a reconciler with a shorter grace reads ahead): no write.
            Verdict::LookAgain(at) if seen.open_due == Some(at) => Done::LookedAgain,
            Verdict::LookAgain(at) => {
                if execs.look_again(&entry.key, seen, at).await? {
                    Done::LookedAgain
                } else {
                    Done::Raced
                }
            }
            Verdict::Missed { deadline, next } => self.missed_start(entry, seen, deadline, next, now).await?,
            Verdict::Aggregate => self.aggregate(entry, seen, now).await?,
            Verdict::Resend(next) => self.mark_resent(entry, seen, next, now).await?,
        })
    }

    /// Not started by its start deadline: marked, then reported (the report's failure is
    /// counted by [`tally`], the mark stays).
    async fn missed_start(
        &self,
        entry: &OpenEntry,
        seen: &Snapshot,
        deadline: i64,
        next: i64,
        now: DateTime<Utc>,
    ) -> Result<Done, ReconcileError> {
        let opts = self.opts;
        if !self.execs.mark_missed(&entry.key, seen, next, &opts.actor, now.timestamp_millis()).await? {
            // Claimed, cancelled or reported by someone else meanwhile: theirs to report.
            return Ok(Done::Raced);
        }
        let m = missed::FireMissed::of(&seen.exec, deadline, now, missed::MissReason::NotStarted);
        let pool = seen.exec.definition.pool.clone();
        Ok(Done::Missed(pool, self.reporter.report(&m, &opts.actor, now).await.err()))
    }

    /// Nothing acts on it: the re-send is noted on the execution, and its message is sent once
    /// the run's looks are done ([`resend`]).
    async fn mark_resent(
        &self,
        entry: &OpenEntry,
        seen: &Snapshot,
        next: i64,
        now: DateTime<Utc>,
    ) -> Result<Done, ReconcileError> {
        let now_ms = now.timestamp_millis();
        let Some(n) = self.execs.mark_resent(&entry.key, seen, next, &self.opts.actor, now_ms).await? else {
            return Ok(Done::Raced);
        };
        let pool = seen.exec.definition.pool.clone();
        let mut out = Outgoing::for_execution(&seen.exec, now);
        // The new chain's generation, raised by `mark_resent`.
        out.message.wait_gen = seen.wait_gen + 1;
        if seen.held.is_some() {
            tracing::debug!(execution = %entry.key.global_id(), resends = n, pool, "re-sending an execution held by a pause, for its worker to judge the hold again");
            return Ok(Done::HeldResent(pool, Box::new(out)));
        }
        tracing::warn!(execution = %entry.key.global_id(), status = seen.exec.status.as_str(), resends = n, pool, "re-sending a stranded execution");
        Ok(Done::Resent(pool, Box::new(out)))
    }

    /// The backstop for a waiting parent (`docs/children.md`): its children's final statuses,
    /// read from the children themselves, are recorded on it (each child's worker normally did
    /// that; a crash between a child's finish and its tally write loses nothing), and the parent
    /// ends when they are all final. Otherwise it is looked at again after a backoff.
    async fn aggregate(
        &self,
        entry: &OpenEntry,
        seen: &Snapshot,
        now: DateTime<Utc>,
    ) -> Result<Done, ReconcileError> {
        use sundial_model::children::verdict;
        let (execs, opts) = (&self.execs, self.opts);
        let parent = &seen.exec;
        if parent.map_reduce.is_some() {
            return crate::reconcile::mapreduce::aggregate(execs, entry, seen, now, opts).await;
        }
        let total = parent.children.as_ref().map_or(0, |t| t.total);
        let kids = execs.children_of(&entry.key).await?;
        let mut tally = ExecStore::tally_from(total, &kids);
        // What the children's workers recorded stays (a child replayed since is judged as it is now).
        if let Some(t) = &parent.children {
            for (tag, st) in &t.finished {
                tally.finished.entry(tag.clone()).or_insert(*st);
            }
        }
        if let Some(end) = verdict(&tally) {
            tracing::warn!(execution = %entry.key.global_id(), status = end.status().as_str(), "ending a waiting parent whose last child's tally write was lost");
            return Ok(if execs.complete_parent(&entry.key, parent, &end, &opts.actor, now).await? {
                Done::Closed
            } else {
                Done::Raced
            });
        }
        // Children still run: look again after one of their attempts could have ended.
        let next = now.timestamp_millis()
            + (i64::from(parent.definition.timeout_secs) * 1_000).clamp(GRACE_MS, rules::MAX_BACKOFF_MS);
        Ok(if execs.look_again(&entry.key, seen, next).await? { Done::LookedAgain } else { Done::Raced })
    }

    fn count_sent(&self, n: usize) {
        self.outcome_events.fetch_add(n as u64, Ordering::Relaxed);
    }
}

/// Emits a run's EMF lines.
pub fn emit_metrics(report: &ReconcileReport, now: DateTime<Utc>) {
    for line in report.metric_lines() {
        line.emit(now.timestamp_millis());
    }
}
