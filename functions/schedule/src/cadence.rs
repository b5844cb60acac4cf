//! Cadence questions the trigger plane asks of a schedule.

use super::Schedule;
use crate::minute as keys;
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

    /// The UTC minute of the day (0..1440) that makes a job with next fire `next` a member of the
    /// daily class, or `None`: every fire in `next`'s minute, then the first fire after that
    /// minute falls in the same UTC minute of the day, at most [`MAX_DAILY_GAP_HOURS`] later
    /// (a weekday job's Friday → Monday gap included). The scan checks it again at every fire,
    /// so a job whose UTC minute moves (its zone's DST change) leaves the class before the
    /// moved fire.
    pub fn daily_slot(&self, next: DateTime<Utc>) -> Option<u32> {
        let minute = keys::minute_of(next);
        let after = self.next_after(keys::minute_start(minute + 1) - Duration::milliseconds(1))?;
        let slot = keys::minute_of_day(minute);
        let gap_ok = after - next <= Duration::hours(MAX_DAILY_GAP_HOURS);
        (keys::minute_of_day(keys::minute_of(after)) == slot && gap_ok).then_some(slot)
    }
}

/// The longest gap between two fires of a daily-class job: a week and an hour. Longer gaps
/// (monthly jobs) are cheaper in the bucket class: a daily-class job is read once a day.
pub(super) const MAX_DAILY_GAP_HOURS: i64 = 7 * 24 + 1;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ScheduleSpec;
    use chrono::TimeZone;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).map(|d| d.with_timezone(&Utc)).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn sched(expr: &str, zone: &str) -> Schedule {
        let anchor = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).single().unwrap_or_default();
        Schedule::parse(&ScheduleSpec::new(expr, zone), anchor).unwrap_or_else(|e| panic!("{expr}: {e}"))
    }

    #[test]
    fn daily_and_weekday_jobs_have_a_slot_others_do_not() {
        // 09:00 UTC every day: minute 540 of the day.
        assert_eq!(sched("0 0 9 * * *", "UTC").daily_slot(at("2026-03-02T09:00:00Z")), Some(540));
        // Weekdays: Friday's next fire is Monday's, 72 h later, same minute.
        assert_eq!(sched("0 0 9 * * MON-FRI", "UTC").daily_slot(at("2026-03-06T09:00:00Z")), Some(540));
        // Several seconds inside one minute still count as that minute.
        assert_eq!(sched("*/10 30 6 * * *", "UTC").daily_slot(at("2026-03-02T06:30:00Z")), Some(390));
        // Twice a day, hourly, every minute, monthly: not daily.
        assert_eq!(sched("0 0 9,17 * * *", "UTC").daily_slot(at("2026-03-02T09:00:00Z")), None);
        assert_eq!(sched("0 15 * * * *", "UTC").daily_slot(at("2026-03-02T09:15:00Z")), None);
        assert_eq!(sched("0 * * * * *", "UTC").daily_slot(at("2026-03-02T09:15:00Z")), None);
        assert_eq!(sched("0 0 9 1 * *", "UTC").daily_slot(at("2026-03-01T09:00:00Z")), None);
        // A one-off: no fire after it.
        assert_eq!(sched("at(2026-03-02T09:00:00)", "UTC").daily_slot(at("2026-03-02T09:00:00Z")), None);
    }

    #[test]
    fn a_zone_with_dst_loses_its_slot_on_the_day_before_the_change() {
        // 09:00 in New York is 14:00 UTC in winter; DST starts 2026-03-08, then 13:00 UTC.
        let s = sched("0 0 9 * * *", "America/New_York");
        assert_eq!(s.daily_slot(at("2026-03-06T14:00:00Z")), Some(840));
        assert_eq!(s.daily_slot(at("2026-03-07T14:00:00Z")), None, "the next fire is at 13:00 UTC");
        assert_eq!(s.daily_slot(at("2026-03-08T13:00:00Z")), Some(780));
    }
}
