//! Several expressions in one spec: the union of their fires in order, one fire per instant,
//! each credited to the first expression that makes it, under DST policies and a business
//! calendar; and the errors that name `expressions[i]`.
//!
//! Europe/London (tzdb 2025b): 2026-03-29 01:00 GMT -> 02:00 BST at 01:00Z; 2026-10-25
//! 02:00 BST -> 01:00 GMT at 01:00Z.

use std::sync::Arc;

use super::tests::{utc, z};
use super::*;

fn spec(exprs: &[&str], tz: &str) -> ScheduleSpec {
    let mut spec = ScheduleSpec::new(exprs[0], tz);
    spec.expressions = exprs[1..].iter().map(|e| e.to_string()).collect();
    spec
}

fn sched(spec: &ScheduleSpec) -> Schedule {
    Schedule::parse(spec, utc("2026-01-01T00:00:00Z")).unwrap_or_else(|e| panic!("{spec:?}: {e}"))
}

/// Fires in `(after, until]` with the index of the expression of each.
fn fires(s: &Schedule, after: &str, until: &str) -> Vec<(String, Option<usize>)> {
    s.fires_between(utc(after), utc(until), 1000).into_iter().map(|t| (z(t), s.expression_of(t))).collect()
}

fn f(at: &str, i: usize) -> (String, Option<usize>) {
    (at.to_string(), Some(i))
}

#[test]
fn the_union_is_in_time_order_with_the_expression_of_each_fire() {
    // Weekdays at 09:00 and Saturdays at 12:00, in two cron forms and a rate.
    let s = sched(&spec(&["0 0 9 * * MON-FRI", "0 12 * * SAT"], "UTC"));
    assert_eq!(s.expression_count(), 2);
    assert_eq!(
        fires(&s, "2026-03-05T00:00:00Z", "2026-03-10T00:00:00Z"),
        vec![
            f("2026-03-05T09:00:00Z", 0),
            f("2026-03-06T09:00:00Z", 0),
            f("2026-03-07T12:00:00Z", 1),
            f("2026-03-09T09:00:00Z", 0),
        ]
    );
    assert_eq!(s.next_after(utc("2026-03-06T09:00:00Z")), Some(utc("2026-03-07T12:00:00Z")));
    assert_eq!(s.prev_at_or_before(utc("2026-03-09T08:59:59Z")), Some(utc("2026-03-07T12:00:00Z")));
    assert_eq!(s.expression_of(utc("2026-03-07T09:00:00Z")), None, "not a fire of either");
    let preview: Vec<_> = s.preview(utc("2026-03-06T09:00:00Z"), 2).into_iter().map(z).collect();
    assert_eq!(preview, ["2026-03-07T12:00:00Z", "2026-03-09T09:00:00Z"]);
}

#[test]
fn coinciding_instants_make_one_fire_credited_to_the_first_expression() {
    // Every 6 hours, and daily at 12:00 and 13:00: 12:00 is both.
    let s = sched(&spec(&["0 0 */6 * * *", "0 0 12,13 * * *", "rate(1 day)"], "UTC"));
    assert_eq!(
        fires(&s, "2026-03-01T05:00:00Z", "2026-03-01T19:00:00Z"),
        vec![
            f("2026-03-01T06:00:00Z", 0),
            f("2026-03-01T12:00:00Z", 0),
            f("2026-03-01T13:00:00Z", 1),
            f("2026-03-01T18:00:00Z", 0),
        ]
    );
    // The rate anchored at creation (midnight) coincides with the 00:00 cron fire.
    assert_eq!(fires(&s, "2026-03-01T23:00:00Z", "2026-03-02T00:00:00Z"), vec![f("2026-03-02T00:00:00Z", 0)]);
    // A rate with an anchor of its own off the cron grid is its own fire.
    let mut off = spec(&["0 0 */6 * * *", "rate(1 day)"], "UTC");
    off.start = Some(utc("2026-03-01T01:30:00Z"));
    let s = sched(&off);
    assert_eq!(
        fires(&s, "2026-03-01T00:00:00Z", "2026-03-01T07:00:00Z"),
        vec![f("2026-03-01T01:30:00Z", 1), f("2026-03-01T06:00:00Z", 0)]
    );
}

#[test]
fn dst_gap_and_overlap_apply_to_every_expression_in_london() {
    // 01:30 is skipped on the spring-forward day (01:00-02:00 does not exist) and 01:15 too;
    // under `shift` both move to 02:00 BST (01:00Z) and make one fire.
    let both = ["0 30 1 * * *", "0 15 1 * * *"];
    let mut skip = spec(&both, "Europe/London");
    skip.on_gap = GapPolicy::Skip;
    assert_eq!(
        fires(&sched(&skip), "2026-03-28T00:00:00Z", "2026-03-30T02:00:00Z"),
        vec![
            f("2026-03-28T01:15:00Z", 1),
            f("2026-03-28T01:30:00Z", 0),
            f("2026-03-30T00:15:00Z", 1),
            f("2026-03-30T00:30:00Z", 0),
        ]
    );
    let mut shift = skip.clone();
    shift.on_gap = GapPolicy::Shift;
    assert_eq!(
        fires(&sched(&shift), "2026-03-29T00:00:00Z", "2026-03-29T23:00:00Z"),
        vec![f("2026-03-29T01:00:00Z", 0)],
        "both shifted to the end of the gap: one fire"
    );
    // Fall back: 01:15 and 01:30 happen twice (BST 00:xxZ, then GMT 01:xxZ).
    let mut overlap = spec(&both, "Europe/London");
    overlap.on_overlap = OverlapPolicy::Both;
    assert_eq!(
        fires(&sched(&overlap), "2026-10-24T23:00:00Z", "2026-10-25T03:00:00Z"),
        vec![
            f("2026-10-25T00:15:00Z", 1),
            f("2026-10-25T00:30:00Z", 0),
            f("2026-10-25T01:15:00Z", 1),
            f("2026-10-25T01:30:00Z", 0),
        ]
    );
    overlap.on_overlap = OverlapPolicy::Last;
    assert_eq!(
        fires(&sched(&overlap), "2026-10-24T23:00:00Z", "2026-10-25T03:00:00Z"),
        vec![f("2026-10-25T01:15:00Z", 1), f("2026-10-25T01:30:00Z", 0)]
    );
}

#[test]
fn a_business_calendar_rolls_every_expression_and_merges_what_lands_together() {
    // 2026-03-06 is a Friday and a holiday; 2026-03-09 the Monday after.
    let days = Arc::new(
        BusinessDays::single(
            "cal",
            1,
            &BusinessCalendarSpec { holidays: vec!["2026-03-06".into()], ..Default::default() },
        )
        .unwrap_or_else(|e| panic!("{e}")),
    );
    let mut s = spec(&["0 0 9 * * FRI", "0 0 9 * * MON"], "UTC");
    s.business_calendar = Some(BusinessCalendarRef { calendar: "cal".into(), roll: Roll::Following });
    let s =
        Schedule::parse_with(&s, utc("2026-01-01T00:00:00Z"), Some(days)).unwrap_or_else(|e| panic!("{e}"));
    // Friday's fire rolls (Sat, Sun are rest days) to Monday 09:00, where Monday's fires anyway:
    // one fire, the first expression's.
    assert_eq!(
        fires(&s, "2026-03-01T00:00:00Z", "2026-03-14T00:00:00Z"),
        vec![f("2026-03-02T09:00:00Z", 1), f("2026-03-09T09:00:00Z", 0), f("2026-03-13T09:00:00Z", 0)]
    );
    let lines = s.preview_explained(utc("2026-03-03T00:00:00Z"), 2);
    let fires: Vec<_> =
        lines.iter().filter(|l| matches!(l, PreviewFire::Fire { .. })).map(|l| z(l.at())).collect();
    assert_eq!(fires, ["2026-03-09T09:00:00Z", "2026-03-13T09:00:00Z"]);
    assert!(
        matches!(&lines[0], PreviewFire::Fire { rolled_from: Some(r), .. } if *r == utc("2026-03-06T09:00:00Z")),
        "{lines:?}"
    );
    let origin = s.explain_fire(utc("2026-03-09T09:00:00Z"), 5).unwrap_or_else(|| panic!("explained"));
    assert_eq!(origin.rolled_from, Some(utc("2026-03-06T09:00:00Z")));
}

#[test]
fn errors_name_the_item_of_expressions() {
    let at = utc("2026-01-01T00:00:00Z");
    let e = Schedule::parse(&spec(&["0 9 * * *", "0 0 10 * * *", "0 61 * * *"], "UTC"), at).unwrap_err();
    assert_eq!(e.field(), "expressions[1]");
    assert!(e.to_string().starts_with("expressions[1]: "), "{e}");
    // The same instants spelled another way.
    let e = Schedule::parse(&spec(&["0 9 * * *", "0 0 10 * * *", "0 0 9 * * *"], "UTC"), at).unwrap_err();
    assert_eq!(e.field(), "expressions[1]");
    assert!(e.reason().contains("fires exactly as expression"), "{e}");
    let e = Schedule::parse(&spec(&["0 9 * * *", "0 0 10 * * *", "0 10 * * *"], "UTC"), at).unwrap_err();
    assert!(e.reason().contains("expressions[0]"), "{e}");
    // `expression` is still `expression`.
    let e = Schedule::parse(&spec(&["nope", "0 0 10 * * *"], "UTC"), at).unwrap_err();
    assert_eq!(e.field(), "expression");
    let mut too_many = ScheduleSpec::new("0 0 8 * * *", "UTC");
    too_many.expressions = (0..=MAX_EXTRA_EXPRESSIONS).map(|m| format!("0 {m} 9 * * *")).collect();
    assert_eq!(Schedule::parse(&too_many, at).unwrap_err().field(), "expressions[10]");
    too_many.expressions.pop();
    assert_eq!(Schedule::parse(&too_many, at).map(|s| s.expression_count()).ok(), Some(11));
}

#[test]
fn the_spec_round_trips_and_omits_an_empty_list() {
    let one = ScheduleSpec::new("0 0 9 * * *", "UTC");
    let json = serde_json::to_value(&one).unwrap_or_default();
    assert!(json.get("expressions").is_none(), "{json}");
    let two: ScheduleSpec = serde_json::from_value(serde_json::json!({
        "expression": "0 0 9 * * *", "expressions": ["0 0 18 * * FRI"], "timezone": "UTC"
    }))
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(two.all_expressions().collect::<Vec<_>>(), ["0 0 9 * * *", "0 0 18 * * FRI"]);
    assert_eq!(two.expression_at(1), Some("0 0 18 * * FRI"));
    assert_eq!(two.expression_at(2), None);
}
