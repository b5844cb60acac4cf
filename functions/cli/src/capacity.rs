//! `sundial capacity`: the capacity model (`sundial-capacity`) fed by measured costs.
//!
//! ```text
//! sundial capacity                                   # both canned scenarios, fitted, markdown
//! sundial capacity --scenario billion --format json
//! sundial capacity --scenario my-load.json --no-fit
//! sundial capacity --explain                         # where each cent of a fire goes
//! ```
//! The per-fire costs come from the bench's own measurements (`bench-trigger --out`, one JSON
//! per due class, the metering interceptor's write and read units by item kind): by default
//! `docs/bench/trigger-10000-{every-minute,daily,bucket}.json` under the repository root, and
//! `docs/bench/policy-units.json` (the slot, the tenant gate, the stored execution size), which
//! `tests/tests/unit_costs.rs` measures and holds to the code (docs/capacity.md).

use anyhow::{bail, Context};
use std::path::{Path, PathBuf};
use sundial_capacity::{self as capacity, Costs, ItemKind, Limits, Prices, Scenario};

/// Arguments of `sundial capacity`.
#[derive(clap::Args)]
pub(crate) struct CapacityArgs {
    /// A canned scenario (`eventbridge-default`, `billion`) or a scenario JSON file; repeat for
    /// several columns [default: both canned scenarios].
    #[arg(long)]
    scenario: Vec<String>,
    /// Directory of the bench JSON files `trigger-10000-{every-minute,daily,bucket}.json`
    /// [default: docs/bench under the repository root].
    #[arg(long)]
    costs_dir: Option<PathBuf>,
    /// Report the scenarios as given, without raising the knobs (open parts, tenant gate
    /// shards, executions tables, shards per scan) to clear the limits.
    #[arg(long)]
    no_fit: bool,
    /// Keep the scenario's `executionItemBytes` instead of the measured size of a finished
    /// execution (`docs/bench/policy-units.json`).
    #[arg(long)]
    keep_item_size: bool,
    /// Print where each cent of a fire goes: units per fire by class, policy and item kind, and
    /// their price in each billing mode.
    #[arg(long)]
    explain: bool,
    /// markdown | json
    #[arg(long, default_value = "markdown")]
    format: String,
}

fn repo_root() -> PathBuf {
    sundial_core::config::LocalRunSettings::from_env()
        .root
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.."))
}

fn read(dir: &Path, class: &str) -> anyhow::Result<String> {
    let p = dir.join(format!("trigger-10000-{class}.json"));
    std::fs::read_to_string(&p).with_context(|| format!("--costs-dir: reading {}", p.display()))
}

fn scenario(name: &str) -> anyhow::Result<Scenario> {
    if let Some(s) = capacity::scenario_by_name(name) {
        return Ok(s);
    }
    let text = std::fs::read_to_string(name).with_context(|| {
        format!("--scenario: {name:?} is neither {:?} nor a readable JSON file", capacity::scenario_names())
    })?;
    Scenario::from_json(&text).map_err(|e| anyhow::anyhow!("--scenario {name}: {e}"))
}

/// The trigger benches run jobs without a concurrency policy and tenants without a limit, so
/// their documents hold no slot or gate traffic. `docs/bench/policy-units.json` does: what a
/// FORBID job's slot and a limited tenant's gate add per execution, and the stored size of a
/// finished execution, measured by `tests/tests/unit_costs.rs` (which fails when the file and
/// the code disagree). The model scales the slot and gate by `forbidShare` and `tenantLimits`.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct PolicyUnits {
    slot: Units,
    tenant_gate: Units,
    execution_item_bytes: f64,
}

#[derive(serde::Deserialize)]
struct Units {
    writes: f64,
    reads: f64,
}

fn read_policy_units(dir: &Path) -> anyhow::Result<PolicyUnits> {
    let p = dir.join("policy-units.json");
    let text =
        std::fs::read_to_string(&p).with_context(|| format!("--costs-dir: reading {}", p.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{}", p.display()))
}

fn with_policy_costs(costs: &mut Costs, p: &PolicyUnits) {
    for class in [&mut costs.every_minute, &mut costs.daily, &mut costs.bucket] {
        for (kind, u) in [(ItemKind::Slot, &p.slot), (ItemKind::TenantGate, &p.tenant_gate)] {
            class.writes.insert(kind.key().to_string(), u.writes);
            class.reads.insert(kind.key().to_string(), u.reads);
        }
    }
}

/// The code splits a limited tenant's gate into ⌈limit ÷ 20⌉ items
/// (`execution::policy::gate_shards`), and a tenant's limit is at least what it runs at once:
/// its peak fire rate × the mean run time. The scenario gets at least that many gate shards.
fn with_code_gate_shards(mut s: Scenario) -> Scenario {
    let running = s.peak_fires_per_sec * s.top_tenant_share * s.worker_mean_duration_ms / 1000.0;
    let code =
        sundial_core::execution::policy::gate_shards(running.ceil().clamp(1.0, f64::from(u32::MAX)) as u32);
    s.tenant_gate_shards = s.tenant_gate_shards.max(code);
    s
}

pub(crate) fn run(args: CapacityArgs) -> anyhow::Result<()> {
    if !["markdown", "json"].contains(&args.format.as_str()) {
        bail!("--format: expected markdown or json, got {:?}", args.format);
    }
    let dir = args.costs_dir.clone().unwrap_or_else(|| repo_root().join("docs/bench"));
    let mut costs =
        Costs::from_bench(&read(&dir, "every-minute")?, &read(&dir, "daily")?, &read(&dir, "bucket")?)
            .map_err(|e| anyhow::anyhow!("--costs-dir {}: {e}", dir.display()))?;
    let policy = read_policy_units(&dir)?;
    with_policy_costs(&mut costs, &policy);
    let names: Vec<String> = if args.scenario.is_empty() {
        capacity::scenario_names().iter().map(|s| s.to_string()).collect()
    } else {
        args.scenario.clone()
    };
    let (limits, prices) = (Limits::aws_default(), Prices::us_east_1());
    let mut reports = Vec::new();
    let mut before = Vec::new();
    for name in &names {
        let mut s = with_code_gate_shards(scenario(name)?);
        if !args.keep_item_size {
            s.execution_item_bytes = policy.execution_item_bytes;
        }
        let given = capacity::model(&s, &costs, &limits, &prices);
        if args.no_fit {
            reports.push(given);
        } else {
            before.push((s.name.clone(), given.violations()));
            reports.push(capacity::fit(&s, &costs, &limits, &prices).1);
        }
    }
    if args.format == "json" {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "costs": costs, "reports": reports }))?
        );
        return Ok(());
    }
    println!("{}", capacity::render_markdown(&reports));
    for r in &reports {
        let at = capacity::crossover_schedules(&r.scenario, &costs, &limits, &prices);
        let at = at.map_or("never, on this profile".to_string(), |n| format!("from {n} schedules"));
        println!(
            "Provisioned (the schedule-driven plan) is cheaper than on-demand for {}: {at}",
            r.scenario.name
        );
    }
    if args.explain {
        for r in &reports {
            println!("\n{}", capacity::render_explain(&costs, r, &prices));
            // The recommended configuration, when it is tenant cells the scenario does not have.
            if r.recommended().cell_pools.is_some() && !r.scenario.tenant_cells {
                let cells = Scenario {
                    tenant_cells: true,
                    name: format!("{}, tenant cells", r.scenario.name),
                    ..r.scenario.clone()
                };
                let cr = capacity::model(&cells, &costs, &limits, &prices);
                println!("\n{}", capacity::render_explain(&costs, &cr, &prices));
            }
        }
    }
    for (name, violations) in before.iter().filter(|(_, v)| !v.is_empty()) {
        println!("\nBefore fitting, {name} passed these limits (cleared above by the knobs):");
        for v in violations {
            println!("- {}: {}", v.what, v.fix);
        }
    }
    Ok(())
}
