//! `maxRuns` in the scan (docs/schedule.md, "A run-count limit"): a limited job's fires are put
//! counted ([`ExecStore::put_counted`]), one after another in schedule order per job (jobs side
//! by side), so a limit reached mid-window keeps the earliest fires; after the puts, the jobs at
//! their limit are the ones the scan completes.

use super::batch::{self, Put};
use chrono::{DateTime, Utc};
use futures_util::stream::{self, StreamExt};
use std::collections::{BTreeMap, BTreeSet};
use sundial_model::{Execution, Job};
use sundial_store::executions::{ExecStore, PutOutcome};
use sundial_store::StoreError;

/// (tenant, job id).
pub(super) type JobRef = (String, String);

pub(super) fn job_ref(job: &Job) -> JobRef {
    (job.tenant.clone(), job.job_id.clone())
}

/// What the counted puts did.
pub(super) struct Counted {
    /// Every execution put or stepped past, with its outcome.
    pub(super) outcomes: Vec<(Execution, PutOutcome)>,
    /// Jobs that created a fire (their count is read after the puts).
    pub(super) counted: BTreeSet<JobRef>,
    /// Jobs whose limit refused a fire.
    pub(super) limited: BTreeSet<JobRef>,
}

/// Puts the fires of limited jobs (`puts`: each has `maxRuns`), per job in schedule order,
/// stopping at the first fire its limit refuses; a `fireOnce` batch walks as in `batch`.
pub(super) async fn put_in_order(
    execs: &ExecStore,
    puts: Vec<Put>,
    now: DateTime<Utc>,
    actor: &str,
    concurrency: usize,
) -> Result<Counted, StoreError> {
    let mut by_job: BTreeMap<JobRef, Vec<Put>> = BTreeMap::new();
    for p in puts {
        by_job.entry((p.exec.tenant.clone(), p.exec.job_id.clone())).or_default().push(p);
    }
    let walks: Vec<Result<(JobRef, batch::Walk), StoreError>> = stream::iter(by_job)
        .map(|(job, mut puts)| {
            let (execs, actor) = (execs.clone(), actor.to_string());
            async move {
                puts.sort_by_key(|p| p.exec.scheduled_at);
                let mut out = Vec::new();
                for p in &puts {
                    let (walk, limited) = batch::put_batch(&execs, p, now, &actor).await?;
                    out.extend(walk);
                    if limited {
                        return Ok((job, (out, true)));
                    }
                }
                Ok((job, (out, false)))
            }
        })
        .buffer_unordered(concurrency)
        .collect()
        .await;
    let mut c = Counted { outcomes: Vec::new(), counted: BTreeSet::new(), limited: BTreeSet::new() };
    for w in walks {
        let (job, (walk, limited)) = w?;
        if walk.iter().any(|(_, o)| *o == PutOutcome::Created) {
            c.counted.insert(job.clone());
        }
        if limited {
            c.limited.insert(job);
        }
        c.outcomes.extend(walk);
    }
    Ok(c)
}

/// The jobs of the group (`group`: its jobs) that created their last fire: the ones a limit refused a fire, and the
/// ones whose count (read strongly consistent after their puts) is at the limit. A crash before
/// the completion leaves the job enabled: its next fire is refused, which completes it then.
pub(super) async fn completed(
    execs: &ExecStore,
    group: &[&Job],
    counted: &BTreeSet<JobRef>,
    limited: &BTreeSet<JobRef>,
) -> Result<BTreeSet<JobRef>, StoreError> {
    let mut done = limited.clone();
    for job in group {
        let (Some(max), key) = (job.definition.max_runs, job_ref(job)) else { continue };
        if counted.contains(&key)
            && !done.contains(&key)
            && execs.runs(&job.tenant, &job.job_id, true).await? >= max
        {
            done.insert(key);
        }
    }
    Ok(done)
}
