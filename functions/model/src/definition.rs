//! What a user submits: a [`JobDefinition`] (schedule, target, policies), its builders and
//! defaults, with the retry and concurrency policies it names. Its validation against a
//! [`Deployment`](crate::Deployment) is `validate.rs`'s.

pub use crate::limits::{
    MAX_FIRE_ALL_CAP, MAX_INLINE_PARAMS_BYTES, MAX_JOB_RESOURCES, MAX_START_DEADLINE_SECS,
};
use crate::target::Target;
use serde::{Deserialize, Serialize};
use sundial_schedule::{MisfirePolicy, ScheduleSpec};

/// What a user submits to create or update a job.
///
/// Its OpenAPI schema (`JobDefinition`; [`StoredDefinition`](crate::openapi::StoredDefinition)
/// for the form read back) takes each field's doc below as the field's description, so they are
/// written for API users. A bound in `#[schema(..)]` is the one [`JobDefinition::validate`]
/// checks; a field documented with `//` is described by its type's schema (an inline enum or
/// object, whose description the field's doc would otherwise wrap in a `oneOf`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(
    description = "A job: when it fires (schedule), what a worker calls (target), and the policies of its runs.",
    examples(json!({
    "schedule": {"expression": "0 30 2 * * *", "timezone": "Europe/London"},
    "target": {"type": "http", "url": "https://hooks.example.com/run"}
    }))
)]
pub struct JobDefinition {
    /// When the job fires.
    pub schedule: ScheduleSpec,
    /// a pool of this deployment; another name is 400 on `pool`
    #[serde(default = "default_pool")]
    #[schema(pattern = "^[A-Za-z0-9_-]{1,64}$", default = "default")]
    pub pool: String,
    /// What a worker calls.
    pub target: Target,
    /// inline JSON (any type), at most 4096 bytes serialised; larger is 400 on `params` (pass it
    /// by reference in paramsRef)
    #[serde(default)]
    pub params: serde_json::Value,
    /// a reference (e.g. an S3 URI) passed to the target untouched
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(min_length = 1, max_length = 1024)]
    pub params_ref: Option<String>,
    /// What to do with fires missed during an outage.
    #[serde(default)]
    pub misfire: MisfirePolicy,
    /// How late a fire may be before the misfire policy applies (seconds).
    #[serde(default = "default_misfire_threshold")]
    #[schema(maximum = 86400, default = 60)]
    pub misfire_threshold_secs: u32,
    // Whether runs of this job may overlap (`ConcurrencyPolicy`, inline).
    #[serde(default)]
    #[schema(inline)]
    pub concurrency: ConcurrencyPolicy,
    /// Retry budget and backoff.
    #[serde(default)]
    pub retry: RetryPolicy,
    /// Run timeout per attempt (seconds).
    #[serde(default = "default_timeout")]
    #[schema(minimum = 1, maximum = 43200, default = 300)]
    pub timeout_secs: u32,
    /// Seconds after the scheduled instant by which a worker must have started the fire; a fire
    /// not started by then is reported once (operations-log entry `fire_missed`, `FireMissed`
    /// event on the stack's EventBridge bus, `FiresMissed` metric) and still runs as its misfire
    /// policy allows. Absent: never reported.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "not_null")]
    #[schema(nullable = false, minimum = 1, maximum = 604800)]
    pub start_deadline_secs: Option<u32>,
    /// Seconds after the scheduled instant by which the fire must have finished; a fire still
    /// open then, or finished later, is reported once (`FinishDeadlineMissed` event on the
    /// stack's bus, a `FinishDeadlineMissed` note on its timeline; docs/outcomes.md) and runs on
    /// as its policies allow. Absent: never reported.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "not_null")]
    #[schema(nullable = false, minimum = 1, maximum = 604800)]
    pub finish_deadline_secs: Option<u32>,
    /// Platform-wide resource limits its runs use (`["legacy-db"]`, docs/resources.md): an
    /// execution starts only holding a unit of each (taken all or none), and gives them back
    /// when its attempt ends. Each must name a limit an operator defined (`PUT
    /// /v1/resources/{resource}`), else 400 on `resources[i]`; none twice. Absent: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(schema_with = crate::schema::resources)]
    pub resources: Vec<String>,
    // Priority within its pool (`Priority`, inline): `low` runs from the pool's low lane and is
    // deferred first when the pool is busy (docs/priority.md). Left out when `normal`.
    #[serde(default, skip_serializing_if = "crate::priority::Priority::is_normal")]
    #[schema(inline)]
    pub priority: crate::priority::Priority,
    /// Sharded job (docs/children.md): each fire runs as this many child executions, child i
    /// invoked with shardIndex = i and shardTotal; each handles only its shard's items. Not with
    /// broadcast.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "not_null")]
    #[schema(nullable = false, minimum = 1, maximum = 100)]
    pub shards: Option<u32>,
    // Broadcast job (`Broadcast`, inline): each fire runs as one child execution per member of
    // this set, each given its `member` (docs/children.md). Never for work that moves money.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "not_null")]
    #[schema(inline, nullable = false)]
    pub broadcast: Option<crate::children::Broadcast>,
    // Map-reduce job (`MapReduceSpec`, inline): an in-process handler's map emits items, each
    // run as its own child execution, then a fenced reduce gets their results
    // (docs/mapreduce.md).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "not_null")]
    #[schema(inline, nullable = false)]
    pub map_reduce: Option<crate::mapreduce::MapReduceSpec>,
    /// Upstream runs each fire waits for before it starts (docs/dependencies.md): the run of
    /// each named job (same tenant) for the same period, the previous one, or an offset one.
    /// A waiting fire holds no slot and burns no receives; the upstream's finish wakes it.
    /// Upstreams must exist and no cycle may form (400 naming the cycle). Absent: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(max_items = 8)]
    pub after: Vec<crate::dependency::Dependency>,
    /// How long after its scheduled instant (or its replay) a fire waits for its upstreams
    /// before onDependencyDeadline applies (seconds). Absent: startDeadlineSecs, else
    /// retry.maxAgeSecs. Only with after.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "not_null")]
    #[schema(nullable = false, minimum = 1, maximum = 604800)]
    pub dependency_deadline_secs: Option<u32>,
    // What a fire does when its upstreams are not satisfied by the dependency deadline
    // (`OnDependencyDeadline`, inline). Left out when `fail`.
    #[serde(default, skip_serializing_if = "crate::dependency::OnDependencyDeadline::is_default")]
    #[schema(inline)]
    pub on_dependency_deadline: crate::dependency::OnDependencyDeadline,
    // Event trigger (`EventTrigger`, inline): the job also fires on events for it (`POST
    // /v1/jobs/{jobId}/events`). Absent: events are refused.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "not_null")]
    #[schema(inline, nullable = false)]
    pub events: Option<crate::event::EventTrigger>,
    // Outcome events (`OutcomeEvents`, inline): with it (even `{}`) the job tracks its dead fires
    // in a row and sends JobRecovered; `succeeded` adds ExecutionSucceeded (docs/outcomes.md).
    // Absent: failures and dead fires only.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "not_null")]
    #[schema(inline, nullable = false)]
    pub outcome_events: Option<crate::outcome::OutcomeEvents>,
    // Also POST each outcome event to an HTTPS receiver (`OutcomeNotify`, inline), signed like a
    // webhook target's call (docs/outcomes.md, "HTTPS notifications"). Absent: the bus only.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "not_null")]
    #[schema(inline, nullable = false)]
    pub outcome_notify: Option<crate::outcome::OutcomeNotify>,
    /// Pause the job after this many dead fires in a row (FAILED or DEAD; a success starts the
    /// count over, and so does a resume): audited (`job_paused`, actor `auto-pause:{executionId}`),
    /// announced by a `JobAutoPaused` event, resumed like any pause (docs/outcomes.md). Absent:
    /// never paused for its failures.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "not_null")]
    #[schema(nullable = false, minimum = 1, maximum = 100)]
    pub auto_pause_after_dead_fires: Option<u32>,
    /// The job ends `COMPLETED` after this many scheduled fires (docs/schedule.md, "A run-count
    /// limit"): each fire the trigger creates is counted in the same write that creates it, a
    /// fire past the limit is never created, and the job leaves the trigger (audited `complete`,
    /// actor `max-runs`). Manual runs, backfills and event runs are not counted. An edit may
    /// raise it; a completed job whose limit was raised resumes. Absent: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "not_null")]
    #[schema(nullable = false, minimum = 1, maximum = 1000000000)]
    pub max_runs: Option<u64>,
}

/// Largest `maxRuns`.
pub const MAX_RUNS: u64 = 1_000_000_000;

pub use sundial_schedule::serde_field::not_null;

fn default_pool() -> String {
    "default".into()
}
fn default_misfire_threshold() -> u32 {
    60
}
fn default_timeout() -> u32 {
    300
}

pub(crate) use crate::validation::invalid;
pub use crate::validation::ValidationError;

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
            finish_deadline_secs: None,
            resources: Vec::new(),
            priority: crate::priority::Priority::Normal,
            shards: None,
            broadcast: None,
            map_reduce: None,
            after: Vec::new(),
            dependency_deadline_secs: None,
            on_dependency_deadline: crate::dependency::OnDependencyDeadline::Fail,
            events: None,
            outcome_events: None,
            outcome_notify: None,
            auto_pause_after_dead_fires: None,
            max_runs: None,
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

    /// The run-count limit (`maxRuns`).
    pub fn with_max_runs(mut self, n: u64) -> Self {
        self.max_runs = Some(n);
        self
    }

    /// The finish deadline (seconds after the scheduled instant).
    pub fn with_finish_deadline_secs(mut self, secs: u32) -> Self {
        self.finish_deadline_secs = Some(secs);
        self
    }

    /// One more upstream run each fire waits for (docs/dependencies.md).
    pub fn with_after(mut self, dep: crate::dependency::Dependency) -> Self {
        self.after.push(dep);
        self
    }

    /// The priority within its pool.
    pub fn with_priority(mut self, priority: crate::priority::Priority) -> Self {
        self.priority = priority;
        self
    }
}

/// Per-run parameters merged over a job's (docs/api.md, "Per-run parameters"): JSON Merge Patch
/// (RFC 7396). When both are objects, each key of `run` replaces the job's, recursively for
/// nested objects, and a `null` removes the key; otherwise `run` replaces the job's value whole.
pub fn merge_params(job: &serde_json::Value, run: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match (job, run) {
        (Value::Object(base), Value::Object(patch)) => {
            let mut out = base.clone();
            for (k, v) in patch {
                if v.is_null() {
                    out.remove(k);
                } else {
                    let merged = merge_params(out.get(k).unwrap_or(&Value::Null), v);
                    out.insert(k.clone(), merged);
                }
            }
            Value::Object(out)
        }
        (_, Value::Object(patch)) => {
            merge_params(&Value::Object(Default::default()), &Value::Object(patch.clone()))
        }
        (_, v) => v.clone(),
    }
}

/// What happens when a fire comes while the previous run is still going (docs/execution.md §6).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[schema(
    default = "ALLOW",
    description = "What happens when a fire comes while the job's previous run is still going: ALLOW runs them side by side, FORBID skips the new fire (SKIPPED), SERIALIZE runs every fire one at a time in order, REPLACE cancels the running one and starts the new one."
)]
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

/// Retry classification lives in the error; the budget lives here (docs/execution.md §4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(as = Retry, description = "baseDelaySecs must not exceed maxDelaySecs")]
pub struct RetryPolicy {
    /// Attempts in all (1 = no retry).
    #[serde(default = "d_attempts")]
    #[schema(minimum = 1, maximum = 100, default = 3)]
    pub max_attempts: u32,
    /// Base of the exponential backoff (seconds).
    #[serde(default = "d_base")]
    #[schema(minimum = 1, maximum = 43200, default = 2)]
    pub base_delay_secs: u32,
    /// Cap of the backoff (seconds).
    #[serde(default = "d_max_delay")]
    #[schema(minimum = 1, maximum = 43200, default = 300)]
    pub max_delay_secs: u32,
    /// No retry once this long past the scheduled instant (seconds).
    #[serde(default = "d_max_age")]
    #[schema(maximum = 4294967295u64, default = 86400)]
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
