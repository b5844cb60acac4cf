//! # sundial-idempotency: making a handler correct when Sundial runs it twice
//!
//! Sundial triggers an execution once, but a trigger is not an execution: a worker that looks
//! dead after a timeout is replaced while it may still be running, a crashed run is retried from
//! the start, a paused process wakes up and keeps writing. docs/idempotency.md retells the
//! post-mortem of a settlement that paid merchants twice that way. Its conclusion, which this crate
//! packages for handler authors: a lock or a done-marker only lowers the odds; **per-item
//! idempotency** is what stays correct under every failure. `docs/idempotency.md` has the full
//! table of which piece covers which failure.
//!
//! The handler receives `executionId` and `fencingToken` from Sundial's worker (the token grows
//! with every claim of the execution); put them in an [`ExecutionContext`]. Nothing here depends
//! on the worker's internals.
//!
//! ## Layout (cheapest guard first, the load-bearing ones last)
//! - [`marker`]: batch done-marker. An optimisation only: stops a re-run of a *finished* batch,
//!   not of one that crashed half-way.
//! - [`inbox`]: run a step at most once per `(executionId, step)`, or apply DynamoDB writes
//!   exactly once per step in one transaction with the inbox entry.
//! - [`unique`]: insert under a natural key (e.g. `(merchant_id, settle_date)`); a second insert
//!   is reported as [`unique::Insert::Exists`], not written.
//! - [`state`]: per-item CAS state machine (`UNSETTLED → SETTLING → SETTLED`); zero rows affected
//!   is [`state::CasOutcome::AlreadyHandled`], "done by someone else", never an error.
//! - [`fence`]: fenced writes: a write succeeds only if the caller's fencing token is newer than
//!   the one stored on the item (`last_fencing_token`, docs/targets.md, "Fencing downstream"), so a
//!   stale worker cannot overwrite a newer worker's output.
//! - [`outbound`]: calls that leave the system: a stable idempotency key per item, "query before
//!   retry" after a timeout, and a durable record of the outcome when the far side cannot say.
//! - [`reconcile`]: compare the local ledger with the far side's and list every difference: the
//!   only final defence for effects outside our database.
//! - [`webhook`]: verify a webhook's Standard Webhooks signature before trusting its fencing
//!   token or execution id.
//! - [`tables`]: table creation for tests and local runs (on AWS the CDK app creates them).
//! - [`update`]: the small expression builder the modules share.
//! - [`error`]: one error type that says retryable vs permanent.

pub mod context;
pub mod error;
pub mod fence;
pub mod inbox;
pub mod marker;
pub mod outbound;
pub mod reconcile;
pub mod state;
pub mod tables;
pub mod unique;
pub mod update;
pub mod webhook;

mod attr;

pub use context::ExecutionContext;
pub use error::Error;
pub use update::{Item, Update};
