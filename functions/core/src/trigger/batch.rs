//! A `fireOnce` batch: its missed fires covered once, around the executions already there.
//!
//! A batch is keyed at the first missed fire after the job's position and stands for a range
//! of fires. Some of those may have executions already: a scan that put its fires and failed
//! before advancing (one of its concurrent puts failed, or it crashed) leaves the job's position
//! where it was, so the next scan plans the same fires again, later, and finds them missed. Its
//! batch is then put around what exists: the fires' executions in the range are read first (one
//! Query of the job's partition; batches follow outages, so they are rare), and the walk goes
//! forward from the first missed fire:
//!
//! - an execution at the fire (an ordinary fire, an earlier batch or continuation) stands for
//!   itself, or for its own range: the walk goes on after it (an existing READY one is sent
//!   again like any other);
//! - otherwise a batch keyed at the fire is put for the fires up to the next execution there
//!   (or the range end), and the walk goes on after it.
//!
//! So every missed fire is in exactly one execution, whichever scan put it. A put that finds
//! its key taken (a concurrent scan put it since the read) counts as an execution there.

use chrono::{DateTime, Duration, Utc};
use sundial_model::{Execution, Job};
use sundial_schedule::Schedule;
use sundial_store::executions::{CountedPut, ExecKey, ExecStore, PutOutcome, Snapshot};
use sundial_store::StoreError;

/// A planned execution with what its put needs: whether it gets an `open` index entry, and for
/// a `fireOnce` batch the job and schedule that plan its walk.
pub(super) struct Put {
    pub(super) exec: Execution,
    pub(super) indexed: bool,
    pub(super) batch_of: Option<(Job, std::sync::Arc<Schedule>)>,
}

impl Put {
    /// Creates the execution unless it exists; for a job with `maxRuns`, counted in the same
    /// write and refused past the limit ([`CountedPut::Limit`]; a `fireOnce` batch is one run).
    pub(super) async fn put(&self, execs: &ExecStore) -> Result<CountedPut, StoreError> {
        match self.exec.definition.max_runs {
            Some(max) => execs.put_counted(&self.exec, self.indexed, max).await,
            None => self.put_plain(execs).await.map(CountedPut::Put),
        }
    }

    /// Creates the execution unless it exists, uncounted (a job without `maxRuns`).
    pub(super) async fn put_plain(&self, execs: &ExecStore) -> Result<PutOutcome, StoreError> {
        if self.indexed {
            execs.put_new(&self.exec).await
        } else {
            execs.put_new_unindexed(&self.exec).await
        }
    }
}

/// The executions a walk put or stepped past, each with its outcome, and whether it stopped at
/// the job's `maxRuns`.
pub(super) type Walk = (Vec<(Execution, PutOutcome)>, bool);

/// The last fire an existing execution stands for: its range end for a batch, else itself.
fn covered_through(e: &Execution) -> DateTime<Utc> {
    e.missed_range.map_or(e.scheduled_at, |(_, last)| last)
}

/// Puts `put`'s batch around the executions already in its range (see the module docs), and
/// returns every execution of the walk with its outcome: the batches put (created, or found
/// existing) and the existing executions stepped past; the walk stops at a batch the job's
/// `maxRuns` refuses. `put` must be a batch.
pub(super) async fn put_batch(
    execs: &ExecStore,
    put: &Put,
    now: DateTime<Utc>,
    actor: &str,
) -> Result<Walk, StoreError> {
    let (Some((job, schedule)), Some((first, last))) = (&put.batch_of, put.exec.missed_range) else {
        return Ok(match put.put(execs).await? {
            CountedPut::Put(o) => (vec![(put.exec.clone(), o)], false),
            CountedPut::Limit => (Vec::new(), true),
        });
    };
    let existing: Vec<Snapshot> = execs
        .fires_between(&job.tenant, &job.job_id, first.timestamp_millis(), last.timestamp_millis())
        .await?
        .into_iter()
        // Only the schedule's own instants hold a fire: a trigger-now run at another instant
        // does not stand for one.
        .filter(|s| {
            schedule.next_after(s.exec.scheduled_at - Duration::milliseconds(1)) == Some(s.exec.scheduled_at)
        })
        .collect();
    let mut out = Vec::new();
    let mut ahead = existing.into_iter().peekable();
    let mut at = Some(first);
    while let Some(fire) = at.filter(|f| *f <= last) {
        // Executions before the fire were passed by a range already.
        while ahead.peek().is_some_and(|s| s.exec.scheduled_at < fire) {
            ahead.next();
        }
        let stood = match ahead.peek() {
            Some(s) if s.exec.scheduled_at == fire => {
                let s = ahead.next().unwrap_or_else(|| unreachable!("peeked"));
                let through = covered_through(&s.exec);
                let status = s.exec.status;
                out.push((s.exec, PutOutcome::Exists(status)));
                through
            }
            next => {
                // Up to the fire before the next execution there, or the range end.
                let end = next
                    .and_then(|s| schedule.prev_at_or_before(s.exec.scheduled_at - Duration::milliseconds(1)))
                    .filter(|e| *e >= fire)
                    .unwrap_or(last)
                    .min(last);
                let batch = Put {
                    exec: Execution::ready(job, schedule, fire, Some((fire, end)), now, actor),
                    indexed: put.indexed,
                    batch_of: None,
                };
                let CountedPut::Put(outcome) = batch.put(execs).await? else {
                    return Ok((out, true));
                };
                let through = match &outcome {
                    PutOutcome::Created => end,
                    // Put since the read: it stands for what it covers.
                    PutOutcome::Exists(_) => match execs.get(&ExecKey::of(&batch.exec), true).await? {
                        Some(s) => covered_through(&s.exec),
                        None => end,
                    },
                };
                out.push((batch.exec, outcome));
                through
            }
        };
        at = schedule.next_after(stood);
    }
    Ok((out, false))
}
