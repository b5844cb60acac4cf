//! # The execution plane (docs/execution.md; for handlers, docs/idempotency.md)
//!
//! The scheduler's promise is *a due execution is eventually claimed*; the handler's is *a
//! repeated execution id causes no repeated side effect*. Between the two sit leases (who runs
//! it now), fencing tokens (whose writes still count) and idempotency keys (what the outside
//! world deduplicates on). Delivery is at-least-once; effect is once only where the target honours
//! the execution id and the token.
//!
//! ## Layout
//! - [`retry`]: pure error classification, backoff and budgets (takes `now`).
//! - [`clock`]: the injected clock and the service-clock skew guard (lease expiry never rests on
//!   one worker's clock alone).
//! - [`claim`]: the claim protocol's pure rules: what a claimer does with an execution in its
//!   current state, the fence a claim gives, how an attempt ends. Its conditional writes, with
//!   typed outcomes (`Claimed`, `Held`, `TakenOver`, `Stale`), are
//!   [`sundial_store::executions::ExecStore`]'s.
//! - [`children`]: sharded and broadcast jobs: a fire's parent fans out into child
//!   executions and ends when they all have (`docs/children.md`).
//! - [`policy`]: ALLOW / FORBID / SERIALIZE / REPLACE job slots, and per-tenant running limits.
//! - [`resources`]: platform-wide resource limits (`resources: ["legacy-db"]`), held all or
//!   none through an attempt (`docs/resources.md`).
//! - [`target`]: Lambda, HTTPS webhook (with the address policy), SQS, and in-process handlers.
//! - [`handler`]: what an in-process handler, plain or map-reduce, gets for one attempt (its
//!   invocation, checkpoints, cancellation).
//! - [`metrics`]: EMF lines for the dashboard.
//! - [`worker`]: one message in, one disposition out; shared by the Lambda and ECS entry points
//!   in `functions/worker`.
//!
//! `docs/execution.md` describes the protocol and its decisions.
//!
//! [`children`]: sundial_model::children
//! [`claim`]: sundial_model::claim
//! [`retry`]: sundial_model::retry
pub mod clock;
pub mod follow;
pub mod handler;
pub mod mapreduce;
pub mod metrics;
pub mod notify;
pub mod notify_pool;
pub mod outcome;
pub mod policy;
pub mod resource_limits;
pub mod target;
pub mod worker;
