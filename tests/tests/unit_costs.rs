//! The per-fire units `sundial capacity` prices, measured on the current code (docs/capacity.md).
//!
//! The capacity model reads two kinds of checked-in measurement: the trigger bench's documents
//! (`docs/bench/trigger-10000-{every-minute,daily,bucket}.json`, `bench-trigger --out`: tick,
//! verification and worker per execution at 10,000 fires) and `docs/bench/policy-units.json`
//! (this test: what a FORBID slot and a tenant's running gate add per execution, and the stored
//! size of a finished execution). This test measures both again on the emulator and fails when
//! the checked-in figures and the code disagree, so a change that adds a write cannot leave the
//! model pricing the old count. `SUNDIAL_BLESS=1` rewrites `policy-units.json` instead of
//! comparing it (the trigger documents are rewritten by `bench-trigger`, see docs/performance.md).

use std::collections::BTreeMap;

use chrono::Utc;
use serde_json::{json, Value};
use sundial_core::trigger::plan::CatchUpBudget;
use sundial_core::trigger::scan::{scan_shards, ScanOptions};
use sundial_model::tenant::TenantLimits;
use sundial_model::{ConcurrencyPolicy, DueClass, Job, JobDefinition};
use sundial_schedule::MisfirePolicy;
use sundial_testkit::metering::{item_kind, item_size, Meter, Usage};
use sundial_tests::fixtures::{self, Reply, WebhookServer};
use sundial_tests::trigger::{at, definition, metered_ctx};
use sundial_tests::TestEnv;

const N: i64 = 10;

fn repo_file(rel: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

fn per_execution(m: &BTreeMap<String, f64>, n: f64) -> BTreeMap<String, f64> {
    m.iter().map(|(k, v)| (k.clone(), (v / n * 1e4).round() / 1e4)).collect()
}

/// What the worker spends on `n` executions of one job, delivered once each.
async fn worker_usage(
    env: &TestEnv,
    meter: &Meter,
    w: &sundial_core::execution::worker::Worker,
    job: &str,
    def: &JobDefinition,
) -> anyhow::Result<Usage> {
    let now = Utc::now();
    let mut bodies = Vec::new();
    for i in 0..N {
        let e =
            fixtures::ready_execution("acme", job, def.clone(), now - chrono::Duration::seconds(i + 1), now);
        fixtures::put_execution(env, &e).await?;
        bodies.push(serde_json::to_string(&fixtures::message_of(&e, now))?);
    }
    meter.reset();
    let stop = tokio_util::sync::CancellationToken::new();
    for b in &bodies {
        w.handle("default", b, &sundial_core::execution::worker::NoExtend, &stop).await;
    }
    Ok(meter.snapshot().remove("worker").unwrap_or_default())
}

/// Units per execution `with` spends beyond `plain`, writes and reads, whatever item they land
/// on (the meter books a sharded gate item under `other`).
fn extra(plain: &Usage, with: &Usage) -> Value {
    let d = |a: f64, b: f64| ((b - a) / N as f64 * 1e4).round() / 1e4;
    json!({ "writes": d(plain.write_units, with.write_units),
            "reads": d(plain.read_units, with.read_units) })
}

/// Mean stored size of the finished execution items, with DynamoDB's 100 bytes of overhead
/// left to the model.
async fn execution_item_bytes(env: &TestEnv) -> anyhow::Result<f64> {
    let scan = env.clients.ddb.scan().table_name(&env.cfg.executions_table).send().await?;
    let sizes: Vec<usize> = scan
        .items()
        .iter()
        .filter(|i| {
            let s = |k: &str| i.get(k).and_then(|v| v.as_s().ok()).cloned().unwrap_or_default();
            item_kind(&s("pk"), &s("sk")) == "execution"
        })
        .map(item_size)
        .collect();
    anyhow::ensure!(!sizes.is_empty(), "no execution items");
    Ok((sizes.iter().sum::<usize>() as f64 / sizes.len() as f64).round())
}

/// The policy document: slot and gate units beyond a plain execution, and the item size.
async fn measure_policies(env: &TestEnv) -> anyhow::Result<Value> {
    let hook = WebhookServer::start((0..100).map(|_| Reply::Status(200)).collect()).await?;
    let meter = Meter::new(&env.cfg);
    let clients = meter.clients(&sundial_tests::sdk_config(), "worker");
    let handlers = sundial_core::execution::target::in_process::Handlers::new;
    let (plain_w, _) = fixtures::worker_with_clients(env, fixtures::settings("plain"), handlers(), &clients)?;
    let mut limited = fixtures::settings("limited");
    limited.tenant_limits = TenantLimits::parse("100").map_err(anyhow::Error::msg)?;
    let (limited_w, _) = fixtures::worker_with_clients(env, limited, handlers(), &clients)?;
    let plain_def = fixtures::http_definition(&hook.url("/run"));
    let forbid_def = plain_def.clone().with_concurrency(ConcurrencyPolicy::Forbid);
    // WHEN ten executions run plain, ten of a FORBID job, ten of a tenant with a limit
    let plain = worker_usage(env, &meter, &plain_w, "plain", &plain_def).await?;
    let forbid = worker_usage(env, &meter, &plain_w, "forbid", &forbid_def).await?;
    let gated = worker_usage(env, &meter, &limited_w, "gated", &plain_def).await?;
    Ok(json!({
        "measuredWith": "cargo test -p sundial-tests --test unit_costs (SUNDIAL_BLESS=1 rewrites)",
        "executions": N,
        "slot": extra(&plain, &forbid),
        "tenantGate": extra(&plain, &gated),
        "plainWorker": { "writesByKind": per_execution(&plain.writes_by_kind, N as f64),
                         "readsByKind": per_execution(&plain.reads_by_kind, N as f64) },
        "executionItemBytes": execution_item_bytes(env).await?,
    }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_checked_in_policy_units_are_what_the_code_spends() -> anyhow::Result<()> {
    // GIVEN a metered worker on fresh tables
    let env = TestEnv::new("units-pol").await?;
    // WHEN it runs plain, FORBID and tenant-limited executions
    let got = measure_policies(&env).await?;
    env.cleanup().await;
    let path = repo_file("docs/bench/policy-units.json");
    if std::env::var("SUNDIAL_BLESS").is_ok_and(|v| v == "1") {
        std::fs::write(&path, serde_json::to_string_pretty(&got)? + "\n")?;
        return Ok(());
    }
    // THEN the units match the checked-in document exactly, and the item size within 5 %
    let want: Value = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
    for key in ["slot", "tenantGate", "plainWorker"] {
        assert_eq!(got[key], want[key], "{key}: measured {} vs checked in {}", got[key], want[key]);
    }
    let (g, w) = (got["executionItemBytes"].as_f64(), want["executionItemBytes"].as_f64());
    let (g, w) = (g.unwrap_or(0.0), w.unwrap_or(0.0));
    assert!((g - w).abs() <= 0.05 * w, "execution item {g} bytes, checked in {w}");
    Ok(())
}

/// The tick's units per execution by kind for ten jobs of `class`.
async fn tick_units(class: &str) -> anyhow::Result<BTreeMap<String, f64>> {
    let env = TestEnv::with(&format!("units-{class}"), &["default"], 4).await?;
    let due = at("2026-11-30T12:01:00Z");
    let (expr, due_class) = match class {
        "every-minute" => ("0 * * * * *", DueClass::Every),
        "bucket" => ("0 1 12 30 * *", DueClass::Bucket),
        _ => (
            "0 1 12 * * *",
            DueClass::Daily(sundial_model::keys::minute_of_day(sundial_model::keys::minute_of(due))),
        ),
    };
    for i in 0..N {
        let def = definition(expr, "UTC", MisfirePolicy::FireOnce);
        let job = Job::new(&env.cfg, "acme", &format!("j{i}"), def, at("2026-11-30T11:59:00Z"))?;
        let job = Job { due_class, next_fire_at: Some(due), ..job };
        sundial_store::jobs::put_new_job(&env.clients.ddb, &env.cfg, &job).await?;
    }
    let meter = Meter::new(&env.cfg);
    let ctx = metered_ctx(&env, &meter, "tick");
    let budget = tokio::sync::Mutex::new(CatchUpBudget::new(100, 100));
    let r = scan_shards(&ctx, 0..4, at("2026-11-30T12:00:05Z"), &budget, &ScanOptions::default()).await?;
    env.cleanup().await;
    anyhow::ensure!(r.created == N as u64, "{class}: {} created", r.created);
    let u = meter.snapshot().remove("tick").unwrap_or_default();
    // (watermarks are per shard, not per execution: the model adds them from the shard count)
    let mut by_kind = per_execution(&u.writes_by_kind, N as f64);
    by_kind.remove("watermark");
    Ok(by_kind)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_checked_in_trigger_bench_writes_are_what_the_tick_spends() -> anyhow::Result<()> {
    for class in ["every-minute", "daily", "bucket"] {
        // GIVEN ten jobs of one due class WHEN one tick puts their executions
        let got = tick_units(class).await?;
        // THEN the tick's write units per execution by kind are the bench document's
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(repo_file(&format!(
            "docs/bench/trigger-10000-{class}.json"
        )))?)?;
        let mut want: BTreeMap<String, f64> =
            serde_json::from_value(doc["perExecution"]["tick"]["writesByKind"].clone())?;
        want.remove("watermark");
        assert_eq!(got, want, "{class}: measured tick writes vs docs/bench/trigger-10000-{class}.json");
    }
    Ok(())
}
