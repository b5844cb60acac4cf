//! `sundial-client`: a typed Rust client of the Sundial HTTP API (functions/api/openapi.json),
//! used by the `sundial` CLI.
//!
//! ```ignore
//! // With the `default-credentials` feature (the `sundial` CLI turns it on):
//! # async fn demo() -> Result<(), sundial_client::Error> {
//! use sundial_client::{Auth, Client, Iam, ListJobs};
//! let client = Client::builder("https://abc123.execute-api.eu-west-1.amazonaws.com")
//!     .auth(Auth::Iam(Iam::from_env(None).await?))
//!     .build()?;
//! for job in client.all(ListJobs::default()).await? {
//!     println!("{} v{} {:?}", job.job_id, job.version, job.state);
//! }
//! # Ok(()) }
//! ```
//!
//! # Layout
//! - [`client`]: [`Client`] and its builder: one method per operation, the retry loop, the
//!   per-attempt request (auth headers or signature, `Idempotency-Key`, `If-Match`).
//! - [`auth`]: [`Auth`] — none (the local run, `X-Sundial-Tenant`), JWT bearer, or IAM: SigV4
//!   for `execute-api` over the exact bytes sent, credentials from the standard AWS chain.
//! - [`retry`]: which failures are retried, how long to wait (`Retry-After` first), the
//!   injectable [`Clock`].
//! - [`page`]: each list operation's parameters ([`ListRequest`]) and the [`Pager`] that
//!   follows `nextCursor`.
//! - [`types`]: request and response bodies; definitions are `sundial-model`'s own types.
//! - [`error`]: [`ApiError`] (status, code, field, message, Retry-After) apart from transport,
//!   signing and decoding failures.
//!
//! # Decisions
//! - **Retries are decided by whether a request may be repeated**, not only by the status. A
//!   GET, and a creating POST (create, trigger-now, backfill) which always carries an
//!   `Idempotency-Key` kept across its attempts, are retried on 429, 502, 503, 504, 409
//!   `idempotency_in_progress` and lost connections; the server answers a repeat of a request
//!   that already took effect with its first answer. Other requests (edit, pause, cancel,
//!   replay) are retried only on 429, which refuses before doing anything: a 503 or a lost
//!   answer may come after the write. Attempts and the total wait are bounded
//!   ([`RetryPolicy`]); a `Retry-After` beyond the budget returns the error at once.
//! - **IAM requests are signed per attempt** with the SDK's signer, at the injected clock's
//!   instant, after every other header is set, so what is signed is what is sent.
//! - **No second schema.** Definitions are [`sundial_model::JobDefinition`], the type the
//!   API validates; the client therefore depends on `sundial-model`.

pub mod auth;
pub mod client;
pub mod error;
pub mod page;
pub mod retry;
/// The API's wire types: `sundial-api-types`, the one definition the server also uses.
pub use sundial_api_types as types;

pub use auth::{Auth, Iam};
pub use client::{Client, ClientBuilder, RetryNotice};
pub use error::{ApiError, Error};
pub use page::{
    ListCalendars, ListChildren, ListDeadLetters, ListExecutions, ListJobExecutions, ListJobs,
    ListOperations, ListRequest, Pager, TzReportRequest,
};
pub use retry::{Clock, RetryPolicy, SystemClock};
pub use types::*;
