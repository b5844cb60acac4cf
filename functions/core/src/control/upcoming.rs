//! What a job will do next, as a reader of the job wants it: its real next fire, and its
//! upcoming fires annotated with the daylight-saving transitions they cross.
//!
//! Why the stored position is not enough: an every-minute or daily job is moved into its
//! class once and then never advanced (its position is the shard watermark, README
//! "Every-minute class"), so its stored `next` stays at the fire where it entered the class.

use chrono::{DateTime, Duration, Utc};
use sundial_model::{DueClass, Job, JobState};
use sundial_schedule::{PreviewFire, Schedule};

/// The job's next fire not yet due at `now`: the stored trigger position, except for jobs
/// whose position is the shard watermark (every-minute and daily classes), where a stored
/// position in the past means "already fired"; for those, the schedule's first fire at or
/// after `now`. A stored position in the past of any other class is a fire still pending
/// (late), so it is shown as is. `None` when the job is not enabled or the schedule is done.
pub fn next_fire(job: &Job, schedule: Option<&Schedule>, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    if job.state != JobState::Enabled {
        return None;
    }
    let stored = job.next_fire_at?;
    let watermark_class = matches!(job.due_class, DueClass::Every | DueClass::Daily(_));
    if stored >= now || !watermark_class {
        return Some(stored);
    }
    match schedule {
        Some(s) => s.next_after(now - Duration::milliseconds(1)),
        None => Some(stored),
    }
}

use chrono::{NaiveDateTime, Offset, TimeZone};
use chrono_tz::Tz;
use sundial_schedule::{GapPolicy, OverlapPolicy, ScheduleSpec};

/// Most fires one upcoming answer lists (an every-minute job has 40 320 in four weeks).
pub const MAX_UPCOMING_FIRES: usize = 500;

/// Upcoming fires in a window, and the daylight-saving transitions the window crosses.
#[derive(Debug, Clone, PartialEq)]
pub struct Upcoming {
    /// The fires, ascending (at most [`MAX_UPCOMING_FIRES`]).
    pub fires: Vec<DateTime<Utc>>,
    /// Whether more fires were left out.
    pub truncated: bool,
    /// The zone's transitions in the window, with what the job's policy does to its fires.
    pub transitions: Vec<Transition>,
    /// With a business calendar: the fires explained (rolled from where and why) and the
    /// instants the calendar removed, up to the last fire listed ([`Schedule::preview_explained`]).
    pub explained: Option<Vec<PreviewFire>>,
    /// With several expressions: the one that makes each fire, in the order of `fires`
    /// ([`expressions_of`]).
    pub expressions: Option<Vec<usize>>,
}

/// The expression that makes each of `fires` (0: `expression`, i + 1: `expressions[i]`), or
/// `None` for a schedule of one expression. A fire the schedule does not make counts as 0
/// (cannot happen for fires it listed).
pub fn expressions_of(schedule: &Schedule, fires: &[DateTime<Utc>]) -> Option<Vec<usize>> {
    (schedule.expression_count() > 1)
        .then(|| fires.iter().map(|f| schedule.expression_of(*f).unwrap_or(0)).collect())
}

/// Which way the clocks move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shift {
    /// Forward: a range of wall times does not exist.
    Gap,
    /// Back: a range of wall times happens twice.
    Overlap,
}

/// One change of the zone's UTC offset.
#[derive(Debug, Clone, PartialEq)]
pub struct Transition {
    /// The first instant under the new offset.
    pub at: DateTime<Utc>,
    /// Gap or overlap.
    pub kind: Shift,
    /// UTC offsets (seconds) before and after.
    pub offset_before: i32,
    /// After.
    pub offset_after: i32,
    /// The wall times that are missing (gap) or repeated (overlap): `[from, to)`.
    pub local_from: NaiveDateTime,
    /// End of that range (exclusive).
    pub local_to: NaiveDateTime,
    /// In words.
    pub note: String,
    /// The job's scheduled wall times in that range, and what its policy made of each.
    pub affected: Vec<Affected>,
}

/// A scheduled wall time inside a gap or an overlap.
#[derive(Debug, Clone, PartialEq)]
pub struct Affected {
    /// The wall time the schedule names.
    pub local: NaiveDateTime,
    /// The fire it became (`None`: skipped).
    pub at: Option<DateTime<Utc>>,
    /// In words: "02:30 does not exist on 2027-03-14; shifted to 03:00 (onGap shift)".
    pub note: String,
}

fn offset(tz: &Tz, t: DateTime<Utc>) -> i32 {
    tz.offset_from_utc_datetime(&t.naive_utc()).fix().local_minus_utc()
}

/// The zone's offset changes in `[from, to)`: hourly samples, then bisection to the second
/// (every transition in the tz database is at least hours apart and on a whole second).
fn offset_changes(tz: &Tz, from: DateTime<Utc>, to: DateTime<Utc>) -> Vec<(DateTime<Utc>, i32, i32)> {
    let mut out = Vec::new();
    let mut t = from;
    let mut before = offset(tz, t);
    while t < to {
        let next = (t + Duration::hours(1)).min(to);
        let after = offset(tz, next);
        if after != before {
            let (mut lo, mut hi) = (t, next);
            while hi - lo > Duration::seconds(1) {
                let mid = lo + (hi - lo) / 2;
                if offset(tz, mid) == before {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            out.push((hi, before, after));
            before = after;
        }
        t = next;
    }
    out
}

fn hm(t: NaiveDateTime) -> String {
    t.format("%H:%M").to_string()
}

fn offset_text(secs: i32) -> String {
    let sign = if secs < 0 { '−' } else { '+' };
    let a = secs.abs();
    format!("UTC{sign}{:02}:{:02}", a / 3600, (a % 3600) / 60)
}

/// The wall times in `[from, to)` that the expressions name, found by reading the same
/// expressions as if the zone were UTC (wall time = UTC time there). `rate()` expressions fire
/// on absolute instants, so no wall time of theirs is ever in a gap.
fn nominal_walls(spec: &ScheduleSpec, from: NaiveDateTime, to: NaiveDateTime) -> Vec<NaiveDateTime> {
    let mut walls = spec
        .all_expressions()
        .filter(|e| !e.trim().to_ascii_lowercase().starts_with("rate"))
        .map(String::from);
    let Some(first) = walls.next() else { return Vec::new() };
    let mut utc = ScheduleSpec::new(first, "UTC");
    utc.expressions = walls.collect();
    utc.exclusions = spec.exclusions.clone();
    let Ok(s) = Schedule::parse(&utc, from.and_utc()) else { return Vec::new() };
    let mut out = Vec::new();
    let mut cursor = from.and_utc() - Duration::milliseconds(1);
    while let Some(f) = s.next_after(cursor) {
        if f >= to.and_utc() || out.len() >= 120 {
            break;
        }
        out.push(f.naive_utc());
        cursor = f;
    }
    out
}

/// The job's fires in `(from, to]` (at most [`MAX_UPCOMING_FIRES`]) and the transitions of its
/// zone in that window, each with the scheduled wall times it touches and what the job's
/// `onGap` / `onOverlap` policy does with them.
pub fn upcoming(
    spec: &ScheduleSpec,
    schedule: &Schedule,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Upcoming {
    let (fires, truncated) = fires_in(schedule, from, to);
    let tz = schedule.timezone();
    let transitions = offset_changes(&tz, from, to)
        .into_iter()
        .map(|(at, before, after)| transition(spec, &tz, at, before, after))
        .collect();
    // The same search again with reasons, over the fires listed only (none: nothing to explain,
    // and an explained preview of no fires would look a year ahead).
    let explained = schedule.business_calendar().map(|_| match fires.first() {
        Some(_) => schedule.preview_explained(from, fires.len()),
        None => Vec::new(),
    });
    let expressions = expressions_of(schedule, &fires);
    Upcoming { fires, truncated, transitions, explained, expressions }
}

/// The fires in `(from, to]`, at most [`MAX_UPCOMING_FIRES`]; true if there were more.
fn fires_in(schedule: &Schedule, from: DateTime<Utc>, to: DateTime<Utc>) -> (Vec<DateTime<Utc>>, bool) {
    let mut fires = Vec::new();
    let mut cursor = from;
    while let Some(f) = schedule.next_after(cursor) {
        if f > to {
            break;
        }
        if fires.len() == MAX_UPCOMING_FIRES {
            return (fires, true);
        }
        fires.push(f);
        cursor = f;
    }
    (fires, false)
}

/// One offset change of the zone at `at` (`before` → `after`, seconds east of UTC): the local
/// window it skips or repeats, a sentence for people, and the job's wall times inside it.
fn transition(spec: &ScheduleSpec, tz: &Tz, at: DateTime<Utc>, before: i32, after: i32) -> Transition {
    let delta = after - before;
    let (kind, local_from, local_to) = if delta > 0 {
        let b = at.naive_utc() + Duration::seconds(i64::from(before));
        (Shift::Gap, b, b + Duration::seconds(i64::from(delta)))
    } else {
        let b = at.naive_utc() + Duration::seconds(i64::from(after));
        (Shift::Overlap, b, b - Duration::seconds(i64::from(delta)))
    };
    let day = local_from.format("%Y-%m-%d");
    let last = local_to - Duration::minutes(1);
    let what = match kind {
        Shift::Gap => "go forward",
        Shift::Overlap => "go back",
    };
    let span = match kind {
        Shift::Gap => "do not exist",
        Shift::Overlap => "happen twice",
    };
    let note = format!(
        "Clocks {what} on {day} in {tz}: {}–{} {span} ({} → {})",
        hm(local_from),
        hm(last),
        offset_text(before),
        offset_text(after)
    );
    let affected = nominal_walls(spec, local_from, local_to)
        .into_iter()
        .flat_map(|w| affected(spec, kind, w, at, (before, after), local_to))
        .collect();
    Transition { at, kind, offset_before: before, offset_after: after, local_from, local_to, note, affected }
}

/// What the job's policy does with its wall time `w` inside a gap or an overlap.
fn affected(
    spec: &ScheduleSpec,
    kind: Shift,
    w: NaiveDateTime,
    at: DateTime<Utc>,
    (before, after): (i32, i32),
    local_to: NaiveDateTime,
) -> Vec<Affected> {
    let date = w.format("%Y-%m-%d");
    match kind {
        Shift::Gap => match spec.on_gap {
            GapPolicy::Shift => vec![Affected {
                local: w,
                at: Some(at),
                note: format!(
                    "{} does not exist on {date}; shifted to {} (onGap shift)",
                    hm(w),
                    hm(local_to)
                ),
            }],
            GapPolicy::Skip => vec![Affected {
                local: w,
                at: None,
                note: format!("{} does not exist on {date}; skipped (onGap skip)", hm(w)),
            }],
        },
        Shift::Overlap => {
            let first = w.and_utc() - Duration::seconds(i64::from(before));
            let second = w.and_utc() - Duration::seconds(i64::from(after));
            let (runs, how) = match spec.on_overlap {
                OverlapPolicy::First => (vec![first], "runs once, at the first (onOverlap first)"),
                OverlapPolicy::Last => (vec![second], "runs once, at the second (onOverlap last)"),
                OverlapPolicy::Both => (vec![first, second], "runs twice (onOverlap both)"),
            };
            runs.into_iter()
                .map(|r| Affected {
                    local: w,
                    at: Some(r),
                    note: format!("{} happens twice on {date}; {how}", hm(w)),
                })
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).map(|t| t.with_timezone(&Utc)).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn daily(expr: &str, tz: &str, gap: GapPolicy, overlap: OverlapPolicy) -> (ScheduleSpec, Schedule) {
        let mut spec = ScheduleSpec::new(expr, tz);
        spec.on_gap = gap;
        spec.on_overlap = overlap;
        let s = Schedule::parse(&spec, at("2027-01-01T00:00:00Z")).unwrap_or_else(|e| panic!("{e}"));
        (spec, s)
    }

    #[test]
    fn a_spring_forward_gap_names_the_shifted_fire() {
        // GIVEN a daily 02:30 New York job (2027-03-14: 02:00 → 03:00)
        let (spec, s) = daily("0 30 2 * * *", "America/New_York", GapPolicy::Shift, OverlapPolicy::First);
        // WHEN its upcoming fires from 2027-03-10 to 2027-03-20 are explained
        let u = upcoming(&spec, &s, at("2027-03-10T00:00:00Z"), at("2027-03-20T00:00:00Z"));
        // THEN one gap, the 02:30 fire shifted to 03:00 local (07:00 UTC), which is a real fire
        assert_eq!(u.transitions.len(), 1);
        let t = &u.transitions[0];
        assert_eq!((t.kind, t.at), (Shift::Gap, at("2027-03-14T07:00:00Z")));
        assert_eq!(t.affected.len(), 1);
        assert_eq!(t.affected[0].note, "02:30 does not exist on 2027-03-14; shifted to 03:00 (onGap shift)");
        assert!(u.fires.contains(&at("2027-03-14T07:00:00Z")));
        assert_eq!(u.fires.len(), 10);
    }

    #[test]
    fn a_skipped_gap_and_a_repeated_hour_follow_the_policy() {
        let (spec, s) = daily("0 30 2 * * *", "America/New_York", GapPolicy::Skip, OverlapPolicy::First);
        let u = upcoming(&spec, &s, at("2027-03-10T00:00:00Z"), at("2027-03-20T00:00:00Z"));
        assert_eq!(u.transitions[0].affected[0].at, None);
        assert_eq!(u.fires.len(), 9, "the 14th has no fire");
        // 2027-11-07 01:00–01:59 happen twice in New York.
        let (spec, s) = daily("0 30 1 * * *", "America/New_York", GapPolicy::Shift, OverlapPolicy::Both);
        let u = upcoming(&spec, &s, at("2027-11-05T00:00:00Z"), at("2027-11-09T00:00:00Z"));
        let t = &u.transitions[0];
        assert_eq!(t.kind, Shift::Overlap);
        let runs: Vec<_> = t.affected.iter().map(|a| a.at).collect();
        assert_eq!(runs, vec![Some(at("2027-11-07T05:30:00Z")), Some(at("2027-11-07T06:30:00Z"))]);
        assert!(runs.iter().flatten().all(|r| u.fires.contains(r)), "{:?}", u.fires);
    }

    #[test]
    fn a_zone_without_transitions_and_a_rate_schedule_have_no_notes() {
        let (spec, s) = daily("0 0 2 * * *", "Asia/Shanghai", GapPolicy::Shift, OverlapPolicy::First);
        assert!(upcoming(&spec, &s, at("2027-03-01T00:00:00Z"), at("2027-04-01T00:00:00Z"))
            .transitions
            .is_empty());
        let (spec, s) = daily("rate(1 hour)", "Europe/Berlin", GapPolicy::Shift, OverlapPolicy::First);
        let u = upcoming(&spec, &s, at("2027-03-25T00:00:00Z"), at("2027-03-31T00:00:00Z"));
        assert_eq!(u.transitions.len(), 1);
        assert!(u.transitions[0].affected.is_empty());
    }
}
