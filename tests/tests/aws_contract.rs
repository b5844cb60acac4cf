//! The simulated AWS held to the emulators (docs/simulation.md, "The simulated AWS"): the
//! contract suite of `functions/simaws/src/contract` runs here against the running emulator
//! (`scripts/test.sh` runs it on MiniStack and on moto), the same cases the simulator passes in
//! `functions/simaws/tests/contract.rs`. And the product's own code runs unchanged on the
//! simulator: provisioning, then concurrent trigger scans, with the assertions of
//! `trigger_scan.rs`.

use sundial_core::aws::Clients;
use sundial_core::config::Config;
use sundial_core::trigger::scan::ScanOptions;
use sundial_schedule::MisfirePolicy;
use sundial_simaws::{contract, Aws};
use sundial_testkit::provision;
use sundial_tests::trigger::{at, create_job, definition, executions, queued, scan};
use sundial_tests::{clients, endpoint, require_emulator, sdk_config, unique_prefix, TestEnv};

#[tokio::test]
async fn every_contract_case_holds_on_the_emulator() -> anyhow::Result<()> {
    // GIVEN the running emulator
    require_emulator(&clients()).await?;
    // WHEN every contract case runs against it
    let results = contract::run_all(&sdk_config(), &unique_prefix("contract")).await;
    // THEN each holds, as it holds on the simulator (but for the emulator's known gaps)
    let emulator = std::env::var("SUNDIAL_EMULATOR").unwrap_or_else(|_| "the emulator".into());
    let mut failed = Vec::new();
    for (name, r) in &results {
        match (r, contract::known_gap(&emulator, name)) {
            (Ok(()), _) => {}
            (Err(e), Some(why)) => eprintln!("{name} fails on {emulator}, a known gap ({why}): {e}"),
            (Err(e), None) => failed.push(format!("{name}: {e}")),
        }
    }
    assert!(
        failed.is_empty(),
        "contract cases failed on {emulator} at {}:\n{}",
        endpoint(),
        failed.join("\n")
    );
    assert_eq!(results.len(), contract::names().len());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_products_trigger_scan_runs_unchanged_on_the_simulator() -> anyhow::Result<()> {
    // GIVEN the product's own provisioning on the simulated AWS, and 20 jobs firing at 12:01:00 and 12:01:30
    let aws = Aws::new(29, at("2026-11-30T12:00:00Z").timestamp_millis());
    let clients = Clients::new(&aws.sdk_config());
    let mut cfg = Config::local(&unique_prefix("simscan"), &["default"], 16);
    cfg.targets = sundial_model::outbound::TargetPolicy::dev_loopback();
    let queues = provision::ensure_all(&clients, &cfg).await?;
    let env = TestEnv { cfg, clients, queues };
    let t0 = at("2026-11-30T12:00:05Z");
    for i in 0..20 {
        let def = definition("0,30 1 12 * * *", "UTC", MisfirePolicy::FireOnce);
        create_job(&env, "acme", &format!("job-{i}"), def, t0).await?;
    }
    // WHEN two ticks scan the same minute concurrently
    let now = at("2026-11-30T12:00:10Z");
    let opts = ScanOptions::default();
    let (a, b) = tokio::join!(scan(&env, now, &opts), scan(&env, now, &opts));
    let (a, b) = (a?, b?);
    // THEN there is exactly one execution per fire, and every fire was enqueued at least once
    for i in 0..20 {
        let ex = executions(&env, "acme", &format!("job-{i}")).await?;
        let times: Vec<String> = ex.iter().map(|e| e.scheduled_at.to_rfc3339()).collect();
        assert_eq!(times, ["2026-11-30T12:01:00+00:00", "2026-11-30T12:01:30+00:00"], "job-{i}");
    }
    assert_eq!(a.created + b.created, 40, "each fire created once in all");
    assert!(queued(&env, "default").await? >= 40, "every fire is enqueued at least once");
    assert_eq!(a.sent + b.sent, queued(&env, "default").await?);
    let depth: usize = aws
        .queues()
        .iter()
        .filter(|q| q.url == env.queue_url("default"))
        .map(|q| q.visible + q.in_flight + q.delayed)
        .sum();
    assert_eq!(depth as u64, a.sent + b.sent, "the simulator's own count of the pool queue");
    Ok(())
}
