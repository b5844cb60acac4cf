//! Stable error codes written to `ec` and to audit events (the API and the DLQ show them).
//! (re-exported as `retry::codes`, where they were first defined).

/// The run exceeded the job's `timeoutSecs`.
pub const TIMEOUT: &str = "Timeout";
/// A previous attempt's lease expired (its worker crashed or paused) and was taken over.
pub const LEASE_EXPIRED: &str = "LeaseExpired";
/// `maxAttempts` used up.
pub const ATTEMPTS_EXHAUSTED: &str = "AttemptsExhausted";
/// Past `maxAgeSecs` since the scheduled instant.
pub const MAX_AGE_EXCEEDED: &str = "MaxAgeExceeded";
/// The total run time across attempts exceeded its budget.
pub const RUN_BUDGET_EXHAUSTED: &str = "RunBudgetExhausted";
/// Cancelled by a user or by the REPLACE policy.
pub const CANCELED: &str = "Canceled";
/// Skipped by the FORBID policy because another run of the job was in progress.
pub const FORBID_OVERLAP: &str = "ForbidOverlap";
/// A webhook address that the deployment does not allow (loopback, link-local, private
/// outside its listed networks).
pub const ADDRESS_REFUSED: &str = "TargetAddressRefused";
/// A target the deployment's policy refuses for this tenant: outside the tenant's
/// allowlist, or one of Sundial's own queues.
pub const TARGET_NOT_ALLOWED: &str = "TargetNotAllowed";
/// A target's secret, function or queue is not the tenant's own (missing, refused, or not
/// tagged `sundial-tenant=<tenant>`: one code and one message for all, so nothing of another
/// tenant's resources is revealed).
pub const TARGET_NOT_OWNED: &str = "TargetNotOwned";
/// An in-process handler name that this worker does not have.
pub const UNKNOWN_HANDLER: &str = "UnknownHandler";
/// The target's configuration cannot work (bad URL, missing function, wrong pool type).
pub const BAD_TARGET: &str = "BadTarget";
/// A note (no transition): the reconciler sent the message of an execution nothing was
/// acting on (its message was lost, never sent, or dead-lettered).
pub const RESENT: &str = "Resent";
/// A note: a pause holds a queued-ahead execution (it runs only if the job is resumed before
/// its instant).
pub const HELD: &str = "HeldByPause";
/// A note: a resume before its instant released a held execution.
pub const UNHELD: &str = "ReleasedByResume";
/// A note: a backfill, or a resume's catch-up, replays the instant of this queued-ahead fire,
/// which the job's pause kept from running (held by it, or put by a scan that raced it): it now
/// runs as a backfilled fire would, at its paced start, whatever the job's state.
pub const CAUGHT_UP: &str = "CaughtUp";
/// A note: an edit moved a queued-ahead execution to the new definition version.
pub const AMENDED: &str = "Amended";
/// Canceled because an edit removed its instant from the schedule.
pub const SUPERSEDED: &str = "Superseded";
/// Canceled before its first claim: a `fireOnce` batch stands for its instant (a scan put
/// the batch while another, planning the job from another position, put this fire;
/// docs/simulation.md, K6).
pub const COVERED_BY_BATCH: &str = "CoveredByBatch";
/// A note: a `fireOnce` batch, before its first claim, found instants of its range with
/// executions of their own already decided, and stands for the others only (`mx`).
pub const EXCEPTED_FROM_BATCH: &str = "ExceptedFromBatch";
/// Canceled because the job was paused at its instant.
pub const PAUSED: &str = "Paused";
/// A note: the execution had not started by its job's start deadline (`startDeadlineSecs`);
/// the miss was reported (operations log, `FireMissed` event). It still runs.
pub const START_DEADLINE_MISSED: &str = "StartDeadlineMissed";
/// A note: the fire had not finished by its finish deadline (docs/outcomes.md).
pub const FINISH_DEADLINE_MISSED: &str = "FinishDeadlineMissed";
/// A note: an outcome event's HTTPS notification (`outcomeNotify`) failed
/// `MAX_NOTIFY_FAILURES` times and was given up; its bus event was sent (docs/outcomes.md).
pub const OUTCOME_NOTIFY_ABANDONED: &str = "OutcomeNotifyAbandoned";
/// Its upstream runs (`after`) were not satisfied by its dependency deadline: ended DEAD
/// (`onDependencyDeadline: fail`) or SKIPPED (`skip`) with this code.
pub const DEPENDENCY_NOT_MET: &str = "DependencyNotMet";
/// A note: its upstream runs were not satisfied by its dependency deadline and
/// `onDependencyDeadline: run` started it anyway.
pub const DEPENDENCY_DEADLINE_RUN: &str = "DependencyDeadlineRun";
/// A note: an event for its fire came before its instant (`events.oncePerPeriod`) and moved
/// its start to the event's arrival.
pub const ADVANCED_BY_EVENT: &str = "AdvancedByEvent";
/// A note: it waits for its upstream runs (`after`); the note names what is unmet.
pub const WAITING_FOR_UPSTREAM: &str = "WaitingForUpstream";
/// A note: the Step Functions execution this claim started or adopted, written as
/// `StepFunctionsExecution <executionArn>` (docs/targets.md).
pub const STEP_FUNCTIONS_EXECUTION: &str = "StepFunctionsExecution";
/// A note: the ECS task this claim started or adopted, written as `EcsTask <taskArn>`
/// (docs/targets.md).
pub const ECS_TASK: &str = "EcsTask";
