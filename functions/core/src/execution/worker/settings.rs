//! Timings the worker derives from its [`WorkerSettings`] (read in [`crate::config`]).

use super::secs_ceil;
use crate::config::WorkerSettings;
use std::time::Duration;

impl WorkerSettings {
    /// How often a running attempt renews its lease: a third of it (at least 200 ms).
    pub(super) fn heartbeat_every(&self) -> Duration {
        Duration::from_millis((self.lease_ms / 3).max(200) as u64)
    }

    /// The visibility timeout (s) that covers one lease plus the takeover margin.
    pub fn visibility_secs(&self) -> i32 {
        secs_ceil(self.lease_ms + self.skew_margin_ms).max(1)
    }
}
