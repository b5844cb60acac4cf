//! Request-shape tests of every status change written through [`crate::transition::Transition`]:
//! each `legacy_*` function is the update as the store built it by hand before the type existed
//! (kept verbatim), and each test asserts the typed write renders the very same request
//! (expressions, placeholder numbering, names and values) for every branch.

use crate::executions::{ExecKey, ExecStore, MAX_ERROR_MESSAGE_CHARS};
use crate::expr::{Cmp, Expr};
use crate::items::{attr, n};
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, TimeZone, Utc};
use sundial_model::children::{ParentEnd, CHILDREN_FAILED_CODE, FAN_OUT_CODE};
use sundial_model::claim::{Fence, Finish, LeaseTerms};
use sundial_model::keys;
use sundial_model::mapreduce::{REDUCE_CODE, SEAL_CODE};
use sundial_model::retry::{codes, ErrorClass, RunError};
use sundial_model::{AuditEvent, ExecStatus, Execution};

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

fn truncate(m: &str) -> String {
    match m.char_indices().nth(MAX_ERROR_MESSAGE_CHARS) {
        Some((i, _)) => format!("{}…", &m[..i]),
        None => m.to_string(),
    }
}

fn key() -> ExecKey {
    ExecKey::new("acme", "nightly", 1_764_469_800_000)
}

fn now() -> DateTime<Utc> {
    Utc.timestamp_millis_opt(1_764_469_801_234).unwrap()
}

fn fence(indexed: bool) -> Fence {
    Fence { owner: "w-1".into(), token: 8, attempt: 3, indexed }
}

fn err() -> RunError {
    RunError { class: ErrorClass::Retryable, code: "Http503".into(), message: "é".repeat(300) }
}

fn fenced(e: &mut Expr, fence: &Fence) {
    e.cond_eq(attr::STATUS, s(ExecStatus::Running.as_str()))
        .cond_eq(attr::TOKEN, n(fence.token))
        .cond_eq(attr::LEASE_OWNER, s(&fence.owner));
}

fn legacy_claim(
    owner: &str,
    from: ExecStatus,
    token: u64,
    attempt: u32,
    terms: &LeaseTerms,
    now_ms: i64,
) -> Expr {
    let lease_until = now_ms + terms.duration_ms;
    let fence = Fence { owner: owner.to_string(), token: token + 1, attempt: attempt + 1, indexed: true };
    let takeover = from == ExecStatus::Running;
    let ev = AuditEvent {
        at: now_ms,
        actor: format!("worker:{owner}"),
        from: Some(from),
        to: ExecStatus::Running,
        attempt: fence.attempt,
        token: fence.token,
        code: takeover.then(|| codes::LEASE_EXPIRED.to_string()),
    };
    let mut e = Expr::default();
    e.set(attr::STATUS, s(ExecStatus::Running.as_str()))
        .set(attr::LEASE_OWNER, s(owner))
        .set(attr::LEASE_UNTIL, n(lease_until))
        .set(attr::TOKEN, n(fence.token))
        .set(attr::ATTEMPT, n(fence.attempt))
        .append_event(&ev)
        .cond_eq(attr::STATUS, s(from.as_str()))
        .cond_eq(attr::TOKEN, n(token))
        .cond_absent_or(attr::CANCEL, Cmp::Eq, AttributeValue::Bool(false));
    if from.needs_attention() {
        e.remove(attr::ATT_PK).remove(attr::ATT_SK);
    }
    if takeover {
        let exp = now_ms - terms.skew_margin_ms;
        e.cond_cmp(attr::LEASE_UNTIL, Cmp::Lt, n(exp));
    } else {
        e.cond_cmp(attr::AVAILABLE, Cmp::Le, n(now_ms));
    }
    e
}

fn legacy_cancel(
    key: &ExecKey,
    (from, token, attempt): (ExecStatus, u64, u32),
    code: &str,
    actor: &str,
    now_ms: i64,
) -> Expr {
    let ev = AuditEvent {
        at: now_ms,
        actor: actor.to_string(),
        from: Some(from),
        to: ExecStatus::Canceled,
        attempt,
        token,
        code: Some(code.into()),
    };
    let mut e = Expr::default();
    e.set(attr::STATUS, s(ExecStatus::Canceled.as_str()))
        .set(attr::ERR_CODE, s(code))
        .set(attr::ATT_PK, s(keys::attention_pk(&key.tenant, ExecStatus::Canceled.as_str())))
        .set(attr::ATT_SK, s(keys::attention_sk(key.scheduled_ms, &key.job_id)))
        .append_event(&ev)
        .remove(attr::LEASE_UNTIL)
        .remove(attr::OPEN_PK)
        .remove(attr::OPEN_DUE)
        .cond_eq(attr::STATUS, s(from.as_str()))
        .cond_eq(attr::TOKEN, n(token));
    e
}

fn legacy_finish(key: &ExecKey, fence: &Fence, finish: &Finish, now: DateTime<Utc>) -> Expr {
    let to = finish.status();
    let code = match finish {
        Finish::Succeeded => None,
        Finish::RetryWait { error, .. } | Finish::Failed { error } => Some(error.code.clone()),
        Finish::Dead { reason, .. } => Some(reason.clone()),
        Finish::Canceled => Some(codes::CANCELED.to_string()),
    };
    let ev = AuditEvent {
        at: now.timestamp_millis(),
        actor: format!("worker:{}", fence.owner),
        from: Some(ExecStatus::Running),
        to,
        attempt: fence.attempt,
        token: fence.token,
        code,
    };
    let mut e = Expr::default();
    e.set(attr::STATUS, s(to.as_str())).append_event(&ev).remove(attr::LEASE_UNTIL);
    if to.is_terminal() && fence.indexed {
        e.remove(attr::OPEN_PK).remove(attr::OPEN_DUE);
    }
    if to.needs_attention() {
        e.set(attr::ATT_PK, s(keys::attention_pk(&key.tenant, to.as_str())))
            .set(attr::ATT_SK, s(keys::attention_sk(key.scheduled_ms, &key.job_id)));
    }
    match finish {
        // The one change since the hand-built update: the retention tier of a fire that
        // succeeded (executions::SUCCEEDED_RETENTION_SECS), set by the same write.
        Finish::Succeeded if key.child.is_none() => {
            e.set(attr::EXPIRES, n(now.timestamp() + crate::executions::SUCCEEDED_RETENTION_SECS));
        }
        Finish::Succeeded => {}
        Finish::RetryWait { available_at, error, total_run_ms } => {
            if !fence.indexed {
                e.set(attr::OPEN_PK, s(keys::open_partition(keys::open_part(&key.tenant, &key.job_id))));
            }
            e.set(attr::AVAILABLE, n(*available_at))
                .set(attr::OPEN_DUE, n(available_at + sundial_model::reconcile::GRACE_MS))
                .set(attr::ERR_CODE, s(&error.code))
                .set(attr::ERR_MSG, s(truncate(&error.message)))
                .set(attr::RUN_MS, n(*total_run_ms));
        }
        Finish::Failed { error } => {
            e.set(attr::ERR_CODE, s(&error.code)).set(attr::ERR_MSG, s(truncate(&error.message)));
        }
        Finish::Dead { reason, error, digest } => {
            e.set(attr::ERR_CODE, s(&error.code))
                .set(attr::ERR_MSG, s(truncate(&format!("{reason}: {}", error.message))))
                .set(attr::DIGEST, s(digest));
        }
        Finish::Canceled => {
            e.set(attr::ERR_CODE, s(codes::CANCELED));
        }
    }
    fenced(&mut e, fence);
    e
}

fn legacy_skip(current: &Execution, actor: &str, reason: &str, now: DateTime<Utc>) -> Expr {
    let ev = AuditEvent {
        at: now.timestamp_millis(),
        actor: actor.to_string(),
        from: Some(ExecStatus::Ready),
        to: ExecStatus::Skipped,
        attempt: current.attempt,
        token: current.fencing_token,
        code: Some(codes::FORBID_OVERLAP.into()),
    };
    let mut e = Expr::default();
    e.set(attr::STATUS, s(ExecStatus::Skipped.as_str()))
        .set(attr::ERR_CODE, s(codes::FORBID_OVERLAP))
        .set(attr::ERR_MSG, s(truncate(reason)))
        .append_event(&ev)
        .remove(attr::OPEN_PK)
        .remove(attr::OPEN_DUE)
        .cond_eq(attr::STATUS, s(ExecStatus::Ready.as_str()))
        .cond_eq(attr::TOKEN, n(current.fencing_token));
    e
}

fn legacy_replay(key: &ExecKey, token: u64, actor: &str, code: &str, now: DateTime<Utc>) -> Expr {
    let ev = AuditEvent {
        at: now.timestamp_millis(),
        actor: actor.to_string(),
        from: Some(ExecStatus::Dead),
        to: ExecStatus::Ready,
        attempt: 0,
        token,
        code: Some(code.to_string()),
    };
    let mut e = Expr::new();
    e.set(attr::STATUS, s(ExecStatus::Ready.as_str()))
        .set(attr::ATTEMPT, n(0))
        .set(attr::AVAILABLE, n(now.timestamp_millis()))
        .set(attr::RUN_MS, n(0))
        .set(attr::OPEN_PK, s(keys::open_partition(keys::open_part(&key.tenant, &key.job_id))))
        .set(attr::OPEN_DUE, n(now.timestamp_millis() + sundial_model::reconcile::GRACE_MS))
        .append_event(&ev);
    for a in [attr::ATT_PK, attr::ATT_SK, attr::ERR_CODE, attr::ERR_MSG, attr::LEASE_UNTIL, attr::CANCEL] {
        e.remove(a);
    }
    e.cond_eq(attr::STATUS, s(ExecStatus::Dead.as_str())).cond_eq(attr::TOKEN, n(token));
    e
}

fn legacy_await_children(
    key: &ExecKey,
    fence: &Fence,
    total: u32,
    next_look: i64,
    now: DateTime<Utc>,
) -> Expr {
    let ev = AuditEvent {
        at: now.timestamp_millis(),
        actor: format!("worker:{}", fence.owner),
        from: Some(ExecStatus::Running),
        to: ExecStatus::Waiting,
        attempt: fence.attempt,
        token: fence.token,
        code: Some(FAN_OUT_CODE.into()),
    };
    let mut e = Expr::default();
    e.set(attr::STATUS, s(ExecStatus::Waiting.as_str()))
        .set(attr::CHILDREN, n(total))
        .set(attr::CHILD_RESULTS, AttributeValue::M(Default::default()))
        .set(attr::OPEN_PK, s(keys::open_partition(keys::open_part(&key.tenant, &key.job_id))))
        .set(attr::OPEN_DUE, n(next_look))
        .append_event(&ev)
        .remove(attr::LEASE_UNTIL)
        .cond_eq(attr::STATUS, s(ExecStatus::Running.as_str()))
        .cond_eq(attr::TOKEN, n(fence.token))
        .cond_eq(attr::LEASE_OWNER, s(&fence.owner));
    e
}

fn legacy_complete_parent(
    key: &ExecKey,
    parent: &Execution,
    end: &ParentEnd,
    actor: &str,
    now: DateTime<Utc>,
) -> Expr {
    let to = end.status();
    let ev = AuditEvent {
        at: now.timestamp_millis(),
        actor: actor.to_string(),
        from: Some(ExecStatus::Waiting),
        to,
        attempt: parent.attempt,
        token: parent.fencing_token,
        code: matches!(end, ParentEnd::Failed { .. }).then(|| CHILDREN_FAILED_CODE.to_string()),
    };
    let mut e = Expr::default();
    e.set(attr::STATUS, s(to.as_str())).append_event(&ev).remove(attr::OPEN_PK).remove(attr::OPEN_DUE);
    if let ParentEnd::Failed { message, .. } = end {
        e.set(attr::ERR_CODE, s(CHILDREN_FAILED_CODE))
            .set(attr::ERR_MSG, s(truncate(message)))
            .set(attr::ATT_PK, s(keys::attention_pk(&key.tenant, to.as_str())))
            .set(attr::ATT_SK, s(keys::attention_sk(key.scheduled_ms, &key.job_id)));
    }
    e.cond_eq(attr::STATUS, s(ExecStatus::Waiting.as_str())).cond_eq(attr::TOKEN, n(parent.fencing_token));
    e
}

fn legacy_seal_map(key: &ExecKey, fence: &Fence, next_look: i64, now: DateTime<Utc>) -> Expr {
    let ev = AuditEvent {
        at: now.timestamp_millis(),
        actor: format!("worker:{}", fence.owner),
        from: Some(ExecStatus::Running),
        to: ExecStatus::Waiting,
        attempt: fence.attempt,
        token: fence.token,
        code: Some(SEAL_CODE.into()),
    };
    let mut e = Expr::default();
    e.set(attr::STATUS, s(ExecStatus::Waiting.as_str()))
        .set(attr::MAP_PHASE, s(crate::items::phase_str(sundial_model::mapreduce::Phase::Wait)))
        .add(attr::MAP_EMITTED, 0)
        .add(attr::MAP_DONE, 0)
        .set(attr::OPEN_PK, s(keys::open_partition(keys::open_part(&key.tenant, &key.job_id))))
        .set(attr::OPEN_DUE, n(next_look))
        .append_event(&ev)
        .remove(attr::LEASE_UNTIL);
    fenced(&mut e, fence);
    e
}

fn legacy_start_reduce(key: &ExecKey, parent: &Execution, actor: &str, now: DateTime<Utc>) -> Expr {
    let now_ms = now.timestamp_millis();
    let ev = AuditEvent {
        at: now_ms,
        actor: actor.to_string(),
        from: Some(ExecStatus::Waiting),
        to: ExecStatus::Ready,
        attempt: parent.attempt,
        token: parent.fencing_token,
        code: Some(REDUCE_CODE.into()),
    };
    let mut e = Expr::default();
    e.set(attr::STATUS, s(ExecStatus::Ready.as_str()))
        .set(attr::MAP_PHASE, s(crate::items::phase_str(sundial_model::mapreduce::Phase::Reduce)))
        .set(attr::AVAILABLE, n(now_ms))
        .set(attr::ATTEMPT, n(0))
        .remove(attr::RUN_MS)
        .set(attr::OPEN_PK, s(keys::open_partition(keys::open_part(&key.tenant, &key.job_id))))
        .set(attr::OPEN_DUE, n(now_ms + sundial_model::reconcile::GRACE_MS))
        .append_event(&ev)
        .cond_eq(attr::STATUS, s(ExecStatus::Waiting.as_str()))
        .cond_eq(attr::TOKEN, n(parent.fencing_token));
    e
}

/// An execution as read (only its status, attempt and token matter to these writes).
fn execution(status: ExecStatus) -> Execution {
    use sundial_model::{JobDefinition, Target};
    let t = Utc.timestamp_millis_opt(1_764_469_800_000).unwrap();
    Execution {
        tenant: "acme".into(),
        job_id: "nightly".into(),
        scheduled_at: t,
        fire_at: t,
        created_at: t,
        status,
        attempt: 2,
        fencing_token: 5,
        lease_owner: None,
        lease_until: None,
        available_at: 0,
        def_version: 1,
        definition: JobDefinition {
            schedule: sundial_schedule::ScheduleSpec::new("rate(1 minute)", "UTC"),
            pool: "default".into(),
            target: Target::http("https://example.com"),
            params: serde_json::Value::Null,
            params_ref: None,
            misfire: Default::default(),
            misfire_threshold_secs: 60,
            concurrency: Default::default(),
            retry: Default::default(),
            timeout_secs: 30,
            start_deadline_secs: None,
            finish_deadline_secs: None,
            resources: Vec::new(),
            priority: Default::default(),
            shards: None,
            broadcast: None,
            map_reduce: None,
            after: Vec::new(),
            dependency_deadline_secs: None,
            on_dependency_deadline: Default::default(),
            events: None,
            outcome_events: None,
            outcome_notify: None,
            auto_pause_after_dead_fires: None,
            max_runs: None,
        },
        missed_range: None,
        missed_except: Vec::new(),
        last_error: None,
        cancel_requested: false,
        timeline: vec![],
        child: None,
        children: None,
        map_reduce: None,
    }
}

#[test]
fn claims_render_as_before() {
    let terms = LeaseTerms { duration_ms: 30_000, skew_margin_ms: 2_000, may_take_over: true };
    let now_ms = now().timestamp_millis();
    for from in [ExecStatus::Ready, ExecStatus::RetryWait, ExecStatus::Running] {
        let fence = Fence { owner: "w-1".into(), token: 5, attempt: 3, indexed: true };
        let got = ExecStore::claim_expr(&fence, (from, 4), now_ms + terms.duration_ms, now_ms, &terms);
        assert_eq!(got, legacy_claim("w-1", from, 4, 2, &terms, now_ms), "from {from:?}");
    }
}

#[test]
fn cancels_render_as_before() {
    for from in [ExecStatus::Ready, ExecStatus::RetryWait, ExecStatus::Waiting] {
        let got = ExecStore::cancel_expr(&key(), (from, 9, 2), codes::CANCELED, None, "api:alice", 77);
        assert_eq!(got, legacy_cancel(&key(), (from, 9, 2), codes::CANCELED, "api:alice", 77));
    }
}

#[test]
fn finishes_render_as_before() {
    let finishes = [
        Finish::Succeeded,
        Finish::RetryWait { available_at: 1_764_469_900_000, error: err(), total_run_ms: 1_234 },
        Finish::Failed { error: err() },
        Finish::Dead { reason: "MaxAttempts".into(), error: err(), digest: "abc".into() },
        Finish::Canceled,
    ];
    for indexed in [true, false] {
        for f in &finishes {
            let got = ExecStore::finish_expr(&key(), &fence(indexed), f, now());
            assert_eq!(got, legacy_finish(&key(), &fence(indexed), f, now()), "{f:?}, indexed {indexed}");
        }
    }
}

#[test]
fn skips_and_replays_render_as_before() {
    let ready = execution(ExecStatus::Ready);
    let reason = "x".repeat(250);
    assert_eq!(
        ExecStore::skip_expr(&ready, "trigger", &reason, now()),
        legacy_skip(&ready, "trigger", &reason, now())
    );
    assert_eq!(
        ExecStore::replay_expr(&key(), 6, "api:alice", "Replayed", now()),
        legacy_replay(&key(), 6, "api:alice", "Replayed", now())
    );
}

#[test]
fn parent_moves_render_as_before() {
    let f = fence(true);
    assert_eq!(
        ExecStore::await_children_expr(&key(), &f, 12, 99, now()),
        legacy_await_children(&key(), &f, 12, 99, now())
    );
    let waiting = execution(ExecStatus::Waiting);
    let ends =
        [ParentEnd::Succeeded, ParentEnd::Failed { failed: vec!["s1".into()], message: "y".repeat(400) }];
    for end in &ends {
        assert_eq!(
            ExecStore::complete_parent_expr(&key(), &waiting, end, "reconciler", now()),
            legacy_complete_parent(&key(), &waiting, end, "reconciler", now())
        );
    }
    assert_eq!(ExecStore::seal_map_expr(&key(), &f, 99, now()), legacy_seal_map(&key(), &f, 99, now()));
    assert_eq!(
        ExecStore::start_reduce_expr(&key(), &waiting, "reconciler", now()),
        legacy_start_reduce(&key(), &waiting, "reconciler", now())
    );
}

/// A skip past the fire's finish deadline keeps it in the `open` index, due at once, so the
/// reconciler reports the miss (the full mix's seeds 908, 909, 918, 919: a fire created late
/// by a catching-up tick and skipped at once was never reported); one in time leaves the index.
#[test]
fn a_skip_past_the_finish_deadline_stays_due_in_the_open_index() {
    let mut ready = execution(ExecStatus::Ready);
    let in_time = ExecStore::skip_expr(&ready, "trigger", "overlap", now());
    assert_eq!(in_time, legacy_skip(&ready, "trigger", "overlap", now()));
    let (update, _) = in_time.rendered();
    let update = update.unwrap_or_default();
    assert!(
        update
            .split_once("REMOVE")
            .is_some_and(|(set, rm)| !set.contains(attr::OPEN_DUE) && rm.contains(attr::OPEN_DUE)),
        "{update}"
    );
    // Scheduled 1.234 s before `now`: a one-second deadline has passed.
    ready.definition.finish_deadline_secs = Some(1);
    let late = ExecStore::skip_expr(&ready, "trigger", "overlap", now());
    let (update, _) = late.rendered();
    let update = update.unwrap_or_default();
    let (set, remove) = update.split_once("REMOVE").unwrap_or((&update, ""));
    assert!(set.contains(attr::OPEN_PK) && set.contains(attr::OPEN_DUE), "{update}");
    assert!(!remove.contains(attr::OPEN_DUE), "{update}");
    ready.definition.finish_deadline_secs = Some(2);
    assert_eq!(ExecStore::skip_expr(&ready, "trigger", "overlap", now()), in_time);
}

/// A cancel past the fire's finish deadline keeps it in the `open` index, due at once, so the
/// reconciler reports the miss (seed 291 of CI's faults shape: a fire created after its
/// deadline by a tick down since the first minute, canceled from RETRY_WAIT before any
/// reconciler looked, was never reported); one in time, or without a deadline, leaves it.
#[test]
fn a_cancel_past_the_finish_deadline_stays_due_in_the_open_index() {
    let at = (ExecStatus::RetryWait, 9, 2);
    let plain = ExecStore::cancel_expr(&key(), at, codes::CANCELED, None, "worker:w", 77);
    assert_eq!(plain, legacy_cancel(&key(), at, codes::CANCELED, "worker:w", 77));
    assert_eq!(ExecStore::cancel_expr(&key(), at, codes::CANCELED, Some(77), "worker:w", 77), plain);
    let late = ExecStore::cancel_expr(&key(), at, codes::CANCELED, Some(76), "worker:w", 77);
    let (update, _) = late.rendered();
    let update = update.unwrap_or_default();
    let (set, remove) = update.split_once("REMOVE").unwrap_or((&update, ""));
    assert!(set.contains(attr::OPEN_PK) && set.contains(attr::OPEN_DUE), "{update}");
    assert!(remove.contains(attr::LEASE_UNTIL) && !remove.contains(attr::OPEN_DUE), "{update}");
    let (update, _) = plain.rendered();
    assert!(update
        .unwrap_or_default()
        .split_once("REMOVE")
        .is_some_and(|(_, rm)| rm.contains(attr::OPEN_DUE)));
}
