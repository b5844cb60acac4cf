//! Quartz day rules (`L`, `L-n`, `LW`, `nW`, `dL`, `d#k`) against a brute-force oracle.
//!
//! The oracle decides, for one calendar day, whether a rule selects it, from first principles:
//! chrono date arithmetic and the rule's words ("the weekday nearest to day n within the
//! month", "the k-th such weekday"), never the engine's bit masks. Each rule is checked over
//! every day of 1970–2100 (exhaustively, in UTC) and over random windows in zones with DST,
//! in both the 6/7-field and the 5-field form. DST behaviour of the local times the rules
//! produce is pinned on real transitions in Berlin and New York.

use chrono::{Datelike, Days, Duration, NaiveDate, Timelike, Weekday};
use proptest::prelude::*;

use super::tests::{utc, z};
use super::*;

/// A rule as words, for the oracle.
#[derive(Debug, Clone, Copy)]
enum Rule {
    /// `L` / `L-n`.
    Last(u64),
    /// `LW`.
    LastWeekday,
    /// `nW`.
    Nearest(u32),
    /// `dL`.
    LastOf(Weekday),
    /// `d#k`.
    Nth(Weekday, u32),
}

fn same_month(a: NaiveDate, b: NaiveDate) -> bool {
    a.year() == b.year() && a.month() == b.month()
}

fn is_weekday(d: NaiveDate) -> bool {
    !matches!(d.weekday(), Weekday::Sat | Weekday::Sun)
}

/// Every day of `d`'s month.
fn month_of(d: NaiveDate) -> impl Iterator<Item = NaiveDate> {
    let first = d.with_day(1).unwrap();
    first.iter_days().take_while(move |x| same_month(*x, first))
}

/// Whether `rule` selects `d`, from first principles.
fn oracle(rule: Rule, d: NaiveDate) -> bool {
    match rule {
        // n days later is the last day: still this month, and the day after is not.
        Rule::Last(n) => {
            let t = d + Days::new(n);
            same_month(t, d) && !same_month(t.succ_opt().unwrap(), d)
        }
        // A weekday with no weekday after it in the month.
        Rule::LastWeekday => is_weekday(d) && month_of(d).filter(|x| *x > d).all(|x| !is_weekday(x)),
        // The weekday of the month closest to day n (none when the month has no day n).
        Rule::Nearest(n) => {
            let Some(target) = NaiveDate::from_ymd_opt(d.year(), d.month(), n) else {
                return false;
            };
            let dist = |x: NaiveDate| (x - target).num_days().abs();
            is_weekday(d) && month_of(d).filter(|x| is_weekday(*x) && *x != d).all(|x| dist(x) > dist(d))
        }
        // That weekday, and a week later is another month.
        Rule::LastOf(w) => d.weekday() == w && !same_month(d + Days::new(7), d),
        // That weekday, and exactly k of them in the month up to and including d.
        Rule::Nth(w, k) => {
            d.weekday() == w && month_of(d).filter(|x| *x <= d && x.weekday() == w).count() == k as usize
        }
    }
}

/// (6/7-field expression, 5-field expression, rule); each fires at 12:00 local.
const RULES: &[(&str, &str, Rule)] = &[
    ("0 0 12 L * ?", "0 12 L * *", Rule::Last(0)),
    ("0 0 12 L-1 * ?", "0 12 L-1 * *", Rule::Last(1)),
    ("0 0 12 L-3 * ?", "0 12 L-3 * *", Rule::Last(3)),
    ("0 0 12 L-28 * ?", "0 12 l-28 * *", Rule::Last(28)),
    ("0 0 12 L-30 * ?", "0 12 L-30 * *", Rule::Last(30)),
    ("0 0 12 LW * ?", "0 12 LW * *", Rule::LastWeekday),
    ("0 0 12 1W * ?", "0 12 1W * *", Rule::Nearest(1)),
    ("0 0 12 15W * ?", "0 12 15w * *", Rule::Nearest(15)),
    ("0 0 12 30W * ?", "0 12 30W * *", Rule::Nearest(30)),
    ("0 0 12 31W * ?", "0 12 31W * *", Rule::Nearest(31)),
    ("0 0 12 ? * 6L", "0 12 * * 5L", Rule::LastOf(Weekday::Fri)),
    ("0 0 12 ? * FRIL", "0 12 * * fril", Rule::LastOf(Weekday::Fri)),
    ("0 0 12 ? * 1L", "0 12 * * 0L", Rule::LastOf(Weekday::Sun)),
    ("0 0 12 ? * SUNDAYL", "0 12 * * 7L", Rule::LastOf(Weekday::Sun)),
    ("0 0 12 ? * MON#2", "0 12 * * 1#2", Rule::Nth(Weekday::Mon, 2)),
    ("0 0 12 ? * 2#1", "0 12 * * mon#1", Rule::Nth(Weekday::Mon, 1)),
    ("0 0 12 ? * 6#3", "0 12 * * 5#3", Rule::Nth(Weekday::Fri, 3)),
    ("0 0 12 ? * 7#4", "0 12 * * SAT#4", Rule::Nth(Weekday::Sat, 4)),
    ("0 0 12 ? * SUN#5", "0 12 * * 0#5", Rule::Nth(Weekday::Sun, 5)),
];

fn parse(expr: &str, zone: &str) -> Schedule {
    Schedule::parse(&ScheduleSpec::new(expr, zone), utc("1970-01-01T00:00:00Z"))
        .unwrap_or_else(|e| panic!("{expr}: {e}"))
}

/// The local dates of the fires in `[from, to]` (dates), walking `next_after`.
fn fire_dates(s: &Schedule, from: NaiveDate, to: NaiveDate) -> Vec<NaiveDate> {
    let tz = s.timezone();
    let start = zone::day_start(&zone::Zone::Compiled(tz), from).unwrap() - Duration::seconds(1);
    let mut out = Vec::new();
    let mut cursor = start;
    while let Some(f) = s.next_after(cursor) {
        let local = f.with_timezone(&tz);
        if local.date_naive() > to {
            break;
        }
        assert_eq!(local.format("%H:%M:%S").to_string(), "12:00:00", "{f}");
        out.push(local.date_naive());
        cursor = f;
    }
    out
}

fn oracle_dates(rule: Rule, from: NaiveDate, to: NaiveDate) -> Vec<NaiveDate> {
    from.iter_days().take_while(|d| *d <= to).filter(|d| oracle(rule, *d)).collect()
}

fn day(s: &str) -> NaiveDate {
    NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
}

#[test]
fn every_rule_matches_the_oracle_on_every_day_1970_to_2100() {
    // GIVEN each rule in both forms, in UTC
    let (from, to) = (day("1970-01-01"), day("2100-12-31"));
    for (quartz, unix, rule) in RULES {
        // WHEN every fire from 1970 to 2100 is walked
        let want = oracle_dates(*rule, from, to);
        assert!(want.len() > 500, "{quartz}: the oracle finds {} days", want.len());
        for expr in [quartz, unix] {
            let s = parse(expr, "UTC");
            // THEN the fire days are exactly the oracle's days
            assert_eq!(fire_dates(&s, from, to), want, "{expr}");
            // and walking back from the end finds the same days
            let mut back = Vec::new();
            let mut cursor = utc("2101-01-01T00:00:00Z");
            while let Some(f) = s.prev_at_or_before(cursor) {
                back.push(f.date_naive());
                cursor = f - Duration::seconds(1);
            }
            back.reverse();
            assert_eq!(back, want, "{expr} backwards");
        }
    }
}

#[test]
fn the_oracle_agrees_with_the_calendar() {
    // The oracle itself, on days checked by hand (2026: Feb has 28 days, 1 Aug is a Saturday,
    // 31 May is a Sunday, 31 Jan is a Saturday).
    assert!(oracle(Rule::Last(0), day("2026-02-28")));
    assert!(oracle(Rule::Last(0), day("2028-02-29")));
    assert!(oracle(Rule::Last(3), day("2026-04-27")));
    assert!(oracle(Rule::LastWeekday, day("2026-05-29")), "31 May is a Sunday: Friday the 29th");
    assert!(oracle(Rule::Nearest(1), day("2026-08-03")), "1 Aug is a Saturday: Monday the 3rd");
    assert!(oracle(Rule::Nearest(31), day("2026-05-29")), "31 May is a Sunday: Friday the 29th");
    assert!(oracle(Rule::Nearest(31), day("2026-01-30")), "31 Jan is a Saturday: Friday the 30th");
    assert!(oracle(Rule::Nearest(15), day("2026-03-16")), "15 Mar is a Sunday: Monday the 16th");
    assert!(
        !(1..=30).any(|d| oracle(Rule::Nearest(31), day(&format!("2026-04-{d:02}")))),
        "April has no 31st"
    );
    assert!(oracle(Rule::LastOf(Weekday::Fri), day("2026-07-31")));
    assert!(oracle(Rule::Nth(Weekday::Mon, 2), day("2026-06-08")));
    assert!(oracle(Rule::Nth(Weekday::Sun, 5), day("2026-03-29")));
    assert!(!month_of(day("2026-02-01")).any(|d| oracle(Rule::Nth(Weekday::Sun, 5), d)));
}

#[test]
fn rules_combine_with_months_years_and_the_other_day_field() {
    // The last Friday of March, June, September and December in 2027 and 2028.
    let s = parse("0 0 12 ? MAR,JUN,SEP,DEC FRIL 2027-2028", "UTC");
    let got: Vec<String> = s.preview(utc("2026-01-01T00:00:00Z"), 10).into_iter().map(z).collect();
    assert_eq!(
        got,
        [
            "2027-03-26T12:00:00Z",
            "2027-06-25T12:00:00Z",
            "2027-09-24T12:00:00Z",
            "2027-12-31T12:00:00Z",
            "2028-03-31T12:00:00Z",
            "2028-06-30T12:00:00Z",
            "2028-09-29T12:00:00Z",
            "2028-12-29T12:00:00Z"
        ]
    );
    // 6/7-field form: AND. The last day of the month when it is a Friday.
    let s = parse("0 0 12 L * FRI", "UTC");
    for f in s.preview(utc("2026-01-01T00:00:00Z"), 20) {
        let d = f.date_naive();
        assert!(oracle(Rule::Last(0), d) && d.weekday() == Weekday::Fri, "{f}");
    }
    // 5-field form, both restricted: Vixie OR. The last day of the month, and every Friday.
    let s = parse("0 12 L * 5", "UTC");
    let from = day("2026-01-01");
    let to = day("2027-12-31");
    let want: Vec<_> = from
        .iter_days()
        .take_while(|d| *d <= to)
        .filter(|d| oracle(Rule::Last(0), *d) || d.weekday() == Weekday::Fri)
        .collect();
    assert_eq!(fire_dates(&s, from, to), want);
    assert_eq!(s.normalized_expression(), "0 0 12 L * * | 0 0 12 * * 6");
    // and the second Monday OR the 1st.
    let s = parse("0 12 1 * 1#2", "UTC");
    let want: Vec<_> = from
        .iter_days()
        .take_while(|d| *d <= to)
        .filter(|d| d.day() == 1 || oracle(Rule::Nth(Weekday::Mon, 2), *d))
        .collect();
    assert_eq!(fire_dates(&s, from, to), want);
}

#[test]
fn rules_are_normalised_to_quartz_numbering() {
    for (expr, norm) in [
        ("0 30 2 L * ?", "0 30 2 L * *"),
        ("0 30 2 l-0 * *", "0 30 2 L * *"),
        ("30 2 L-5 * *", "0 30 2 L-5 * *"),
        ("0 0 9 lw * ?", "0 0 9 LW * *"),
        ("0 9 15W * *", "0 0 9 15W * *"),
        ("0 9 * * 5L", "0 0 9 * * 6L"),
        ("0 9 * * 0L", "0 0 9 * * 1L"),
        ("0 9 * * 7#1", "0 0 9 * * 1#1"),
        ("0 0 9 ? * FRIL", "0 0 9 * * 6L"),
        ("0 0 9 ? * mon#2 2030", "0 0 9 * * 2#2 2030"),
        ("*/15 * * ? * 6#3", "*/15 * * * * 6#3"),
    ] {
        assert_eq!(parse(expr, "UTC").normalized_expression(), norm.replace("*/15", "0,15,30,45"), "{expr}");
    }
}

#[test]
fn every_second_of_the_last_day_and_nothing_else() {
    // GIVEN every 7th second in hours 1-3 on the last day of the month (time-of-day arithmetic
    // across minute, hour and day ends)
    let s = parse("*/7 */13 1-3 L * ?", "UTC");
    // WHEN every fire of two months is walked
    let fires = s.fires_between(utc("2026-01-30T00:00:00Z"), utc("2026-03-01T00:00:00Z"), 100_000);
    // THEN it equals a second-by-second scan
    let mut want = Vec::new();
    let mut t = utc("2026-01-30T00:00:01Z");
    while t <= utc("2026-03-01T00:00:00Z") {
        let n = t.naive_utc();
        let (h, m, sec) = (n.hour(), n.minute(), n.second());
        if oracle(Rule::Last(0), n.date()) && (1..=3).contains(&h) && m % 13 == 0 && sec % 7 == 0 {
            want.push(t);
        }
        t += Duration::seconds(1);
    }
    assert_eq!(fires.len(), 2 * 3 * 5 * 9);
    assert_eq!(fires, want);
    // and backwards
    let mut back = Vec::new();
    let mut cursor = utc("2026-03-01T00:00:00Z");
    while let Some(f) = s.prev_at_or_before(cursor) {
        if f <= utc("2026-01-30T00:00:00Z") {
            break;
        }
        back.push(f);
        cursor = f - Duration::milliseconds(500);
    }
    back.reverse();
    assert_eq!(back, want);
}

// ---- DST: the job's gap and overlap policies apply to the local times the rules produce ------

fn with_policies(expr: &str, zone: &str, gap: GapPolicy, overlap: OverlapPolicy) -> Schedule {
    let mut spec = ScheduleSpec::new(expr, zone);
    spec.on_gap = gap;
    spec.on_overlap = overlap;
    Schedule::parse(&spec, utc("2026-01-01T00:00:00Z")).unwrap()
}

fn preview(s: &Schedule, after: &str, n: usize) -> Vec<String> {
    s.preview(utc(after), n).into_iter().map(z).collect()
}

#[test]
fn berlin_last_sunday_of_march_0230_is_in_the_gap_every_year() {
    // GIVEN 02:30 on the last Sunday of March in Berlin, where the clocks jump 02:00 -> 03:00
    for expr in ["0 30 2 ? 3 SUNL", "0 30 2 ? MAR 1L", "30 2 * 3 0L", "30 2 * mar sunl"] {
        // WHEN the gap policy is shift THEN each fire is the gap's end, 03:00 CEST = 01:00Z
        let s = with_policies(expr, "Europe/Berlin", GapPolicy::Shift, OverlapPolicy::First);
        assert_eq!(
            preview(&s, "2026-01-01T00:00:00Z", 3),
            ["2026-03-29T01:00:00Z", "2027-03-28T01:00:00Z", "2028-03-26T01:00:00Z"],
            "{expr}"
        );
        assert_eq!(z(s.prev_at_or_before(utc("2027-01-01T00:00:00Z")).unwrap()), "2026-03-29T01:00:00Z");
        // WHEN it is skip THEN it never fires again: every year's 02:30 is missing (up to
        // 2099: chrono-tz's compiled rules have no DST in 2100, so 2100-03-28 02:30 exists)
        let s = with_policies(expr, "Europe/Berlin", GapPolicy::Skip, OverlapPolicy::First);
        assert_eq!(z(s.next_after(utc("2026-01-01T00:00:00Z")).unwrap()), "2100-03-28T01:30:00Z", "{expr}");
        // (Berlin's DST started on the first Sunday of April until 1980: the last such 02:30
        // that existed was 1980-03-30, 01:30Z in CET.)
        assert_eq!(z(s.prev_at_or_before(utc("2026-01-01T00:00:00Z")).unwrap()), "1980-03-30T01:30:00Z");
    }
}

#[test]
fn berlin_last_sunday_of_october_0230_is_repeated() {
    // GIVEN 02:30 on the last Sunday of October in Berlin, which happens twice (CEST, then CET)
    let after = "2026-10-01T00:00:00Z";
    for (overlap, want) in [
        (OverlapPolicy::First, ["2026-10-25T00:30:00Z", "2027-10-31T00:30:00Z"]),
        (OverlapPolicy::Last, ["2026-10-25T01:30:00Z", "2027-10-31T01:30:00Z"]),
        (OverlapPolicy::Both, ["2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z"]),
    ] {
        // WHEN the overlap policy is first, last or both THEN that occurrence fires (or both)
        let s = with_policies("0 30 2 ? 10 SUNL", "Europe/Berlin", GapPolicy::Shift, overlap);
        assert_eq!(preview(&s, after, 2), want, "{overlap:?}");
        assert_eq!(z(s.prev_at_or_before(utc(want[1])).unwrap()), want[1]);
    }
}

#[test]
fn new_york_nth_sunday_rules_meet_both_transitions() {
    // DST starts on the second Sunday of March (02:00 -> 03:00) and ends on the first Sunday
    // of November (02:00 -> 01:00) in New York.
    let s = with_policies("0 30 2 ? 3 SUN#2", "America/New_York", GapPolicy::Shift, OverlapPolicy::First);
    assert_eq!(preview(&s, "2026-01-01T00:00:00Z", 2), ["2026-03-08T07:00:00Z", "2027-03-14T07:00:00Z"]);
    let s = with_policies("30 1 * 11 0#1", "America/New_York", GapPolicy::Shift, OverlapPolicy::Both);
    assert_eq!(
        preview(&s, "2026-01-01T00:00:00Z", 3),
        ["2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z", "2027-11-07T05:30:00Z"]
    );
    // The last weekday of a month is never a transition day here: plain 02:30 EST/EDT.
    let s = with_policies("0 30 2 LW * ?", "America/New_York", GapPolicy::Skip, OverlapPolicy::First);
    assert_eq!(preview(&s, "2026-02-01T00:00:00Z", 2), ["2026-02-27T07:30:00Z", "2026-03-31T06:30:00Z"]);
}

#[test]
fn impossible_rule_combinations_are_refused_or_skipped() {
    // The 5th Sunday of February exists only in a leap year that starts on a Sunday.
    let s = parse("0 0 12 ? 2 SUN#5", "UTC");
    assert_eq!(
        preview(&s, "2000-01-01T00:00:00Z", 3),
        ["2004-02-29T12:00:00Z", "2032-02-29T12:00:00Z", "2060-02-29T12:00:00Z"]
    );
    // The 5th Sunday of February in a year that has none: refused as never matching.
    let spec = ScheduleSpec::new("0 0 12 ? 2 SUN#5 2026", "UTC");
    let err = Schedule::parse(&spec, utc("2026-01-01T00:00:00Z")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "expression: '0 0 12 ? 2 SUN#5 2026' never matches a real date (e.g. 30 February)"
    );
    // Exhausted at the end of 2100.
    let s = parse("0 0 12 L * ?", "UTC");
    assert_eq!(z(s.prev_at_or_before(utc("2200-01-01T00:00:00Z")).unwrap()), "2100-12-31T12:00:00Z");
    assert_eq!(s.next_after(utc("2100-12-31T12:00:00Z")), None);
    assert_eq!(z(s.next_after(utc("1960-01-01T00:00:00Z")).unwrap()), "1970-01-31T12:00:00Z");
}

const DST_ZONES: &[&str] = &["Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "America/Santiago"];

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Over random windows, in zones with DST (12:00 is never in a gap or an overlap there),
    /// the local days a rule fires on are the oracle's days, in both forms.
    #[test]
    fn fire_days_equal_the_oracle_in_random_windows(
        pick in 0..RULES.len(),
        unix in any::<bool>(),
        zone in prop::sample::select(DST_ZONES),
        start in 0i64..(131 * 365),
        len in 1u64..800,
    ) {
        let (quartz, five, rule) = RULES[pick];
        let expr = if unix { five } else { quartz };
        let from = day("1970-01-01") + Days::new(start as u64);
        let to = (from + Days::new(len)).min(day("2100-12-31"));
        let s = parse(expr, zone);
        prop_assert_eq!(fire_dates(&s, from, to), oracle_dates(rule, from, to), "{} in {}", expr, zone);
    }
}
