//! [`Schedule::density`] against its definition: fixed cases, and property tests whose oracle
//! walks the schedule's actual fires (the walk lives only here; production never samples).
//! For UTC schedules that fire every day and no calendar the density must equal what the walk
//! sees; with DST zones, weekday fields and business calendars it must bound it (peak at
//! least, gap at most what the walk sees).

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use proptest::prelude::*;

use super::proptests::{transitions_cached, ZONES};
use super::tests::utc;
use super::*;

fn sched(spec: ScheduleSpec) -> Schedule {
    Schedule::parse(&spec, utc("2026-01-01T00:00:00Z")).unwrap_or_else(|e| panic!("{spec:?}: {e}"))
}

fn one(expr: &str, zone: &str) -> Schedule {
    sched(ScheduleSpec::new(expr, zone))
}

fn union(exprs: &[&str], zone: &str) -> Schedule {
    let mut spec = ScheduleSpec::new(exprs[0], zone);
    spec.expressions = exprs[1..].iter().map(|s| s.to_string()).collect();
    sched(spec)
}

fn density(s: &Schedule) -> (u32, Option<u32>) {
    let d = s.density(utc("2026-01-01T00:00:00Z"));
    (d.peak_per_hour, d.min_gap_secs)
}

/// The most fires in any 3,600 s and the shortest gap among `fires` (ascending).
fn observed(fires: &[DateTime<Utc>]) -> (u32, Option<u32>) {
    let mut peak = 0usize;
    let mut lo = 0usize;
    for (hi, f) in fires.iter().enumerate() {
        while *f - fires[lo] >= Duration::hours(1) {
            lo += 1;
        }
        peak = peak.max(hi + 1 - lo);
    }
    let gap = fires.windows(2).map(|w| (w[1] - w[0]).num_seconds() as u32).min();
    (peak as u32, gap)
}

/// A computed gap bounds a seen one: no larger (`None`: fires at most once, so nothing seen).
fn gap_bounds(computed: Option<u32>, seen: Option<u32>) -> bool {
    seen.is_none_or(|g| computed.is_some_and(|c| c <= g))
}

fn walk(s: &Schedule, from: DateTime<Utc>, days: i64) -> Vec<DateTime<Utc>> {
    s.fires_between(from - Duration::seconds(1), from + Duration::days(days), 1_000_000)
}

#[test]
fn the_review_union_is_dense_every_day() {
    // Every minute, and every second on Sundays: the Sunday hour, whatever day it is asked.
    assert_eq!(density(&union(&["0 * * * * *", "* * * * * SUN"], "UTC")), (3_600, Some(1)));
    // A member that only fires from 2027 counts as much.
    assert_eq!(density(&union(&["0 0 * * * *", "* * * * * * 2027"], "UTC")).0, 3_600);
}

#[test]
fn a_cron_expression_is_seconds_times_minutes() {
    assert_eq!(density(&one("0 * * * * *", "UTC")), (60, Some(60)));
    assert_eq!(density(&one("*/10 0-29 9-17 * * MON-FRI", "UTC")), (180, Some(10)));
    assert_eq!(density(&one("0 0 9 * * *", "Asia/Kolkata")), (1, Some(86_400)));
    // Two members on the same grid are one set: every 30 minutes, not 2 + 2 an hour.
    assert_eq!(density(&union(&["0 0,30 * * * *", "0 0 * * * *"], "UTC")), (2, Some(1_800)));
}

#[test]
fn dst_is_measured_at_each_transition() {
    // New York springs forward 02:00 -> 03:00: 02:30 shifts to 03:00, then 03:30 fires.
    assert_eq!(density(&one("0 30 * * * *", "America/New_York")), (2, Some(1_800)));
    let mut skip = ScheduleSpec::new("0 30 * * * *", "America/New_York");
    skip.on_gap = GapPolicy::Skip;
    assert_eq!(density(&sched(skip)), (1, Some(3_600)));
    // Falling back under `both`, 01:30 fires twice, an hour apart: never twice in one hour.
    let mut both = ScheduleSpec::new("0 30 1 * * *", "America/New_York");
    both.on_overlap = OverlapPolicy::Both;
    assert_eq!(density(&sched(both)), (1, Some(3_600)));
    // Every 10 minutes of 01:xx, twice: still 6 an hour, 600 s apart.
    let mut both = ScheduleSpec::new("0 */10 1 * * *", "America/New_York");
    both.on_overlap = OverlapPolicy::Both;
    assert_eq!(density(&sched(both)), (6, Some(600)));
    // Lord Howe moves by 30 minutes: springing forward 02:00 -> 02:30 puts 01:30-01:59 and
    // 02:30-02:59 in one real hour, twice the 1,800 of an ordinary hour.
    assert_eq!(density(&one("* 30-59 * * * *", "Australia/Lord_Howe")).0, 3_600);
}

#[test]
fn rate_and_at_are_exact_and_kinds_add_up() {
    assert_eq!(density(&one("rate(10 seconds)", "UTC")), (360, Some(10)));
    assert_eq!(density(&one("rate(7 seconds)", "UTC")), (515, Some(7)));
    assert_eq!(density(&one("rate(2 hours)", "UTC")), (1, Some(7_200)));
    assert_eq!(density(&one("at(2026-06-01T09:00:00)", "UTC")), (1, None));
    // Two lattices from one anchor, 60 and 90 s: 90 follows 60 by 30 s.
    assert_eq!(density(&union(&["rate(60 seconds)", "rate(90 seconds)"], "UTC")), (100, Some(30)));
    // An at() next to a daily cron: its exact neighbour, 30 minutes after it.
    assert_eq!(density(&union(&["0 0 9 * * *", "at(2026-06-01T08:30:00)"], "UTC")), (2, Some(1_800)));
    // Never more than one fire a second.
    assert_eq!(density(&union(&["* * * * * *", "rate(1 seconds)"], "UTC")).0, 3_600);
}

const SECS: &[&str] = &["0", "30", "0,45", "*/15", "*/7", "5-9"];
const MINS: &[&str] = &["0", "*/15", "30", "0,30", "*/7", "45", "10-20", "*", "59"];
const HOURS: &[&str] = &["*", "0", "1", "2", "1-3", "*/2", "0-4", "23", "0,23"];
const DOWS: &[&str] = &["*", "MON-FRI", "SUN", "SAT,SUN"];

fn cron(dow: bool) -> impl Strategy<Value = String> {
    let dows: &[&str] = if dow { DOWS } else { &["*"] };
    (
        prop::sample::select(SECS),
        prop::sample::select(MINS),
        prop::sample::select(HOURS),
        prop::sample::select(dows),
    )
        .prop_map(|(s, m, h, d)| format!("{s} {m} {h} * * {d}"))
}

fn policies() -> impl Strategy<Value = (GapPolicy, OverlapPolicy)> {
    (
        prop::sample::select(vec![GapPolicy::Skip, GapPolicy::Shift]),
        prop::sample::select(vec![OverlapPolicy::First, OverlapPolicy::Last, OverlapPolicy::Both]),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// UTC, every day, no calendar: the density is what eight days of fires show, for one
    /// expression and for a union of two.
    #[test]
    fn utc_density_is_exact(a in cron(false), b in prop::option::of(cron(false))) {
        let mut spec = ScheduleSpec::new(a, "UTC");
        spec.expressions = b.into_iter().collect();
        // Two spellings of one expression are refused.
        let Ok(s) = Schedule::parse(&spec, utc("2026-01-01T00:00:00Z")) else { return Ok(()) };
        let fires = walk(&s, utc("2026-03-02T00:00:00Z"), 8);
        prop_assert_eq!(density(&s), observed(&fires), "{:?}", spec);
    }

    /// Weekday fields: the busiest hour is still exact, the gap a lower bound.
    #[test]
    fn utc_weekdays_bound_the_gap(a in cron(true)) {
        let s = one(&a, "UTC");
        let (peak, gap) = density(&s);
        let (seen_peak, seen_gap) = observed(&walk(&s, utc("2026-03-02T00:00:00Z"), 8));
        prop_assert_eq!(peak, seen_peak, "{}", a);
        prop_assert!(gap_bounds(gap, seen_gap), "{} gap {:?} > seen {:?}", a, gap, seen_gap);
    }

    /// DST zones, any policy, four days around a real transition: a sound bound.
    #[test]
    fn dst_density_bounds_the_fires(
        a in cron(true),
        b in prop::option::of(cron(false)),
        zone in prop::sample::select(ZONES),
        (on_gap, on_overlap) in policies(),
        pick in any::<prop::sample::Index>(),
    ) {
        let transitions: Vec<_> = transitions_cached(zone)
            .into_iter()
            .filter(|t| t.0 > utc("2020-01-01T00:00:00Z").timestamp())
            .collect();
        prop_assume!(!transitions.is_empty());
        let at = DateTime::from_timestamp(pick.get(&transitions).0, 0).unwrap_or_default();
        let mut spec = ScheduleSpec::new(a.clone(), zone);
        spec.expressions = b.into_iter().collect();
        spec.on_gap = on_gap;
        spec.on_overlap = on_overlap;
        let Ok(s) = Schedule::parse(&spec, at) else { return Ok(()) };
        let d = s.density(at - Duration::days(2));
        let (seen_peak, seen_gap) = observed(&walk(&s, at - Duration::days(2), 4));
        prop_assert!(d.peak_per_hour >= seen_peak, "{:?}: peak {} < seen {}", spec, d.peak_per_hour, seen_peak);
        prop_assert!(gap_bounds(d.min_gap_secs, seen_gap), "{:?}: gap {:?} > seen {:?}", spec, d.min_gap_secs, seen_gap);
    }

    /// A business calendar (holidays, rest days, any roll): a sound bound.
    #[test]
    fn calendars_bound_the_fires(
        a in cron(true),
        holidays in prop::collection::btree_set(2u32..=20, 0..6),
        roll in prop::sample::select(vec![Roll::Skip, Roll::Following, Roll::Preceding, Roll::ModifiedFollowing]),
    ) {
        let spec = BusinessCalendarSpec {
            holidays: holidays.iter().map(|d| format!("2026-03-{d:02}")).collect(),
            ..Default::default()
        };
        let days = Arc::new(BusinessDays::single("cal", 1, &spec).unwrap_or_else(|e| panic!("{e}")));
        let mut spec = ScheduleSpec::new(a.clone(), "Europe/Berlin");
        spec.business_calendar = Some(BusinessCalendarRef { calendar: "cal".into(), roll });
        let from = utc("2026-03-01T00:00:00Z");
        let s = Schedule::parse_with(&spec, from, Some(days)).unwrap_or_else(|e| panic!("{e}"));
        let d = s.density(from);
        let (seen_peak, seen_gap) = observed(&walk(&s, from, 12));
        prop_assert!(d.peak_per_hour >= seen_peak, "{}: peak {} < seen {}", a, d.peak_per_hour, seen_peak);
        prop_assert!(gap_bounds(d.min_gap_secs, seen_gap), "{}: gap {:?} > seen {:?}", a, d.min_gap_secs, seen_gap);
    }
}
