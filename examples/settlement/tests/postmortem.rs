//! The settlement post-mortem of docs/idempotency.md, reproduced against the local emulator and a
//! real HTTP account service: A pauses mid-run, a timeout fails the execution over to B, B is
//! killed half-way, C re-runs it, stale A wakes up, and the trigger is delivered once more.
//!
//! With every layer on, every merchant is settled exactly once, credited exactly once, and
//! reconciliation is clean. Then each per-item layer is removed in turn (the example's test
//! switch) and the same scenario books something twice, which the test prints.
//!
//! Sizes: 1,000 merchants with B killed at 500 here (about a minute in a debug build); the
//! 10,000-merchant run is `cargo run --release -p settlement-example -- demo`.

use settlement_example::account_service::AccountService;
use settlement_example::scenario::{self, Crash, ScenarioConfig, ScenarioOutcome};
use settlement_example::settle::{merchant_id, Tables};
use settlement_example::Layers;
use std::path::PathBuf;

const DATE: &str = "2026-11-30";

/// One scenario at a time: they share one serialised emulator and two cores with everything
/// else on the machine, and running them side by side only makes each slower.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn replay(label: &str, cfg: ScenarioConfig) -> anyhow::Result<(ScenarioOutcome, AccountService)> {
    let _turn = ONE_AT_A_TIME.lock().await;
    let clients = sundial_tests::clients();
    sundial_tests::require_emulator(&clients).await?;
    let prefix = sundial_tests::unique_prefix(label);
    let service = AccountService::start().await?;
    let outcome = scenario::run(&clients.ddb, &prefix, &service, &cfg, chrono::Utc::now()).await?;
    println!("{label}: phases {:?}", outcome.phase_secs);
    // Tables are deleted only once the scenario ran; a failing assertion below still has the
    // audit printed by the assertion message.
    Tables::with_prefix(&prefix).delete(&clients.ddb).await?;
    Ok((outcome, service))
}

fn killed_child() -> Crash {
    Crash::Kill {
        exe: PathBuf::from(env!("CARGO_BIN_EXE_settlement-example")),
        endpoint: sundial_tests::endpoint(),
    }
}

fn small(layers: Layers) -> ScenarioConfig {
    ScenarioConfig {
        merchants: 200,
        pause_a_at: 20,
        crash_b_at: 100,
        lanes: 4,
        layers,
        drop_every: 0,
        crash: Crash::Abort,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn failover_and_a_killed_worker_still_settle_every_merchant_exactly_once() -> anyhow::Result<()> {
    // GIVEN 1,000 merchants to settle, every layer on, and an account service that drops
    // every 37th response after applying the credit
    let cfg = ScenarioConfig {
        merchants: 1_000,
        pause_a_at: 50,
        crash_b_at: 500,
        lanes: 4,
        layers: Layers::ALL,
        drop_every: 37,
        crash: killed_child(),
    };

    // WHEN A pauses at merchant 50, B takes over and is SIGKILLed at merchant 500, C re-runs,
    // A wakes up stale, and the trigger is delivered again (D)
    let (o, _service) = replay("postmortem", cfg).await?;
    let a = &o.audit;

    // THEN every merchant is settled exactly once on our books...
    assert!(a.exactly_once(), "not exactly once: {:?}\n{a:#?}", a.duplicates());
    assert_eq!((a.settled_once, a.paid_out_total), (1_000, a.expected_total));
    // ...one detail row each, and the account service credited each exactly once
    assert_eq!((a.detail_rows, a.credits, a.credited_total), (1_000, 1_000, a.expected_total));
    assert!(a.never_credited.is_empty() && a.credited_repeatedly.is_empty());
    // AND reconciliation, run by the job itself and again by the audit, is clean
    let job_recon = o.c.reconciliation.as_ref().expect("C completed the batch and reconciled");
    assert!(job_recon.is_clean() && a.reconciliation.is_clean(), "{job_recon} / {}", a.reconciliation);
    assert_eq!(a.reconciliation.matched, 1_000);
    // AND responses really were lost, and no outcome was left unknown
    assert!(o.dropped_responses > 0);
    assert_eq!(a.unknown_outcomes, 0);
    // AND C took over what B left half-done, finding B's detail rows already there
    assert!(o.c.complete && o.c.settled > 0 && o.c.detail_existed > 0, "{:?}", o.c);
    // AND the late delivery exited on the done-marker
    assert!(o.d.skipped_by_marker);

    // AND stale A could neither finish the merchant B took from it nor overwrite C's report
    assert!(o.a.superseded >= 1, "{:?}", o.a);
    assert!(!o.a.complete && !o.a.report_written, "{:?}", o.a);
    assert_eq!(a.report_token, Some(3), "the stored run report is C's (token 3)");
    println!("post-mortem replayed: {}", a.reconciliation);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn without_the_unique_constraint_the_same_scenario_writes_duplicate_details() -> anyhow::Result<()> {
    // GIVEN the scenario with detail rows keyed per attempt instead of by (merchant_id, settle_date)
    let cfg = small(Layers { unique_constraint: false, ..Layers::ALL });
    // WHEN it runs
    let (o, _s) = replay("no-unique", cfg).await?;
    let a = &o.audit;
    // THEN the merchants that two attempts worked on have two detail rows: A's paused merchant
    // (taken over by B) and B's crash merchant (taken over by C)
    println!("WITHOUT THE UNIQUE CONSTRAINT: {:?}", a.duplicates());
    assert!(!a.exactly_once());
    for m in [merchant_id(20), merchant_id(100)] {
        assert!(
            a.duplicate_details.contains(&format!("{m}:{DATE}")),
            "{m} not duplicated: {:?}",
            a.duplicate_details
        );
    }
    // AND reconciliation catches it: our ledger books them twice, the far side once
    assert_eq!(a.reconciliation.duplicate_local.len(), a.duplicate_details.len());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn without_the_cas_state_machine_the_same_scenario_settles_merchants_repeatedly() -> anyhow::Result<()>
{
    // GIVEN the scenario with the per-merchant state machine removed (plain writes)
    let cfg = small(Layers { cas: false, ..Layers::ALL });
    // WHEN it runs
    let (o, _s) = replay("no-cas", cfg).await?;
    let a = &o.audit;
    // THEN every attempt settles every merchant it reaches: on our books each merchant is
    // settled at least twice (A and C walk all of them) and paid_out_total is inflated
    println!("WITHOUT THE CAS STATE MACHINE: {:?}", a.duplicates());
    assert!(!a.exactly_once());
    assert_eq!(a.settled_repeatedly.len(), 200, "{:?}", a.settled_repeatedly);
    assert!(a.paid_out_total >= 2 * a.expected_total);
    // AND the other layers still hold where they apply: one detail row and one credit each,
    // so reconciliation against the account service is clean and cannot see this damage
    assert!(a.duplicate_details.is_empty() && a.credited_repeatedly.is_empty());
    assert!(a.reconciliation.is_clean(), "{}", a.reconciliation);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn without_the_outbound_idempotency_key_the_account_service_pays_twice() -> anyhow::Result<()> {
    // GIVEN the scenario with a per-attempt idempotency key on the credit
    let cfg = small(Layers { outbound_idempotency: false, ..Layers::ALL });
    // WHEN it runs
    let (o, _s) = replay("no-outkey", cfg).await?;
    let a = &o.audit;
    // THEN the merchants two attempts credited were paid twice by the account service, though
    // our own books (CAS + unique rows) show them settled once
    println!("WITHOUT THE OUTBOUND IDEMPOTENCY KEY: {:?}", a.duplicates());
    assert!(!a.exactly_once());
    for m in [merchant_id(20), merchant_id(100)] {
        assert!(
            a.credited_repeatedly.iter().any(|(x, n)| *x == m && *n >= 2),
            "{m}: {:?}",
            a.credited_repeatedly
        );
    }
    assert!(a.settled_repeatedly.is_empty() && a.duplicate_details.is_empty());
    // AND only reconciliation finds it: a double payment on the far side
    assert_eq!(a.reconciliation.duplicate_far.len(), a.credited_repeatedly.len());
    Ok(())
}
