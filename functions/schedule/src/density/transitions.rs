//! A zone's transitions (offset changes) over a span of instants, found by asking the zone
//! for its offset: once a day, then to the second where two days differ. The zone rules are
//! the schedule's own ([`Zone`]), so the transitions are the ones its fires are computed with.

use std::collections::BTreeMap;

use chrono::DateTime;

use crate::zone::Zone;

pub(super) use crate::next_fire::HORIZON_SECS;

const DAY: i64 = 86_400;
const HOUR: i64 = 3_600;

/// One offset change: at instant `at` (Unix seconds) the offset goes from `before` to `after`
/// (seconds east of UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Transition {
    pub(super) at: i64,
    pub(super) before: i32,
    pub(super) after: i32,
}

/// One transition of each shape (its local time of day and its two offsets) in
/// `[from, until]`: transitions of one shape move a periodic wall set alike. `None` when two
/// transitions come within two days of each other, where measuring one at a time would not
/// be sound.
pub(super) fn shapes(zone: &Zone, from: i64, until: i64) -> Option<Vec<Transition>> {
    let all = between(zone, from, until);
    if all.windows(2).any(|w| w[1].at - w[0].at < 2 * DAY) {
        return None;
    }
    let mut one_each: BTreeMap<(i64, i32, i32), Transition> = BTreeMap::new();
    for t in all {
        let local = (t.at + i64::from(t.before)).rem_euclid(DAY);
        one_each.entry((local, t.before, t.after)).or_insert(t);
    }
    Some(one_each.into_values().collect())
}

/// Every transition in `[from, until]`, ascending. A zone that changed its offset and back
/// within one day would be missed: none does.
fn between(zone: &Zone, from: i64, until: i64) -> Vec<Transition> {
    let until = until.min(HORIZON_SECS);
    let mut out = Vec::new();
    let mut t = from.max(0);
    let mut off = offset(zone, t);
    while t < until {
        let next = (t + DAY).min(until);
        let o = offset(zone, next);
        if o != off {
            let mut h = t;
            while h < next {
                let end = (h + HOUR).min(next);
                let (a, b) = (offset(zone, h), offset(zone, end));
                if a != b {
                    let at = first_change(zone, h, end, a);
                    out.push(Transition { at, before: a, after: offset(zone, at) });
                }
                h = end;
            }
        }
        t = next;
        off = o;
    }
    out
}

/// The first second in `(lo, hi]` whose offset is not `before` (`hi`'s is not).
fn first_change(zone: &Zone, mut lo: i64, mut hi: i64, before: i32) -> i64 {
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if offset(zone, mid) == before {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

/// The zone's offset at Unix second `t`, in seconds east of UTC.
fn offset(zone: &Zone, t: i64) -> i32 {
    DateTime::from_timestamp(t, 0).map(|i| (zone.local(i) - i.naive_utc()).num_seconds() as i32).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zone(name: &str) -> Zone {
        Zone::Compiled(name.parse().unwrap_or_else(|e| panic!("{name}: {e}")))
    }

    #[test]
    fn new_york_2026_springs_forward_and_falls_back() {
        // 2026-01-01 .. 2027-01-01.
        let all = between(&zone("America/New_York"), 1_767_225_600, 1_798_761_600);
        assert_eq!(
            all,
            vec![
                // 2026-03-08 07:00Z (02:00 EST -> 03:00 EDT), 2026-11-01 06:00Z (02:00 EDT -> 01:00 EST).
                Transition { at: 1_772_953_200, before: -18_000, after: -14_400 },
                Transition { at: 1_793_512_800, before: -14_400, after: -18_000 },
            ]
        );
        assert!(between(&zone("UTC"), 0, HORIZON_SECS).is_empty());
        assert!(between(&zone("Asia/Kolkata"), 1_767_225_600, HORIZON_SECS).is_empty());
    }

    #[test]
    fn a_zone_with_dst_has_two_shapes() {
        let s = shapes(&zone("Europe/Berlin"), 1_767_225_600, HORIZON_SECS).unwrap_or_default();
        assert_eq!(s.len(), 2, "{s:?}");
    }
}
