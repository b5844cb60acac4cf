//! Step Functions target: starts an execution of a tenant's state machine (a standard workflow)
//! with the [`Invocation`] as its input, then tracks it with `DescribeExecution` until it
//! closes. SUCCEEDED is the attempt's success; FAILED, TIMED_OUT and ABORTED fail the attempt
//! (retryable: the job's retry policy decides) with the execution's own error and cause.
//!
//! Why the name is the fire's, not random: a worker that loses its lease while the execution
//! runs is replaced by another claim, whose invocation differs (its fencing token). Step
//! Functions refuses a second execution of one name on one machine (`ExecutionAlreadyExists`,
//! or the same execution back when the input is identical and it still runs), so the new holder
//! adopts the execution the old one started and tracks it to the end: one fire, one execution.
//! A retry after a failed attempt is a new run of the fire and starts a new execution: the name
//! carries the fire's run number, which counts the attempts that ended in failure (a takeover
//! or a release does not end an attempt's run; [`run_of`]).
//!
//! The polling is paced by `tokio::time::sleep` (the simulator's and tests' paused clock) and
//! bounded by the job's `timeoutSecs`, which the worker enforces around the whole call while its
//! heartbeats keep the lease.
//!
//! A refused call is stored (and shown to the tenant) as its code and a generic sentence; AWS's
//! message, which names roles and accounts, is logged with the execution id.

use super::Invocation;
use aws_sdk_sfn::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_sfn::types::ExecutionStatus;
use std::time::Duration;
use sundial_model::retry::RunError;
use sundial_model::{ExecStatus, Execution};

/// Longest execution name Step Functions accepts.
pub const MAX_NAME: usize = 80;

/// The first pause between two `DescribeExecution` calls; each pause doubles up to
/// [`MAX_POLL`].
pub const FIRST_POLL: Duration = Duration::from_millis(500);

/// The longest pause between two `DescribeExecution` calls (three a minute per running fire, far
/// below the account's `DescribeExecution` rate).
pub const MAX_POLL: Duration = Duration::from_secs(20);

/// Longest `cause` kept in the attempt's error (the rest is cut).
const MAX_CAUSE: usize = 512;

/// How many times [`StepFunctionsCaller::stop`] tries to stop an execution (each try is the SDK's
/// own attempts).
pub const STOP_TRIES: u32 = 5;

/// The run number of a claimed fire: 1 + the attempts that ended in failure (RUNNING → a retry
/// wait, FAILED or DEAD, e.g. before a replay). A takeover or a released lease keeps the run
/// number, so the new holder adopts the execution already started.
pub fn run_of(e: &Execution) -> u32 {
    let ended = e
        .timeline
        .iter()
        .filter(|ev| {
            ev.from == Some(ExecStatus::Running)
                && matches!(ev.to, ExecStatus::RetryWait | ExecStatus::Failed | ExecStatus::Dead)
        })
        .count();
    u32::try_from(ended).unwrap_or(u32::MAX - 1) + 1
}

/// The execution name of `run` of the fire `execution_id` (`{tenant}:{job}@{ms}`):
/// [`fire_name`] within Step Functions' 80 characters.
pub fn execution_name(execution_id: &str, run: u32) -> String {
    fire_name(execution_id, run, MAX_NAME)
}

/// A name of `run` of the fire `execution_id` (`{tenant}:{job}@{ms}`) of at most `max` (≥ 40)
/// characters of `[A-Za-z0-9_-]`: readable `{tenant}_{job}_{ms}-r{run}` when the tenant and job
/// ids are of `[A-Za-z0-9-]` and it fits (the two `_` stand for `:` and `@`, so two fires never
/// share it); otherwise a prefix of it (`_` and other characters as `-`) and a 64-bit hash of
/// the whole id, `{prefix}_{hash:016x}-r{run}`, one `_` only, so it never equals a readable name.
/// Step Functions execution names and ECS `startedBy`/`clientToken` values.
pub fn fire_name(execution_id: &str, run: u32, max: usize) -> String {
    let suffix = format!("-r{run}");
    let plain = |c: char| c.is_ascii_alphanumeric() || c == '-';
    let readable = execution_id.matches(':').count() == 1
        && execution_id.matches('@').count() == 1
        && execution_id.chars().all(|c| plain(c) || c == ':' || c == '@');
    if readable && execution_id.len() + suffix.len() <= max {
        return format!("{}{suffix}", execution_id.replace([':', '@'], "_"));
    }
    let hash = sundial_hash::mix64(sundial_hash::fnv1a(execution_id.as_bytes()));
    let keep = max.saturating_sub(suffix.len() + 17);
    let prefix: String = execution_id.chars().map(|c| if plain(c) { c } else { '-' }).take(keep).collect();
    format!("{prefix}_{hash:016x}{suffix}")
}

/// The ARN of the execution `name` of the state machine `machine_arn`
/// (`arn:…:stateMachine:{machine}` → `arn:…:execution:{machine}:{name}`).
pub fn execution_arn(machine_arn: &str, name: &str) -> String {
    format!("{}:{name}", machine_arn.replacen(":stateMachine:", ":execution:", 1))
}

/// An execution this attempt tracks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Started {
    /// Its ARN.
    pub arn: String,
    /// Whether an earlier claim of the fire had started it (this one adopted it).
    pub adopted: bool,
}

/// Starts and tracks executions of tenants' state machines.
#[derive(Debug, Clone)]
pub struct StepFunctionsCaller {
    client: aws_sdk_sfn::Client,
}

impl StepFunctionsCaller {
    /// A target using `client` (the tenant's session).
    pub fn new(client: aws_sdk_sfn::Client) -> Self {
        StepFunctionsCaller { client }
    }

    /// Starts the execution `name` of `machine_arn` with `inv` as its input, or adopts the one of
    /// that name an earlier claim of the fire started.
    pub async fn start(&self, machine_arn: &str, name: &str, inv: &Invocation) -> Result<Started, RunError> {
        let req =
            self.client.start_execution().state_machine_arn(machine_arn).name(name).input(inv.to_json());
        match req.send().await {
            Ok(out) => Ok(Started { arn: out.execution_arn().to_string(), adopted: false }),
            Err(e) if e.as_service_error().is_some_and(|s| s.is_execution_already_exists()) => {
                tracing::info!(execution = %inv.execution_id, name, "adopting the Step Functions execution an earlier claim started");
                Ok(Started { arn: execution_arn(machine_arn, name), adopted: true })
            }
            Err(e) => {
                tracing::warn!(execution = %inv.execution_id, machine_arn, detail = %DisplayErrorContext(&e), "the Step Functions target failed to start");
                Err(classify(e))
            }
        }
    }

    /// Whether the fire's previous run `arn` still stands for it: RUNNING (a stop that did not
    /// land) or SUCCEEDED (it closed as its attempt timed out, or the attempt's tracking failed).
    /// Then the next run adopts it instead of starting beside it or doing the work twice. `Ok(false)`
    /// when it failed, was stopped or never started; an unanswered look is a retryable error
    /// (starting blind could run the fire twice).
    pub async fn previous_stands(&self, arn: &str, inv: &Invocation) -> Result<bool, RunError> {
        match self.client.describe_execution().execution_arn(arn).send().await {
            Ok(out) => Ok(matches!(out.status(), ExecutionStatus::Running | ExecutionStatus::Succeeded)),
            Err(e) if e.as_service_error().is_some_and(|s| s.is_execution_does_not_exist()) => Ok(false),
            Err(e) => {
                tracing::warn!(execution = %inv.execution_id, arn, detail = %DisplayErrorContext(&e), "could not look at the fire's previous Step Functions run");
                Err(classify(e))
            }
        }
    }

    /// Polls `started` until it closes: `Ok` when it SUCCEEDED, a retryable error with its error
    /// and cause when it FAILED, TIMED_OUT or was ABORTED. A throttled or unanswered poll is
    /// polled again; the worker's timeout bounds the whole wait.
    pub async fn track(&self, started: &Started, inv: &Invocation) -> Result<(), RunError> {
        let mut pause = FIRST_POLL;
        loop {
            match self.client.describe_execution().execution_arn(&started.arn).send().await {
                Ok(out) => {
                    if let Some(end) = closed(out.status(), out.error(), out.cause()) {
                        return end;
                    }
                }
                Err(e) => {
                    tracing::warn!(execution = %inv.execution_id, arn = %started.arn, detail = %DisplayErrorContext(&e), "DescribeExecution failed");
                    let err = classify(e);
                    if !err.is_retryable() {
                        return Err(err);
                    }
                }
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(MAX_POLL);
        }
    }

    /// Stops the execution `arn` (error `Sundial.Stopped`, `reason` as its cause), so that a
    /// retry never runs beside it. An execution never started or already closed is left as it
    /// is; a throttled or unanswered stop is tried again (up to [`STOP_TRIES`] times, the pause
    /// doubling from [`FIRST_POLL`]); any other failure is logged.
    pub async fn stop(&self, arn: &str, reason: &str, execution: &str) {
        let mut pause = FIRST_POLL;
        for tries_left in (0..STOP_TRIES).rev() {
            let req = self.client.stop_execution().execution_arn(arn).error("Sundial.Stopped").cause(reason);
            match req.send().await {
                Ok(_) => {
                    tracing::info!(execution, arn, reason, "stopped the fire's Step Functions execution");
                    return;
                }
                Err(e) if e.as_service_error().is_some_and(|s| s.is_execution_does_not_exist()) => {
                    tracing::info!(execution, arn, "no Step Functions execution to stop");
                    return;
                }
                Err(e) => {
                    tracing::warn!(execution, arn, detail = %DisplayErrorContext(&e), "StopExecution failed");
                    if tries_left == 0 || !classify(e).is_retryable() {
                        return;
                    }
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(MAX_POLL);
                }
            }
        }
    }
}

/// What a described status means: `None` while the execution runs.
fn closed(
    status: &ExecutionStatus,
    error: Option<&str>,
    cause: Option<&str>,
) -> Option<Result<(), RunError>> {
    let word = match status {
        ExecutionStatus::Succeeded => return Some(Ok(())),
        ExecutionStatus::Failed => "FAILED",
        ExecutionStatus::TimedOut => "TIMED_OUT",
        ExecutionStatus::Aborted => "ABORTED",
        _ => return None,
    };
    // The tenant's own state machine's error and cause: shown to the tenant as they are.
    let code =
        error.filter(|e| !e.is_empty()).map_or_else(|| format!("StepFunctions.{word}"), str::to_string);
    let mut message = format!("the Step Functions execution {word}");
    if let Some(c) = cause.filter(|c| !c.is_empty()) {
        message.push_str(": ");
        message.extend(c.chars().take(MAX_CAUSE));
    }
    Some(Err(RunError::retryable(code, message)))
}

fn classify<E, R>(e: SdkError<E, R>) -> RunError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    // Too many open executions on the account: they close, so a later attempt may start.
    if let SdkError::ServiceError(s) = &e {
        if s.err().code() == Some("ExecutionLimitExceeded") {
            return RunError::retryable(
                "ExecutionLimitExceeded",
                "the Step Functions target failed (ExecutionLimitExceeded)",
            );
        }
    }
    super::aws_error::classify_aws(e, "Step Functions target", "StepFunctionsCall")
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_sfn::operation::start_execution::StartExecutionError;

    #[test]
    fn a_plain_fire_gets_a_readable_name_with_its_run() {
        assert_eq!(execution_name("acme:settle@1764469800000", 1), "acme_settle_1764469800000-r1");
        assert_eq!(execution_name("acme:settle@1764469800000", 3), "acme_settle_1764469800000-r3");
    }

    #[test]
    fn an_id_that_does_not_fit_is_a_prefix_and_a_hash_and_never_a_readable_name() {
        let long = format!("acme:{}@1764469800000", "j".repeat(70));
        let n = execution_name(&long, 12);
        assert!(n.len() <= MAX_NAME, "{n}");
        assert!(n.starts_with("acme-jjj") && n.ends_with("-r12"), "{n}");
        assert_eq!(n.matches('_').count(), 1);
        // a child's id (and ids with `_` or `.`) are hashed too: distinct ids, distinct names
        let (a, b) = (execution_name("acme:a_b@1", 1), execution_name("acme:a-b@1", 1));
        assert_ne!(a, b);
        assert_eq!(b, "acme_a-b_1-r1");
        for n in [a, execution_name("acme:job.v2@1#3", 1), n] {
            assert!(n.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'), "{n}");
            assert!((1..=MAX_NAME).contains(&n.len()), "{n}");
        }
    }

    #[test]
    fn the_execution_arn_follows_from_the_machine_and_the_name() {
        assert_eq!(
            execution_arn("arn:aws:states:eu-west-1:123456789012:stateMachine:acme-settle", "acme_s_1-r1"),
            "arn:aws:states:eu-west-1:123456789012:execution:acme-settle:acme_s_1-r1"
        );
    }

    #[test]
    fn the_run_counts_failed_attempts_not_takeovers() {
        let def = sundial_model::JobDefinition::new(
            sundial_schedule::ScheduleSpec::new("rate(1 minute)", "UTC"),
            sundial_model::Target::http("https://x"),
        );
        let cfg = crate::config::Config::local("t-", &["default"], 8);
        let at = sundial_store::items::ms_to_dt(1_764_469_800_000);
        let job =
            sundial_model::Job::new(&cfg, "acme", "j", def.clone(), at).unwrap_or_else(|e| panic!("{e}"));
        let schedule = sundial_schedule::Schedule::parse(&def.schedule, at).unwrap_or_else(|e| panic!("{e}"));
        let mut e = Execution::ready(&job, &schedule, at, None, at, "test");
        let step = |e: &mut Execution, from, to| {
            let mut ev = e.timeline[0].clone();
            (ev.from, ev.to) = (Some(from), to);
            e.timeline.push(ev);
        };
        step(&mut e, ExecStatus::Ready, ExecStatus::Running);
        assert_eq!(run_of(&e), 1);
        // a takeover (RUNNING → RUNNING) and a released lease (RUNNING → READY) keep the run
        step(&mut e, ExecStatus::Running, ExecStatus::Running);
        step(&mut e, ExecStatus::Running, ExecStatus::Ready);
        assert_eq!(run_of(&e), 1);
        // a failed attempt ends it
        step(&mut e, ExecStatus::Running, ExecStatus::RetryWait);
        assert_eq!(run_of(&e), 2);
    }

    #[test]
    fn a_closed_execution_is_the_attempts_result_with_its_own_error() {
        assert_eq!(closed(&ExecutionStatus::Running, None, None), None);
        assert_eq!(closed(&ExecutionStatus::Succeeded, None, None), Some(Ok(())));
        let Some(Err(e)) = closed(&ExecutionStatus::Failed, Some("SettlementError"), Some("ledger closed"))
        else {
            panic!("a failure")
        };
        assert!(e.is_retryable());
        assert_eq!(e.code, "SettlementError");
        assert_eq!(e.message, "the Step Functions execution FAILED: ledger closed");
        let Some(Err(e)) = closed(&ExecutionStatus::Aborted, None, None) else { panic!("a failure") };
        assert_eq!(e.code, "StepFunctions.ABORTED");
    }

    #[test]
    fn a_refused_start_is_permanent_without_arns_a_throttled_one_retries() {
        let err =
            |code: &str| classify(super::super::aws_error::refused(code, 400, StartExecutionError::generic));
        let denied = err("AccessDeniedException");
        assert!(!denied.is_retryable());
        assert!(!denied.message.contains("arn:"), "{}", denied.message);
        assert!(!err("StateMachineDoesNotExist").is_retryable());
        assert!(err("ThrottlingException").is_retryable());
        assert!(err("ExecutionLimitExceeded").is_retryable());
    }
}
