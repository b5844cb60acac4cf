//! The day-of-month and day-of-week fields, which besides plain values take one Quartz day
//! rule (`L`, `L-n`, `LW`, `nW`; `dL`, `d#k`). A rule is parsed into a [`DomSel`] / [`DowSel`]
//! for `days::DayCron`; the errors say which field a misplaced rule belongs in.

use super::fields::{
    field_value, full_name_ok, list, number, parse_field, FieldSpec, DAYS_UNIX, DOM, DOW_QUARTZ,
};
use crate::days::{DomSel, DowSel};
use crate::error::ScheduleError;

/// A day field: a set of plain values, or one Quartz rule.
pub(super) enum DayField<R> {
    Values(Vec<u32>),
    Rule(R),
}

impl<R> DayField<R> {
    pub(super) fn is_rule(&self) -> bool {
        matches!(self, DayField::Rule(_))
    }
}

/// Whether a list item of a day field is (or is meant as) a Quartz day rule: `L`, `LW`,
/// `L-n`, `nW`, `dL`, `d#k`, or a range or step glued to `L`/`W` (refused with a reason).
/// Names are not rules, even where they contain L or W (`WED`, `JUL`).
fn is_day_rule(item: &str) -> bool {
    let u = item.to_ascii_uppercase();
    if u.contains('#') || u == "L" || u == "LW" || u.starts_with("L-") {
        return true;
    }
    let Some(head) = u.strip_suffix('L').or_else(|| u.strip_suffix('W')) else {
        return false;
    };
    let lower = head.to_ascii_lowercase();
    let day_name = DAYS_UNIX.iter().any(|(n, _)| *n == lower)
        || (lower.len() > 3 && DAYS_UNIX.iter().any(|(n, _)| lower.starts_with(n)) && full_name_ok(&lower));
    !head.is_empty() && (number(head).is_some() || day_name || head.contains(['-', '/', '*']))
}

/// The one rule item of a day field, if it has one; a rule inside a list is refused.
fn rule_item<'a>(pos: usize, text: &'a str, spec: &FieldSpec) -> Result<Option<&'a str>, ScheduleError> {
    let Some(rule) = text.split(',').find(|i| is_day_rule(i)) else {
        return Ok(None);
    };
    if text.contains(',') {
        return Err(ScheduleError::Expression(format!(
            "field {pos} ({}) '{text}': '{rule}' cannot be part of a list; L, L-n, LW, nW, dL and d#k \
             stand alone in their field",
            spec.name
        )));
    }
    Ok(Some(rule))
}

/// Parses the day-of-month field: values, or `L`, `L-n`, `LW`, `nW`.
pub(super) fn parse_dom(pos: usize, text: &str) -> Result<DayField<DomSel>, ScheduleError> {
    let Some(item) = rule_item(pos, text, &DOM)? else {
        return parse_field(pos, text, &DOM).map(DayField::Values);
    };
    let err = |m: String| ScheduleError::Expression(format!("field {pos} (day-of-month) '{text}': {m}"));
    let u = item.to_ascii_uppercase();
    let rule = if u == "L" {
        DomSel::Last(0)
    } else if u == "LW" {
        DomSel::LastWeekday
    } else if let Some(n) = u.strip_prefix("L-") {
        match number(n) {
            Some(n) if n <= 30 => DomSel::Last(n),
            _ => {
                return Err(err(format!(
                    "the offset '{n}' after 'L-' must be a number of days from 0 to 30 (L-n is n days \
                     before the last day of the month)"
                )))
            }
        }
    } else if u.contains('#') {
        return Err(err("'#' (nth weekday of the month) belongs in day-of-week, e.g. MON#2".into()));
    } else if let Some(n) = u.strip_suffix('W') {
        if n.contains(['-', '/', '*']) {
            return Err(err("'W' (nearest weekday) takes one day, e.g. 15W, not a range or step".into()));
        }
        DomSel::Nearest(field_value(n, &DOM).map_err(err)?)
    } else {
        return Err(err(
            "a weekday before 'L' (dL, the last such weekday) belongs in day-of-week; day-of-month \
             takes L, L-n or LW"
                .into(),
        ));
    };
    Ok(DayField::Rule(rule))
}

/// Parses the day-of-week field in `spec`'s numbering: values, or `dL`, `d#k`. Values and rules
/// come back as weekdays from Sunday (0 = Sunday .. 6 = Saturday).
pub(super) fn parse_dow(pos: usize, text: &str, spec: &FieldSpec) -> Result<DayField<DowSel>, ScheduleError> {
    // Unix: 0 or 7 = Sunday; Quartz: 1 = Sunday.
    let weekday = |v: u32| (if spec.min == 0 { v % 7 } else { v - 1 }) as u8;
    let Some(item) = rule_item(pos, text, spec)? else {
        let values = parse_field(pos, text, spec)?;
        let mut days: Vec<u32> = values.into_iter().map(|v| u32::from(weekday(v))).collect();
        days.sort_unstable();
        days.dedup();
        return Ok(DayField::Values(days));
    };
    let err = |m: String| ScheduleError::Expression(format!("field {pos} (day-of-week) '{text}': {m}"));
    let last_friday = if spec.min == 0 { "5L or FRIL" } else { "6L or FRIL" };
    let u = item.to_ascii_uppercase();
    let one_day = |d: &str, example: &str| -> Result<u8, ScheduleError> {
        if d.is_empty() || d.contains(['-', '/', '*']) {
            return Err(err(format!("'{item}' takes one weekday, e.g. {example}, not a range or step")));
        }
        field_value(d, spec).map(weekday).map_err(err)
    };
    let rule = if let Some((d, k)) = u.split_once('#') {
        let w = one_day(d, "MON#2")?;
        match number(k) {
            Some(k @ 1..=5) => DowSel::Nth(w, k as u8),
            _ => {
                return Err(err(format!(
                    "the week number '{k}' after '#' must be 1 to 5 (MON#2 is the second Monday of the \
                     month)"
                )))
            }
        }
    } else if u == "L" {
        return Err(err(format!(
            "'L' alone in day-of-week is ambiguous (Quartz reads it as Saturday); write SAT, or dL for \
             the last such weekday of the month ({last_friday} is the last Friday)"
        )));
    } else if u.ends_with('W') {
        return Err(err("'W' (nearest weekday) belongs in day-of-month, e.g. 15W".into()));
    } else if u.starts_with("L-") {
        return Err(err("'L-n' (n days before the last day) belongs in day-of-month".into()));
    } else if let Some(d) = u.strip_suffix('L') {
        DowSel::Last(one_day(d, last_friday)?)
    } else {
        return Err(err("not a day rule; day-of-week takes dL or d#k".into()));
    };
    Ok(DayField::Rule(rule))
}

pub(super) fn dom_text(f: &DayField<DomSel>) -> String {
    match f {
        DayField::Values(v) => list(v, &DOM),
        DayField::Rule(DomSel::Last(0)) => "L".into(),
        DayField::Rule(DomSel::Last(n)) => format!("L-{n}"),
        DayField::Rule(DomSel::LastWeekday) => "LW".into(),
        DayField::Rule(DomSel::Nearest(n)) => format!("{n}W"),
        DayField::Rule(DomSel::Days(_)) => "*".into(),
    }
}

/// The day-of-week field in the `cron` crate's (Quartz) numbering, 1 = Sunday.
pub(super) fn dow_text(f: &DayField<DowSel>) -> String {
    match f {
        DayField::Values(v) => list(&v.iter().map(|w| w + 1).collect::<Vec<_>>(), &DOW_QUARTZ),
        DayField::Rule(DowSel::Last(w)) => format!("{}L", w + 1),
        DayField::Rule(DowSel::Nth(w, k)) => format!("{}#{k}", w + 1),
        DayField::Rule(DowSel::Days(_)) => "*".into(),
    }
}
