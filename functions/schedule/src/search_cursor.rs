//! Where a cron search for one pass of the overlap policy starts. Wall time -> instant is
//! monotone only within one pass (`first` or `last`), so when `after` (or `x`) falls in a
//! repeated hour the search must start at the edge of that hour for the other pass, found by
//! bisection over the zone's lookups.

use chrono::{DateTime, Duration, NaiveDateTime, Utc};

use crate::zone::{self, local_of, Lookup, Pass, Zone};

/// The wall time after which (exclusive) a forward search for one pass looks for fires after
/// `after`.
pub(crate) fn next_cursor(tz: &Zone, after: DateTime<Utc>, pass: Pass) -> NaiveDateTime {
    let w_after = local_of(tz, after);
    if pass == Pass::Last {
        // `after` in the first occurrence of a repeated hour: the second occurrences of the
        // earlier wall times of that hour are still ahead of `after`.
        if let Some(len) = zone::first_pass_overlap(tz, after, w_after) {
            return overlap_start(tz, w_after, len) - Duration::seconds(1);
        }
    } else if let Some(len) = zone::second_pass_overlap(tz, after, w_after) {
        // `after` in the second occurrence: first occurrences of the rest of that hour are
        // already behind it.
        return overlap_end(tz, w_after, len) - Duration::seconds(1);
    }
    w_after
}

/// The wall time before which (exclusive) a backward search for one pass looks for fires at or
/// before `x`.
pub(crate) fn prev_cursor(tz: &Zone, x: DateTime<Utc>, pass: Pass) -> NaiveDateTime {
    let w_x = local_of(tz, x);
    if pass == Pass::First {
        // `x` in the second occurrence of a repeated hour: first occurrences of the later
        // wall times of that hour are still before `x`.
        if let Some(len) = zone::second_pass_overlap(tz, x, w_x) {
            return overlap_end(tz, w_x, len);
        }
    } else if let Some(len) = zone::first_pass_overlap(tz, x, w_x) {
        // `x` in the first occurrence: second occurrences of that hour are all after it.
        return overlap_start(tz, w_x, len);
    }
    // One second past the floor of w_x.
    floor_secs(w_x) + Duration::seconds(1)
}

fn floor_secs(w: NaiveDateTime) -> NaiveDateTime {
    w - Duration::nanoseconds(i64::from(chrono::Timelike::nanosecond(&w)))
}

/// The first wall time of the repeated interval that contains `wall` (which is ambiguous), by
/// bisection over at most `len` seconds before it.
fn overlap_start(tz: &Zone, wall: NaiveDateTime, len: Duration) -> NaiveDateTime {
    let wall = floor_secs(wall);
    // lo: not ambiguous (or the earliest candidate), hi: ambiguous.
    let (mut lo, mut hi) = (wall - len, wall);
    if is_ambiguous(tz, lo) {
        return lo;
    }
    while hi - lo > Duration::seconds(1) {
        let mid = lo + Duration::seconds((hi - lo).num_seconds() / 2);
        if is_ambiguous(tz, mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// One second past the last wall time of the repeated interval that contains `wall`.
fn overlap_end(tz: &Zone, wall: NaiveDateTime, len: Duration) -> NaiveDateTime {
    let wall = floor_secs(wall);
    let (mut lo, mut hi) = (wall, wall + len);
    if is_ambiguous(tz, hi) {
        return hi + Duration::seconds(1);
    }
    while hi - lo > Duration::seconds(1) {
        let mid = lo + Duration::seconds((hi - lo).num_seconds() / 2);
        if is_ambiguous(tz, mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

fn is_ambiguous(tz: &Zone, wall: NaiveDateTime) -> bool {
    matches!(tz.lookup(wall), Lookup::Ambiguous(..))
}
