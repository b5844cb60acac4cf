//! The upgrade report fed with two tz database releases whose rules differ: 2022a (a TZif
//! fixture, `tests/fixtures/tzdb-2022a`, where Mexico still had DST) and the compiled one
//! (Mexico abolished DST after 2022, tzdb 2022f).

use super::*;
use crate::{GapPolicy, OverlapPolicy};

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

fn fixture() -> Tzdb {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tzdb-2022a");
    Tzdb::from_zoneinfo("2022a", &dir).unwrap()
}

fn spec(expr: &str, zone: &str) -> ScheduleSpec {
    ScheduleSpec::new(expr, zone)
}

fn wall(s: &str) -> NaiveDateTime {
    NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S").unwrap()
}

#[test]
fn a_daily_job_in_mexico_city_moves_one_hour_later_from_the_first_sunday_of_april() {
    // GIVEN a 09:00 daily job in Mexico City, computed under 2022a (DST from 2023-04-02)
    let (old, new) = (fixture(), Tzdb::compiled());
    // WHEN its next 14 fires from 2023-03-28 are compared with the compiled release
    let changes = compare(
        &spec("0 9 * * *", "America/Mexico_City"),
        at("2023-01-01T00:00:00Z"),
        at("2023-03-28T00:00:00Z"),
        14,
        &old,
        &new,
    )
    .unwrap();
    // THEN the five fires before 04-02 stay at 15:00Z and the nine from 04-02 on move from
    // 14:00Z (CDT) to 15:00Z (CST), one hour later, each named by its local time
    let expected: Vec<FireChange> = (2..=10)
        .map(|d| FireChange {
            local_time: wall(&format!("2023-04-{d:02}T09:00:00")),
            old_at: Some(at(&format!("2023-04-{d:02}T14:00:00Z"))),
            new_at: Some(at(&format!("2023-04-{d:02}T15:00:00Z"))),
        })
        .collect();
    assert_eq!(changes, expected);
    assert!(changes.iter().all(|c| c.shift_secs() == Some(3600)));
}

#[test]
fn a_fire_in_the_old_spring_forward_gap_is_added_and_the_overlap_fire_moves() {
    // GIVEN a 02:30 job that skips nonexistent times, and a 01:30 job that fires both
    // occurrences of a repeated time, in Mexico City under 2022a
    let (old, new) = (fixture(), Tzdb::compiled());
    let mut gap = spec("30 2 * * *", "America/Mexico_City");
    gap.on_gap = GapPolicy::Skip;
    let mut fold = spec("30 1 * * *", "America/Mexico_City");
    fold.on_overlap = OverlapPolicy::Both;
    let anchor = at("2023-01-01T00:00:00Z");
    // WHEN each is compared over the old rules' DST changes of 2023
    let spring = compare(&gap, anchor, at("2023-04-01T12:00:00Z"), 3, &old, &new).unwrap();
    let autumn = compare(&fold, anchor, at("2023-10-28T12:00:00Z"), 3, &old, &new).unwrap();
    // THEN 04-02 02:30, which did not exist under 2022a, is a new fire at 08:30Z, and 04-03
    // and 04-04 02:30 move from 07:30Z (CDT) to 08:30Z; the window ends at 04-04, the
    // compiled list's third fire (2022a's third, 04-05, is past it and not compared)
    assert_eq!(
        spring,
        vec![
            FireChange {
                local_time: wall("2023-04-02T02:30:00"),
                old_at: None,
                new_at: Some(at("2023-04-02T08:30:00Z")),
            },
            FireChange {
                local_time: wall("2023-04-03T02:30:00"),
                old_at: Some(at("2023-04-03T07:30:00Z")),
                new_at: Some(at("2023-04-03T08:30:00Z")),
            },
            FireChange {
                local_time: wall("2023-04-04T02:30:00"),
                old_at: Some(at("2023-04-04T07:30:00Z")),
                new_at: Some(at("2023-04-04T08:30:00Z")),
            },
        ]
    );
    // AND 10-29 01:30, twice under 2022a (06:30Z CDT and 07:30Z CST), is once under the
    // compiled rules (07:30Z): the first occurrence is removed, the second is unchanged
    assert_eq!(
        autumn,
        vec![FireChange {
            local_time: wall("2023-10-29T01:30:00"),
            old_at: Some(at("2023-10-29T06:30:00Z")),
            new_at: None,
        }]
    );
    assert_eq!(autumn[0].shift_secs(), None);
}

#[test]
fn jobs_in_an_unaffected_zone_or_on_a_rate_do_not_change() {
    let (old, new) = (fixture(), Tzdb::compiled());
    let anchor = at("2023-01-01T00:00:00Z");
    // GIVEN a London job across both of its DST changes, and an hourly rate() in Mexico City
    for (s, after, n) in [
        (spec("0 9 * * *", "Europe/London"), "2023-03-20T00:00:00Z", 400),
        (spec("30 1 * * *", "Europe/London"), "2023-03-20T00:00:00Z", 400),
        (spec("rate(1 hour)", "America/Mexico_City"), "2023-03-28T00:00:00Z", 2000),
    ] {
        // WHEN compared THEN nothing changes
        assert_eq!(compare(&s, anchor, at(after), n, &old, &new).unwrap(), vec![], "{}", s.expression);
    }
}

#[test]
fn before_2023_the_fixture_agrees_with_the_compiled_rules() {
    // GIVEN Mexico City and London jobs over 2002..2022, where 2022a and the compiled release
    // have the same rules: the TZif path computes exactly what chrono-tz computes, gaps and
    // repeated hours included
    let old = fixture();
    let anchor = at("2002-01-01T00:00:00Z");
    for zone in ["America/Mexico_City", "Europe/London"] {
        for (expr, gap, overlap) in [
            ("30 1,2 * * *", GapPolicy::Shift, OverlapPolicy::Both),
            ("30 1,2 * * *", GapPolicy::Skip, OverlapPolicy::Last),
            ("*/20 0-3 * * 0", GapPolicy::Shift, OverlapPolicy::First),
        ] {
            let mut s = spec(expr, zone);
            s.on_gap = gap;
            s.on_overlap = overlap;
            let a = Schedule::parse_in(&s, anchor, &old, None).unwrap();
            let b = Schedule::parse(&s, anchor).unwrap();
            // WHEN both enumerate forward and backward THEN every instant is the same
            let fa = a.fires_between(at("2002-01-01T00:00:00Z"), at("2022-12-31T00:00:00Z"), 100_000);
            let fb = b.fires_between(at("2002-01-01T00:00:00Z"), at("2022-12-31T00:00:00Z"), 100_000);
            assert_eq!(fa, fb, "{zone} {expr}");
            for f in fa.iter().step_by(97) {
                assert_eq!(a.prev_at_or_before(*f), Some(*f));
                assert_eq!(
                    a.prev_at_or_before(*f - chrono::Duration::seconds(1)),
                    b.prev_at_or_before(*f - chrono::Duration::seconds(1))
                );
            }
        }
    }
}

#[test]
fn a_zone_missing_from_the_old_release_is_named() {
    let e =
        Schedule::parse_in(&spec("0 9 * * *", "Europe/Kyiv"), at("2023-01-01T00:00:00Z"), &fixture(), None)
            .unwrap_err();
    assert_eq!(e.to_string(), "timezone: 'Europe/Kyiv' is not a zone of tz database 2022a");
}

#[test]
fn zoneinfo_errors_name_the_path() {
    assert!(matches!(
        Tzdb::from_tzif("x", [("A/B", b"not tzif".as_slice())]),
        Err(TzdbError::NotTzif { .. })
    ));
    let e = Tzdb::from_zoneinfo("x", Path::new("/nonexistent/zoneinfo")).unwrap_err();
    assert!(e.to_string().starts_with("/nonexistent/zoneinfo: "), "{e}");
}

#[test]
fn the_compiled_release_is_the_one_chrono_tz_was_built_from() {
    // The crate's data directory ships the release's NEWS; its first release line is the
    // version chrono-tz exports. The constant is the only source the product uses.
    assert_eq!(Tzdb::compiled().version(), chrono_tz::IANA_TZDB_VERSION);
    assert!(Tzdb::compiled().is_compiled());
}
