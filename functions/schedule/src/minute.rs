//! Epoch minutes: the unit of the trigger plane's time buckets and of the every-minute and
//! daily due classes. Pure arithmetic on UTC instants, shared by the schedule maths (a job's
//! due class) and the key formats (a bucket's partition key).

use chrono::{DateTime, TimeZone, Utc};

/// The epoch minute of an instant (the bucket it belongs to).
pub fn minute_of(t: DateTime<Utc>) -> i64 {
    t.timestamp().div_euclid(60)
}

/// The first instant of an epoch minute.
pub fn minute_start(minute: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(minute * 60, 0).single().unwrap_or(DateTime::<Utc>::MIN_UTC)
}

/// The UTC minute of the day (0..1440) of an epoch minute.
pub fn minute_of_day(minute: i64) -> u32 {
    minute.rem_euclid(1440) as u32
}
