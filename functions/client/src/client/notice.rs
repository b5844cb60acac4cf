//! What the retry loop tells the [`ClientBuilder::on_retry`](super::ClientBuilder::on_retry)
//! callback before each wait.

use crate::error::Error;
use std::sync::Arc;
use std::time::Duration;

/// What [`ClientBuilder::on_retry`](super::ClientBuilder::on_retry) is told before each wait.
#[derive(Debug)]
#[non_exhaustive]
pub struct RetryNotice<'a> {
    /// Attempts made so far.
    pub attempts: u32,
    /// The wait before the next one.
    pub wait: Duration,
    /// Why the last one failed.
    pub error: &'a Error,
    /// The key every attempt of a creating POST carries.
    pub idempotency_key: Option<&'a str>,
}

pub(super) type OnRetry = Arc<dyn Fn(&RetryNotice<'_>) + Send + Sync>;
