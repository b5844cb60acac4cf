//! Each toolkit piece against the local emulator, through the real AWS SDK. Every test makes
//! its own tables under a unique prefix and deletes them when it passes.

use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem};
use aws_sdk_dynamodb::Client;
use chrono::{DateTime, Duration, TimeZone, Utc};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use sundial_idempotency::fence::{FenceMode, FenceOutcome, FencedTable};
use sundial_idempotency::inbox::{Admission, Inbox, InboxStatus, RunOnceError, StepOutcome, TransactOutcome};
use sundial_idempotency::marker::DoneMarkers;
use sundial_idempotency::outbound::{
    CallError, CallOutcome, FarSide, IdempotencyKey, Lookup, Outbound, RetryPolicy,
};
use sundial_idempotency::state::{CasOutcome, StateMachine, Transition};
use sundial_idempotency::tables::{delete_table, ensure_table, ToolkitTables, PK};
use sundial_idempotency::unique::{insert_unique, Insert};
use sundial_idempotency::{ExecutionContext, Update};

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 12, 1, 2, 0, 0).single().unwrap()
}

fn ctx(token: u64) -> ExecutionContext {
    ExecutionContext::new("job-1@2026-11-30T18:00:00Z", token, now())
}

fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.into())
}

fn key(pk: &str) -> HashMap<String, AttributeValue> {
    HashMap::from([(PK.to_owned(), s(pk))])
}

async fn setup(label: &str) -> anyhow::Result<(Client, ToolkitTables, String)> {
    let ddb = sundial_tests::clients().ddb;
    let prefix = sundial_tests::unique_prefix(label);
    let tables = ToolkitTables::with_prefix(&prefix);
    tables
        .ensure(&ddb)
        .await
        .map_err(|e| anyhow::anyhow!("{e}; is the emulator running? start it with `localstack/start.sh`"))?;
    let data = format!("{prefix}data");
    ensure_table(&ddb, &data, PK, None).await?;
    Ok((ddb, tables, data))
}

async fn teardown(ddb: &Client, tables: &ToolkitTables, data: &str) {
    let _ = tables.delete(ddb).await;
    let _ = delete_table(ddb, data).await;
}

async fn get(ddb: &Client, table: &str, pk: &str) -> anyhow::Result<Option<HashMap<String, AttributeValue>>> {
    Ok(ddb.get_item().table_name(table).set_key(Some(key(pk))).consistent_read(true).send().await?.item)
}

fn num(item: &HashMap<String, AttributeValue>, f: &str) -> i64 {
    item.get(f).and_then(|v| v.as_n().ok()).and_then(|v| v.parse().ok()).unwrap_or(i64::MIN)
}

// ---------------------------------------------------------------- inbox

#[tokio::test]
async fn inbox_admits_one_attempt_per_execution_and_step() -> anyhow::Result<()> {
    // GIVEN an inbox
    let (ddb, tables, data) = setup("inbox-admit").await?;
    let inbox = Inbox::new(ddb.clone(), &tables.inbox);

    // WHEN attempt 1 is admitted to "notify", then its failover copy (token 2) asks too
    let first = inbox.admit(&ctx(1), "notify", now()).await?;
    let second = inbox.admit(&ctx(2), "notify", now()).await?;
    // and another step of the same execution asks
    let other_step = inbox.admit(&ctx(2), "archive", now()).await?;

    // THEN only the first is admitted; the copy sees attempt 1's STARTED entry
    let Admission::First(ticket) = first else { panic!("first admission refused: {first:?}") };
    match &second {
        Admission::AlreadySeen(r) => {
            assert_eq!((r.status, r.fencing_token, r.step.as_str()), (InboxStatus::Started, 1, "notify"))
        }
        other => panic!("the failover copy was admitted: {other:?}"),
    }
    assert!(matches!(other_step, Admission::First(_)), "a different step is independent");

    // AND once completed, the record carries the result
    inbox.complete(ticket, Ok(&serde_json::json!({"sent": 3})), now()).await?;
    let rec = inbox.record("job-1@2026-11-30T18:00:00Z", "notify").await?.expect("record");
    assert_eq!(rec.status, InboxStatus::Done);
    assert_eq!(rec.result, Some(serde_json::json!({"sent": 3})));
    teardown(&ddb, &tables, &data).await;
    Ok(())
}

#[tokio::test]
async fn run_once_runs_the_step_once_and_records_a_failure_as_final() -> anyhow::Result<()> {
    // GIVEN an inbox and a step that counts its runs
    let (ddb, tables, data) = setup("inbox-run").await?;
    let inbox = Inbox::new(ddb.clone(), &tables.inbox);
    let runs = AtomicU32::new(0);
    let step = || async {
        runs.fetch_add(1, Ordering::SeqCst);
        Ok::<_, String>("done")
    };

    // WHEN three attempts of the execution run it
    let a = inbox.run_once(&ctx(1), "email", now(), step).await?;
    let b = inbox.run_once(&ctx(2), "email", now(), step).await?;
    let c = inbox.run_once(&ctx(3), "email", now(), step).await?;

    // THEN it ran once; the others got the recorded outcome
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(a, StepOutcome::Ran("done"));
    for later in [b, c] {
        let StepOutcome::AlreadyRan(r) = later else { panic!("ran again") };
        assert_eq!((r.status, r.fencing_token), (InboxStatus::Done, 1));
        assert_eq!(r.result, Some(serde_json::json!("done")));
    }

    // AND a step that fails is recorded FAILED and not run again (at most once)
    let failing = || async { Err::<(), _>("smtp said no".to_string()) };
    let err = inbox.run_once(&ctx(1), "sms", now(), failing).await.expect_err("should fail");
    assert!(matches!(err, RunOnceError::Step(ref m) if m == "smtp said no"));
    let again = inbox.run_once(&ctx(2), "sms", now(), step).await?;
    let StepOutcome::AlreadyRan(r) = again else { panic!("a failed step ran again") };
    assert_eq!((r.status, r.error.as_deref()), (InboxStatus::Failed, Some("smtp said no")));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    teardown(&ddb, &tables, &data).await;
    Ok(())
}

#[tokio::test]
async fn transact_applies_a_steps_writes_exactly_once() -> anyhow::Result<()> {
    // GIVEN a counter item and a step whose effect is "counter += 10"
    let (ddb, tables, data) = setup("inbox-tx").await?;
    let inbox = Inbox::new(ddb.clone(), &tables.inbox);
    ddb.put_item()
        .table_name(&data)
        .item(PK, s("counter"))
        .item("n", AttributeValue::N("0".into()))
        .send()
        .await?;
    let add_ten = || {
        TransactWriteItem::builder()
            .update(
                aws_sdk_dynamodb::types::Update::builder()
                    .table_name(&data)
                    .key(PK, s("counter"))
                    .update_expression("ADD n :ten")
                    .expression_attribute_values(":ten", AttributeValue::N("10".into()))
                    .build()
                    .unwrap(),
            )
            .build()
    };

    // WHEN three attempts apply the step
    let outcomes = [
        inbox.transact(&ctx(1), "book", now(), vec![add_ten()]).await?,
        inbox.transact(&ctx(2), "book", now(), vec![add_ten()]).await?,
        inbox.transact(&ctx(3), "book", now(), vec![add_ten()]).await?,
    ];

    // THEN the counter moved once, and the repeats were told so
    assert_eq!(outcomes[0], TransactOutcome::Applied);
    for o in &outcomes[1..] {
        assert!(matches!(o, TransactOutcome::AlreadyApplied(r) if r.fencing_token == 1), "{o:?}");
    }
    assert_eq!(num(&get(&ddb, &data, "counter").await?.unwrap(), "n"), 10);

    // AND a caller write whose own condition fails is reported by index, with nothing applied
    ddb.put_item().table_name(&data).item(PK, s("guard")).send().await?;
    let refused = Put::builder()
        .table_name(&data)
        .item(PK, s("guard"))
        .condition_expression("attribute_not_exists(pk)")
        .build()?;
    let o = inbox
        .transact(&ctx(1), "other", now(), vec![add_ten(), TransactWriteItem::builder().put(refused).build()])
        .await?;
    assert_eq!(o, TransactOutcome::ConditionFailed { index: 1 });
    assert_eq!(num(&get(&ddb, &data, "counter").await?.unwrap(), "n"), 10);
    assert!(inbox.record("job-1@2026-11-30T18:00:00Z", "other").await?.is_none(), "no inbox entry either");
    teardown(&ddb, &tables, &data).await;
    Ok(())
}

// ---------------------------------------------------------------- fenced writes

#[tokio::test]
async fn a_stale_token_cannot_overwrite_a_newer_writers_output() -> anyhow::Result<()> {
    // GIVEN an output item written by attempt 3
    let (ddb, tables, data) = setup("fence").await?;
    let out = FencedTable::new(ddb.clone(), &data);
    let w3 = out.write(key("report"), 3, &Update::new().set("object", s("by-3"))).await?;
    assert_eq!(w3, FenceOutcome::Written { previous: None });

    // WHEN attempt 2 (stale, e.g. woken from a GC pause) writes
    let w2 = out.write(key("report"), 2, &Update::new().set("object", s("by-2"))).await?;
    // and attempt 3 writes again (a retry of its own landed write)
    let w3_again = out.write(key("report"), 3, &Update::new().set("object", s("by-3-again"))).await?;

    // THEN both are refused and the item still holds attempt 3's output
    assert_eq!(w2, FenceOutcome::Stale { stored: 3, mine: 2 });
    assert_eq!(w3_again, FenceOutcome::Stale { stored: 3, mine: 3 });
    let item = get(&ddb, &data, "report").await?.unwrap();
    assert_eq!(item["object"], s("by-3"));
    assert_eq!(num(&item, "last_fencing_token"), 3);

    // AND a newer attempt 4 replaces it
    let w4 = out.write(key("report"), 4, &Update::new().set("object", s("by-4"))).await?;
    assert_eq!(w4, FenceOutcome::Written { previous: Some(3) });

    // AND in NotOlder mode (checkpoints) the holder may rewrite, older attempts still may not
    let cp = out.clone().with_mode(FenceMode::NotOlder);
    assert!(cp.write(key("report"), 4, &Update::new().set("object", s("by-4b"))).await?.is_written());
    assert_eq!(cp.write(key("report"), 1, &Update::new()).await?, FenceOutcome::Stale { stored: 4, mine: 1 });
    assert_eq!(get(&ddb, &data, "report").await?.unwrap()["object"], s("by-4b"));

    // AND the fence attribute cannot be smuggled in through the update
    let err = out
        .write(key("report"), 9, &Update::new().set("last_fencing_token", AttributeValue::N("0".into())))
        .await;
    assert!(matches!(err, Err(sundial_idempotency::Error::Invalid { field: "update", .. })), "{err:?}");
    teardown(&ddb, &tables, &data).await;
    Ok(())
}

// ---------------------------------------------------------------- CAS state machine

async fn put_merchant(ddb: &Client, table: &str, pk: &str, status: &str) -> anyhow::Result<()> {
    ddb.put_item()
        .table_name(table)
        .item(PK, s(pk))
        .item("status", s(status))
        .item("settle_date", s("2026-11-30"))
        .item("paid", AttributeValue::N("0".into()))
        .send()
        .await?;
    Ok(())
}

#[tokio::test]
async fn zero_rows_affected_is_already_handled_not_an_error() -> anyhow::Result<()> {
    // GIVEN an UNSETTLED merchant
    let (ddb, tables, data) = setup("cas").await?;
    put_merchant(&ddb, &data, "m1", "UNSETTLED").await?;
    let sm = StateMachine::new(ddb.clone(), &data);
    let claim = |t| Transition::claim("UNSETTLED", "SETTLING", t).require("settle_date", s("2026-11-30"));

    // WHEN two attempts of the same token generation race to claim it
    let (c1, c2) = (claim(1), claim(1));
    let (a, b) = tokio::join!(sm.transition(key("m1"), &c1), sm.transition(key("m1"), &c2));
    let (a, b) = (a?, b?);

    // THEN exactly one moves it; the other is told who has it
    assert_eq!([a.is_applied(), b.is_applied()].iter().filter(|x| **x).count(), 1, "{a:?} {b:?}");
    let refused = if a.is_applied() { b } else { a };
    let CasOutcome::AlreadyHandled { current: Some(cur) } = refused else { panic!("{refused:?}") };
    assert_eq!((cur.status.as_deref(), cur.owner), (Some("SETTLING"), Some(1)));

    // AND the holder finishes, moving the money in the same write, exactly once
    let finish = Transition::by_holder("SETTLING", "SETTLED", 1).with(Update::new().add("paid", 500));
    assert!(sm.transition(key("m1"), &finish).await?.is_applied());
    assert!(!sm.transition(key("m1"), &finish).await?.is_applied(), "a repeat finish is refused");
    assert_eq!(num(&get(&ddb, &data, "m1").await?.unwrap(), "paid"), 500);

    // AND a wrong settle_date is refused too
    put_merchant(&ddb, &data, "m2", "UNSETTLED").await?;
    let other_day = Transition::claim("UNSETTLED", "SETTLING", 1).require("settle_date", s("2026-12-01"));
    assert!(!sm.transition(key("m2"), &other_day).await?.is_applied());
    teardown(&ddb, &tables, &data).await;
    Ok(())
}

#[tokio::test]
async fn a_newer_attempt_takes_over_a_crashed_claim_and_the_old_one_cannot_finish() -> anyhow::Result<()> {
    // GIVEN a merchant left SETTLING by attempt 2, which crashed
    let (ddb, tables, data) = setup("cas-takeover").await?;
    put_merchant(&ddb, &data, "m1", "UNSETTLED").await?;
    let sm = StateMachine::new(ddb.clone(), &data);
    let claim = |t| Transition::claim("UNSETTLED", "SETTLING", t).taking_over("SETTLING");
    assert!(sm.transition(key("m1"), &claim(2)).await?.is_applied());

    // WHEN attempt 1 (older) tries to claim it, and attempt 3 (newer) does
    let by_1 = sm.transition(key("m1"), &claim(1)).await?;
    let by_3 = sm.transition(key("m1"), &claim(3)).await?;

    // THEN only the newer one gets it
    assert!(!by_1.is_applied());
    assert!(by_3.is_applied());
    assert_eq!(sm.state_of(key("m1")).await?.unwrap().owner, Some(3));

    // AND the crashed attempt, had it come back, cannot finish it; the new holder can
    let finish = |t| Transition::by_holder("SETTLING", "SETTLED", t).with(Update::new().add("paid", 7));
    assert!(!sm.transition(key("m1"), &finish(2)).await?.is_applied());
    assert!(sm.transition(key("m1"), &finish(3)).await?.is_applied());
    assert_eq!(num(&get(&ddb, &data, "m1").await?.unwrap(), "paid"), 7);

    // AND once SETTLED no one takes it over, whatever their token
    assert!(!sm.transition(key("m1"), &claim(99)).await?.is_applied());
    teardown(&ddb, &tables, &data).await;
    Ok(())
}

// ---------------------------------------------------------------- unique insert

#[tokio::test]
async fn a_second_insert_under_the_natural_key_returns_the_first_row() -> anyhow::Result<()> {
    // GIVEN a detail table keyed by the natural key (merchant_id, settle_date)
    let (ddb, tables, data) = setup("unique").await?;
    let details = format!("{data}-detail");
    ensure_table(&ddb, &details, "merchant_id", Some("settle_date")).await?;
    let row = |by: &str| {
        HashMap::from([
            ("merchant_id".to_owned(), s("m1")),
            ("settle_date".to_owned(), s("2026-11-30")),
            ("written_by".to_owned(), s(by)),
        ])
    };

    // WHEN two workers insert the same merchant's row for the same day
    let first = insert_unique(&ddb, &details, row("A"), &["merchant_id", "settle_date"]).await?;
    let second = insert_unique(&ddb, &details, row("B"), &["merchant_id", "settle_date"]).await?;

    // THEN one row exists, A's, and B is handed it instead of an error
    assert_eq!(first, Insert::Inserted);
    let Insert::Exists(existing) = second else { panic!("second insert wrote: {second:?}") };
    assert_eq!(existing["written_by"], s("A"));
    let count = ddb.scan().table_name(&details).send().await?.count;
    assert_eq!(count, 1);

    // AND a row without its key attribute is refused before any write
    let mut bad = row("C");
    bad.remove("settle_date");
    assert!(insert_unique(&ddb, &details, bad, &["merchant_id", "settle_date"]).await.is_err());
    let _ = delete_table(&ddb, &details).await;
    teardown(&ddb, &tables, &data).await;
    Ok(())
}

// ---------------------------------------------------------------- done-marker

#[tokio::test]
async fn the_done_marker_short_circuits_until_it_expires() -> anyhow::Result<()> {
    // GIVEN no marker for the batch
    let (ddb, tables, data) = setup("marker").await?;
    let markers = DoneMarkers::new(ddb.clone(), &tables.markers);
    assert!(markers.check("settle:2026-11-30", now()).await?.is_none());

    // WHEN attempt 3 marks it done for 20 hours
    markers.mark("settle:2026-11-30", &ctx(3), now(), Duration::hours(20)).await?;

    // THEN a check within the window sees who finished it
    let rec = markers.check("settle:2026-11-30", now() + Duration::hours(19)).await?.expect("marker");
    assert_eq!((rec.fencing_token, rec.done_at), (3, now()));
    // AND after the window it no longer counts, even if DynamoDB has not deleted it yet
    assert!(markers.check("settle:2026-11-30", now() + Duration::hours(21)).await?.is_none());
    // AND other batches are unaffected
    assert!(markers.check("settle:2026-12-01", now()).await?.is_none());
    teardown(&ddb, &tables, &data).await;
    Ok(())
}

// ---------------------------------------------------------------- outbound calls

/// A far side honouring idempotency keys, with scripted transport failures. It keeps real
/// state: what it applied is what lookups and the assertions see.
#[derive(Default)]
struct Bank {
    applied: Mutex<HashMap<String, u64>>,
    /// Failure to return from each successive submit (after applying, for NoAnswer).
    submit_script: Mutex<Vec<CallError>>,
    lookups_down: bool,
    submits: AtomicU32,
    lookups: AtomicU32,
}

impl FarSide for &Bank {
    type Request = u64;
    type Receipt = String;

    async fn submit(&self, key: &IdempotencyKey, amount: &u64) -> Result<String, CallError> {
        self.submits.fetch_add(1, Ordering::SeqCst);
        let scripted = { self.submit_script.lock().unwrap().pop() };
        match scripted {
            Some(CallError::NotSent(m)) => return Err(CallError::NotSent(m)),
            Some(e @ CallError::Rejected { .. }) => return Err(e),
            // Lost on the way there: never applied, and the sender cannot tell.
            Some(CallError::NoAnswer(m)) if m == LOST_IN_TRANSIT => return Err(CallError::NoAnswer(m)),
            // Applied, and the answer lost on the way back.
            Some(CallError::NoAnswer(m)) => {
                self.applied.lock().unwrap().entry(key.to_string()).or_insert(*amount);
                return Err(CallError::NoAnswer(m));
            }
            None => {}
        }
        self.applied.lock().unwrap().entry(key.to_string()).or_insert(*amount);
        Ok(format!("rcpt-{key}"))
    }

    async fn lookup(&self, key: &IdempotencyKey) -> Result<Lookup<String>, CallError> {
        self.lookups.fetch_add(1, Ordering::SeqCst);
        if self.lookups_down {
            return Err(CallError::NoAnswer("503".into()));
        }
        Ok(match self.applied.lock().unwrap().get(key.as_str()) {
            Some(_) => Lookup::Found(format!("rcpt-{key}")),
            None => Lookup::NotFound,
        })
    }
}

const LOST_IN_TRANSIT: &str = "lost in transit";

fn no_wait() -> RetryPolicy {
    RetryPolicy { max_attempts: 3, backoff: std::time::Duration::ZERO }
}

#[tokio::test]
async fn a_lost_answer_is_looked_up_before_any_retry() -> anyhow::Result<()> {
    // GIVEN a bank that applies the transfer but whose answer is lost
    let (ddb, tables, data) = setup("out-lost").await?;
    let bank =
        Bank { submit_script: Mutex::new(vec![CallError::NoAnswer("timeout".into())]), ..Bank::default() };
    let out = Outbound::new(&bank, ddb.clone(), &tables.outbound).with_policy(no_wait());
    let key = IdempotencyKey::for_item("settle", &["m1", "2026-11-30"])?;

    // WHEN the transfer is called
    let o = out.call(&ctx(1), &key, &500, now()).await?;

    // THEN the lookup confirms it, and it is not submitted a second time
    assert_eq!(
        o,
        CallOutcome::Confirmed { receipt: "rcpt-settle:m1:2026-11-30".into(), attempts: 1, via_lookup: true }
    );
    assert_eq!(bank.submits.load(Ordering::SeqCst), 1);
    assert_eq!(bank.lookups.load(Ordering::SeqCst), 1);
    assert!(out.unknown_outcomes().await?.is_empty());
    teardown(&ddb, &tables, &data).await;
    Ok(())
}

#[tokio::test]
async fn when_the_far_side_cannot_say_the_unknown_outcome_is_recorded() -> anyhow::Result<()> {
    // GIVEN a bank whose answer is lost and whose lookups are down
    let (ddb, tables, data) = setup("out-unknown").await?;
    let bank = Bank {
        submit_script: Mutex::new(vec![CallError::NoAnswer("connection reset".into())]),
        lookups_down: true,
        ..Bank::default()
    };
    let out = Outbound::new(&bank, ddb.clone(), &tables.outbound).with_policy(no_wait());
    let key = IdempotencyKey::for_item("settle", &["m7", "2026-11-30"])?;

    // WHEN the transfer is called
    let o = out.call(&ctx(2), &key, &700, now()).await?;

    // THEN the call reports Unknown, did not retry blind, and the outcome is on record
    assert!(matches!(o, CallOutcome::Unknown { attempts: 1, .. }), "{o:?}");
    assert_eq!(bank.submits.load(Ordering::SeqCst), 1);
    let unknown = out.unknown_outcomes().await?;
    assert_eq!(unknown.len(), 1);
    assert_eq!(
        (unknown[0].key.as_str(), unknown[0].request.clone()),
        ("settle:m7:2026-11-30", serde_json::json!(700))
    );
    assert_eq!(unknown[0].execution_id, "job-1@2026-11-30T18:00:00Z");

    // AND when the far side can answer again, a recheck resolves it
    let bank_up = Bank { applied: Mutex::new(bank.applied.lock().unwrap().clone()), ..Bank::default() };
    let recheck = Outbound::new(&bank_up, ddb.clone(), &tables.outbound);
    let answers = recheck.recheck_unknown(now()).await?;
    assert_eq!(answers, vec![(key.clone(), Lookup::Found("rcpt-settle:m7:2026-11-30".into()))]);
    assert!(recheck.unknown_outcomes().await?.is_empty());
    teardown(&ddb, &tables, &data).await;
    Ok(())
}

#[tokio::test]
async fn not_sent_is_retried_not_found_is_resubmitted_and_rejections_are_final() -> anyhow::Result<()> {
    // GIVEN a bank that refuses the connection twice
    let (ddb, tables, data) = setup("out-retry").await?;
    let key = IdempotencyKey::for_item("settle", &["m2", "2026-11-30"])?;
    let refused = || CallError::NotSent("connection refused".into());
    let bank = Bank { submit_script: Mutex::new(vec![refused(), refused()]), ..Bank::default() };
    let out = Outbound::new(&bank, ddb.clone(), &tables.outbound).with_policy(no_wait());
    // WHEN called
    let o = out.call(&ctx(1), &key, &1, now()).await?;
    // THEN the third submission lands, with no lookup needed (nothing could have been applied)
    assert!(matches!(o, CallOutcome::Confirmed { attempts: 3, via_lookup: false, .. }), "{o:?}");
    assert_eq!(bank.lookups.load(Ordering::SeqCst), 0);

    // GIVEN a bank that never accepts the connection
    let bank = Bank { submit_script: Mutex::new(vec![refused(), refused(), refused()]), ..Bank::default() };
    let out = Outbound::new(&bank, ddb.clone(), &tables.outbound).with_policy(no_wait());
    // THEN the outcome is NotApplied: certainly nothing happened
    assert!(matches!(out.call(&ctx(1), &key, &1, now()).await?, CallOutcome::NotApplied { attempts: 3, .. }));

    // GIVEN a bank that loses the first submission (lookup: not found) and then refuses
    // connections
    let lost = CallError::NoAnswer(LOST_IN_TRANSIT.into());
    let bank = Bank { submit_script: Mutex::new(vec![refused(), refused(), lost]), ..Bank::default() };
    let out = Outbound::new(&bank, ddb.clone(), &tables.outbound).with_policy(no_wait());
    // THEN the outcome is Unknown, not NotApplied: the lost submission may still land
    let o = out.call(&ctx(1), &key, &1, now()).await?;
    assert!(matches!(o, CallOutcome::Unknown { attempts: 3, .. }), "{o:?}");
    assert_eq!(bank.lookups.load(Ordering::SeqCst), 1);
    assert_eq!(out.unknown_outcomes().await?.len(), 1);

    // GIVEN a bank that rejects the transfer
    let rejected = CallError::Rejected { code: "INSUFFICIENT_FUNDS".into(), message: "no".into() };
    let bank = Bank { submit_script: Mutex::new(vec![rejected]), ..Bank::default() };
    let out = Outbound::new(&bank, ddb.clone(), &tables.outbound).with_policy(no_wait());
    // THEN it is not retried (retrying a business failure copies bad data)
    let o = out.call(&ctx(1), &key, &1, now()).await?;
    assert!(matches!(o, CallOutcome::Rejected { ref code, .. } if code == "INSUFFICIENT_FUNDS"));
    assert_eq!(bank.submits.load(Ordering::SeqCst), 1);
    teardown(&ddb, &tables, &data).await;
    Ok(())
}

#[test]
fn idempotency_keys_come_from_the_natural_key_and_are_unambiguous() {
    // GIVEN the natural key of an item
    let k = IdempotencyKey::for_item("settle", &["m00042", "2026-11-30"]).unwrap();
    // THEN the key is stable text built from it
    assert_eq!(k.as_str(), "settle:m00042:2026-11-30");
    // AND pieces that could blur the boundaries are refused
    assert!(IdempotencyKey::for_item("settle", &["m:1", "x"]).is_err());
    assert!(IdempotencyKey::for_item("settle", &[]).is_err());
    assert!(IdempotencyKey::for_item("", &["a"]).is_err());
}
