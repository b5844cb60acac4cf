//! DynamoDB adapter: item codecs and the conditional writes of the trigger plane.
//!
//! Errors say whether to retry ([`StoreError::is_retryable`]); a failed condition is not an
//! error here but a typed outcome (`Created` / `AlreadyExists`, `Advanced` / `Lost`), because
//! under at-least-once delivery it is the normal way a duplicate is absorbed.
pub mod error;
pub mod expr;
pub mod items;
pub mod jobs;
pub mod trigger;

pub use error::StoreError;
