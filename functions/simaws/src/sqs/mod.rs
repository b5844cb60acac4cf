//! The simulated SQS (standard queues): queues with their attributes and tags, messages with
//! delays, visibility timeouts, receive counts and redrive to a dead-letter queue, long polls
//! that wait in tokio time and return when a message becomes visible, and the batch calls
//! with per-entry results. Queue URLs are AWS-shaped
//! (`https://sqs.us-east-1.amazonaws.com/000000000000/<name>`), so the product's strict queue
//! URL parser accepts them; any URL ending in `/<account>/<name>` finds the queue.
//!
//! Layout: this module (queues, attributes, dispatch), [`messages`] (send, receive, delete,
//! change visibility).

mod messages;

use crate::call::Call;
use crate::ddb::{ACCOUNT, REGION};
use crate::error::ApiError;
use crate::{Aws, QueueStats};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

/// One message, wherever it is in its life.
#[derive(Debug, Clone)]
pub(crate) struct Msg {
    pub(crate) id: String,
    pub(crate) body: String,
    pub(crate) attributes: Value,
    pub(crate) sent_ms: i64,
    pub(crate) visible_at: i64,
    pub(crate) receives: u32,
    pub(crate) first_receive_ms: Option<i64>,
    /// The nonce of the latest receipt handle (0: never received).
    pub(crate) receipt: u64,
    /// Sent by a request whose answer was lost: the sender's SDK sends it again, so this one
    /// is the transport's duplicate ([`Sqs::mark_lost_replies`]).
    pub(crate) lost_reply: bool,
}

pub(crate) struct Queue {
    pub(crate) name: String,
    pub(crate) url: String,
    pub(crate) arn: String,
    pub(crate) attrs: BTreeMap<String, String>,
    pub(crate) tags: BTreeMap<String, String>,
    created_ms: i64,
    modified_ms: i64,
    pub(crate) msgs: BTreeMap<u64, Msg>,
    /// `(visible_at, seq)` of every message: the receivable ones are a prefix.
    pub(crate) ready: BTreeSet<(i64, u64)>,
    pub(crate) nonce: u64,
}

/// Every queue of the account, by name.
#[derive(Default)]
pub(crate) struct Sqs {
    pub(crate) queues: BTreeMap<String, Queue>,
    pub(crate) seq: u64,
}

impl Sqs {
    /// Marks the messages a send answered with `reply` made (its `MessageId`s) as sent by a
    /// request whose answer was lost.
    pub(crate) fn mark_lost_replies(&mut self, reply: &[u8]) {
        let Ok(v) = serde_json::from_slice::<Value>(reply) else { return };
        let mut ids: Vec<&str> = v.get("MessageId").and_then(Value::as_str).into_iter().collect();
        if let Some(ok) = v.get("Successful").and_then(Value::as_array) {
            ids.extend(ok.iter().filter_map(|e| e.get("MessageId").and_then(Value::as_str)));
        }
        for q in self.queues.values_mut() {
            for m in q.msgs.values_mut().filter(|m| ids.contains(&m.id.as_str())) {
                m.lost_reply = true;
            }
        }
    }

    /// The messages a consumer may still receive: every queue's but a dead-letter queue's (a
    /// queue another one's redrive policy names), whose messages are parked for an operator,
    /// not delivered.
    fn live(&self) -> impl Iterator<Item = &Msg> {
        let dead: std::collections::BTreeSet<String> =
            self.queues.values().filter_map(|q| q.redrive().map(|(d, _)| d)).collect();
        self.queues
            .iter()
            .filter(move |(name, _)| !dead.contains(name.as_str()))
            .flat_map(|(_, q)| q.msgs.values())
    }

    /// The bodies of [`Sqs::live`]'s messages.
    pub(crate) fn live_bodies(&self) -> impl Iterator<Item = &str> {
        self.live().map(|m| m.body.as_str())
    }

    /// [`Sqs::live_bodies`] without the messages of sends whose answer was lost.
    pub(crate) fn live_bodies_answered(&self) -> impl Iterator<Item = &str> {
        self.live().filter(|m| !m.lost_reply).map(|m| m.body.as_str())
    }
}

const DEFAULTS: &[(&str, &str)] = &[
    ("VisibilityTimeout", "30"),
    ("DelaySeconds", "0"),
    ("MessageRetentionPeriod", "345600"),
    ("MaximumMessageSize", "262144"),
    ("ReceiveMessageWaitTimeSeconds", "0"),
];

/// Settable attributes and their bounds (`None`: free text, stored as given).
const SETTABLE: &[(&str, Option<(i64, i64)>)] = &[
    ("VisibilityTimeout", Some((0, 43_200))),
    ("DelaySeconds", Some((0, 900))),
    ("MessageRetentionPeriod", Some((60, 1_209_600))),
    ("MaximumMessageSize", Some((1024, 262_144))),
    ("ReceiveMessageWaitTimeSeconds", Some((0, 20))),
    ("RedrivePolicy", None),
    ("RedriveAllowPolicy", None),
    ("Policy", None),
    ("KmsMasterKeyId", None),
    ("KmsDataKeyReusePeriodSeconds", None),
    ("SqsManagedSseEnabled", None),
];

pub(crate) fn invalid(m: impl Into<String>) -> ApiError {
    ApiError::new(400, "InvalidParameterValue", m).with_query_error("InvalidParameterValue;Sender")
}

fn no_queue() -> ApiError {
    ApiError::new(400, "QueueDoesNotExist", "The specified queue does not exist.")
        .with_query_error("AWS.SimpleQueueService.NonExistentQueue;Sender")
}

fn check_attrs(attrs: &Map<String, Value>) -> Result<BTreeMap<String, String>, ApiError> {
    let mut out = BTreeMap::new();
    for (k, v) in attrs {
        if k == "FifoQueue" || k == "ContentBasedDeduplication" {
            return Err(ApiError::unknown_operation("SQS", "FIFO queues"));
        }
        let Some((_, bounds)) = SETTABLE.iter().find(|(n, _)| n == k) else {
            return Err(ApiError::new(400, "InvalidAttributeName", format!("Unknown Attribute {k}.")));
        };
        let v = v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string());
        if let Some((lo, hi)) = bounds {
            let n: i64 = v.parse().map_err(|_| {
                ApiError::new(400, "InvalidAttributeValue", format!("Invalid value for the parameter {k}."))
            })?;
            if n < *lo || n > *hi {
                return Err(ApiError::new(
                    400,
                    "InvalidAttributeValue",
                    format!("Invalid value for the parameter {k}."),
                ));
            }
        }
        if k == "RedrivePolicy" {
            redrive_of(&v)?;
        }
        out.insert(k.clone(), v);
    }
    Ok(out)
}

/// `(DLQ name, maxReceiveCount)` of a redrive policy.
fn redrive_of(text: &str) -> Result<(String, u32), ApiError> {
    let bad = || {
        ApiError::new(
            400,
            "InvalidAttributeValue",
            format!("Value {text} for parameter RedrivePolicy is invalid."),
        )
    };
    let v: Value = serde_json::from_str(text).map_err(|_| bad())?;
    let arn = v["deadLetterTargetArn"].as_str().ok_or_else(bad)?;
    let max = match &v["maxReceiveCount"] {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
    .filter(|m| (1..=1000).contains(m))
    .ok_or_else(bad)?;
    let name = arn.rsplit(':').next().ok_or_else(bad)?;
    Ok((name.to_string(), max as u32))
}

fn queue_url(name: &str) -> String {
    format!("https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{name}")
}

/// The queue name of a queue URL (`.../<account>/<name>`).
pub(crate) fn name_of_url(url: &str) -> &str {
    url.trim_end_matches('/').rsplit('/').next().unwrap_or_default()
}

impl Queue {
    pub(crate) fn attr(&self, k: &str) -> i64 {
        self.attrs.get(k).and_then(|v| v.parse().ok()).unwrap_or(0)
    }

    pub(crate) fn redrive(&self) -> Option<(String, u32)> {
        self.attrs.get("RedrivePolicy").and_then(|r| redrive_of(r).ok())
    }

    /// (visible, in flight, delayed) at `now`.
    pub(crate) fn depths(&self, now: i64) -> (usize, usize, usize) {
        let visible = self.ready.range(..=(now, u64::MAX)).count();
        let (mut in_flight, mut delayed) = (0, 0);
        for (_, seq) in self.ready.range((Bound::Excluded((now, u64::MAX)), Bound::Unbounded)) {
            match self.msgs.get(seq) {
                Some(m) if m.receives > 0 => in_flight += 1,
                Some(_) => delayed += 1,
                None => {}
            }
        }
        (visible, in_flight, delayed)
    }
}

impl Sqs {
    pub(crate) fn queue(&self, url: &str) -> Result<&Queue, ApiError> {
        self.queues.get(name_of_url(url)).ok_or_else(no_queue)
    }

    pub(crate) fn queue_mut(&mut self, url: &str) -> Result<&mut Queue, ApiError> {
        self.queues.get_mut(name_of_url(url)).ok_or_else(no_queue)
    }

    pub(crate) fn stats(&self, now: i64) -> Vec<QueueStats> {
        self.queues
            .values()
            .map(|q| {
                let (visible, in_flight, delayed) = q.depths(now);
                QueueStats { url: q.url.clone(), name: q.name.clone(), visible, in_flight, delayed }
            })
            .collect()
    }

    fn create(&mut self, req: &Value, now: i64) -> Result<Value, ApiError> {
        let name = req["QueueName"].as_str().unwrap_or_default();
        let ok = !name.is_empty()
            && name.len() <= 80
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !ok {
            return Err(invalid(format!(
                "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length: {name}"
            )));
        }
        let given = check_attrs(req["Attributes"].as_object().unwrap_or(&Map::new()))?;
        let tags: BTreeMap<String, String> = req["tags"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
            .collect();
        if let Some(q) = self.queues.get(name) {
            if given.iter().any(|(k, v)| q.attrs.get(k) != Some(v)) {
                return Err(ApiError::new(400, "QueueNameExists", format!("A queue already exists with the same name and a different value for attribute(s): {name}"))
                    .with_query_error("QueueAlreadyExists;Sender"));
            }
            return Ok(json!({ "QueueUrl": q.url }));
        }
        let mut attrs: BTreeMap<String, String> =
            DEFAULTS.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        attrs.extend(given);
        let url = queue_url(name);
        let arn = format!("arn:aws:sqs:{REGION}:{ACCOUNT}:{name}");
        let q = Queue {
            name: name.to_string(),
            url: url.clone(),
            arn,
            attrs,
            tags,
            created_ms: now,
            modified_ms: now,
            msgs: BTreeMap::new(),
            ready: BTreeSet::new(),
            nonce: 0,
        };
        self.queues.insert(name.to_string(), q);
        Ok(json!({ "QueueUrl": url }))
    }

    fn get_attributes(&self, req: &Value, now: i64) -> Result<Value, ApiError> {
        let q = self.queue(req["QueueUrl"].as_str().unwrap_or_default())?;
        let (visible, in_flight, delayed) = q.depths(now);
        let mut all: BTreeMap<String, String> = q.attrs.clone();
        all.insert("ApproximateNumberOfMessages".into(), visible.to_string());
        all.insert("ApproximateNumberOfMessagesNotVisible".into(), in_flight.to_string());
        all.insert("ApproximateNumberOfMessagesDelayed".into(), delayed.to_string());
        all.insert("QueueArn".into(), q.arn.clone());
        all.insert("CreatedTimestamp".into(), (q.created_ms / 1000).to_string());
        all.insert("LastModifiedTimestamp".into(), (q.modified_ms / 1000).to_string());
        let names: Vec<&str> =
            req["AttributeNames"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        let mut out = Map::new();
        for n in &names {
            if *n == "All" {
                out.extend(all.iter().map(|(k, v)| (k.clone(), json!(v))));
            } else if let Some(v) = all.get(*n) {
                out.insert(n.to_string(), json!(v));
            } else if !SETTABLE.iter().any(|(s, _)| s == n) {
                return Err(ApiError::new(400, "InvalidAttributeName", format!("Unknown Attribute {n}.")));
            }
        }
        Ok(if out.is_empty() { json!({}) } else { json!({ "Attributes": out }) })
    }

    fn list(&self, req: &Value) -> Value {
        let prefix = req["QueueNamePrefix"].as_str().unwrap_or("");
        let max = req["MaxResults"].as_u64().map_or(1000, |m| m.clamp(1, 1000) as usize);
        let after = req["NextToken"].as_str().unwrap_or("");
        let names: Vec<&Queue> = self
            .queues
            .values()
            .filter(|q| q.name.starts_with(prefix) && q.name.as_str() > after)
            .take(max + 1)
            .collect();
        let mut out =
            json!({ "QueueUrls": names.iter().take(max).map(|q| q.url.clone()).collect::<Vec<_>>() });
        if names.len() > max && req["MaxResults"].is_u64() {
            out["NextToken"] = json!(names[max - 1].name);
        }
        out
    }

    fn admin(&mut self, op: &str, req: &Value, now: i64) -> Result<Value, ApiError> {
        let url = req["QueueUrl"].as_str().unwrap_or_default();
        match op {
            "CreateQueue" => self.create(req, now),
            "GetQueueUrl" => {
                let name = req["QueueName"].as_str().unwrap_or_default();
                Ok(json!({ "QueueUrl": self.queues.get(name).ok_or_else(no_queue)?.url }))
            }
            "GetQueueAttributes" => self.get_attributes(req, now),
            "SetQueueAttributes" => {
                let given = check_attrs(req["Attributes"].as_object().unwrap_or(&Map::new()))?;
                let q = self.queue_mut(url)?;
                q.attrs.extend(given);
                q.modified_ms = now;
                Ok(json!({}))
            }
            "ListQueues" => Ok(self.list(req)),
            "ListQueueTags" => {
                let q = self.queue(url)?;
                Ok(if q.tags.is_empty() { json!({}) } else { json!({ "Tags": q.tags }) })
            }
            "TagQueue" => {
                let q = self.queue_mut(url)?;
                for (k, v) in req["Tags"].as_object().into_iter().flatten() {
                    q.tags.insert(k.clone(), v.as_str().unwrap_or("").to_string());
                }
                Ok(json!({}))
            }
            "UntagQueue" => {
                let q = self.queue_mut(url)?;
                for k in req["TagKeys"].as_array().into_iter().flatten().filter_map(Value::as_str) {
                    q.tags.remove(k);
                }
                Ok(json!({}))
            }
            "PurgeQueue" => {
                let q = self.queue_mut(url)?;
                q.msgs.clear();
                q.ready.clear();
                Ok(json!({}))
            }
            "DeleteQueue" => {
                self.queues.remove(name_of_url(url)).ok_or_else(no_queue)?;
                Ok(json!({}))
            }
            _ => Err(ApiError::unknown_operation("SQS", op)),
        }
    }
}

/// Runs one SQS operation.
pub(crate) async fn call(aws: &Aws, call: &Call) -> Result<Value, ApiError> {
    let req = &call.json;
    let r = match call.op.as_str() {
        "ReceiveMessage" => return messages::receive(aws, req, call.process.clone()).await,
        "SendMessage"
        | "SendMessageBatch"
        | "DeleteMessage"
        | "DeleteMessageBatch"
        | "ChangeMessageVisibility"
        | "ChangeMessageVisibilityBatch" => {
            let now = aws.now_ms();
            let mut st = aws.lock();
            let faults = st.faults_for(call.process.as_ref());
            messages::call(&mut st, (&call.op, call.process.as_deref()), req, now, &faults)
        }
        op => {
            let now = aws.now_ms();
            aws.lock().sqs.admin(op, req, now)
        }
    };
    if r.is_ok() {
        aws.inner.notify.notify_waiters();
    }
    r
}
