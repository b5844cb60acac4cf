//! Business-day rolling: fixed instants across month ends, year ends and DST days in three
//! zones for each roll policy, and property tests against a brute-force oracle.
//!
//! DST days used (tzdb 2025b): America/New_York springs forward 2026-03-08 (02:00 -> 03:00),
//! Europe/Berlin 2026-03-29 (02:00 -> 03:00) and falls back 2026-10-25 (03:00 -> 02:00);
//! Asia/Shanghai has no DST (UTC+8).

use std::collections::BTreeSet;
use std::sync::Arc;

use chrono::{DateTime, Datelike, Days, Duration, NaiveDate, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;
use proptest::prelude::*;

use super::tests::utc;
use super::*;
use crate::schedule::Kind;
use crate::zone::Pass;

const ROLLS: [Roll; 4] = [Roll::Skip, Roll::Following, Roll::Preceding, Roll::ModifiedFollowing];

fn cal(holidays: &[&str], rest: Option<&[&str]>) -> Arc<BusinessDays> {
    let spec = BusinessCalendarSpec {
        holidays: holidays.iter().map(|s| s.to_string()).collect(),
        rest_days: rest.map(|r| r.iter().map(|s| s.to_string()).collect()),
        ..Default::default()
    };
    Arc::new(BusinessDays::single("cal", 3, &spec).unwrap_or_else(|e| panic!("{e}")))
}

fn sched(expr: &str, tz: &str, days: &Arc<BusinessDays>, roll: Roll) -> Schedule {
    let mut spec = ScheduleSpec::new(expr, tz);
    spec.business_calendar = Some(BusinessCalendarRef { calendar: "cal".into(), roll });
    Schedule::parse_with(&spec, utc("2026-01-01T00:00:00Z"), Some(days.clone()))
        .unwrap_or_else(|e| panic!("{expr} {tz}: {e}"))
}

/// Fires in `(after, until]` as local RFC 3339 strings in the schedule's zone.
fn local(s: &Schedule, after: &str, until: &str) -> Vec<String> {
    s.fires_between(utc(after), utc(until), 1000)
        .into_iter()
        .map(|t| t.with_timezone(&s.timezone()).to_rfc3339())
        .collect()
}

/// The same local wall times in each zone, with each zone's offset on that date.
fn in_zone(tz: &str, walls: &[&str]) -> Vec<String> {
    let tz: Tz = tz.parse().unwrap();
    walls
        .iter()
        .map(|w| {
            let wall = NaiveDateTime::parse_from_str(w, "%Y-%m-%dT%H:%M").unwrap();
            tz.from_local_datetime(&wall).earliest().unwrap().to_rfc3339()
        })
        .collect()
}

const ZONES: [&str; 3] = ["Asia/Shanghai", "Europe/Berlin", "America/New_York"];

#[test]
fn a_month_end_on_a_sunday_rolls_by_policy_in_three_zones() {
    // GIVEN Saturdays and Sundays off and a job at 18:00 on every 31st; 2027-01-31 is a Sunday,
    // 2027-03-31 a Wednesday (after Berlin's and New York's spring DST change).
    let days = cal(&[], None);
    for tz in ZONES {
        for (roll, want) in [
            (Roll::Skip, vec!["2027-03-31T18:00"]),
            (Roll::Following, vec!["2027-02-01T18:00", "2027-03-31T18:00"]),
            (Roll::Preceding, vec!["2027-01-29T18:00", "2027-03-31T18:00"]),
            // Following leaves January: back to Friday the 29th.
            (Roll::ModifiedFollowing, vec!["2027-01-29T18:00", "2027-03-31T18:00"]),
        ] {
            // WHEN the fires of January to March are listed
            let got = local(
                &sched("0 0 18 31 * *", tz, &days, roll),
                "2027-01-01T00:00:00Z",
                "2027-04-01T00:00:00Z",
            );
            // THEN each policy moves (or drops) the Sunday fire, keeping 18:00 local
            assert_eq!(got, in_zone(tz, &want), "{tz} {roll}");
        }
    }
}

#[test]
fn a_year_end_holiday_rolls_into_the_next_year_only_when_the_policy_says_so() {
    // GIVEN 2026-12-31 (Thursday) and 2027-01-01 (Friday) holidays, then a weekend.
    let days = cal(&["2026-12-25", "2026-12-31", "2027-01-01"], None);
    for tz in ZONES {
        for (roll, want) in [
            (Roll::Skip, vec![]),
            (Roll::Following, vec!["2027-01-04T09:00"]),
            (Roll::Preceding, vec!["2026-12-30T09:00"]),
            (Roll::ModifiedFollowing, vec!["2026-12-30T09:00"]),
        ] {
            let s = sched("0 0 9 31 12 *", tz, &days, roll);
            let got = local(&s, "2026-12-01T00:00:00Z", "2027-02-01T00:00:00Z");
            assert_eq!(got, in_zone(tz, &want), "{tz} {roll}");
            // AND the search from the rolled fire finds the next year's, not itself again.
            if roll != Roll::Skip {
                let first = s.next_after(utc("2026-12-01T00:00:00Z")).unwrap();
                let next =
                    s.next_after(first).map(|t| t.with_timezone(&s.timezone()).date_naive().to_string());
                assert_eq!(next.as_deref(), Some("2027-12-31"), "{tz} {roll}");
            }
        }
    }
}

#[test]
fn a_fire_rolled_onto_a_spring_forward_day_gets_the_jobs_gap_policy_there() {
    // GIVEN every weekday works, and the Monday after each zone's spring DST Sunday is a
    // holiday; a job at 02:30 every Monday (02:30 does not exist on the DST Sunday).
    for (tz, after, before, sunday, holiday, tuesday) in [
        ("America/New_York", "2026-03-01T12:00:00Z", "2026-03-02", "2026-03-08", "2026-03-09", "2026-03-10"),
        ("Europe/Berlin", "2026-03-22T12:00:00Z", "2026-03-23", "2026-03-29", "2026-03-30", "2026-03-31"),
        ("Asia/Shanghai", "2026-03-01T12:00:00Z", "2026-03-02", "2026-03-08", "2026-03-09", "2026-03-10"),
    ] {
        let days = cal(&[holiday], Some(&[]));
        let shifted = if tz == "Asia/Shanghai" { "02:30" } else { "03:00" };
        for (roll, want) in [
            (Roll::Skip, vec![format!("{before}T02:30")]),
            (Roll::Following, vec![format!("{before}T02:30"), format!("{tuesday}T02:30")]),
            (Roll::Preceding, vec![format!("{before}T02:30"), format!("{sunday}T{shifted}")]),
            (Roll::ModifiedFollowing, vec![format!("{before}T02:30"), format!("{tuesday}T02:30")]),
        ] {
            let s = sched("0 30 2 * * MON", tz, &days, roll);
            let until = format!("{tuesday}T23:00:00Z");
            let want: Vec<&str> = want.iter().map(String::as_str).collect();
            assert_eq!(local(&s, after, &until), in_zone(tz, &want), "{tz} {roll}");
        }
        // AND under onGap 'skip' the fire preceding onto the missing 02:30 is dropped.
        let mut spec = ScheduleSpec::new("0 30 2 * * MON", tz);
        spec.on_gap = GapPolicy::Skip;
        spec.business_calendar = Some(BusinessCalendarRef { calendar: "cal".into(), roll: Roll::Preceding });
        let s = Schedule::parse_with(&spec, utc("2026-01-01T00:00:00Z"), Some(days.clone())).unwrap();
        let got = local(&s, after, &format!("{tuesday}T23:00:00Z"));
        let want = if tz == "Asia/Shanghai" { 2 } else { 1 };
        assert_eq!(got.len(), want, "{tz}: {got:?}");
    }
}

#[test]
fn fires_rolled_onto_a_fall_back_day_are_one_fire_per_instant() {
    // GIVEN Berlin, Monday 2026-10-26 a holiday, every day a working day; a daily 02:30 job
    // with onOverlap 'both'. 02:30 occurs twice on Sunday 2026-10-25 (00:30Z and 01:30Z).
    let days = cal(&["2026-10-26"], Some(&[]));
    let mut spec = ScheduleSpec::new("0 30 2 * * *", "Europe/Berlin");
    spec.on_overlap = OverlapPolicy::Both;
    spec.business_calendar = Some(BusinessCalendarRef { calendar: "cal".into(), roll: Roll::Preceding });
    let s = Schedule::parse_with(&spec, utc("2026-01-01T00:00:00Z"), Some(days)).unwrap();
    // WHEN Monday's fire rolls back onto Sunday, whose own fires are at the same instants
    let got: Vec<String> = s
        .fires_between(utc("2026-10-24T12:00:00Z"), utc("2026-10-27T12:00:00Z"), 10)
        .into_iter()
        .map(tests::z)
        .collect();
    // THEN each instant fires once (executions are unique per (job, scheduledAt))
    assert_eq!(got, ["2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z", "2026-10-27T01:30:00Z"]);
    // AND the backward search agrees.
    assert_eq!(
        s.prev_at_or_before(utc("2026-10-27T01:29:59Z")).map(tests::z).as_deref(),
        Some("2026-10-25T01:30:00Z")
    );
}

#[test]
fn a_holiday_week_rolls_onto_one_fire_and_preview_says_why() {
    // GIVEN cn-holidays v3: National Day 2026-10-01..07, with Saturday 2026-10-10 a make-up
    // working day; a daily 09:00 job in Asia/Shanghai rolling 'following'.
    let spec = BusinessCalendarSpec {
        holidays: (1..=7).map(|d| format!("2026-10-0{d}")).collect(),
        working_days: vec!["2026-10-10".into()],
        ..Default::default()
    };
    let days = Arc::new(BusinessDays::single("cn-holidays", 3, &spec).unwrap());
    let mut job = ScheduleSpec::new("0 0 9 * * *", "Asia/Shanghai");
    job.business_calendar =
        Some(BusinessCalendarRef { calendar: "cn-holidays".into(), roll: Roll::Following });
    let s = Schedule::parse_with(&job, utc("2026-01-01T00:00:00Z"), Some(days)).unwrap();
    // WHEN the next fires after 2026-09-30 10:00 local are previewed with reasons
    let p = s.preview_explained(utc("2026-09-30T02:00:00Z"), 3);
    let shown: Vec<String> = p
        .iter()
        .map(|f| match f {
            PreviewFire::Fire { at, rolled_from, reason } => format!(
                "fire {} {} {}",
                tests::z(*at),
                rolled_from.map(tests::z).unwrap_or_default(),
                reason.clone().unwrap_or_default()
            ),
            PreviewFire::Skipped { at, reason } => format!("skip {} {reason}", tests::z(*at)),
        })
        .collect();
    // THEN the seven holiday fires roll onto 10-08, which fires at 09:00 anyway: they are shown
    // merged into it; and the make-up Saturday fires.
    let merged = |d: u32| {
        format!(
            "skip 2026-10-0{d}T01:00:00Z holiday 2026-10-0{d} in cn-holidays v3; following to \
             2026-10-08T01:00:00Z, which already fires (merged)"
        )
    };
    let mut want: Vec<String> = (1..=7).map(merged).collect();
    want.extend(
        ["fire 2026-10-08T01:00:00Z  ", "fire 2026-10-09T01:00:00Z  ", "fire 2026-10-10T01:00:00Z  "]
            .map(String::from),
    );
    assert_eq!(shown, want);
    assert_eq!(
        s.preview(utc("2026-09-30T02:00:00Z"), 3),
        p.iter()
            .filter_map(|f| match f {
                PreviewFire::Fire { at, .. } => Some(*at),
                PreviewFire::Skipped { .. } => None,
            })
            .collect::<Vec<_>>()
    );
}

#[test]
fn a_monthly_fire_on_a_holiday_is_shown_rolled_with_its_origin() {
    let spec = BusinessCalendarSpec {
        holidays: vec!["2026-10-01".into(), "2026-10-02".into()],
        ..Default::default()
    };
    let days = Arc::new(BusinessDays::single("cn-holidays", 3, &spec).unwrap());
    let mut job = ScheduleSpec::new("0 0 9 1 * *", "Asia/Shanghai");
    job.business_calendar =
        Some(BusinessCalendarRef { calendar: "cn-holidays".into(), roll: Roll::Following });
    let s = Schedule::parse_with(&job, utc("2026-01-01T00:00:00Z"), Some(days)).unwrap();
    // WHEN previewed from September: 10-01 (Thu) and 10-02 (Fri) are holidays, then a weekend
    let p = s.preview_explained(utc("2026-09-02T00:00:00Z"), 2);
    // THEN October's fire is on Monday 10-05 at 09:00, rolled from 10-01, with the reason
    assert_eq!(
        p,
        [
            PreviewFire::Fire {
                at: utc("2026-10-05T01:00:00Z"),
                rolled_from: Some(utc("2026-10-01T01:00:00Z")),
                reason: Some("holiday 2026-10-01 in cn-holidays v3; following".into()),
            },
            PreviewFire::Fire {
                at: utc("2026-11-02T01:00:00Z"),
                rolled_from: Some(utc("2026-11-01T01:00:00Z")),
                reason: Some("rest day sun (2026-11-01), the default of cn-holidays v3; following".into())
            },
        ]
    );
    let json = serde_json::to_value(&p[0]).unwrap();
    assert_eq!(json["kind"], "fire");
    assert_eq!(json["rolledFrom"], "2026-10-01T01:00:00Z");
}

#[test]
fn rate_takes_skip_only_and_at_rolls() {
    let days = cal(&["2026-10-01"], None);
    let mut spec = ScheduleSpec::new("rate(1 hour)", "UTC");
    spec.business_calendar = Some(BusinessCalendarRef { calendar: "cal".into(), roll: Roll::Following });
    let e = Schedule::parse_with(&spec, utc("2026-01-01T00:00:00Z"), Some(days.clone())).unwrap_err();
    assert_eq!(e.field(), "businessCalendar");
    // skip: no hourly fire on the holiday.
    spec.business_calendar = Some(BusinessCalendarRef { calendar: "cal".into(), roll: Roll::Skip });
    let s = Schedule::parse_with(&spec, utc("2026-01-01T00:00:00Z"), Some(days.clone())).unwrap();
    assert_eq!(s.next_after(utc("2026-09-30T23:30:00Z")), Some(utc("2026-10-02T00:00:00Z")));
    // at(): the holiday rolls to Friday the 2nd.
    let mut spec = ScheduleSpec::new("at(2026-10-01T09:00:00)", "Asia/Shanghai");
    spec.business_calendar = Some(BusinessCalendarRef { calendar: "cal".into(), roll: Roll::Following });
    let s = Schedule::parse_with(&spec, utc("2026-01-01T00:00:00Z"), Some(days.clone())).unwrap();
    assert_eq!(s.preview(utc("2026-01-01T00:00:00Z"), 5), vec![utc("2026-10-02T01:00:00Z")]);
    // A spec naming a calendar cannot be parsed without it, nor with another one.
    assert_eq!(Schedule::parse(&spec, utc("2026-01-01T00:00:00Z")).unwrap_err().field(), "businessCalendar");
    let other = Arc::new(BusinessDays::single("other", 1, &BusinessCalendarSpec::default()).unwrap());
    assert!(Schedule::parse_with(&spec, utc("2026-01-01T00:00:00Z"), Some(other)).is_err());
}

#[test]
fn exclusions_drop_the_fire_before_it_could_roll() {
    // GIVEN a job excluding Friday 2026-07-31 and a calendar with weekends off: Saturday's
    // fire rolls 'preceding' to Friday, where the job's own exclusion does not apply (it
    // filters source dates, not targets) — and Friday's own fire is excluded.
    let days = cal(&[], None);
    let mut spec = ScheduleSpec::new("0 0 9 * * *", "Europe/Berlin");
    spec.exclusions.dates = vec!["2026-07-31".into()];
    spec.business_calendar = Some(BusinessCalendarRef { calendar: "cal".into(), roll: Roll::Preceding });
    let s = Schedule::parse_with(&spec, utc("2026-01-01T00:00:00Z"), Some(days)).unwrap();
    let got: Vec<String> = s
        .fires_between(utc("2026-07-30T12:00:00Z"), utc("2026-08-04T00:00:00Z"), 10)
        .into_iter()
        .map(tests::z)
        .collect();
    assert_eq!(got, ["2026-07-31T07:00:00Z", "2026-08-03T07:00:00Z"]);
}

// ---- properties --------------------------------------------------------------------------

const EXPRS: &[&str] = &[
    "0 0 9 * * *",
    "0 30 2 * * *",
    "0 0 18 31 * *",
    "0 0 9 1 * *",
    "0 15 9,17 * * MON-FRI",
    "0 0 */6 * * *",
    "0 30 1 * * SUN",
];

/// Brute force: every raw fire of every local date around the window, rolled, resolved on the
/// target date under the job's policies, deduplicated.
fn oracle(
    s: &Schedule,
    c: &expr::CronExpr,
    days: &BusinessDays,
    roll: Roll,
    from: NaiveDate,
    to: NaiveDate,
) -> BTreeSet<DateTime<Utc>> {
    let mut out = BTreeSet::new();
    let mut d = from;
    while d <= to {
        if let Some(target) = days.roll(d, roll) {
            let mut cursor = d.and_hms_opt(0, 0, 0).unwrap() - Duration::seconds(1);
            while let Some(w) = c.next_wall(cursor).filter(|w| w.date() == d) {
                cursor = w;
                let placed = target.and_time(w.time());
                let passes: &[Pass] = match s.on_overlap {
                    OverlapPolicy::First => &[Pass::First],
                    OverlapPolicy::Last => &[Pass::Last],
                    OverlapPolicy::Both => &[Pass::First, Pass::Last],
                };
                for p in passes {
                    if let Some(t) = zone::resolve(&s.zone, placed, s.on_gap, *p) {
                        out.insert(t);
                    }
                }
            }
        }
        d = d.checked_add_days(Days::new(1)).unwrap();
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn rolled_fires_match_brute_force(
        zone_i in 0usize..3,
        expr_i in 0usize..EXPRS.len(),
        roll_i in 0usize..4,
        gap_skip in any::<bool>(),
        overlap_i in 0usize..3,
        start_day in 0u64..700,
        holidays in proptest::collection::btree_set(0u64..120, 0..25),
        working in proptest::collection::btree_set(0u64..120, 0..5),
        sunday_works in any::<bool>(),
    ) {
        // GIVEN a random calendar over a random 120-day stretch of 2026-2027 around DST days
        let base = NaiveDate::from_ymd_opt(2026, 1, 1).unwrap() + Days::new(start_day);
        let holidays: Vec<String> = holidays.iter().map(|i| (base + Days::new(*i)).to_string()).collect();
        let working: Vec<String> =
            working.iter().filter(|i| !holidays.contains(&(base + Days::new(**i)).to_string())).map(|i| (base + Days::new(*i)).to_string()).collect();
        let spec = BusinessCalendarSpec {
            holidays,
            working_days: working,
            rest_days: Some(if sunday_works { vec!["sat".into()] } else { vec!["sat".into(), "sun".into()] }),
            ..Default::default()
        };
        let days = Arc::new(BusinessDays::single("cal", 1, &spec).unwrap());
        let roll = ROLLS[roll_i];
        let mut js = ScheduleSpec::new(EXPRS[expr_i], ZONES[zone_i]);
        js.on_gap = if gap_skip { GapPolicy::Skip } else { GapPolicy::Shift };
        js.on_overlap = [OverlapPolicy::First, OverlapPolicy::Last, OverlapPolicy::Both][overlap_i];
        js.business_calendar = Some(BusinessCalendarRef { calendar: "cal".into(), roll });
        let s = Schedule::parse_with(&js, utc("2026-01-01T00:00:00Z"), Some(days.clone())).unwrap();
        let Kind::Cron(c) = &s.kind else { unreachable!() };
        // WHEN the engine lists the fires of the middle 100 days
        let lo = zone::day_start(&s.zone, base + Days::new(10)).unwrap();
        let hi = zone::day_start(&s.zone, base + Days::new(110)).unwrap();
        let got = s.fires_between(lo, hi, 10_000);
        // THEN they are exactly the oracle's, strictly ascending
        let want: Vec<DateTime<Utc>> = oracle(&s, c, &days, roll, base - Days::new(40), base + Days::new(160))
            .into_iter()
            .filter(|t| *t > lo && *t <= hi)
            .collect();
        prop_assert_eq!(&got, &want);
        // AND every fire is on a business day in the zone
        for f in &got {
            prop_assert!(days.is_business(zone::local_of(&s.zone, *f).date()), "{f}");
        }
        // AND the backward search finds each fire from just after it
        for f in got.iter().take(20) {
            prop_assert_eq!(s.prev_at_or_before(*f + Duration::seconds(1)), Some(*f));
            prop_assert_eq!(s.prev_at_or_before(*f), Some(*f));
        }
    }

    #[test]
    fn roll_orders_and_modified_following_keeps_the_month(
        start_day in 0u64..47_000,
        holidays in proptest::collection::btree_set(0u64..60, 0..40),
        offset in 0u64..60,
    ) {
        let base = NaiveDate::from_ymd_opt(1970, 1, 1).unwrap() + Days::new(start_day);
        let spec = BusinessCalendarSpec {
            holidays: holidays.iter().map(|i| (base + Days::new(*i)).to_string()).collect(),
            ..Default::default()
        };
        let days = BusinessDays::single("c", 1, &spec).unwrap();
        let d = base + Days::new(offset);
        let f = days.roll(d, Roll::Following);
        let p = days.roll(d, Roll::Preceding);
        let mf = days.roll(d, Roll::ModifiedFollowing);
        // following >= original >= preceding, each on a business day
        if let Some(f) = f { prop_assert!(f >= d && days.is_business(f)); }
        if let Some(p) = p { prop_assert!(p <= d && days.is_business(p)); }
        if days.is_business(d) {
            prop_assert_eq!((f, p, mf, days.roll(d, Roll::Skip)), (Some(d), Some(d), Some(d), Some(d)));
        } else {
            prop_assert_eq!(days.roll(d, Roll::Skip), None);
        }
        // modifiedFollowing stays in the month unless the month has no business day on either side
        if let Some(m) = mf {
            prop_assert!(days.is_business(m));
            let same = |x: NaiveDate| x.month() == d.month() && x.year() == d.year();
            if !same(m) {
                prop_assert!(!f.is_some_and(same) && !p.is_some_and(same));
            }
        }
    }
}

/// A calendar closed for `len` days from `first` (every weekday works otherwise).
fn closed(first: &str, len: u64) -> Arc<BusinessDays> {
    let first = NaiveDate::parse_from_str(first, "%Y-%m-%d").unwrap();
    let spec = BusinessCalendarSpec {
        holidays: (0..len).map(|i| (first + Days::new(i)).to_string()).collect(),
        rest_days: Some(vec![]),
        ..Default::default()
    };
    Arc::new(BusinessDays::single("cal", 1, &spec).unwrap())
}

/// Each raw fire in `(after, until]` accounted for by an explained preview: the fire itself,
/// the origin of a rolled fire, or a skipped line. Returns the raw fires it does not mention.
fn unexplained(s: &Schedule, after: DateTime<Utc>, until: DateTime<Utc>) -> Vec<DateTime<Utc>> {
    let lines = s.preview_explained(after, 1000);
    let mut raw = s.clone();
    raw.business = None;
    raw.fires_between(after, until, 1000)
        .into_iter()
        .filter(|f| {
            !lines.iter().any(|l| match l {
                PreviewFire::Fire { at, rolled_from, .. } => at == f || rolled_from.as_ref() == Some(f),
                PreviewFire::Skipped { at, .. } => at == f,
            })
        })
        .collect()
}

#[test]
fn a_fire_rolled_past_a_month_long_closure_fires_and_the_preview_agrees() {
    // GIVEN a plant closed 2027-01-01..2027-02-01 (32 days), a fire on the 1st and the 15th at
    // 09:00 rolling 'following': the 1st finds no business day within 31 days (skipped), the
    // 15th rolls 18 days forward to Tuesday 2027-02-02.
    let days = closed("2027-01-01", 32);
    let s = sched("0 0 9 1,15 * *", "UTC", &days, Roll::Following);
    // WHEN the fires after 2026-12-15 are listed
    let got: Vec<String> = s
        .fires_between(utc("2026-12-15T09:00:00Z"), utc("2027-02-15T09:00:00Z"), 10)
        .into_iter()
        .map(tests::z)
        .collect();
    // THEN the 15th's fire is on 02-02, after the skipped 1st
    assert_eq!(got, ["2027-02-02T09:00:00Z", "2027-02-15T09:00:00Z"]);
    assert_eq!(s.next_after(utc("2027-01-20T00:00:00Z")), Some(utc("2027-02-02T09:00:00Z")));
    assert_eq!(s.prev_at_or_before(utc("2027-02-10T00:00:00Z")), Some(utc("2027-02-02T09:00:00Z")));
    // AND the explained preview shows it rolled from 01-15, the 1st of January skipped and the
    // 1st of February merged into it, each with a reason
    let p = s.preview_explained(utc("2026-12-15T09:00:00Z"), 2);
    assert_eq!(
        p,
        [
            PreviewFire::Skipped {
                at: utc("2027-01-01T09:00:00Z"),
                reason: "holiday 2027-01-01 in cal v1; following: no business day within 31 days".into(),
            },
            PreviewFire::Skipped {
                at: utc("2027-02-01T09:00:00Z"),
                reason: "holiday 2027-02-01 in cal v1; following to 2027-02-02T09:00:00Z, which already \
                         fires (merged)"
                    .into(),
            },
            PreviewFire::Fire {
                at: utc("2027-02-02T09:00:00Z"),
                rolled_from: Some(utc("2027-01-15T09:00:00Z")),
                reason: Some("holiday 2027-01-15 in cal v1; following".into()),
            },
            PreviewFire::Fire { at: utc("2027-02-15T09:00:00Z"), rolled_from: None, reason: None },
        ]
    );
    assert_eq!(
        unexplained(&s, utc("2026-12-15T09:00:00Z"), utc("2027-02-15T09:00:00Z")),
        Vec::<DateTime<Utc>>::new()
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn long_closures_match_brute_force_and_every_raw_fire_is_explained(
        expr_i in 0usize..4,
        roll_i in 0usize..4,
        start_day in 0u64..400,
        len in 20u64..70,
    ) {
        // GIVEN a closure of 20 to 70 days (a month-long plant shutdown) and a monthly-ish job
        let exprs = ["0 0 9 1 * *", "0 0 9 1,15 * *", "0 0 9 L * *", "0 0 9 1,8,15,22 * *"];
        let first = NaiveDate::from_ymd_opt(2026, 3, 1).unwrap() + Days::new(start_day);
        let days = closed(&first.to_string(), len);
        let roll = ROLLS[roll_i];
        let s = sched(exprs[expr_i], "UTC", &days, roll);
        let Kind::Cron(c) = &s.kind else { unreachable!() };
        // WHEN the engine lists the fires from 60 days before the closure to 60 days after it
        let lo = zone::day_start(&s.zone, first - Days::new(60)).unwrap();
        let hi = zone::day_start(&s.zone, first + Days::new(len + 60)).unwrap();
        let got = s.fires_between(lo, hi, 10_000);
        // THEN they are exactly the oracle's
        let want: Vec<DateTime<Utc>> = oracle(&s, c, &days, roll, first - Days::new(100), first + Days::new(len + 100))
            .into_iter()
            .filter(|t| *t > lo && *t <= hi)
            .collect();
        prop_assert_eq!(&got, &want);
        // AND the backward search finds each of them
        for f in &got {
            prop_assert_eq!(s.prev_at_or_before(*f + Duration::seconds(1)), Some(*f));
        }
        // AND the explained preview accounts for every raw fire up to its last fire
        if let Some(last) = got.last() {
            prop_assert_eq!(unexplained(&s, lo, *last), Vec::<DateTime<Utc>>::new());
        }
    }
}

// ---- explain_fire: what the calendar did to a fire already made ------------------------------

#[test]
fn a_fire_already_made_is_explained_rolled_or_with_the_holidays_merged_into_it() {
    // GIVEN holidays 12-01 and 12-03 (every weekday works), a job at 12:00 UTC on the 1st, 3rd
    // and 4th rolling 'following'
    let days = cal(&["2026-12-01", "2026-12-03"], Some(&[]));
    let s = sched("0 0 12 1,3,4 * *", "UTC", &days, Roll::Following);
    // WHEN the fire of 12-02 is explained
    let o = s.explain_fire(utc("2026-12-02T12:00:00Z"), 10).unwrap();
    // THEN it was rolled from the 1st's, which was a holiday, and nothing was skipped before it
    assert_eq!(o.rolled_from, Some(utc("2026-12-01T12:00:00Z")));
    assert_eq!(o.reason.as_deref(), Some("holiday 2026-12-01 in cal v3; following"));
    assert_eq!((o.skipped_before.len(), o.skipped_count), (0, 0));
    // AND the 4th's fire is its own, with the 3rd's merged into it shown before it
    let o = s.explain_fire(utc("2026-12-04T12:00:00Z"), 10).unwrap();
    assert_eq!((o.rolled_from, o.reason), (None, None));
    assert_eq!(
        o.skipped_before,
        [(
            utc("2026-12-03T12:00:00Z"),
            "holiday 2026-12-03 in cal v3; following to 2026-12-04T12:00:00Z, which already fires (merged)"
                .to_string()
        )]
    );
    // AND the raw instants that are no fire are not explained as fires
    assert_eq!(s.explain_fire(utc("2026-12-01T12:00:00Z"), 10), None);
    assert_eq!(s.explain_fire(utc("2026-12-02T12:00:01Z"), 10), None);
}

#[test]
fn a_fire_rolled_back_names_the_later_instant_it_came_from() {
    // GIVEN a month-end job on 2027-01-31, a Sunday, rolling 'preceding' in New York
    let days = cal(&[], None);
    let s = sched("0 0 18 31 * *", "America/New_York", &days, Roll::Preceding);
    let fire = s.next_after(utc("2027-01-20T00:00:00Z")).unwrap();
    // WHEN its fire (Friday 01-29) is explained
    let o = s.explain_fire(fire, 10).unwrap();
    // THEN it came from Sunday's 18:00, after it
    assert_eq!(fire, utc("2027-01-29T23:00:00Z"));
    assert_eq!(o.rolled_from, Some(utc("2027-01-31T23:00:00Z")));
    assert!(o.reason.is_some_and(|r| r.ends_with("; preceding")));
}

#[test]
fn skipped_weekend_fires_are_counted_before_mondays_and_agree_with_the_preview() {
    // GIVEN a daily 09:00 Berlin job whose calendar rests on weekends, rolling 'skip'
    let days = cal(&[], None);
    let s = sched("0 0 9 * * *", "Europe/Berlin", &days, Roll::Skip);
    // WHEN Monday 2026-12-07's fire is explained keeping one skipped fire
    let o = s.explain_fire(utc("2026-12-07T08:00:00Z"), 1).unwrap();
    // THEN Saturday's and Sunday's were skipped: both counted, the first kept
    assert_eq!(o.skipped_count, 2);
    assert_eq!(o.skipped_before.len(), 1);
    assert_eq!(o.skipped_before[0].0, utc("2026-12-05T08:00:00Z"));
    assert!(o.skipped_before[0].1.ends_with("; skip"), "{}", o.skipped_before[0].1);
    // AND each fire of two weeks is explained as the preview from before them explains it
    let after = utc("2026-11-30T12:00:00Z");
    let preview = s.preview_explained(after, 10);
    let mut skipped = Vec::new();
    for line in preview {
        match line {
            PreviewFire::Skipped { at, reason } => skipped.push((at, reason)),
            PreviewFire::Fire { at, rolled_from, reason } => {
                let o = s.explain_fire(at, 10).unwrap();
                assert_eq!((o.rolled_from, o.reason), (rolled_from, reason));
                assert_eq!(o.skipped_before, std::mem::take(&mut skipped), "{at}");
            }
        }
    }
    // AND a schedule without a business calendar explains nothing
    let plain =
        Schedule::parse(&ScheduleSpec::new("0 0 9 * * *", "UTC"), utc("2026-01-01T00:00:00Z")).unwrap();
    assert_eq!(plain.explain_fire(utc("2026-12-07T09:00:00Z"), 10), None);
}
