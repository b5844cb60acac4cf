//! `sundial preview` as a user runs it: the binary, its stdout, its exit code.

use std::process::{Command, Output};

fn sundial(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sundial")).arg("preview").args(args).output().expect("run sundial")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn the_issue_example_across_spring_forward() {
    // GIVEN a daily 02:30 in New York, WHEN previewed across 2026-03-08 (02:30 does not exist),
    // THEN the default gap policy `shift` fires at 03:00 EDT that day.
    let o = sundial(&[
        "--tz",
        "America/New_York",
        "--after",
        "2026-03-07T00:00:00Z",
        "--count",
        "5",
        "0 30 2 * * *",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "2026-03-07T07:30:00Z\n2026-03-08T07:00:00Z\n2026-03-09T06:30:00Z\n2026-03-10T06:30:00Z\n2026-03-11T06:30:00Z\n"
    );
    let o = sundial(&[
        "--tz",
        "America/New_York",
        "--after",
        "2026-03-07T00:00:00Z",
        "--count",
        "2",
        "--on-gap",
        "skip",
        "0 30 2 * * *",
    ]);
    assert_eq!(stdout(&o), "2026-03-07T07:30:00Z\n2026-03-09T06:30:00Z\n");
}

#[test]
fn overlap_policies_on_fall_back() {
    let run = |policy: &str| {
        stdout(&sundial(&[
            "--tz",
            "America/New_York",
            "--after",
            "2026-11-01T00:00:00Z",
            "--count",
            "3",
            "--on-overlap",
            policy,
            "30 1 * * *",
        ]))
    };
    assert_eq!(run("first"), "2026-11-01T05:30:00Z\n2026-11-02T06:30:00Z\n2026-11-03T06:30:00Z\n");
    assert_eq!(run("last"), "2026-11-01T06:30:00Z\n2026-11-02T06:30:00Z\n2026-11-03T06:30:00Z\n");
    assert_eq!(run("both"), "2026-11-01T05:30:00Z\n2026-11-01T06:30:00Z\n2026-11-02T06:30:00Z\n");
}

#[test]
fn rate_at_and_options() {
    let o = sundial(&["--after", "2026-01-01T00:00:00Z", "--count", "3", "rate(90 seconds)"]);
    assert_eq!(stdout(&o), "2026-01-01T00:01:30Z\n2026-01-01T00:03:00Z\n2026-01-01T00:04:30Z\n");
    let o = sundial(&["--tz", "Europe/London", "--after", "2026-01-01T00:00:00Z", "at(2026-07-01T09:00:00)"]);
    assert_eq!(stdout(&o), "2026-07-01T08:00:00Z\n");
    let o = sundial(&[
        "--after",
        "2026-06-05T00:00:00Z",
        "--count",
        "2",
        "--exclude-weekdays",
        "sat,sun",
        "--exclude-dates",
        "2026-06-08",
        "0 9 * * *",
    ]);
    assert_eq!(stdout(&o), "2026-06-05T09:00:00Z\n2026-06-09T09:00:00Z\n");
    let o = sundial(&[
        "--after",
        "2026-01-01T00:00:00Z",
        "--count",
        "1",
        "--jitter-window-secs",
        "60",
        "--job-id",
        "job-1",
        "@hourly",
    ]);
    let line = stdout(&o);
    let cols: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(cols.len(), 2, "{line}");
    assert_eq!(cols[0], "2026-01-01T01:00:00Z");
    assert!(cols[1].starts_with("2026-01-01T01:00:"), "{line}");
}

#[test]
fn bad_input_is_one_line_and_non_zero() {
    for (args, want) in [
        (vec!["0 60 * * * *"], "error: expression: field 2 (minutes) '60': 60 is out of range 0-59"),
        (vec!["--tz", "+02:00", "@daily"], "error: timezone: '+02:00' is a fixed UTC offset"),
        (vec!["--tz", "Europe/Londn", "@daily"], "error: timezone: 'Europe/Londn' is not an IANA zone name"),
        (
            vec!["--on-gap", "later", "@daily"],
            "error: onGap: 'later' is not a gap policy; use 'skip' or 'shift'",
        ),
        (vec!["--on-overlap", "twice", "@daily"], "error: onOverlap: 'twice' is not an overlap policy"),
        (vec!["--after", "yesterday", "@daily"], "error: --after: 'yesterday' is not an RFC 3339 instant"),
        (vec!["--count", "0", "@daily"], "error: --count: '0' is not a whole number from 1 to 100000"),
        (vec!["--count", "many", "@daily"], "error: --count: 'many' is not a whole number"),
        (vec!["--exclude-dates", "2026-02-30", "@daily"], "error: exclusions: dates[0] '2026-02-30'"),
        (
            vec!["--jitter-window-secs", "-1", "@daily"],
            "error: --jitter-window-secs: '-1' is not a whole number",
        ),
        (vec!["rate(0 seconds)"], "error: expression: 'rate(0 seconds)': the interval must be at least 1"),
    ] {
        let o = sundial(&args);
        assert!(!o.status.success(), "{args:?} succeeded");
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with(want), "{args:?}: {err}");
        assert!(stdout(&o).is_empty());
    }
}

#[test]
fn quartz_day_rules_on_berlin_dst_days_as_documented() {
    // GIVEN 02:30 on the last Sunday of March in Berlin (in the spring-forward gap every year)
    // WHEN previewed with the default policies THEN each fire is 03:00 CEST (01:00Z); this is
    // the output docs/schedule.md shows.
    let args = ["--tz", "Europe/Berlin", "--after", "2026-01-01T00:00:00Z", "--count", "3"];
    let o = sundial(&[&args[..], &["0 30 2 ? 3 SUNL"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "2026-03-29T01:00:00Z\n2027-03-28T01:00:00Z\n2028-03-26T01:00:00Z\n");
    // AND the last Sunday of October at 02:30 under `both` fires in CEST and again in CET
    let o = sundial(&[
        "--tz",
        "Europe/Berlin",
        "--after",
        "2026-10-01T00:00:00Z",
        "--count",
        "3",
        "--on-overlap",
        "both",
        "0 30 2 ? 10 SUNL",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "2026-10-25T00:30:00Z\n2026-10-25T01:30:00Z\n2027-10-31T00:30:00Z\n");
    // AND an unsupported rule ends with one line naming the field
    let o = sundial(&["0 0 9 ? * MON#6"]);
    assert!(!o.status.success());
    assert_eq!(
        stderr(&o),
        "error: expression: field 6 (day-of-week) 'MON#6': the week number '6' after '#' must be 1 to 5 \
         (MON#2 is the second Monday of the month)\n"
    );
}

#[test]
fn further_expressions_print_the_union_with_the_expression_of_each_fire() {
    // GIVEN weekdays at 09:00 and Saturdays at 12:00, WHEN previewed from Friday 2026-12-04,
    // THEN the fires are the union, each followed by the index of its expression
    let args =
        ["--after", "2026-12-04T10:00:00Z", "--count", "3", "--also", "0 0 12 * * SAT", "0 0 9 * * MON-FRI"];
    let o = sundial(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "2026-12-05T12:00:00Z [1]\n2026-12-07T09:00:00Z [0]\n2026-12-08T09:00:00Z [0]\n");
    // AND a bad one is named by its index in the list
    let o = sundial(&["--also", "0 0 12 * * SAT", "--also", "0 0 25 * * *", "0 0 9 * * *"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("expressions[1]: "), "{}", stderr(&o));
}
