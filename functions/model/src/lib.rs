//! # sundial-model
//!
//! Sundial's domain model: what a user submits, what is stored, and the pure rules over them.
//! No I/O, no clock (every rule takes `now`), no AWS SDK: the client, the capacity model and the
//! simulator can use it without compiling the SDK, and the store crate above it maps these
//! types to items.
//!
//! ## Layout
//! - [`definition`]: [`JobDefinition`] (schedule, target, retry and concurrency policies), its
//!   builders and defaults.
//! - `validate`: [`JobDefinition::validate`], a definition's validation against a
//!   [`Deployment`] (pools, shards, target policy, own queue names), and
//!   [`JobDefinition::with_run_params`].
//! - [`dependency`]: per-period dependencies (`after`): the period rule, cycles, the waiting
//!   fire's verdict; the types a definition embeds in `dependency/types.rs`.
//! - [`event`]: event triggers (`events`): which execution an event is, its key and instant.
//! - [`job`]: [`Job`], a definition's stored, versioned form with its trigger position.
//! - [`execution`]: [`Execution`] (immutable facts about one scheduled instant,
//!   docs/architecture.md), [`AuditEvent`], [`ExecMessage`]; [`ExecStatus`] and its one-way
//!   machine in `execution/status.rs`.
//! - [`ops`]: operations-log entries.
//! - [`keys`]: every DynamoDB key format and every execution identity (ids, child keys).
//! - [`children`]: sharded and broadcast fan-out (child keys, tallies, the parent's verdict);
//!   the types a definition and an execution embed in `children/types.rs`.
//! - [`mapreduce`]: map-reduce spec and state (in `mapreduce/types.rs`) and the rules over them.
//! - [`retry`]: run errors (retryable or not) and the retry schedule.
//! - [`claim`]: the claim decision (fencing tokens), a pure function the store applies.
//! - [`priority`]: priorities (the type in `priority/types.rs`), lanes, back-pressure and
//!   tenant-fairness rules.
//! - [`target`]: [`Target`], one kind to a file: each kind's fields, schema, limits and check
//!   against the tenant's policy.
//! - [`outbound`]: what the kinds' checks share: the target policy (addresses, strict queue
//!   URLs, Sundial's own functions, per-tenant allowlists) and its refusals.
//! - [`arn`]: the one ARN reader every validator uses.
//! - [`reconcile`]: the reconciler's rules (when an open execution is looked at, and what is
//!   done), pure so the store can index by them.
//! - [`tenant`]: per-tenant running limits.
//! - [`resources`]: tables, indexes, queues and env names (`resources.json`, shared with the CDK).
//! - [`deployment`]: [`Deployment`], the plain value a definition is validated against.
//! - [`limits`]: the limits that relate to each other, with the relations asserted at compile
//!   time.
//! - [`openapi`]: the OpenAPI schemas that `#[derive(utoipa::ToSchema)]` cannot give alone:
//!   [`openapi::StoredDefinition`], list fields.
//!
//! The module graph has no cycle (the tidy test checks): the types a definition or an
//! execution embeds ([`ExecStatus`], [`children::ChildKey`], [`mapreduce::MapState`], ...) sit
//! in the leaf files named above, re-exported at their module's path, below the definition,
//! the execution and the key formats; the rules that read a definition or an execution stay in
//! their module, above both.

pub mod arn;
pub mod children;
pub mod claim;
pub mod codes;
pub mod definition;
pub mod dependency;
pub mod deployment;
pub mod error_code;
pub mod event;
pub mod execution;
pub mod job;
pub mod keys;
pub mod lane;
pub mod limits;
pub mod mapreduce;
pub mod openapi;
pub mod ops;
pub mod outbound;
pub mod outcome;
pub mod priority;
pub mod reconcile;
pub mod resources;
pub mod retry;
pub mod schema;
pub mod target;
pub mod tenant;
mod validate;
pub mod validation;

pub use definition::*;
pub use deployment::Deployment;
pub use error_code::ErrorCode;
pub use execution::*;
pub use job::*;
pub use ops::*;
pub use target::{
    EcsLaunchType, EcsTarget, EventBridgeTarget, HttpTarget, InProcessTarget, LambdaTarget, SecretRef,
    SnsTarget, SqsTarget, StepFunctionsTarget, Target,
};

#[cfg(test)]
mod tests;

/// An instant from epoch milliseconds, for tests.
#[cfg(test)]
pub(crate) fn ms_to_dt(ms: i64) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::from_timestamp_millis(ms).unwrap_or(chrono::DateTime::<chrono::Utc>::MIN_UTC)
}

/// An owned deployment for the unit tests (the binaries pass their `Config`).
#[cfg(test)]
#[derive(Debug, Clone)]
pub(crate) struct LocalDeployment {
    pub(crate) pools: Vec<String>,
    pub(crate) shards: u32,
    pub(crate) queue_prefix: String,
    pub(crate) targets: outbound::TargetPolicy,
}

#[cfg(test)]
impl LocalDeployment {
    /// Like `Config::local`: every name starts with `prefix`.
    pub(crate) fn local(prefix: &str, pools: &[&str], shards: u32) -> Self {
        LocalDeployment {
            pools: pools.iter().map(|p| p.to_string()).collect(),
            shards,
            queue_prefix: format!("{prefix}{}", resources::Resources::get().queues.default_prefix),
            targets: outbound::TargetPolicy::default(),
        }
    }

    pub(crate) fn queue_name(&self, pool: &str) -> String {
        Deployment::from(self).queue_name(pool)
    }

    pub(crate) fn dlq_name(&self, pool: &str) -> String {
        Deployment::from(self).dlq_name(pool)
    }
}

#[cfg(test)]
impl<'a> From<&'a LocalDeployment> for Deployment<'a> {
    fn from(d: &'a LocalDeployment) -> Self {
        Deployment { pools: &d.pools, shards: d.shards, queue_prefix: &d.queue_prefix, targets: &d.targets }
    }
}
