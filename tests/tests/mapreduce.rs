//! Map-reduce jobs (`docs/mapreduce.md`): a handler's map emits items, each
//! its own child execution (claimed, fenced, retried alone), and a fenced reduce runs once with
//! every item's result; a zombie parent's emits are refused, a taken-over map resumes from its
//! committed cursor, and worker processes killed or paused during the map lose nothing and
//! repeat nothing.

use chrono::{Duration as CDuration, Utc};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use sundial_core::execution::mapreduce::{
    count_key, phase_of, Count, EmitError, ItemInput, ItemResult, MapContext, MapReduce, MapReduceSpec,
    MapState, Phase,
};
use sundial_core::execution::target::in_process::{BoxFuture, HandlerContext, Handlers};
use sundial_core::reconcile::{reconcile, ReconcileOptions};
use sundial_model::children::{child_of, ChildKey};
use sundial_model::claim::LeaseTerms;
use sundial_model::retry::RunError;
use sundial_model::{ExecStatus, Execution, JobDefinition, Target};
use sundial_store::executions::{ClaimOutcome, ExecKey};
use sundial_testkit::metering::Meter;
use sundial_tests::fixtures;
use sundial_tests::TestEnv;

const WITHIN: Duration = Duration::from_secs(120);

fn count_job(items: u64, batch: u64, extra: serde_json::Value) -> JobDefinition {
    let mut d = fixtures::definition(Target::in_process("count"));
    d.map_reduce = Some(MapReduceSpec::default());
    let mut params = serde_json::json!({ "items": items, "batch": batch });
    if let (Some(p), Some(x)) = (params.as_object_mut(), extra.as_object()) {
        p.extend(x.clone());
    }
    d.params = params;
    d
}

/// [`Count`], recording how often each step ran and what the reduce received.
#[derive(Clone, Default)]
struct Recorded {
    maps: Arc<Mutex<Vec<Option<serde_json::Value>>>>,
    items: Arc<Mutex<BTreeMap<String, u32>>>,
    reduces: Arc<Mutex<Vec<Vec<ItemResult>>>>,
}

impl MapReduce for Recorded {
    fn map(&self, m: MapContext) -> BoxFuture<'_, Result<(), RunError>> {
        if let Ok(mut v) = self.maps.lock() {
            v.push(m.cursor().cloned());
        }
        Count.map(m)
    }
    fn run_item(
        &self,
        ctx: HandlerContext,
        item: ItemInput,
    ) -> BoxFuture<'_, Result<serde_json::Value, RunError>> {
        if let Ok(mut v) = self.items.lock() {
            *v.entry(item.key.clone()).or_default() += 1;
        }
        Count.run_item(ctx, item)
    }
    fn reduce(&self, ctx: HandlerContext, results: Vec<ItemResult>) -> BoxFuture<'_, Result<(), RunError>> {
        if let Ok(mut v) = self.reduces.lock() {
            v.push(results.clone());
        }
        Count.reduce(ctx, results)
    }
}

/// The parent's path through its statuses, with the audit codes.
fn path(e: &Execution) -> Vec<(ExecStatus, Option<String>)> {
    e.timeline.iter().map(|a| (a.to, a.code.clone())).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_item_runs_once_a_failing_item_retries_alone_and_the_reduce_gets_every_result(
) -> anyhow::Result<()> {
    // GIVEN a map-reduce job of 120 items in batches of 25, item k00007 failing its first attempt
    let env = TestEnv::new("mr-basic").await?;
    let def = count_job(120, 25, serde_json::json!({ "failFirst": ["k00007"] }));
    let parent = fixtures::create_ready(&env, "acme", "mr", def, Utc::now()).await?;

    // WHEN a worker polls the pool
    let rec = Recorded::default();
    // A lease long enough that a loaded machine never lets it lapse mid-map: this test checks
    // the map-reduce path, not a takeover (the chaos test below covers those), and with the
    // 2 s test lease a full-suite run on moto once saw the parent taken over (LeaseExpired).
    let mut settings = fixtures::settings("mr-1");
    settings.lease_ms = 15_000;
    let (worker, _) =
        fixtures::worker_with(&env, settings, Handlers::new().with_map_reduce("count", rec.clone()))?;
    let (stop, poller) = fixtures::spawn_poller(worker, 16);
    let p = fixtures::wait_for(&env, &parent, WITHIN, |s| s.exec.status.is_terminal()).await?;
    stop.cancel();
    poller.await??;

    // THEN the parent mapped once, waited, reduced once and SUCCEEDED
    assert_eq!(p.exec.status, ExecStatus::Succeeded, "{:?}", p.exec.last_error);
    use ExecStatus::*;
    assert_eq!(
        path(&p.exec),
        vec![
            (Ready, None),
            (Running, None),
            (Waiting, Some("map_sealed".into())),
            (Ready, Some("reduce".into())),
            (Running, None),
            (Succeeded, None),
        ]
    );
    assert_eq!(
        p.exec.map_reduce,
        Some(MapState::Parent { phase: Phase::Reduce, emitted: 120, done: 120, failed: 0 })
    );
    assert_eq!(rec.maps.lock().map(|v| v.clone()).unwrap_or_default(), vec![None]);
    // AND every item ran once, except the flaky one, which retried alone
    let items = rec.items.lock().map(|v| v.clone()).unwrap_or_default();
    assert_eq!(items.len(), 120);
    assert!(items.iter().all(|(k, n)| *n == if k == "k00007" { 2 } else { 1 }), "{items:?}");
    let kids = fixtures::store(&env).children_of(&parent).await?;
    assert_eq!(kids.len(), 120);
    assert!(kids.iter().all(|k| k.status == Succeeded));
    let attempts: Vec<u32> = kids.iter().filter(|k| k.attempt != 1).map(|k| k.attempt).collect();
    assert_eq!(attempts, vec![2]);
    assert_eq!(kids[7].id(), format!("{}.i-k00007", parent.id()));
    // AND the reduce ran once and received every item's result, in key order
    let reduces = rec.reduces.lock().map(|v| v.clone()).unwrap_or_default();
    assert_eq!(reduces.len(), 1);
    let got: Vec<(String, Option<serde_json::Value>)> =
        reduces[0].iter().map(|r| (r.key.clone(), r.result.clone())).collect();
    let want: Vec<(String, Option<serde_json::Value>)> =
        (0..120).map(|i| (count_key(i), Some(serde_json::json!({ "i": i })))).collect();
    assert_eq!(got, want);
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zombie_parents_emits_are_refused_and_the_takeover_emits_only_the_rest() -> anyhow::Result<()> {
    // GIVEN a map-reduce parent of 60 items claimed by a worker that emitted its first batch of
    // 20 (cursor next = 20) and then stalled past its lease
    let env = TestEnv::new("mr-zombie").await?;
    let store = fixtures::store(&env);
    let now = Utc::now();
    let past = now - CDuration::seconds(60);
    let e = fixtures::ready_execution("acme", "mr", count_job(60, 20, serde_json::json!({})), past, past);
    let key = fixtures::put_execution(&env, &e).await?;
    let terms = LeaseTerms { duration_ms: 2_000, skew_margin_ms: 200, may_take_over: true };
    let ClaimOutcome::Claimed(zombie) = store.claim(&key, "zombie", &terms, past).await? else {
        anyhow::bail!("the zombie's claim failed")
    };
    let batch = |from: u64, to: u64, at| -> Vec<Execution> {
        (from..to)
            .map(|i| {
                let mut c = child_of(&e, ChildKey::Item(count_key(i)), at, "worker:zombie");
                c.map_reduce = Some(MapState::Item { input: serde_json::json!({ "i": i }), result: None });
                c
            })
            .collect()
    };
    let lu = past.timestamp_millis() + 2_000;
    let first = store
        .emit_items(&key, &zombie.fence, &batch(0, 20, past), &serde_json::json!({ "next": 20 }), lu, 1_000)
        .await?;
    assert_eq!((first.created, first.existing), (20, 0));

    // WHEN a metered worker takes the parent over and runs the job to its end
    let meter = Meter::new(&env.cfg);
    let clients = meter.clients(&sundial_tests::sdk_config(), "worker");
    let rec = Recorded::default();
    let (worker, _) = fixtures::worker_with_clients(
        &env,
        fixtures::settings("rescuer"),
        Handlers::new().with_map_reduce("count", rec.clone()),
        &clients,
    )?;
    fixtures::enqueue(&env, &e, 0).await?;
    for kid in batch(0, 20, past) {
        fixtures::enqueue(&env, &kid, 0).await?; // the zombie sent its batch
    }
    let (stop, poller) = fixtures::spawn_poller(worker, 16);
    let p = fixtures::wait_for(&env, &key, WITHIN, |s| s.exec.status.is_terminal()).await?;
    stop.cancel();
    poller.await??;

    // THEN the takeover resumed from the committed cursor: it emitted the other 40 items in two
    // transactions (no item put twice) and the job SUCCEEDED with 60 items
    assert_eq!(p.exec.status, ExecStatus::Succeeded, "{:?}", p.exec.last_error);
    assert_eq!(
        rec.maps.lock().map(|v| v.clone()).unwrap_or_default(),
        vec![Some(serde_json::json!({ "next": 20 }))]
    );
    let usage = meter.snapshot().remove("worker").unwrap_or_default();
    let tx = usage.requests.get("dynamodb:TransactWriteItems").copied().unwrap_or(0);
    assert_eq!(tx, 2 + 60, "2 emits of the rest + one counted finish per item: {:?}", usage.requests);
    let items = rec.items.lock().map(|v| v.clone()).unwrap_or_default();
    assert_eq!((items.len(), items.values().all(|n| *n == 1)), (60, true), "{items:?}");

    // AND the zombie, resuming after its pause, has its emits refused: nothing is created
    let late = store
        .emit_items(&key, &zombie.fence, &batch(60, 70, now), &serde_json::json!({ "next": 70 }), lu, 1_000)
        .await;
    assert!(matches!(late, Err(EmitError::Stale { token: 1 })), "{late:?}");
    let kids = store.children_of(&key).await?;
    assert_eq!(kids.len(), 60, "no item of the refused batch exists");
    let p = fixtures::snapshot(&env, &key).await?;
    assert_eq!(
        p.checkpoint,
        Some(serde_json::json!({ "next": 60 })),
        "the zombie's cursor was not committed"
    );
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cost_per_item_in_requests_is_metered() -> anyhow::Result<()> {
    // GIVEN a map-reduce job of 100 items in batches of 50, run by one metered worker
    let env = TestEnv::new("mr-meter").await?;
    let meter = Meter::new(&env.cfg);
    let clients = meter.clients(&sundial_tests::sdk_config(), "worker");
    let (worker, _) = fixtures::worker_with_clients(
        &env,
        fixtures::settings("mr-m"),
        Handlers::new().with_map_reduce("count", Count),
        &clients,
    )?;
    let parent =
        fixtures::create_ready(&env, "acme", "mr", count_job(100, 50, serde_json::json!({})), Utc::now())
            .await?;
    let (stop, poller) = fixtures::spawn_poller(worker, 16);
    let p = fixtures::wait_for(&env, &parent, WITHIN, |s| s.exec.status.is_terminal()).await?;
    stop.cancel();
    poller.await??;
    assert_eq!(p.exec.status, ExecStatus::Succeeded, "{:?}", p.exec.last_error);

    // THEN (printed for docs/mapreduce.md) the requests per item
    let u = meter.snapshot().remove("worker").unwrap_or_default();
    let per = |svc: &str| {
        u.requests.iter().filter(|(k, _)| k.starts_with(svc)).map(|(_, n)| *n).sum::<u64>() as f64 / 100.0
    };
    println!("map-reduce metering, 100 items: {:?}", u.requests);
    println!(
        "per item: dynamodb {:.2} requests, sqs {:.2} requests, {:.2} WCU, {:.2} RCU",
        per("dynamodb:"),
        per("sqs:"),
        u.write_units / 100.0,
        u.read_units / 100.0
    );
    // Each item: its put (in an emit transaction), get + claim, a counted finish transaction,
    // its parent's read; a receive and a delete (batched), a send (batched).
    assert_eq!(u.requests.get("dynamodb:TransactWriteItems"), Some(&(2 + 100)));
    assert!(per("dynamodb:") < 6.0, "{:?}", u.requests);
    env.cleanup().await;
    Ok(())
}

/// The parents and children of one run, as an effect ledger: every item's result was written
/// once by its fenced finish, and the reduce ran once.
async fn check_once(env: &TestEnv, key: &ExecKey, items: u64) -> anyhow::Result<()> {
    let p = fixtures::snapshot(env, key).await?;
    assert_eq!(p.exec.status, ExecStatus::Succeeded, "{:?}", p.exec.last_error);
    let reduces = p.exec.timeline.iter().filter(|a| a.code.as_deref() == Some("reduce")).count();
    let ends = p.exec.timeline.iter().filter(|a| a.to == ExecStatus::Succeeded).count();
    assert_eq!((reduces, ends), (1, 1), "one reduce, one end: {:?}", path(&p.exec));
    assert_eq!(
        p.exec.map_reduce,
        Some(MapState::Parent { phase: Phase::Reduce, emitted: items, done: items, failed: 0 })
    );
    let kids = fixtures::store(env).children_of(key).await?;
    assert_eq!(kids.len() as u64, items);
    for (i, k) in kids.iter().enumerate() {
        assert_eq!(k.child, Some(ChildKey::Item(count_key(i as u64))));
        assert_eq!(k.status, ExecStatus::Succeeded);
        let finishes = k.timeline.iter().filter(|a| a.to == ExecStatus::Succeeded).count();
        assert_eq!(finishes, 1, "{} finished {finishes} times", k.id());
        assert!(
            matches!(&k.map_reduce, Some(MapState::Item { result: Some(r), .. }) if r["i"] == i as u64),
            "{:?}",
            k.map_reduce
        );
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_map_of_1000_items_survives_killed_and_paused_workers_every_item_once_reduce_once(
) -> anyhow::Result<()> {
    // GIVEN a map-reduce job of 1,000 items, emitted in batches of 40 with a pause between
    // batches (the map lasts several seconds), and three worker processes (5 s leases)
    let env = TestEnv::new("mr-chaos").await?;
    // moto answers a few requests a second under three processes: 1,000 items there take about
    // nine minutes (669 after six in a trial), so it runs the same story over 300.
    let items: u64 = if std::env::var("SUNDIAL_EMULATOR").as_deref() == Ok("moto") { 300 } else { 1_000 };
    let mut def = count_job(items, 40, serde_json::json!({ "stepMs": 300, "itemMs": 5 }));
    // Each takeover of the map spends one of its attempts: a kill, a pause, and room for a
    // slow emulator's lapsed lease (moto, with three processes hammering it).
    def.retry.max_attempts = 8;
    def.timeout_secs = 180;
    let mut procs = Vec::new();
    for id in ["a", "b", "c"] {
        // 5 s leases: a heartbeat every 1.7 s keeps up even on a loaded moto.
        let vars = [("SUNDIAL_WORKER_ID", id), ("SUNDIAL_LEASE_SECS", "5")];
        procs.push((id, fixtures::spawn_worker_ecs(&env, &vars).await?));
    }
    let key = fixtures::create_ready(&env, "acme", "mr", def, Utc::now()).await?;
    // AND the reconciler running every 2 s with a 20 s grace (the deployed one runs every
    // minute with two): it re-sends the items whose messages a killed worker never sent. (A
    // shorter grace re-sends items that merely wait in the queue, which floods a slow emulator.)
    let reconciler = {
        let ctx = sundial_tests::trigger::ctx(&env);
        tokio::spawn(async move {
            let opts =
                ReconcileOptions { actor: "reconciler:test".into(), grace_ms: 20_000, ..Default::default() };
            loop {
                if let Err(e) = reconcile(&ctx, Utc::now(), &opts).await {
                    eprintln!("reconcile failed: {e}");
                }
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        })
    };
    let emitted = |s: &sundial_store::executions::Snapshot| match &s.exec.map_reduce {
        Some(MapState::Parent { emitted, .. }) => *emitted,
        _ => 0,
    };
    let holder = |s: &sundial_store::executions::Snapshot| s.exec.lease_owner.clone().unwrap_or_default();

    // WHEN the map's holder is SIGKILLed after some batches
    let s = fixtures::wait_for(&env, &key, WITHIN, |s| emitted(s) >= 120).await?;
    assert_eq!(s.exec.status, ExecStatus::Running, "the map is still going");
    let first = holder(&s);
    let at = procs.iter().position(|(id, _)| *id == first).unwrap_or(0);
    let (_, mut victim) = procs.remove(at);
    victim.start_kill()?;
    victim.wait().await?;
    // AND the map's next holder (the takeover) is paused with SIGSTOP past its lease, then
    // resumed (a zombie whose emits are refused) once a third holder has the map
    let s =
        fixtures::wait_for(&env, &key, WITHIN, |s| s.exec.fencing_token >= 2 && emitted(s) >= 200).await?;
    let mut paused = false;
    if s.exec.status == ExecStatus::Running {
        let second = holder(&s);
        if let Some(pid) = procs.iter().find(|(id, _)| *id == second).and_then(|(_, p)| p.id()) {
            tokio::process::Command::new("kill").args(["-STOP", &pid.to_string()]).status().await?;
            let token = s.exec.fencing_token;
            let r = fixtures::wait_for(&env, &key, WITHIN, |s| s.exec.fencing_token > token).await;
            tokio::process::Command::new("kill").args(["-CONT", &pid.to_string()]).status().await?;
            r?;
            paused = true;
        }
    }
    let p = match fixtures::wait_for(&env, &key, Duration::from_secs(360), |s| s.exec.status.is_terminal())
        .await
    {
        Ok(p) => p,
        Err(err) => {
            let p = fixtures::snapshot(&env, &key).await?;
            let kids = fixtures::store(&env).children_of(&key).await?;
            let mut by: BTreeMap<String, usize> = BTreeMap::new();
            for k in &kids {
                *by.entry(k.status.as_str().to_string()).or_default() += 1;
            }
            let open: Vec<String> =
                kids.iter().filter(|k| !k.status.is_terminal()).take(5).map(|k| format!("{k:?}")).collect();
            anyhow::bail!(
                "{err}: parent {:?} {:?}; children {by:?}; open: {open:#?}",
                p.exec.status,
                p.exec.map_reduce
            );
        }
    };
    println!("map-reduce chaos: paused a second holder: {paused}; parent path {:?}", path(&p.exec));

    // THEN the map was taken over (at least once), and every item's effect happened once and
    // the reduce once, and it saw all 1,000 results (the `count` reduce fails otherwise)
    let takeovers = p
        .exec
        .timeline
        .iter()
        .filter(|a| a.from == Some(ExecStatus::Running) && a.to == ExecStatus::Running)
        .count();
    assert!(takeovers > usize::from(paused), "taken over during the map: {:?}", path(&p.exec));
    check_once(&env, &key, items).await?;
    reconciler.abort();
    drop(procs);
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reconciler_starts_the_reduce_the_last_items_worker_did_not() -> anyhow::Result<()> {
    // GIVEN a sealed map-reduce parent whose 3 items all finished (counted), but whose last
    // item's worker crashed before moving the parent to its reduce
    let env = TestEnv::new("mr-backstop").await?;
    let store = fixtures::store(&env);
    let now = Utc::now();
    let e = fixtures::ready_execution("acme", "mr", count_job(3, 3, serde_json::json!({})), now, now);
    let key = fixtures::put_execution(&env, &e).await?;
    let terms = LeaseTerms { duration_ms: 30_000, skew_margin_ms: 200, may_take_over: true };
    let ClaimOutcome::Claimed(p) = store.claim(&key, "w", &terms, now).await? else { anyhow::bail!("claim") };
    let kids: Vec<Execution> = (0..3)
        .map(|i| {
            let mut c = child_of(&e, ChildKey::Item(count_key(i)), now, "worker:w");
            c.map_reduce = Some(MapState::Item { input: serde_json::json!({ "i": i }), result: None });
            c
        })
        .collect();
    let lu = now.timestamp_millis() + 30_000;
    store.emit_items(&key, &p.fence, &kids, &serde_json::json!({ "next": 3 }), lu, 100).await?;
    let sealed = store.seal_map(&key, &p.fence, now.timestamp_millis(), now).await?;
    assert!(sealed.is_ok(), "{sealed:?}");
    for (i, kid) in kids.iter().enumerate() {
        let k = ExecKey::of(kid);
        let ClaimOutcome::Claimed(c) = store.claim(&k, "w", &terms, now).await? else {
            anyhow::bail!("item claim")
        };
        let r = serde_json::json!({ "i": i });
        store.finish_item(&k, &c.fence, &sundial_model::claim::Finish::Succeeded, Some(&r), now).await?;
    }
    let s = fixtures::snapshot(&env, &key).await?;
    assert_eq!(s.exec.status, ExecStatus::Waiting);
    assert_eq!(
        s.exec.map_reduce,
        Some(MapState::Parent { phase: Phase::Wait, emitted: 3, done: 3, failed: 0 })
    );

    // WHEN the reconciler runs past the parent's look
    let opts = ReconcileOptions { actor: "reconciler:test".into(), grace_ms: 1_000, ..Default::default() };
    let ctx = sundial_tests::trigger::ctx(&env);
    reconcile(&ctx, Utc::now() + CDuration::seconds(5), &opts).await?;

    // THEN the parent is READY in its reduce phase, and a worker reduces it once
    let s = fixtures::snapshot(&env, &key).await?;
    assert_eq!((s.exec.status, s.exec.attempt), (ExecStatus::Ready, 0));
    let rec = Recorded::default();
    let (worker, _) = fixtures::worker_with(
        &env,
        fixtures::settings("mr-b"),
        Handlers::new().with_map_reduce("count", rec.clone()),
    )?;
    let (stop, poller) = fixtures::spawn_poller(worker, 4);
    let s = fixtures::wait_for(&env, &key, WITHIN, |s| s.exec.status.is_terminal()).await?;
    stop.cancel();
    poller.await??;
    assert_eq!(s.exec.status, ExecStatus::Succeeded, "{:?}", s.exec.last_error);
    let reduces = rec.reduces.lock().map(|v| v.clone()).unwrap_or_default();
    assert_eq!(reduces.len(), 1);
    assert_eq!(reduces[0].len(), 3);
    assert!(rec.maps.lock().map(|v| v.is_empty()).unwrap_or(false), "the map did not run again");
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_item_replayed_while_its_parent_waits_is_counted_once_and_the_reduce_waits_for_every_item(
) -> anyhow::Result<()> {
    // GIVEN a sealed map-reduce parent of 3 items (i0, i1, i2) whose item i0 went DEAD (counted
    // done and failed)
    let env = TestEnv::new("mr-replay").await?;
    let store = fixtures::store(&env);
    let now = Utc::now();
    let e = fixtures::ready_execution("acme", "mr", count_job(3, 3, serde_json::json!({})), now, now);
    let key = fixtures::put_execution(&env, &e).await?;
    let terms = LeaseTerms { duration_ms: 30_000, skew_margin_ms: 200, may_take_over: true };
    let ClaimOutcome::Claimed(p) = store.claim(&key, "w", &terms, now).await? else { anyhow::bail!("claim") };
    let items: Vec<Execution> = (0..3)
        .map(|i| {
            let mut c = child_of(&e, ChildKey::Item(count_key(i)), now, "worker:w");
            c.map_reduce = Some(MapState::Item { input: serde_json::json!({ "i": i }), result: None });
            c
        })
        .collect();
    let kids: Vec<ExecKey> = items.iter().map(ExecKey::of).collect();
    let lu = now.timestamp_millis() + 30_000;
    store.emit_items(&key, &p.fence, &items, &serde_json::json!({ "next": 3 }), lu, 100).await?;
    assert!(store.seal_map(&key, &p.fence, now.timestamp_millis() + 600_000, now).await?.is_ok());
    use sundial_model::claim::Finish;
    let run = |k: ExecKey, fin: Finish| {
        let store = store.clone();
        async move {
            let ClaimOutcome::Claimed(c) = store.claim(&k, "w", &terms, now).await? else {
                anyhow::bail!("item claim {}", k.id())
            };
            let r = serde_json::json!({ "i": 0 });
            store.finish_item(&k, &c.fence, &fin, Some(&r), now).await?;
            anyhow::Ok(())
        }
    };
    let dead = Finish::Dead {
        reason: "attemptsExhausted".into(),
        error: RunError::retryable("Boom", "item failed"),
        digest: String::new(),
    };
    run(kids[0].clone(), dead).await?;
    let counts = |s: &sundial_store::executions::Snapshot| s.exec.map_reduce.clone();
    let s = fixtures::snapshot(&env, &key).await?;
    assert_eq!(counts(&s), Some(MapState::Parent { phase: Phase::Wait, emitted: 3, done: 1, failed: 1 }));

    // WHEN the operator replays i0 (DEAD → READY), i0 then succeeds, i1 succeeds, and i2 is
    // claimed and still RUNNING
    let i0 = fixtures::snapshot(&env, &kids[0]).await?;
    assert!(store.replay(&kids[0], i0.exec.fencing_token, "api:ops", "replay", now).await?);
    run(kids[0].clone(), Finish::Succeeded).await?;
    run(kids[1].clone(), Finish::Succeeded).await?;
    let ClaimOutcome::Claimed(i2) = store.claim(&kids[2], "w", &terms, now).await? else {
        anyhow::bail!("i2 claim")
    };

    // THEN i0 is counted once, as succeeded: 2 of 3 done, none failed
    let s = fixtures::snapshot(&env, &key).await?;
    assert_eq!(counts(&s), Some(MapState::Parent { phase: Phase::Wait, emitted: 3, done: 2, failed: 0 }));
    // AND the reconciler, looking at the parent, does not start the reduce while i2 runs
    let opts = ReconcileOptions { actor: "reconciler:test".into(), ..Default::default() };
    let ctx = sundial_tests::trigger::ctx(&env);
    reconcile(&ctx, now + CDuration::minutes(11), &opts).await?;
    let s = fixtures::snapshot(&env, &key).await?;
    assert_eq!(s.exec.status, ExecStatus::Waiting, "the reduce started over an incomplete item set");

    // AND once i2 succeeds, every item is counted once and the reduce starts
    let r = serde_json::json!({ "i": 2 });
    store.finish_item(&kids[2], &i2.fence, &Finish::Succeeded, Some(&r), now).await?;
    let s = fixtures::snapshot(&env, &key).await?;
    assert_eq!(counts(&s), Some(MapState::Parent { phase: Phase::Wait, emitted: 3, done: 3, failed: 0 }));
    reconcile(&ctx, now + CDuration::minutes(30), &opts).await?;
    let s = fixtures::snapshot(&env, &key).await?;
    assert_eq!((s.exec.status, phase_of(&s.exec)), (ExecStatus::Ready, Some(Phase::Reduce)));
    env.cleanup().await;
    Ok(())
}

/// The trigger context with every DynamoDB and SQS call metered as `component`.
fn metered_ctx(env: &TestEnv, meter: &Meter, component: &str) -> sundial_core::Ctx {
    let clients = meter.clients(&sundial_tests::sdk_config(), component);
    sundial_core::Ctx {
        ddb: clients.ddb.clone(),
        queues: sundial_store::queue::PoolQueues::new(clients.sqs.clone(), env.cfg.clone()),
        cfg: env.cfg.clone(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_backstop_trusts_the_counts_reads_items_only_when_they_stall_and_backs_off() -> anyhow::Result<()>
{
    // GIVEN a sealed parent of 250 items: 120 succeeded (counted), 130 cancelled while READY (final,
    // but not counted: only the items' own finishes count), so the counts stay at 120 of 250
    let env = TestEnv::new("mr-look").await?;
    let store = fixtures::store(&env);
    let now = Utc::now();
    let e = fixtures::ready_execution("acme", "mr", count_job(250, 99, serde_json::json!({})), now, now);
    let key = fixtures::put_execution(&env, &e).await?;
    let terms = LeaseTerms { duration_ms: 30_000, skew_margin_ms: 200, may_take_over: true };
    let ClaimOutcome::Claimed(p) = store.claim(&key, "w", &terms, now).await? else { anyhow::bail!("claim") };
    let items: Vec<Execution> = (0..250)
        .map(|i| {
            let mut c = child_of(&e, ChildKey::Item(count_key(i)), now, "worker:w");
            c.map_reduce = Some(MapState::Item { input: serde_json::json!({ "i": i }), result: None });
            c
        })
        .collect();
    let lu = now.timestamp_millis() + 30_000;
    for (n, batch) in items.chunks(99).enumerate() {
        store.emit_items(&key, &p.fence, batch, &serde_json::json!({ "next": n }), lu, 1_000).await?;
    }
    for (i, item) in items.iter().enumerate() {
        let k = ExecKey::of(item);
        if i < 120 {
            let ClaimOutcome::Claimed(c) = store.claim(&k, "w", &terms, now).await? else {
                anyhow::bail!("item claim")
            };
            let r = serde_json::json!({ "i": i });
            store.finish_item(&k, &c.fence, &sundial_model::claim::Finish::Succeeded, Some(&r), now).await?;
        } else {
            assert!(store.cancel_ready(item, "Canceled", "api:ops", now.timestamp_millis()).await?);
        }
    }
    let sealed = store.seal_map(&key, &p.fence, now.timestamp_millis(), now).await?;
    assert!(sealed.is_ok());

    // WHEN the reconciler looks at it again and again, metered
    let meter = Meter::new(&env.cfg);
    let ctx = metered_ctx(&env, &meter, "reconciler");
    // (at most 100 items a look, so the read of the 250 spans looks)
    let opts =
        ReconcileOptions { actor: "reconciler:test".into(), max_items_per_look: 100, ..Default::default() };
    let mut at = now + CDuration::seconds(1);
    let mut gaps = Vec::new();
    let mut item_reads = Vec::new();
    for _ in 0..8 {
        meter.reset();
        reconcile(&ctx, at, &opts).await?;
        let u = meter.snapshot().remove("reconciler").unwrap_or_default();
        // One Query per `open` partition; any more read the items.
        let queries = u.requests.get("dynamodb:Query").copied().unwrap_or(0);
        item_reads.push(queries.saturating_sub(u64::from(sundial_model::keys::OPEN_PARTITIONS)));
        let s = fixtures::snapshot(&env, &key).await?;
        if s.exec.status != ExecStatus::Waiting {
            break;
        }
        let next = s.open_due.unwrap_or_default();
        gaps.push((next - at.timestamp_millis()) / 60_000);
        at = chrono::DateTime::from_timestamp_millis(next).unwrap_or(at);
    }

    // THEN the first looks trust the counts (no item read) and back off 2, 4, 8 minutes
    assert_eq!(item_reads.first(), Some(&0), "the first look read the items: {item_reads:?}");
    assert!(gaps.len() >= 3 && item_reads.len() >= 3, "looks {gaps:?}, item reads {item_reads:?}");
    assert_eq!(&gaps[..3], &[2, 4, 8], "looks: {gaps:?}");
    assert_eq!(&item_reads[..3], &[0, 0, 0], "item reads per look: {item_reads:?}");
    // AND once the counts have stalled, the items are read (keys and status, one bounded page a
    // look) and, all final, the reduce starts
    assert_eq!(item_reads, vec![0, 0, 0, 1, 1, 1], "item reads per look");
    assert_eq!(gaps, vec![2, 4, 8, 16, 32], "looks");
    let s = fixtures::snapshot(&env, &key).await?;
    assert_eq!((s.exec.status, phase_of(&s.exec)), (ExecStatus::Ready, Some(Phase::Reduce)));
    env.cleanup().await;
    Ok(())
}
