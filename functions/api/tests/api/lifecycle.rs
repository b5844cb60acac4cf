//! Job and execution lifecycles through the API: optimistic concurrency, versioned edits,
//! pause / resume / delete against the real trigger scan, and the audited dead-letter replay.

use crate::common::{at, job_body, Harness};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use sundial_core::execution::target::in_process::{BoxFuture, Handler, HandlerContext, Handlers};
use sundial_core::trigger::scan::ScanOptions;
use sundial_model::claim::{Finish, LeaseTerms};
use sundial_model::retry::RunError;
use sundial_model::{ExecStatus, Execution};
use sundial_store::executions::{ExecKey, FinishResult};
use sundial_tests::fixtures;
use sundial_tests::trigger::{executions, scan};

async fn put(
    h: &Harness,
    tenant: &str,
    job: &str,
    body: &Value,
    if_match: Option<&str>,
) -> crate::common::Answer {
    let mut hdrs: Vec<(&str, &str)> = vec![("content-type", "application/json")];
    if let Some(m) = if_match {
        hdrs.push(("if-match", m));
    }
    h.call(tenant, "PUT", &format!("/v1/jobs/{job}"), Some(&body.to_string()), &hdrs).await
}

fn scheduled(es: &[Execution]) -> Vec<DateTime<Utc>> {
    es.iter().map(|e| e.scheduled_at).collect()
}

#[tokio::test]
async fn if_match_guards_edits_and_a_stale_version_changes_nothing() {
    // GIVEN a job at version 1, read by two editors
    let h = Harness::new("ifmatch", at("2026-12-01T10:00:05Z")).await;
    let created = h.create("acme", "report", "0 0 6 * * *").await;
    assert_eq!(created["nextFires"].as_array().map(Vec::len), Some(5), "create returns the next 5 fires");
    assert_eq!(created["nextFires"][0], "2026-12-02T06:00:00.000Z");
    let read = h.get("acme", "/v1/jobs/report").await;
    let etag = read.header("etag").unwrap().to_string();
    assert_eq!(etag, "\"1\"");
    // WHEN the first editor saves with the ETag
    let mut b1 = job_body("report", "0 0 7 * * *");
    b1["params"] = json!({"v": 2});
    let a = put(&h, "acme", "report", &b1, Some(&etag)).await;
    // THEN it is version 2 with a new ETag
    assert_eq!((a.status, &a.body["job"]["version"]), (200, &json!(2)), "{}", a.body);
    assert_eq!(a.header("etag"), Some("\"2\""));
    // WHEN the second editor saves with the same (now stale) ETag
    let mut b2 = job_body("report", "0 0 8 * * *");
    b2["params"] = json!({"v": 3});
    let a = put(&h, "acme", "report", &b2, Some(&etag)).await;
    // THEN 412 names If-Match, and the job is exactly the first editor's version
    assert_eq!((a.status, a.error_field()), (412, Some("If-Match")), "{}", a.body);
    let now = h.get("acme", "/v1/jobs/report").await;
    assert_eq!(now.body["version"], 2);
    assert_eq!(now.body["definition"]["schedule"]["expression"], "0 0 7 * * *");
    assert_eq!(now.body["definition"]["params"], json!({"v": 2}));
    // AND a version number works as If-Match too, and no If-Match at all is 428
    let a = put(&h, "acme", "report", &b2, None).await;
    assert_eq!((a.status, a.error_field()), (428, Some("If-Match")));
    let a = put(&h, "acme", "report", &b2, Some("2")).await;
    assert_eq!(a.status, 200, "{}", a.body);
    // AND every version is kept, immutable
    let v1 = h.get("acme", "/v1/jobs/report/versions/1").await;
    assert_eq!(v1.body["definition"]["schedule"]["expression"], "0 0 6 * * *");
    assert_eq!(h.get("acme", "/v1/jobs/report/versions/9").await.status, 404);
    // AND the operations log says who went from which version to which, newest first
    let ops = h.get("acme", "/v1/operations?jobId=report").await;
    let trail: Vec<(String, Value, Value)> = ops.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (o["action"].as_str().unwrap().to_string(), o["fromVersion"].clone(), o["toVersion"].clone())
        })
        .collect();
    assert_eq!(
        trail,
        vec![
            ("update".into(), json!(2), json!(3)),
            ("update".into(), json!(1), json!(2)),
            ("create".into(), Value::Null, json!(1)),
        ]
    );
    assert!(ops.body["items"].as_array().unwrap().iter().all(|o| o["actor"] == "api:acme-user"));
    h.env.cleanup().await;
}

#[tokio::test]
async fn an_edit_moves_queued_ahead_executions_to_the_new_version_and_never_rewrites_history() {
    // GIVEN a job every 20 s whose next fires the create already queued (version 1)
    let t0 = at("2026-12-01T10:00:05Z");
    let h = Harness::new("edit", t0).await;
    h.create("acme", "sync", "rate(20 seconds)").await;
    let before = executions(&h.env, "acme", "sync").await.unwrap();
    assert!(!before.is_empty(), "create dispatches the fires up to the end of the next minute");
    assert!(before.iter().all(|e| e.def_version == 1 && e.definition.params == json!({"v": 1})));
    // WHEN the params are edited at t0 + 10 s
    h.clock.set(at("2026-12-01T10:00:15Z"));
    let mut b = job_body("sync", "rate(20 seconds)");
    b["params"] = json!({"v": 2});
    let a = put(&h, "acme", "sync", &b, Some("1")).await;
    assert_eq!(a.status, 200, "{}", a.body);
    // AND the tick later creates the fires after those
    scan(&h.env, at("2026-12-01T10:02:00Z"), &ScanOptions::default()).await.unwrap();
    // THEN every fire after the edit runs version 2: the ones queued before it were amended
    // (audited on their timeline), the later ones created with it
    let edit = at("2026-12-01T10:00:15Z");
    let after = executions(&h.env, "acme", "sync").await.unwrap();
    for e in after.iter().filter(|e| e.scheduled_at > edit) {
        assert_eq!((e.def_version, &e.definition.params), (2, &json!({"v": 2})), "{}", e.id());
        if before.iter().any(|b| b.scheduled_at == e.scheduled_at) {
            let note = e.timeline.last().map(|ev| (ev.code.clone(), ev.actor.clone()));
            assert_eq!(note, Some((Some("Amended".into()), "api:acme-user".into())), "{}", e.id());
        }
    }
    assert_eq!(a.body["amendedExecutions"].as_array().map(Vec::len), Some(before.len()));
    // AND history is never rewritten: an execution whose instant passed keeps its version
    assert!(after.iter().filter(|e| e.scheduled_at <= edit).all(|e| e.def_version == 1));
    h.env.cleanup().await;
}

#[tokio::test]
async fn pause_stops_new_executions_and_resume_restarts_without_a_misfire_storm() {
    // GIVEN a job every 10 s created at 10:00:05; the create queued fires through 10:01:59
    let h = Harness::new("pause", at("2026-12-01T10:00:05Z")).await;
    h.create("acme", "beat", "rate(10 seconds)").await;
    let queued = executions(&h.env, "acme", "beat").await.unwrap();
    assert!(queued.len() >= 10, "{}", queued.len());
    // WHEN it is paused at 10:00:30
    h.clock.set(at("2026-12-01T10:00:30Z"));
    let a = h.post("acme", "/v1/jobs/beat/pause", &json!({})).await;
    assert_eq!((a.status, &a.body["job"]["state"]), (200, &json!("PAUSED")), "{}", a.body);
    // THEN every execution queued for a later fire is held (by the API, audited: it runs only if
    // the job is resumed before its instant), earlier ones are not
    let es = executions(&h.env, "acme", "beat").await.unwrap();
    let pause = at("2026-12-01T10:00:30Z");
    let held_note = |e: &Execution| e.timeline.last().and_then(|ev| ev.code.clone());
    for e in &es {
        assert_eq!(e.status, ExecStatus::Ready, "{}", e.id());
        if e.scheduled_at > pause {
            assert_eq!(held_note(e).as_deref(), Some("HeldByPause"), "{}", e.id());
            assert_eq!(e.timeline.last().map(|ev| ev.actor.as_str()), Some("api:acme-user"));
        } else {
            assert_eq!(held_note(e), None, "{}", e.id());
        }
    }
    assert_eq!(
        a.body["heldExecutions"].as_array().map(Vec::len),
        Some(es.iter().filter(|e| e.scheduled_at > pause).count())
    );
    // AND ticks while paused create nothing
    for t in ["2026-12-01T10:01:00Z", "2026-12-01T10:03:00Z", "2026-12-01T10:09:00Z"] {
        let r = scan(&h.env, at(t), &ScanOptions::default()).await.unwrap();
        assert_eq!(r.created, 0, "tick at {t}");
    }
    assert_eq!(executions(&h.env, "acme", "beat").await.unwrap().len(), es.len());
    // AND pausing again changes nothing (no new version)
    let again = h.post("acme", "/v1/jobs/beat/pause", &json!({})).await;
    assert_eq!(again.body["job"]["version"], a.body["job"]["version"]);
    // WHEN it is resumed at 10:10:02
    let resume = at("2026-12-01T10:10:02Z");
    h.clock.set(resume);
    let r = h.post("acme", "/v1/jobs/beat/resume", &json!({})).await;
    assert_eq!((r.status, &r.body["job"]["state"]), (200, &json!("ENABLED")), "{}", r.body);
    scan(&h.env, at("2026-12-01T10:11:00Z"), &ScanOptions::default()).await.unwrap();
    // THEN it fires again from the first fire after the resume, and nothing for the paused period
    let es = executions(&h.env, "acme", "beat").await.unwrap();
    let new: Vec<&Execution> = es.iter().filter(|e| e.created_at >= resume).collect();
    assert!(!new.is_empty(), "resume restarts the job");
    assert!(new.iter().all(|e| e.scheduled_at > resume), "{:?}", scheduled(&es));
    assert!(new.iter().all(|e| e.missed_range.is_none()), "no misfire batch for the pause");
    // (the paused period's executions, held through their instants, are canceled by the
    // resume, which lists them: none runs)
    let paused_gap: Vec<&Execution> =
        es.iter().filter(|e| e.scheduled_at > pause && e.scheduled_at <= resume).collect();
    assert!(!paused_gap.is_empty());
    for e in &paused_gap {
        let code = e.last_error.as_ref().map(|x| x.0.as_str());
        assert_eq!((e.status, code), (ExecStatus::Canceled, Some("Paused")), "{}: {:?}", e.id(), e.timeline);
    }
    assert_eq!(r.body["canceledExecutions"].as_array().map(Vec::len), Some(paused_gap.len()), "{}", r.body);
    assert_eq!(r.body["nextFires"][0], "2026-12-01T10:10:05.000Z");
    h.env.cleanup().await;
}

#[tokio::test]
async fn delete_is_soft_stops_triggering_and_keeps_history() {
    // GIVEN a job with a manual run and queued fires
    let h = Harness::new("delete", at("2026-12-01T10:00:05Z")).await;
    h.create("acme", "old", "rate(30 seconds)").await;
    let run = h.post("acme", "/v1/jobs/old/trigger", &json!({})).await;
    let run_id = run.body["executionId"].as_str().unwrap().to_string();
    // WHEN it is deleted
    h.clock.set(at("2026-12-01T10:00:10Z"));
    let d = h.call("acme", "DELETE", "/v1/jobs/old", None, &[]).await;
    assert_eq!((d.status, &d.body["job"]["state"]), (200, &json!("DELETED")), "{}", d.body);
    // THEN the definition is still readable, marked deleted, with its history
    let j = h.get("acme", "/v1/jobs/old").await;
    assert_eq!((j.status, &j.body["state"]), (200, &json!("DELETED")));
    let es = h.get("acme", "/v1/jobs/old/executions?order=asc").await;
    assert_eq!(es.status, 200);
    assert!(es.body["items"].as_array().unwrap().iter().any(|e| e["executionId"] == run_id.as_str()));
    assert_eq!(h.get("acme", &format!("/v1/executions/{run_id}")).await.status, 200);
    // AND later fires were cancelled, and ticks create nothing
    assert!(!d.body["canceledExecutions"].as_array().unwrap().is_empty());
    let r = scan(&h.env, at("2026-12-01T10:05:00Z"), &ScanOptions::default()).await.unwrap();
    assert_eq!(r.created, 0);
    // AND it is hidden from the list unless asked for, its id is not reusable, and it cannot be resumed
    let list = h.get("acme", "/v1/jobs").await;
    assert!(list.body["items"].as_array().unwrap().is_empty());
    let list = h.get("acme", "/v1/jobs?includeDeleted=true").await;
    assert_eq!(list.body["items"][0]["state"], "DELETED");
    assert_eq!(h.post("acme", "/v1/jobs", &job_body("old", "rate(30 seconds)")).await.status, 409);
    let r = h.post("acme", "/v1/jobs/old/resume", &json!({})).await;
    assert_eq!((r.status, &r.body["error"]["code"]), (409, &json!("job_deleted")));
    // AND the retention TTL is set on the definition item
    let item = h
        .env
        .clients
        .ddb
        .get_item()
        .table_name(&h.env.cfg.jobs_table)
        .key("pk", aws_sdk_dynamodb::types::AttributeValue::S(sundial_model::keys::job_pk("acme", "old")))
        .key("sk", aws_sdk_dynamodb::types::AttributeValue::S("DEF".into()))
        .send()
        .await
        .unwrap();
    let ttl: i64 = item.item().unwrap()["expires_at"].as_n().unwrap().parse().unwrap();
    assert_eq!(ttl, at("2026-12-01T10:00:10Z").timestamp() + 30 * 86_400);
    h.env.cleanup().await;
}

#[tokio::test]
async fn replay_is_audited_and_keeps_the_execution_id() {
    // GIVEN an execution that a worker ran out of retries on (claimed, then finished DEAD)
    let h = Harness::new("replay", at("2026-12-01T10:00:05Z")).await;
    h.create("acme", "flaky", "0 0 12 * * *").await;
    let run = h.post("acme", "/v1/jobs/flaky/trigger", &json!({})).await;
    let id = run.body["executionId"].as_str().unwrap().to_string();
    let (job_id, ms) = sundial_model::keys::parse_execution_id(&id).unwrap();
    let key = ExecKey { tenant: "acme".into(), job_id, scheduled_ms: ms, child: None };
    let store = &h.api.control().execs;
    let terms = LeaseTerms { duration_ms: 30_000, skew_margin_ms: 2_000, may_take_over: true };
    let claimed = match store.claim(&key, "w1", &terms, at("2026-12-01T10:00:06Z")).await.unwrap() {
        sundial_store::executions::ClaimOutcome::Claimed(c) => c,
        other => panic!("{other:?}"),
    };
    let dead = Finish::Dead {
        reason: "attempts_exhausted".into(),
        error: RunError::retryable("http_503", "upstream unavailable"),
        digest: "d".into(),
    };
    let r = store.finish(&key, &claimed.fence, &dead, at("2026-12-01T10:00:07Z")).await.unwrap();
    assert_eq!(r, FinishResult::Done);
    // AND it is listed as a dead letter for its tenant only
    let dlq = h.get("acme", "/v1/dlq").await;
    assert_eq!(dlq.body["items"][0]["executionId"], id.as_str(), "{}", dlq.body);
    assert!(h.get("globex", "/v1/dlq").await.body["items"].as_array().unwrap().is_empty());
    // WHEN alice replays it
    h.clock.set(at("2026-12-01T10:05:00Z"));
    let a = h.call("acme", "POST", &format!("/v1/dlq/{id}/replay"), None, &[]).await;
    // THEN it is the same execution, READY again, with a fresh attempt budget
    assert_eq!(a.status, 202, "{}", a.body);
    assert_eq!((a.body["executionId"].as_str(), &a.body["status"]), (Some(id.as_str()), &json!("READY")));
    assert_eq!(a.body["attempt"], 0);
    // AND the timeline records who replayed it, from DEAD to READY
    let last = a.body["timeline"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        (&last["actor"], &last["from"], &last["to"], &last["code"]),
        (&json!("api:acme-user"), &json!("DEAD"), &json!("READY"), &json!("replay"))
    );
    // AND the fencing token did not go back, so the old worker's token stays stale
    assert_eq!(a.body["fencingToken"], json!(claimed.fence.token));
    // AND it left the dead-letter list, and the operations log has the replay
    assert!(h.get("acme", "/v1/dlq").await.body["items"].as_array().unwrap().is_empty());
    let ops = h.get("acme", "/v1/operations").await;
    let replay =
        ops.body["items"].as_array().unwrap().iter().find(|o| o["action"] == "replay").cloned().unwrap();
    assert_eq!((&replay["executionId"], &replay["actor"]), (&json!(id), &json!("api:acme-user")));
    // AND a message for the same execution id is on the pool queue (the idempotency key is unchanged)
    let msgs = h
        .env
        .clients
        .sqs
        .receive_message()
        .queue_url(h.env.queue_url("default"))
        .max_number_of_messages(10)
        .send()
        .await
        .unwrap();
    let keys: Vec<(String, i64)> = msgs
        .messages()
        .iter()
        .filter_map(|m| serde_json::from_str::<sundial_model::ExecMessage>(m.body().unwrap_or_default()).ok())
        .map(|m| (m.job_id, m.scheduled_ms))
        .collect();
    assert!(keys.contains(&(key.job_id.clone(), key.scheduled_ms)), "{keys:?}");
    // AND a worker can claim it as attempt 1 with a higher token
    match store.claim(&key, "w2", &terms, at("2026-12-01T10:05:01Z")).await.unwrap() {
        sundial_store::executions::ClaimOutcome::Claimed(c) => {
            assert_eq!((c.fence.attempt, c.fence.token), (1, claimed.fence.token + 1))
        }
        other => panic!("{other:?}"),
    }
    // AND replaying again is refused: it is not dead any more
    let again = h.call("acme", "POST", &format!("/v1/dlq/{id}/replay"), None, &[]).await;
    assert_eq!((again.status, &again.body["error"]["code"]), (409, &json!("not_dead")));
    h.env.cleanup().await;
}

#[tokio::test]
async fn executions_are_listed_paged_and_cancelled() {
    // GIVEN a job every 10 s with its queued fires
    let h = Harness::new("execs", at("2026-12-01T10:00:05Z")).await;
    h.create("acme", "tick", "rate(10 seconds)").await;
    // WHEN the executions are paged three at a time, oldest first
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/v1/jobs/tick/executions?order=asc&limit=3&cursor={c}"),
            None => "/v1/jobs/tick/executions?order=asc&limit=3".into(),
        };
        let p = h.get("acme", &path).await;
        assert_eq!(p.status, 200, "{}", p.body);
        for e in p.body["items"].as_array().unwrap() {
            seen.push(e["scheduledAt"].as_str().unwrap().to_string());
        }
        match p.body["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    // THEN every execution is seen once, in order
    let all = executions(&h.env, "acme", "tick").await.unwrap();
    assert_eq!(seen.len(), all.len());
    let mut sorted = seen.clone();
    sorted.sort();
    assert_eq!(seen, sorted);
    // WHEN one READY execution is cancelled
    let id = all[2].id();
    let c = h.call("acme", "POST", &format!("/v1/executions/{id}/cancel"), None, &[]).await;
    // THEN it is CANCELED, with the canceller in its timeline, and listed by status
    assert_eq!((c.status, &c.body["status"]), (200, &json!("CANCELED")), "{}", c.body);
    let tl = c.body["timeline"].as_array().unwrap();
    assert_eq!(tl.last().unwrap()["actor"], "api:acme-user");
    let by_status = h.get("acme", "/v1/executions?status=CANCELED").await;
    assert_eq!(by_status.body["items"][0]["executionId"], id.as_str());
    let filtered = h.get("acme", "/v1/jobs/tick/executions?status=CANCELED").await;
    assert_eq!(filtered.body["items"].as_array().map(Vec::len), Some(1));
    // AND cancelling it again is a conflict, not a change
    let again = h.call("acme", "POST", &format!("/v1/executions/{id}/cancel"), None, &[]).await;
    assert_eq!((again.status, &again.body["error"]["code"]), (409, &json!("not_cancellable")));
    h.env.cleanup().await;
}

#[tokio::test]
async fn until_lists_the_fires_due_by_an_instant_not_the_ones_planned_ahead() {
    // GIVEN a job every 10 s whose fires the tick has planned ahead of now
    let h = Harness::new("until", at("2026-12-01T10:00:05Z")).await;
    h.create("acme", "tick", "rate(10 seconds)").await;
    let all = executions(&h.env, "acme", "tick").await.unwrap();
    assert!(all.len() >= 4, "{}", all.len());
    let cut = all[all.len() / 2].scheduled_at;
    let newest = h.get("acme", "/v1/jobs/tick/executions?limit=1").await;
    assert_eq!(newest.body["items"][0]["executionId"], all.last().unwrap().id().as_str());
    // WHEN the newest is asked for with `until` an instant between two fires
    let q = |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let until = q(cut + chrono::Duration::seconds(3));
    let last = h.get("acme", &format!("/v1/jobs/tick/executions?limit=1&until={until}")).await;
    // THEN it is the fire due by then, and paging on lists every earlier one once, newest first
    assert_eq!(last.status, 200, "{}", last.body);
    assert_eq!(last.body["items"][0]["scheduledAt"], q(cut).as_str(), "{}", last.body);
    let mut seen = Vec::new();
    let mut cursor = None::<String>;
    loop {
        let path = match &cursor {
            Some(c) => format!("/v1/jobs/tick/executions?limit=2&until={until}&cursor={c}"),
            None => format!("/v1/jobs/tick/executions?limit=2&until={until}"),
        };
        let p = h.get("acme", &path).await;
        assert_eq!(p.status, 200, "{}", p.body);
        seen.extend(
            p.body["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["scheduledAt"].as_str().unwrap().to_string()),
        );
        match p.body["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    let due: Vec<String> =
        all.iter().rev().filter(|e| e.scheduled_at <= cut).map(|e| q(e.scheduled_at)).collect();
    assert_eq!(seen, due);
    // AND an instant exactly at a fire includes it; oldest first works too
    let at_cut = h.get("acme", &format!("/v1/jobs/tick/executions?order=asc&until={}", q(cut))).await;
    assert_eq!(at_cut.body["items"].as_array().map(Vec::len), Some(due.len()), "{}", at_cut.body);
    assert_eq!(at_cut.body["items"][0]["scheduledAt"], due.last().unwrap().as_str());
    // AND a bad instant is refused naming the parameter
    let bad = h.get("acme", "/v1/jobs/tick/executions?until=yesterday").await;
    assert_eq!((bad.status, &bad.body["error"]["field"]), (400, &json!("until")), "{}", bad.body);
    h.env.cleanup().await;
}

#[tokio::test]
async fn trigger_now_and_backfill_create_audited_executions_once() {
    // GIVEN an hourly job created at 10:00:05
    let h = Harness::new("backfill", at("2026-12-01T10:00:05Z")).await;
    h.create("acme", "hourly", "0 0 * * * *").await;
    // WHEN alice backfills 05:00..09:00, two seconds apart
    h.clock.set(at("2026-12-01T10:00:10Z"));
    let body = json!({"from": "2026-12-01T05:00:00Z", "to": "2026-12-01T09:00:00Z", "paceSecs": 2});
    let a = h.post("acme", "/v1/jobs/hourly/backfill", &body).await;
    // THEN the five past fires get an execution each, starting two seconds apart from now
    assert_eq!(a.status, 202, "{}", a.body);
    assert_eq!(
        (&a.body["fires"], &a.body["created"], &a.body["existing"]),
        (&json!(5), &json!(5), &json!(0))
    );
    assert_eq!(a.body["lastStartAt"], "2026-12-01T10:00:18.000Z");
    let es = executions(&h.env, "acme", "hourly").await.unwrap();
    let filled: Vec<&Execution> = es.iter().filter(|e| e.scheduled_at < at("2026-12-01T10:00:00Z")).collect();
    assert_eq!(filled.len(), 5);
    for (i, e) in filled.iter().enumerate() {
        assert_eq!(e.scheduled_at, at("2026-12-01T05:00:00Z") + chrono::Duration::hours(i as i64));
        assert_eq!(e.fire_at, at("2026-12-01T10:00:10Z") + chrono::Duration::seconds(2 * i as i64));
        let ev = &e.timeline[0];
        assert_eq!((ev.actor.as_str(), ev.code.as_deref()), ("api:acme-user", Some("backfill")));
    }
    // AND each is on the pool's low lane (a backfill is bulk work, never ahead of on-time fires)
    assert!(sundial_tests::trigger::queued_low(&h.env, "default").await.unwrap() >= 5);
    // WHEN the same backfill is repeated
    let again = h.post("acme", "/v1/jobs/hourly/backfill", &body).await;
    // THEN nothing new is created
    assert_eq!((&again.body["created"], &again.body["existing"]), (&json!(0), &json!(5)), "{}", again.body);
    assert_eq!(executions(&h.env, "acme", "hourly").await.unwrap().len(), es.len());
    // WHEN the job is triggered by hand
    h.clock.set(at("2026-12-01T10:20:00.123Z"));
    let t = h.post("acme", "/v1/jobs/hourly/trigger", &json!({})).await;
    // THEN a READY execution scheduled now exists, marked manual, with its location
    assert_eq!(t.status, 202, "{}", t.body);
    assert_eq!(t.body["executionId"], "hourly@1796120400123");
    assert_eq!(t.header("location"), Some("/v1/executions/hourly@1796120400123"));
    assert_eq!((&t.body["status"], &t.body["timeline"][0]["code"]), (&json!("READY"), &json!("manual")));
    // AND the operations log has both, by alice
    let ops = h.get("acme", "/v1/operations?jobId=hourly").await;
    let actions: Vec<&str> =
        ops.body["items"].as_array().unwrap().iter().map(|o| o["action"].as_str().unwrap()).collect();
    assert_eq!(actions, vec!["trigger", "backfill", "backfill", "create"]);
    // AND a paused job can still be run by hand, a deleted one cannot
    h.post("acme", "/v1/jobs/hourly/pause", &json!({})).await;
    h.clock.set(at("2026-12-01T10:21:00Z"));
    assert_eq!(h.post("acme", "/v1/jobs/hourly/trigger", &json!({})).await.status, 202);
    h.call("acme", "DELETE", "/v1/jobs/hourly", None, &[]).await;
    let d = h.post("acme", "/v1/jobs/hourly/trigger", &json!({})).await;
    assert_eq!((d.status, &d.body["error"]["code"]), (409, &json!("job_deleted")));
    h.env.cleanup().await;
}

#[tokio::test]
async fn a_start_deadline_is_stored_and_watched_on_manual_and_backfilled_fires() {
    // GIVEN an hourly job created through the API with a 45 s start deadline
    let h = Harness::new("deadline", at("2026-12-01T10:00:05Z")).await;
    let mut body = crate::common::job_body("hourly", "0 0 * * * *");
    body["startDeadlineSecs"] = json!(45);
    let a = h.post("acme", "/v1/jobs", &body).await;
    assert_eq!(a.status, 201, "{}", a.body);
    // THEN it is part of the stored definition
    let read = h.get("acme", "/v1/jobs/hourly").await;
    assert_eq!(read.body["definition"]["startDeadlineSecs"], 45, "{}", read.body);
    // WHEN two past fires are backfilled (paced from 10:00:10) and the job is run by hand at 10:20
    h.clock.set(at("2026-12-01T10:00:10Z"));
    let backfill = json!({"from": "2026-12-01T05:00:00Z", "to": "2026-12-01T06:00:00Z", "paceSecs": 2});
    assert_eq!(h.post("acme", "/v1/jobs/hourly/backfill", &backfill).await.status, 202);
    h.clock.set(at("2026-12-01T10:20:00Z"));
    assert_eq!(h.post("acme", "/v1/jobs/hourly/trigger", &json!({})).await.status, 202);
    // THEN each is watched from its planned start: the reconciler looks at it 45 s later, not a
    // delivery grace later (a backfilled fire is not "missed" for being in the past)
    let es = executions(&h.env, "acme", "hourly").await.unwrap();
    assert_eq!(es.len(), 3);
    for e in &es {
        let snap = sundial_tests::fixtures::snapshot(&h.env, &ExecKey::of(e)).await.unwrap();
        assert_eq!(snap.open_due, Some(e.fire_at.timestamp_millis() + 45_000), "{}", e.id());
    }
    // WHEN no worker runs and the reconciler looks at 10:21 (no event bus configured here)
    let ctx = sundial_tests::trigger::ctx(&h.env);
    let opts = sundial_core::reconcile::ReconcileOptions::default();
    let r = sundial_core::reconcile::reconcile(&ctx, at("2026-12-01T10:21:00Z"), &opts).await.unwrap();
    // THEN all three are reported missed, in the operations log the API lists
    assert_eq!(r.missed_total(), 3, "{r:?}");
    let ops = h.get("acme", "/v1/operations?jobId=hourly").await;
    assert_eq!(ops.status, 200, "{}", ops.body);
    let missed: Vec<&Value> =
        ops.body["items"].as_array().unwrap().iter().filter(|o| o["action"] == "fire_missed").collect();
    assert_eq!(missed.len(), 3, "{}", ops.body);
    assert!(missed.iter().all(|o| o["actor"] == "reconciler" && o["executionId"].is_string()));
    h.env.cleanup().await;
}

#[tokio::test]
async fn an_edit_that_adds_a_start_deadline_watches_the_fires_already_queued() {
    // GIVEN a daily 09:00 job without a deadline whose 09:00 fire the scan has queued (a daily
    // job's fires are put outside the `open` index)
    let h = Harness::new("deadline-edit", at("2026-12-01T08:50:00Z")).await;
    h.create("acme", "daily", "0 0 9 * * *").await;
    scan(&h.env, at("2026-12-01T08:59:30Z"), &ScanOptions::default()).await.unwrap();
    let es = executions(&h.env, "acme", "daily").await.unwrap();
    assert_eq!(es.len(), 1);
    let key = ExecKey::of(&es[0]);
    assert_eq!(sundial_tests::fixtures::snapshot(&h.env, &key).await.unwrap().open_due, None);
    // WHEN the job is edited at 08:59:40 to want its fires started within 60 s
    h.clock.set(at("2026-12-01T08:59:40Z"));
    let mut body = crate::common::job_body("daily", "0 0 9 * * *");
    body["startDeadlineSecs"] = json!(60);
    let a = put(&h, "acme", "daily", &body, Some("1")).await;
    assert_eq!(a.status, 200, "{}", a.body);
    // THEN the queued fire carries the new definition and is watched from its deadline
    let snap = sundial_tests::fixtures::snapshot(&h.env, &key).await.unwrap();
    assert_eq!(snap.exec.definition.start_deadline_secs, Some(60));
    assert_eq!(snap.open_due, Some(at("2026-12-01T09:01:00Z").timestamp_millis()));
    h.env.cleanup().await;
}

#[tokio::test]
async fn per_run_parameters_merge_over_the_jobs_on_trigger_and_backfill_and_bad_ones_name_params() {
    // GIVEN an hourly job with parameters
    let h = Harness::new("run-params", at("2026-12-01T10:00:05Z")).await;
    let mut body = job_body("report", "0 0 * * * *");
    body["params"] = json!({"region": "eu", "opts": {"full": false, "dry": true}});
    assert_eq!(h.post("acme", "/v1/jobs", &body).await.status, 201);
    h.clock.set(at("2026-12-01T10:10:00Z"));

    // WHEN it is triggered with per-run parameters
    let run = json!({"params": {"opts": {"full": true, "dry": null}, "day": "2026-11-30"}});
    let t = h.post("acme", "/v1/jobs/report/trigger", &run).await;
    // THEN the execution carries them merged over the job's (RFC 7396), the job is unchanged
    assert_eq!(t.status, 202, "{}", t.body);
    let es = executions(&h.env, "acme", "report").await.unwrap();
    let manual = es.iter().find(|e| e.scheduled_at == at("2026-12-01T10:10:00Z")).expect("the manual run");
    assert_eq!(
        manual.definition.params,
        json!({"region": "eu", "opts": {"full": true}, "day": "2026-11-30"})
    );
    let job = h.get("acme", "/v1/jobs/report").await;
    assert_eq!(job.body["definition"]["params"]["opts"], json!({"full": false, "dry": true}), "{}", job.body);

    // AND a trigger without a body runs with the job's own
    h.clock.set(at("2026-12-01T10:11:00Z"));
    let plain = h.call("acme", "POST", "/v1/jobs/report/trigger", None, &[]).await;
    assert_eq!(plain.status, 202, "{}", plain.body);
    let es = executions(&h.env, "acme", "report").await.unwrap();
    let own = es.iter().find(|e| e.scheduled_at == at("2026-12-01T10:11:00Z")).expect("the plain run");
    assert_eq!(own.definition.params, json!({"region": "eu", "opts": {"full": false, "dry": true}}));

    // AND a backfill's parameters go to every execution it creates
    let b = json!({"from": "2026-12-01T08:00:00Z", "to": "2026-12-01T09:00:00Z", "params": {"rerun": true}});
    let r = h.post("acme", "/v1/jobs/report/backfill", &b).await;
    assert_eq!((r.status, &r.body["created"]), (202, &json!(2)), "{}", r.body);
    let es = executions(&h.env, "acme", "report").await.unwrap();
    for e in es.iter().filter(|e| e.scheduled_at < at("2026-12-01T10:00:00Z")) {
        assert_eq!(e.definition.params["rerun"], json!(true), "{}", e.id());
        assert_eq!(e.definition.params["region"], json!("eu"));
    }

    // AND parameters too large once merged, or an unknown field, are 400 naming the field, and
    // nothing is created
    let before = executions(&h.env, "acme", "report").await.unwrap().len();
    h.clock.set(at("2026-12-01T10:12:00Z"));
    let big = json!({"params": {"blob": "x".repeat(5_000)}});
    let e = h.post("acme", "/v1/jobs/report/trigger", &big).await;
    assert_eq!((e.status, &e.body["error"]["field"]), (400, &json!("params")), "{}", e.body);
    let e = h.post("acme", "/v1/jobs/report/trigger", &json!({"parms": {}})).await;
    assert_eq!(e.status, 400, "{}", e.body);
    assert!(e.body["error"]["message"].as_str().unwrap_or_default().contains("parms"), "{}", e.body);
    assert_eq!(executions(&h.env, "acme", "report").await.unwrap().len(), before);
    h.env.cleanup().await;
}

#[tokio::test]
async fn an_event_and_the_schedule_fire_each_period_once_whichever_comes_first_and_repeats_are_one() {
    // GIVEN a daily 06:00 job that also fires on events, once per period
    let h = Harness::new("events-once", at("2026-12-01T00:00:05Z")).await;
    let mut body = job_body("load", "0 0 6 * * *");
    body["events"] = json!({"oncePerPeriod": true});
    assert_eq!(h.post("acme", "/v1/jobs", &body).await.status, 201);
    let six = at("2026-12-01T06:00:00Z").timestamp_millis();

    // WHEN the file lands at 03:00
    h.clock.set(at("2026-12-01T03:00:00Z"));
    let a = h.post("acme", "/v1/jobs/load/events", &json!({"key": "file-2026-12-01.csv"})).await;
    // THEN it runs the 06:00 fire now: that instant's one execution, due at once, made by the event
    assert_eq!(a.status, 202, "{}", a.body);
    assert_eq!(a.body["created"], json!(true));
    assert_eq!(a.body["execution"]["executionId"], format!("load@{six}"));
    assert_eq!(a.header("location"), Some(format!("/v1/executions/load@{six}").as_str()));
    assert_eq!(a.body["execution"]["timeline"][0]["code"], "event");
    assert_eq!(a.body["execution"]["fireAt"], "2026-12-01T03:00:00.000Z");

    // WHEN the same file is announced again, and another file lands before 06:00
    h.clock.set(at("2026-12-01T03:05:00Z"));
    let again = h.post("acme", "/v1/jobs/load/events", &json!({"key": "file-2026-12-01.csv"})).await;
    let other = h.post("acme", "/v1/jobs/load/events", &json!({"key": "file-2026-12-01b.csv"})).await;
    // THEN both are that same execution, nothing new
    for r in [&again, &other] {
        assert_eq!((r.status, &r.body["created"]), (202, &json!(false)), "{}", r.body);
        assert_eq!(r.body["execution"]["executionId"], format!("load@{six}"));
    }

    // WHEN the tick reaches 06:00
    scan(&h.env, at("2026-12-01T06:00:30Z"), &ScanOptions::default()).await.unwrap();
    // THEN its put of 06:00 is absorbed: one execution for the period, the event's
    let es = executions(&h.env, "acme", "load").await.unwrap();
    let at_six: Vec<&Execution> = es.iter().filter(|e| e.scheduled_at.timestamp_millis() == six).collect();
    assert_eq!(at_six.len(), 1, "{es:?}");
    assert_eq!(at_six[0].timeline[0].code.as_deref(), Some("event"));

    // WHEN a file lands after 06:00
    h.clock.set(at("2026-12-01T07:00:00Z"));
    let next = h.post("acme", "/v1/jobs/load/events", &json!({"key": "file-2026-12-02.csv"})).await;
    // THEN it is the next period's fire (06:00 tomorrow), run now
    let tomorrow = at("2026-12-02T06:00:00Z").timestamp_millis();
    assert_eq!((next.status, &next.body["created"]), (202, &json!(true)), "{}", next.body);
    assert_eq!(next.body["execution"]["executionId"], format!("load@{tomorrow}"));

    // WHEN the tick has put a fire ahead of its instant (as it does a minute before) and the
    // file lands just before it
    let third = at("2026-12-03T06:00:00Z");
    let job = sundial_store::jobs::get_job(&h.env.clients.ddb, &h.env.cfg, "acme", "load")
        .await
        .unwrap()
        .expect("the job");
    let sch = sundial_schedule::Schedule::parse(&job.definition.schedule, job.anchor).unwrap();
    let queued = Execution::ready(&job, &sch, third, None, at("2026-12-03T05:59:00Z"), "tick");
    sundial_tests::fixtures::store(&h.env).put_new(&queued).await.unwrap();
    assert!(queued.available_at > at("2026-12-03T05:59:40Z").timestamp_millis());
    h.clock.set(at("2026-12-03T05:59:40Z"));
    let late = h.post("acme", "/v1/jobs/load/events", &json!({"key": "file-2026-12-03.csv"})).await;
    // THEN the event is that fire, moved to start now, with a note
    assert_eq!((late.status, &late.body["created"]), (202, &json!(false)), "{}", late.body);
    assert_eq!(late.body["execution"]["fireAt"], "2026-12-03T05:59:40.000Z", "{}", late.body);
    let codes: Vec<&str> = late.body["execution"]["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["code"].as_str())
        .collect();
    assert!(codes.contains(&"AdvancedByEvent"), "{codes:?}");
    h.env.cleanup().await;
}

#[tokio::test]
async fn each_event_is_its_own_execution_deduplicated_by_key_and_bad_events_are_refused_by_field() {
    // GIVEN an hourly job taking every event, and one taking none
    let h = Harness::new("events-each", at("2026-12-01T10:00:05Z")).await;
    let mut body = job_body("ingest", "0 0 * * * *");
    body["events"] = json!({});
    assert_eq!(h.post("acme", "/v1/jobs", &body).await.status, 201);
    h.create("acme", "plain", "0 0 * * * *").await;

    // WHEN three events arrive, the third repeating the first's key later
    h.clock.set(at("2026-12-01T10:10:00Z"));
    let a = h.post("acme", "/v1/jobs/ingest/events", &json!({"key": "m-1", "params": {"file": "a"}})).await;
    h.clock.set(at("2026-12-01T10:10:01Z"));
    let b =
        h.post("acme", "/v1/jobs/ingest/events", &json!({"key": "m-2", "at": "2026-12-01T10:09:59Z"})).await;
    h.clock.set(at("2026-12-01T10:12:00Z"));
    let c = h.post("acme", "/v1/jobs/ingest/events", &json!({"key": "m-1"})).await;

    // THEN two executions: the first at its arrival with its parameters, the second at its
    // own `at`; the repeat is the first
    assert_eq!((a.status, &a.body["created"]), (202, &json!(true)), "{}", a.body);
    assert_eq!(
        a.body["execution"]["executionId"],
        format!("ingest@{}", at("2026-12-01T10:10:00Z").timestamp_millis())
    );
    assert_eq!((b.status, &b.body["created"]), (202, &json!(true)), "{}", b.body);
    assert_eq!(
        b.body["execution"]["executionId"],
        format!("ingest@{}", at("2026-12-01T10:09:59Z").timestamp_millis())
    );
    assert_eq!((c.status, &c.body["created"]), (202, &json!(false)), "{}", c.body);
    assert_eq!(c.body["execution"]["executionId"], a.body["execution"]["executionId"]);
    let es = executions(&h.env, "acme", "ingest").await.unwrap();
    assert_eq!(es.len(), 2, "{es:?}");
    let first = es.iter().find(|e| e.scheduled_at == at("2026-12-01T10:10:00Z")).expect("the first");
    assert_eq!(first.definition.params["file"], json!("a"));

    // AND bad events name the field and create nothing
    let cases = [
        ("/v1/jobs/plain/events", json!({}), "jobId"),
        ("/v1/jobs/ingest/events", json!({"key": "has space"}), "key"),
        ("/v1/jobs/ingest/events", json!({"at": "2026-11-01T00:00:00Z"}), "at"),
        ("/v1/jobs/ingest/events", json!({"params": {"blob": "x".repeat(5_000)}}), "params"),
    ];
    for (path, body, field) in cases {
        let r = h.post("acme", path, &body).await;
        assert_eq!((r.status, &r.body["error"]["field"]), (400, &json!(field)), "{path} {body}: {}", r.body);
    }
    // AND a paused job refuses events
    h.post("acme", "/v1/jobs/ingest/pause", &json!({})).await;
    let p = h.post("acme", "/v1/jobs/ingest/events", &json!({"key": "m-3"})).await;
    assert_eq!((p.status, &p.body["error"]["field"]), (400, &json!("jobId")), "{}", p.body);
    assert_eq!(executions(&h.env, "acme", "ingest").await.unwrap().len(), 2);
    h.env.cleanup().await;
}

#[tokio::test]
async fn the_dependency_graph_and_what_a_fire_waits_for_are_read_and_a_cycle_is_refused_naming_it() {
    // GIVEN close, then settle after close, then report after settle (all hourly)
    let h = Harness::new("deps-api", at("2026-12-01T10:00:05Z")).await;
    h.create("acme", "close", "0 0 * * * *").await;
    for (job, up) in [("settle", "close"), ("report", "settle")] {
        let mut body = job_body(job, "0 0 * * * *");
        body["after"] = json!([{"job": up}]);
        let r = h.post("acme", "/v1/jobs", &body).await;
        assert_eq!(r.status, 201, "{}", r.body);
    }
    // WHEN settle's graph is read
    let g = h.get("acme", "/v1/jobs/settle/dependencies").await;
    // THEN close is its upstream and report its downstream
    assert_eq!(g.status, 200, "{}", g.body);
    assert_eq!(g.body["upstreams"][0]["job"], "close");
    assert_eq!(g.body["upstreams"][0]["state"], "ENABLED");
    assert_eq!(g.body["upstreams"][0]["dependency"]["period"], "same");
    assert_eq!(g.body["downstreams"].as_array().map(Vec::len), Some(1), "{}", g.body);
    assert_eq!(g.body["downstreams"][0]["job"], "report");
    assert_eq!(g.body["downstreamsComplete"], json!(true));

    // WHEN close is edited to wait for report: a cycle, refused naming it, nothing changed
    let mut edit = job_body("close", "0 0 * * * *");
    edit.as_object_mut().map(|o| o.remove("jobId"));
    edit["after"] = json!([{"job": "report"}]);
    let r = h
        .call(
            "acme",
            "PUT",
            "/v1/jobs/close",
            Some(&edit.to_string()),
            &[("content-type", "application/json"), ("if-match", "1")],
        )
        .await;
    assert_eq!((r.status, &r.body["error"]["field"]), (400, &json!("after")), "{}", r.body);
    let msg = r.body["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.contains("close → report → settle → close"), "{msg}");
    assert_eq!(h.get("acme", "/v1/jobs/close").await.body["version"], json!(1));

    // WHEN the tick puts settle's 11:00 fire and close's has not run
    h.clock.set(at("2026-12-01T11:00:30Z"));
    scan(&h.env, at("2026-12-01T11:00:30Z"), &ScanOptions::default()).await.unwrap();
    let eleven = at("2026-12-01T11:00:00Z").timestamp_millis();
    let e = h.get("acme", &format!("/v1/executions/settle@{eleven}")).await;
    // THEN the execution names the close run it waits for and its status
    assert_eq!(e.status, 200, "{}", e.body);
    assert_eq!(e.body["waitingFor"][0]["job"], "close", "{}", e.body);
    assert_eq!(e.body["waitingFor"][0]["executionId"], format!("close@{eleven}"));
    assert_eq!(e.body["waitingFor"][0]["status"], "READY");
    assert_eq!(e.body["waitingFor"][0]["met"], json!(false));
    // AND a job without upstreams shows none
    let c = h.get("acme", &format!("/v1/executions/close@{eleven}")).await;
    assert!(c.body.get("waitingFor").is_none(), "{}", c.body);
    h.env.cleanup().await;
}

#[tokio::test]
async fn a_resume_replays_the_paused_window_as_asked_and_a_window_it_cannot_cover_leaves_the_job_paused() {
    // GIVEN two hourly jobs, paused at 01:30
    let h = Harness::new("catch-up", at("2026-12-01T00:00:05Z")).await;
    for id in ["last", "all", "none"] {
        h.create("acme", id, "0 0 * * * *").await;
    }
    h.clock.set(at("2026-12-01T01:30:00Z"));
    for id in ["last", "all", "none"] {
        assert_eq!(h.post("acme", &format!("/v1/jobs/{id}/pause"), &json!({})).await.status, 200);
    }
    let hours = |job: &str, hs: &[u32]| -> Vec<String> {
        hs.iter()
            .map(|h| format!("{job}@{}", at(&format!("2026-12-01T{h:02}:00:00Z")).timestamp_millis()))
            .collect()
    };
    let ids_of = |es: &[Execution]| -> Vec<String> {
        let mut v: Vec<String> = es.iter().map(|e| e.id()).collect();
        v.sort();
        v
    };

    // WHEN at 05:10 one is resumed with catchUp last, one with all (60 s apart), one plainly
    h.clock.set(at("2026-12-01T05:10:00Z"));
    let last = h.post("acme", "/v1/jobs/last/resume", &json!({"catchUp": "last"})).await;
    let all = h.post("acme", "/v1/jobs/all/resume", &json!({"catchUp": "all", "paceSecs": 60})).await;
    let none = h.call("acme", "POST", "/v1/jobs/none/resume", None, &[]).await;
    // THEN each is enabled, and says what it replayed of [01:30, 05:10)
    for r in [&last, &all, &none] {
        assert_eq!((r.status, &r.body["job"]["state"]), (200, &json!("ENABLED")), "{}", r.body);
    }
    assert_eq!(last.body["catchUp"]["fires"], 1, "{}", last.body);
    assert_eq!(last.body["catchUp"]["created"], 1);
    assert_eq!(all.body["catchUp"]["fires"], 4, "{}", all.body);
    assert_eq!(all.body["catchUp"]["lastStartAt"], "2026-12-01T05:13:00.000Z");
    assert!(none.body.get("catchUp").is_none(), "{}", none.body);
    // AND last ran the 05:00 fire only, all every one of 02:00-05:00, none nothing, each a backfill
    let l = executions(&h.env, "acme", "last").await.unwrap();
    let a = executions(&h.env, "acme", "all").await.unwrap();
    let n = executions(&h.env, "acme", "none").await.unwrap();
    let after_pause = |es: &[Execution]| -> Vec<Execution> {
        es.iter().filter(|e| e.scheduled_at > at("2026-12-01T01:30:00Z")).cloned().collect()
    };
    assert_eq!(ids_of(&after_pause(&l)), hours("last", &[5]));
    assert_eq!(ids_of(&after_pause(&a)), hours("all", &[2, 3, 4, 5]));
    assert!(after_pause(&n).is_empty(), "{n:?}");
    assert!(after_pause(&a).iter().all(|e| e.timeline[0].code.as_deref() == Some("backfill")));

    // WHEN the catch-up resume is sent again (a client retrying after a timeout)
    let again = h.post("acme", "/v1/jobs/all/resume", &json!({"catchUp": "all", "paceSecs": 60})).await;
    // THEN the same window is found and nothing new is made
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(
        (&again.body["catchUp"]["created"], &again.body["catchUp"]["existing"]),
        (&json!(0), &json!(4))
    );
    assert_eq!(executions(&h.env, "acme", "all").await.unwrap().len(), a.len());

    // WHEN a job paused for two days is resumed with catchUp all (its fires are older than
    // retry.maxAgeSecs, a day) or with a bad catchUp or paceSecs
    h.create("acme", "long", "0 0 * * * *").await;
    assert_eq!(h.post("acme", "/v1/jobs/long/pause", &json!({})).await.status, 200);
    h.clock.set(at("2026-12-03T05:10:00Z"));
    let old = h.post("acme", "/v1/jobs/long/resume", &json!({"catchUp": "all"})).await;
    let bad = h.post("acme", "/v1/jobs/long/resume", &json!({"catchUp": "some"})).await;
    let pace = h.post("acme", "/v1/jobs/long/resume", &json!({"catchUp": "last", "paceSecs": 7200})).await;
    // THEN each is refused naming the field, and the job stays paused with nothing made
    assert_eq!((old.status, old.error_field()), (400, Some("catchUp")), "{}", old.body);
    assert!(
        old.body["error"]["message"].as_str().unwrap_or_default().contains("retry.maxAgeSecs"),
        "{}",
        old.body
    );
    assert_eq!((bad.status, bad.error_field()), (400, Some("catchUp")), "{}", bad.body);
    assert_eq!((pace.status, pace.error_field()), (400, Some("paceSecs")), "{}", pace.body);
    assert_eq!(h.get("acme", "/v1/jobs/long").await.body["state"], "PAUSED");
    assert!(after_pause(&executions(&h.env, "acme", "long").await.unwrap()).is_empty());
    // AND catchUp last still covers it: the latest fire is recent
    let ok = h.post("acme", "/v1/jobs/long/resume", &json!({"catchUp": "last"})).await;
    assert_eq!((ok.status, &ok.body["catchUp"]["created"]), (200, &json!(1)), "{}", ok.body);
    // AND a job that was never paused has no window
    h.create("acme", "fresh", "0 0 * * * *").await;
    let fresh = h.post("acme", "/v1/jobs/fresh/resume", &json!({"catchUp": "all"})).await;
    assert_eq!((fresh.status, fresh.error_field()), (400, Some("catchUp")), "{}", fresh.body);
    h.env.cleanup().await;
}

/// An in-process handler that records the execution id of every run it is given: one target
/// effect per run.
#[derive(Clone, Default)]
struct Runs(Arc<Mutex<Vec<String>>>);

impl Handler for Runs {
    fn run(&self, ctx: HandlerContext) -> BoxFuture<'_, Result<(), RunError>> {
        Box::pin(async move {
            if let Ok(mut seen) = self.0.lock() {
                seen.push(ctx.invocation.execution_id.clone());
            }
            Ok(())
        })
    }
}

impl Runs {
    /// How many times `e` ran.
    fn of(&self, e: &Execution) -> usize {
        self.0.lock().map(|seen| seen.iter().filter(|id| **id == e.global_id()).count()).unwrap_or(0)
    }
}

#[tokio::test]
async fn a_resume_runs_the_fires_its_pause_held_through_their_instants_as_its_catch_up_asks() {
    // GIVEN three jobs firing every 10 s on an in-process handler, created at 10:00:05, and a
    // tick at 10:01:00 that queued their fires ahead
    let h = Harness::new("catch-up-held", at("2026-12-01T10:00:05Z")).await;
    let jobs = ["all", "last", "none"];
    for id in jobs {
        let mut body = job_body(id, "*/10 * * * * *");
        body["target"] = json!({"type": "inProcess", "handler": "runs"});
        // The worker reads the wall clock: the fixed instants must stay young enough to start.
        body["retry"] = json!({"maxAgeSecs": 315_360_000});
        let c = h.post("acme", "/v1/jobs", &body).await;
        assert_eq!(c.status, 201, "{}", c.body);
    }
    scan(&h.env, at("2026-12-01T10:01:00Z"), &ScanOptions::default()).await.unwrap();
    // WHEN each is paused at 10:01:05
    h.clock.set(at("2026-12-01T10:01:05Z"));
    for id in jobs {
        assert_eq!(h.post("acme", &format!("/v1/jobs/{id}/pause"), &json!({})).await.status, 200);
    }
    // AND a worker receives each of its 10:01:10 to 10:01:40 fires, queued ahead and held, at
    // its instant, while the job is still paused
    let window: Vec<DateTime<Utc>> =
        (1..=4).map(|i| at("2026-12-01T10:01:00Z") + chrono::Duration::seconds(10 * i)).collect();
    let runs = Runs::default();
    let handlers = Handlers::new().with("runs", runs.clone());
    let (w, _) = fixtures::worker_with(&h.env, fixtures::settings("w"), handlers).unwrap();
    let of = |es: &[Execution], t: DateTime<Utc>| {
        es.iter().find(|e| e.scheduled_at == t).cloned().unwrap_or_else(|| panic!("no execution at {t}"))
    };
    for id in jobs {
        let es = executions(&h.env, "acme", id).await.unwrap();
        for t in &window {
            let e = of(&es, *t);
            let held = fixtures::snapshot(&h.env, &ExecKey::of(&e)).await.unwrap().held;
            assert!(held.is_some(), "{id} {t}: not held by the pause: {:?}", e.timeline);
            let body = serde_json::to_string(&fixtures::message_of(&e, at("2026-12-01T10:01:00Z"))).unwrap();
            fixtures::handle_body(&w, "default", &body).await;
        }
    }
    // AND at 10:01:45 `all` is resumed with catchUp all, `last` with catchUp last, `none` plainly
    h.clock.set(at("2026-12-01T10:01:45Z"));
    let all = h.post("acme", "/v1/jobs/all/resume", &json!({"catchUp": "all"})).await;
    let last = h.post("acme", "/v1/jobs/last/resume", &json!({"catchUp": "last"})).await;
    let none = h.call("acme", "POST", "/v1/jobs/none/resume", None, &[]).await;
    // THEN each catch-up says it released the held fires it replays: none created, none existing
    let counts = |r: &crate::common::Answer| {
        let c = &r.body["catchUp"];
        [&c["fires"], &c["created"], &c["existing"], &c["released"]].map(|v| v.as_u64())
    };
    assert_eq!(counts(&all), [Some(4), Some(0), Some(0), Some(4)], "{}", all.body);
    assert_eq!(counts(&last), [Some(1), Some(0), Some(0), Some(1)], "{}", last.body);
    assert_eq!((none.status, &none.body["job"]["state"]), (200, &json!("ENABLED")), "{}", none.body);
    // WHEN a worker is handed what is visible in the pool's queues: what the resumes sent
    for body in fixtures::receive_visible(&h.env, "default").await.unwrap() {
        fixtures::handle_body(&w, "default", &body).await;
    }
    // THEN every instant of all's window ran once; of last's, the latest only, the others
    // canceled as paused; of none's, none
    for id in jobs {
        let es = executions(&h.env, "acme", id).await.unwrap();
        for t in &window {
            let e = of(&es, *t);
            if id == "all" || (id == "last" && *t == window[3]) {
                assert_eq!((e.status, runs.of(&e)), (ExecStatus::Succeeded, 1), "{id} {t}: {:?}", e.timeline);
            } else {
                assert_eq!((e.status, runs.of(&e)), (ExecStatus::Canceled, 0), "{id} {t}: {:?}", e.timeline);
                assert_eq!(e.last_error.as_ref().map(|x| x.0.as_str()), Some("Paused"), "{id} {t}");
            }
        }
    }
    // WHEN the catch-up resume is sent again (a client retrying after a timeout)
    let again = h.post("acme", "/v1/jobs/all/resume", &json!({"catchUp": "all"})).await;
    // THEN nothing is released or run twice: the four fires have their executions
    assert_eq!(counts(&again), [Some(4), Some(0), Some(4), Some(0)], "{}", again.body);
    h.env.cleanup().await;
}

#[tokio::test]
async fn an_event_whose_send_failed_stays_ready_for_the_reconciler_and_its_retry_is_not_acknowledged_with_a_canceled_one(
) {
    // GIVEN a daily 06:00 job that takes events once per period, at 03:00
    let h = Harness::new("events-send-fails", at("2026-12-01T03:00:00Z")).await;
    let mut body = job_body("load", "0 0 6 * * *");
    body["events"] = json!({"oncePerPeriod": true});
    assert_eq!(h.post("acme", "/v1/jobs", &body).await.status, 201);
    // WHEN the pool's queue cannot be sent to (SQS failing) and the file lands
    let url = h.env.queue_url("default").to_string();
    h.env.clients.sqs.delete_queue().queue_url(&url).send().await.expect("delete the pool queue");
    let first = h.post("acme", "/v1/jobs/load/events", &json!({"key": "file-1.csv"})).await;
    // THEN the event is not acknowledged (the sender must retry) and its execution stays READY,
    // for the retry or the reconciler to send (simulator seed 5 on 7bc87a6: it was canceled, and
    // the retry acknowledged the canceled execution: the event and the 06:00 fire were both lost)
    assert!(first.status >= 500, "{} {}", first.status, first.body);
    let es = executions(&h.env, "acme", "load").await.unwrap();
    assert_eq!(es.iter().map(|e| e.status).collect::<Vec<_>>(), vec![ExecStatus::Ready], "{es:?}");
    // WHEN SQS is back and the sender retries the same event
    sundial_testkit::provision::ensure_queues(&h.env.clients.sqs, &h.env.cfg)
        .await
        .expect("recreate the queue");
    h.clock.set(at("2026-12-01T03:00:20Z"));
    let again = h.post("acme", "/v1/jobs/load/events", &json!({"key": "file-1.csv"})).await;
    // THEN it is acknowledged as that execution, still READY
    assert_eq!(again.status, 202, "{}", again.body);
    assert_eq!(again.body["execution"]["status"], "READY", "{}", again.body);
    assert_eq!(again.body["execution"]["executionId"], es[0].id());
    // AND the reconciler, after its grace, sends it: once
    let ctx = sundial_tests::trigger::ctx(&h.env);
    let grace = chrono::Duration::milliseconds(sundial_core::reconcile::GRACE_MS);
    let opts = sundial_core::reconcile::ReconcileOptions::default();
    let r = sundial_core::reconcile::reconcile(
        &ctx,
        at("2026-12-01T03:00:00Z") + grace + chrono::Duration::seconds(1),
        &opts,
    )
    .await
    .expect("reconcile");
    assert_eq!(r.resent_total(), 1, "{r:?}");
    let sent = sundial_tests::fixtures::receive(&h.env, &url, 60).await.expect("receive");
    assert_eq!(sent.len(), 1, "{sent:?}");
    h.env.cleanup().await;
}
