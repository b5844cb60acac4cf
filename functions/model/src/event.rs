//! Event triggers (docs/dependencies.md, "Event triggers"): a job whose definition sets
//! `events` also fires when an event for it arrives (`POST /v1/jobs/{jobId}/events`), each event
//! the same immutable execution as a scheduled fire, with the same fencing, retries, policies,
//! audit and metrics.
//!
//! **Which execution an event is.** Executions are keyed `(job, scheduledAt)`, so an event is
//! given an instant:
//! - by default, the event's own instant (`at`, else its arrival): one execution per event;
//! - with `oncePerPeriod`, the job's next scheduled fire at or after the event ("06:00, or as
//!   soon as the file lands, whichever comes first"): the event runs that fire now, and the
//!   tick's later put of the same instant is absorbed by the key; an event for a fire that
//!   already has its execution (run by the schedule or by an earlier event) is deduplicated.
//!
//! **Deduplication.** An event may carry a `key` (the file's name, the upstream's message id):
//! the first event with a key records the instant it was given (`EVT#{key}` on the job, kept 7
//! days), and a later event with the same key is given the same instant, hence the same
//! execution. Without a key, a repeated delivery of one event deduplicates only if it names the
//! same `at`.

use crate::definition::{invalid, ValidationError};
use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use sundial_schedule::Schedule;

/// The creation code of an execution made by an event (its first timeline event).
pub const EVENT_CODE: &str = "event";

/// How long an event key is remembered (seconds): a repeat within it is deduplicated.
pub const EVENT_KEY_RETENTION_SECS: i64 = 7 * 86_400;

/// How far in the past an event's `at` may be (a late delivery), and how far ahead (clock skew).
pub const MAX_EVENT_AGE_SECS: i64 = 86_400;
/// See [`MAX_EVENT_AGE_SECS`].
pub const MAX_EVENT_LEAD_SECS: i64 = 300;

/// A job's event trigger.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(
    description = "The job also fires on events (POST /v1/jobs/{jobId}/events). oncePerPeriod: an event runs the job's next scheduled fire now instead of making its own, so each fire runs once, at its instant or at the first event before it, whichever comes first.",
    examples(json!({"oncePerPeriod": true}))
)]
pub struct EventTrigger {
    /// An event runs the next scheduled fire at or after it (once per period) instead of its own
    /// execution.
    #[serde(default)]
    pub once_per_period: bool,
}

/// The instant (ms) an event at `at` is given on a job with `trigger` and `schedule`, or `None`
/// when `oncePerPeriod` and the schedule has no fire left.
pub fn event_instant(
    trigger: &EventTrigger,
    schedule: &Schedule,
    at: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    if trigger.once_per_period {
        schedule.next_after(at - Duration::milliseconds(1))
    } else {
        Some(at)
    }
}

/// How far past its `at` an event's instant may be moved to a free millisecond (events stamped
/// alike, or an instant of the schedule): more events than this at one instant are refused for
/// a retry.
pub const MAX_EVENT_NUDGE_MS: i64 = 1_000;

/// `instant`, or the first millisecond after it that is no instant of `schedule`: an event of
/// its own never takes (and so never replaces or merges with) a scheduled fire.
pub fn off_schedule(schedule: &Schedule, instant: DateTime<Utc>) -> DateTime<Utc> {
    let mut t = instant;
    for _ in 0..MAX_EVENT_NUDGE_MS {
        if schedule.next_after(t - Duration::milliseconds(1)) != Some(t) {
            return t;
        }
        t += Duration::milliseconds(1);
    }
    t
}

/// Longest event key (characters).
pub const MAX_EVENT_KEY_CHARS: usize = 200;

/// Checks an event's `key` (1–200 of `A-Z a-z 0-9 _ . - : / = @ +`: a file name, a message
/// id; hash anything else) and `at` (within
/// [`MAX_EVENT_AGE_SECS`] before `now` and [`MAX_EVENT_LEAD_SECS`] after).
pub fn validate_event(
    key: Option<&str>,
    at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Result<(), ValidationError> {
    if let Some(k) = key {
        let allowed = |c: char| c.is_ascii_alphanumeric() || "_.-:/=@+".contains(c);
        if k.is_empty() || k.len() > MAX_EVENT_KEY_CHARS || !k.chars().all(allowed) {
            return Err(invalid(
                "key",
                format!("must be 1-{MAX_EVENT_KEY_CHARS} characters of A-Z, a-z, 0-9 and _ . - : / = @ +"),
            ));
        }
    }
    if let Some(at) = at {
        if at < now - Duration::seconds(MAX_EVENT_AGE_SECS)
            || at > now + Duration::seconds(MAX_EVENT_LEAD_SECS)
        {
            return Err(invalid(
                "at",
                format!("must be within {MAX_EVENT_AGE_SECS} s before now and {MAX_EVENT_LEAD_SECS} s after"),
            ));
        }
    }
    Ok(())
}

/// An event as a source delivers it (a message body on a tenant's SQS queue, the `detail` of an
/// EventBridge event on a tenant's bus): which job, and the fields of `POST
/// /v1/jobs/{jobId}/events`. The tenant is never in it: it is the source's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EventMessage {
    /// The job to fire (one of the source's tenant's).
    pub job_id: String,
    /// Deduplication key; default: the source's own id of the message or event.
    #[serde(default)]
    pub key: Option<String>,
    /// Per-run parameters, merged over the job's.
    #[serde(default)]
    pub params: Option<serde_json::Value>,
    /// When the event happened (RFC 3339); default: the source's timestamp of it.
    #[serde(default)]
    pub at: Option<DateTime<Utc>>,
}

/// Largest message body an event source accepts (bytes): the API's request body limit.
pub const MAX_EVENT_MESSAGE_BYTES: usize = 16 * 1024;

/// Reads an event source's message: a JSON object `{jobId, key?, params?, at?}`; an error names
/// the field (`jobId`, `key`, `params`, `at`, or `body` when it is not such an object).
pub fn parse_event_message(body: &serde_json::Value) -> Result<EventMessage, ValidationError> {
    let serde_json::Value::Object(map) = body else {
        return Err(invalid("body", "must be a JSON object {jobId, key?, params?, at?}"));
    };
    for (k, v) in map {
        let known = ["jobId", "key", "params", "at"].contains(&k.as_str());
        if !known {
            return Err(invalid(k.clone(), "unknown field: an event is {jobId, key?, params?, at?}"));
        }
        let ok = match k.as_str() {
            "jobId" => v.is_string(),
            "key" => v.is_string() || v.is_null(),
            "at" => v.as_str().is_some_and(|s| DateTime::parse_from_rfc3339(s).is_ok()) || v.is_null(),
            _ => true,
        };
        if !ok {
            let what = match k.as_str() {
                "at" => "must be an RFC 3339 instant",
                _ => "must be a string",
            };
            return Err(invalid(k.clone(), what));
        }
    }
    if !map.contains_key("jobId") {
        return Err(invalid("jobId", "is required: the job the event fires"));
    }
    serde_json::from_value(body.clone()).map_err(|e| invalid("body", e.to_string()))
}

/// Reads a message body as text (an SQS body): JSON, at most [`MAX_EVENT_MESSAGE_BYTES`].
pub fn parse_event_body(body: &str) -> Result<EventMessage, ValidationError> {
    if body.len() > MAX_EVENT_MESSAGE_BYTES {
        return Err(invalid("body", format!("must be at most {MAX_EVENT_MESSAGE_BYTES} bytes")));
    }
    let v: serde_json::Value =
        serde_json::from_str(body).map_err(|e| invalid("body", format!("is not JSON: {e}")))?;
    parse_event_message(&v)
}

/// The deduplication key of a source's event without one of its own: the source's id of the
/// message (`sqs-{messageId}`, `eb-{eventId}`), so a redelivery of the same message or event
/// is the same execution. Ids outside the key's alphabet are hashed.
pub fn source_key(prefix: &str, id: &str) -> String {
    let allowed = |c: char| c.is_ascii_alphanumeric() || "_.-:/=@+".contains(c);
    let key = format!("{prefix}-{id}");
    if key.len() <= MAX_EVENT_KEY_CHARS && !id.is_empty() && id.chars().all(allowed) {
        key
    } else {
        format!("{prefix}-h{:016x}", sundial_hash::fnv1a(id.as_bytes()))
    }
}

/// The instant a source's event is given when it names none: the source's timestamp of it
/// (SQS `SentTimestamp`, EventBridge `time`) when within [`MAX_EVENT_AGE_SECS`] of `now` (and
/// not ahead of it), else its arrival: a message that sat in its queue for longer than a day is
/// an event of now, not refused.
pub fn source_instant(stamp: Option<DateTime<Utc>>, now: DateTime<Utc>) -> DateTime<Utc> {
    match stamp {
        Some(t) if t <= now && t >= now - Duration::seconds(MAX_EVENT_AGE_SECS) => t,
        _ => now,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sundial_schedule::ScheduleSpec;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).map(|t| t.with_timezone(&Utc)).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn an_event_of_its_own_never_takes_an_instant_of_the_schedule() {
        let every_second =
            Schedule::parse(&ScheduleSpec::new("* * * * * *", "UTC"), at("2026-01-01T00:00:00Z"))
                .unwrap_or_else(|e| panic!("{e:?}"));
        // EventBridge's whole-second time on an every-second job: the next millisecond
        assert_eq!(off_schedule(&every_second, at("2026-12-01T03:00:00Z")), at("2026-12-01T03:00:00.001Z"));
        // between instants: as it is
        assert_eq!(
            off_schedule(&every_second, at("2026-12-01T03:00:00.500Z")),
            at("2026-12-01T03:00:00.500Z")
        );
    }

    #[test]
    fn once_per_period_an_event_stands_for_the_next_fire_at_or_after_it() {
        let sch = Schedule::parse(&ScheduleSpec::new("0 0 6 * * *", "UTC"), at("2026-01-01T00:00:00Z"))
            .unwrap_or_else(|e| panic!("{e:?}"));
        let once = EventTrigger { once_per_period: true };
        // the file lands at 03:00: it runs the 06:00 fire, now
        assert_eq!(event_instant(&once, &sch, at("2026-12-01T03:00:00Z")), Some(at("2026-12-01T06:00:00Z")));
        // at the instant itself: that fire
        assert_eq!(event_instant(&once, &sch, at("2026-12-01T06:00:00Z")), Some(at("2026-12-01T06:00:00Z")));
        // after it: the next day's
        assert_eq!(
            event_instant(&once, &sch, at("2026-12-01T06:00:00.001Z")),
            Some(at("2026-12-02T06:00:00Z"))
        );
        let each = EventTrigger::default();
        assert_eq!(event_instant(&each, &sch, at("2026-12-01T03:00:00Z")), Some(at("2026-12-01T03:00:00Z")));
    }

    #[test]
    fn an_event_key_is_an_id_and_its_instant_is_recent() {
        let now = at("2026-12-01T12:00:00Z");
        assert!(validate_event(Some("file-2026-12-01.csv"), Some(now - Duration::hours(2)), now).is_ok());
        assert_eq!(validate_event(Some("a b"), None, now).map_err(|e| e.field), Err("key".into()));
        assert_eq!(
            validate_event(None, Some(now - Duration::days(2)), now).map_err(|e| e.field),
            Err("at".into())
        );
        assert_eq!(
            validate_event(None, Some(now + Duration::hours(1)), now).map_err(|e| e.field),
            Err("at".into())
        );
    }
    #[test]
    fn a_source_message_names_its_job_and_bad_fields_by_name() {
        let m = parse_event_body(
            r#"{"jobId":"nightly","key":"f.csv","params":{"a":1},"at":"2026-12-01T03:00:00Z"}"#,
        )
        .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(m.job_id, "nightly");
        assert_eq!(m.key.as_deref(), Some("f.csv"));
        assert_eq!(m.at, Some(at("2026-12-01T03:00:00Z")));
        let field = |b: &str| parse_event_body(b).map_err(|e| e.field).err();
        assert_eq!(field("not json"), Some("body".into()));
        assert_eq!(field("[1]"), Some("body".into()));
        assert_eq!(field(r#"{"key":"k"}"#), Some("jobId".into()));
        assert_eq!(field(r#"{"jobId":7}"#), Some("jobId".into()));
        assert_eq!(field(r#"{"jobId":"j","at":"yesterday"}"#), Some("at".into()));
        assert_eq!(field(r#"{"jobId":"j","tenant":"other"}"#), Some("tenant".into()));
        assert_eq!(
            field(&format!(r#"{{"jobId":"j","params":"{}"}}"#, "x".repeat(MAX_EVENT_MESSAGE_BYTES))),
            Some("body".into())
        );
    }

    #[test]
    fn a_source_event_without_key_or_instant_takes_the_sources() {
        assert_eq!(source_key("sqs", "0f1e-22aa"), "sqs-0f1e-22aa");
        let odd = source_key("eb", "a b");
        assert!(
            odd.starts_with("eb-h") && validate_event(Some(&odd), None, at("2026-12-01T00:00:00Z")).is_ok()
        );
        assert_eq!(odd, source_key("eb", "a b"));
        let now = at("2026-12-01T12:00:00Z");
        assert_eq!(source_instant(Some(at("2026-12-01T11:59:00Z")), now), at("2026-12-01T11:59:00Z"));
        assert_eq!(source_instant(Some(at("2026-11-29T11:59:00Z")), now), now);
        assert_eq!(source_instant(Some(at("2026-12-01T12:10:00Z")), now), now);
        assert_eq!(source_instant(None, now), now);
    }

    #[test]
    fn a_hashed_source_key_keeps_its_value() {
        // Golden values: a source's key is its execution's deduplication key, so a hash that
        // changed would make a redelivered message or event a second execution.
        assert_eq!(source_key("sqs", "a b"), "sqs-he63f991904833892");
        assert_eq!(source_key("eb", "ünïcode/id?"), "eb-h7ae7f7aa749f7dda");
        assert_eq!(source_key("sqs", ""), "sqs-hcbf29ce484222325");
    }
}
