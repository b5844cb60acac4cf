//! Quartz day rules (`L`, `L-n`, `LW`, `nW`, `dL`, `d#k`) and the engine that computes cron
//! fires for expressions that use them.
//!
//! The `cron` crate knows none of these rules, so an expression with one does not go through
//! it. Its fields become bit masks (seconds, minutes, hours, months, years) plus a day
//! predicate, and the next matching wall time is computed directly: the matching days of a
//! month are one `u32` (bit d = day d), computed from the weekday of the 1st and the month's
//! length, so finding the next fire never walks day by day. Like the crate path, the engine
//! works on *local wall-clock* times; the zone and its DST policies are applied by the caller
//! (`Schedule::cron_next` / `cron_prev`), exactly as for any other cron expression.
//!
//! Weekdays are numbered here from Sunday (0 = Sunday .. 6 = Saturday), whatever the
//! expression's own numbering was.

use chrono::{Datelike, NaiveDate, NaiveDateTime, NaiveTime, Timelike};

/// First and last year a fire may fall in (the `cron` crate's range, kept for both engines).
const FIRST_YEAR: i32 = 1970;
const LAST_YEAR: i32 = 2100;

/// What the day-of-month field selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DomSel {
    /// Plain values: bit d set for each selected day 1..=31.
    Days(u32),
    /// `L` (n = 0) or `L-n`: n days before the last day of the month.
    Last(u32),
    /// `LW`: the last Monday–Friday of the month.
    LastWeekday,
    /// `nW`: the Monday–Friday nearest to day n without leaving the month; no fire in a month
    /// without a day n (as plain `31` does not fire in April).
    Nearest(u32),
}

/// What the day-of-week field selects (weekdays 0 = Sunday .. 6 = Saturday).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DowSel {
    /// Plain values: bit w set for each selected weekday.
    Days(u8),
    /// `dL`: the last weekday w of the month.
    Last(u8),
    /// `d#k`: the k-th (1..=5) weekday w of the month; no fire in a month without one.
    Nth(u8, u8),
}

/// All of days 1..=31.
pub(crate) const ALL_DAYS: u32 = !1;

/// A cron expression with at least one day rule, over local wall-clock time.
#[derive(Debug, Clone)]
pub(crate) struct DayCron {
    /// Bit s for each second 0..=59, minute, hour.
    pub(crate) secs: u64,
    pub(crate) mins: u64,
    pub(crate) hours: u32,
    /// Bit m for each month 1..=12.
    pub(crate) months: u16,
    /// Bit (y - 1970) for each year 1970..=2100.
    pub(crate) years: [u64; 3],
    pub(crate) dom: DomSel,
    pub(crate) dow: DowSel,
    /// Vixie OR (the 5-field form with both day fields restricted): a day matches if either
    /// field matches; otherwise both must (the 6/7-field form's AND).
    pub(crate) or: bool,
}

fn days_in_month(y: i32, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        _ => 28,
    }
}

/// The lowest set bit at or above `from`.
fn next_bit(mask: u64, from: u32) -> Option<u32> {
    if from >= 64 {
        return None;
    }
    let m = mask & (u64::MAX << from);
    (m != 0).then(|| m.trailing_zeros())
}

/// The highest set bit strictly below `to`.
fn prev_bit(mask: u64, to: u32) -> Option<u32> {
    let m = if to >= 64 { mask } else { mask & ((1u64 << to) - 1) };
    (m != 0).then(|| 63 - m.leading_zeros())
}

fn lowest(mask: u64) -> u32 {
    mask.trailing_zeros()
}

fn highest(mask: u64) -> u32 {
    63 - mask.leading_zeros()
}

fn hms(h: u32, m: u32, s: u32) -> NaiveTime {
    // Only called with set bits of validated masks (h < 24, m and s < 60).
    NaiveTime::from_hms_opt(h, m, s).unwrap_or(NaiveTime::MIN)
}

impl DayCron {
    /// The days of month `m` of year `y` that match, as bit d = day d.
    pub(crate) fn month_days(&self, y: i32, m: u32) -> u32 {
        let len = days_in_month(y, m);
        let all = ALL_DAYS & (u32::MAX >> (31 - len));
        // Weekday of the 1st, 0 = Sunday.
        let wd1 = NaiveDate::from_ymd_opt(y, m, 1).map_or(0, |d| d.weekday().num_days_from_sunday());
        let weekday = |d: u32| (wd1 + d - 1) % 7;
        // The first day of the month that falls on weekday w.
        let first_on = |w: u32| 1 + (w + 7 - wd1) % 7;
        let bit = |d: u32| if (1..=len).contains(&d) { 1u32 << d } else { 0 };
        let dom = match self.dom {
            DomSel::Days(b) => b & all,
            DomSel::Last(n) => bit(len.saturating_sub(n)),
            DomSel::LastWeekday => match weekday(len) {
                0 => bit(len - 2),
                6 => bit(len - 1),
                _ => bit(len),
            },
            DomSel::Nearest(n) if n > len => 0,
            DomSel::Nearest(n) => match weekday(n) {
                // Saturday: the Friday before, or Monday the 3rd when n is the 1st.
                6 => bit(if n == 1 { 3 } else { n - 1 }),
                // Sunday: the Monday after, or the Friday before when n is the last day.
                0 => bit(if n == len { n - 2 } else { n + 1 }),
                _ => bit(n),
            },
        };
        let dow = match self.dow {
            DowSel::Days(ws) => {
                let mut out = 0u64;
                for w in 0..7u32 {
                    if ws & (1 << w) != 0 {
                        // Bits d, d+7, d+14, d+21, d+28.
                        out |= 0x1020_4081u64 << first_on(w);
                    }
                }
                (out as u32) & all
            }
            DowSel::Last(w) => {
                let w = u32::from(w);
                bit(len - (weekday(len) + 7 - w) % 7)
            }
            DowSel::Nth(w, k) => bit(first_on(u32::from(w)) + 7 * (u32::from(k) - 1)),
        };
        if self.or {
            dom | dow
        } else {
            dom & dow
        }
    }

    fn year_ok(&self, y: i32) -> bool {
        (FIRST_YEAR..=LAST_YEAR).contains(&y) && {
            let i = (y - FIRST_YEAR) as usize;
            self.years[i / 64] & (1 << (i % 64)) != 0
        }
    }

    fn month_ok(&self, m: u32) -> bool {
        self.months & (1 << m) != 0
    }

    /// Whether `date` is a day of the expression.
    pub(crate) fn day_matches(&self, date: NaiveDate) -> bool {
        let (y, m) = (date.year(), date.month());
        self.year_ok(y) && self.month_ok(m) && self.month_days(y, m) & (1 << date.day()) != 0
    }

    /// The first matching day on or after `date`.
    fn day_on_or_after(&self, date: NaiveDate) -> Option<NaiveDate> {
        let (mut y, mut m, mut from) = (date.year().max(FIRST_YEAR), date.month(), date.day());
        if date.year() < FIRST_YEAR {
            (m, from) = (1, 1);
        }
        while y <= LAST_YEAR {
            if !self.year_ok(y) {
                (y, m, from) = (y + 1, 1, 1);
                continue;
            }
            if self.month_ok(m) {
                let mask = self.month_days(y, m) & (u32::MAX << from);
                if mask != 0 {
                    return NaiveDate::from_ymd_opt(y, m, mask.trailing_zeros());
                }
            }
            (m, from) = if m == 12 { (1, 1) } else { (m + 1, 1) };
            if m == 1 {
                y += 1;
            }
        }
        None
    }

    /// The last matching day on or before `date`.
    fn day_on_or_before(&self, date: NaiveDate) -> Option<NaiveDate> {
        let (mut y, mut m, mut to) = (date.year().min(LAST_YEAR), date.month(), date.day());
        if date.year() > LAST_YEAR {
            (m, to) = (12, 31);
        }
        while y >= FIRST_YEAR {
            if !self.year_ok(y) {
                (y, m, to) = (y - 1, 12, 31);
                continue;
            }
            if self.month_ok(m) {
                // Bits 1..=to.
                let mask = self.month_days(y, m) & (u32::MAX >> (31 - to));
                if mask != 0 {
                    return NaiveDate::from_ymd_opt(y, m, 31 - mask.leading_zeros());
                }
            }
            if m == 1 {
                (y, m, to) = (y - 1, 12, 31);
            } else {
                (m, to) = (m - 1, 31);
            }
        }
        None
    }

    fn first_time(&self) -> NaiveTime {
        hms(lowest(u64::from(self.hours)), lowest(self.mins), lowest(self.secs))
    }

    fn last_time(&self) -> NaiveTime {
        hms(highest(u64::from(self.hours)), highest(self.mins), highest(self.secs))
    }

    /// The first time of day strictly after second `t` of the day.
    fn time_after(&self, t: u32) -> Option<NaiveTime> {
        let (h, m, s) = (t / 3600, t / 60 % 60, t % 60);
        let hours = u64::from(self.hours);
        if hours & (1 << h) != 0 {
            if self.mins & (1 << m) != 0 {
                if let Some(s2) = next_bit(self.secs, s + 1) {
                    return Some(hms(h, m, s2));
                }
            }
            if let Some(m2) = next_bit(self.mins, m + 1) {
                return Some(hms(h, m2, lowest(self.secs)));
            }
        }
        let h2 = next_bit(hours, h + 1)?;
        Some(hms(h2, lowest(self.mins), lowest(self.secs)))
    }

    /// The last time of day strictly before second `t` of the day (`t` may be 86 400).
    fn time_before(&self, t: u32) -> Option<NaiveTime> {
        let (h, m, s) = (t / 3600, t / 60 % 60, t % 60);
        let hours = u64::from(self.hours);
        if h < 24 && hours & (1 << h) != 0 {
            if self.mins & (1 << m) != 0 {
                if let Some(s2) = prev_bit(self.secs, s) {
                    return Some(hms(h, m, s2));
                }
            }
            if let Some(m2) = prev_bit(self.mins, m) {
                return Some(hms(h, m2, highest(self.secs)));
            }
        }
        let h2 = prev_bit(hours, h)?;
        Some(hms(h2, highest(self.mins), highest(self.secs)))
    }

    /// The first matching wall time strictly after `wall` (second granularity).
    pub(crate) fn next_wall(&self, wall: NaiveDateTime) -> Option<NaiveDateTime> {
        let date = wall.date();
        if self.day_matches(date) {
            if let Some(t) = self.time_after(wall.num_seconds_from_midnight()) {
                return Some(date.and_time(t));
            }
        }
        let day = self.day_on_or_after(date.succ_opt()?)?;
        Some(day.and_time(self.first_time()))
    }

    /// The last matching wall time strictly before `wall` (second granularity).
    pub(crate) fn prev_wall(&self, wall: NaiveDateTime) -> Option<NaiveDateTime> {
        let date = wall.date();
        if self.day_matches(date) {
            // A wall time with a fraction is after its whole second.
            let bound = wall.num_seconds_from_midnight() + u32::from(wall.nanosecond() > 0);
            if let Some(t) = self.time_before(bound) {
                return Some(date.and_time(t));
            }
        }
        let day = self.day_on_or_before(date.pred_opt()?)?;
        Some(day.and_time(self.last_time()))
    }

    /// Whether `wall` (whole second) is one of the expression's times.
    #[cfg(test)]
    pub(crate) fn matches(&self, wall: NaiveDateTime) -> bool {
        self.day_matches(wall.date())
            && u64::from(self.hours) & (1 << wall.hour()) != 0
            && self.mins & (1 << wall.minute()) != 0
            && self.secs & (1 << wall.second()) != 0
            && wall.nanosecond() == 0
    }
}

/// A value set (ascending, validated against the field's range) as a bit mask.
pub(crate) fn mask(values: &[u32]) -> u64 {
    values.iter().fold(0u64, |m, v| m | (1u64 << v))
}

/// Years 1970..=2100 as the engine's bit set.
pub(crate) fn year_mask(years: &[u32]) -> [u64; 3] {
    let mut out = [0u64; 3];
    for y in years {
        let i = (*y as i32 - FIRST_YEAR) as usize;
        out[i / 64] |= 1 << (i % 64);
    }
    out
}
