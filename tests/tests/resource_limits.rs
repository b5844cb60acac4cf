//! Resource limits: a named limit shared by jobs of several tenants is never
//! exceeded, also when worker processes are killed with SIGKILL (a dead holder's unit comes back
//! when its lease ends); resources are taken all or none; a wait re-queues a fresh message
//! (its receive count never grows); the per-resource metrics are recorded.

use aws_sdk_sqs::types::MessageSystemAttributeName;
use chrono::{Duration as Chrono, Utc};
use std::time::Duration;
use sundial_core::execution::resource_limits::{Acquired, ResourceGates};
use sundial_core::execution::target::in_process::Handlers;
use sundial_core::execution::worker::{Disposition, NoExtend};
use sundial_model::{ExecStatus, Target};
use sundial_store::executions::ExecKey;
use sundial_store::resource_limits as resources;
use sundial_tests::fixtures::{self, Reply, WebhookServer};
use sundial_tests::TestEnv;

const WITHIN: Duration = Duration::from_secs(120);

fn gates(env: &TestEnv) -> ResourceGates {
    ResourceGates::new(env.clients.ddb.clone(), env.cfg.jobs_table.clone(), env.cfg.executions_table.clone())
}

/// The largest number of intervals `[start, end)` open at one instant.
fn max_overlap(intervals: &[(i64, i64)]) -> usize {
    let mut edges: Vec<(i64, i32)> = intervals.iter().flat_map(|(s, e)| [(*s, 1), (*e, -1)]).collect();
    // At equal instants an end comes before a start: a unit given back at t may be taken at t.
    edges.sort();
    let (mut open, mut max) = (0i32, 0i32);
    for (_, d) in edges {
        open += d;
        max = max.max(open);
    }
    max as usize
}

#[test]
fn overlap_counts_what_is_open_at_once() {
    assert_eq!(max_overlap(&[(0, 10), (5, 15), (10, 20)]), 2);
    assert_eq!(max_overlap(&[(0, 10), (1, 9), (2, 8), (3, 7)]), 4);
    assert_eq!(max_overlap(&[]), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limit_of_three_shared_by_three_jobs_of_two_tenants_never_has_more_than_three_holders_through_kills(
) -> anyhow::Result<()> {
    // GIVEN a resource `legacy-db` limited to 3, and three jobs of two tenants using it, each with
    // four executions one second apart whose runs take 2.5 s (longer than the interval)
    let env = TestEnv::new("res-kill").await?;
    resources::put_limit(&env.clients.ddb, &env.cfg.jobs_table, "legacy-db", 3, "ops", Utc::now()).await?;
    let mut def = fixtures::definition(Target::in_process("sleep"));
    def.params = serde_json::json!({"ms": 2500, "stepMs": 500});
    def.resources = vec!["legacy-db".into()];
    def.retry.max_attempts = 5;
    let start = Utc::now();
    let mut keys: Vec<ExecKey> = Vec::new();
    for (tenant, job) in [("acme", "ledger-a"), ("acme", "ledger-b"), ("beta", "export")] {
        for i in 0..4 {
            let at = start + Chrono::seconds(i);
            keys.push(fixtures::create_ready(&env, tenant, job, def.clone(), at).await?);
        }
    }

    // WHEN a worker-ecs process (4 slots, 2 s leases) starts them, a second one joins, and the
    // first is killed with SIGKILL while it holds a unit early in a run
    let slots = ("SUNDIAL_WORKER_SLOTS", "4");
    let bin = fixtures::worker_ecs_binary().await?;
    let mut victim = fixtures::spawn_worker_ecs_from(&bin, &env, &[("SUNDIAL_WORKER_ID", "victim"), slots])?;
    let end = tokio::time::Instant::now() + WITHIN;
    'found: loop {
        let now_ms = Utc::now().timestamp_millis();
        for k in &keys {
            let s = fixtures::snapshot(&env, k).await?;
            let claimed_at = s.exec.timeline.last().map_or(0, |e| e.at);
            // Claimed less than a second ago: at least 1.5 s of its run is left to cut short.
            if s.exec.status == ExecStatus::Running
                && s.exec.lease_owner.as_deref() == Some("victim")
                && now_ms - claimed_at < 1_000
            {
                break 'found;
            }
        }
        anyhow::ensure!(tokio::time::Instant::now() < end, "the victim never ran anything");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut steady = fixtures::spawn_worker_ecs_from(&bin, &env, &[("SUNDIAL_WORKER_ID", "steady"), slots])?;
    victim.start_kill()?; // SIGKILL
    let status = victim.wait().await?;
    let killed_at = Utc::now().timestamp_millis();
    assert!(!status.success(), "killed, not stopped: {status:?}");
    // AND a third process joins later
    let mut relief = fixtures::spawn_worker_ecs_from(&bin, &env, &[("SUNDIAL_WORKER_ID", "relief"), slots])?;
    let mut done = Vec::new();
    for k in &keys {
        done.push(fixtures::wait_for(&env, k, WITHIN, |s| s.exec.status.is_terminal()).await?);
    }
    steady.start_kill()?;
    relief.start_kill()?;
    let _ = (steady.wait().await, relief.wait().await);

    // THEN every execution SUCCEEDED: no holder was lost
    assert!(done.iter().all(|s| s.exec.status == ExecStatus::Succeeded), "{:#?}", done);
    // AND the attempts' run intervals, read from the timelines (claim → the next event; an
    // attempt of the killed process ends at the kill at the latest, when its handler died),
    // never overlap more than three deep, and reach three (the limit was the bound, not luck)
    let mut intervals = Vec::new();
    let mut cut_short = 0;
    for s in &done {
        let tl = &s.exec.timeline;
        for (i, ev) in tl.iter().enumerate().filter(|(_, ev)| ev.to == ExecStatus::Running) {
            let next = tl.get(i + 1).map(|n| n.at).expect("a claim is followed by its end");
            let end = if ev.actor == "worker:victim" { next.min(killed_at) } else { next };
            cut_short += usize::from(ev.actor == "worker:victim" && next > killed_at);
            intervals.push((ev.at, end));
        }
    }
    assert_eq!(max_overlap(&intervals), 3, "holders at once, from the recorded run intervals: {intervals:?}");
    assert!(cut_short >= 1, "the kill cut at least one running attempt short");
    let takeovers = done
        .iter()
        .flat_map(|s| &s.exec.timeline)
        .filter(|e| e.from == Some(ExecStatus::Running) && e.to == ExecStatus::Running)
        .count();
    assert!(takeovers >= 1, "the killed holder's execution was taken over");
    // AND nothing holds the resource any more, and nothing went to the DLQ (waits never count)
    assert!(gates(&env).holders("legacy-db", 3, Utc::now().timestamp_millis()).await?.is_empty());
    assert!(fixtures::dlq_bodies(&env, "default").await?.is_empty());
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_wait_takes_nothing_and_re_queues_a_fresh_message_whose_receive_count_stays_one(
) -> anyhow::Result<()> {
    // GIVEN `a-db` (limit 5, free) and `b-db` (limit 1, held for ten minutes by another tenant's
    // execution), and a due execution of a job using both (listed out of order)
    let env = TestEnv::new("res-wait").await?;
    let (ddb, jobs) = (&env.clients.ddb, &env.cfg.jobs_table);
    resources::put_limit(ddb, jobs, "a-db", 5, "ops", Utc::now()).await?;
    resources::put_limit(ddb, jobs, "b-db", 1, "ops", Utc::now()).await?;
    let g = gates(&env);
    let now_ms = Utc::now().timestamp_millis();
    let occupant = "beta:nightly@1";
    let mut uses = Vec::new();
    let held =
        match g.acquire_all(&["b-db".into()], occupant, now_ms + 600_000, 200, now_ms, &mut uses).await? {
            Acquired::All(h) => h,
            other => anyhow::bail!("the occupant could not take b-db: {other:?}"),
        };
    let hook = WebhookServer::start(vec![Reply::Status(200)]).await?;
    let mut def = fixtures::http_definition(&hook.url("/run"));
    def.resources = vec!["b-db".into(), "a-db".into()];
    let key = fixtures::create_ready(&env, "acme", "both", def, Utc::now()).await?;
    let (w, metrics) = fixtures::worker_with(&env, fixtures::settings("waiter"), Handlers::new())?;
    let stop = tokio_util::sync::CancellationToken::new();
    let url = env.queue_url("default").to_string();

    // WHEN three deliveries find b-db full
    for round in 0..3 {
        let msg = receive_one(&env, &url).await?;
        // THEN each delivery is a fresh message, received once: the wait cost no receive
        let count = msg
            .attributes
            .as_ref()
            .and_then(|a| a.get(&MessageSystemAttributeName::ApproximateReceiveCount))
            .cloned()
            .unwrap_or_default();
        assert_eq!(count, "1", "round {round}: receive count of the delivered message");
        let d = w.handle("default", msg.body().unwrap_or_default(), &NoExtend, &stop).await;
        assert_eq!(d, Disposition::Delete, "round {round}: a wait re-queues a fresh copy");
        delete(&env, &url, &msg).await?;
        // AND the free a-db was given back (all or none), the execution is still READY
        let now_ms = Utc::now().timestamp_millis();
        assert!(g.holders("a-db", 5, now_ms).await?.is_empty(), "round {round}: a-db held while waiting");
        assert_eq!(fixtures::snapshot(&env, &key).await?.exec.status, ExecStatus::Ready);
    }

    // WHEN the occupant leaves, the next delivery runs it, holding both while it runs
    g.release(&held, occupant).await?;
    let msg = receive_one(&env, &url).await?;
    let d = w.handle("default", msg.body().unwrap_or_default(), &NoExtend, &stop).await;
    assert_eq!(d, Disposition::Delete);
    delete(&env, &url, &msg).await?;
    assert_eq!(fixtures::snapshot(&env, &key).await?.exec.status, ExecStatus::Succeeded);
    let now_ms = Utc::now().timestamp_millis();
    assert!(g.holders("a-db", 5, now_ms).await?.is_empty() && g.holders("b-db", 1, now_ms).await?.is_empty());

    // AND the metrics counted three waits on b-db and one holder of each at the join
    let uses: Vec<_> = metrics.records().into_iter().flat_map(|m| m.resources).collect();
    let waits = |r: &str| uses.iter().filter(|u| u.resource == r).map(|u| u.waits).sum::<u64>();
    assert_eq!((waits("a-db"), waits("b-db")), (0, 3));
    let holders: Vec<(&str, Option<u64>)> =
        uses.iter().filter(|u| u.holders.is_some()).map(|u| (u.resource.as_str(), u.holders)).collect();
    assert_eq!(holders.len(), 5, "a-db joined on every delivery, b-db on the last: {holders:?}");
    assert!(holders.iter().all(|(_, h)| *h == Some(1)));
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_with_no_limit_defined_admits_nobody_and_says_so() -> anyhow::Result<()> {
    // GIVEN a due execution of a job naming `gone-db`, whose limit an operator deleted
    let env = TestEnv::new("res-undef").await?;
    let (ddb, jobs) = (&env.clients.ddb, &env.cfg.jobs_table);
    resources::put_limit(ddb, jobs, "gone-db", 2, "ops", Utc::now()).await?;
    assert!(resources::delete_limit(ddb, jobs, "gone-db").await?);
    assert!(!resources::delete_limit(ddb, jobs, "gone-db").await?);
    let mut def = fixtures::http_definition("https://hooks.example.com/run");
    def.resources = vec!["gone-db".into()];
    let key = fixtures::create_ready(&env, "acme", "orphan", def, Utc::now()).await?;
    let (w, metrics) = fixtures::worker_with(&env, fixtures::settings("w"), Handlers::new())?;

    // WHEN a worker handles its message
    let stop = tokio_util::sync::CancellationToken::new();
    let url = env.queue_url("default").to_string();
    let msg = receive_one(&env, &url).await?;
    let d = w.handle("default", msg.body().unwrap_or_default(), &NoExtend, &stop).await;

    // THEN it waits (fail closed: the downstream stays protected), counted as ResourceUndefined
    assert_eq!(d, Disposition::Delete);
    assert_eq!(fixtures::snapshot(&env, &key).await?.exec.status, ExecStatus::Ready);
    let uses: Vec<_> = metrics.records().into_iter().flat_map(|m| m.resources).collect();
    assert_eq!(uses.iter().map(|u| (u.waits, u.undefined)).collect::<Vec<_>>(), vec![(1, 1)]);
    env.cleanup().await;
    Ok(())
}

/// Receives the next message of `url` (waiting up to 10 s for a delayed one), with its receive
/// count.
async fn receive_one(env: &TestEnv, url: &str) -> anyhow::Result<aws_sdk_sqs::types::Message> {
    let end = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let out = env
            .clients
            .sqs
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(1)
            .visibility_timeout(30)
            .wait_time_seconds(1)
            .message_system_attribute_names(MessageSystemAttributeName::ApproximateReceiveCount)
            .send()
            .await?;
        if let Some(m) = out.messages.unwrap_or_default().into_iter().next() {
            return Ok(m);
        }
        anyhow::ensure!(tokio::time::Instant::now() < end, "no message within 10 s");
    }
}

async fn delete(env: &TestEnv, url: &str, m: &aws_sdk_sqs::types::Message) -> anyhow::Result<()> {
    env.clients
        .sqs
        .delete_message()
        .queue_url(url)
        .receipt_handle(m.receipt_handle().unwrap_or_default())
        .send()
        .await?;
    Ok(())
}

/// Messages the metered component sent to pool queues so far (a wait's copy is one batch of
/// one; a dead letter's copy is a `SendMessage` to the DLQ, not counted).
fn sends(meter: &sundial_testkit::metering::Meter, component: &str) -> u64 {
    let u = meter.snapshot().remove(component).unwrap_or_default();
    u.requests.get("sqs:SendMessageBatch").copied().unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_at_a_closed_resource_keeps_one_copy_is_not_resent_and_ends_at_its_max_age(
) -> anyhow::Result<()> {
    // GIVEN `closed-db` at limit 0 (a maintenance switch), a due execution of a job using it
    // (retry.maxAgeSecs 1 h), and a worker whose SQS sends are counted
    let env = TestEnv::new("res-closed").await?;
    resources::put_limit(&env.clients.ddb, &env.cfg.jobs_table, "closed-db", 0, "ops", Utc::now()).await?;
    let mut def = fixtures::http_definition("https://hooks.example.com/run");
    def.resources = vec!["closed-db".into()];
    let now = Utc::now();
    let e = fixtures::ready_execution("acme", "legacy", def.clone(), now, now);
    let key = fixtures::put_execution(&env, &e).await?;
    let meter = sundial_testkit::metering::Meter::new(&env.cfg);
    let clients = meter.clients(&sundial_tests::sdk_config(), "worker");
    let (w, _) = fixtures::worker_with_clients(&env, fixtures::settings("w"), Handlers::new(), &clients)?;
    let stop = tokio_util::sync::CancellationToken::new();
    let body = serde_json::to_string(&fixtures::message_of(&e, now))?;

    // WHEN a worker handles its message: the resource admits nobody, the execution waits
    assert_eq!(w.handle("default", &body, &NoExtend, &stop).await, Disposition::Delete);
    assert_eq!(sends(&meter, "worker"), 1, "the wait re-queued one copy");

    // THEN the reconciler, past the execution's first look, does not re-send it: it is waiting,
    // not lost, and nothing alarms
    let ctx = sundial_tests::trigger::ctx(&env);
    let opts = sundial_core::reconcile::ReconcileOptions::default();
    for minutes in [3, 4] {
        let report = sundial_core::reconcile::reconcile(&ctx, now + Chrono::minutes(minutes), &opts).await?;
        assert_eq!(report.resent_total(), 0, "a waiting execution was re-sent at +{minutes} min");
    }
    assert_eq!(fixtures::snapshot(&env, &key).await?.resends, 0);

    // WHEN a second copy of the original message arrives (a duplicate send)
    assert_eq!(w.handle("default", &body, &NoExtend, &stop).await, Disposition::Delete);
    // THEN it is dropped: the one live copy is the wait's
    assert_eq!(sends(&meter, "worker"), 1, "a stale copy re-queued itself");

    // WHEN an execution of the job has waited past its maxAgeSecs
    let old_at = now - Chrono::seconds(i64::from(def.retry.max_age_secs) + 1);
    let old = fixtures::ready_execution("acme", "legacy", def, old_at, old_at);
    let old_key = fixtures::put_execution(&env, &old).await?;
    let old_body = serde_json::to_string(&fixtures::message_of(&old, now))?;
    assert_eq!(w.handle("default", &old_body, &NoExtend, &stop).await, Disposition::Delete);
    // THEN its next delivery ends it DEAD, saying why, instead of waiting forever
    let s = fixtures::snapshot(&env, &old_key).await?;
    assert_eq!(s.exec.status, ExecStatus::Dead, "an execution waited past its maxAgeSecs");
    assert_eq!(s.exec.last_error.map(|(c, _)| c).as_deref(), Some("MaxAgeExceeded"));
    assert_eq!(sends(&meter, "worker"), 1, "no copy of an expired execution");
    env.cleanup().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_admission_gives_back_only_the_entries_it_took() -> anyhow::Result<()> {
    // GIVEN a tenant limited to 2 running executions, and a due execution E of a job using
    // `a-db` (limit 2) and `b-db` (limit 1, its only unit held by another execution)
    let env = TestEnv::new("res-own").await?;
    let (ddb, jobs) = (&env.clients.ddb, &env.cfg.jobs_table);
    resources::put_limit(ddb, jobs, "a-db", 2, "ops", Utc::now()).await?;
    resources::put_limit(ddb, jobs, "b-db", 1, "ops", Utc::now()).await?;
    let mut def = fixtures::http_definition("https://hooks.example.com/run");
    def.resources = vec!["a-db".into(), "b-db".into()];
    let now = Utc::now();
    let e = fixtures::ready_execution("acme", "both", def, now, now);
    let key = fixtures::put_execution(&env, &e).await?;
    let now_ms = now.timestamp_millis();
    let lease = now_ms + 600_000;
    let g = gates(&env);
    let mut uses = Vec::new();
    assert!(matches!(
        g.acquire_all(&["b-db".into()], "acme:other@1", lease, 200, now_ms, &mut uses).await?,
        Acquired::All(_)
    ));
    // AND another admission of E (a worker between its admission and its claim, or a holder whose
    // heartbeat just renewed them) holds E's tenant seat and a unit of `a-db`
    let tenants =
        sundial_core::execution::policy::TenantGate::new(ddb.clone(), env.cfg.executions_table.clone());
    let seat = tenants.acquire(&key, &key.id(), 2, lease, 200, now_ms).await?;
    assert!(matches!(seat, sundial_core::execution::policy::Seat::Admitted { .. }));
    assert!(matches!(
        g.acquire_all(&["a-db".into()], &key.global_id(), lease, 200, now_ms, &mut uses).await?,
        Acquired::All(_)
    ));

    // WHEN a worker handles a duplicate delivery of E: it gets a tenant seat and `a-db`, finds
    // `b-db` full, and waits
    let mut settings = fixtures::settings("dup");
    settings.tenant_limits =
        sundial_core::execution::policy::TenantLimits::parse("acme=2").map_err(anyhow::Error::msg)?;
    let (w, _) = fixtures::worker_with(&env, settings, Handlers::new())?;
    let body = serde_json::to_string(&fixtures::message_of(&e, now))?;
    let stop = tokio_util::sync::CancellationToken::new();
    assert_eq!(w.handle("default", &body, &NoExtend, &stop).await, Disposition::Delete);

    // THEN it gave back what it took, and only that: the other admission's seat and unit stay
    let at = Utc::now().timestamp_millis();
    assert_eq!(tenants.running("acme", 2, at).await?, vec![key.id()], "the other admission's tenant seat");
    let held: Vec<String> = g.holders("a-db", 2, at).await?.into_iter().map(|(id, _)| id).collect();
    assert_eq!(held, vec![key.global_id()], "the other admission's unit of a-db");
    env.cleanup().await;
    Ok(())
}
