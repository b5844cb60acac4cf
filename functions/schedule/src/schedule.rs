//! [`Schedule`], a validated [`ScheduleSpec`](crate::ScheduleSpec), and what it tells about
//! itself. Parsing is in `parse`, fire computation in `next_fire`, previews in `preview`.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use crate::business::{BusinessDays, Roll};
use crate::calendar::Exclusions;
use crate::expr::CronExpr;
use crate::jitter::jitter_offset;
use crate::zone::{GapPolicy, OverlapPolicy, Zone};

#[derive(Debug, Clone)]
pub(crate) enum Kind {
    Cron(CronExpr),
    /// Fires at `anchor + k * period` (Unix seconds), k >= 0.
    Rate {
        anchor: i64,
        period: i64,
    },
    /// The resolved instants of an `at(..)`, ascending (two under `both` in an overlap).
    At(Vec<DateTime<Utc>>),
}

/// A validated schedule, ready to compute fires.
#[derive(Debug, Clone)]
pub struct Schedule {
    pub(crate) kind: Kind,
    pub(crate) zone: Zone,
    pub(crate) on_gap: GapPolicy,
    pub(crate) on_overlap: OverlapPolicy,
    pub(crate) start: Option<DateTime<Utc>>,
    pub(crate) end: Option<DateTime<Utc>>,
    pub(crate) exclusions: Exclusions,
    pub(crate) jitter_window_secs: u32,
    pub(crate) normalized: String,
    /// The business calendar in force and the roll policy (`None`: every day is a business day).
    pub(crate) business: Option<Business>,
    /// The spec's further expressions (`expressions`), each a schedule of one expression with
    /// every other field of this one; empty for a single expression and in each of them. The
    /// schedule fires at the union (see `union`).
    pub(crate) others: Vec<Schedule>,
}

#[derive(Debug, Clone)]
pub(crate) struct Business {
    pub(crate) days: Arc<BusinessDays>,
    pub(crate) roll: Roll,
}

impl Schedule {
    /// The job's zone.
    pub fn timezone(&self) -> Tz {
        self.zone.tz()
    }

    /// The expression as computed: 6/7-field cron text handed to the `cron` crate (two
    /// branches joined by ` | ` for a 5-field expression with Vixie OR), `rate(N seconds)`, or
    /// `at(local time)`.
    pub fn normalized_expression(&self) -> &str {
        &self.normalized
    }

    /// How many expressions the schedule fires by (1 + the spec's `expressions`).
    pub fn expression_count(&self) -> usize {
        1 + self.others.len()
    }

    /// The jitter window of the spec, in seconds (0 = off).
    pub fn jitter_window_secs(&self) -> u32 {
        self.jitter_window_secs
    }

    /// The instant at which the fire scheduled at `scheduled_at` should be dispatched:
    /// `scheduled_at + jitter_offset(job_id, scheduled_at, window)`.
    pub fn dispatch_at(&self, job_id: &str, scheduled_at: DateTime<Utc>) -> DateTime<Utc> {
        scheduled_at + jitter_offset(job_id, scheduled_at, self.jitter_window_secs)
    }
}
