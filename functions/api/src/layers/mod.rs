//! The cross-cutting checks, one tower layer each, in the order a request meets them
//! ([`crate::app`] stacks them):
//!
//! 1. [`request_id`]: `X-Request-Id` in (or a new one), on the answer, and on every log line.
//! 2. [`headers`]: `X-Content-Type-Options: nosniff` and `Cache-Control: no-store` on JSON.
//! 3. [`errors`]: the error mapper: a panic is a 500 `internal`, and 5xx answers are logged.
//! 4. [`clock`]: the instant the request runs at ([`crate::extract::Now`]).
//! 5. [`scope`]: the access scope of the API's AWS calls (the IAM test records them by role).
//!
//! Then the router matches (unknown path 404, known path with another method 405 with
//! `Allow`), and for the API's routes (not the console's files nor this document):
//!
//! 6. [`caller`]: the caller and tenant from the adapter (401, 403).
//! 7. [`throttle`]: the tenant's requests per second (429 `throttled`).
//! 8. [`body`]: the body's size (413) and type (415), read once into memory.
//! 9. [`idempotency`]: `Idempotency-Key` on create, trigger-now and backfill.
//!
//! Each layer also says which answers it adds to the document ([`crate::doc`]).

pub mod body;
pub mod caller;
pub mod clock;
pub mod errors;
pub mod headers;
pub mod idempotency;
pub mod request_id;
pub mod scope;
pub mod throttle;
