//! Per-job outcome events (docs/outcomes.md): what a fire's transitions tell the job's owner,
//! and the outbox entry that makes each one go out once.
//!
//! The transition that makes an event due (a worker's finish, a dead fire reaching the job's
//! auto-pause threshold) writes its [`OutboxEntry`] onto the execution item *in the same
//! conditional write*. Whoever flushes the outbox (the worker right after its write; after a
//! crash, the next worker to claim the execution or the reconciler) puts the event, then
//! deletes the entry. The entry's text is part of the event's id ([`event_id`]), so a
//! flush retried after a crash between the put and the delete sends the same id again.

use serde::{Deserialize, Serialize};

/// The `detail-type` of each outcome event on the stack's bus (`source` `sundial`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum OutcomeKind {
    /// The fire succeeded (only for jobs with `outcomeEvents.succeeded`).
    ExecutionSucceeded,
    /// An attempt failed and the fire will be retried (RETRY_WAIT).
    ExecutionFailed,
    /// The fire failed for good: a permanent error (FAILED) or its budget ran out (DEAD).
    ExecutionDead,
    /// The first success after one or more dead fires.
    JobRecovered,
    /// The job was paused after `autoPauseAfterDeadFires` dead fires in a row.
    JobAutoPaused,
    /// The fire had not finished by its `finishDeadlineSecs` (reported once, by the reconciler).
    FinishDeadlineMissed,
}

impl OutcomeKind {
    /// Every kind, in the order documented.
    pub const ALL: [OutcomeKind; 6] = [
        OutcomeKind::ExecutionSucceeded,
        OutcomeKind::ExecutionFailed,
        OutcomeKind::ExecutionDead,
        OutcomeKind::JobRecovered,
        OutcomeKind::JobAutoPaused,
        OutcomeKind::FinishDeadlineMissed,
    ];

    /// The event's `detail-type`.
    pub fn as_str(self) -> &'static str {
        match self {
            OutcomeKind::ExecutionSucceeded => "ExecutionSucceeded",
            OutcomeKind::ExecutionFailed => "ExecutionFailed",
            OutcomeKind::ExecutionDead => "ExecutionDead",
            OutcomeKind::JobRecovered => "JobRecovered",
            OutcomeKind::JobAutoPaused => "JobAutoPaused",
            OutcomeKind::FinishDeadlineMissed => "FinishDeadlineMissed",
        }
    }

    /// The kind named `s`.
    pub fn parse(s: &str) -> Option<OutcomeKind> {
        OutcomeKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// One pending event on an execution's outbox (a member of its string set `ob`):
/// `{kind}#{attempt}#{errorClass}#{errorCode}`, the last two empty when there is no error.
/// The attempt is part of it, so each failed attempt of one fire is its own entry.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct OutboxEntry {
    /// Which event.
    pub kind: OutcomeKind,
    /// The attempt the transition ended (0 for a job-level event raised without one).
    pub attempt: u32,
    /// The error's class (`retryable`, `permanent`), when the transition had an error.
    pub error_class: Option<String>,
    /// The error's code, when the transition had an error.
    pub error_code: Option<String>,
}

impl OutboxEntry {
    /// An entry without an error.
    pub fn new(kind: OutcomeKind, attempt: u32) -> Self {
        OutboxEntry { kind, attempt, error_class: None, error_code: None }
    }

    /// An entry for a transition that ended with an error of `class` and `code`.
    pub fn with_error(kind: OutcomeKind, attempt: u32, class: &str, code: &str) -> Self {
        OutboxEntry {
            kind,
            attempt,
            error_class: Some(class.to_string()),
            error_code: Some(code.replace('#', "_")),
        }
    }

    /// The set member stored on the execution item.
    pub fn encode(&self) -> String {
        format!(
            "{}#{}#{}#{}",
            self.kind.as_str(),
            self.attempt,
            self.error_class.as_deref().unwrap_or(""),
            self.error_code.as_deref().unwrap_or("")
        )
    }

    /// Reads a stored member (`None`: not an entry this version writes).
    pub fn parse(s: &str) -> Option<OutboxEntry> {
        let mut parts = s.splitn(4, '#');
        let kind = OutcomeKind::parse(parts.next()?)?;
        let attempt = parts.next()?.parse().ok()?;
        let some = |p: Option<&str>| p.filter(|v| !v.is_empty()).map(str::to_string);
        let error_class = some(parts.next());
        let error_code = some(parts.next());
        Some(OutboxEntry { kind, attempt, error_class, error_code })
    }
}

/// The event's id (`detail.eventId`): the same for every send of one entry, so a consumer
/// that keeps the ids it has seen for a day drops the one duplicate a crash between the put and
/// the outbox delete can cause.
pub fn event_id(tenant: &str, execution_id: &str, entry: &OutboxEntry) -> String {
    format!("{tenant}/{execution_id}/{}", entry.encode())
}

/// A job's outcome-event options (`outcomeEvents`). Failures and dead fires are always sent
/// when the deployment has an event bus; a job with `outcomeEvents` (even `{}`) or
/// `autoPauseAfterDeadFires` also tracks its dead fires in a row (`JobRecovered`, `deadFires`);
/// successes only when asked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(
    description = "The job's outcome events on the stack's EventBridge bus (docs/outcomes.md): ExecutionFailed and ExecutionDead are always sent; with outcomeEvents (even {}) the job also tracks its dead fires in a row and sends JobRecovered; succeeded adds ExecutionSucceeded."
)]
pub struct OutcomeEvents {
    /// Also send `ExecutionSucceeded` for each fire that succeeds (one event per fire).
    #[serde(default)]
    #[schema(default = false)]
    pub succeeded: bool,
}

/// Where a job's outcome events are also POSTed (`outcomeNotify`, docs/outcomes.md "HTTPS
/// notifications"): the fields of the HTTP target's, judged by the same target policy, signed
/// the same way (Standard Webhooks, `webhook-id` = the event's `eventId`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(
    description = "Each outcome event of the job is also POSTed as JSON to this URL (docs/outcomes.md, HTTPS notifications): the bus event's detail plus detailType, signed like a webhook target's call (webhook-id is the event's eventId), judged by the same address policy and allowlists as target.url."
)]
pub struct OutcomeNotify {
    /// The receiver (`https://`; the HTTP target's rules).
    #[schema(
        min_length = 8,
        max_length = 2048,
        pattern = "^https://",
        examples("https://hooks.example.com/outcomes")
    )]
    pub url: String,
    /// ARN of the Secrets Manager secret holding the signing key(s), as a webhook target's
    /// `signingSecretArn` (the tenant's own, tagged `sundial-tenant`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(
        nullable = false,
        max_length = 2048,
        pattern = "^arn:[a-z-]+:secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:.+$"
    )]
    pub signing_secret_arn: Option<String>,
}

/// Most failed deliveries of one notification before it is given up (the bus event is never
/// held back by it): each failed flush of the outbox (the worker's, the next claim's, each
/// reconciler run's, about a minute apart) counts one.
pub const MAX_NOTIFY_FAILURES: u32 = 5;

/// The outbox twin of an [`OutboxEntry`] for the job's `outcomeNotify`: written by the same
/// transition as the bus entry, deleted on its own once the receiver accepted it, so neither
/// delivery repeats the other. `Notify:{failures}:{deadFires}:{entry}`. The flush that sends
/// the bus event rewrites it with the event's `deadFires` (known only then) before it deletes
/// the bus entry, and a failed delivery with its count plus one; each rewrite is an add, then
/// a delete of the old member, so a crash between them leaves two, read as one.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct NotifyEntry {
    /// The event it delivers.
    pub entry: OutboxEntry,
    /// Deliveries that failed so far.
    pub failures: u32,
    /// The event's `deadFires`, once its bus event was sent (`None` before, or none to tell).
    pub dead_fires: Option<usize>,
}

const NOTIFY_PREFIX: &str = "Notify:";

impl NotifyEntry {
    /// The twin of `entry`, not yet tried.
    pub fn of(entry: &OutboxEntry) -> Self {
        NotifyEntry { entry: entry.clone(), failures: 0, dead_fires: None }
    }

    /// The set member.
    pub fn encode(&self) -> String {
        let dead = self.dead_fires.map(|d| d.to_string()).unwrap_or_default();
        format!("{NOTIFY_PREFIX}{}:{dead}:{}", self.failures, self.entry.encode())
    }

    /// Reads a stored member (`None`: not a notification entry).
    pub fn parse(s: &str) -> Option<NotifyEntry> {
        let mut parts = s.strip_prefix(NOTIFY_PREFIX)?.splitn(3, ':');
        let failures = parts.next()?.parse().ok()?;
        let dead = parts.next()?;
        let dead_fires = if dead.is_empty() { None } else { Some(dead.parse().ok()?) };
        Some(NotifyEntry { entry: OutboxEntry::parse(parts.next()?)?, failures, dead_fires })
    }
}

/// The outbox members a transition writes for `entries`: each bus entry, and its
/// [`NotifyEntry`] twin when the job has `outcomeNotify` (`notify`).
pub fn members(entries: &[OutboxEntry], notify: bool) -> Vec<String> {
    let twins = entries.iter().filter(|_| notify).map(|e| NotifyEntry::of(e).encode());
    entries.iter().map(OutboxEntry::encode).chain(twins).collect()
}

/// One outcome notification on its pool's notification queue (`{prefix}{pool}-notify`,
/// docs/outcomes.md): everything its delivery needs, taken from the execution when the flush
/// moved it out of the outbox. Its consumer POSTs `body` to `to` as `tenant`; a failure sends a
/// new copy with `failures` one more, delayed by [`notify_retry_delay_secs`], until
/// [`MAX_NOTIFY_FAILURES`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NotifyMessage {
    /// The execution's tenant: the delivery calls as this tenant.
    pub tenant: String,
    /// The execution's job.
    pub job_id: String,
    /// The execution's instant (ms).
    pub scheduled_ms: i64,
    /// The event it delivers.
    pub kind: OutcomeKind,
    /// The event's id: the `webhook-id` and `idempotency-key` (a receiver deduplicates by it).
    pub event_id: String,
    /// Where it goes.
    pub to: OutcomeNotify,
    /// The JSON body: the bus event's detail with `detailType`.
    pub body: String,
    /// Deliveries that failed so far.
    pub failures: u32,
}

impl NotifyMessage {
    /// The execution id it reports on.
    pub fn execution_id(&self) -> String {
        crate::keys::execution_id(&self.job_id, self.scheduled_ms)
    }
}

/// How long a notification waits before its next try after `failures` failed deliveries
/// (1 and up), at `base` seconds: base, 6×, 30×, 90× (10 s, 1 min, 5 min, 15 min at the
/// deployment's 10 s), never past SQS's 900 s delay. With base 0 (tests), at once.
pub fn notify_retry_delay_secs(failures: u32, base: u32) -> i32 {
    let factor: u32 = match failures {
        0 | 1 => 1,
        2 => 6,
        3 => 30,
        _ => 90,
    };
    base.saturating_mul(factor).min(900) as i32
}

/// The deployment's base of [`notify_retry_delay_secs`].
pub const NOTIFY_RETRY_BASE_SECS: u32 = 10;

/// Most dead fires in a row `autoPauseAfterDeadFires` may wait for.
pub const MAX_AUTO_PAUSE_AFTER: u32 = 100;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_reads_back_as_written_and_its_id_names_the_attempt() {
        let e = OutboxEntry::with_error(OutcomeKind::ExecutionFailed, 2, "retryable", "Http503#x");
        let text = e.encode();
        assert_eq!(text, "ExecutionFailed#2#retryable#Http503_x");
        assert_eq!(OutboxEntry::parse(&text).map(|e| e.encode()), Some(text.clone()));
        let plain = OutboxEntry::new(OutcomeKind::JobRecovered, 1);
        assert_eq!(OutboxEntry::parse(&plain.encode()), Some(plain.clone()));
        assert_eq!(OutboxEntry::parse("Nope#1##"), None);
        assert_ne!(
            event_id("acme", "j@1", &OutboxEntry::new(OutcomeKind::ExecutionFailed, 1)),
            event_id("acme", "j@1", &OutboxEntry::new(OutcomeKind::ExecutionFailed, 2)),
            "each failed attempt is its own event"
        );
    }

    #[test]
    fn a_notification_twin_reads_back_and_is_no_bus_entry() {
        let e = OutboxEntry::with_error(OutcomeKind::ExecutionDead, 3, "retryable", "Http503");
        let all = members(std::slice::from_ref(&e), true);
        assert_eq!(all, ["ExecutionDead#3#retryable#Http503", "Notify:0::ExecutionDead#3#retryable#Http503"]);
        assert_eq!(OutboxEntry::parse(&all[1]), None, "an older flusher leaves it alone");
        let twin = NotifyEntry { entry: e.clone(), failures: 4, dead_fires: Some(2) };
        assert_eq!(twin.encode(), "Notify:4:2:ExecutionDead#3#retryable#Http503");
        assert_eq!(NotifyEntry::parse(&twin.encode()), Some(twin));
        assert_eq!(NotifyEntry::parse(&all[0]), None);
        assert_eq!(members(std::slice::from_ref(&e), false), ["ExecutionDead#3#retryable#Http503"]);
    }

    #[test]
    fn a_notification_backs_off_to_the_sqs_delay_cap_and_reads_back() {
        let delays: Vec<i32> = (1..=5).map(|f| notify_retry_delay_secs(f, NOTIFY_RETRY_BASE_SECS)).collect();
        assert_eq!(delays, [10, 60, 300, 900, 900]);
        assert_eq!(notify_retry_delay_secs(3, 0), 0);
        assert_eq!(notify_retry_delay_secs(4, 1_000), 900, "never past SQS's cap");
        let m = NotifyMessage {
            tenant: "acme".into(),
            job_id: "nightly".into(),
            scheduled_ms: 1_764_547_200_000,
            kind: OutcomeKind::ExecutionDead,
            event_id: "acme/nightly@1764547200000/ExecutionDead#1##".into(),
            to: OutcomeNotify { url: "https://hooks.example/x".into(), signing_secret_arn: None },
            body: "{}".into(),
            failures: 2,
        };
        let json = serde_json::to_string(&m).unwrap_or_default();
        assert!(json.contains("\"kind\":\"ExecutionDead\"") && json.contains("\"failures\":2"), "{json}");
        assert_eq!(serde_json::from_str::<NotifyMessage>(&json).ok(), Some(m.clone()));
        assert_eq!(m.execution_id(), "nightly@1764547200000");
    }
}
