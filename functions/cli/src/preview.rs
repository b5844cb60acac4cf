//! `sundial preview`: print the next fires of a schedule, one RFC 3339 UTC instant per line.
//!
//! ```text
//! sundial preview --tz America/New_York --after 2026-03-07T00:00:00Z --count 5 '0 30 2 * * *'
//! ```
//! Pure: it parses a [`ScheduleSpec`] exactly as the API does and calls
//! [`Schedule::preview`], so both show the same fires. Every argument is taken as text and
//! checked here, so bad input ends with one line on stderr (`error: <field>: <reason>`) and a
//! non-zero exit.

use anyhow::{anyhow, Context};
use chrono::{DateTime, SecondsFormat, Utc};
use std::sync::Arc;
use sundial_schedule::{
    BusinessCalendarRef, BusinessCalendarSpec, BusinessDays, Calendar, PreviewFire, Roll, Schedule,
    ScheduleSpec,
};

/// Most fires one preview prints.
const MAX_COUNT: usize = 100_000;

/// Arguments of `sundial preview`.
#[derive(clap::Args)]
pub(crate) struct PreviewArgs {
    /// The schedule expression: 6/7-field cron with seconds ('0 30 2 * * *'), 5-field Unix
    /// cron ('30 2 * * *'), either with Quartz day rules (L, L-n, LW, nW, FRIL, MON#2),
    /// 'rate(10 minutes)' or 'at(2026-12-01T09:00:00)'.
    expression: String,
    /// A further expression (repeat for more): the fires are the union of all of them, once
    /// per instant, each line followed by `[i]`, the index of the expression that makes it
    /// (0: the first).
    #[arg(long = "also", value_name = "EXPRESSION")]
    also: Vec<String>,
    /// IANA time zone of the schedule.
    #[arg(long, default_value = "UTC")]
    tz: String,
    /// Print fires strictly after this RFC 3339 instant [default: now].
    #[arg(long)]
    after: Option<String>,
    /// How many fires to print.
    #[arg(long, default_value = "10", allow_hyphen_values = true)]
    count: String,
    /// A local time that does not exist (spring forward): skip | shift.
    #[arg(long, default_value = "shift")]
    on_gap: String,
    /// A local time that occurs twice (fall back): first | last | both.
    #[arg(long, default_value = "first")]
    on_overlap: String,
    /// Bounds, exclusions and jitter (boxed: they are rarely given).
    #[command(flatten)]
    more: Box<MoreArgs>,
}

/// The less common options of `sundial preview`.
#[derive(clap::Args)]
pub(crate) struct MoreArgs {
    /// No fire before this RFC 3339 instant; also the anchor of rate() [default: --after].
    #[arg(long)]
    start: Option<String>,
    /// No fire after this RFC 3339 instant.
    #[arg(long)]
    end: Option<String>,
    /// Excluded local dates, comma-separated YYYY-MM-DD.
    #[arg(long, value_delimiter = ',')]
    exclude_dates: Vec<String>,
    /// Excluded weekdays, comma-separated (mon..sun).
    #[arg(long, value_delimiter = ',')]
    exclude_weekdays: Vec<String>,
    /// Jitter window in seconds; with --job-id, a second column shows the dispatch instant.
    #[arg(long, default_value = "0", allow_hyphen_values = true)]
    jitter_window_secs: String,
    /// Job id whose deterministic jitter to show (needs --jitter-window-secs).
    #[arg(long)]
    job_id: Option<String>,
    /// A business calendar definition (JSON file, as `sundial calendars put` takes; no parent
    /// offline): fires on its non-business days are rolled per --roll, and each rolled or
    /// skipped fire is printed with its reason.
    #[arg(long)]
    calendar_file: Option<String>,
    /// What happens to a fire on a non-business day: skip | following | preceding |
    /// modifiedFollowing.
    #[arg(long, default_value = "following")]
    roll: String,
}

fn instant(flag: &str, s: &str) -> anyhow::Result<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s.trim())
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| anyhow!("--{flag}: '{s}' is not an RFC 3339 instant such as 2026-03-07T00:00:00Z ({e})"))
}

fn fmt(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

/// The preview of a schedule rolled by a business calendar read from `file`: one line per fire,
/// `<instant>` or `<instant> rolled from <instant>: <reason>`, and `skipped <instant>: <reason>`
/// for the fires the calendar removed.
fn run_business(
    mut spec: ScheduleSpec,
    file: &str,
    roll: &str,
    after: DateTime<Utc>,
    count: usize,
) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(file).with_context(|| format!("--calendar-file: reading {file}"))?;
    let cal: BusinessCalendarSpec = serde_json::from_str(&text)
        .with_context(|| format!("--calendar-file: {file} is not a calendar definition"))?;
    let roll: Roll = serde_json::from_value(serde_json::Value::String(roll.trim().to_string()))
        .map_err(|_| anyhow!("--roll: '{roll}' is not skip, following, preceding or modifiedFollowing"))?;
    let id =
        std::path::Path::new(file).file_stem().and_then(|s| s.to_str()).unwrap_or("calendar").to_string();
    let id: String =
        id.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '-' }).collect();
    let days = BusinessDays::single(&id, 1, &cal).map_err(|e| anyhow!("--calendar-file: {e}"))?;
    spec.business_calendar = Some(BusinessCalendarRef { calendar: id, roll });
    let schedule = Schedule::parse_with(&spec, after, Some(Arc::new(days))).map_err(anyhow::Error::new)?;
    let mut out = String::new();
    for line in schedule.preview_explained(after, count) {
        match line {
            PreviewFire::Fire { at, rolled_from: Some(from), reason: Some(r) } => {
                out.push_str(&format!("{} rolled from {}: {r}\n", fmt(at), fmt(from)))
            }
            PreviewFire::Fire { at, .. } => out.push_str(&format!("{}\n", fmt(at))),
            PreviewFire::Skipped { at, reason } => out.push_str(&format!("skipped {}: {reason}\n", fmt(at))),
        }
    }
    use std::io::Write;
    std::io::stdout().lock().write_all(out.as_bytes()).context("writing to stdout")?;
    Ok(())
}

pub(crate) fn run(args: PreviewArgs) -> anyhow::Result<()> {
    let after = match &args.after {
        Some(s) => instant("after", s)?,
        None => Utc::now(),
    };
    let count: usize =
        args.count.trim().parse().ok().filter(|n| (1..=MAX_COUNT).contains(n)).ok_or_else(|| {
            anyhow!("--count: '{}' is not a whole number from 1 to {MAX_COUNT}", args.count)
        })?;
    let jitter_window_secs: u32 = args.more.jitter_window_secs.trim().parse().map_err(|_| {
        anyhow!("--jitter-window-secs: '{}' is not a whole number of seconds", args.more.jitter_window_secs)
    })?;
    let spec = ScheduleSpec {
        expression: args.expression.clone(),
        expressions: args.also.clone(),
        timezone: args.tz.clone(),
        on_gap: args.on_gap.trim().parse()?,
        on_overlap: args.on_overlap.trim().parse()?,
        start: args.more.start.as_deref().map(|s| instant("start", s)).transpose()?,
        end: args.more.end.as_deref().map(|s| instant("end", s)).transpose()?,
        exclusions: Calendar {
            dates: args.more.exclude_dates.clone(),
            weekdays: args.more.exclude_weekdays.clone(),
        },
        jitter_window_secs,
        business_calendar: None,
    };
    if let Some(file) = &args.more.calendar_file {
        return run_business(spec, file, &args.more.roll, after, count);
    }
    // Without --start, rate() is anchored at --after, as if the job were created then.
    let schedule = Schedule::parse(&spec, after).map_err(anyhow::Error::new)?;
    let mut out = String::new();
    for fire in schedule.preview(after, count) {
        out.push_str(&fmt(fire));
        if let Some(job) = &args.more.job_id {
            out.push(' ');
            out.push_str(&fmt(schedule.dispatch_at(job, fire)));
        }
        if let (true, Some(i)) = (schedule.expression_count() > 1, schedule.expression_of(fire)) {
            out.push_str(&format!(" [{i}]"));
        }
        out.push('\n');
    }
    use std::io::Write;
    std::io::stdout().lock().write_all(out.as_bytes()).context("writing to stdout")?;
    Ok(())
}
