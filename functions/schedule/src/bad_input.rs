//! Table-driven bad input: malformed expressions, zones, bounds, windows and calendars, each
//! with the exact message the API returns. None panics.

use super::tests::utc;
use super::*;

fn spec_with(f: impl FnOnce(&mut ScheduleSpec)) -> ScheduleSpec {
    let mut s = ScheduleSpec::new("0 0 9 * * *", "Europe/London");
    f(&mut s);
    s
}

fn cases() -> Vec<(&'static str, ScheduleSpec)> {
    let e = |x: &str| spec_with(|s| s.expression = x.to_string());
    let z = |x: &str| spec_with(|s| s.timezone = x.to_string());
    vec![
        ("empty", e("")),
        ("blank", e("   ")),
        ("4 fields", e("* * * *")),
        ("8 fields", e("* * * * * * * *")),
        ("second 60", e("60 * * * * *")),
        ("minute 60", e("0 60 * * * *")),
        ("hour 24", e("0 0 24 * * *")),
        ("dom 0", e("0 0 0 0 * *")),
        ("dom 32", e("0 0 0 32 * *")),
        ("month 13", e("0 0 0 * 13 *")),
        ("quartz dow 0", e("0 0 0 * * 0")),
        ("quartz dow 8", e("0 0 0 * * 8")),
        ("unix dow 8", e("0 0 * * 8")),
        ("L in a list", e("0 0 0 L,15 * *")),
        ("W with a range", e("0 0 0 1-5W * *")),
        ("W 32", e("0 0 0 32W * *")),
        ("L-31", e("0 0 0 L-31 * *")),
        ("L with a step", e("0 0 0 L/2 * *")),
        ("dL in day-of-month", e("0 0 0 5L * *")),
        ("# in day-of-month", e("0 0 0 MON#2 * *")),
        ("# week 0", e("0 0 0 ? * MON#0")),
        ("# week 6", e("0 0 0 ? * 6#6")),
        ("# range", e("0 0 0 ? * MON-FRI#2")),
        ("# list", e("0 0 0 ? * MON#2,FRI#4")),
        ("L alone in day-of-week", e("0 0 0 ? * L")),
        ("unix L alone in day-of-week", e("0 9 * * L")),
        ("W in day-of-week", e("0 0 0 ? * 1W")),
        ("dL range", e("0 0 0 ? * 2-6L")),
        ("quartz dL 0", e("0 0 0 ? * 0L")),
        ("unix # 8", e("0 9 * * 8#1")),
        ("L in hours", e("0 0 L * * *")),
        ("W in minutes", e("0 5W * * * *")),
        ("# in month", e("0 0 0 * 1#2 *")),
        ("L-30 in February", e("0 0 0 L-30 2 *")),
        ("31W in April", e("0 0 0 31W 4 *")),
        ("bad day name", e("0 0 0 * * FOO")),
        ("bad month name", e("0 0 0 * JANUARYX *")),
        ("backwards range", e("0 0 5-2 * * *")),
        ("step 0", e("*/0 * * * * *")),
        ("step 61", e("*/61 * * * * *")),
        ("year 1969", e("0 0 0 * * * 1969")),
        ("never matches", e("0 0 0 30 2 *")),
        ("? in hours", e("0 0 ? * * *")),
        ("empty list item", e("0 0 0 1,,2 * *")),
        ("letters in minutes", e("0 abc * * * *")),
        ("cron() wrapper", e("cron(0 12 * * ? *)")),
        ("unknown shorthand", e("@every 5m")),
        ("rate 0", e("rate(0 minutes)")),
        ("rate unit", e("rate(5 fortnights)")),
        ("rate words", e("rate(five minutes)")),
        ("rate glued", e("rate(5minutes)")),
        ("rate too long", e("rate(4000 days)")),
        ("rate no parens", e("rate 5 minutes")),
        ("at 30 Feb", e("at(2026-02-30T09:00:00)")),
        ("at short", e("at(2026-12-01 09:00)")),
        ("at with Z", e("at(2026-12-01T09:00:00Z)")),
        ("at 1960", e("at(1960-01-01T00:00:00)")),
        ("too long", e(&"* ".repeat(200))),
        ("zone empty", z("")),
        ("zone typo", z("America/New_Yrk")),
        ("zone case", z("america/new_york")),
        ("zone +02:00", z("+02:00")),
        ("zone UTC+2", z("UTC+2")),
        ("zone GMT-5", z("GMT-5")),
        ("zone unknown", z("Mars/Olympus_Mons")),
        (
            "end before start",
            spec_with(|s| {
                s.start = Some(utc("2026-06-01T00:00:00Z"));
                s.end = Some(utc("2026-05-01T00:00:00Z"));
            }),
        ),
        ("jitter too long", spec_with(|s| s.jitter_window_secs = 100_000)),
        ("bad date", spec_with(|s| s.exclusions.dates = vec!["2026-12-25".into(), "2026-13-01".into()])),
        ("slashed date", spec_with(|s| s.exclusions.dates = vec!["2026/12/25".into()])),
        ("bad weekday", spec_with(|s| s.exclusions.weekdays = vec!["funday".into()])),
        (
            "every weekday",
            spec_with(|s| {
                s.exclusions.weekdays =
                    ["mon", "tue", "wed", "thu", "fri", "sat", "sun"].map(String::from).to_vec()
            }),
        ),
        (
            "at in gap with skip",
            spec_with(|s| {
                s.expression = "at(2026-03-29T01:30:00)".into();
                s.on_gap = GapPolicy::Skip;
            }),
        ),
        (
            "at on excluded date",
            spec_with(|s| {
                s.expression = "at(2026-12-25T09:00:00)".into();
                s.exclusions.dates = vec!["2026-12-25".into()];
            }),
        ),
        (
            "at before start",
            spec_with(|s| {
                s.expression = "at(2026-12-01T09:00:00)".into();
                s.start = Some(utc("2027-01-01T00:00:00Z"));
            }),
        ),
        (
            "at after end",
            spec_with(|s| {
                s.expression = "at(2026-12-01T09:00:00)".into();
                s.end = Some(utc("2026-06-01T00:00:00Z"));
            }),
        ),
    ]
}

/// (case, field, exact message); `{tzdb}` stands for [`tzdb_version`].
const EXPECTED: &[(&str, &str, &str)] = &[
        ("empty", "expression", "expression: is empty; expected a cron expression, rate(..) or at(..)"),
        ("blank", "expression", "expression: is empty; expected a cron expression, rate(..) or at(..)"),
        ("4 fields", "expression", "expression: '* * * *' has 4 fields; expected 5 (Unix: min hour dom month dow), 6 or 7 (with seconds: sec min hour dom month dow [year]), rate(..) or at(..)"),
        ("8 fields", "expression", "expression: '* * * * * * * *' has 8 fields; expected 5 (Unix: min hour dom month dow), 6 or 7 (with seconds: sec min hour dom month dow [year]), rate(..) or at(..)"),
        ("second 60", "expression", "expression: field 1 (seconds) '60': 60 is out of range 0-59"),
        ("minute 60", "expression", "expression: field 2 (minutes) '60': 60 is out of range 0-59"),
        ("hour 24", "expression", "expression: field 3 (hours) '24': 24 is out of range 0-23"),
        ("dom 0", "expression", "expression: field 4 (day-of-month) '0': 0 is out of range 1-31"),
        ("dom 32", "expression", "expression: field 4 (day-of-month) '32': 32 is out of range 1-31"),
        ("month 13", "expression", "expression: field 5 (month) '13': 13 is out of range 1-12"),
        ("quartz dow 0", "expression", "expression: field 6 (day-of-week) '0': 0 is out of range 1-7 (6/7-field form: 1 = Sunday .. 7 = Saturday; use SUN-SAT, or the 5-field Unix form where 0 = Sunday)"),
        ("quartz dow 8", "expression", "expression: field 6 (day-of-week) '8': 8 is out of range 1-7 (6/7-field form: 1 = Sunday .. 7 = Saturday; use SUN-SAT, or the 5-field Unix form where 0 = Sunday)"),
        ("unix dow 8", "expression", "expression: field 5 (day-of-week) '8': 8 is out of range 0-7 (5-field Unix form: 0 or 7 = Sunday, 1 = Monday .. 6 = Saturday)"),
        ("L in a list", "expression", "expression: field 4 (day-of-month) 'L,15': 'L' cannot be part of a list; L, L-n, LW, nW, dL and d#k stand alone in their field"),
        ("W with a range", "expression", "expression: field 4 (day-of-month) '1-5W': 'W' (nearest weekday) takes one day, e.g. 15W, not a range or step"),
        ("W 32", "expression", "expression: field 4 (day-of-month) '32W': 32 is out of range 1-31"),
        ("L-31", "expression", "expression: field 4 (day-of-month) 'L-31': the offset '31' after 'L-' must be a number of days from 0 to 30 (L-n is n days before the last day of the month)"),
        ("L with a step", "expression", "expression: field 4 (day-of-month) 'L/2': 'L/2' is not a day rule; L, L-n, LW, nW (day-of-month), dL and d#k (day-of-week) stand alone, without ranges or steps"),
        ("dL in day-of-month", "expression", "expression: field 4 (day-of-month) '5L': a weekday before 'L' (dL, the last such weekday) belongs in day-of-week; day-of-month takes L, L-n or LW"),
        ("# in day-of-month", "expression", "expression: field 4 (day-of-month) 'MON#2': '#' (nth weekday of the month) belongs in day-of-week, e.g. MON#2"),
        ("# week 0", "expression", "expression: field 6 (day-of-week) 'MON#0': the week number '0' after '#' must be 1 to 5 (MON#2 is the second Monday of the month)"),
        ("# week 6", "expression", "expression: field 6 (day-of-week) '6#6': the week number '6' after '#' must be 1 to 5 (MON#2 is the second Monday of the month)"),
        ("# range", "expression", "expression: field 6 (day-of-week) 'MON-FRI#2': 'MON-FRI#2' takes one weekday, e.g. MON#2, not a range or step"),
        ("# list", "expression", "expression: field 6 (day-of-week) 'MON#2,FRI#4': 'MON#2' cannot be part of a list; L, L-n, LW, nW, dL and d#k stand alone in their field"),
        ("L alone in day-of-week", "expression", "expression: field 6 (day-of-week) 'L': 'L' alone in day-of-week is ambiguous (Quartz reads it as Saturday); write SAT, or dL for the last such weekday of the month (6L or FRIL is the last Friday)"),
        ("unix L alone in day-of-week", "expression", "expression: field 5 (day-of-week) 'L': 'L' alone in day-of-week is ambiguous (Quartz reads it as Saturday); write SAT, or dL for the last such weekday of the month (5L or FRIL is the last Friday)"),
        ("W in day-of-week", "expression", "expression: field 6 (day-of-week) '1W': 'W' (nearest weekday) belongs in day-of-month, e.g. 15W"),
        ("dL range", "expression", "expression: field 6 (day-of-week) '2-6L': '2-6L' takes one weekday, e.g. 6L or FRIL, not a range or step"),
        ("quartz dL 0", "expression", "expression: field 6 (day-of-week) '0L': 0 is out of range 1-7 (6/7-field form: 1 = Sunday .. 7 = Saturday; use SUN-SAT, or the 5-field Unix form where 0 = Sunday)"),
        ("unix # 8", "expression", "expression: field 5 (day-of-week) '8#1': 8 is out of range 0-7 (5-field Unix form: 0 or 7 = Sunday, 1 = Monday .. 6 = Saturday)"),
        ("L in hours", "expression", "expression: field 3 (hours) 'L': 'L' (last) is only allowed in day-of-month and day-of-week"),
        ("W in minutes", "expression", "expression: field 2 (minutes) '5W': 'W' (nearest weekday) is only allowed in day-of-month"),
        ("# in month", "expression", "expression: field 5 (month) '1#2': '#' (nth weekday of the month) is only allowed in day-of-week"),
        ("L-30 in February", "expression", "expression: '0 0 0 L-30 2 *' never matches a real date (e.g. 30 February)"),
        ("31W in April", "expression", "expression: '0 0 0 31W 4 *' never matches a real date (e.g. 30 February)"),
        ("bad day name", "expression", "expression: field 6 (day-of-week) 'FOO': 'FOO' is not a day-of-week name"),
        ("bad month name", "expression", "expression: field 5 (month) 'JANUARYX': 'JANUARYX' is not a month name"),
        ("backwards range", "expression", "expression: field 3 (hours) '5-2': range 5-2 runs backwards (wrap-around is not supported)"),
        ("step 0", "expression", "expression: field 1 (seconds) '*/0': step 0 must be between 1 and 59"),
        ("step 61", "expression", "expression: field 1 (seconds) '*/61': step 61 must be between 1 and 59"),
        ("year 1969", "expression", "expression: field 7 (year) '1969': 1969 is out of range 1970-2100"),
        ("never matches", "expression", "expression: '0 0 0 30 2 *' never matches a real date (e.g. 30 February)"),
        ("? in hours", "expression", "expression: field 3 (hours) '?': '?' is only allowed in day-of-month and day-of-week"),
        ("empty list item", "expression", "expression: field 4 (day-of-month) '1,,2': empty list item"),
        ("letters in minutes", "expression", "expression: field 2 (minutes) 'abc': 'abc' is not a number (this field takes no names)"),
        ("cron() wrapper", "expression", "expression: write the cron fields without the cron(..) wrapper: 6 or 7 fields with seconds ('0 30 2 * * *'), or 5 Unix fields ('30 2 * * *')"),
        ("unknown shorthand", "expression", "expression: '@every 5m' is not a known shorthand; use @yearly, @monthly, @weekly, @daily or @hourly"),
        ("rate 0", "expression", "expression: 'rate(0 minutes)': the interval must be at least 1"),
        ("rate unit", "expression", "expression: 'rate(5 fortnights)': unknown unit 'fortnights'; use seconds, minutes, hours or days"),
        ("rate words", "expression", "expression: 'rate(five minutes)': the interval 'five' is not a whole number"),
        ("rate glued", "expression", "expression: 'rate(5minutes)': expected rate(N unit), e.g. rate(10 minutes)"),
        ("rate too long", "expression", "expression: 'rate(4000 days)': the interval is longer than 3650 days"),
        ("rate no parens", "expression", "expression: 'rate 5 minutes': expected rate(N seconds|minutes|hours|days)"),
        ("at 30 Feb", "expression", "expression: 'at(2026-02-30T09:00:00)': not a real date and time"),
        ("at short", "expression", "expression: 'at(2026-12-01 09:00)': expected at(YYYY-MM-DDTHH:MM:SS)"),
        ("at with Z", "expression", "expression: 'at(2026-12-01T09:00:00Z)': at() takes a local time in the job's zone, without offset or 'Z'; set the zone in 'timezone'"),
        ("at 1960", "expression", "expression: 'at(1960-01-01T00:00:00)': the year must be between 1970 and 2100"),
        ("too long", "expression", "expression: is 399 characters long; at most 256 are allowed"),
        ("zone empty", "timezone", "timezone: is empty; give an IANA zone name such as 'Europe/London' or 'UTC'"),
        ("zone typo", "timezone", "timezone: 'America/New_Yrk' is not an IANA zone name (tzdb {tzdb}); did you mean 'America/New_York'?"),
        ("zone case", "timezone", "timezone: 'america/new_york' is not an IANA zone name (they are case-sensitive); did you mean 'America/New_York'?"),
        ("zone +02:00", "timezone", "timezone: '+02:00' is a fixed UTC offset, not an IANA zone; use the region's zone (e.g. 'Europe/Paris') so DST is followed, or 'Etc/GMT-2'-style names if a fixed offset is really meant (their sign is inverted)"),
        ("zone UTC+2", "timezone", "timezone: 'UTC+2' is a fixed UTC offset, not an IANA zone; use the region's zone (e.g. 'Europe/Paris') so DST is followed, or 'Etc/GMT-2'-style names if a fixed offset is really meant (their sign is inverted)"),
        ("zone GMT-5", "timezone", "timezone: 'GMT-5' is a fixed UTC offset, not an IANA zone; use the region's zone (e.g. 'Europe/Paris') so DST is followed, or 'Etc/GMT-2'-style names if a fixed offset is really meant (their sign is inverted)"),
        ("zone unknown", "timezone", "timezone: 'Mars/Olympus_Mons' is not an IANA zone name (tzdb {tzdb}); expected a name such as 'Europe/London'"),
        ("end before start", "end", "end: 2026-05-01T00:00:00Z is before start 2026-06-01T00:00:00Z"),
        ("jitter too long", "jitterWindowSecs", "jitterWindowSecs: 100000 is longer than the maximum 86400 (one day)"),
        ("bad date", "exclusions", "exclusions: dates[1] '2026-13-01' is not a calendar date in the form YYYY-MM-DD"),
        ("slashed date", "exclusions", "exclusions: dates[0] '2026/12/25' is not a calendar date in the form YYYY-MM-DD"),
        ("bad weekday", "exclusions", "exclusions: weekdays[0] 'funday' is not a weekday; use mon, tue, wed, thu, fri, sat or sun"),
        ("every weekday", "exclusions", "exclusions: every weekday is excluded, so the schedule would never fire"),
        ("at in gap with skip", "onGap", "onGap: at(2026-03-29T01:30:00) does not exist in Europe/London (the clocks skip it) and onGap is 'skip', so it would never fire; use 'shift' or another time"),
        ("at on excluded date", "exclusions", "exclusions: exclude 2026-12-25, the only date of at(2026-12-25T09:00:00)"),
        ("at before start", "start", "start: is after at(2026-12-01T09:00:00), which would never fire"),
        ("at after end", "end", "end: is before at(2026-12-01T09:00:00), which would never fire"),
];

#[test]
fn every_bad_input_is_refused_with_its_message() {
    let cases = cases();
    assert!(cases.len() >= 30);
    assert_eq!(cases.len(), EXPECTED.len());
    for ((name, spec), (want_name, field, message)) in cases.into_iter().zip(EXPECTED) {
        assert_eq!(name, *want_name);
        let err = match Schedule::parse(&spec, utc("2026-01-01T00:00:00Z")) {
            Err(e) => e,
            Ok(_) => panic!("{name}: accepted"),
        };
        assert_eq!(err.field(), *field, "{name}");
        assert_eq!(err.to_string(), message.replace("{tzdb}", tzdb_version()), "{name}");
        assert!(!err.is_retryable());
        assert_eq!(format!("{}: {}", err.field(), err.reason()), err.to_string(), "{name}");
        assert!(!err.to_string().contains('\n'), "{name}: one line");
    }
}

#[test]
fn policy_names_are_checked() {
    let e = "sometimes".parse::<GapPolicy>().unwrap_err();
    assert_eq!(e.to_string(), "onGap: 'sometimes' is not a gap policy; use 'skip' or 'shift'");
    let e = "middle".parse::<OverlapPolicy>().unwrap_err();
    assert_eq!(e.to_string(), "onOverlap: 'middle' is not an overlap policy; use 'first', 'last' or 'both'");
    assert_eq!("both".parse::<OverlapPolicy>().unwrap(), OverlapPolicy::Both);
    // JSON goes through serde, which names the variants too.
    let bad =
        serde_json::from_str::<ScheduleSpec>(r#"{"expression":"@daily","timezone":"UTC","onGap":"later"}"#);
    assert!(bad.unwrap_err().to_string().contains("unknown variant `later`"));
}

#[test]
fn good_inputs_are_accepted() {
    for expr in [
        "0 30 2 * * *",
        "*/5 * * * *",
        "rate(10 seconds)",
        "rate(1 minute)",
        "RATE(2 Hours)",
        "at(2026-12-01T09:00:00)",
        "0 0 9 ? * MON-FRI",
        "0 0 9 * * Mon-Fri 2026-2030",
        "0 15 10 ? JAN,JUL *",
        "@daily",
        "@weekly",
        "0 0 12 * * sunday",
        "  0   0  12 * * *  ",
        "30 2 1-7 * 1",
    ] {
        let spec = ScheduleSpec::new(expr, "Europe/London");
        assert!(Schedule::parse(&spec, utc("2026-01-01T00:00:00Z")).is_ok(), "{expr}");
    }
    for zone in ["UTC", "Etc/GMT-2", "Asia/Kolkata", "Australia/Lord_Howe", "America/Argentina/Buenos_Aires"]
    {
        let spec = ScheduleSpec::new("@daily", zone);
        assert!(Schedule::parse(&spec, utc("2026-01-01T00:00:00Z")).is_ok(), "{zone}");
    }
}
