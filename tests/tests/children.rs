//! Sharded and broadcast jobs (`docs/children.md`): one fire is a parent execution
//! and one child per shard or member; each child is claimed, fenced, retried and finished on
//! its own, sees only its own shard or member, and the parent ends when every child has.

use chrono::Utc;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use sundial_core::execution::target::in_process::{BoxFuture, Handler, HandlerContext, Handlers};
use sundial_core::execution::target::Invocation;
use sundial_model::children::{Broadcast, ChildKey};
use sundial_model::retry::RunError;
use sundial_model::{ExecStatus, Target};
use sundial_store::executions::ExecKey;
use sundial_tests::fixtures;
use sundial_tests::TestEnv;

const WITHIN: Duration = Duration::from_secs(60);

/// Records every invocation it gets; fails (retryably) the shards in `fail` on their first
/// `fail_times` attempts.
#[derive(Default, Clone)]
struct Recorder {
    seen: Arc<Mutex<Vec<Invocation>>>,
    fail: Vec<u32>,
    fail_times: u32,
}

impl Handler for Recorder {
    fn run(&self, ctx: HandlerContext) -> BoxFuture<'_, Result<(), RunError>> {
        Box::pin(async move {
            let inv = ctx.invocation;
            if let Ok(mut s) = self.seen.lock() {
                s.push(inv.clone());
            }
            match inv.shard_index {
                Some(i) if self.fail.contains(&i) && inv.attempt <= self.fail_times => {
                    Err(RunError::retryable("Flaky", format!("shard {i} attempt {}", inv.attempt)))
                }
                _ => Ok(()),
            }
        })
    }
}

impl Recorder {
    fn seen(&self) -> Vec<Invocation> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

fn child_key(parent: &ExecKey, c: ChildKey) -> ExecKey {
    ExecKey { child: Some(c), ..parent.clone() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sharded_fire_runs_each_shard_once_and_the_parent_succeeds() -> anyhow::Result<()> {
    // GIVEN a job with shards = 4 and an in-process handler
    let env = TestEnv::new("kids-ok").await?;
    let mut def = fixtures::definition(Target::in_process("rec"));
    def.shards = Some(4);
    let rec = Recorder::default();
    let parent = fixtures::create_ready(&env, "acme", "settle", def, Utc::now()).await?;

    // WHEN a worker polls the pool
    let (worker, _) =
        fixtures::worker_with(&env, fixtures::settings("kids-1"), Handlers::new().with("rec", rec.clone()))?;
    let (stop, poller) = fixtures::spawn_poller(worker, 8);
    let p = fixtures::wait_for(&env, &parent, WITHIN, |s| s.exec.status.is_terminal()).await?;
    stop.cancel();
    poller.await??;

    // THEN the parent SUCCEEDED through WAITING, never ran the target itself
    assert_eq!(p.exec.status, ExecStatus::Succeeded);
    let path: Vec<ExecStatus> = p.exec.timeline.iter().map(|e| e.to).collect();
    assert_eq!(
        path,
        vec![ExecStatus::Ready, ExecStatus::Running, ExecStatus::Waiting, ExecStatus::Succeeded]
    );
    let tally = p.exec.children.clone().unwrap_or_default();
    assert_eq!(tally.total, 4);
    assert_eq!(tally.finished.len(), 4);
    // AND each shard ran exactly once, with its own index, the total and its own idempotency key
    let seen = rec.seen();
    let mut by_shard: BTreeMap<u32, Vec<&Invocation>> = BTreeMap::new();
    for inv in &seen {
        by_shard.entry(inv.shard_index.unwrap_or(u32::MAX)).or_default().push(inv);
    }
    assert_eq!(by_shard.keys().copied().collect::<Vec<_>>(), vec![0, 1, 2, 3], "{seen:#?}");
    for (i, invs) in &by_shard {
        assert_eq!(invs.len(), 1, "shard {i} ran {} times", invs.len());
        let inv = invs[0];
        assert_eq!(inv.shard_total, Some(4));
        assert_eq!(inv.execution_id, format!("{}.s{i}", parent.global_id()));
        assert_eq!(inv.parent_execution_id.as_deref(), Some(parent.global_id().as_str()));
        assert_eq!(inv.member, None);
    }
    // AND the children are listed under their parent, in shard order, all SUCCEEDED
    let kids = fixtures::store(&env).children_of(&parent).await?;
    let got: Vec<(String, ExecStatus)> = kids.iter().map(|k| (k.id(), k.status)).collect();
    let want: Vec<(String, ExecStatus)> =
        (0..4).map(|i| (format!("{}.s{i}", parent.id()), ExecStatus::Succeeded)).collect();
    assert_eq!(got, want);
    // AND the job's execution listing shows the fire once, not its children
    let page = fixtures::store(&env)
        .list_for_job(
            "acme",
            "settle",
            &sundial_store::executions::JobPage {
                status: None,
                oldest_first: false,
                limit: 50,
                after_ms: None,
                until_ms: None,
            },
        )
        .await?;
    assert_eq!(page.items.iter().map(|e| e.id()).collect::<Vec<_>>(), vec![parent.id()]);
    // AND a page of one, newest first (the console's "last run"), is the fire, not an empty
    // page: its four children sort right after it, so they are read first and dropped
    let one = fixtures::store(&env)
        .list_for_job(
            "acme",
            "settle",
            &sundial_store::executions::JobPage {
                status: None,
                oldest_first: false,
                limit: 1,
                after_ms: None,
                until_ms: None,
            },
        )
        .await?;
    assert_eq!(one.items.iter().map(|e| e.id()).collect::<Vec<_>>(), vec![parent.id()]);
    // AND so is a page of one due by the fire's own instant (`until`: its children sort after
    // the bound and are not even read)
    let due = fixtures::store(&env)
        .list_for_job(
            "acme",
            "settle",
            &sundial_store::executions::JobPage {
                status: None,
                oldest_first: false,
                limit: 1,
                after_ms: None,
                until_ms: Some(parent.scheduled_ms),
            },
        )
        .await?;
    assert_eq!(due.items.iter().map(|e| e.id()).collect::<Vec<_>>(), vec![parent.id()]);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_shard_retries_alone_and_the_parent_fails_naming_it() -> anyhow::Result<()> {
    // GIVEN shards = 4 where shard 1 fails twice then succeeds, and shard 2 always fails
    // (3 attempts allowed)
    let env = TestEnv::new("kids-fail").await?;
    let mut def = fixtures::definition(Target::in_process("rec"));
    def.shards = Some(4);
    let rec_retry = Recorder { fail: vec![1], fail_times: 2, ..Default::default() };
    let rec_dead = Recorder { fail: vec![2], fail_times: u32::MAX, ..Default::default() };
    let ok = fixtures::create_ready(&env, "acme", "retry", def.clone(), Utc::now()).await?;
    def.target = Target::in_process("dead");
    let bad = fixtures::create_ready(&env, "acme", "dead", def, Utc::now()).await?;

    // WHEN a worker polls the pool
    let handlers = Handlers::new().with("rec", rec_retry.clone()).with("dead", rec_dead.clone());
    let (worker, _) = fixtures::worker_with(&env, fixtures::settings("kids-2"), handlers)?;
    let (stop, poller) = fixtures::spawn_poller(worker, 8);
    let p_ok = fixtures::wait_for(&env, &ok, WITHIN, |s| s.exec.status.is_terminal()).await?;
    let p_bad = fixtures::wait_for(&env, &bad, WITHIN, |s| s.exec.status.is_terminal()).await?;
    stop.cancel();
    poller.await??;

    // THEN the retried shard took 3 attempts while every other shard took 1
    assert_eq!(p_ok.exec.status, ExecStatus::Succeeded);
    let store = fixtures::store(&env);
    let attempts: Vec<(String, u32)> = store
        .children_of(&ok)
        .await?
        .iter()
        .map(|k| (k.child.as_ref().map(|c| c.tag()).unwrap_or_default(), k.attempt))
        .collect();
    assert_eq!(attempts, vec![("s0".into(), 1), ("s1".into(), 3), ("s2".into(), 1), ("s3".into(), 1)]);
    let runs_of = |rec: &Recorder, i: u32| rec.seen().iter().filter(|v| v.shard_index == Some(i)).count();
    assert_eq!((0..4).map(|i| runs_of(&rec_retry, i)).collect::<Vec<_>>(), vec![1, 3, 1, 1]);
    // AND the parent whose shard 2 ran out of attempts is FAILED, naming shard 2 only
    assert_eq!(p_bad.exec.status, ExecStatus::Failed);
    let (code, msg) = p_bad.exec.last_error.clone().unwrap_or_default();
    assert_eq!(code, "ChildrenFailed");
    assert_eq!(msg, "1 of 4 children did not succeed: s2 (DEAD)");
    let dead = fixtures::snapshot(&env, &child_key(&bad, ChildKey::Shard(2))).await?;
    assert_eq!((dead.exec.status, dead.exec.attempt), (ExecStatus::Dead, 3));
    assert_eq!((0..4).map(|i| runs_of(&rec_dead, i)).collect::<Vec<_>>(), vec![1, 1, 3, 1]);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broadcast_fire_runs_once_per_member_each_seeing_its_member() -> anyhow::Result<()> {
    // GIVEN a job broadcast to three regional endpoints
    let env = TestEnv::new("kids-bcast").await?;
    let mut def = fixtures::definition(Target::in_process("rec"));
    let members = vec!["eu-west-1".to_string(), "us-east-1".into(), "ap-south-1".into()];
    def.broadcast = Some(Broadcast { members: members.clone() });
    let rec = Recorder::default();
    let parent = fixtures::create_ready(&env, "acme", "warm", def, Utc::now()).await?;

    // WHEN a worker polls the pool
    let (worker, _) =
        fixtures::worker_with(&env, fixtures::settings("kids-3"), Handlers::new().with("rec", rec.clone()))?;
    let (stop, poller) = fixtures::spawn_poller(worker, 8);
    let p = fixtures::wait_for(&env, &parent, WITHIN, |s| s.exec.status.is_terminal()).await?;
    stop.cancel();
    poller.await??;

    // THEN three children ran, each once, each with its member and its own id; no shard fields
    assert_eq!(p.exec.status, ExecStatus::Succeeded);
    let mut got: Vec<(String, String)> =
        rec.seen().iter().map(|v| (v.member.clone().unwrap_or_default(), v.execution_id.clone())).collect();
    got.sort();
    let mut want: Vec<(String, String)> =
        members.iter().map(|m| (m.clone(), format!("{}.m-{m}", parent.global_id()))).collect();
    want.sort();
    assert_eq!(got, want);
    assert!(rec.seen().iter().all(|v| v.shard_index.is_none() && v.shard_total.is_none()));
    Ok(())
}

/// A parent claimed by `owner` (token 1) with its children put, as a fan-out leaves them just
/// before the parent's wait: the crash window of `fanout`.
async fn fanned_out_then_crashed(
    env: &TestEnv,
    job: &str,
    def: sundial_model::JobDefinition,
    owner: &str,
) -> anyhow::Result<(ExecKey, sundial_model::claim::Fence, Vec<ExecKey>)> {
    use sundial_model::children::{child_of, plan};
    use sundial_store::executions::ClaimOutcome;
    let now = Utc::now();
    let e = fixtures::ready_execution("acme", job, def, now, now);
    let parent = fixtures::put_execution(env, &e).await?;
    let store = fixtures::store(env);
    let terms =
        sundial_model::claim::LeaseTerms { duration_ms: 500, skew_margin_ms: 100, may_take_over: true };
    let ClaimOutcome::Claimed(c) = store.claim(&parent, owner, &terms, now).await? else {
        anyhow::bail!("not claimed")
    };
    let mut kids = Vec::new();
    for k in plan(&c.snapshot.exec.definition).unwrap_or_default() {
        let kid = child_of(&c.snapshot.exec, k, now, &format!("worker:{owner}"));
        store.put_new(&kid).await?;
        kids.push(ExecKey::of(&kid));
    }
    Ok((parent, c.fence, kids))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fan_out_repeated_after_a_crash_creates_nothing_twice_and_reruns_no_finished_shard(
) -> anyhow::Result<()> {
    // GIVEN a worker that put the 3 children of a fire and crashed before the parent's wait,
    // and a shard that already ran to SUCCEEDED meanwhile (its message had gone out)
    let env = TestEnv::new("kids-crash").await?;
    let mut def = fixtures::definition(Target::in_process("rec"));
    def.shards = Some(3);
    let (parent, _, kids) = fanned_out_then_crashed(&env, "settle", def, "crashed").await?;
    let rec = Recorder::default();
    let store = fixtures::store(&env);
    {
        let (w, _) = fixtures::worker_with(
            &env,
            fixtures::settings("early"),
            Handlers::new().with("rec", rec.clone()),
        )?;
        let e = fixtures::snapshot(&env, &kids[0]).await?.exec;
        fixtures::enqueue(&env, &e, 0).await?;
        let (stop, poller) = fixtures::spawn_poller(w, 2);
        fixtures::wait_for(&env, &kids[0], WITHIN, |s| s.exec.status == ExecStatus::Succeeded).await?;
        stop.cancel();
        poller.await??;
    }

    // WHEN the parent's message comes back after its lease and another worker takes it over
    let p = fixtures::snapshot(&env, &parent).await?.exec;
    fixtures::enqueue(&env, &p, 1).await?;
    let (w, _) = fixtures::worker_with(
        &env,
        fixtures::settings("takeover"),
        Handlers::new().with("rec", rec.clone()),
    )?;
    let (stop, poller) = fixtures::spawn_poller(w, 4);
    let done = fixtures::wait_for(&env, &parent, WITHIN, |s| s.exec.status.is_terminal()).await?;
    stop.cancel();
    poller.await??;

    // THEN the takeover's fan-out created no child twice and did not re-run the finished one
    assert_eq!(done.exec.status, ExecStatus::Succeeded);
    assert_eq!(done.exec.fencing_token, 2, "taken over once: {:#?}", done.exec.timeline);
    let all = store.children_of(&parent).await?;
    assert_eq!(all.len(), 3);
    assert!(all.iter().all(|k| k.status == ExecStatus::Succeeded && k.attempt == 1), "{all:#?}");
    let mut shards: Vec<u32> = rec.seen().iter().filter_map(|v| v.shard_index).collect();
    shards.sort();
    assert_eq!(shards, vec![0, 1, 2], "each shard ran once");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_parent_whose_last_tally_write_was_lost_is_ended_by_the_reconciler() -> anyhow::Result<()> {
    use sundial_model::claim::Finish;
    use sundial_store::executions::ClaimOutcome;
    // GIVEN a waiting parent of 2 shards, both finished (one FAILED) but neither counted on it:
    // their workers died between the child's finish and the tally write
    let env = TestEnv::new("kids-reconcile").await?;
    let mut def = fixtures::definition(Target::in_process("rec"));
    def.shards = Some(2);
    let (parent, fence, kids) = fanned_out_then_crashed(&env, "settle", def, "w1").await?;
    let store = fixtures::store(&env);
    let now = Utc::now();
    let due = now.timestamp_millis() - 1;
    let r = store.await_children(&parent, &fence, 2, due, now).await?;
    assert_eq!(r, sundial_store::executions::FinishResult::Done);
    let terms =
        sundial_model::claim::LeaseTerms { duration_ms: 30_000, skew_margin_ms: 100, may_take_over: true };
    for (k, fin) in kids.iter().zip([
        Finish::Succeeded,
        Finish::Failed { error: RunError::permanent("Bad", "merchant file missing") },
    ]) {
        let ClaimOutcome::Claimed(c) = store.claim(k, "w2", &terms, now).await? else {
            anyhow::bail!("not claimed")
        };
        store.finish(k, &c.fence, &fin, now).await?;
    }
    assert_eq!(fixtures::snapshot(&env, &parent).await?.exec.status, ExecStatus::Waiting);

    // WHEN the reconciler runs
    let ctx = sundial_tests::trigger::ctx(&env);
    let opts = sundial_core::reconcile::ReconcileOptions::default();
    sundial_core::reconcile::reconcile(&ctx, Utc::now(), &opts).await?;

    // THEN the parent is FAILED, naming the failed shard, and out of the `open` index
    let s = fixtures::snapshot(&env, &parent).await?;
    assert_eq!(s.exec.status, ExecStatus::Failed);
    assert_eq!(
        s.exec.last_error.map(|e| e.1).unwrap_or_default(),
        "1 of 2 children did not succeed: s1 (FAILED)"
    );
    assert_eq!(s.open_due, None);
    assert_eq!(s.exec.timeline.last().map(|e| e.actor.as_str()), Some("reconciler"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_waiting_parent_cancels_its_open_children() -> anyhow::Result<()> {
    // GIVEN a waiting parent whose 3 children were never delivered
    let env = TestEnv::new("kids-cancel").await?;
    let mut def = fixtures::definition(Target::in_process("rec"));
    def.shards = Some(3);
    let (parent, fence, kids) = fanned_out_then_crashed(&env, "settle", def, "w1").await?;
    let store = fixtures::store(&env);
    let now = Utc::now();
    store.await_children(&parent, &fence, 3, now.timestamp_millis() + 60_000, now).await?;

    // WHEN the parent is cancelled
    let out = store.request_cancel(&parent, "api:test", now).await?;

    // THEN it and each child are CANCELED
    assert_eq!(out, sundial_store::executions::CancelOutcome::Canceled);
    assert_eq!(fixtures::snapshot(&env, &parent).await?.exec.status, ExecStatus::Canceled);
    for k in &kids {
        assert_eq!(fixtures::snapshot(&env, k).await?.exec.status, ExecStatus::Canceled, "{}", k.id());
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forbid_job_with_a_start_deadline_fans_out_and_its_children_run_under_the_parent(
) -> anyhow::Result<()> {
    // GIVEN a stored FORBID job with 2 shards and a start deadline, and its fire put by the
    // trigger (so each first claim checks the job as it is now)
    let env = TestEnv::new("kids-job").await?;
    let mut def = fixtures::definition(Target::in_process("rec"));
    def.shards = Some(2);
    def.concurrency = sundial_model::ConcurrencyPolicy::Forbid;
    def.start_deadline_secs = Some(600);
    let now = Utc::now();
    let job = sundial_tests::trigger::create_job(
        &env,
        "acme",
        "settle",
        def.clone(),
        now - chrono::Duration::minutes(5),
    )
    .await?;
    let sched = sundial_schedule::Schedule::parse(&job.definition.schedule, job.anchor)
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let e = sundial_model::Execution::ready(&job, &sched, now, None, now, "tick:test");
    let parent = fixtures::put_execution(&env, &e).await?;
    fixtures::enqueue(&env, &e, 0).await?;

    // WHEN a worker polls the pool
    let rec = Recorder::default();
    let (worker, _) = fixtures::worker_with(
        &env,
        fixtures::settings("kids-job"),
        Handlers::new().with("rec", rec.clone()),
    )?;
    let (stop, poller) = fixtures::spawn_poller(worker, 4);
    let p = fixtures::wait_for(&env, &parent, WITHIN, |s| s.exec.status.is_terminal()).await?;
    stop.cancel();
    poller.await??;

    // THEN both shards ran (the children are neither amended to the job's FORBID policy nor
    // checked against the job: the parent holds the slot and was checked at its own claim)
    assert_eq!(p.exec.status, ExecStatus::Succeeded, "{:#?}", p.exec.timeline);
    for kid in fixtures::store(&env).children_of(&parent).await? {
        assert_eq!(kid.status, ExecStatus::Succeeded, "{}: {:#?}", kid.id(), kid.timeline);
        assert_eq!(kid.definition.concurrency, sundial_model::ConcurrencyPolicy::Allow);
    }
    assert_eq!(rec.seen().len(), 2);
    Ok(())
}

/// Holds every run until released.
#[derive(Clone, Default)]
struct Hold(Arc<tokio::sync::Notify>, Arc<std::sync::atomic::AtomicBool>);

impl Handler for Hold {
    fn run(&self, _ctx: HandlerContext) -> BoxFuture<'_, Result<(), RunError>> {
        Box::pin(async move {
            while !self.1.load(std::sync::atomic::Ordering::SeqCst) {
                let _ = tokio::time::timeout(Duration::from_millis(100), self.0.notified()).await;
            }
            Ok(())
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_concurrency_policy_applies_to_the_parent_until_its_last_child_ends() -> anyhow::Result<()> {
    // GIVEN a FORBID job with 2 shards whose first fire is waiting for its running children
    let env = TestEnv::new("kids-forbid").await?;
    let mut def = fixtures::definition(Target::in_process("hold"));
    def.shards = Some(2);
    def.concurrency = sundial_model::ConcurrencyPolicy::Forbid;
    let hold = Hold::default();
    let (worker, _) = fixtures::worker_with(
        &env,
        fixtures::settings("forbid"),
        Handlers::new().with("hold", hold.clone()),
    )?;
    let (stop, poller) = fixtures::spawn_poller(worker, 8);
    let t0 = Utc::now();
    let first = fixtures::create_ready(&env, "acme", "settle", def.clone(), t0).await?;
    fixtures::wait_for(&env, &first, WITHIN, |s| s.exec.status == ExecStatus::Waiting).await?;

    // WHEN the next fire comes while they run
    let second =
        fixtures::create_ready(&env, "acme", "settle", def.clone(), t0 + chrono::Duration::milliseconds(1))
            .await?;
    let s2 = fixtures::wait_for(&env, &second, WITHIN, |s| s.exec.status.is_terminal()).await?;
    // AND then the children finish, and a third fire comes
    hold.1.store(true, std::sync::atomic::Ordering::SeqCst);
    hold.0.notify_waiters();
    let s1 = fixtures::wait_for(&env, &first, WITHIN, |s| s.exec.status.is_terminal()).await?;
    let third =
        fixtures::create_ready(&env, "acme", "settle", def, t0 + chrono::Duration::milliseconds(2)).await?;
    let s3 = fixtures::wait_for(&env, &third, WITHIN, |s| s.exec.status.is_terminal()).await?;
    stop.cancel();
    poller.await??;

    // THEN the second fire was skipped because the first (a waiting parent) held the slot, and
    // created no children; the first succeeded and freed the slot for the third
    assert_eq!(s2.exec.status, ExecStatus::Skipped, "{:#?}", s2.exec.timeline);
    assert!(fixtures::store(&env).children_of(&second).await?.is_empty());
    assert_eq!(s1.exec.status, ExecStatus::Succeeded);
    assert_eq!(s3.exec.status, ExecStatus::Succeeded, "{:#?}", s3.exec.timeline);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_cancelled_alone_ends_its_parent_at_once_when_it_was_the_last() -> anyhow::Result<()> {
    use sundial_model::claim::Finish;
    use sundial_store::executions::ClaimOutcome;
    // GIVEN a waiting parent of 2 shards whose shard 0 succeeded and was counted
    let env = TestEnv::new("kids-cancel-one").await?;
    let mut def = fixtures::definition(Target::in_process("rec"));
    def.shards = Some(2);
    let (parent, fence, kids) = fanned_out_then_crashed(&env, "settle", def, "w1").await?;
    let store = fixtures::store(&env);
    let now = Utc::now();
    store.await_children(&parent, &fence, 2, now.timestamp_millis() + 600_000, now).await?;
    let terms =
        sundial_model::claim::LeaseTerms { duration_ms: 30_000, skew_margin_ms: 100, may_take_over: true };
    let ClaimOutcome::Claimed(c) = store.claim(&kids[0], "w2", &terms, now).await? else {
        anyhow::bail!("not claimed")
    };
    store.finish(&kids[0], &c.fence, &Finish::Succeeded, now).await?;
    assert_eq!(store.count_child(&kids[0], ExecStatus::Succeeded, "worker:w2", now).await?, None);

    // WHEN shard 1, never started, is cancelled through the API's store call
    store.request_cancel(&kids[1], "api:ops", now).await?;

    // THEN the parent ends FAILED at once, naming the cancelled shard
    let p = fixtures::snapshot(&env, &parent).await?;
    assert_eq!(p.exec.status, ExecStatus::Failed);
    assert_eq!(
        p.exec.last_error.map(|e| e.1).unwrap_or_default(),
        "1 of 2 children did not succeed: s1 (CANCELED)"
    );
    Ok(())
}
