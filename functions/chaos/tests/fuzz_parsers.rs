//! Property-based fuzzing of every parser that takes user input: schedule expressions and
//! zones (and the fire computations a parsed schedule then runs), job definition bodies, and
//! execution ids. Each must answer with a value or a typed error, never panic, whatever the
//! input. Cases are bounded so the suite stays fast; raise `PROPTEST_CASES` for a longer hunt.
//!
//! Inputs mix three sources: structured near-misses (cron tokens, `rate(..)` with extreme
//! numbers, `at(..)` with odd dates, valid zones with small mutations), random JSON shaped like
//! a job body, and arbitrary Unicode.

use chrono::{DateTime, Duration, Utc};
use proptest::prelude::*;
use proptest::test_runner::Config as ProptestConfig;
use serde_json::{json, Value};
use sundial_core::config::Config;
use sundial_model::keys;
use sundial_model::JobDefinition;
use sundial_schedule::{Schedule, ScheduleSpec};

fn cases(default: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(default);
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

const ZONES: &[&str] = &[
    "UTC",
    "Europe/London",
    "America/New_York",
    "Australia/Lord_Howe",
    "Asia/Kathmandu",
    "Pacific/Chatham",
    "America/Sao_Paulo",
    "Etc/GMT+12",
    "Etc/GMT-14",
    "Africa/Casablanca",
];

fn cron_token() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("*".to_string()),
        Just("?".to_string()),
        (0u64..100).prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        (0u32..80, 0u32..80).prop_map(|(a, b)| format!("{a}-{b}")),
        (0u32..80, 0u32..200).prop_map(|(a, b)| format!("{a}/{b}")),
        (0u32..80).prop_map(|a| format!("*/{a}")),
        (0u32..80, 0u32..80, 0u32..80).prop_map(|(a, b, c)| format!("{a},{b}-{c}")),
        prop::sample::select(vec![
            "MON",
            "tue",
            "SUN-SAT",
            "JAN",
            "dec",
            "JAN-DEC",
            "1L",
            "15W",
            "5#3",
            "LW",
            "L",
            "W",
            "L-3",
            "0#9",
            "7",
            "0-7",
            "MON-SUN/2",
            "FRI#5",
            "*/0",
            "-",
            ",",
            "//",
            "2100",
            "1970-2199",
        ])
        .prop_map(String::from),
        "[0-9a-zA-Z,/*?#LW-]{0,8}",
    ]
}

/// Tokens valid in most cron fields, with a few that are valid only in some.
fn plausible_cron_field() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => prop::sample::select(vec!["*", "0", "1", "5", "*/5", "*/15", "1-5", "0,30", "10-20/2", "?"])
            .prop_map(String::from),
        1 => prop::sample::select(vec!["MON-FRI", "JAN", "L", "15W", "5#2", "59", "23", "31", "2027"])
            .prop_map(String::from),
        1 => cron_token(),
    ]
}

fn expression() -> impl Strategy<Value = String> {
    let units = prop::sample::select(vec![
        "second", "seconds", "minute", "minutes", "hour", "hours", "day", "days", "weeks", "", "ms",
    ]);
    let number = prop_oneof![4 => 1i64..100_000, 1 => any::<i64>()];
    prop_oneof![
        // Five to seven fields of plausible tokens: often a valid cron, often a near miss.
        4 => prop::collection::vec(plausible_cron_field(), 5..=7).prop_map(|v| v.join(" ")),
        2 => prop::collection::vec(cron_token(), 0..9).prop_map(|v| v.join(" ")),
        3 => (number, units.clone()).prop_map(|(n, u)| format!("rate({n} {u})")),
        1 => (any::<u64>(), units).prop_map(|(n, u)| format!("rate( {n}  {u} )")),
        1 => "at\\([0-9T:. +Z-]{0,28}\\)",
        2 => (1970i32..=2200, 1u32..=12, 1u32..=28, 0u32..=23, 0u32..=59)
            .prop_map(|(y, mo, d, h, mi)| format!("at({y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:00)")),
        1 => (1i32..=9999, 0u32..=13, 0u32..=32, 0u32..=25, 0u32..=61)
            .prop_map(|(y, mo, d, h, mi)| format!("at({y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:00)")),
        1 => any::<String>(),
        1 => "\\PC{0,40}",
    ]
}

fn zone() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(ZONES.to_vec()).prop_map(String::from),
        1 => (prop::sample::select(ZONES.to_vec()), "[ a-z/+_-]{0,3}")
            .prop_map(|(z, s)| format!("{}{s}", z.to_lowercase())),
        1 => "[A-Za-z_/+0-9-]{0,30}",
        1 => any::<String>(),
    ]
}

/// Instants from 1900 to 2300, and a few extremes chrono can still represent. Users reach the
/// extremes: `serde_json` accepts `"+262142-12-31T23:59:59Z"` for a preview's `after` or a
/// schedule's `start`.
fn instant() -> impl Strategy<Value = DateTime<Utc>> {
    prop_oneof![
        4 => (-2_208_988_800i64..10_413_792_000).prop_map(|s| DateTime::from_timestamp(s, 0).unwrap_or_default()),
        // Two days inside chrono's range; the very edges have their own test (see below).
        1 => prop::sample::select(vec![
            DateTime::<Utc>::MIN_UTC + Duration::days(2),
            DateTime::<Utc>::MAX_UTC - Duration::days(2),
            DateTime::from_timestamp(0, 0).unwrap_or_default(),
        ]),
    ]
}

/// A `ScheduleSpec` as JSON, with any policy strings, optional bounds and exclusions.
fn spec_json() -> impl Strategy<Value = Value> {
    (
        expression(),
        zone(),
        prop_oneof![4 => prop::sample::select(vec!["skip", "shift"]), 1 => prop::sample::select(vec!["SKIP", ""])],
        prop_oneof![
            4 => prop::sample::select(vec!["first", "last", "both"]),
            1 => prop::sample::select(vec!["all", "x"])
        ],
        prop::option::of(instant()),
        prop::option::of(instant()),
        prop::collection::vec(
            prop_oneof![
                3 => (2000i32..2100, 1u32..=12, 1u32..=28).prop_map(|(y, m, d)| format!("{y}-{m:02}-{d:02}")),
                1 => "[0-9-]{0,12}|\\PC{0,6}"
            ],
            0..4
        ),
        prop::collection::vec(prop::sample::select(vec!["MON", "sun", "Funday", "", "7"]), 0..3),
        prop_oneof![4 => 0u32..3_600, 1 => any::<u32>()],
    )
        .prop_map(|(e, z, gap, overlap, start, end, dates, weekdays, jitter)| {
            let mut v = json!({"expression": e, "timezone": z, "onGap": gap, "onOverlap": overlap,
                               "exclusions": {"dates": dates, "weekdays": weekdays},
                               "jitterWindowSecs": jitter});
            if let Some(s) = start {
                v["start"] = json!(s);
            }
            if let Some(e) = end {
                v["end"] = json!(e);
            }
            v
        })
}

/// Everything a parsed schedule is then asked by the trigger, the API's preview and the misfire
/// planner. None of it may panic either.
fn exercise(s: &Schedule, at: DateTime<Utc>) {
    let next = s.next_after(at);
    let _ = s.prev_at_or_before(at);
    let _ = s.preview(at, 3);
    let _ = s.fires_between(at, at.checked_add_signed(Duration::days(1)).unwrap_or(at), 5);
    if let Some(f) = next {
        let _ = s.dispatch_at("job-1", f);
    }
    // The scan asks this with the tick's clock, never with a user's instant: keep to that domain.
    if (0..10_413_792_000).contains(&at.timestamp()) {
        let _ = s.fires_every_minute(at);
    }
}

proptest! {
    #![proptest_config(cases(600))]

    #[test]
    fn schedule_expressions_and_zones_never_panic(expr in expression(), tz in zone(), at in instant()) {
        match Schedule::parse(&ScheduleSpec::new(expr, tz), at) {
            Ok(s) => exercise(&s, at),
            Err(e) => {
                // A typed error that names its field, on one line (it is returned to API users).
                prop_assert!(!e.field().is_empty());
                prop_assert!(!e.to_string().contains('\n'), "{e}");
            }
        }
    }

    #[test]
    fn full_schedule_specs_never_panic(v in spec_json(), at in instant()) {
        if let Ok(spec) = serde_json::from_value::<ScheduleSpec>(v) {
            if let Ok(s) = Schedule::parse(&spec, spec.start.unwrap_or(at)) {
                exercise(&s, at);
            }
        }
    }
}

#[test]
fn the_generators_reach_both_accepted_and_refused_inputs() {
    // GIVEN 2,000 generated expressions in valid zones, and 2,000 generated job bodies
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let at = DateTime::from_timestamp(1_796_000_000, 0).unwrap_or_default();
    let cfg = Config::local("fuzz-", &["default", "slow"], 16);
    let (mut schedules_ok, mut bodies_parsed, mut bodies_valid) = (0, 0, 0);
    for _ in 0..2_000 {
        let e = expression().new_tree(&mut runner).map(|t| t.current()).unwrap_or_default();
        if Schedule::parse(&ScheduleSpec::new(e, "Europe/London"), at).is_ok() {
            schedules_ok += 1;
        }
        let body = job_body().new_tree(&mut runner).map(|t| t.current()).unwrap_or_default();
        if let Ok(def) = serde_json::from_value::<JobDefinition>(body) {
            bodies_parsed += 1;
            if def.validate(&cfg, "t", at).is_ok() {
                bodies_valid += 1;
            }
        }
    }
    // THEN the fuzzers reach past the first error: valid schedules, bodies that deserialize,
    // and bodies that pass validation all occur (not only rejections)
    println!("schedules accepted {schedules_ok}/2000, bodies parsed {bodies_parsed}, valid {bodies_valid}");
    assert!(schedules_ok > 100 && schedules_ok < 1_900, "{schedules_ok}");
    assert!(bodies_parsed > 20 && bodies_valid > 0, "{bodies_parsed} parsed, {bodies_valid} valid");
}

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| serde_json::Number::from_f64(f).map(Value::Number).unwrap_or(Value::Null)),
        "\\PC{0,12}".prop_map(Value::from),
    ]
}

fn json_any() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-zA-Z]{1,10}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

const KEYS: &[&str] = &[
    "schedule",
    "pool",
    "target",
    "params",
    "paramsRef",
    "misfire",
    "misfireThresholdSecs",
    "concurrency",
    "retry",
    "timeoutSecs",
];

/// Mostly in `1..hi`, sometimes any `u32`.
fn small(hi: u32) -> impl Strategy<Value = u32> {
    prop_oneof![4 => 1u32..hi, 1 => any::<u32>()]
}

/// A job body: known keys with plausible or random values.
fn job_body() -> impl Strategy<Value = Value> {
    let target = prop_oneof![
        "https?://[a-z.]{1,12}/[a-z]{0,5}".prop_map(|u| json!({"type": "http", "url": u})),
        "\\PC{0,20}".prop_map(|u| json!({"type": "http", "url": u})),
        "\\PC{0,20}".prop_map(|f| json!({"type": "lambda", "function": f})),
        "\\PC{0,20}".prop_map(|q| json!({"type": "sqs", "queueUrl": q})),
        "\\PC{0,70}".prop_map(|h| json!({"type": "inProcess", "handler": h})),
        json_any(),
    ];
    let retry = (prop_oneof![4 => 1i64..10, 1 => any::<i64>()], small(10), small(600), small(100_000))
        .prop_map(
            |(a, b, c, d)| json!({"maxAttempts": a, "baseDelaySecs": b, "maxDelaySecs": c, "maxAgeSecs": d}),
        );
    let misfire = prop_oneof![
        2 => Just(json!({"policy": "fireOnce"})),
        2 => prop_oneof![4 => 1i64..1_000, 1 => any::<i64>()].prop_map(|c| json!({"policy": "fireAll", "cap": c})),
        2 => Just(json!({"policy": "skip"})),
        1 => json_any(),
    ];
    (
        spec_json(),
        prop::sample::select(vec!["default", "", "bad pool", "slow"]),
        target,
        json_any(),
        retry,
        misfire,
        prop_oneof![4 => 0i64..3_600, 1 => any::<i64>()],
        small(3_600),
        prop_oneof![
            4 => prop::sample::select(vec!["ALLOW", "FORBID", "SERIALIZE", "REPLACE"]),
            1 => prop::sample::select(vec!["allow", "NEVER"])
        ],
        prop_oneof![
            3 => Just(vec![]),
            1 => prop::collection::vec((prop::sample::select(KEYS.to_vec()), json_any()), 1..3)
        ],
    )
        .prop_map(
            |(schedule, pool, target, params, retry, misfire, threshold, timeout, conc, overrides)| {
                let mut v = json!({"schedule": schedule, "pool": pool, "target": target, "params": params,
                               "retry": retry, "misfire": misfire, "misfireThresholdSecs": threshold,
                               "timeoutSecs": timeout, "concurrency": conc});
                for (k, x) in overrides {
                    v[k] = x;
                }
                v
            },
        )
}

/// A valid body, then a few byte-level edits of its text.
fn mutated_body() -> impl Strategy<Value = String> {
    let valid = json!({
        "schedule": {"expression": "0 30 2 * * *", "timezone": "Europe/London"},
        "target": {"type": "https", "url": "https://hooks.example.com/x"},
        "retry": {"maxAttempts": 3},
        "params": {"a": [1, 2, {"b": "c"}]}
    })
    .to_string();
    prop::collection::vec((any::<prop::sample::Index>(), 0u8..3, any::<char>()), 1..6).prop_map(
        move |edits| {
            let mut s: Vec<char> = valid.chars().collect();
            for (i, op, c) in edits {
                let at = i.index(s.len().max(1)).min(s.len());
                match op {
                    0 if at < s.len() => {
                        s.remove(at);
                    }
                    1 => s.insert(at, c),
                    _ if at < s.len() => s[at] = c,
                    _ => s.push(c),
                }
            }
            s.into_iter().collect()
        },
    )
}

fn validate_body(text: &str, now: DateTime<Utc>) {
    let cfg = Config::local("fuzz-", &["default", "slow"], 16);
    if let Ok(def) = serde_json::from_str::<JobDefinition>(text) {
        match def.validate(&cfg, "t", now) {
            Ok(s) => exercise(&s, now),
            Err(e) => assert!(!e.field.is_empty() && !e.reason.is_empty(), "{e:?}"),
        }
        let _ = sundial_model::Job::new(&cfg, "tenant-1", "job-1", def, now);
    }
}

proptest! {
    #![proptest_config(cases(600))]

    #[test]
    fn job_definition_bodies_never_panic(v in job_body(), now in instant()) {
        validate_body(&v.to_string(), now);
    }

    #[test]
    fn mutated_job_bodies_never_panic(text in mutated_body()) {
        validate_body(&text, DateTime::from_timestamp(1_796_000_000, 0).unwrap_or_default());
    }

    #[test]
    fn arbitrary_text_bodies_never_panic(text in "\\PC{0,200}") {
        validate_body(&text, DateTime::from_timestamp(1_796_000_000, 0).unwrap_or_default());
    }
}

fn id_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        ("[a-zA-Z0-9_.:-]{0,20}", "[+-]?[0-9]{0,25}").prop_map(|(j, n)| format!("{j}@{n}")),
        ("\\PC{0,10}", any::<i64>()).prop_map(|(j, n)| format!("{j}@{n}")),
        ("[a-z@]{0,10}", "@{0,3}", any::<u64>()).prop_map(|(j, a, n)| format!("{j}{a}@{n}")),
    ]
}

proptest! {
    #![proptest_config(cases(2_000))]

    #[test]
    fn execution_ids_never_panic_and_accepted_ones_round_trip(id in id_text()) {
        if let Ok((job, ms)) = keys::parse_execution_id(&id) {
            // What was accepted names a real key: rebuilding it parses to the same parts.
            prop_assert!(ms >= 0);
            let again = keys::execution_id(&job, ms);
            prop_assert_eq!(keys::parse_execution_id(&again).ok(), Some((job, ms)));
        }
    }

    #[test]
    fn every_well_formed_execution_id_is_accepted(job in "[a-zA-Z0-9_-]{1,64}", ms in 0i64..i64::MAX) {
        let id = keys::execution_id(&job, ms);
        prop_assert_eq!(keys::parse_execution_id(&id).ok(), Some((job, ms)), "{}", id);
    }
}

/// Found by this fuzzer (2026-11-30): `Schedule::next_after` panicked inside chrono ("Local time
/// out of range for `NaiveDateTime`", via `schedule::zone::local_of`) when `after` was within a
/// zone offset of chrono's last instant, in a zone east of UTC; a user can send that instant as
/// a preview's `after` (`"+262142-12-31T23:59:59Z"` deserializes). The schedule now answers from
/// its 1970-2100 bounds before converting.
#[test]
fn the_representable_extremes_do_not_panic() {
    for tz in ["Australia/Lord_Howe", "Pacific/Kiritimati", "Pacific/Pago_Pago", "UTC"] {
        for expr in ["* * 1 1 *", "rate(1 days)", "0 30 2 * * *"] {
            let spec = ScheduleSpec::new(expr, tz);
            for at in [DateTime::<Utc>::MAX_UTC, DateTime::<Utc>::MIN_UTC] {
                if let Ok(s) = Schedule::parse(&spec, at) {
                    assert_eq!(s.next_after(DateTime::<Utc>::MAX_UTC), None, "{expr} {tz}");
                    assert_eq!(s.prev_at_or_before(DateTime::<Utc>::MIN_UTC), None, "{expr} {tz}");
                    let _ = s.next_after(at);
                    let _ = s.prev_at_or_before(at);
                }
            }
        }
    }
}
