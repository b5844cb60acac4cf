//! Parsing and validating the `expression` of a schedule.
//!
//! Three forms:
//! - cron: 6 or 7 fields with seconds (`sec min hour dom month dow [year]`), as the `cron` crate
//!   reads them (Quartz day-of-week numbering, 1 = Sunday); or the ordinary 5-field Unix form
//!   (`min hour dom month dow`, 0 or 7 = Sunday), normalised to the 6-field form with
//!   seconds = 0, its day-of-week numbers translated, and Vixie cron's OR rule for day-of-month
//!   and day-of-week; `@yearly`, `@monthly`, `@weekly`, `@daily`, `@hourly` too.
//!   Both forms take the Quartz day rules `L`, `L-n`, `LW`, `nW` (day-of-month) and `dL`, `d#k`
//!   (day-of-week, `d` in the form's own numbering: `6L` is the last Friday in the 6/7-field
//!   form, `5L` in the 5-field form, `FRIL` in both); those expressions are computed by
//!   `days::DayCron`, not by the crate.
//! - `rate(N seconds|minutes|hours|days)`.
//! - `at(YYYY-MM-DDTHH:MM:SS)`, a local time in the job's zone.
//!
//! Layout: `cron_expr` holds [`CronExpr`] and the cron parser; `fields` the checks shared by
//! every field (ranges, steps, names) and the normalised list text; `day_fields` the two day
//! fields, which also take the Quartz day rules; `rate_at` the `rate(..)` and `at(..)` forms.
//!
//! Each field is checked first (in `fields` and `day_fields`), so an error names the field and the token at fault; the
//! `cron` crate then parses the normalised text (its own messages are terse, and it never sees
//! a form it would misread).

mod cron_expr;
mod day_fields;
mod fields;
mod rate_at;

use chrono::NaiveDateTime;

use super::error::ScheduleError;
use cron_expr::parse_cron;
pub(crate) use cron_expr::{CronExpr, TimesOfDay};
pub use rate_at::MAX_RATE_SECS;
use rate_at::{parse_at, parse_rate};

/// Longest expression accepted.
pub const MAX_EXPRESSION_LEN: usize = 256;

/// A parsed expression.
#[derive(Debug, Clone)]
pub(crate) enum Expr {
    Cron(CronExpr),
    /// Every `period_secs` seconds from the anchor.
    Rate {
        period_secs: i64,
    },
    /// One local time in the job's zone.
    At(NaiveDateTime),
}

pub(crate) fn parse_expression(input: &str) -> Result<Expr, ScheduleError> {
    let err = |m: String| ScheduleError::Expression(m);
    // Control characters (tabs, newlines) act as spaces, which also keeps every message on one
    // line.
    let cleaned: String = input.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    let s = cleaned.trim();
    if s.is_empty() {
        return Err(err("is empty; expected a cron expression, rate(..) or at(..)".into()));
    }
    if s.len() > MAX_EXPRESSION_LEN {
        return Err(err(format!("is {} characters long; at most {MAX_EXPRESSION_LEN} are allowed", s.len())));
    }
    let lower = s.to_ascii_lowercase();
    if lower.starts_with("rate(") || lower.starts_with("rate ") || lower == "rate" {
        return parse_rate(s).map(|period_secs| Expr::Rate { period_secs });
    }
    if lower.starts_with("at(") || lower.starts_with("at ") || lower == "at" {
        return parse_at(s).map(Expr::At);
    }
    if lower.starts_with("cron(") {
        return Err(err("write the cron fields without the cron(..) wrapper: 6 or 7 fields with seconds \
             ('0 30 2 * * *'), or 5 Unix fields ('30 2 * * *')"
            .into()));
    }
    parse_cron(s).map(Expr::Cron)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(s: &str) -> String {
        match parse_expression(s).unwrap() {
            Expr::Cron(c) => c.normalized,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn five_field_form_is_normalised() {
        assert_eq!(norm("*/15 * * * *"), "0 0,15,30,45 * * * *");
        assert_eq!(norm("30 2 * * 1-5"), "0 30 2 * * 2-6");
        assert_eq!(norm("0 9 * * 0"), "0 0 9 * * 1");
        assert_eq!(norm("0 9 * * 7"), "0 0 9 * * 1");
        assert_eq!(norm("0 9 * * 5-7"), "0 0 9 * * 1,6-7");
        assert_eq!(norm("0 9 * * sat,sun"), "0 0 9 * * 1,7");
        assert_eq!(norm("0 9 * * */2"), "0 0 9 * * 1,3,5,7");
        assert_eq!(norm("0 0 1,15 * mon"), "0 0 0 1,15 * * | 0 0 0 * * 2");
        assert_eq!(norm("0 0 */10 * mon"), "0 0 0 1,11,21,31 * 2");
        assert_eq!(norm("0 0 9 ? * MON-FRI"), "0 0 9 * * 2-6");
    }

    #[test]
    fn rate_and_at() {
        assert!(matches!(parse_expression("rate(10 seconds)"), Ok(Expr::Rate { period_secs: 10 })));
        assert!(matches!(parse_expression("rate(1 day)"), Ok(Expr::Rate { period_secs: 86_400 })));
        assert!(matches!(parse_expression("at(2026-12-01T09:00:00)"), Ok(Expr::At(_))));
    }
}
