//! Unit tests of the schedule engine: the `cron` crate's numbering, DST transitions in five
//! zones, `rate()` across DST, bounds, calendars, misfire and jitter.
//!
//! Transition instants used below (tzdb 2025b, checked by `transitions_are_where_we_think`):
//! - America/New_York: 2026-03-08 02:00 EST -> 03:00 EDT at 07:00Z; 2026-11-01 02:00 EDT ->
//!   01:00 EST at 06:00Z.
//! - Europe/London: 2026-03-29 01:00 GMT -> 02:00 BST at 01:00Z; 2026-10-25 02:00 BST ->
//!   01:00 GMT at 01:00Z.
//! - Asia/Shanghai: none (UTC+8 all year).
//! - Australia/Sydney: 2026-04-05 03:00 AEDT -> 02:00 AEST at 16:00Z (4 Apr); 2026-10-04
//!   02:00 AEST -> 03:00 AEDT at 16:00Z (3 Oct).
//! - Australia/Lord_Howe (30 minutes): 2026-04-05 02:00 +11 -> 01:30 +10:30 at 15:00Z (4 Apr);
//!   2026-10-04 02:00 +10:30 -> 02:30 +11 at 15:30Z (3 Oct).

use std::str::FromStr;

use chrono::{DateTime, Datelike, Duration, Offset, SecondsFormat, Timelike, Utc};
use chrono_tz::Tz;

use super::*;

pub(super) fn utc(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

pub(super) fn z(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

fn sched(expr: &str, tz: &str, gap: GapPolicy, overlap: OverlapPolicy) -> Schedule {
    let mut spec = ScheduleSpec::new(expr, tz);
    spec.on_gap = gap;
    spec.on_overlap = overlap;
    Schedule::parse(&spec, utc("2026-01-01T00:00:00Z")).unwrap_or_else(|e| panic!("{expr} {tz}: {e}"))
}

/// Fires in `(after, until]` as RFC 3339 strings.
fn between(s: &Schedule, after: &str, until: &str) -> Vec<String> {
    s.fires_between(utc(after), utc(until), 100_000).into_iter().map(z).collect()
}

use GapPolicy::{Shift, Skip};
use OverlapPolicy::{Both, First, Last};

// ---- the cron crate, checked rather than remembered -------------------------------------------

#[test]
fn cron_crate_day_of_week_is_quartz_numbering() {
    // GIVEN the crate's own parser, WHEN day-of-week is 1 or 2, THEN 1 is Sunday and 2 Monday.
    let after = utc("2026-06-03T00:00:00Z"); // a Wednesday
    let sun = cron::Schedule::from_str("0 0 0 * * 1").unwrap().after(&after).next().unwrap();
    let mon = cron::Schedule::from_str("0 0 0 * * 2").unwrap().after(&after).next().unwrap();
    let sat = cron::Schedule::from_str("0 0 0 * * 7").unwrap().after(&after).next().unwrap();
    assert_eq!(sun.weekday(), chrono::Weekday::Sun);
    assert_eq!(mon.weekday(), chrono::Weekday::Mon);
    assert_eq!(sat.weekday(), chrono::Weekday::Sat);
    assert!(cron::Schedule::from_str("0 0 0 * * 0").is_err(), "0 is not a day for the crate");
    // and it takes no 5-field form
    assert!(cron::Schedule::from_str("0 0 * * *").is_err());
}

#[test]
fn cron_crate_combines_dom_and_dow_with_and() {
    // The crate's rule, which the 6/7-field form keeps: the 13th AND a Friday.
    let s = cron::Schedule::from_str("0 0 0 13 * 6").unwrap();
    let f: Vec<_> = s.after(&utc("2026-01-01T00:00:00Z")).take(2).collect();
    assert_eq!(z(f[0]), "2026-02-13T00:00:00Z");
    assert_eq!(z(f[1]), "2026-03-13T00:00:00Z");
}

#[test]
fn unix_five_field_day_of_week_translation() {
    // 2026-06-07 is a Sunday.
    let after = "2026-06-06T12:00:00Z";
    for (dow, first) in [
        ("0", "2026-06-07T09:00:00Z"),
        ("7", "2026-06-07T09:00:00Z"),
        ("sun", "2026-06-07T09:00:00Z"),
        ("1", "2026-06-08T09:00:00Z"),
        ("6", "2026-06-13T09:00:00Z"),
        ("1-5", "2026-06-08T09:00:00Z"),
        ("5-7", "2026-06-07T09:00:00Z"),
    ] {
        let s = sched(&format!("0 9 * * {dow}"), "UTC", Shift, First);
        assert_eq!(z(s.next_after(utc(after)).unwrap()), first, "dow {dow}");
    }
    // Mon-Fri gives exactly five days a week.
    let s = sched("0 9 * * 1-5", "UTC", Shift, First);
    let week = s.fires_between(utc("2026-06-07T00:00:00Z"), utc("2026-06-14T00:00:00Z"), 100);
    let days: Vec<_> = week.iter().map(|t| t.weekday().to_string()).collect();
    assert_eq!(days, ["Mon", "Tue", "Wed", "Thu", "Fri"]);
}

#[test]
fn unix_five_field_dom_and_dow_combine_with_or() {
    // Vixie cron: "on the 1st and 15th, and on every Monday".
    let s = sched("0 0 1,15 * mon", "UTC", Shift, First);
    let f = between(&s, "2026-06-01T00:00:00Z", "2026-06-16T00:00:00Z");
    assert_eq!(
        f,
        ["2026-06-08T00:00:00Z", "2026-06-15T00:00:00Z"],
        "Jun 1 is excluded (after is exclusive), Jun 8 Monday, Jun 15 both (once)"
    );
    // A '*'-prefixed field keeps AND: every other day that is a Monday.
    let s = sched("0 0 */2 * mon", "UTC", Shift, First);
    let f = between(&s, "2026-06-01T00:00:00Z", "2026-07-01T00:00:00Z");
    assert_eq!(f, ["2026-06-15T00:00:00Z", "2026-06-29T00:00:00Z"]);
}

#[test]
fn five_field_form_means_seconds_zero() {
    let s = sched("*/5 * * * *", "UTC", Shift, First);
    assert_eq!(s.normalized_expression(), "0 0,5,10,15,20,25,30,35,40,45,50,55 * * * *");
    assert_eq!(
        between(&s, "2026-01-01T00:00:00Z", "2026-01-01T00:10:00Z"),
        ["2026-01-01T00:05:00Z", "2026-01-01T00:10:00Z"]
    );
}

// ---- America/New_York -------------------------------------------------------------------------

#[test]
fn new_york_daily_spring_forward() {
    // 02:30 does not exist on 2026-03-08.
    let shift = sched("0 30 2 * * *", "America/New_York", Shift, First);
    assert_eq!(
        between(&shift, "2026-03-07T00:00:00Z", "2026-03-10T00:00:00Z"),
        ["2026-03-07T07:30:00Z", "2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"]
    );
    let skip = sched("0 30 2 * * *", "America/New_York", Skip, First);
    assert_eq!(
        between(&skip, "2026-03-07T00:00:00Z", "2026-03-10T00:00:00Z"),
        ["2026-03-07T07:30:00Z", "2026-03-09T06:30:00Z"]
    );
}

#[test]
fn new_york_daily_fall_back() {
    // 01:30 happens twice on 2026-11-01: 05:30Z (EDT) and 06:30Z (EST).
    let window = ("2026-10-31T00:00:00Z", "2026-11-03T00:00:00Z");
    let expect = |o, v: &[&str]| {
        let s = sched("0 30 1 * * *", "America/New_York", Shift, o);
        assert_eq!(between(&s, window.0, window.1), v, "{o:?}");
    };
    expect(First, &["2026-10-31T05:30:00Z", "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"]);
    expect(Last, &["2026-10-31T05:30:00Z", "2026-11-01T06:30:00Z", "2026-11-02T06:30:00Z"]);
    expect(
        Both,
        &["2026-10-31T05:30:00Z", "2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z", "2026-11-02T06:30:00Z"],
    );
}

#[test]
fn new_york_hourly_across_both_transitions() {
    let s = sched("0 30 * * * *", "America/New_York", Shift, First);
    assert_eq!(
        between(&s, "2026-03-08T06:00:00Z", "2026-03-08T08:00:00Z"),
        // 01:30 EST, 02:30 (gap) shifted to 03:00 EDT, 03:30 EDT
        ["2026-03-08T06:30:00Z", "2026-03-08T07:00:00Z", "2026-03-08T07:30:00Z"]
    );
    let s = sched("0 30 * * * *", "America/New_York", Skip, First);
    assert_eq!(
        between(&s, "2026-03-08T06:00:00Z", "2026-03-08T08:00:00Z"),
        ["2026-03-08T06:30:00Z", "2026-03-08T07:30:00Z"]
    );
    let f = |o| {
        between(
            &sched("0 0 * * * *", "America/New_York", Shift, o),
            "2026-11-01T03:30:00Z",
            "2026-11-01T07:30:00Z",
        )
    };
    assert_eq!(f(First), ["2026-11-01T04:00:00Z", "2026-11-01T05:00:00Z", "2026-11-01T07:00:00Z"]);
    assert_eq!(f(Last), ["2026-11-01T04:00:00Z", "2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z"]);
    assert_eq!(
        f(Both),
        ["2026-11-01T04:00:00Z", "2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z"]
    );
}

#[test]
fn new_york_every_15_minutes_fall_back_in_order() {
    // docs/schedule.md, "How a cron fire is found": the crate's zone iterator yields 05:00, 06:00,
    // 05:30, 06:30 here. Ours is ordered, and `both` gives every quarter hour of real time.
    let s = sched("0 */15 * * * *", "America/New_York", Shift, Both);
    let f = s.fires_between(utc("2026-11-01T04:50:00Z"), utc("2026-11-01T07:10:00Z"), 1000);
    assert_eq!(f.len(), 9, "{f:?}");
    for w in f.windows(2) {
        assert_eq!(w[1] - w[0], Duration::minutes(15));
    }
    // `first` leaves a one-hour hole (the second 01:xx), `last` a hole in the first 01:xx.
    let first = sched("0 */15 * * * *", "America/New_York", Shift, First);
    assert_eq!(
        between(&first, "2026-11-01T05:30:00Z", "2026-11-01T07:10:00Z"),
        ["2026-11-01T05:45:00Z", "2026-11-01T07:00:00Z"]
    );
    let last = sched("0 */15 * * * *", "America/New_York", Shift, Last);
    assert_eq!(
        between(&last, "2026-11-01T04:30:00Z", "2026-11-01T06:20:00Z"),
        ["2026-11-01T04:45:00Z", "2026-11-01T06:00:00Z", "2026-11-01T06:15:00Z"]
    );
}

#[test]
fn new_york_every_15_minutes_spring_forward() {
    // 02:00, 02:15, 02:30, 02:45 do not exist: `shift` collapses them into 03:00 EDT (07:00Z),
    // which is also a fire of its own: one fire there.
    for gap in [Shift, Skip] {
        let s = sched("0 */15 * * * *", "America/New_York", gap, First);
        assert_eq!(
            between(&s, "2026-03-08T06:30:00Z", "2026-03-08T07:15:00Z"),
            ["2026-03-08T06:45:00Z", "2026-03-08T07:00:00Z", "2026-03-08T07:15:00Z"],
            "{gap:?}"
        );
    }
    // Where the hour after the gap has no fire of its own, shift and skip differ.
    let f = |g| {
        between(
            &sched("0 10,20 2,3 * * *", "America/New_York", g, First),
            "2026-03-08T00:00:00Z",
            "2026-03-09T00:00:00Z",
        )
    };
    assert_eq!(f(Shift), ["2026-03-08T07:00:00Z", "2026-03-08T07:10:00Z", "2026-03-08T07:20:00Z"]);
    assert_eq!(f(Skip), ["2026-03-08T07:10:00Z", "2026-03-08T07:20:00Z"]);
}

// ---- Europe/London ----------------------------------------------------------------------------

#[test]
fn london_every_second_across_both_transitions() {
    // Spring: 01:00-02:00 local does not exist; the UTC seconds stay contiguous either way.
    for gap in [Shift, Skip] {
        let s = sched("* * * * * *", "Europe/London", gap, First);
        let f = s.fires_between(utc("2026-03-29T00:59:57Z"), utc("2026-03-29T01:00:03Z"), 100);
        assert_eq!(f.len(), 6, "{gap:?} {f:?}");
        assert_eq!(z(f[2]), "2026-03-29T01:00:00Z");
    }
    // Fall: 01:00-02:00 local happens twice. Over three hours of real time around it, `both`
    // fires every second; `first` and `last` each leave out one hour.
    let count = |o| {
        sched("* * * * * *", "Europe/London", Shift, o)
            .fires_between(utc("2026-10-24T22:59:59Z"), utc("2026-10-25T01:59:59Z"), 100_000)
            .len()
    };
    assert_eq!(count(Both), 3 * 3600);
    assert_eq!(count(First), 2 * 3600);
    assert_eq!(count(Last), 2 * 3600);
    let first = sched("* * * * * *", "Europe/London", Shift, First);
    assert_eq!(z(first.next_after(utc("2026-10-25T00:59:59Z")).unwrap()), "2026-10-25T02:00:00Z");
    let last = sched("* * * * * *", "Europe/London", Shift, Last);
    assert_eq!(z(last.next_after(utc("2026-10-24T23:59:59Z")).unwrap()), "2026-10-25T01:00:00Z");
    // `last` asked from inside the first pass goes back to the start of the second pass.
    assert_eq!(z(last.next_after(utc("2026-10-25T00:30:00Z")).unwrap()), "2026-10-25T01:00:00Z");
}

#[test]
fn london_daily_and_hourly() {
    let s = sched("0 30 1 * * *", "Europe/London", Shift, First);
    assert_eq!(
        between(&s, "2026-03-28T00:00:00Z", "2026-03-31T00:00:00Z"),
        ["2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"]
    );
    let s = sched("0 0 * * * *", "Europe/London", Skip, Both);
    assert_eq!(
        between(&s, "2026-10-24T23:30:00Z", "2026-10-25T02:30:00Z"),
        ["2026-10-25T00:00:00Z", "2026-10-25T01:00:00Z", "2026-10-25T02:00:00Z"]
    );
}

// ---- Asia/Shanghai: no DST --------------------------------------------------------------------

#[test]
fn shanghai_has_no_transitions() {
    let s = sched("0 30 2 * * *", "Asia/Shanghai", Skip, First);
    let year = s.fires_between(utc("2025-12-31T18:30:00Z"), utc("2026-12-31T18:30:00Z"), 1000);
    assert_eq!(year.len(), 365);
    assert!(year.iter().all(|t| t.hour() == 18 && t.minute() == 30));
    let s = sched("0 */15 * * * *", "Asia/Shanghai", Skip, Both);
    let f = s.fires_between(utc("2026-03-01T00:00:00Z"), utc("2026-11-30T00:00:00Z"), 100_000);
    assert_eq!(
        f.len() as i64,
        (utc("2026-11-30T00:00:00Z") - utc("2026-03-01T00:00:00Z")).num_minutes() / 15
    );
    let s = sched("* * * * * *", "Asia/Shanghai", Skip, Both);
    assert_eq!(s.fires_between(utc("2026-06-01T00:00:00Z"), utc("2026-06-01T01:00:00Z"), 10_000).len(), 3600);
    let s = sched("0 0 * * * *", "Asia/Shanghai", Skip, Both);
    assert_eq!(s.fires_between(utc("2026-01-01T00:00:00Z"), utc("2027-01-01T00:00:00Z"), 10_000).len(), 8760);
}

// ---- Australia/Sydney (southern hemisphere) ---------------------------------------------------

#[test]
fn sydney_daily_both_transitions() {
    // April: 02:30 happens twice (AEDT 15:30Z, AEST 16:30Z on 4 Apr UTC).
    let f = |o| {
        between(
            &sched("0 30 2 * * *", "Australia/Sydney", Shift, o),
            "2026-04-03T00:00:00Z",
            "2026-04-06T00:00:00Z",
        )
    };
    assert_eq!(f(First), ["2026-04-03T15:30:00Z", "2026-04-04T15:30:00Z", "2026-04-05T16:30:00Z"]);
    assert_eq!(f(Last), ["2026-04-03T15:30:00Z", "2026-04-04T16:30:00Z", "2026-04-05T16:30:00Z"]);
    assert_eq!(
        f(Both),
        ["2026-04-03T15:30:00Z", "2026-04-04T15:30:00Z", "2026-04-04T16:30:00Z", "2026-04-05T16:30:00Z"]
    );
    // October: 02:30 does not exist; shift to 03:00 AEDT = 16:00Z on 3 Oct.
    let f = |g| {
        between(
            &sched("0 30 2 * * *", "Australia/Sydney", g, First),
            "2026-10-02T00:00:00Z",
            "2026-10-05T00:00:00Z",
        )
    };
    assert_eq!(f(Shift), ["2026-10-02T16:30:00Z", "2026-10-03T16:00:00Z", "2026-10-04T15:30:00Z"]);
    assert_eq!(f(Skip), ["2026-10-02T16:30:00Z", "2026-10-04T15:30:00Z"]);
}

#[test]
fn sydney_hourly_and_every_second() {
    let s = sched("0 0 * * * *", "Australia/Sydney", Shift, Both);
    assert_eq!(
        between(&s, "2026-04-04T14:30:00Z", "2026-04-04T17:30:00Z"),
        ["2026-04-04T15:00:00Z", "2026-04-04T16:00:00Z", "2026-04-04T17:00:00Z"]
    );
    let s = sched("* * * * * *", "Australia/Sydney", Shift, First);
    let f = s.fires_between(utc("2026-10-03T15:59:58Z"), utc("2026-10-03T16:00:02Z"), 100);
    assert_eq!(f.len(), 4);
}

// ---- Australia/Lord_Howe (30-minute shift) ----------------------------------------------------

#[test]
fn lord_howe_half_hour_transitions() {
    // April: 01:30-02:00 happens twice (+11 then +10:30).
    let f = |o| {
        between(
            &sched("0 45 1 * * *", "Australia/Lord_Howe", Shift, o),
            "2026-04-04T12:00:00Z",
            "2026-04-04T18:00:00Z",
        )
    };
    assert_eq!(f(First), ["2026-04-04T14:45:00Z"]);
    assert_eq!(f(Last), ["2026-04-04T15:15:00Z"]);
    assert_eq!(f(Both), ["2026-04-04T14:45:00Z", "2026-04-04T15:15:00Z"]);
    // October: 02:00-02:30 does not exist.
    let f = |g| {
        between(
            &sched("0 15 2 * * *", "Australia/Lord_Howe", g, First),
            "2026-10-03T12:00:00Z",
            "2026-10-03T18:00:00Z",
        )
    };
    assert_eq!(f(Shift), ["2026-10-03T15:30:00Z"]);
    assert!(f(Skip).is_empty());
    // Every 15 minutes: 01:45 (+10:30), 02:00 and 02:15 shifted onto 02:30 (+11), 02:45.
    let s = sched("0 */15 * * * *", "Australia/Lord_Howe", Shift, First);
    assert_eq!(
        between(&s, "2026-10-03T15:00:00Z", "2026-10-03T15:45:00Z"),
        ["2026-10-03T15:15:00Z", "2026-10-03T15:30:00Z", "2026-10-03T15:45:00Z"]
    );
    // Hourly `both` in April: 01:00 (+11), 02:00 (+10:30); 01:30 is no fire of this schedule.
    let s = sched("0 0 * * * *", "Australia/Lord_Howe", Shift, Both);
    assert_eq!(
        between(&s, "2026-04-04T13:30:00Z", "2026-04-04T16:00:00Z"),
        ["2026-04-04T14:00:00Z", "2026-04-04T15:30:00Z"]
    );
    // Every second through the April overlap: 30 extra minutes of fires with `both`.
    let n = |o| {
        sched("* * * * * *", "Australia/Lord_Howe", Shift, o)
            .fires_between(utc("2026-04-04T14:00:00Z"), utc("2026-04-04T16:00:00Z"), 100_000)
            .len()
    };
    assert_eq!(n(Both), 7200);
    assert_eq!(n(First), 7200 - 1800);
}

// ---- rate() -----------------------------------------------------------------------------------

#[test]
fn rate_one_day_is_24_hours_across_dst() {
    // rate(1 days) is 86,400 s of elapsed time: across spring-forward the local time moves
    // from 09:00 EST to 10:00 EDT. For the same local time every day use cron '0 0 9 * * *'.
    let mut spec = ScheduleSpec::new("rate(1 days)", "America/New_York");
    spec.start = Some(utc("2026-03-07T14:00:00Z"));
    let s = Schedule::parse(&spec, utc("2020-01-01T00:00:00Z")).unwrap();
    let f = s.preview(utc("2026-03-01T00:00:00Z"), 3);
    assert_eq!(
        f.iter().map(|t| z(*t)).collect::<Vec<_>>(),
        ["2026-03-07T14:00:00Z", "2026-03-08T14:00:00Z", "2026-03-09T14:00:00Z"]
    );
    let local: Vec<u32> = f.iter().map(|t| t.with_timezone(&chrono_tz::America::New_York).hour()).collect();
    assert_eq!(local, [9, 10, 10]);
    let cron = sched("0 0 9 * * *", "America/New_York", Shift, First);
    assert_eq!(
        between(&cron, "2026-03-07T00:00:00Z", "2026-03-09T00:00:00Z"),
        ["2026-03-07T14:00:00Z", "2026-03-08T13:00:00Z"]
    );
}

#[test]
fn rate_is_anchored_and_inclusive_of_its_anchor() {
    let s = Schedule::parse(&ScheduleSpec::new("rate(10 seconds)", "UTC"), utc("2026-01-01T00:00:00.250Z"))
        .unwrap();
    // The anchor is rounded up to the whole second.
    assert_eq!(z(s.next_after(utc("2025-01-01T00:00:00Z")).unwrap()), "2026-01-01T00:00:01Z");
    assert_eq!(z(s.next_after(utc("2026-01-01T00:00:01Z")).unwrap()), "2026-01-01T00:00:11Z");
    assert_eq!(z(s.next_after(utc("2026-01-01T00:00:10.999Z")).unwrap()), "2026-01-01T00:00:11Z");
    assert_eq!(z(s.prev_at_or_before(utc("2026-01-01T00:00:30Z")).unwrap()), "2026-01-01T00:00:21Z");
    assert_eq!(s.prev_at_or_before(utc("2026-01-01T00:00:00Z")), None);
}

// ---- at(), bounds, exclusions -----------------------------------------------------------------

#[test]
fn at_fires_once_in_the_jobs_zone() {
    let s = sched("at(2026-12-01T09:00:00)", "Europe/London", Shift, First);
    assert_eq!(s.preview(utc("2026-01-01T00:00:00Z"), 5), [utc("2026-12-01T09:00:00Z")]);
    assert_eq!(s.next_after(utc("2026-12-01T09:00:00Z")), None);
    let s = sched("at(2026-11-01T01:30:00)", "America/New_York", Shift, Both);
    assert_eq!(
        s.preview(utc("2026-01-01T00:00:00Z"), 5),
        [utc("2026-11-01T05:30:00Z"), utc("2026-11-01T06:30:00Z")]
    );
    let s = sched("at(2026-03-08T02:30:00)", "America/New_York", Shift, First);
    assert_eq!(s.preview(utc("2026-01-01T00:00:00Z"), 5), [utc("2026-03-08T07:00:00Z")]);
}

#[test]
fn start_and_end_bound_fires_inclusively() {
    let mut spec = ScheduleSpec::new("0 0 * * * *", "UTC");
    spec.start = Some(utc("2026-01-01T03:00:00Z"));
    spec.end = Some(utc("2026-01-01T05:00:00Z"));
    let s = Schedule::parse(&spec, utc("2026-01-01T00:00:00Z")).unwrap();
    assert_eq!(
        s.preview(utc("2025-01-01T00:00:00Z"), 10).into_iter().map(z).collect::<Vec<_>>(),
        ["2026-01-01T03:00:00Z", "2026-01-01T04:00:00Z", "2026-01-01T05:00:00Z"]
    );
    assert_eq!(z(s.prev_at_or_before(utc("2027-01-01T00:00:00Z")).unwrap()), "2026-01-01T05:00:00Z");
    assert_eq!(s.prev_at_or_before(utc("2026-01-01T02:59:59Z")), None);
}

#[test]
fn exclusions_remove_local_dates_and_weekdays() {
    let mut spec = ScheduleSpec::new("0 0 9 * * *", "America/New_York");
    spec.exclusions =
        Calendar { dates: vec!["2026-12-25".into()], weekdays: vec!["sat".into(), "Sunday".into()] };
    let s = Schedule::parse(&spec, utc("2026-01-01T00:00:00Z")).unwrap();
    let f = s.fires_between(utc("2026-12-21T00:00:00Z"), utc("2027-01-01T00:00:00Z"), 100);
    let days: Vec<u32> = f.iter().map(|t| t.with_timezone(&chrono_tz::America::New_York).day()).collect();
    assert_eq!(days, [21, 22, 23, 24, 28, 29, 30, 31]);
    // backwards too
    assert_eq!(z(s.prev_at_or_before(utc("2026-12-28T00:00:00Z")).unwrap()), "2026-12-24T14:00:00Z");
    // The local date counts, not the UTC one: 23:30 on Friday in New York is Saturday in UTC.
    let mut spec = ScheduleSpec::new("0 30 23 * * *", "America/New_York");
    spec.exclusions.weekdays = vec!["sat".into()];
    let s = Schedule::parse(&spec, utc("2026-01-01T00:00:00Z")).unwrap();
    let f = s.fires_between(utc("2026-06-05T04:00:00Z"), utc("2026-06-08T04:00:00Z"), 10);
    assert_eq!(f.iter().map(|t| z(*t)).collect::<Vec<_>>(), ["2026-06-06T03:30:00Z", "2026-06-08T03:30:00Z"]);
    // rate() honours them as well.
    let mut spec = ScheduleSpec::new("rate(6 hours)", "UTC");
    spec.start = Some(utc("2026-06-05T00:00:00Z")); // a Friday
    spec.exclusions.weekdays = vec!["sat".into(), "sun".into()];
    let s = Schedule::parse(&spec, utc("2026-01-01T00:00:00Z")).unwrap();
    let f = s.preview(utc("2026-06-05T12:00:00Z"), 3);
    assert_eq!(
        f.iter().map(|t| z(*t)).collect::<Vec<_>>(),
        ["2026-06-05T18:00:00Z", "2026-06-08T00:00:00Z", "2026-06-08T06:00:00Z"]
    );
    assert_eq!(z(s.prev_at_or_before(utc("2026-06-07T23:00:00Z")).unwrap()), "2026-06-05T18:00:00Z");
}

#[test]
fn exhausted_schedules_end() {
    let s = sched("0 0 0 1 1 * 2027", "UTC", Shift, First);
    assert_eq!(s.preview(utc("2026-01-01T00:00:00Z"), 5), [utc("2027-01-01T00:00:00Z")]);
    assert_eq!(s.next_after(utc("2027-01-01T00:00:00Z")), None);
    let s = sched("0 0 12 29 2 *", "UTC", Shift, First);
    assert_eq!(
        s.preview(utc("2026-01-01T00:00:00Z"), 2).into_iter().map(z).collect::<Vec<_>>(),
        ["2028-02-29T12:00:00Z", "2032-02-29T12:00:00Z"]
    );
}

#[test]
fn tzdb_version_is_recorded() {
    let v = tzdb_version();
    assert_eq!(v.len(), 5, "{v}");
    assert!(v.starts_with("20"));
}

#[test]
fn transitions_are_where_we_think() {
    let off = |tz: &str, t: &str| {
        let tz: Tz = tz.parse().unwrap();
        utc(t).with_timezone(&tz).offset().fix().local_minus_utc()
    };
    assert_eq!(off("America/New_York", "2026-03-08T06:59:59Z"), -5 * 3600);
    assert_eq!(off("America/New_York", "2026-03-08T07:00:00Z"), -4 * 3600);
    assert_eq!(off("America/New_York", "2026-11-01T05:59:59Z"), -4 * 3600);
    assert_eq!(off("America/New_York", "2026-11-01T06:00:00Z"), -5 * 3600);
    assert_eq!(off("Europe/London", "2026-03-29T01:00:00Z"), 3600);
    assert_eq!(off("Europe/London", "2026-10-25T01:00:00Z"), 0);
    assert_eq!(off("Australia/Sydney", "2026-04-04T15:59:59Z"), 11 * 3600);
    assert_eq!(off("Australia/Sydney", "2026-04-04T16:00:00Z"), 10 * 3600);
    assert_eq!(off("Australia/Sydney", "2026-10-03T16:00:00Z"), 11 * 3600);
    assert_eq!(off("Australia/Lord_Howe", "2026-04-04T14:59:59Z"), 11 * 3600);
    assert_eq!(off("Australia/Lord_Howe", "2026-04-04T15:00:00Z"), 10 * 3600 + 1800);
    assert_eq!(off("Australia/Lord_Howe", "2026-10-03T15:29:59Z"), 10 * 3600 + 1800);
    assert_eq!(off("Australia/Lord_Howe", "2026-10-03T15:30:00Z"), 11 * 3600);
    assert_eq!(off("Asia/Shanghai", "2026-07-01T00:00:00Z"), 8 * 3600);
}

// ---- misfire ----------------------------------------------------------------------------------

fn every_minute() -> Schedule {
    sched("0 * * * * *", "UTC", Shift, First)
}

#[test]
fn misfire_fire_once_carries_the_range() {
    // GIVEN an every-minute job last scheduled at 10:00 and an outage until 12:00:30
    let s = every_minute();
    let p = plan_misfire(
        &s,
        utc("2026-01-01T10:00:00Z"),
        utc("2026-01-01T12:00:30Z"),
        &MisfirePolicy::FireOnce,
        Duration::seconds(60),
    );
    // THEN the fires 10:01..11:59 are missed (late by > 60 s): one batch keyed at the first of
    // them, 10:01; 12:00 is an ordinary fire (30 s late).
    assert_eq!(p.missed, 119);
    assert_eq!(p.skipped, 0);
    assert_eq!(p.fires.len(), 2);
    assert_eq!(p.fires[0].scheduled_at, utc("2026-01-01T10:01:00Z"));
    assert_eq!(p.fires[0].missed_range, Some((utc("2026-01-01T10:01:00Z"), utc("2026-01-01T11:59:00Z"))));
    assert_eq!(p.fires[1], PlannedFire { scheduled_at: utc("2026-01-01T12:00:00Z"), missed_range: None });
    assert_eq!(p.resume_after, utc("2026-01-01T12:00:00Z"));
    assert!(s.next_after(p.resume_after).unwrap() > utc("2026-01-01T12:00:30Z"));
}

#[test]
fn misfire_fire_all_keeps_the_latest_cap_oldest_first() {
    let s = every_minute();
    let p = plan_misfire(
        &s,
        utc("2026-01-01T10:00:00Z"),
        utc("2026-01-01T10:30:00Z"),
        &MisfirePolicy::FireAll { cap: 5 },
        Duration::zero(),
    );
    // 10:01..10:29 missed (29), 10:30 on time.
    assert_eq!(p.missed, 29);
    assert_eq!(p.skipped, 24);
    let at: Vec<_> = p.fires.iter().map(|f| z(f.scheduled_at)).collect();
    assert_eq!(
        at,
        [
            "2026-01-01T10:25:00Z",
            "2026-01-01T10:26:00Z",
            "2026-01-01T10:27:00Z",
            "2026-01-01T10:28:00Z",
            "2026-01-01T10:29:00Z",
            "2026-01-01T10:30:00Z"
        ]
    );
    // Under the cap, every missed fire.
    let p = plan_misfire(
        &s,
        utc("2026-01-01T10:00:00Z"),
        utc("2026-01-01T10:03:00Z"),
        &MisfirePolicy::FireAll { cap: 100 },
        Duration::zero(),
    );
    assert_eq!(p.fires.len(), 3);
    assert_eq!(p.skipped, 0);
}

#[test]
fn misfire_skip_creates_nothing_missed() {
    let s = every_minute();
    let p = plan_misfire(
        &s,
        utc("2026-01-01T10:00:00Z"),
        utc("2026-01-01T12:00:30Z"),
        &MisfirePolicy::Skip,
        Duration::seconds(60),
    );
    assert_eq!(p.missed, 119);
    assert_eq!(p.skipped, 119);
    assert_eq!(p.fires, [PlannedFire { scheduled_at: utc("2026-01-01T12:00:00Z"), missed_range: None }]);
    assert_eq!(p.resume_after, utc("2026-01-01T12:00:00Z"));
    // Nothing due at all.
    let p = plan_misfire(
        &s,
        utc("2026-01-01T10:00:00Z"),
        utc("2026-01-01T10:00:30Z"),
        &MisfirePolicy::Skip,
        Duration::seconds(60),
    );
    assert!(p.fires.is_empty());
    assert_eq!(p.resume_after, utc("2026-01-01T10:00:00Z"));
}

#[test]
fn misfire_threshold_is_exclusive() {
    // A fire late by exactly the threshold is ordinary.
    let s = every_minute();
    let p = plan_misfire(
        &s,
        utc("2026-01-01T10:00:00Z"),
        utc("2026-01-01T10:02:00Z"),
        &MisfirePolicy::Skip,
        Duration::seconds(60),
    );
    assert_eq!(p.missed, 0);
    assert_eq!(p.fires.len(), 2);
}

#[test]
fn misfire_across_dst_with_both() {
    // Every 30 minutes in New York through fall-back, `both`, outage 04:00Z..08:00Z.
    let s = sched("0 */30 * * * *", "America/New_York", Shift, Both);
    let p = plan_misfire(
        &s,
        utc("2026-11-01T04:00:00Z"),
        utc("2026-11-01T08:00:00Z"),
        &MisfirePolicy::FireAll { cap: 100 },
        Duration::zero(),
    );
    assert_eq!(p.missed, 7);
    let at: Vec<_> = p.fires.iter().map(|f| z(f.scheduled_at)).collect();
    assert_eq!(at.len(), 8);
    assert_eq!(at[0], "2026-11-01T04:30:00Z");
    assert_eq!(at[7], "2026-11-01T08:00:00Z");
}

#[test]
fn misfire_policy_json() {
    let p: MisfirePolicy = serde_json::from_str(r#"{"policy":"fireAll"}"#).unwrap();
    assert_eq!(p, MisfirePolicy::FireAll { cap: DEFAULT_FIRE_ALL_CAP });
    let p: MisfirePolicy = serde_json::from_str(r#"{"policy":"fireAll","cap":7}"#).unwrap();
    assert_eq!(p, MisfirePolicy::FireAll { cap: 7 });
    assert_eq!(serde_json::to_string(&MisfirePolicy::default()).unwrap(), r#"{"policy":"fireOnce"}"#);
    assert_eq!(serde_json::to_string(&MisfirePolicy::Skip).unwrap(), r#"{"policy":"skip"}"#);
}

#[test]
fn spec_json_is_camel_case_with_defaults() {
    let s: ScheduleSpec =
        serde_json::from_str(r#"{"expression":"0 30 2 * * *","timezone":"Europe/London"}"#).unwrap();
    assert_eq!(s, ScheduleSpec::new("0 30 2 * * *", "Europe/London"));
    let s: ScheduleSpec = serde_json::from_str(
        r#"{"expression":"rate(5 minutes)","timezone":"UTC","onGap":"skip","onOverlap":"both",
            "start":"2026-01-01T00:00:00Z","exclusions":{"dates":["2026-12-25"],"weekdays":["sun"]},
            "jitterWindowSecs":30}"#,
    )
    .unwrap();
    assert_eq!(s.on_gap, Skip);
    assert_eq!(s.on_overlap, Both);
    assert_eq!(s.jitter_window_secs, 30);
    assert_eq!(s.exclusions.weekdays, ["sun"]);
}

// ---- jitter -----------------------------------------------------------------------------------

#[test]
fn jitter_is_deterministic_bounded_and_spread() {
    let t = utc("2026-01-01T00:00:00Z");
    assert_eq!(jitter_offset("job", t, 0), Duration::zero());
    let mut buckets = [0u32; 10];
    for i in 0..10_000 {
        let id = format!("job-{i}");
        let o = jitter_offset(&id, t, 60);
        assert_eq!(o, jitter_offset(&id, t, 60));
        assert!(o >= Duration::zero() && o < Duration::seconds(60));
        buckets[(o.num_milliseconds() / 6000) as usize] += 1;
    }
    // Uniform enough: each tenth of the window holds 10% +- 2%.
    assert!(buckets.iter().all(|b| (800..1200).contains(b)), "{buckets:?}");
    // Different scheduled instants of one job spread too.
    assert_ne!(jitter_offset("job", t, 60), jitter_offset("job", t + Duration::minutes(1), 60));
    let mut spec = ScheduleSpec::new("0 * * * * *", "UTC");
    spec.jitter_window_secs = 60;
    let s = Schedule::parse(&spec, t).unwrap();
    assert_eq!(s.dispatch_at("job", t), t + jitter_offset("job", t, 60));
}

#[test]
fn misfire_after_a_very_long_outage_stays_exact_where_it_matters() {
    // GIVEN an every-second job and a 12-day outage (1,036,800 missed fires, past the scan
    // limit, here lowered to 10,000), WHEN planned, THEN the count is a flagged lower bound but
    // the batch range, the kept fires and the resume point are exact.
    let limit = 10_000;
    let s = sched("* * * * * *", "Europe/London", Shift, First);
    let last = utc("2026-03-20T00:00:00Z");
    let now = last + Duration::days(12);
    let once =
        misfire::plan_with_limit(&s, last, now, &MisfirePolicy::FireOnce, Duration::seconds(10), limit);
    assert!(once.missed_truncated);
    assert_eq!(once.missed, limit);
    let cutoff = now - Duration::seconds(10);
    assert_eq!(
        once.fires[0].missed_range,
        Some((last + Duration::seconds(1), cutoff - Duration::seconds(1)))
    );
    assert_eq!(once.fires.len(), 1 + 11, "the batch and the 11 seconds within the threshold");
    assert_eq!(once.resume_after, now);
    let all =
        misfire::plan_with_limit(&s, last, now, &MisfirePolicy::FireAll { cap: 3 }, Duration::zero(), limit);
    assert!(all.missed_truncated);
    let at: Vec<_> = all.fires.iter().map(|f| f.scheduled_at).collect();
    assert_eq!(at, [now - Duration::seconds(3), now - Duration::seconds(2), now - Duration::seconds(1), now]);
}
