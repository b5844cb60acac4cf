//! Next-fire computation for typical expressions in two zones.
//!
//! `cargo bench -p sundial-core --bench schedule`. Each benchmark walks a chain of
//! `next_after` calls (the trigger plane's pattern: next fire from the previous scheduled one),
//! so one iteration is one next fire. `cron_crate_*` measures the `cron` crate's own iterator
//! over naive wall-clock times, the floor under our cron path. `next_after/Europe/Berlin/*` puts
//! the Quartz day rules (`L`, `LW`, `#`, `dL`) beside a plain daily job (docs/schedule.md,
//! "Speed").

use std::hint::black_box;
use std::str::FromStr;

use chrono::{DateTime, TimeZone, Utc};
use criterion::{criterion_group, criterion_main, Criterion};
use sundial_schedule::{plan_misfire, MisfirePolicy, OverlapPolicy, Schedule, ScheduleSpec};

const EXPRESSIONS: &[(&str, &str)] = &[
    ("every_second", "* * * * * *"),
    ("every_15_min", "0 */15 * * * *"),
    ("hourly", "0 0 * * * *"),
    ("daily_0230", "0 30 2 * * *"),
    ("weekdays_0900_unix", "0 9 * * 1-5"),
    ("rate_10s", "rate(10 seconds)"),
];

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap()
}

fn bench_next(c: &mut Criterion) {
    let mut g = c.benchmark_group("next_after");
    for zone in ["America/New_York", "Europe/London"] {
        for (name, expr) in EXPRESSIONS {
            let s = Schedule::parse(&ScheduleSpec::new(*expr, zone), t0()).unwrap();
            let mut cursor = t0();
            g.bench_function(format!("{zone}/{name}"), |b| {
                b.iter(|| {
                    // Chain: next fire from the previous one; wrap before the schedule ends.
                    cursor = match s.next_after(black_box(cursor)) {
                        Some(f) if f.timestamp() < 4_000_000_000 => f,
                        _ => t0(),
                    };
                    cursor
                })
            });
        }
    }
    // Day rules next to a plain job at the same time of day.
    // `plain_daily_0900` goes through the `cron` crate; `L`, `LW`, `#` and `dL` through the
    // day-rule engine (schedule/days.rs). A business-calendar job belongs in
    // this group too, as `calendar_following_0900`, once its spec field exists.
    for (name, expr) in [
        ("plain_daily_0900", "0 0 9 * * *"),
        ("last_day_0900", "0 0 9 L * ?"),
        ("last_weekday_0900", "0 0 9 LW * ?"),
        ("second_monday_0900", "0 0 9 ? * MON#2"),
        ("last_friday_0900_unix", "0 9 * * 5L"),
    ] {
        let s = Schedule::parse(&ScheduleSpec::new(expr, "Europe/Berlin"), t0()).unwrap();
        let mut cursor = t0();
        g.bench_function(format!("Europe/Berlin/{name}"), |b| {
            b.iter(|| {
                cursor = match s.next_after(black_box(cursor)) {
                    Some(f) if f.timestamp() < 4_000_000_000 => f,
                    _ => t0(),
                };
                cursor
            })
        });
    }
    // `both` runs two passes.
    let mut spec = ScheduleSpec::new("0 */15 * * * *", "America/New_York");
    spec.on_overlap = OverlapPolicy::Both;
    let s = Schedule::parse(&spec, t0()).unwrap();
    let mut cursor = t0();
    g.bench_function("America/New_York/every_15_min_both", |b| {
        b.iter(|| {
            cursor = s.next_after(black_box(cursor)).unwrap_or_else(t0);
            cursor
        })
    });
    g.finish();
}

/// What the scan pays per job per tick for its schedule: a parse (before the cache) or a cache
/// hit (`trigger::cache::schedule_of`, keyed by the job's definition), plus the every-minute
/// check the advance makes.
fn bench_parse_vs_cache(c: &mut Criterion) {
    let cfg = sundial_core::config::Config::local("bench-", &["default"], 16);
    let def = sundial_model::JobDefinition::new(
        ScheduleSpec::new("0 0 9 * * 1-5", "Europe/London"),
        sundial_model::Target::http("https://x"),
    );
    let job = sundial_model::Job::new(&cfg, "t", "j", def, t0()).unwrap();
    let mut g = c.benchmark_group("scan_schedule");
    g.bench_function("parse", |b| {
        b.iter(|| Schedule::parse(black_box(&job.definition.schedule), job.anchor))
    });
    g.bench_function("cache_hit", |b| b.iter(|| sundial_core::trigger::cache::schedule_of(black_box(&job))));
    let s = Schedule::parse(&job.definition.schedule, job.anchor).unwrap();
    g.bench_function("fires_every_minute", |b| b.iter(|| s.fires_every_minute(black_box(t0()))));
    g.bench_function("daily_slot", |b| b.iter(|| s.daily_slot(black_box(t0()))));
    g.finish();
}

fn bench_cron_crate(c: &mut Criterion) {
    let mut g = c.benchmark_group("cron_crate");
    for (name, expr) in [("every_15_min", "0 */15 * * * *"), ("daily_0230", "0 30 2 * * *")] {
        let s = cron::Schedule::from_str(expr).unwrap();
        let mut cursor = t0();
        g.bench_function(name, |b| {
            b.iter(|| {
                cursor = s.after(black_box(&cursor)).next().unwrap_or_else(t0);
                cursor
            })
        });
    }
    g.finish();
}

fn bench_window(c: &mut Criterion) {
    // The trigger plane's call: one minute of an every-second job (60 fires).
    let s = Schedule::parse(&ScheduleSpec::new("* * * * * *", "Europe/London"), t0()).unwrap();
    c.bench_function("fires_between/every_second_1min", |b| {
        b.iter(|| s.fires_between(black_box(t0()), t0() + chrono::Duration::seconds(60), 1000))
    });
    // After a two-hour outage, every minute, fire_once.
    let s = Schedule::parse(&ScheduleSpec::new("0 * * * * *", "America/New_York"), t0()).unwrap();
    c.bench_function("plan_misfire/every_minute_2h_fire_once", |b| {
        b.iter(|| {
            plan_misfire(
                &s,
                black_box(t0()),
                t0() + chrono::Duration::hours(2),
                &MisfirePolicy::FireOnce,
                chrono::Duration::seconds(60),
            )
        })
    });
}

fn bench_parse(c: &mut Criterion) {
    // The trigger plane parses a stored spec once per job per scan.
    let mut g = c.benchmark_group("parse");
    for (name, expr) in
        [("daily_0230", "0 30 2 * * *"), ("weekdays_unix", "0 9 * * 1-5"), ("rate", "rate(5 minutes)")]
    {
        let spec = ScheduleSpec::new(expr, "America/New_York");
        g.bench_function(name, |b| b.iter(|| Schedule::parse(black_box(&spec), t0()).unwrap()));
    }
    g.finish();
}

/// A business-calendar job beside the plain cron ones: weekdays at 09:00 in Shanghai against a
/// calendar of ten years of 15 holidays a year plus make-up Saturdays, rolled
/// `modifiedFollowing` (the most work per fire: sources on both sides of each business day).
fn bench_business(c: &mut Criterion) {
    use std::sync::Arc;
    use sundial_schedule::{BusinessCalendarRef, BusinessCalendarSpec, BusinessDays, Roll};
    let mut holidays = Vec::new();
    let mut working = Vec::new();
    for year in 2026..2036 {
        for (m, d) in [(1, 1), (1, 28), (1, 29), (1, 30), (2, 2), (4, 6), (5, 1), (5, 4), (5, 5), (6, 19)] {
            holidays.push(format!("{year}-{m:02}-{d:02}"));
        }
        for d in 1..=5 {
            holidays.push(format!("{year}-10-{d:02}"));
        }
        working.push(format!("{year}-09-26"));
    }
    // Keep only make-up days that are not holidays (the validator refuses a date in both).
    working.retain(|w| !holidays.contains(w));
    let spec = BusinessCalendarSpec { holidays, working_days: working, ..Default::default() };
    let days = Arc::new(BusinessDays::single("cn-holidays", 1, &spec).unwrap());
    let mut g = c.benchmark_group("next_after_business");
    // The same job without a calendar, measured in the same run (the machine is shared and noisy).
    let plain = Schedule::parse(&ScheduleSpec::new("0 0 9 * * *", "Asia/Shanghai"), t0()).unwrap();
    let mut cursor = t0();
    g.bench_function("Asia/Shanghai/daily_0900_no_calendar", |b| {
        b.iter(|| {
            cursor = match plain.next_after(black_box(cursor)) {
                Some(f) if f.timestamp() < 2_082_758_400 => f,
                _ => t0(),
            };
            cursor
        })
    });
    for (name, expr, roll) in [
        ("Asia/Shanghai/daily_0900_following", "0 0 9 * * *", Roll::Following),
        ("Asia/Shanghai/daily_0900_modified_following", "0 0 9 * * *", Roll::ModifiedFollowing),
        ("Asia/Shanghai/monthly_1st_0900_modified_following", "0 0 9 1 * *", Roll::ModifiedFollowing),
        ("Asia/Shanghai/daily_0900_skip", "0 0 9 * * *", Roll::Skip),
    ] {
        let mut js = ScheduleSpec::new(expr, "Asia/Shanghai");
        js.business_calendar = Some(BusinessCalendarRef { calendar: "cn-holidays".into(), roll });
        let s = Schedule::parse_with(&js, t0(), Some(days.clone())).unwrap();
        let mut cursor = t0();
        g.bench_function(name, |b| {
            b.iter(|| {
                cursor = match s.next_after(black_box(cursor)) {
                    Some(f) if f.timestamp() < 2_082_758_400 => f, // before 2036
                    _ => t0(),
                };
                cursor
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench_next, bench_cron_crate, bench_window, bench_parse, bench_parse_vs_cache);
criterion_group!(business, bench_business);
criterion_main!(benches, business);
