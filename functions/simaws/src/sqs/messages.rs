//! Messages: send (with delays, and the seeded loss, duplication and extra delay faults),
//! receive (visibility, receive counts, redrive, long polls), delete and change visibility by
//! receipt handle, and the batch forms with per-entry results.

use super::{invalid, name_of_url, Msg, Queue, Sqs};
use crate::error::ApiError;
use crate::{Aws, Faults, State};
use serde_json::{json, Map, Value};
use std::time::Duration;

const MAX_BYTES: usize = 262_144;
const MAX_BATCH: usize = 10;

fn message_id(st: &mut State) -> String {
    let (a, b) = (st.rng.next_u64(), st.rng.next_u64());
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xffff,
        b >> 48,
        b & 0xffff_ffff_ffff
    )
}

fn handle(queue: &str, seq: u64, nonce: u64) -> String {
    crate::b64_encode(format!("{queue}\n{seq}\n{nonce}").as_bytes())
}

/// `(queue, seq, nonce)` of a receipt handle.
fn parse_handle(h: &str) -> Result<(String, u64, u64), ApiError> {
    let bad = || {
        ApiError::new(
            400,
            "ReceiptHandleIsInvalid",
            format!("The input receipt handle \"{h}\" is not a valid receipt handle."),
        )
        .with_query_error("ReceiptHandleIsInvalid;Sender")
    };
    let text = crate::b64_decode(h).and_then(|b| String::from_utf8(b).ok()).ok_or_else(bad)?;
    let mut parts = text.split('\n');
    let (q, s, n) = (parts.next(), parts.next(), parts.next());
    match (q, s.and_then(|s| s.parse().ok()), n.and_then(|n| n.parse().ok())) {
        (Some(q), Some(s), Some(n)) => Ok((q.to_string(), s, n)),
        _ => Err(bad()),
    }
}

fn attributes_size(v: &Value) -> usize {
    v.as_object().map_or(0, |m| {
        m.iter()
            .map(|(k, a)| {
                k.len()
                    + a["DataType"].as_str().map_or(0, str::len)
                    + a["StringValue"].as_str().map_or(0, str::len)
                    + a["BinaryValue"].as_str().map_or(0, |b| b.len() * 3 / 4)
            })
            .sum()
    })
}

/// Enqueues one message; `Ok(message id)`.
fn send_one(st: &mut State, url: &str, entry: &Value, now: i64, f: &Faults) -> Result<String, ApiError> {
    let body = entry["MessageBody"].as_str().unwrap_or_default();
    if body.is_empty() {
        return Err(ApiError::new(
            400,
            "MissingParameter",
            "The request must contain the parameter MessageBody.",
        ));
    }
    let attributes = entry.get("MessageAttributes").cloned().unwrap_or(Value::Null);
    let q = st.sqs.queue(url)?;
    let max = usize::try_from(q.attr("MaximumMessageSize")).unwrap_or(MAX_BYTES);
    if body.len() + attributes_size(&attributes) > max {
        return Err(invalid(format!(
            "One or more parameters are invalid. Reason: Message must be shorter than {max} bytes."
        )));
    }
    let delay_s = match entry["DelaySeconds"].as_i64() {
        Some(d) if !(0..=900).contains(&d) => {
            return Err(invalid(format!(
                "Value {d} for parameter DelaySeconds is invalid. Reason: must be between 0 and 900."
            )))
        }
        Some(d) => d,
        None => q.attr("DelaySeconds"),
    };
    let id = message_id(st);
    let lost = st.chance(f.sqs_lose_on_send);
    if let Some(h) = &st.on_send {
        h(url, body, lost, now);
    }
    if lost {
        st.fault("sqs_lose_on_send");
        return Ok(id);
    }
    let mut visible_at = now + delay_s * 1000;
    if st.chance(f.sqs_extra_delay_ms.0) {
        st.fault("sqs_extra_delay");
        visible_at += st.rng.below(f.sqs_extra_delay_ms.1 + 1) as i64;
    }
    st.sqs.seq += 1;
    let seq = st.sqs.seq;
    let msg = Msg {
        id: id.clone(),
        body: body.to_string(),
        attributes,
        sent_ms: now,
        visible_at,
        receives: 0,
        first_receive_ms: None,
        receipt: 0,
        lost_reply: false,
    };
    let q = st.sqs.queue_mut(url)?;
    q.ready.insert((visible_at, seq));
    q.msgs.insert(seq, msg);
    Ok(id)
}

fn check_batch(entries: &[Value], id_of: impl Fn(&Value) -> &str) -> Result<(), ApiError> {
    if entries.is_empty() {
        return Err(ApiError::new(
            400,
            "EmptyBatchRequest",
            "There should be at least one SendMessageBatchRequestEntry in the request.",
        ));
    }
    if entries.len() > MAX_BATCH {
        return Err(ApiError::new(
            400,
            "TooManyEntriesInBatchRequest",
            format!("Maximum number of entries per request are {MAX_BATCH}."),
        ));
    }
    for (i, e) in entries.iter().enumerate() {
        let id = id_of(e);
        if id.is_empty()
            || id.len() > 80
            || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(ApiError::new(400, "InvalidBatchEntryId", "A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long."));
        }
        if entries[..i].iter().any(|o| id_of(o) == id) {
            return Err(ApiError::new(400, "BatchEntryIdsNotDistinct", format!("Id {id} repeated.")));
        }
    }
    Ok(())
}

fn failed(id: &str, e: &ApiError) -> Value {
    json!({ "Id": id, "SenderFault": e.status < 500, "Code": e.code, "Message": e.message })
}

fn entry_id(e: &Value) -> &str {
    e["Id"].as_str().unwrap_or_default()
}

fn send_batch(st: &mut State, req: &Value, now: i64, f: &Faults) -> Result<Value, ApiError> {
    let url = req["QueueUrl"].as_str().unwrap_or_default();
    st.sqs.queue(url)?;
    let entries = req["Entries"].as_array().cloned().unwrap_or_default();
    check_batch(&entries, entry_id)?;
    let total: usize = entries
        .iter()
        .map(|e| e["MessageBody"].as_str().map_or(0, str::len) + attributes_size(&e["MessageAttributes"]))
        .sum();
    if total > MAX_BYTES {
        return Err(ApiError::new(
            400,
            "BatchRequestTooLong",
            format!("Batch requests cannot be longer than {MAX_BYTES} bytes."),
        ));
    }
    let (mut ok, mut bad) = (Vec::new(), Vec::new());
    for e in &entries {
        match send_one(st, url, e, now, f) {
            Ok(mid) => ok.push(json!({ "Id": entry_id(e), "MessageId": mid })),
            Err(err) => bad.push(failed(entry_id(e), &err)),
        }
    }
    Ok(json!({ "Successful": ok, "Failed": bad }))
}

/// Deletes by receipt handle: a handle older than the message's latest receive deletes nothing
/// (and succeeds), as SQS documents; so does a handle of a message already gone.
fn delete_one(sqs: &mut Sqs, url: &str, receipt: &str) -> Result<Option<String>, ApiError> {
    let (qname, seq, nonce) = parse_handle(receipt)?;
    let q = sqs.queue_mut(url)?;
    if qname != q.name {
        return Err(parse_handle("").err().unwrap_or_else(|| invalid("receipt handle of another queue")));
    }
    if let Some(m) = q.msgs.get(&seq) {
        if m.receipt == nonce {
            q.ready.remove(&(m.visible_at, seq));
            return Ok(q.msgs.remove(&seq).map(|m| m.body));
        }
    }
    Ok(None)
}

/// Tells the delete hook, if any, of each message `process` deleted.
fn deleted(st: &State, process: Option<&str>, bodies: &[String], now: i64) {
    let Some(h) = &st.on_delete else { return };
    for b in bodies {
        let mut live = st.sqs.live_bodies();
        h(process, b, &mut live, now);
    }
}

fn change_one(sqs: &mut Sqs, url: &str, receipt: &str, timeout: i64, now: i64) -> Result<(), ApiError> {
    if !(0..=43_200).contains(&timeout) {
        return Err(invalid(format!("Value {timeout} for parameter VisibilityTimeout is invalid. Reason: must be between 0 and 43200.")));
    }
    let (qname, seq, nonce) = parse_handle(receipt)?;
    let q = sqs.queue_mut(url)?;
    let gone = || {
        invalid(format!("Value {receipt} for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change."))
    };
    let m = q.msgs.get_mut(&seq).filter(|m| m.receipt == nonce && qname == q.name).ok_or_else(gone)?;
    if m.visible_at <= now {
        return Err(ApiError::new(400, "MessageNotInflight", "The message referred to isn't in flight.")
            .with_query_error("AWS.SimpleQueueService.MessageNotInflight;Sender"));
    }
    q.ready.remove(&(m.visible_at, seq));
    m.visible_at = now + timeout * 1000;
    q.ready.insert((m.visible_at, seq));
    Ok(())
}

pub(super) fn call(
    st: &mut State,
    (op, process): (&str, Option<&str>),
    req: &Value,
    now: i64,
    f: &Faults,
) -> Result<Value, ApiError> {
    let url = req["QueueUrl"].as_str().unwrap_or_default();
    let handle_of = |e: &Value| e["ReceiptHandle"].as_str().unwrap_or_default().to_string();
    match op {
        "SendMessage" => {
            let id = send_one(st, url, req, now, f)?;
            Ok(json!({ "MessageId": id }))
        }
        "SendMessageBatch" => send_batch(st, req, now, f),
        "DeleteMessage" => {
            let gone = delete_one(&mut st.sqs, url, &handle_of(req))?;
            deleted(st, process, gone.as_slice(), now);
            Ok(json!({}))
        }
        "ChangeMessageVisibility" => {
            let t = req["VisibilityTimeout"].as_i64().unwrap_or(0);
            change_one(&mut st.sqs, url, &handle_of(req), t, now).map(|_| json!({}))
        }
        _ => {
            st.sqs.queue(url)?;
            let entries = req["Entries"].as_array().cloned().unwrap_or_default();
            check_batch(&entries, entry_id)?;
            let (mut ok, mut bad, mut gone) = (Vec::new(), Vec::new(), Vec::new());
            for e in &entries {
                let r = if op == "DeleteMessageBatch" {
                    delete_one(&mut st.sqs, url, &handle_of(e)).map(|b| gone.extend(b))
                } else {
                    change_one(
                        &mut st.sqs,
                        url,
                        &handle_of(e),
                        e["VisibilityTimeout"].as_i64().unwrap_or(0),
                        now,
                    )
                };
                match r {
                    Ok(()) => ok.push(json!({ "Id": entry_id(e) })),
                    Err(err) => bad.push(failed(entry_id(e), &err)),
                }
            }
            deleted(st, process, &gone, now);
            Ok(json!({ "Successful": ok, "Failed": bad }))
        }
    }
}

/// What a receive returns of each message.
struct Wanted {
    max: usize,
    visibility_ms: Option<i64>,
    system: Vec<String>,
    user: Vec<String>,
    process: Option<String>,
}

fn names(req: &Value, field: &str) -> Vec<String> {
    req[field].as_array().into_iter().flatten().filter_map(|v| v.as_str().map(str::to_string)).collect()
}

fn render(q: &Queue, seq: u64, m: &Msg, w: &Wanted) -> Value {
    let all = |k: &str| w.system.iter().any(|n| n == "All" || n == k);
    let mut attrs = Map::new();
    if all("ApproximateReceiveCount") {
        attrs.insert("ApproximateReceiveCount".into(), json!(m.receives.to_string()));
    }
    if all("SentTimestamp") {
        attrs.insert("SentTimestamp".into(), json!(m.sent_ms.to_string()));
    }
    if all("ApproximateFirstReceiveTimestamp") {
        attrs.insert(
            "ApproximateFirstReceiveTimestamp".into(),
            json!(m.first_receive_ms.unwrap_or(m.sent_ms).to_string()),
        );
    }
    if all("SenderId") {
        attrs.insert("SenderId".into(), json!(crate::ddb::ACCOUNT));
    }
    let mut out =
        json!({ "MessageId": m.id, "ReceiptHandle": handle(&q.name, seq, m.receipt), "Body": m.body });
    if !attrs.is_empty() {
        out["Attributes"] = Value::Object(attrs);
    }
    let user: Map<String, Value> = m
        .attributes
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| {
            w.user.iter().any(|n| {
                n == "All" || n == ".*" || n == *k || n.strip_suffix(".*").is_some_and(|p| k.starts_with(p))
            })
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if !user.is_empty() {
        out["MessageAttributes"] = Value::Object(user);
    }
    out
}

/// Receives what is visible now (possibly nothing), redriving messages past their
/// `maxReceiveCount` to the dead-letter queue on the way.
fn receive_now(st: &mut State, url: &str, w: &Wanted, now: i64) -> Result<Vec<Value>, ApiError> {
    let q = st.sqs.queue(url)?;
    let (vis_ms, retention_ms, redrive) = (
        w.visibility_ms.unwrap_or(q.attr("VisibilityTimeout") * 1000),
        q.attr("MessageRetentionPeriod") * 1000,
        q.redrive(),
    );
    let name = q.name.clone();
    let (mut out, mut done) = (Vec::new(), Vec::new());
    let mut cursor = None;
    while out.len() < w.max {
        let q = st.sqs.queue_mut(url)?;
        let lower = cursor.map_or(std::ops::Bound::Unbounded, std::ops::Bound::Excluded);
        let Some(&(va, seq)) = q.ready.range((lower, std::ops::Bound::Included((now, u64::MAX)))).next()
        else {
            break;
        };
        cursor = Some((va, seq));
        if done.contains(&seq) {
            continue;
        }
        let Some(mut m) = q.msgs.remove(&seq) else { continue };
        q.ready.remove(&(va, seq));
        if now - m.sent_ms >= retention_ms {
            continue;
        }
        if let Some((dlq, _)) = redrive.as_ref().filter(|(d, max)| m.receives >= *max && *d != name) {
            if let Some(d) = st.sqs.queues.get_mut(dlq) {
                m.visible_at = now;
                d.ready.insert((now, seq));
                d.msgs.insert(seq, m);
                continue;
            }
        }
        let q = st.sqs.queue_mut(url)?;
        q.nonce += 1;
        m.receipt = q.nonce;
        m.receives += 1;
        m.first_receive_ms.get_or_insert(now);
        m.visible_at = now + vis_ms;
        q.ready.insert((m.visible_at, seq));
        out.push(render(q, seq, &m, w));
        done.push(seq);
        let p = st.faults_for(w.process.as_ref()).sqs_duplicate;
        if st.chance(p) {
            st.fault("sqs_duplicate");
            st.sqs.seq += 1;
            let dup = st.sqs.seq;
            let copy = Msg { visible_at: now, receipt: 0, ..m.clone() };
            let q = st.sqs.queue_mut(url)?;
            q.ready.insert((now, dup));
            q.msgs.insert(dup, copy);
            done.push(dup);
        }
        st.sqs.queue_mut(url)?.msgs.insert(seq, m);
    }
    Ok(out)
}

/// ReceiveMessage: returns at once when something is visible, else waits (in tokio time) up to
/// `WaitTimeSeconds` for a send, a visibility change or a delay or timeout to expire.
pub(super) async fn receive(aws: &Aws, req: &Value, process: Option<String>) -> Result<Value, ApiError> {
    let url = req["QueueUrl"].as_str().unwrap_or_default().to_string();
    let max = req["MaxNumberOfMessages"].as_i64().unwrap_or(1);
    if !(1..=10).contains(&max) {
        return Err(invalid(format!(
            "Value {max} for parameter MaxNumberOfMessages is invalid. Reason: must be between 1 and 10."
        )));
    }
    let visibility_ms = req["VisibilityTimeout"].as_i64().map(|v| v * 1000);
    let mut system = names(req, "AttributeNames");
    system.extend(names(req, "MessageSystemAttributeNames"));
    let w = Wanted {
        max: max as usize,
        visibility_ms,
        system,
        user: names(req, "MessageAttributeNames"),
        process,
    };
    let wait_s = match req["WaitTimeSeconds"].as_i64() {
        Some(s) if !(0..=20).contains(&s) => {
            return Err(invalid(format!(
                "Value {s} for parameter WaitTimeSeconds is invalid. Reason: must be between 0 and 20."
            )))
        }
        Some(s) => s,
        None => aws.lock().sqs.queue(&url)?.attr("ReceiveMessageWaitTimeSeconds"),
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(wait_s as u64);
    loop {
        let notified = aws.inner.notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let now = aws.now_ms();
        let next = {
            let mut st = aws.lock();
            let got = receive_now(&mut st, &url, &w, now)?;
            if !got.is_empty() || tokio::time::Instant::now() >= deadline {
                return Ok(if got.is_empty() { json!({}) } else { json!({ "Messages": got }) });
            }
            st.sqs.queues.get(name_of_url(&url)).and_then(|q| q.ready.iter().next().map(|(va, _)| *va))
        };
        let wake = match next {
            Some(va) if va > now => {
                deadline.min(tokio::time::Instant::now() + Duration::from_millis((va - now) as u64))
            }
            _ => deadline,
        };
        tokio::select! {
            _ = &mut notified => {}
            _ = tokio::time::sleep_until(wake) => {}
        }
    }
}
