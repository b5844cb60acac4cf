//! `sundial capacity`: the capacity model (`sundial_core::capacity`) fed by measured costs.
//!
//! ```text
//! sundial capacity                                   # both canned scenarios, fitted, markdown
//! sundial capacity --scenario billion --format json
//! sundial capacity --scenario my-load.json --no-fit
//! ```
//! The per-fire costs come from the bench's own measurements (`bench-trigger --out`, one JSON
//! per due class, the metering interceptor's write and read units by item kind): by default
//! `docs/bench/trigger-10000-{every-minute,daily,bucket}.json` under the repository root.

use anyhow::{bail, Context};
use std::path::{Path, PathBuf};
use sundial_core::capacity::{self, Costs, Limits, Prices, Scenario};

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

pub(crate) fn run(args: CapacityArgs) -> anyhow::Result<()> {
    if !["markdown", "json"].contains(&args.format.as_str()) {
        bail!("--format: expected markdown or json, got {:?}", args.format);
    }
    let dir = args.costs_dir.clone().unwrap_or_else(|| repo_root().join("docs/bench"));
    let costs =
        Costs::from_bench(&read(&dir, "every-minute")?, &read(&dir, "daily")?, &read(&dir, "bucket")?)
            .map_err(|e| anyhow::anyhow!("--costs-dir {}: {e}", dir.display()))?;
    let names: Vec<String> = if args.scenario.is_empty() {
        capacity::scenario_names().iter().map(|s| s.to_string()).collect()
    } else {
        args.scenario.clone()
    };
    let (limits, prices) = (Limits::aws_default(), Prices::us_east_1());
    let mut reports = Vec::new();
    let mut before = Vec::new();
    for name in &names {
        let s = scenario(name)?;
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
    for (name, violations) in before.iter().filter(|(_, v)| !v.is_empty()) {
        println!("\nBefore fitting, {name} passed these limits (cleared above by the knobs):");
        for v in violations {
            println!("- {}: {}", v.what, v.fix);
        }
    }
    Ok(())
}
