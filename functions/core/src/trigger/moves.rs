//! Where a dispatch moves its jobs once their fires are put: a job the group could not plan
//! parks in the admission partition ([`Dispatch::park`]), and each job that leaves its class or
//! bucket, or completes its `maxRuns`, moves by a CAS on the position it was read at
//! ([`Dispatch::advance`]). Split from `scan.rs`, whose dispatch calls them.

use super::limit::{job_ref, JobRef};
use super::report::{ScanError, ScanReport};
use super::scan::{Dispatch, Group, Move, Parked, Planned, WRITE_CONCURRENCY};
use futures_util::stream::{self, StreamExt};
use std::collections::BTreeSet;
use sundial_model::DueClass;
use sundial_store::executions::ExecStore;
use sundial_store::jobs::{self, Advance};
use sundial_store::StoreError;

impl Dispatch<'_> {
    /// Moves the jobs this group could not plan into the admission partition at the first fire
    /// not planned for them, where every tick tries again without holding the watermark.
    /// Left where they were, a bucket job sat in a bucket no later walk reads, and the
    /// watermark moved past an every-minute or daily job's fires: both were lost. A job read
    /// from admission stays there (nothing to write). Like [`Dispatch::advance`], a job leaving
    /// a verified class has its open fires indexed first.
    pub(super) async fn park(&self, parked: Vec<Parked>, report: &mut ScanReport) -> Result<(), ScanError> {
        if self.class == Group::Admission {
            return Ok(());
        }
        let execs = self.ctx.execs();
        let (ddb, table) = (&self.ctx.ddb, &self.ctx.cfg.jobs_table);
        for (job, read_next, resume) in parked {
            if self.class.verified() {
                let now_ms = self.now.timestamp_millis();
                report.verify_tracked +=
                    u64::from(execs.track_job_since(&job.tenant, &job.job_id, self.since_ms, now_ms).await?);
            }
            match jobs::advance_job(ddb, table, &job, read_next, Some(resume), DueClass::Admission).await? {
                Advance::Advanced => report.advanced += 1,
                Advance::Lost => report.advance_lost += 1,
            }
        }
        Ok(())
    }

    /// Moves each job that leaves its class (or its bucket) with a CAS on the position it was
    /// read at. A job leaving a verified class takes its fires out of the verification pass's
    /// reach: its open ones (since the shard's verified minute) go into the `open` index first,
    /// so a crash between the two leaves them covered twice, never zero times.
    pub(super) async fn advance(
        &self,
        execs: &ExecStore,
        group: &Planned,
        decisions: &[Option<DueClass>],
        done: &BTreeSet<JobRef>,
        report: &mut ScanReport,
    ) -> Result<(), ScanError> {
        // A job that created its last fire (`maxRuns`) is completed instead, whatever its class.
        let moves: Vec<Move> = group
            .iter()
            .zip(decisions)
            .filter_map(|((job, _, read_next, plan), d)| {
                if done.contains(&job_ref(job)) {
                    return Some((job.clone(), *read_next, None, None));
                }
                d.map(|to| (job.clone(), *read_next, plan.new_next, Some(to)))
            })
            .collect();
        if self.class.verified() {
            let now_ms = self.now.timestamp_millis();
            for (job, ..) in &moves {
                report.verify_tracked +=
                    u64::from(execs.track_job_since(&job.tenant, &job.job_id, self.since_ms, now_ms).await?);
            }
        }
        let (now, retention) = (self.now, crate::missed::OPS_RETENTION_SECS);
        let advances: Vec<Result<(bool, Advance), StoreError>> = stream::iter(moves)
            .map(|(job, read_next, new_next, class)| {
                let (ddb, cfg) = (self.ctx.ddb.clone(), self.ctx.cfg.clone());
                async move {
                    match class {
                        Some(class) => {
                            jobs::advance_job(&ddb, &cfg.jobs_table, &job, read_next, new_next, class)
                                .await
                                .map(|a| (false, a))
                        }
                        None => {
                            let runs = job.definition.max_runs.unwrap_or_default();
                            jobs::complete_job(&ddb, &cfg, &job, runs, now, retention)
                                .await
                                .map(|a| (true, a))
                        }
                    }
                }
            })
            .buffer_unordered(WRITE_CONCURRENCY)
            .collect()
            .await;
        for a in advances {
            match a? {
                (true, Advance::Advanced) => report.completed += 1,
                (false, Advance::Advanced) => report.advanced += 1,
                (_, Advance::Lost) => report.advance_lost += 1,
            }
        }
        Ok(())
    }
}
