//! # sundial-core
//!
//! The planes of Sundial (trigger, execution, reconcile, control) over the store, in one
//! library so every Lambda `main` stays thin (tick, worker, api, and the `sundial` CLI only wire
//! config, clients and handlers).
//!
//! ## Where things are
//! The pure layers and the adapters are crates of their own (docs/architecture.md), and every
//! caller names the one it uses: [`sundial_schedule`] (the schedule maths, instants),
//! [`sundial_model`] (the domain model, keys, priorities, the target policy, resources) and
//! [`sundial_store`] (the DynamoDB and SQS adapters).
//!
//! ## Layout
//! - [`context`]: [`Ctx`], the clients and names the tick and the control plane share.
//! - [`config`]: every plane setting a binary reads from its environment, in typed loaders
//!   (`TickSettings`, `WorkerSettings`, ...) whose errors name the variable; `Config` itself is
//!   the store's.
//! - [`telemetry`]: the one logging setup of every binary (Lambda's JSON format and log level).
//! - [`aws`]: SDK client construction (endpoint from `AWS_ENDPOINT_URL`, so the same code runs
//!   against AWS and against the local emulator).
//! - [`trigger`]: the per-minute tick and shard scans (put → send → advance → watermark).
//! - [`reconcile`]: the reconciler: re-sends executions whose delivery is gone, found through the
//!   sparse `open` index (O(open executions)).
//! - [`metrics`]: CloudWatch Embedded Metric Format lines.
//! - [`access`]: records which AWS action each function performs on which resource (tests
//!   only, `SUNDIAL_IAM_RECORD`), checked against the CDK roles by `infra/test/iam.test.ts`.
//! - [`execution`]: the execution plane: the claim rules with fencing tokens, retries, targets,
//!   concurrency policies, and the worker core shared by the Lambda and ECS entry points.
//! - [`control`]: the control plane's domain (create/list/edit/pause/resume/delete jobs, cancel,
//!   trigger now, backfill, dead-letter replay, the operations audit log), served by `functions/api`.
pub mod access;
pub mod aws;
pub mod config;
pub mod context;
pub mod control;
pub mod execution;
pub mod metrics;
pub mod missed;
pub mod reconcile;
pub mod schedules;
pub mod telemetry;
pub mod trigger;

pub use context::Ctx;
