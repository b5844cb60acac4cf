//! The domain model: job definitions (mutable, versioned) apart from executions (immutable
//! facts about one scheduled instant), as seed 000 §3 asks.
//!
//! A [`JobDefinition`] is what a user submits; a [`Job`] is its stored, versioned form with its
//! trigger position. An [`Execution`] snapshots the definition version and parameters it was
//! created with, so a later edit never changes what a past or already-queued run did.

use crate::config::Config;
use crate::keys;
use crate::schedule::{BusinessDays, MisfirePolicy, Schedule, ScheduleSpec};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Largest inline `params` document (bytes of JSON). Larger parameters are stored by reference
/// (`paramsRef`, e.g. an S3 URI the handler reads) so executions stay small: DynamoDB bills
/// writes per started KiB, and every execution copies its parameters.
pub const MAX_INLINE_PARAMS_BYTES: usize = 4 * 1024;

/// Most missed fires a `fireAll` misfire policy may replay (its `cap`): an every-second job
/// after a long outage must not plan a million executions.
pub const MAX_FIRE_ALL_CAP: u32 = 1_000;

/// What a user submits to create or update a job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JobDefinition {
    /// When the job fires.
    pub schedule: ScheduleSpec,
    /// The worker pool whose queue receives its executions.
    #[serde(default = "default_pool")]
    pub pool: String,
    /// What a worker calls.
    pub target: Target,
    /// Parameters passed to the target (inline, at most [`MAX_INLINE_PARAMS_BYTES`]).
    #[serde(default)]
    pub params: serde_json::Value,
    /// Reference to large parameters stored outside Sundial (passed through untouched).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params_ref: Option<String>,
    /// What to do with fires missed during an outage.
    #[serde(default)]
    pub misfire: MisfirePolicy,
    /// How late a fire may be before the misfire policy applies (seconds).
    #[serde(default = "default_misfire_threshold")]
    pub misfire_threshold_secs: u32,
    /// Whether runs of this job may overlap.
    #[serde(default)]
    pub concurrency: ConcurrencyPolicy,
    /// Retry budget and backoff.
    #[serde(default)]
    pub retry: RetryPolicy,
    /// Run timeout per attempt (seconds).
    #[serde(default = "default_timeout")]
    pub timeout_secs: u32,
    /// A fire that no worker has started this long after its scheduled instant is reported
    /// missed, once: an operations-log entry, a `FireMissed` event on the stack's bus and a
    /// `FiresMissed` count (docs/reconciler.md, "Start deadlines"). None: never reported.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "not_null")]
    pub start_deadline_secs: Option<u32>,
    /// Platform-wide resource limits its runs use (`["legacy-db"]`): a run starts only holding
    /// a unit of each, taken all or none at admission and given back at its end
    /// (docs/resources.md). Each must be a limit an operator defined.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<String>,
    /// Priority within its pool: `low` runs from the pool's low lane and is deferred first when
    /// the pool is busy (docs/priority.md). Left out when `normal`.
    #[serde(default, skip_serializing_if = "crate::priority::Priority::is_normal")]
    pub priority: crate::priority::Priority,
    /// Sharded job (issue 18): each fire runs as this many child executions, child `i` given
    /// `shardIndex = i` and `shardTotal` (docs/children.md). None: one run per fire.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "not_null")]
    pub shards: Option<u32>,
    /// Broadcast job (issue 18): each fire runs as one child execution per member of this set,
    /// each given its `member` (docs/children.md). Never for work that moves money.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "not_null")]
    pub broadcast: Option<crate::execution::children::Broadcast>,
    /// Map-reduce job (issue 18): an in-process handler's map emits items, each run as its own
    /// child execution, then a fenced reduce gets their results (docs/mapreduce.md).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "not_null")]
    pub map_reduce: Option<crate::execution::mapreduce::MapReduceSpec>,
}

/// Most resources one job may use.
pub const MAX_JOB_RESOURCES: usize = 8;

/// `#[serde(default, deserialize_with = "not_null")]`: an optional field that may be absent but
/// not `null` (the OpenAPI document does not allow null there, so neither does the parser; the
/// fuzzer found `businessCalendar: null` accepted).
pub(crate) fn not_null<'de, D: serde::Deserializer<'de>, T: serde::Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// Longest `startDeadlineSecs` (7 days): a fire not started a week late is long past any alert.
pub const MAX_START_DEADLINE_SECS: u32 = 7 * 86_400;

fn default_pool() -> String {
    "default".into()
}
fn default_misfire_threshold() -> u32 {
    60
}
fn default_timeout() -> u32 {
    300
}

/// Why a job definition or id was refused. Always permanent; `field` is the JSON path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct ValidationError {
    /// The offending field (`schedule.expression`, `pool`, `retry.maxAttempts`, ...).
    pub field: String,
    /// Why.
    pub reason: String,
}

fn invalid(field: impl Into<String>, reason: impl Into<String>) -> ValidationError {
    ValidationError { field: field.into(), reason: reason.into() }
}

impl JobDefinition {
    /// A definition with the same defaults a JSON body without the optional fields gets: pool
    /// `default`, no parameters, `fireOnce` misfires after 60 s, `ALLOW`, default retries, a
    /// 300 s timeout. Chain the `with_*` methods to change one (tests, examples, the demo job).
    pub fn new(schedule: ScheduleSpec, target: Target) -> Self {
        JobDefinition {
            schedule,
            pool: default_pool(),
            target,
            params: serde_json::Value::Null,
            params_ref: None,
            misfire: MisfirePolicy::default(),
            misfire_threshold_secs: default_misfire_threshold(),
            concurrency: ConcurrencyPolicy::default(),
            retry: RetryPolicy::default(),
            timeout_secs: default_timeout(),
            start_deadline_secs: None,
            resources: Vec::new(),
            priority: crate::priority::Priority::Normal,
            shards: None,
            broadcast: None,
            map_reduce: None,
        }
    }

    /// The worker pool.
    pub fn with_pool(mut self, pool: impl Into<String>) -> Self {
        self.pool = pool.into();
        self
    }

    /// Inline parameters.
    pub fn with_params(mut self, params: serde_json::Value) -> Self {
        self.params = params;
        self
    }

    /// The misfire policy.
    pub fn with_misfire(mut self, misfire: MisfirePolicy) -> Self {
        self.misfire = misfire;
        self
    }

    /// How late a fire may be before the misfire policy applies (seconds).
    pub fn with_misfire_threshold_secs(mut self, secs: u32) -> Self {
        self.misfire_threshold_secs = secs;
        self
    }

    /// The concurrency policy.
    pub fn with_concurrency(mut self, concurrency: ConcurrencyPolicy) -> Self {
        self.concurrency = concurrency;
        self
    }

    /// The retry policy.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// The run timeout per attempt (seconds).
    pub fn with_timeout_secs(mut self, secs: u32) -> Self {
        self.timeout_secs = secs;
        self
    }

    /// The start deadline (seconds after the scheduled instant).
    pub fn with_start_deadline_secs(mut self, secs: u32) -> Self {
        self.start_deadline_secs = Some(secs);
        self
    }

    /// The priority within its pool.
    pub fn with_priority(mut self, priority: crate::priority::Priority) -> Self {
        self.priority = priority;
        self
    }

    /// Validates `tenant`'s definition against the deployment (pools, target policy) and parses
    /// its schedule.
    pub fn validate(
        &self,
        cfg: &Config,
        tenant: &str,
        anchor: DateTime<Utc>,
    ) -> Result<Schedule, ValidationError> {
        self.validate_with(cfg, tenant, anchor, None)
    }

    /// [`JobDefinition::validate`] with the business calendar `schedule.businessCalendar`
    /// names, resolved (the version in force).
    pub fn validate_with(
        &self,
        cfg: &Config,
        tenant: &str,
        anchor: DateTime<Utc>,
        business: Option<Arc<BusinessDays>>,
    ) -> Result<Schedule, ValidationError> {
        let def = self;
        let schedule = Schedule::parse_with(&def.schedule, anchor, business)
            .map_err(|e| invalid(format!("schedule.{}", e.field()), e.reason()))?;
        if !cfg.pools.iter().any(|p| p == &def.pool) {
            return Err(invalid(
                "pool",
                format!("unknown pool {:?}; this deployment has {}", def.pool, cfg.pools.join(", ")),
            ));
        }
        let params_len = serde_json::to_string(&def.params).map(|s| s.len()).unwrap_or(usize::MAX);
        if params_len > MAX_INLINE_PARAMS_BYTES {
            return Err(invalid(
                "params",
                format!("{params_len} bytes inline; the limit is {MAX_INLINE_PARAMS_BYTES}: store large parameters elsewhere and pass paramsRef"),
            ));
        }
        if let Some(r) = &def.params_ref {
            if r.is_empty() || r.len() > 1024 {
                return Err(invalid("paramsRef", "must be 1-1024 characters"));
            }
        }
        // The one target policy, the same the worker applies before every call.
        cfg.targets.check(cfg, tenant, &def.target)?;
        let r = &def.retry;
        if r.max_attempts == 0 || r.max_attempts > 100 {
            return Err(invalid("retry.maxAttempts", "must be between 1 and 100"));
        }
        if r.base_delay_secs == 0 || r.base_delay_secs > r.max_delay_secs {
            return Err(invalid("retry.baseDelaySecs", "must be at least 1 and at most retry.maxDelaySecs"));
        }
        if r.max_delay_secs > 43_200 {
            return Err(invalid(
                "retry.maxDelaySecs",
                "must be at most 43200 (SQS visibility limit of 12 h)",
            ));
        }
        if def.timeout_secs == 0 || def.timeout_secs > 43_200 {
            return Err(invalid("timeoutSecs", "must be between 1 and 43200"));
        }
        if let crate::schedule::MisfirePolicy::FireAll { cap } = def.misfire {
            if cap == 0 || cap > MAX_FIRE_ALL_CAP {
                return Err(invalid("misfire.cap", format!("must be between 1 and {MAX_FIRE_ALL_CAP}")));
            }
        }
        if def.misfire_threshold_secs > 86_400 {
            return Err(invalid("misfireThresholdSecs", "must be at most 86400"));
        }
        validate_resources(&def.resources)?;
        if let Some(d) = def.start_deadline_secs {
            if d == 0 || d > MAX_START_DEADLINE_SECS {
                return Err(invalid(
                    "startDeadlineSecs",
                    format!("must be between 1 and {MAX_START_DEADLINE_SECS} (7 days)"),
                ));
            }
        }
        crate::execution::children::validate(def)?;
        crate::execution::mapreduce::validate(def)?;
        Ok(schedule)
    }
}

/// The syntax of a job's `resources` (that each names a defined limit is the control plane's
/// check, which reads them): ids, at most [`MAX_JOB_RESOURCES`], none twice.
fn validate_resources(resources: &[String]) -> Result<(), ValidationError> {
    if resources.len() > MAX_JOB_RESOURCES {
        return Err(invalid("resources", format!("at most {MAX_JOB_RESOURCES} resources per job")));
    }
    for (i, r) in resources.iter().enumerate() {
        let field = format!("resources[{i}]");
        crate::keys::validate_id("resources", r).map_err(|e| invalid(&field, e.reason))?;
        if resources[..i].contains(r) {
            return Err(invalid(field, format!("{r:?} is listed twice")));
        }
    }
    Ok(())
}

/// What a worker calls for an execution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase", rename_all_fields = "camelCase", deny_unknown_fields)]
pub enum Target {
    /// Invoke a Lambda function (RequestResponse).
    Lambda {
        /// Function name or ARN.
        function: String,
    },
    /// POST to an HTTPS webhook with `Idempotency-Key: <executionId>`, signed per Standard
    /// Webhooks when it names a signing secret (docs/webhooks.md).
    Http {
        /// The URL.
        url: String,
        /// ARN of the Secrets Manager secret holding the signing key(s): `whsec_<base64>`, or
        /// two of them (whitespace-separated) during a rotation. The value never enters Sundial's
        /// tables; the worker reads it when it calls.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signing_secret_arn: Option<String>,
        /// Extra request headers (e.g. `Authorization`) whose values are Secrets Manager secrets,
        /// by reference: `{"Authorization": {"secretArn": "arn:..."}}`. Names Sundial sets itself
        /// (`webhook-*`, `Idempotency-Key`, `Content-Type`, `Host`, `X-Sundial-*`, ...) are refused.
        #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
        headers: std::collections::BTreeMap<String, SecretRef>,
    },
    /// Send a message to a user's SQS queue.
    Sqs {
        /// Queue URL (`queueUrl`; `queue_url` is read from definitions stored before 0.2).
        #[serde(alias = "queue_url")]
        queue_url: String,
    },
    /// A Rust handler registered in the worker process (ECS pools). `inProcess`
    /// (`in_process` is read from definitions stored before 0.2).
    #[serde(alias = "in_process")]
    InProcess {
        /// Handler name.
        handler: String,
    },
}

impl Target {
    /// An unsigned webhook target.
    pub fn http(url: impl Into<String>) -> Self {
        Target::Http { url: url.into(), signing_secret_arn: None, headers: Default::default() }
    }
}

/// A value held in AWS Secrets Manager, by reference (the secret's string is the value).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SecretRef {
    /// The secret's ARN.
    pub secret_arn: String,
}

/// Seed 000 §10: what happens when a fire comes while the previous run is still going.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ConcurrencyPolicy {
    /// Runs may overlap.
    #[default]
    Allow,
    /// Skip this fire (recorded as SKIPPED with the reason).
    Forbid,
    /// Keep every fire; run them one at a time, in order.
    Serialize,
    /// Cancel the running one, then start.
    Replace,
}

/// Seed 000 §11: retry classification lives in the error; the budget lives here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RetryPolicy {
    /// Attempts in all (1 = no retry).
    #[serde(default = "d_attempts")]
    pub max_attempts: u32,
    /// Base of the exponential backoff (seconds).
    #[serde(default = "d_base")]
    pub base_delay_secs: u32,
    /// Cap of the backoff (seconds).
    #[serde(default = "d_max_delay")]
    pub max_delay_secs: u32,
    /// No retry once this long past the scheduled instant (seconds).
    #[serde(default = "d_max_age")]
    pub max_age_secs: u32,
}

fn d_attempts() -> u32 {
    3
}
fn d_base() -> u32 {
    2
}
fn d_max_delay() -> u32 {
    300
}
fn d_max_age() -> u32 {
    86_400
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: d_attempts(),
            base_delay_secs: d_base(),
            max_delay_secs: d_max_delay(),
            max_age_secs: d_max_age(),
        }
    }
}

/// Lifecycle of a job definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum JobState {
    /// Triggering.
    Enabled,
    /// Not triggering; executions already created for later fires are cancelled.
    Paused,
    /// Soft-deleted: not triggering, kept for the retention period.
    Deleted,
}

/// A stored job: its definition plus identity, version and trigger position.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// Owner.
    pub tenant: String,
    /// Id, unique within the tenant.
    pub job_id: String,
    /// Optimistic-concurrency version, +1 on each edit.
    pub version: u64,
    /// Enabled, paused or deleted.
    pub state: JobState,
    /// The current definition.
    pub definition: JobDefinition,
    /// Anchor of `rate()` schedules (the creation instant unless `schedule.start` is set).
    pub anchor: DateTime<Utc>,
    /// The next scheduled instant not yet turned into an execution (the trigger position).
    /// `None` when the schedule is exhausted or the job is not enabled.
    pub next_fire_at: Option<DateTime<Utc>>,
    /// Logical shard.
    pub shard: u32,
    /// Which `due` index partition the job waits in.
    pub due_class: DueClass,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last changed.
    pub updated_at: DateTime<Utc>,
    /// When the current definition took effect (creation, or the last edit).
    pub edited_at: DateTime<Utc>,
    /// The last pause: when it started and, once resumed, when it ended. A worker checks a
    /// scheduled execution's instant against it before the first claim.
    pub paused: Option<(DateTime<Utc>, Option<DateTime<Utc>>)>,
    /// The tz database release (`"2025b"`) the stored trigger position was computed with:
    /// set whenever `next_fire_at` is stored (create, edit, resume, each advance of the scan).
    /// The tzdb upgrade report compares the job's fires under it with the compiled release.
    pub tzdb_version: String,
    /// The business calendar chain (`(id, version)`, root first) the trigger position was
    /// computed with; empty without `schedule.businessCalendar`. The scan loads exactly these
    /// immutable versions; a calendar edit re-plans the job and records the new chain.
    pub calendar_versions: Vec<(String, u64)>,
}

impl Job {
    /// Whether the job was paused at `at`, as far as its last pause window tells.
    pub fn paused_at(&self, at: DateTime<Utc>) -> bool {
        match self.paused {
            Some((from, None)) => self.state == JobState::Paused && from <= at,
            Some((from, Some(until))) => from <= at && at < until,
            None => false,
        }
    }

    /// Builds a new enabled job (version 1) whose trigger position is its first fire after `now`.
    pub fn new(
        cfg: &Config,
        tenant: &str,
        job_id: &str,
        def: JobDefinition,
        now: DateTime<Utc>,
    ) -> Result<Self, ValidationError> {
        Job::new_with(cfg, tenant, job_id, def, now, None)
    }

    /// [`Job::new`] for a definition naming a business calendar: `business` is its resolved
    /// chain in force at `now`, recorded on the job.
    pub fn new_with(
        cfg: &Config,
        tenant: &str,
        job_id: &str,
        def: JobDefinition,
        now: DateTime<Utc>,
        business: Option<Arc<BusinessDays>>,
    ) -> Result<Self, ValidationError> {
        keys::validate_id("tenant", tenant).map_err(|e| invalid(e.field, e.reason))?;
        keys::validate_id("jobId", job_id).map_err(|e| invalid(e.field, e.reason))?;
        let anchor = def.schedule.start.unwrap_or(now);
        let calendar_versions = business.as_ref().map(|b| b.chain().to_vec()).unwrap_or_default();
        let schedule = def.validate_with(cfg, tenant, anchor, business)?;
        let next = schedule.next_after(now);
        Ok(Job {
            tenant: tenant.into(),
            job_id: job_id.into(),
            version: 1,
            state: JobState::Enabled,
            due_class: DueClass::Admission,
            definition: def,
            anchor,
            next_fire_at: next,
            shard: keys::shard_of(tenant, job_id, cfg.shards),
            created_at: now,
            updated_at: now,
            edited_at: now,
            paused: None,
            tzdb_version: crate::schedule::tzdb_version().to_string(),
            calendar_versions,
        })
    }
}

/// Where an enabled job waits in the `due` index (see [`crate::keys`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum DueClass {
    /// Just created, resumed or edited: scanned every tick until first dispatched.
    Admission,
    /// In the minute bucket of its next fire; moved on each dispatch.
    Bucket,
    /// Fires at least once a minute: never moved; its position is the shard watermark.
    Every,
    /// Fires at most once a day, always in this UTC minute of the day (0..1440): never moved
    /// while that holds; its position is the shard watermark.
    Daily(u32),
}

impl DueClass {
    /// The stored code.
    pub fn code(self) -> &'static str {
        match self {
            DueClass::Admission => "A",
            DueClass::Bucket => "B",
            DueClass::Every => "E",
            DueClass::Daily(_) => "D",
        }
    }
}

/// Status of an execution. Transitions are one-way (see [`ExecStatus::can_move_to`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[non_exhaustive]
pub enum ExecStatus {
    /// Created by the trigger, waiting for a worker.
    Ready,
    /// Claimed by a worker holding a lease and a fencing token.
    Running,
    /// Failed with a retryable error; claimable again after `available_at`.
    RetryWait,
    /// Done.
    Succeeded,
    /// Permanent (business) error: never retried.
    Failed,
    /// Retry budget exhausted; in the pool's DLQ.
    Dead,
    /// Cancelled before or during its run.
    Canceled,
    /// Not run by policy (FORBID while another run was going).
    Skipped,
    /// A sharded or broadcast parent whose children are running: final when every child is
    /// (`docs/children.md`). Nobody holds a lease on it.
    Waiting,
}

impl ExecStatus {
    /// The stored string.
    pub fn as_str(self) -> &'static str {
        match self {
            ExecStatus::Ready => "READY",
            ExecStatus::Running => "RUNNING",
            ExecStatus::RetryWait => "RETRY_WAIT",
            ExecStatus::Succeeded => "SUCCEEDED",
            ExecStatus::Failed => "FAILED",
            ExecStatus::Dead => "DEAD",
            ExecStatus::Canceled => "CANCELED",
            ExecStatus::Skipped => "SKIPPED",
            ExecStatus::Waiting => "WAITING",
        }
    }

    /// Parses a stored string.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|x| x.as_str() == s)
    }

    /// Every status.
    pub const ALL: [ExecStatus; 9] = [
        ExecStatus::Ready,
        ExecStatus::Running,
        ExecStatus::RetryWait,
        ExecStatus::Succeeded,
        ExecStatus::Failed,
        ExecStatus::Dead,
        ExecStatus::Canceled,
        ExecStatus::Skipped,
        ExecStatus::Waiting,
    ];

    /// No transition leaves a terminal status.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            ExecStatus::Succeeded
                | ExecStatus::Failed
                | ExecStatus::Dead
                | ExecStatus::Canceled
                | ExecStatus::Skipped
        )
    }

    /// The allowed edges of the one-way state machine (seed 000 §6). `Running -> Running` is a
    /// lease takeover (new token); `Dead -> Ready` is an audited DLQ replay.
    pub fn can_move_to(self, to: ExecStatus) -> bool {
        use ExecStatus::*;
        matches!(
            (self, to),
            (Ready, Running)
                | (Ready, Canceled)
                | (Ready, Skipped)
                | (RetryWait, Running)
                | (RetryWait, Canceled)
                | (RetryWait, Dead)
                | (Running, Running)
                | (Running, Succeeded)
                | (Running, RetryWait)
                | (Running, Failed)
                | (Running, Dead)
                | (Running, Canceled)
                | (Dead, Ready)
                | (Running, Waiting)
                | (Waiting, Succeeded)
                | (Waiting, Failed)
                | (Waiting, Canceled)
                | (Waiting, Ready)
        )
    }

    /// Whether executions in this status are indexed in `attention` (off the happy path).
    pub fn needs_attention(self) -> bool {
        matches!(self, ExecStatus::RetryWait | ExecStatus::Failed | ExecStatus::Dead | ExecStatus::Canceled)
    }
}

/// One entry of an execution's audit timeline, written in the same conditional write as the
/// transition it records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEvent {
    /// When (ms since epoch).
    pub at: i64,
    /// Who: `tick:<id>`, `worker:<id>`, `api:<principal>`.
    pub actor: String,
    /// From status (`None` for creation).
    pub from: Option<ExecStatus>,
    /// To status.
    pub to: ExecStatus,
    /// Attempt number after the transition.
    pub attempt: u32,
    /// Fencing token after the transition.
    pub token: u64,
    /// Error or reason code, if any.
    pub code: Option<String>,
}

impl AuditEvent {
    /// A note on an execution's timeline that changes no status (`from` = `to`, attempt and
    /// token kept): a re-send, a hold by a pause, an amendment by an edit. The state machine
    /// stays one-way: a note is not an edge of [`ExecStatus::can_move_to`].
    pub fn note(e: &Execution, at: i64, actor: &str, code: &str) -> Self {
        AuditEvent {
            at,
            actor: actor.to_string(),
            from: Some(e.status),
            to: e.status,
            attempt: e.attempt,
            token: e.fencing_token,
            code: Some(code.to_string()),
        }
    }

    /// Whether this event is a note (see [`AuditEvent::note`]) after `prev`.
    pub fn is_note_after(&self, prev: &AuditEvent) -> bool {
        self.from == Some(prev.to)
            && self.to == prev.to
            && self.token == prev.token
            && self.attempt == prev.attempt
    }
}

/// Audit code of a manual run's creation event.
pub const MANUAL_CODE: &str = "manual";
/// Audit code of a backfilled execution's creation event.
pub const BACKFILL_CODE: &str = "backfill";

/// An execution: one scheduled instant of one job.
#[derive(Debug, Clone, PartialEq)]
pub struct Execution {
    /// Owner.
    pub tenant: String,
    /// The job.
    pub job_id: String,
    /// The scheduled instant (with `job_id`, the primary key).
    pub scheduled_at: DateTime<Utc>,
    /// When it should start: `scheduled_at` plus the job's deterministic jitter.
    pub fire_at: DateTime<Utc>,
    /// When the trigger created it.
    pub created_at: DateTime<Utc>,
    /// Current status.
    pub status: ExecStatus,
    /// Attempts started so far.
    pub attempt: u32,
    /// Incremented by every claim; writes carrying an older token are refused.
    pub fencing_token: u64,
    /// Worker holding the lease.
    pub lease_owner: Option<String>,
    /// Lease expiry (ms).
    pub lease_until: Option<i64>,
    /// Earliest claim instant (ms): `fire_at`, or the end of a retry backoff.
    pub available_at: i64,
    /// Definition version used.
    pub def_version: u64,
    /// Snapshot of the definition used (pool, target, params, policies).
    pub definition: JobDefinition,
    /// For `fireOnce` misfires: the missed range this execution stands for.
    pub missed_range: Option<(DateTime<Utc>, DateTime<Utc>)>,
    /// Last error code and message.
    pub last_error: Option<(String, String)>,
    /// Cancellation requested while running.
    pub cancel_requested: bool,
    /// The audit trail.
    pub timeline: Vec<AuditEvent>,
    /// A child execution of a sharded or broadcast parent (the parent is the execution with
    /// the same job and instant and no child key): which child.
    pub child: Option<crate::execution::children::ChildKey>,
    /// A parent that fanned out: its children's count and the final ones counted so far.
    pub children: Option<crate::execution::children::Tally>,
    /// A map-reduce parent's phase and counts, or an item child's input and result.
    pub map_reduce: Option<crate::execution::mapreduce::MapState>,
}

impl Execution {
    /// A new READY execution for one fire of `job` at `scheduled_at`, created at `now` by
    /// `actor`. A missed fire (`missed_range` set: the fires it stands for) is dispatched at once;
    /// an on-time one at its (jittered) instant.
    pub fn ready(
        job: &Job,
        schedule: &Schedule,
        scheduled_at: DateTime<Utc>,
        missed_range: Option<(DateTime<Utc>, DateTime<Utc>)>,
        now: DateTime<Utc>,
        actor: &str,
    ) -> Self {
        // A missed fire is dispatched now; an on-time one at its (jittered) instant.
        let fire_at = schedule.dispatch_at(&job.job_id, scheduled_at).max(if missed_range.is_some() {
            now
        } else {
            scheduled_at
        });
        Execution {
            tenant: job.tenant.clone(),
            job_id: job.job_id.clone(),
            scheduled_at,
            fire_at,
            created_at: now,
            status: ExecStatus::Ready,
            attempt: 0,
            fencing_token: 0,
            lease_owner: None,
            lease_until: None,
            available_at: fire_at.timestamp_millis(),
            def_version: job.version,
            definition: job.definition.clone(),
            missed_range,
            last_error: None,
            cancel_requested: false,
            timeline: vec![AuditEvent {
                at: now.timestamp_millis(),
                actor: actor.to_string(),
                from: None,
                to: ExecStatus::Ready,
                attempt: 0,
                token: 0,
                code: missed_range.map(|_| "misfire_batch".to_string()),
            }],
            child: None,
            children: None,
            map_reduce: None,
        }
    }

    /// The public id (`{job}@{scheduled ms}`), relative to the caller's tenant (the API's).
    pub fn id(&self) -> String {
        crate::keys::child_execution_id(
            &crate::keys::execution_id(&self.job_id, self.scheduled_at.timestamp_millis()),
            self.child.as_ref(),
        )
    }

    /// The id outside the system (`{tenant}:{job}@{scheduled ms}`, see
    /// [`crate::keys::global_execution_id`]).
    pub fn global_id(&self) -> String {
        crate::keys::child_execution_id(
            &crate::keys::global_execution_id(
                &self.tenant,
                &self.job_id,
                self.scheduled_at.timestamp_millis(),
            ),
            self.child.as_ref(),
        )
    }
}

/// The SQS message that carries an execution to a worker: just its key. Small on purpose: the
/// execution item is the source of truth, and a duplicate or stale message is harmless.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecMessage {
    /// Tenant.
    #[serde(rename = "t")]
    pub tenant: String,
    /// Job id.
    #[serde(rename = "j")]
    pub job_id: String,
    /// Scheduled instant (ms).
    #[serde(rename = "s")]
    pub scheduled_ms: i64,
    /// Dispatch instant (ms), for queue-wait and lag metrics.
    #[serde(rename = "f")]
    pub fire_ms: i64,
    /// When the trigger enqueued it (ms).
    #[serde(rename = "e")]
    pub enqueued_ms: i64,
    /// The pool lane it travels in (absent: the main queue; docs/priority.md).
    #[serde(rename = "l", default, skip_serializing_if = "crate::priority::Lane::is_main")]
    pub lane: crate::priority::Lane,
    /// A child execution's key part (`s3`, `m-eu-west-1`; absent for every other execution).
    #[serde(rename = "c", default, skip_serializing_if = "Option::is_none")]
    pub child: Option<String>,
}

/// What an operations-log entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpsAction {
    /// Job created (version 1).
    Create,
    /// Definition edited.
    Update,
    /// Job paused.
    Pause,
    /// Job resumed.
    Resume,
    /// Job soft-deleted.
    Delete,
    /// Manual run.
    Trigger,
    /// Past range backfilled.
    Backfill,
    /// Execution cancelled.
    Cancel,
    /// Dead execution replayed.
    Replay,
    /// A fire not started by its job's start deadline (`startDeadlineSecs`), reported once.
    FireMissed,
    /// Business calendar created (`jobId` holds the calendar id).
    CalendarCreate,
    /// Business calendar edited: a new version (the jobs using it are re-planned, each with
    /// an `update` entry).
    CalendarUpdate,
    /// Business calendar deleted.
    CalendarDelete,
}

impl OpsAction {
    /// The stored (and API) name.
    pub fn as_str(self) -> &'static str {
        match self {
            OpsAction::Create => "create",
            OpsAction::Update => "update",
            OpsAction::Pause => "pause",
            OpsAction::Resume => "resume",
            OpsAction::Delete => "delete",
            OpsAction::Trigger => "trigger",
            OpsAction::Backfill => "backfill",
            OpsAction::Cancel => "cancel",
            OpsAction::Replay => "replay",
            OpsAction::FireMissed => "fire_missed",
            OpsAction::CalendarCreate => "calendar_create",
            OpsAction::CalendarUpdate => "calendar_update",
            OpsAction::CalendarDelete => "calendar_delete",
        }
    }

    /// The action of a stored name.
    pub fn parse(s: &str) -> Option<Self> {
        use OpsAction::*;
        [
            Create,
            Update,
            Pause,
            Resume,
            Delete,
            Trigger,
            Backfill,
            Cancel,
            Replay,
            FireMissed,
            CalendarCreate,
            CalendarUpdate,
            CalendarDelete,
        ]
        .into_iter()
        .find(|a| a.as_str() == s)
    }
}

/// One entry of a tenant's operations audit log: who changed what, when, from which version to
/// which.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpsEntry {
    /// When.
    pub at: DateTime<Utc>,
    /// Who (`api:<principal>`).
    pub actor: String,
    /// What.
    pub action: OpsAction,
    /// The job.
    pub job_id: String,
    /// Definition version before the change (none for create and execution operations).
    pub from_version: Option<u64>,
    /// Definition version after the change (or the version an execution was created with).
    pub to_version: Option<u64>,
    /// The execution concerned (cancel, replay, trigger).
    pub execution_id: Option<String>,
    /// Free-form detail (backfill range and counts, cancelled executions, ...).
    pub detail: Option<String>,
}

impl OpsEntry {
    /// An entry by `actor` at `now`.
    pub fn new(actor: impl Into<String>, action: OpsAction, job_id: &str, now: DateTime<Utc>) -> Self {
        OpsEntry {
            at: now,
            actor: actor.into(),
            action,
            job_id: job_id.to_string(),
            from_version: None,
            to_version: None,
            execution_id: None,
            detail: None,
        }
    }

    /// Sets the versions.
    pub fn versions(mut self, from: Option<u64>, to: Option<u64>) -> Self {
        self.from_version = from;
        self.to_version = to;
        self
    }

    /// Sets the execution.
    pub fn execution(mut self, id: impl Into<String>) -> Self {
        self.execution_id = Some(id.into());
        self
    }

    /// Sets the detail.
    pub fn detail(mut self, d: impl Into<String>) -> Self {
        self.detail = Some(d.into());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_are_camel_case_and_old_stored_spellings_still_read() {
        let def = JobDefinition::new(
            ScheduleSpec::new("* * * * *", "UTC"),
            Target::Sqs { queue_url: "https://sqs.example/q".into() },
        )
        .with_misfire(MisfirePolicy::FireAll { cap: 5 });
        let v = serde_json::to_value(&def).unwrap();
        assert_eq!(v["target"], serde_json::json!({"type": "sqs", "queueUrl": "https://sqs.example/q"}));
        assert_eq!(v["misfire"], serde_json::json!({"policy": "fireAll", "cap": 5}));
        let t: Target = serde_json::from_str(r#"{"type":"inProcess","handler":"h"}"#).unwrap();
        assert_eq!(t, Target::InProcess { handler: "h".into() });
        // Stored before 0.2: snake_case names still read back.
        let old: Target = serde_json::from_str(r#"{"type":"in_process","handler":"h"}"#).unwrap();
        assert_eq!(old, t);
        let old: Target = serde_json::from_str(r#"{"type":"sqs","queue_url":"https://q"}"#).unwrap();
        assert_eq!(old, Target::Sqs { queue_url: "https://q".into() });
        let old: MisfirePolicy = serde_json::from_str(r#"{"policy":"fire_all","cap":2}"#).unwrap();
        assert_eq!(old, MisfirePolicy::FireAll { cap: 2 });
        let back: MisfirePolicy = serde_json::from_value(v["misfire"].clone()).unwrap();
        assert_eq!(back, MisfirePolicy::FireAll { cap: 5 });
    }

    #[test]
    fn the_builder_starts_from_the_same_defaults_as_a_minimal_json_body() {
        // GIVEN the smallest body the API accepts
        let from_json: JobDefinition = serde_json::from_value(serde_json::json!({
            "schedule": {"expression": "rate(5 minutes)", "timezone": "Europe/Berlin"},
            "target": {"type": "http", "url": "https://example.com/hook"}
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        // WHEN the builder makes the same definition THEN they are equal
        let built = JobDefinition::new(
            ScheduleSpec::new("rate(5 minutes)", "Europe/Berlin"),
            Target::http("https://example.com/hook"),
        );
        assert_eq!(built, from_json);
        // AND each `with_*` changes exactly its field
        let tuned = built.clone().with_pool("slow").with_timeout_secs(9);
        assert_eq!((tuned.pool.as_str(), tuned.timeout_secs), ("slow", 9));
        assert_eq!(
            JobDefinition { pool: built.pool.clone(), timeout_secs: built.timeout_secs, ..tuned },
            built
        );
    }

    #[test]
    fn a_new_job_names_the_bad_field_and_starts_in_admission() {
        let cfg = Config {
            jobs_table: "j".into(),
            executions_table: "e".into(),
            queue_prefix: "q-".into(),
            pools: vec!["default".into()],
            shards: 16,
            horizon_secs: 60,
            targets: crate::outbound::TargetPolicy::default(),
            event_bus: None,
        };
        let def = JobDefinition::new(ScheduleSpec::new("rate(1 minute)", "UTC"), Target::http("https://x"));
        let now = crate::store::items::ms_to_dt(1_764_469_800_000);
        let job = Job::new(&cfg, "acme", "nightly", def.clone(), now).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((job.version, job.state, job.due_class), (1, JobState::Enabled, DueClass::Admission));
        assert_eq!(job.shard, keys::shard_of("acme", "nightly", 16));
        assert!(job.next_fire_at.is_some_and(|n| n > now));
        let err = Job::new(&cfg, "acme", "nightly", def.clone().with_pool("nope"), now).err();
        assert_eq!(err.map(|e| e.field), Some("pool".to_string()));
        let err = Job::new(&cfg, "acme", "bad id", def, now).err();
        assert_eq!(err.map(|e| e.field), Some("jobId".to_string()));
        for secs in [0, MAX_START_DEADLINE_SECS + 1] {
            let bad =
                JobDefinition::new(ScheduleSpec::new("rate(1 minute)", "UTC"), Target::http("https://x"))
                    .with_start_deadline_secs(secs);
            let err = Job::new(&cfg, "acme", "nightly", bad, now).err();
            assert_eq!(err.map(|e| e.field), Some("startDeadlineSecs".to_string()), "{secs}");
        }
        let ok = JobDefinition::new(ScheduleSpec::new("rate(1 minute)", "UTC"), Target::http("https://x"))
            .with_start_deadline_secs(MAX_START_DEADLINE_SECS);
        assert!(Job::new(&cfg, "acme", "nightly", ok, now).is_ok());
    }

    #[test]
    fn a_target_every_fire_would_refuse_is_refused_at_create() {
        // Issue 15 (outbound 6): create-time checks must be the worker's checks, or a job is
        // accepted and then fails on every fire.
        let cfg = Config::local("t-", &["default"], 16);
        let now = crate::store::items::ms_to_dt(1_764_469_800_000);
        let field = |target: Target| {
            let def = JobDefinition::new(ScheduleSpec::new("rate(1 minute)", "UTC"), target);
            Job::new(&cfg, "acme", "nightly", def, now).err().map(|e| e.field)
        };
        for url in [
            "http://example.com/hook",
            "https://169.254.169.254/latest",
            "https://[::1]/x",
            "https://10.0.0.1/",
        ] {
            assert_eq!(field(Target::http(url)), Some("target.url".to_string()), "{url}");
        }
        assert_eq!(field(Target::http("https://example.com/hook")), None);
        // Sundial's own pool queue and DLQ are not targets
        for q in [cfg.queue_name("default"), cfg.dlq_name("default")] {
            let url = format!("https://sqs.us-east-1.amazonaws.com/123456789012/{q}");
            assert_eq!(field(Target::Sqs { queue_url: url }), Some("target.queueUrl".to_string()), "{q}");
        }
    }

    #[test]
    fn a_tenant_allowlist_is_checked_at_create_with_the_field_named() {
        // GIVEN a deployment whose acme may call acme-* functions and queues and *.acme.com, and
        // every other tenant only webhooks
        let mut cfg = Config::local("t-", &["default"], 16);
        cfg.targets.tenants = Some(
            crate::outbound::TenantTargets::parse(
                r#"{"acme": {"lambda": ["arn:aws:lambda:*:*:function:acme-*"],
                             "sqs": ["https://sqs.*.amazonaws.com/123456789012/acme-*"],
                             "http": ["*.acme.com"]},
                    "*": {"http": ["*"]}}"#,
            )
            .unwrap_or_else(|e| panic!("{e}")),
        );
        let now = crate::store::items::ms_to_dt(1_764_469_800_000);
        let field = |tenant: &str, target: Target| {
            let def = JobDefinition::new(ScheduleSpec::new("rate(1 minute)", "UTC"), target);
            Job::new(&cfg, tenant, "nightly", def, now).err().map(|e| e.field)
        };
        let lambda = |f: &str| Target::Lambda { function: f.into() };
        let sqs = |q: &str| Target::Sqs {
            queue_url: format!("https://sqs.eu-west-1.amazonaws.com/123456789012/{q}"),
        };
        // THEN what is listed is accepted and everything else refused, naming the field
        assert_eq!(field("acme", lambda("arn:aws:lambda:eu-west-1:123456789012:function:acme-run")), None);
        assert_eq!(
            field("acme", lambda("arn:aws:lambda:eu-west-1:123456789012:function:globex-run")),
            Some("target.function".into())
        );
        assert_eq!(
            field("acme", lambda("acme-run")),
            Some("target.function".into()),
            "a bare name does not match an ARN glob"
        );
        assert_eq!(field("acme", sqs("acme-inbox")), None);
        assert_eq!(field("acme", sqs("globex-inbox")), Some("target.queueUrl".into()));
        assert_eq!(field("acme", Target::http("https://hooks.acme.com/run")), None);
        assert_eq!(field("acme", Target::http("https://hooks.globex.com/run")), Some("target.url".into()));
        assert_eq!(field("globex", Target::http("https://hooks.globex.com/run")), None);
        assert_eq!(
            field("globex", lambda("arn:aws:lambda:eu-west-1:123456789012:function:acme-run")),
            Some("target.function".into())
        );
    }

    #[test]
    fn auth_headers_come_from_secret_references_and_reserved_names_are_refused() {
        // Issue 15 (outbound 3): a webhook may send auth headers, by Secrets Manager reference.
        let cfg = Config::local("t-", &["default"], 16);
        let now = crate::store::items::ms_to_dt(1_764_469_800_000);
        let arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:acme-token-AbCdEf";
        let def = |name: &str| -> Result<JobDefinition, String> {
            serde_json::from_value(serde_json::json!({
                "schedule": {"expression": "rate(5 minutes)", "timezone": "UTC"},
                "target": {"type": "http", "url": "https://hooks.acme.com/run",
                           "headers": {name: {"secretArn": arn}}}
            }))
            .map_err(|e| e.to_string())
        };
        let ok = def("Authorization").unwrap_or_else(|e| panic!("{e}"));
        assert!(Job::new(&cfg, "acme", "nightly", ok.clone(), now).is_ok());
        // the definition round-trips with the reference, never a value
        let v = serde_json::to_value(&ok).unwrap_or_default();
        assert_eq!(v["target"]["headers"]["Authorization"]["secretArn"], arn);
        for name in [
            "webhook-signature",
            "Webhook-Id",
            "Idempotency-Key",
            "content-type",
            "Host",
            "X-Sundial-Fencing-Token",
        ] {
            let d = def(name).unwrap_or_else(|e| panic!("{e}"));
            let err = Job::new(&cfg, "acme", "nightly", d, now).err().map(|e| e.field);
            assert_eq!(err, Some(format!("target.headers.{name}")), "{name}");
        }
        // a value that is not a reference is refused
        let inline: Result<JobDefinition, _> = serde_json::from_value(serde_json::json!({
            "schedule": {"expression": "rate(5 minutes)", "timezone": "UTC"},
            "target": {"type": "http", "url": "https://hooks.acme.com/run", "headers": {"Authorization": "Bearer x"}}
        }));
        assert!(inline.is_err());
    }
}
