//! The claim protocol's pure rules (docs/execution.md §2), apart from the writes that apply them
//! ([`crate::store::executions::ExecStore`]):
//! - [`next_step`]: what a claimer does with an execution in its current state (claim it,
//!   complete a requested cancel, wait for its availability or for another worker's lease, or
//!   nothing because it is final). A lease counts as expired only [`LeaseTerms::skew_margin_ms`]
//!   after its end, and never for a worker whose clock is not trusted.
//! - [`Fence`]: what a claim gives its holder; every later write presents it.
//! - [`Finish`]: how an attempt ends, and the status that writes.
//!
//! No I/O here: the claim loop and the tests call these with a snapshot and `now`.

use crate::retry::RunError;
use crate::{ExecStatus, Execution};

/// What a claim gives its holder: every later write must present it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    /// The worker that claimed.
    pub owner: String,
    /// The fencing token this claim set.
    pub token: u64,
    /// The attempt number this claim started (1-based).
    pub attempt: u32,
    /// Whether the execution was in the reconciler's `open` index when claimed. Fires of
    /// every-minute and daily jobs are not (`trigger::verify`); their final write then has no
    /// index entry to remove, and a retry puts them in.
    pub indexed: bool,
}

impl Fence {
    /// Whether this claim is the execution's first start ever (the token it set is the first:
    /// see [`crate::Execution::never_claimed`]), not a retry, a takeover, a reduce or a replay.
    pub fn is_first_start(&self) -> bool {
        self.token == 1
    }
}

/// How long leases last and when another worker's lease counts as expired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseTerms {
    /// Lease length (ms); heartbeats renew it.
    pub duration_ms: i64,
    /// A lease is expired only this long after its end by the taker's clock (see `clock`).
    pub skew_margin_ms: i64,
    /// False when this worker's clock is not trusted: it then never takes over a lease.
    pub may_take_over: bool,
}

/// What a claimer should do with an execution in its current state: pure, for tests and for the
/// claim loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// CAS it to RUNNING.
    Claim {
        /// Current status.
        from: ExecStatus,
        /// Current token.
        token: u64,
        /// Current attempt count.
        attempt: u32,
    },
    /// A cancel was requested and nobody is running it: CAS it to CANCELED.
    Cancel {
        /// Current status.
        from: ExecStatus,
        /// Current token.
        token: u64,
        /// Current attempt count.
        attempt: u32,
    },
    /// Wait until then (ms).
    NotYet(i64),
    /// Someone holds it until then (ms, margin included).
    Held(i64),
    /// Final.
    Finished(ExecStatus),
}

/// Decides what a claimer does with `e` at `now_ms`.
pub fn next_step(e: &Execution, terms: &LeaseTerms, now_ms: i64) -> Step {
    let (token, attempt) = (e.fencing_token, e.attempt);
    match e.status {
        ExecStatus::Ready | ExecStatus::RetryWait => {
            if e.cancel_requested {
                Step::Cancel { from: e.status, token, attempt }
            } else if e.available_at > now_ms {
                Step::NotYet(e.available_at)
            } else {
                Step::Claim { from: e.status, token, attempt }
            }
        }
        ExecStatus::Running => {
            let expires = e.lease_until.unwrap_or(0).saturating_add(terms.skew_margin_ms);
            let live =
                expires >= now_ms && !sundial_mutants::active(sundial_mutants::Mutant::TakeoverLiveLease);
            if live || !terms.may_take_over {
                Step::Held(expires.max(now_ms))
            } else if e.cancel_requested {
                Step::Cancel { from: e.status, token, attempt }
            } else {
                Step::Claim { from: e.status, token, attempt }
            }
        }
        s => Step::Finished(s),
    }
}

/// How an attempt ends.
#[derive(Debug, Clone, PartialEq)]
pub enum Finish {
    /// Done.
    Succeeded,
    /// A retryable error with budget left: claimable again at `available_at`.
    RetryWait {
        /// When (ms).
        available_at: i64,
        /// The error.
        error: RunError,
        /// Run time of all finished attempts including this one (ms).
        total_run_ms: i64,
    },
    /// A permanent error.
    Failed {
        /// The error.
        error: RunError,
    },
    /// Out of budget: `reason` names the budget, `error` is the last error.
    Dead {
        /// The budget that ran out (a [`super::retry::codes`] value).
        reason: String,
        /// The last error.
        error: RunError,
        /// Input digest.
        digest: String,
    },
    /// Cancelled while running (the handler saw the flag).
    Canceled,
}

impl Finish {
    /// The status this finish writes.
    pub fn status(&self) -> ExecStatus {
        match self {
            Finish::Succeeded => ExecStatus::Succeeded,
            Finish::RetryWait { .. } => ExecStatus::RetryWait,
            Finish::Failed { .. } => ExecStatus::Failed,
            Finish::Dead { .. } => ExecStatus::Dead,
            Finish::Canceled => ExecStatus::Canceled,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{JobDefinition, Target};
    use sundial_schedule::ScheduleSpec;

    fn exec(status: ExecStatus, avail: i64, lease_until: Option<i64>, cancel: bool) -> Execution {
        let t = crate::ms_to_dt(1_000_000);
        Execution {
            tenant: "t".into(),
            job_id: "j".into(),
            scheduled_at: t,
            fire_at: t,
            created_at: t,
            status,
            attempt: 1,
            fencing_token: 7,
            lease_owner: lease_until.map(|_| "w".into()),
            lease_until,
            available_at: avail,
            def_version: 1,
            definition: JobDefinition {
                schedule: ScheduleSpec::new("rate(1 minute)", "UTC"),
                pool: "default".into(),
                target: Target::http("https://example.com"),
                params: serde_json::Value::Null,
                params_ref: None,
                misfire: Default::default(),
                misfire_threshold_secs: 60,
                concurrency: Default::default(),
                retry: Default::default(),
                timeout_secs: 30,
                start_deadline_secs: None,
                finish_deadline_secs: None,
                resources: Vec::new(),
                priority: Default::default(),
                shards: None,
                broadcast: None,
                map_reduce: None,
                after: Vec::new(),
                dependency_deadline_secs: None,
                on_dependency_deadline: Default::default(),
                events: None,
                outcome_events: None,
                outcome_notify: None,
                auto_pause_after_dead_fires: None,
                max_runs: None,
            },
            missed_range: None,
            missed_except: Vec::new(),
            last_error: None,
            cancel_requested: cancel,
            timeline: vec![],
            child: None,
            children: None,
            map_reduce: None,
        }
    }

    const TERMS: LeaseTerms = LeaseTerms { duration_ms: 30_000, skew_margin_ms: 2_000, may_take_over: true };

    #[test]
    fn ready_and_retry_wait_are_claimable_once_available() {
        let claim = |st| Step::Claim { from: st, token: 7, attempt: 1 };
        assert_eq!(
            next_step(&exec(ExecStatus::Ready, 100, None, false), &TERMS, 100),
            claim(ExecStatus::Ready)
        );
        assert_eq!(next_step(&exec(ExecStatus::Ready, 101, None, false), &TERMS, 100), Step::NotYet(101));
        assert_eq!(
            next_step(&exec(ExecStatus::RetryWait, 50, None, false), &TERMS, 100),
            claim(ExecStatus::RetryWait)
        );
        assert_eq!(next_step(&exec(ExecStatus::RetryWait, 500, None, false), &TERMS, 100), Step::NotYet(500));
    }

    #[test]
    fn a_running_lease_expires_only_after_the_skew_margin() {
        // GIVEN a lease that ended at 10 s and a 2 s margin
        let e = exec(ExecStatus::Running, 0, Some(10_000), false);
        // THEN at 11.9 s it is still held, at 12.001 s it may be taken over
        assert_eq!(next_step(&e, &TERMS, 11_900), Step::Held(12_000));
        assert_eq!(
            next_step(&e, &TERMS, 12_001),
            Step::Claim { from: ExecStatus::Running, token: 7, attempt: 1 }
        );
        // AND a worker with an untrusted clock never takes over
        let distrusted = LeaseTerms { may_take_over: false, ..TERMS };
        assert_eq!(next_step(&e, &distrusted, 99_000), Step::Held(99_000));
    }

    #[test]
    fn a_requested_cancel_is_completed_by_whoever_finds_it_idle() {
        let e = exec(ExecStatus::Running, 0, Some(10_000), true);
        assert_eq!(next_step(&e, &TERMS, 11_000), Step::Held(12_000), "the holder handles its own cancel");
        assert_eq!(
            next_step(&e, &TERMS, 13_000),
            Step::Cancel { from: ExecStatus::Running, token: 7, attempt: 1 }
        );
        let e = exec(ExecStatus::RetryWait, 99_999, None, true);
        assert_eq!(
            next_step(&e, &TERMS, 0),
            Step::Cancel { from: ExecStatus::RetryWait, token: 7, attempt: 1 }
        );
    }

    #[test]
    fn final_statuses_are_left_alone() {
        for st in [
            ExecStatus::Succeeded,
            ExecStatus::Failed,
            ExecStatus::Dead,
            ExecStatus::Canceled,
            ExecStatus::Skipped,
        ] {
            assert_eq!(next_step(&exec(st, 0, None, false), &TERMS, 0), Step::Finished(st));
        }
    }
}
