//! One cron field: its range and names ([`FieldSpec`]), the check of its list items (values,
//! ranges, steps, `*`, `?`), and the list text handed to the `cron` crate. Each error names the
//! field and the token at fault, which the crate's own messages do not.

use crate::error::ScheduleError;

/// Names accepted in the month field (both forms).
const MONTHS: &[(&str, u32)] = &[
    ("jan", 1),
    ("feb", 2),
    ("mar", 3),
    ("apr", 4),
    ("may", 5),
    ("jun", 6),
    ("jul", 7),
    ("aug", 8),
    ("sep", 9),
    ("oct", 10),
    ("nov", 11),
    ("dec", 12),
];
/// Day names in Unix numbering (0 = Sunday).
pub(super) const DAYS_UNIX: &[(&str, u32)] =
    &[("sun", 0), ("mon", 1), ("tue", 2), ("wed", 3), ("thu", 4), ("fri", 5), ("sat", 6)];
/// Day names in the `cron` crate's (Quartz) numbering (1 = Sunday).
const DAYS_QUARTZ: &[(&str, u32)] =
    &[("sun", 1), ("mon", 2), ("tue", 3), ("wed", 4), ("thu", 5), ("fri", 6), ("sat", 7)];

pub(super) struct FieldSpec {
    pub(super) name: &'static str,
    pub(super) min: u32,
    pub(super) max: u32,
    pub(super) names: &'static [(&'static str, u32)],
    /// `?` accepted (day-of-month and day-of-week).
    pub(super) any: bool,
    /// Extra words for range errors.
    pub(super) hint: &'static str,
}

pub(super) const SECONDS: FieldSpec =
    FieldSpec { name: "seconds", min: 0, max: 59, names: &[], any: false, hint: "" };
pub(super) const MINUTES: FieldSpec =
    FieldSpec { name: "minutes", min: 0, max: 59, names: &[], any: false, hint: "" };
pub(super) const HOURS: FieldSpec =
    FieldSpec { name: "hours", min: 0, max: 23, names: &[], any: false, hint: "" };
pub(super) const DOM: FieldSpec =
    FieldSpec { name: "day-of-month", min: 1, max: 31, names: &[], any: true, hint: "" };
pub(super) const MONTH: FieldSpec =
    FieldSpec { name: "month", min: 1, max: 12, names: MONTHS, any: false, hint: "" };
pub(super) const DOW_QUARTZ: FieldSpec = FieldSpec {
    name: "day-of-week",
    min: 1,
    max: 7,
    names: DAYS_QUARTZ,
    any: true,
    hint: " (6/7-field form: 1 = Sunday .. 7 = Saturday; use SUN-SAT, or the 5-field Unix form where 0 = Sunday)",
};
pub(super) const DOW_UNIX: FieldSpec = FieldSpec {
    name: "day-of-week",
    min: 0,
    max: 7,
    names: DAYS_UNIX,
    any: true,
    hint: " (5-field Unix form: 0 or 7 = Sunday, 1 = Monday .. 6 = Saturday)",
};
pub(super) const YEAR: FieldSpec =
    FieldSpec { name: "year", min: 1970, max: 2100, names: &[], any: false, hint: "" };

/// Validates one field and returns the sorted values it selects.
pub(super) fn parse_field(pos: usize, text: &str, spec: &FieldSpec) -> Result<Vec<u32>, ScheduleError> {
    let err = |m: String| ScheduleError::Expression(format!("field {pos} ({}) '{text}': {m}", spec.name));
    let mut selected = vec![false; (spec.max - spec.min + 1) as usize];
    for item in text.split(',') {
        if item.is_empty() {
            return Err(err("empty list item".into()));
        }
        if let Some(m) = misplaced_rule(item, spec) {
            return Err(err(m));
        }
        let (lo, hi, step) = item_range(item, spec).map_err(err)?;
        let mut v = lo;
        while v <= hi {
            selected[(v - spec.min) as usize] = true;
            v += step;
        }
    }
    Ok(selected.iter().enumerate().filter(|(_, s)| **s).map(|(i, _)| i as u32 + spec.min).collect())
}

/// Why a list item with a Quartz rule letter (`L`, `W`, `#`) is refused here, if it is one:
/// rules are parsed by the day fields, and names (`JUL`, `WED`) are not rules.
fn misplaced_rule(item: &str, spec: &FieldSpec) -> Option<String> {
    let c = item.chars().find(|c| matches!(c, 'L' | 'W' | '#' | 'l' | 'w'))?;
    if item.chars().all(|c| c.is_ascii_alphabetic()) && item.len() > 2 {
        return None;
    }
    Some(match (c.to_ascii_uppercase(), spec.name) {
        // A day field reaches here only with what is not a rule (`L/2`, `1-L`).
        (_, "day-of-month" | "day-of-week") => format!(
            "'{item}' is not a day rule; L, L-n, LW, nW (day-of-month), dL and d#k \
             (day-of-week) stand alone, without ranges or steps"
        ),
        ('#', _) => "'#' (nth weekday of the month) is only allowed in day-of-week".into(),
        ('W', _) => "'W' (nearest weekday) is only allowed in day-of-month".into(),
        _ => "'L' (last) is only allowed in day-of-month and day-of-week".into(),
    })
}

/// The values `lo..=hi` by `step` that one list item (`*`, `?`, `v`, `a-z`, each with an optional
/// `/step`) selects; the error is the reason, without the field prefix.
fn item_range(item: &str, spec: &FieldSpec) -> Result<(u32, u32, u32), String> {
    let (base, step) = match item.split_once('/') {
        Some((b, s)) => {
            let step = number(s).ok_or_else(|| format!("step '{s}' is not a number"))?;
            if step == 0 || step > spec.max {
                return Err(format!("step {step} must be between 1 and {}", spec.max));
            }
            (b, Some(step))
        }
        None => (item, None),
    };
    let value = |t: &str| field_value(t, spec);
    let (lo, hi) = match base {
        "*" => (spec.min, spec.max),
        "?" if spec.any => {
            if step.is_some() {
                return Err("'?' takes no step".into());
            }
            (spec.min, spec.max)
        }
        "?" => return Err("'?' is only allowed in day-of-month and day-of-week".into()),
        "" => return Err("missing value".into()),
        b => match b.split_once('-') {
            Some((a, z)) => {
                let (a, z) = (value(a)?, value(z)?);
                if a > z {
                    return Err(format!("range {a}-{z} runs backwards (wrap-around is not supported)"));
                }
                (a, z)
            }
            None => {
                let a = value(b)?;
                (a, if step.is_some() { spec.max } else { a })
            }
        },
    };
    Ok((lo, hi, step.unwrap_or(1)))
}

/// One value of a field (a number or a name), checked against the field's range; the error is
/// the reason, without the field prefix.
pub(super) fn field_value(t: &str, spec: &FieldSpec) -> Result<u32, String> {
    let v = if let Some(v) = number(t) {
        v
    } else if !t.is_empty() && t.chars().all(|c| c.is_ascii_alphabetic()) {
        if spec.names.is_empty() {
            return Err(format!("'{t}' is not a number (this field takes no names)"));
        }
        let lower = t.to_ascii_lowercase();
        let key = lower.get(..3).unwrap_or(&lower);
        match spec.names.iter().find(|(n, _)| *n == key) {
            Some((_, v)) if lower.len() == 3 || full_name_ok(&lower) => *v,
            _ => return Err(format!("'{t}' is not a {} name", spec.name)),
        }
    } else {
        return Err(format!("'{t}' is not a number"));
    };
    if v < spec.min || v > spec.max {
        return Err(format!("{v} is out of range {}-{}{}", spec.min, spec.max, spec.hint));
    }
    Ok(v)
}

pub(super) fn full_name_ok(lower: &str) -> bool {
    const FULL: &[&str] = &[
        "january",
        "february",
        "march",
        "april",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
        "sunday",
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "tues",
        "thurs",
    ];
    FULL.contains(&lower)
}

pub(super) fn number(s: &str) -> Option<u32> {
    if s.is_empty() || s.len() > 9 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Writes a value set as a `cron` crate list (`1-5,10,20-22`), or `*` when it is everything.
pub(super) fn list(values: &[u32], spec: &FieldSpec) -> String {
    if values.len() as u32 == spec.max - spec.min + 1 {
        return "*".into();
    }
    let mut out = String::new();
    let mut i = 0;
    while i < values.len() {
        let mut j = i;
        while j + 1 < values.len() && values[j + 1] == values[j] + 1 {
            j += 1;
        }
        if !out.is_empty() {
            out.push(',');
        }
        if j > i {
            out.push_str(&format!("{}-{}", values[i], values[j]));
        } else {
            out.push_str(&values[i].to_string());
        }
        i = j + 1;
    }
    out
}
