//! The event source (its acknowledgment log is [`crate::eventlog`]).
//!
//! The source stands for an upstream that delivers at least once (a queue consumer, a webhook
//! sender): it sends each [`EventPlan`] through the control plane's own
//! `control::events::fire`, retries a delivery that failed until it is acknowledged or
//! refused, repeats deliveries of the same event (same key, or for a keyless event the first
//! delivery's instant as `at`), sometimes while the first is still in flight, and dies mid-call:
//! right after the key claim ([`SenderCrash::AfterClaim`], the state a sender killed between
//! `claim_event_key` and `put_new` leaves) or with its task aborted at a drawn instant. The log
//! it keeps is what the `events` invariant reads: every attempt, and for an acknowledged one the
//! execution the product named.

use crate::eventlog::{Answer, Attempt, EventLog};
use crate::processes::{until, Shared};
use crate::workload::{EventPlan, SenderCrash, Workload};
use crate::world::ms;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use sundial_core::control::events::{fire, EventIn};
use sundial_core::control::{Caller, Control, ControlError, ControlSettings};
use tokio::task::JoinHandle;

/// The principal the source calls as: its actor on a timeline is `api:sim-events`.
pub const PRINCIPAL: &str = "sim-events";

/// Where the source's retry backoffs are drawn in the seed's stream.
const RETRY_DRAWS: u64 = 2_000_000;

/// Attempts per delivery before the source gives it up (a sender's retry budget).
const MAX_ATTEMPTS: u32 = 10;

/// The event source: each delivery of each event in its own task at its instant (so repeats
/// race first deliveries, operator actions and the tick).
pub fn source(sh: &Shared, workload: &Workload, log: &EventLog) -> JoinHandle<()> {
    let (sh, w, log) = (sh.clone(), Arc::new(workload.clone()), log.clone());
    tokio::spawn(async move {
        let ctl = Arc::new(Control::new(sh.world.ctx("events"), ControlSettings::default()));
        let mut deliveries: Vec<(i64, usize, usize)> = Vec::new();
        for (i, e) in w.events.iter().enumerate() {
            deliveries.push((e.at_ms, i, 0));
            for (r, d) in e.repeats_ms.iter().enumerate() {
                deliveries.push((e.at_ms + d, i, r + 1));
            }
        }
        deliveries.sort();
        // A keyless event's repeats send its first delivery's instant as `at`: that is how a
        // sender without keys deduplicates. Its first delivery records it here.
        let first_at: Arc<Mutex<Vec<Option<i64>>>> = Arc::new(Mutex::new(vec![None; w.events.len()]));
        for (t, i, d) in deliveries {
            until(&sh.world, t).await;
            if sh.stop.is_cancelled() {
                break;
            }
            let (sh, ctl, w, log, first_at) =
                (sh.clone(), ctl.clone(), w.clone(), log.clone(), first_at.clone());
            tokio::spawn(async move { deliver(&sh, &ctl, &w, &log, &first_at, i, d).await });
        }
    })
}

/// One delivery: attempts until acknowledged, refused for good, or out of budget.
async fn deliver(
    sh: &Shared,
    ctl: &Arc<Control>,
    w: &Workload,
    log: &EventLog,
    first_at: &Mutex<Vec<Option<i64>>>,
    i: usize,
    d: usize,
) {
    let ev = &w.events[i];
    let plan = &w.jobs[ev.job];
    let who = Caller { tenant: plan.tenant.clone(), principal: PRINCIPAL.into() };
    for attempt in 0..MAX_ATTEMPTS {
        if sh.stop.is_cancelled() {
            return;
        }
        let started_ms = sh.world.aws.now_ms();
        let at_ms = event_at(ev, started_ms, first_at, i);
        let input = EventIn { key: ev.key.clone(), params: None, at: at_ms.map(ms) };
        let crash = if d == 0 && attempt == 0 { ev.crash } else { None };
        let answer = match crash {
            Some(SenderCrash::AfterClaim) => {
                claim_only(ctl, &who, &plan.job_id, &input, ms(started_ms)).await
            }
            Some(SenderCrash::After(after_ms)) => {
                let (ctl, who, job, input) = (ctl.clone(), who.clone(), plan.job_id.clone(), input.clone());
                let call = tokio::spawn(async move { fire(&ctl, &who, &job, &input, ms(started_ms)).await });
                tokio::time::sleep(Duration::from_millis(after_ms)).await;
                if call.is_finished() {
                    answer_of(call.await.unwrap_or_else(|_| Err(aborted())))
                } else {
                    call.abort();
                    let _ = call.await;
                    Answer::Crashed
                }
            }
            None => answer_of(fire(ctl, &who, &plan.job_id, &input, ms(started_ms)).await),
        };
        let acked = matches!(answer, Answer::Acked { .. });
        let after_claim = match (&ev.key, acked) {
            (Some(key), false) => claimed_not_put(ctl, &plan.tenant, &plan.job_id, key).await,
            _ => false,
        };
        let wait_secs = match &answer {
            Answer::Acked { .. } | Answer::Refused { retry_after_secs: None, .. } => None,
            Answer::Refused { retry_after_secs: Some(s), .. } => Some(u64::from(*s).clamp(1, 60)),
            Answer::Failed(_) | Answer::Crashed => Some(crate::between(
                sh.seed,
                RETRY_DRAWS + i as u64 * 64 + d as u64 * 16 + u64::from(attempt),
                1,
                30,
            )),
        };
        log.push(Attempt { event: i, delivery: d, attempt, started_ms, at_ms, answer, after_claim });
        let Some(wait) = wait_secs else { return };
        tokio::time::sleep(Duration::from_secs(wait)).await;
    }
}

/// The `at` an attempt sends: the event's own (`past_ms` before its first send), else, for a
/// keyless event, its first delivery's arrival (recorded by the first attempt that runs).
fn event_at(ev: &EventPlan, now_ms: i64, first_at: &Mutex<Vec<Option<i64>>>, i: usize) -> Option<i64> {
    if let Some(p) = ev.past_ms {
        return Some(ev.at_ms - p);
    }
    if ev.key.is_some() {
        return None;
    }
    let mut g = first_at.lock().ok()?;
    match g[i] {
        Some(t) => Some(t),
        None => {
            g[i] = Some(now_ms);
            None
        }
    }
}

fn aborted() -> ControlError {
    ControlError::Store(sundial_store::StoreError::Transient { op: "sim", message: "aborted".into() })
}

fn answer_of(r: Result<sundial_core::control::events::EventOutcome, ControlError>) -> Answer {
    match r {
        Ok(o) => Answer::Acked {
            execution: o.execution.id(),
            scheduled_ms: o.execution.scheduled_at.timestamp_millis(),
            created: o.created,
        },
        Err(e) if e.is_retryable() => Answer::Failed(e.to_string()),
        Err(ControlError::Limited { retry_after_secs, message, .. }) => {
            Answer::Refused { error: message, retry_after_secs: Some(retry_after_secs) }
        }
        Err(e) => Answer::Refused { error: e.to_string(), retry_after_secs: None },
    }
}

/// The first half of `fire` and no more: the sender dies right after the key claim. The
/// instant claimed is the one `fire` would give (`model::event::event_instant` over the job's
/// schedule), so the retry finds the record a real death there leaves.
async fn claim_only(
    ctl: &Control,
    who: &Caller,
    job_id: &str,
    ev: &EventIn,
    now: chrono::DateTime<chrono::Utc>,
) -> Answer {
    let (Ok(job), Some(key)) = (sundial_core::control::jobs::get(ctl, who, job_id).await, ev.key.as_deref())
    else {
        return Answer::Crashed;
    };
    let (Some(trigger), Ok(schedule)) =
        (job.definition.events.clone(), sundial_core::schedules::schedule_of(&job))
    else {
        return Answer::Crashed;
    };
    let Some(mut instant) = sundial_model::event::event_instant(&trigger, &schedule, ev.at.unwrap_or(now))
    else {
        return Answer::Crashed;
    };
    if !trigger.once_per_period {
        instant = sundial_model::event::off_schedule(&schedule, instant);
    }
    let _ = sundial_store::events::claim_event_key(
        ctl.ddb(),
        ctl.cfg(),
        &who.tenant,
        job_id,
        key,
        instant.timestamp_millis(),
        now.timestamp(),
    )
    .await;
    Answer::Crashed
}

/// Whether event `key` of the job is claimed and no execution is at its instant: the call
/// ended between the claim and the put. Read like any client would (consistent reads; an error
/// answers "not known", false).
async fn claimed_not_put(ctl: &Control, tenant: &str, job_id: &str, key: &str) -> bool {
    let Some(instant) = claimed_instant(ctl.ddb(), ctl.cfg(), tenant, job_id, key).await else {
        return false;
    };
    let exec = sundial_store::executions::ExecKey::new(tenant, job_id, instant);
    matches!(ctl.execs.get(&exec, true).await, Ok(None))
}

/// The instant recorded for event `key` of the job (`EVT#{key}`), if it is claimed.
pub async fn claimed_instant(
    ddb: &aws_sdk_dynamodb::Client,
    cfg: &sundial_core::config::Config,
    tenant: &str,
    job_id: &str,
    key: &str,
) -> Option<i64> {
    use aws_sdk_dynamodb::types::AttributeValue;
    use sundial_store::items::attr;
    let got = ddb
        .get_item()
        .table_name(&cfg.jobs_table)
        .key(attr::PK, AttributeValue::S(sundial_model::keys::job_pk(tenant, job_id)))
        .key(attr::SK, AttributeValue::S(sundial_model::keys::event_sk(key)))
        .consistent_read(true)
        .send()
        .await
        .ok()?;
    got.item?.get(attr::SCHED)?.as_n().ok()?.parse().ok()
}
