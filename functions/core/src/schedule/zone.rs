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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
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

/// The local wall-clock time of `instant` in `tz`.
#[inline]
pub(crate) fn local_of(tz: Tz, instant: DateTime<Utc>) -> NaiveDateTime {
    instant.with_timezone(&tz).naive_local()
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
pub(crate) fn resolve_wall(tz: Tz, wall: NaiveDateTime, pass: Pass) -> Wall {
    match tz.from_local_datetime(&wall) {
        LocalResult::Single(t) => Wall::At(t.with_timezone(&Utc)),
        LocalResult::Ambiguous(first, last) => Wall::At(match pass {
            Pass::First => first.with_timezone(&Utc),
            Pass::Last => last.with_timezone(&Utc),
        }),
        LocalResult::None => match GapInfo::new(&wall, &tz) {
            Some(g) => Wall::Gap { begin: g.begin.map(|b| b.0), end: g.end.map(|t| t.with_timezone(&Utc)) },
            None => Wall::Gap { begin: None, end: None },
        },
    }
}

/// The instant of local time `wall` under the gap policy and one pass of the overlap policy;
/// `None` when it falls in a gap and the policy is `Skip`.
#[inline]
pub(crate) fn resolve(tz: Tz, wall: NaiveDateTime, gap: GapPolicy, pass: Pass) -> Option<DateTime<Utc>> {
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
    tz: Tz,
    instant: DateTime<Utc>,
    wall: NaiveDateTime,
) -> Option<chrono::Duration> {
    match tz.from_local_datetime(&wall) {
        LocalResult::Ambiguous(first, last) if instant < last.with_timezone(&Utc) => {
            Some(last.with_timezone(&Utc) - first.with_timezone(&Utc))
        }
        _ => None,
    }
}

/// If `instant` is the *second* occurrence of a repeated local time, the length of the overlap.
#[inline]
pub(crate) fn second_pass_overlap(
    tz: Tz,
    instant: DateTime<Utc>,
    wall: NaiveDateTime,
) -> Option<chrono::Duration> {
    match tz.from_local_datetime(&wall) {
        LocalResult::Ambiguous(first, last) if instant > first.with_timezone(&Utc) => {
            Some(last.with_timezone(&Utc) - first.with_timezone(&Utc))
        }
        _ => None,
    }
}

/// The first instant of local date `date` (its midnight, or the end of a gap that swallows it).
pub(crate) fn day_start(tz: Tz, date: chrono::NaiveDate) -> Option<DateTime<Utc>> {
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
