//! Issue 18: a sharded fire (8 shards, 32 merchants) run by real worker processes, two of
//! which are SIGKILLed while they hold a shard and one SIGSTOPped past its lease. Every
//! merchant is settled exactly once, each by its own shard (the effect ledger, fenced by
//! token), and the parent SUCCEEDS. The broken variant, a handler that ignores `shardIndex`,
//! also "succeeds" as far as the scheduler can tell: the checker is what catches it.

use chrono::Utc;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;
use sundial_chaos::effect::EffectStore;
use sundial_chaos::shards::{check, ShardLedger, SHARD_HANDLER};
use sundial_model::{ExecStatus, JobDefinition, Target};
use sundial_store::executions::ExecKey;
use sundial_tests::fixtures;
use sundial_tests::TestEnv;
use tokio::process::{Child, Command};

const SHARDS: u32 = 8;
const ITEMS: u32 = 32;
const WITHIN: Duration = Duration::from_secs(120);

struct Fleet {
    env: Vec<(String, String)>,
    dir: PathBuf,
    procs: BTreeMap<String, Child>,
}

impl Fleet {
    fn spawn(&mut self, id: &str) -> anyhow::Result<()> {
        let log = std::fs::File::create(self.dir.join(format!("{id}.log")))?;
        let child = Command::new(env!("CARGO_BIN_EXE_chaos"))
            .arg("worker")
            .envs(self.env.iter().cloned())
            .env("SUNDIAL_WORKER_ID", id)
            .stdin(std::process::Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .kill_on_drop(true)
            .spawn()?;
        self.procs.insert(id.to_string(), child);
        Ok(())
    }

    fn signal(&self, id: &str, sig: &str) {
        // Only ever our own children, by pid.
        if let Some(pid) = self.procs.get(id).and_then(Child::id) {
            let _ = std::process::Command::new("kill").arg(format!("-{sig}")).arg(pid.to_string()).status();
        }
    }

    async fn kill(&mut self, id: &str) -> anyhow::Result<()> {
        if let Some(p) = self.procs.get_mut(id) {
            p.start_kill()?; // SIGKILL
            let status = p.wait().await?;
            assert!(!status.success(), "{id} was killed, not stopped: {status:?}");
        }
        Ok(())
    }

    async fn stop_all(&mut self) {
        for id in self.procs.keys().cloned().collect::<Vec<_>>() {
            self.signal(&id, "CONT");
            self.signal(&id, "TERM");
        }
        for p in self.procs.values_mut() {
            if tokio::time::timeout(Duration::from_secs(8), p.wait()).await.is_err() {
                let _ = p.start_kill();
                let _ = p.wait().await;
            }
        }
    }
}

fn sharded(ignore_shard: bool, work_ms: u64) -> JobDefinition {
    let mut d = fixtures::definition(Target::in_process(SHARD_HANDLER));
    d.shards = Some(SHARDS);
    d.params = serde_json::json!({"items": ITEMS, "workMs": work_ms, "ignoreShard": ignore_shard});
    d.retry.max_attempts = 6;
    d
}

async fn setup(label: &str) -> anyhow::Result<(TestEnv, ShardLedger, Fleet)> {
    let env = TestEnv::new(label).await?;
    let table = format!("{}-ledger", env.cfg.executions_table);
    EffectStore::new(env.clients.ddb.clone(), &table).create_table().await?;
    let dir = std::env::temp_dir().join(format!("sundial-{}", env.cfg.executions_table));
    std::fs::create_dir_all(&dir)?;
    let vars = fixtures::function_env(
        &env,
        &[
            ("SUNDIAL_POOL", "default"),
            ("SUNDIAL_LEASE_SECS", "2"),
            ("SUNDIAL_SKEW_MARGIN_MS", "200"),
            ("SUNDIAL_WORKER_SLOTS", "2"),
            ("SUNDIAL_SHUTDOWN_GRACE_SECS", "2"),
            ("SUNDIAL_CHAOS_EFFECTS_TABLE", &table),
            ("SUNDIAL_CHAOS_JOURNAL", &dir.join("journal.jsonl").display().to_string()),
            ("RUST_LOG", "warn"),
        ],
    );
    let ledger = ShardLedger::new(env.clients.ddb.clone(), table);
    Ok((env, ledger, Fleet { env: vars, dir, procs: BTreeMap::new() }))
}

/// The effects of one fire's children.
async fn effects_of(ledger: &ShardLedger, parent: &ExecKey) -> anyhow::Result<Vec<(String, u32, u64)>> {
    let prefix = format!("{}.", parent.global_id());
    Ok(ledger.effects().await?.into_iter().filter(|(c, _, _)| c.starts_with(&prefix)).collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_survive_killed_and_paused_workers_and_each_merchant_is_settled_once() -> anyhow::Result<()> {
    // GIVEN four worker processes (2 slots each, 2 s leases) and a fire of a job with 8 shards
    // settling 32 merchants, 500 ms each
    let (env, ledger, mut fleet) = setup("shards-kill").await?;
    for i in 0..4 {
        fleet.spawn(&format!("w{i}"))?;
    }
    let parent = fixtures::create_ready(&env, "acme", "settle", sharded(false, 500), Utc::now()).await?;
    let store = fixtures::store(&env);

    // WHEN three shards are running on three different processes
    let end = tokio::time::Instant::now() + WITHIN;
    let holders: Vec<(ExecKey, String)> = loop {
        let kids = store.children_of(&parent).await?;
        let mut by_owner: BTreeMap<String, ExecKey> = BTreeMap::new();
        for k in kids.iter().filter(|k| k.status == ExecStatus::Running) {
            if let Some(o) = &k.lease_owner {
                by_owner.entry(o.clone()).or_insert_with(|| ExecKey::of(k));
            }
        }
        if by_owner.len() >= 3 {
            break by_owner.into_iter().map(|(o, k)| (k, o)).take(3).collect();
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < end,
            "three shards never ran on three processes: {kids:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // AND two of those processes are SIGKILLed mid-shard (ECS starts two replacements)
    fleet.kill(&holders[0].1).await?;
    fleet.kill(&holders[1].1).await?;
    fleet.spawn("w4")?;
    fleet.spawn("w5")?;
    // AND the third is SIGSTOPped well past its lease (2 s + margin), then continued
    let paused = holders[2].1.clone();
    fleet.signal(&paused, "STOP");
    fixtures::wait_for(&env, &holders[2].0, WITHIN, |s| s.exec.fencing_token >= 2).await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    fleet.signal(&paused, "CONT");
    let p = fixtures::wait_for(&env, &parent, WITHIN, |s| s.exec.status.is_terminal()).await?;
    fleet.stop_all().await;

    // THEN the parent SUCCEEDED, its three disturbed shards were taken over (new tokens)
    assert_eq!(p.exec.status, ExecStatus::Succeeded, "{:#?}", p.exec);
    for (k, owner) in &holders {
        let s = fixtures::snapshot(&env, k).await?;
        assert_eq!(s.exec.status, ExecStatus::Succeeded, "{}", k.id());
        assert!(
            s.exec.fencing_token >= 2,
            "{} held by {owner} was not taken over: {:#?}",
            k.id(),
            s.exec.timeline
        );
    }
    // AND every merchant was settled exactly once, by its own shard
    let report = check(&effects_of(&ledger, &parent).await?, ITEMS, SHARDS);
    assert!(report.is_clean(), "{report:#?}");
    // AND a shard ran more than once only if a killed or paused process had claimed it: a
    // child's retry never re-runs the other shards
    let disturbed: Vec<String> = holders.iter().map(|(_, o)| format!("worker:{o}")).collect();
    for k in store.children_of(&parent).await? {
        let by_disturbed =
            k.timeline.iter().any(|e| e.to == ExecStatus::Running && disturbed.contains(&e.actor));
        assert!(k.attempt == 1 || by_disturbed, "{} ran {} times: {:#?}", k.id(), k.attempt, k.timeline);
    }
    for (k, _) in &holders {
        assert!(fixtures::snapshot(&env, k).await?.exec.attempt >= 2);
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_that_ignores_its_shard_is_caught_by_the_checker() -> anyhow::Result<()> {
    // GIVEN the broken variant: every child settles every merchant
    let (env, ledger, mut fleet) = setup("shards-broken").await?;
    fleet.spawn("w0")?;
    fleet.spawn("w1")?;
    let parent = fixtures::create_ready(&env, "acme", "broken", sharded(true, 0), Utc::now()).await?;

    // WHEN it runs undisturbed
    let p = fixtures::wait_for(&env, &parent, WITHIN, |s| s.exec.status.is_terminal()).await?;
    fleet.stop_all().await;

    // THEN the scheduler saw nothing wrong (every child succeeded) ...
    assert_eq!(p.exec.status, ExecStatus::Succeeded);
    // ... and the checker flags every merchant settled 8 times, 7 of them by foreign shards
    let report = check(&effects_of(&ledger, &parent).await?, ITEMS, SHARDS);
    assert!(!report.is_clean());
    assert!(report.missing.is_empty());
    assert_eq!(report.duplicated.len(), ITEMS as usize, "{report:#?}");
    assert!(report.duplicated.values().all(|v| v.len() == SHARDS as usize));
    assert_eq!(report.foreign.len(), (ITEMS * (SHARDS - 1)) as usize);
    Ok(())
}
