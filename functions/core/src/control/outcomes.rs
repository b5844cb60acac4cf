//! The auto-pause (docs/outcomes.md): the control plane's pause, which the execution plane's
//! outbox flush calls through [`AutoPause`] when a job's dead fires in a row reach its
//! `autoPauseAfterDeadFires`. It is the same pause as `POST /v1/jobs/{jobId}/pause` (the fires
//! owed are put first, queued-ahead ones are held, the operations log records it), recorded as
//! the actor `auto-pause:{executionId}`; a resume undoes it and starts the count over.

use super::{jobs, Caller, Control, ControlError};
use crate::execution::outcome::{AutoPause, BoxFuture, OutcomeError};
use chrono::{DateTime, Utc};
use sundial_model::JobState;

/// [`AutoPause`] through a [`Control`].
#[derive(Debug)]
pub struct ControlPause {
    ctl: std::sync::Arc<Control>,
}

impl ControlPause {
    /// Pauses through `ctl`.
    pub fn new(ctl: Control) -> Self {
        ControlPause { ctl: std::sync::Arc::new(ctl) }
    }
}

impl AutoPause for ControlPause {
    fn pause<'a>(
        &'a self,
        tenant: &'a str,
        job_id: &'a str,
        execution_id: &'a str,
        now: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<(), OutcomeError>> {
        let (ctl, job) = (self.ctl.clone(), job_id.to_string());
        let caller = Caller { tenant: tenant.to_string(), principal: format!("auto-pause:{execution_id}") };
        let actor = format!("auto-pause:{execution_id}");
        Box::pin(async move {
            // Its own task: the pause is deep (owed fires, the sweep, the versioned write), and
            // a flush runs it from deep inside a reconciler's or a worker's future.
            let scope = crate::access::current();
            let task = tokio::spawn(crate::access::within(scope, async move {
                jobs::set_state_as(&ctl, &caller, &actor, &job, JobState::Paused, None, now).await.map(|_| ())
            }));
            let r = task.await.map_err(|e| OutcomeError::Pause(format!("the pause task failed: {e}")))?;
            match r {
                Ok(_) => Ok(()),
                // Deleted or gone meanwhile: nothing left to pause.
                Err(ControlError::NotFound { .. }) | Err(ControlError::Conflict { .. }) => Ok(()),
                Err(e) if e.is_retryable() => Err(OutcomeError::Pause(e.to_string())),
                Err(e) => {
                    tracing::error!(job = job_id, error = %e, "auto-pause refused; the job stays as it is");
                    Ok(())
                }
            }
        })
    }
}
