//! DynamoDB adapter: item codecs and the conditional writes of the trigger plane.
//!
//! Errors say whether to retry ([`StoreError::is_retryable`]); a failed condition is not an
//! error here but a typed outcome (`Created` / `AlreadyExists`, `Advanced` / `Lost`), because
//! under at-least-once delivery it is the normal way a duplicate is absorbed.
pub mod error;
pub mod executions;
pub mod expr;
pub mod items;
pub mod jobs;
pub mod ops;
pub mod slots;
pub mod tables;
pub mod watermarks;

pub use error::StoreError;

/// One page of a Query: the items, and where the next page starts when more may follow.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryPage<T, C> {
    /// The items, in the Query's order.
    pub items: Vec<T>,
    /// The position to continue after (`None` on the last page).
    pub next: Option<C>,
}
