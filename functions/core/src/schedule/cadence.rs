//! Cadence questions the trigger plane asks of a schedule.

use super::Schedule;
use crate::keys;
use chrono::{DateTime, Duration, Utc};

impl Schedule {
    /// Whether this schedule fires in every minute of the hour after `now`: the scan promotes such
    /// jobs into their shard's "every bucket" partition, where they are never moved between
    /// buckets (see [`keys::every_bucket`]), which saves the index delete + put on each fire.
    pub fn fires_every_minute(&self, now: DateTime<Utc>) -> bool {
        let start_min = keys::minute_of(now) + 1;
        let from = keys::minute_start(start_min) - Duration::milliseconds(1);
        let until = keys::minute_start(start_min + 60) - Duration::milliseconds(1);
        let mut covered = [false; 60];
        let mut cursor = from;
        while let Some(f) = self.next_after(cursor) {
            if f > until {
                break;
            }
            let m = (keys::minute_of(f) - start_min) as usize;
            if let Some(c) = covered.get_mut(m) {
                *c = true;
            }
            // Skip to the next minute: one fire per minute is enough to know.
            cursor = keys::minute_start(keys::minute_of(f) + 1) - Duration::milliseconds(1);
        }
        covered.iter().all(|c| *c)
    }
}
