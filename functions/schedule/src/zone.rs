//! Zones and DST: parsing an IANA zone name, and turning a local wall-clock time into instants
//! under an explicit gap/overlap policy.
//!
//! Nothing here relies on a library default for DST: [`resolve`] takes the policy for a local
//! time that does not exist (spring forward) and for one that occurs twice (fall back).

use chrono::{DateTime, LocalResult, NaiveDateTime, TimeZone, Utc};
use chrono_tz::{GapInfo, Tz};
use serde::{Deserialize, Serialize};

use super::error::ScheduleError;

/// What to do with a scheduled local time that does not exist (the clock jumps over it, e.g.
/// 02:30 on the spring-forward night in New York).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(default = "shift")]
pub enum GapPolicy {
    /// No fire for that local time.
    Skip,
    /// Fire at the first valid instant after the gap (03:00 local in New York). Several missing
    /// local times collapse into that one instant. The default: a daily job still runs that day.
    #[default]
    Shift,
}

/// What to do with a scheduled local time that occurs twice (the clock is set back, e.g. 01:30
/// on the fall-back night in New York).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(default = "first")]
pub enum OverlapPolicy {
    /// Only the first occurrence (summer time). The default: a daily job never runs twice.
    #[default]
    First,
    /// Only the second occurrence (standard time).
    Last,
    /// Both occurrences, in time order.
    Both,
}

impl std::str::FromStr for GapPolicy {
    type Err = ScheduleError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "skip" => Ok(GapPolicy::Skip),
            "shift" => Ok(GapPolicy::Shift),
            other => {
                Err(ScheduleError::OnGap(format!("'{other}' is not a gap policy; use 'skip' or 'shift'")))
            }
        }
    }
}

impl std::str::FromStr for OverlapPolicy {
    type Err = ScheduleError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "first" => Ok(OverlapPolicy::First),
            "last" => Ok(OverlapPolicy::Last),
            "both" => Ok(OverlapPolicy::Both),
            other => Err(ScheduleError::OnOverlap(format!(
                "'{other}' is not an overlap policy; use 'first', 'last' or 'both'"
            ))),
        }
    }
}

/// The two monotone halves of an overlap policy: `Both` is the merge of `First` and `Last`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pass {
    First,
    Last,
}

/// Parses an IANA zone name. Fixed offsets (`+02:00`, `UTC+2`, `GMT-5`) are refused with a
/// hint: a fixed offset cannot follow a region's DST rules.
pub(crate) fn parse_zone(name: &str) -> Result<Tz, ScheduleError> {
    if name.chars().any(char::is_control) {
        return Err(ScheduleError::Timezone(format!(
            "'{}' contains control characters",
            name.trim().escape_debug()
        )));
    }
    let trimmed = name.trim();
    if trimmed.is_empty() {
        return Err(ScheduleError::Timezone(
            "is empty; give an IANA zone name such as 'Europe/London' or 'UTC'".into(),
        ));
    }
    if looks_like_offset(trimmed) {
        return Err(ScheduleError::Timezone(format!(
            "'{trimmed}' is a fixed UTC offset, not an IANA zone; use the region's zone (e.g. \
             'Europe/Paris') so DST is followed, or 'Etc/GMT-2'-style names if a fixed offset is \
             really meant (their sign is inverted)"
        )));
    }
    if let Ok(tz) = trimmed.parse::<Tz>() {
        return Ok(tz);
    }
    // Case or separator slips get a suggestion; the scan runs only on this error path.
    let folded = fold(trimmed);
    if let Some(tz) = chrono_tz::TZ_VARIANTS.iter().find(|tz| fold(tz.name()) == folded) {
        return Err(ScheduleError::Timezone(format!(
            "'{trimmed}' is not an IANA zone name (they are case-sensitive); did you mean '{}'?",
            tz.name()
        )));
    }
    // A near miss ("America/New_Yrk") gets the closest name.
    let best = chrono_tz::TZ_VARIANTS
        .iter()
        .map(|tz| (edit_distance(&fold(tz.name()), &folded), tz.name()))
        .min()
        .filter(|(d, _)| *d <= 3);
    Err(ScheduleError::Timezone(match best {
        Some((_, name)) => format!(
            "'{trimmed}' is not an IANA zone name (tzdb {}); did you mean '{name}'?",
            chrono_tz::IANA_TZDB_VERSION
        ),
        None => format!(
            "'{trimmed}' is not an IANA zone name (tzdb {}); expected a name such as 'Europe/London'",
            chrono_tz::IANA_TZDB_VERSION
        ),
    }))
}

/// Levenshtein distance, for suggestions only.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

fn fold(s: &str) -> String {
    s.chars().map(|c| if c == ' ' || c == '-' { '_' } else { c.to_ascii_lowercase() }).collect()
}

/// `+02:00`, `-0500`, `UTC+2`, `GMT-03:30`, `UTC 5`: anything that reads as a UTC offset.
fn looks_like_offset(s: &str) -> bool {
    let upper = s.to_ascii_uppercase();
    let rest = upper
        .strip_prefix("UTC")
        .or_else(|| upper.strip_prefix("GMT"))
        .or_else(|| upper.strip_prefix('Z'))
        .unwrap_or(&upper)
        .trim_start();
    let mut chars = rest.chars();
    match chars.next() {
        Some('+') | Some('-') => chars.next().is_some_and(|c| c.is_ascii_digit()),
        Some(c) if c.is_ascii_digit() => rest != upper || rest.contains(':'),
        _ => false,
    }
}

/// The rules of one zone in one tz database release: the release compiled into this build
/// (`chrono-tz`), or another release read from TZif data (the tzdb upgrade report compares
/// the two; see [`super::tzdb`]). Every wall-time question of the schedule maths goes through
/// here, so a schedule computes its fires identically under either source.
#[derive(Debug, Clone)]
pub(crate) enum Zone {
    /// The compiled rules.
    Compiled(Tz),
    /// The rules of a TZif file; the compiled [`Tz`] of the same name carries the name.
    Tzif(Tz, jiff::tz::TimeZone),
}

/// A local wall-clock time looked up in a zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lookup {
    /// It exists once.
    Single(DateTime<Utc>),
    /// It occurs twice (fall back): the first and the second occurrence.
    Ambiguous(DateTime<Utc>, DateTime<Utc>),
    /// It does not exist: see [`Wall::Gap`].
    Gap { begin: Option<NaiveDateTime>, end: Option<DateTime<Utc>> },
}

impl Zone {
    /// The zone's compiled identity (its name).
    #[inline]
    pub(crate) fn tz(&self) -> Tz {
        match self {
            Zone::Compiled(tz) | Zone::Tzif(tz, _) => *tz,
        }
    }

    /// The local wall-clock time of `instant`.
    #[inline]
    pub(crate) fn local(&self, instant: DateTime<Utc>) -> NaiveDateTime {
        match self {
            Zone::Compiled(tz) => instant.with_timezone(tz).naive_local(),
            Zone::Tzif(_, z) => {
                // Offsets change on whole seconds: the floor second's offset is the instant's.
                let offset = jiff::Timestamp::from_second(instant.timestamp())
                    .map(|ts| z.to_offset(ts).seconds())
                    .unwrap_or(0);
                instant.naive_utc() + chrono::Duration::seconds(i64::from(offset))
            }
        }
    }

    /// Looks `wall` up: the instant(s) it names, or the gap it falls in.
    #[inline]
    pub(crate) fn lookup(&self, wall: NaiveDateTime) -> Lookup {
        match self {
            Zone::Compiled(tz) => match tz.from_local_datetime(&wall) {
                LocalResult::Single(t) => Lookup::Single(t.with_timezone(&Utc)),
                LocalResult::Ambiguous(a, b) => {
                    Lookup::Ambiguous(a.with_timezone(&Utc), b.with_timezone(&Utc))
                }
                LocalResult::None => match GapInfo::new(&wall, tz) {
                    Some(g) => {
                        Lookup::Gap { begin: g.begin.map(|b| b.0), end: g.end.map(|t| t.with_timezone(&Utc)) }
                    }
                    None => Lookup::Gap { begin: None, end: None },
                },
            },
            Zone::Tzif(_, z) => tzif_lookup(z, wall),
        }
    }
}

/// [`Zone::lookup`] on TZif rules (jiff answers with the offsets around the wall time).
fn tzif_lookup(z: &jiff::tz::TimeZone, wall: NaiveDateTime) -> Lookup {
    use chrono::{Datelike, Timelike};
    use jiff::tz::AmbiguousOffset;
    let at =
        |offset: jiff::tz::Offset| (wall - chrono::Duration::seconds(i64::from(offset.seconds()))).and_utc();
    let civil = jiff::civil::DateTime::new(
        wall.year() as i16,
        wall.month() as i8,
        wall.day() as i8,
        wall.hour() as i8,
        wall.minute() as i8,
        wall.second() as i8,
        wall.nanosecond().min(999_999_999) as i32,
    );
    let Ok(civil) = civil else {
        return Lookup::Gap { begin: None, end: None };
    };
    match z.to_ambiguous_timestamp(civil).offset() {
        AmbiguousOffset::Unambiguous { offset } => Lookup::Single(at(offset)),
        AmbiguousOffset::Fold { before, after } => Lookup::Ambiguous(at(before), at(after)),
        AmbiguousOffset::Gap { before, after } => {
            // The transition t satisfies wall - after < t <= wall - before: the first one after
            // (wall - after) is it. The gap's first local time is t seen with the old offset.
            let probe = at(after).timestamp();
            let t = jiff::Timestamp::from_second(probe)
                .ok()
                .and_then(|p| z.following(p).next())
                .map(|tr| tr.timestamp().as_second())
                .and_then(|s| DateTime::from_timestamp(s, 0));
            Lookup::Gap {
                begin: t.map(|t| t.naive_utc() + chrono::Duration::seconds(i64::from(before.seconds()))),
                end: t,
            }
        }
    }
}

/// The local wall-clock time of `instant` in `tz`.
#[inline]
pub(crate) fn local_of(tz: &Zone, instant: DateTime<Utc>) -> NaiveDateTime {
    tz.local(instant)
}

/// A local wall-clock time seen through one monotone pass of the overlap policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wall {
    /// The time exists (once, or twice and `pass` picked one occurrence).
    At(DateTime<Utc>),
    /// The time falls in a gap. `begin` is the first missing local time, `end` the first valid
    /// instant after the gap (`None` only at the edges of the tz database).
    Gap { begin: Option<NaiveDateTime>, end: Option<DateTime<Utc>> },
}

/// Looks `wall` up in `tz`, picking the occurrence named by `pass` when it occurs twice.
///
/// Under a fixed gap policy and pass, wall time -> instant is non-decreasing (all missing
/// times of a gap map to the gap's end under `Shift`), which is what lets the enumerators
/// search in wall-clock order.
#[inline]
pub(crate) fn resolve_wall(tz: &Zone, wall: NaiveDateTime, pass: Pass) -> Wall {
    match tz.lookup(wall) {
        Lookup::Single(t) => Wall::At(t),
        Lookup::Ambiguous(first, last) => Wall::At(match pass {
            Pass::First => first,
            Pass::Last => last,
        }),
        Lookup::Gap { begin, end } => Wall::Gap { begin, end },
    }
}

/// The instant of local time `wall` under the gap policy and one pass of the overlap policy;
/// `None` when it falls in a gap and the policy is `Skip`.
#[inline]
pub(crate) fn resolve(tz: &Zone, wall: NaiveDateTime, gap: GapPolicy, pass: Pass) -> Option<DateTime<Utc>> {
    match resolve_wall(tz, wall, pass) {
        Wall::At(t) => Some(t),
        Wall::Gap { end, .. } => match gap {
            GapPolicy::Skip => None,
            GapPolicy::Shift => end,
        },
    }
}

/// If `instant` is the *first* occurrence of a repeated local time, the length of the overlap
/// (second occurrence minus first); otherwise `None`.
#[inline]
pub(crate) fn first_pass_overlap(
    tz: &Zone,
    instant: DateTime<Utc>,
    wall: NaiveDateTime,
) -> Option<chrono::Duration> {
    match tz.lookup(wall) {
        Lookup::Ambiguous(first, last) if instant < last => Some(last - first),
        _ => None,
    }
}

/// If `instant` is the *second* occurrence of a repeated local time, the length of the overlap.
#[inline]
pub(crate) fn second_pass_overlap(
    tz: &Zone,
    instant: DateTime<Utc>,
    wall: NaiveDateTime,
) -> Option<chrono::Duration> {
    match tz.lookup(wall) {
        Lookup::Ambiguous(first, last) if instant > first => Some(last - first),
        _ => None,
    }
}

/// The first instant of local date `date` (its midnight, or the end of a gap that swallows it).
pub(crate) fn day_start(tz: &Zone, date: chrono::NaiveDate) -> Option<DateTime<Utc>> {
    resolve(tz, date.and_hms_opt(0, 0, 0)?, GapPolicy::Shift, Pass::First)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_recognised() {
        for s in ["+02:00", "-0500", "UTC+2", "GMT-03:30", "utc+5", "Z+1", "+5", "UTC 5"] {
            assert!(looks_like_offset(s), "{s}");
        }
        for s in ["UTC", "GMT", "Etc/GMT+2", "Europe/London", "Zulu", "EST5EDT"] {
            assert!(!looks_like_offset(s), "{s}");
        }
    }
}
