//! Property tests of the schedule engine.
//!
//! The strongest one compares the engine with a brute-force oracle: around a real DST
//! transition, walk every UTC second, ask "is its local wall time a fire of this expression,
//! and does the overlap policy keep this occurrence?", and add the gap's end for `shift` when a
//! missing wall time matched. The engine must return exactly that set, in order.

use std::collections::HashMap;

use chrono::{DateTime, Datelike, Duration, LocalResult, Offset, TimeZone, Utc};
use chrono_tz::Tz;
use proptest::prelude::*;

use super::tests::utc;
use super::*;
use crate::schedule::Kind;

pub(super) const ZONES: &[&str] = &[
    "America/New_York",
    "Europe/London",
    "Australia/Sydney",
    "Australia/Lord_Howe",
    "America/Santiago",
    "America/Havana",
    "Pacific/Chatham",
    "Antarctica/Troll",
    "Asia/Tehran",
    "America/St_Johns",
];

const SECONDS: &[&str] = &["0", "*", "*/15", "30", "0,45", "*/7"];
const MINUTES: &[&str] = &["0", "*", "*/15", "30", "0,30", "*/7", "45", "10-20"];
const HOURS: &[&str] = &["*", "0", "1", "2", "1-3", "*/2", "0-4", "23"];
// Quartz day rules ride along: the transitions of London, Sydney and New York fall on the
// last, first or second Sunday of a month.
const DOMS: &[&str] = &["*", "*", "1-15", "?", "L", "LW", "L-2", "1W"];
const DOWS: &[&str] = &["*", "*", "2-6", "1,7", "SUNL", "SUN#1", "SUN#2"];

fn offset_at(tz: Tz, t: i64) -> i64 {
    let t = DateTime::from_timestamp(t, 0).unwrap();
    i64::from(t.with_timezone(&tz).offset().fix().local_minus_utc())
}

/// Every offset change of `tz` in 2005..2031: (instant, offset before, offset after).
fn transitions(tz: Tz) -> Vec<Transition> {
    let from = utc("2005-01-01T00:00:00Z").timestamp();
    let to = utc("2031-01-01T00:00:00Z").timestamp();
    let step = 6 * 3600;
    let mut out = Vec::new();
    let mut t = from;
    while t < to {
        let (a, b) = (offset_at(tz, t), offset_at(tz, t + step));
        if a != b {
            let (mut lo, mut hi) = (t, t + step);
            while hi - lo > 1 {
                let mid = (lo + hi) / 2;
                if offset_at(tz, mid) == a {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            out.push((hi, a, b));
        }
        t += step;
    }
    out
}

/// (instant, offset before, offset after), Unix seconds.
pub(super) type Transition = (i64, i64, i64);

pub(super) fn transitions_cached(zone: &str) -> Vec<Transition> {
    use std::sync::{Mutex, OnceLock};
    static CACHE: OnceLock<Mutex<HashMap<String, Vec<Transition>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let mut map = cache.lock().unwrap();
    map.entry(zone.to_string()).or_insert_with(|| transitions(zone.parse().unwrap())).clone()
}

/// The fires in `(from, to]` by brute force over every UTC second.
fn oracle(s: &Schedule, from: i64, to: i64) -> Vec<DateTime<Utc>> {
    let Kind::Cron(c) = &s.kind else { unreachable!() };
    let tz = s.zone.tz();
    let mut out = Vec::new();
    for t in (from + 1)..=to {
        let inst = DateTime::from_timestamp(t, 0).unwrap();
        let wall = inst.with_timezone(&tz).naive_local();
        if !c.matches(wall) || s.exclusions.excludes(wall.date()) {
            continue;
        }
        let keep = match tz.from_local_datetime(&wall) {
            LocalResult::Ambiguous(e, l) => match s.on_overlap {
                OverlapPolicy::First => e.with_timezone(&Utc) == inst,
                OverlapPolicy::Last => l.with_timezone(&Utc) == inst,
                OverlapPolicy::Both => true,
            },
            _ => true,
        };
        if keep {
            out.push(inst);
        }
    }
    if s.on_gap == GapPolicy::Shift {
        for (at, before, after) in transitions_cached(tz.name()) {
            if after > before && at > from && at <= to {
                // Missing wall times: [at + before, at + after).
                let hit = (before..after).any(|o| {
                    let w = DateTime::from_timestamp(at + o, 0).unwrap().naive_utc();
                    c.matches(w) && !s.exclusions.excludes(w.date())
                });
                if hit {
                    out.push(DateTime::from_timestamp(at, 0).unwrap());
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

fn cron_text() -> impl Strategy<Value = String> {
    (
        prop::sample::select(SECONDS),
        prop::sample::select(MINUTES),
        prop::sample::select(HOURS),
        prop::sample::select(DOMS),
        prop::sample::select(DOWS),
        any::<bool>(),
    )
        .prop_map(|(s, m, h, dom, dow, unix)| {
            if unix {
                // The 5-field form; its dow numbers mean something else, which is fine here.
                format!("{m} {h} {dom} * {}", if dow == "1,7" { "0,6" } else { dow })
            } else {
                // AND of two day fields with a rule may never match (LW and a weekend day):
                // a rule keeps the other day field unrestricted in this form.
                let rule = |f: &str| f.contains(['L', 'W', '#']);
                let dow = if rule(dom) || rule(dow) && dom != "?" && dom != "*" { "*" } else { dow };
                format!("{s} {m} {h} {dom} * {dow}")
            }
        })
}

fn gap() -> impl Strategy<Value = GapPolicy> {
    prop_oneof![Just(GapPolicy::Skip), Just(GapPolicy::Shift)]
}

fn overlap() -> impl Strategy<Value = OverlapPolicy> {
    prop_oneof![Just(OverlapPolicy::First), Just(OverlapPolicy::Last), Just(OverlapPolicy::Both)]
}

fn weekdays() -> impl Strategy<Value = Vec<String>> {
    prop::sample::subsequence(vec!["mon", "tue", "wed", "thu", "fri", "sat"], 0..3)
        .prop_map(|v| v.into_iter().map(String::from).collect())
}

fn parse(expr: &str, zone: &str, gap: GapPolicy, overlap: OverlapPolicy, excl: Vec<String>) -> Schedule {
    let mut spec = ScheduleSpec::new(expr, zone);
    spec.on_gap = gap;
    spec.on_overlap = overlap;
    spec.exclusions.weekdays = excl;
    Schedule::parse(&spec, utc("2020-01-01T00:00:00Z")).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// The engine returns exactly the brute-force set of fires around real transitions.
    #[test]
    fn matches_brute_force_oracle_around_transitions(
        zone in prop::sample::select(ZONES),
        pick in any::<prop::sample::Index>(),
        expr in cron_text(),
        gap in gap(),
        overlap in overlap(),
        excl in weekdays(),
        before in 0i64..4 * 3600,
        after in 0i64..4 * 3600,
    ) {
        let tr = transitions_cached(zone);
        prop_assume!(!tr.is_empty());
        let (at, _, _) = tr[pick.index(tr.len())];
        let s = parse(&expr, zone, gap, overlap, excl);
        let (from, to) = (at - before - 1, at + after);
        let got = s.fires_between(DateTime::from_timestamp(from, 0).unwrap(), DateTime::from_timestamp(to, 0).unwrap(), 1_000_000);
        let want = oracle(&s, from, to);
        prop_assert_eq!(got, want, "{} in {} {:?}/{:?}", expr, zone, gap, overlap);
    }

    /// Fires strictly increase, are after `after`, and `prev_at_or_before` walks them back.
    #[test]
    fn fires_strictly_increase_and_prev_agrees(
        zone in prop::sample::select(ZONES),
        expr in cron_text(),
        gap in gap(),
        overlap in overlap(),
        start in utc("2015-01-01T00:00:00Z").timestamp()..utc("2030-01-01T00:00:00Z").timestamp(),
    ) {
        let s = parse(&expr, zone, gap, overlap, vec![]);
        let after = DateTime::from_timestamp(start, 0).unwrap();
        let fires = s.preview(after, 300);
        prop_assert!(fires.first().is_none_or(|f| *f > after));
        for w in fires.windows(2) {
            prop_assert!(w[0] < w[1], "{:?}", w);
            prop_assert_eq!(s.prev_at_or_before(w[1] - Duration::nanoseconds(1)), Some(w[0]));
        }
    }

    /// No fire falls on an excluded local date or weekday.
    #[test]
    fn no_fire_in_an_exclusion(
        zone in prop::sample::select(ZONES),
        expr in prop_oneof![cron_text(), Just("rate(7 hours)".to_string()), Just("rate(1 days)".to_string())],
        excl in weekdays(),
        days in prop::collection::vec(0u32..60, 0..20),
        start in utc("2020-01-01T00:00:00Z").timestamp()..utc("2028-01-01T00:00:00Z").timestamp(),
    ) {
        let after = DateTime::from_timestamp(start, 0).unwrap();
        let base = after.date_naive();
        let dates: Vec<String> = days.iter().map(|d| (base + chrono::Days::new(u64::from(*d))).to_string()).collect();
        let mut spec = ScheduleSpec::new(expr.as_str(), zone);
        spec.exclusions = Calendar { dates: dates.clone(), weekdays: excl.clone() };
        let s = Schedule::parse(&spec, after).unwrap();
        let tz: Tz = zone.parse().unwrap();
        for f in s.preview(after, 500) {
            let d = f.with_timezone(&tz).date_naive();
            prop_assert!(!dates.contains(&d.to_string()), "{} on excluded {}", f, d);
            let wd = d.weekday().to_string().to_lowercase();
            prop_assert!(!excl.contains(&wd), "{} on excluded {}", f, wd);
        }
    }

    /// rate(): no drift over 10,000 successive fires, each computed from the previous one.
    #[test]
    fn rate_does_not_drift(
        period in 1i64..200_000,
        anchor in utc("2015-01-01T00:00:00Z").timestamp()..utc("2030-01-01T00:00:00Z").timestamp(),
        zone in prop::sample::select(ZONES),
    ) {
        let spec = ScheduleSpec::new(format!("rate({period} seconds)"), zone);
        let a = DateTime::from_timestamp(anchor, 0).unwrap();
        let s = Schedule::parse(&spec, a).unwrap();
        let mut cursor = a - Duration::seconds(1);
        for k in 0..10_000i64 {
            let f = s.next_after(cursor).unwrap();
            prop_assert_eq!(f.timestamp(), anchor + k * period);
            cursor = f;
        }
    }

    /// cron: every-N-seconds fires stay on the grid over 10,000 successive fires.
    #[test]
    fn cron_does_not_drift(n in prop::sample::select(vec![1i64, 2, 5, 10, 15, 30]), start in 0i64..1_000_000_000) {
        let s = parse(&format!("*/{n} * * * * *"), "Asia/Shanghai", GapPolicy::Skip, OverlapPolicy::First, vec![]);
        let mut cursor = DateTime::from_timestamp(1_600_000_000 + start, 0).unwrap();
        let first = s.next_after(cursor).unwrap();
        for k in 0..10_000i64 {
            let f = s.next_after(cursor).unwrap();
            prop_assert_eq!(f.timestamp(), first.timestamp() + k * n);
            cursor = f;
        }
    }

    /// `skip` + `first`: never two fires for one local time. `both`: a repeated local time that
    /// matches fires exactly twice, any other exactly once.
    #[test]
    fn one_fire_per_local_time_or_exactly_two_with_both(
        zone in prop::sample::select(ZONES),
        pick in any::<prop::sample::Index>(),
        expr in cron_text(),
    ) {
        let tr = transitions_cached(zone);
        prop_assume!(!tr.is_empty());
        let (at, _, _) = tr[pick.index(tr.len())];
        let tz: Tz = zone.parse().unwrap();
        let from = DateTime::from_timestamp(at - 3 * 3600, 0).unwrap();
        let to = DateTime::from_timestamp(at + 3 * 3600, 0).unwrap();

        let s = parse(&expr, zone, GapPolicy::Skip, OverlapPolicy::First, vec![]);
        let mut seen = HashMap::new();
        for f in s.fires_between(from, to, 1_000_000) {
            let n = seen.entry(f.with_timezone(&tz).naive_local()).or_insert(0);
            *n += 1;
            prop_assert_eq!(*n, 1, "two fires for local {}", f.with_timezone(&tz).naive_local());
        }

        let s = parse(&expr, zone, GapPolicy::Skip, OverlapPolicy::Both, vec![]);
        let mut counts: HashMap<_, u32> = HashMap::new();
        for f in s.fires_between(from, to, 1_000_000) {
            *counts.entry(f.with_timezone(&tz).naive_local()).or_default() += 1;
        }
        for (wall, n) in counts {
            let want = match tz.from_local_datetime(&wall) {
                // Both occurrences must lie inside the window to be counted twice.
                LocalResult::Ambiguous(e, l) if e.with_timezone(&Utc) > from && l.with_timezone(&Utc) <= to => 2,
                LocalResult::Ambiguous(..) => n.min(2),
                _ => 1,
            };
            prop_assert_eq!(n, want, "local {}", wall);
        }
    }

    /// Misfire plans: every planned fire is a real fire in (last, now], ascending; counts add
    /// up against `fires_between`; the resume point is the latest due fire.
    #[test]
    fn misfire_plans_are_consistent(
        zone in prop::sample::select(ZONES),
        expr in cron_text(),
        overlap in overlap(),
        last in utc("2020-01-01T00:00:00Z").timestamp()..utc("2029-01-01T00:00:00Z").timestamp(),
        outage in 0i64..30_000,
        threshold in 0i64..600,
        policy in prop_oneof![
            Just(MisfirePolicy::FireOnce),
            Just(MisfirePolicy::Skip),
            (0u32..20).prop_map(|cap| MisfirePolicy::FireAll { cap }),
        ],
    ) {
        let s = parse(&expr, zone, GapPolicy::Shift, overlap, vec![]);
        let last = DateTime::from_timestamp(last, 0).unwrap();
        let now = last + Duration::seconds(outage);
        let cutoff = now - Duration::seconds(threshold);
        let due = s.fires_between(last, now, 1_000_000);
        let missed: Vec<_> = due.iter().copied().filter(|f| *f < cutoff).collect();
        let ordinary: Vec<_> = due.iter().copied().filter(|f| *f >= cutoff).collect();
        let p = plan_misfire(&s, last, now, &policy, Duration::seconds(threshold));

        prop_assert!(!p.missed_truncated);
        prop_assert_eq!(p.missed, missed.len() as u64);
        prop_assert_eq!(p.resume_after, due.last().copied().unwrap_or(last));
        for w in p.fires.windows(2) {
            prop_assert!(w[0].scheduled_at < w[1].scheduled_at);
        }
        for f in &p.fires {
            prop_assert!(due.contains(&f.scheduled_at));
        }
        let tail: Vec<_> = p.fires.iter().filter(|f| f.scheduled_at >= cutoff).map(|f| f.scheduled_at).collect();
        prop_assert_eq!(tail, ordinary);
        let planned_missed: Vec<_> = p.fires.iter().filter(|f| f.scheduled_at < cutoff).collect();
        match policy {
            MisfirePolicy::FireOnce => {
                if missed.is_empty() {
                    prop_assert!(planned_missed.is_empty());
                } else {
                    prop_assert_eq!(planned_missed.len(), 1);
                    let (a, b) = (missed[0], *missed.last().unwrap());
                    prop_assert_eq!(planned_missed[0].scheduled_at, a);
                    prop_assert_eq!(planned_missed[0].missed_range, Some((a, b)));
                }
                prop_assert_eq!(p.skipped, 0);
            }
            MisfirePolicy::FireAll { cap } => {
                let keep = missed.len().min(cap as usize);
                let want: Vec<_> = missed[missed.len() - keep..].to_vec();
                let got: Vec<_> = planned_missed.iter().map(|f| f.scheduled_at).collect();
                prop_assert_eq!(got, want);
                prop_assert_eq!(p.skipped, (missed.len() - keep) as u64);
            }
            MisfirePolicy::Skip => {
                prop_assert!(planned_missed.is_empty());
                prop_assert_eq!(p.skipped, missed.len() as u64);
            }
        }
        // The job resumes after now.
        prop_assert!(s.next_after(p.resume_after).is_none_or(|f| f > now));
    }

    /// Arbitrary text never panics the parser, and a parsed schedule never panics computing.
    #[test]
    fn arbitrary_input_never_panics(expr in ".{0,40}", zone in ".{0,20}", t in any::<i32>()) {
        let mut spec = ScheduleSpec::new(expr.as_str(), zone.as_str());
        spec.exclusions.dates = vec![zone.clone()];
        match Schedule::parse(&spec, utc("2026-01-01T00:00:00Z")) {
            Ok(s) => {
                let after = DateTime::from_timestamp(i64::from(t), 0).unwrap();
                let _ = s.preview(after, 3);
                let _ = s.prev_at_or_before(after);
            }
            Err(e) => prop_assert!(!e.to_string().contains(['\n', '\r']), "{:?}", e.to_string()),
        }
        spec.timezone = "UTC".into();
        spec.exclusions.dates.clear();
        if let Err(e) = Schedule::parse(&spec, utc("2026-01-01T00:00:00Z")) {
            prop_assert!(!e.to_string().contains(['\n', '\r']), "{:?}", e.to_string());
        }
    }

    /// Arbitrary cron-looking field soup never panics either.
    #[test]
    fn cron_like_input_never_panics(expr in "[0-9*/,?LW#a-zA-Z -]{0,30}") {
        let spec = ScheduleSpec::new(expr.as_str(), "Europe/London");
        if let Ok(s) = Schedule::parse(&spec, utc("2026-01-01T00:00:00Z")) {
            let fires = s.preview(utc("2026-01-01T00:00:00Z"), 3);
            for w in fires.windows(2) {
                prop_assert!(w[0] < w[1]);
            }
        }
    }
}

/// The matrix, deterministically: five zones, both 2026 transitions (where there are
/// any), daily / hourly / every-15-minutes / every-second, every gap and overlap policy, each
/// checked against the oracle over three hours either side of the transition.
#[test]
fn dst_matrix_matches_oracle() {
    let zones =
        ["America/New_York", "Europe/London", "Asia/Shanghai", "Australia/Sydney", "Australia/Lord_Howe"];
    let exprs = ["0 30 2 * * *", "0 0 * * * *", "0 */15 * * * *", "* * * * * *", "15 1 * * *"];
    let mut checked = 0;
    for zone in zones {
        let tz: Tz = zone.parse().unwrap();
        let mut windows: Vec<i64> = transitions(tz)
            .into_iter()
            .map(|(at, _, _)| at)
            .filter(|at| {
                (utc("2026-01-01T00:00:00Z").timestamp()..utc("2027-01-01T00:00:00Z").timestamp())
                    .contains(at)
            })
            .collect();
        if windows.is_empty() {
            // Asia/Shanghai: no transition; check an ordinary night instead.
            windows.push(utc("2026-03-08T18:00:00Z").timestamp());
        }
        for at in windows {
            for expr in exprs {
                for gap in [GapPolicy::Skip, GapPolicy::Shift] {
                    for overlap in [OverlapPolicy::First, OverlapPolicy::Last, OverlapPolicy::Both] {
                        let s = parse(expr, zone, gap, overlap, vec![]);
                        let (from, to) = (at - 3 * 3600, at + 3 * 3600);
                        let got = s.fires_between(
                            DateTime::from_timestamp(from, 0).unwrap(),
                            DateTime::from_timestamp(to, 0).unwrap(),
                            1_000_000,
                        );
                        assert_eq!(
                            got,
                            oracle(&s, from, to),
                            "{expr} in {zone} {gap:?}/{overlap:?} near {at}"
                        );
                        checked += 1;
                    }
                }
            }
        }
    }
    assert_eq!(checked, 9 * 5 * 6, "4 zones x 2 transitions + Shanghai, 5 expressions, 6 policies");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Several expressions fire at the sorted union of each one's fires (each instant once),
    /// `expression_of` names the first expression that fires at each, and `prev_at_or_before`
    /// walks the union back.
    #[test]
    fn several_expressions_fire_at_the_union(
        zone in prop::sample::select(ZONES),
        exprs in prop::collection::vec(cron_text(), 2..4),
        gap in gap(),
        overlap in overlap(),
        start in utc("2024-01-01T00:00:00Z").timestamp()..utc("2028-01-01T00:00:00Z").timestamp(),
    ) {
        let mut texts = exprs.clone();
        texts.dedup();
        let singles: Vec<Schedule> = texts.iter().map(|e| parse(e, zone, gap, overlap, vec![])).collect();
        // Two spellings of one expression are refused; keep the first of each.
        let mut kept: Vec<usize> = Vec::new();
        for (i, s) in singles.iter().enumerate() {
            if !kept.iter().any(|&k| singles[k].normalized == s.normalized) {
                kept.push(i);
            }
        }
        prop_assume!(kept.len() >= 2);
        let mut spec = ScheduleSpec::new(texts[kept[0]].clone(), zone);
        spec.expressions = kept[1..].iter().map(|&i| texts[i].clone()).collect();
        spec.on_gap = gap;
        spec.on_overlap = overlap;
        let union = Schedule::parse(&spec, utc("2020-01-01T00:00:00Z")).unwrap();
        let (from, to) = (DateTime::from_timestamp(start, 0).unwrap(), DateTime::from_timestamp(start + 40 * 86_400, 0).unwrap());
        let per: Vec<Vec<DateTime<Utc>>> = kept.iter().map(|&i| singles[i].fires_between(from, to, 500)).collect();
        let got = union.fires_between(from, to, 500);
        let mut want: Vec<DateTime<Utc>> = per.iter().flatten().copied().collect();
        want.sort();
        want.dedup();
        want.truncate(500);
        prop_assert_eq!(&got, &want, "{:?} in {}", spec.all_expressions().collect::<Vec<_>>(), zone);
        let mut prev = None;
        for f in &got {
            let first = per.iter().position(|p| p.contains(f));
            prop_assert_eq!(union.expression_of(*f), first, "{}", f);
            prop_assert_eq!(union.prev_at_or_before(*f - Duration::nanoseconds(1)).filter(|p| *p > from), prev);
            prev = Some(*f);
        }
        prop_assert_eq!(union.expression_of(from + Duration::milliseconds(500)), None);
    }
}
