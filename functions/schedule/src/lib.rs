//! Schedule maths: cron / rate / at expressions, IANA zones with an explicit DST policy,
//! exclusion calendars, misfire planning and dispatch jitter.
//!
//! Pure code: no I/O and no clock. Every function takes `after` or `now`; the next fire is
//! always computed from the previous *scheduled* instant, never from a completion time.
//! `docs/schedule.md` gives the semantics and the reasons for each default.
//!
//! ## Layout
//! - `spec`: [`ScheduleSpec`], what a user submits.
//! - `schedule`: [`Schedule`], a validated spec, and what it reports about itself.
//! - `parse`: [`Schedule::parse`] and its variants, which validate a spec field by field.
//! - `next_fire`: the next and previous fire of one expression, for cron, `rate()` and `at()`; `search_cursor`: where a cron search for one overlap pass starts.
//! - `preview`: [`Schedule::preview`] and [`Schedule::fires_between`].
//! - `rolled`: cron fires rolled by a business calendar, and [`Schedule::preview_explained`].
//! - `fire_origin`: [`Schedule::explain_fire`], what the calendar did to one fire already made.
//! - [`error`]: [`ScheduleError`], one variant per spec field.
//! - `expr`: parsing of the expression: cron (5/6/7 fields; its fields and day rules in
//!   submodules), `rate(..)` and `at(..)`.
//! - `days`: Quartz day rules (`L`, `L-n`, `LW`, `nW`, `dL`, `d#k`) and the engine that computes
//!   the wall times of an expression that uses one (the `cron` crate knows none of them).
//! - `zone`: IANA zone parsing, [`GapPolicy`] / [`OverlapPolicy`], wall time -> instant, over
//!   one release's rules (`Zone`: compiled, or TZif data of another release).
//! - [`tzdb`]: tz database releases ([`tzdb::Tzdb`]) and [`tzdb::compare`], the fires of a
//!   spec that differ between two releases (the tzdb upgrade report).
//! - `calendar`: [`Calendar`] exclusions (local dates and weekdays).
//! - `business`: shared business calendars ([`BusinessDays`]) and [`Roll`] policies.
//! - `misfire`: [`plan_misfire`] and [`MisfirePolicy`].
//! - `jitter`: [`jitter_offset`], deterministic per (job, scheduled_at).
//! - `union`: several expressions (`expressions`): [`Schedule::next_after`],
//!   [`Schedule::prev_at_or_before`] and [`Schedule::preview_explained`] as the union of each
//!   expression's, and [`Schedule::expression_of`], which one made a fire.
//! - `cadence`: [`Schedule::fires_every_minute`], which picks a job's due class in the scan.
//! - `density`: [`Schedule::density`], the most fires in any hour and the shortest gap between
//!   fires over the whole cycle, computed from the fields (what budgets charge).
//! - [`openapi`]: the OpenAPI pieces the `utoipa::ToSchema` derives cannot give alone, which
//!   this crate's schemas and sundial-model's are built of.
//! - `misfire_schema`: [`MisfirePolicy`]'s OpenAPI schema, one component per policy.
//!
//! ## How a cron fire is found
//! The `cron` crate enumerates *local wall-clock* times (it is run on naive local times as if
//! the zone were UTC, where it is exact and ordered); each wall time is then resolved to an
//! instant with `chrono-tz` under the job's gap policy and one *pass* of its overlap policy
//! (`first` or `last`). For a fixed pass, wall time -> instant is monotone, so the first wall
//! time whose instant is after `after` is the answer; `both` is the merge (minimum) of the two
//! passes. This avoids the crate's own zone handling, which yields fall-back fires out of order.
//! An expression with a Quartz day rule gets its wall times from `days` instead of the crate;
//! everything after that (zone, policies, exclusions) is the same code.

mod business;
mod cadence;
mod calendar;
mod days;
mod density;
pub mod error;
mod expr;
mod fire_origin;
pub mod id;
pub mod instant;
mod jitter;
pub mod minute;
mod misfire;
mod misfire_schema;
mod next_fire;
pub mod openapi;
mod parse;
mod preview;
mod rolled;
mod schedule;
mod search_cursor;
pub mod serde_field;
mod spec;
pub mod tzdb;
mod union;
mod zone;

pub use business::{
    BusinessCalendarRef, BusinessCalendarSpec, BusinessDays, CalendarError, CalendarLevel, Roll,
    MAX_CALENDAR_DATES, MAX_CALENDAR_DEPTH, MAX_ROLL_DAYS,
};
pub use calendar::{Calendar, MAX_EXCLUDED_DATES};
pub use density::Density;
pub use error::ScheduleError;
pub use expr::{MAX_EXPRESSION_LEN, MAX_RATE_SECS};
pub use fire_origin::FireOrigin;
pub use jitter::jitter_offset;
pub use misfire::{
    plan_misfire, MisfirePlan, MisfirePolicy, PlannedFire, DEFAULT_FIRE_ALL_CAP, MISFIRE_SCAN_LIMIT,
};
pub use rolled::PreviewFire;
pub use schedule::Schedule;
pub use spec::{ScheduleSpec, MAX_EXTRA_EXPRESSIONS, MAX_JITTER_WINDOW_SECS};
pub use zone::{GapPolicy, OverlapPolicy};

/// The version of the IANA tz database compiled into this build (e.g. `"2025b"`). Store it
/// next to computed schedules so a later change of zone rules can be audited.
pub fn tzdb_version() -> &'static str {
    chrono_tz::IANA_TZDB_VERSION
}

#[cfg(test)]
mod bad_input;
#[cfg(test)]
mod business_tests;
#[cfg(test)]
mod day_rules;
#[cfg(test)]
mod density_tests;
#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod union_tests;
