//! Rendering reports side by side as one markdown table, followed by their violations.

use std::fmt::Write as _;

use crate::numbers::{money, num, pct};
use crate::report::{BillingMode, PartitionKind, Report};

/// One markdown table with a column per report, followed by the list of violations.
pub fn render_markdown(reports: &[Report]) -> String {
    let mut out = String::new();
    let names: Vec<String> = reports.iter().map(|r| cell(&r.scenario.name)).collect();
    let _ = writeln!(out, "| | {} |", names.join(" | "));
    let _ = writeln!(out, "|---|{}", "---:|".repeat(reports.len()));
    for (label, cells) in rows(reports) {
        let _ = writeln!(out, "| {label} | {} |", cells.join(" | "));
    }
    out.push_str("\nViolations:\n\n");
    for r in reports {
        out.push_str(&violation_lines(r));
    }
    out
}

fn violation_lines(r: &Report) -> String {
    let violations = r.violations();
    if violations.is_empty() {
        return format!("- {}: none\n", r.scenario.name);
    }
    violations
        .iter()
        .map(|v| {
            let raise = if v.knob.is_none() { " [needs a quota raise or design change]" } else { "" };
            format!("- {}: {} → {}{raise}\n", r.scenario.name, v.what, v.fix)
        })
        .collect()
}

/// Text safe inside a table cell.
fn cell(text: &str) -> String {
    text.replace('|', "/")
}

type Row = (String, Vec<String>);

fn row(label: &str, reports: &[Report], value: impl Fn(&Report) -> String) -> Row {
    (cell(label), reports.iter().map(value).collect())
}

fn rows(reports: &[Report]) -> Vec<Row> {
    let mut rows = scenario_rows(reports);
    rows.extend(table_rows(reports));
    rows.extend(PartitionKind::ALL.into_iter().map(|kind| partition_row(reports, kind)));
    rows.extend(lambda_rows(reports));
    rows.extend(cost_rows(reports));
    rows.extend(provisioned_rows(reports));
    rows
}

fn provisioned_rows(reports: &[Report]) -> Vec<Row> {
    let p = |r: &Report| r.provisioned.clone();
    vec![
        row("provisioned: jobs table WCU / RCU mean (peak)", reports, |r| {
            let j = p(r).jobs;
            format!(
                "{} / {} ({} / {})",
                num(j.mean_wcu),
                num(j.mean_rcu),
                num(j.peak_wcu as f64),
                num(j.peak_rcu as f64)
            )
        }),
        row("provisioned: each executions table WCU / RCU mean (peak)", reports, |r| {
            let e = p(r).executions;
            format!(
                "{} / {} ({} / {})",
                num(e.mean_wcu),
                num(e.mean_rcu),
                num(e.peak_wcu as f64),
                num(e.peak_rcu as f64)
            )
        }),
        row("provisioned: decreases a day, jobs / executions (≤ 27)", reports, |r| {
            format!("{} / {}", p(r).jobs.decreases_per_day, p(r).executions.decreases_per_day)
        }),
        row("provisioned: minutes a day short of demand", reports, |r| {
            num(f64::from(p(r).jobs.short_minutes + p(r).executions.short_minutes))
        }),
        row("provisioned: write utilisation", reports, |r| pct(p(r).write_utilisation)),
        row("provisioned: DynamoDB writes $/month", reports, |r| money(p(r).dynamo_writes)),
        row("provisioned: DynamoDB reads $/month", reports, |r| money(p(r).dynamo_reads)),
        row("provisioned: Sundial total $/month", reports, |r| money(p(r).total)),
        row("provisioned: $ per million fires", reports, |r| money(p(r).per_million_fires)),
        row("provisioned / EventBridge Scheduler", reports, |r| format!("{:.2}×", p(r).ratio_to_eventbridge)),
        row("reserved base, 1 y / 3 y: WCU / RCU reserved", reports, |r| {
            let terms: Vec<String> = p(r)
                .reserved
                .iter()
                .map(|t| format!("{} / {}", num(t.reserved_wcu as f64), num(t.reserved_rcu as f64)))
                .collect();
            terms.join("; ")
        }),
        row("reserved base, 1 y / 3 y: $ per million fires", reports, |r| {
            let terms: Vec<String> = p(r)
                .reserved
                .iter()
                .map(|t| format!("{} ({:.2}×)", money(t.per_million_fires), t.ratio_to_eventbridge))
                .collect();
            terms.join("; ")
        }),
        row("with tenant cells: pools, cheapest mode, $ per million fires", reports, |r| {
            match &r.with_cells {
                Some(c) => format!(
                    "{} pools, {}, {} ({:.2}×)",
                    num(c.pools as f64),
                    mode_label(c.mode),
                    money(c.per_million_fires),
                    c.ratio_to_eventbridge
                ),
                None => match r.scenario.cell_pools() {
                    Some(n) => format!("on ({} pools)", num(n as f64)),
                    None => "not needed (no tenant's gate is written)".to_string(),
                },
            }
        }),
        row("cheapest: mode, $ per million fires", reports, |r| {
            let rec = r.recommended();
            let cells =
                rec.cell_pools.map_or(String::new(), |n| format!(", tenant cells ({} pools)", num(n as f64)));
            format!("{}{cells}, {}", mode_label(rec.mode), money(rec.per_million_fires))
        }),
    ]
}

fn mode_label(mode: BillingMode) -> String {
    match mode {
        BillingMode::OnDemand => "on-demand".to_string(),
        BillingMode::Provisioned => "provisioned".to_string(),
        BillingMode::Reserved { years } => format!("provisioned, base reserved {years} y"),
    }
}

fn scenario_rows(reports: &[Report]) -> Vec<Row> {
    vec![
        row("schedules", reports, |r| num(r.scenario.schedules as f64)),
        row("peak fires/s", reports, |r| num(r.scenario.peak_fires_per_sec)),
        row("mean fires/s", reports, |r| num(r.scenario.mean_fires_per_sec)),
        row("fires in the peak minute", reports, |r| num(r.spike.fires)),
        row("shards", reports, |r| num(f64::from(r.scenario.shards))),
        row("shards per scan", reports, |r| num(f64::from(r.scenario.shards_per_scan))),
        row("open parts (per executions table)", reports, |r| num(f64::from(r.scenario.open_parts))),
        row("executions tables (min needed)", reports, |r| {
            format!("{} ({})", r.scenario.executions_tables, r.min_executions_tables)
        }),
        row("tenant gate shards", reports, |r| num(f64::from(r.scenario.tenant_gate_shards))),
        row("worker capacity (executions at once: max concurrency × batch)", reports, |r| {
            num(r.scenario.worker_capacity())
        }),
        row("tenant running gate (share of fires that write it)", reports, |r| {
            let (limit, capacity) = (r.scenario.tenant_max_running, r.scenario.worker_capacity());
            match r.scenario.tenant_limits {
                false => "off (no tenant limits)".to_string(),
                true if r.scenario.tenant_cells => {
                    format!(
                        "0% (tenant cells: each tenant's pools run at most its limit of {})",
                        num(f64::from(limit))
                    )
                }
                true => format!(
                    "{} (limit {}, largest tenant {}; capacity {})",
                    pct(r.scenario.gate_share()),
                    num(f64::from(limit)),
                    num(f64::from(r.scenario.top_tenant_limit())),
                    num(capacity)
                ),
            }
        }),
        row("largest tenant running at the peak", reports, |r| num(r.scenario.top_tenant_running())),
    ]
}

fn with_pct(value: f64, of_limit: f64) -> String {
    format!("{} ({})", num(value), pct(of_limit))
}

fn table_rows(reports: &[Report]) -> Vec<Row> {
    vec![
        row("jobs table WCU/s", reports, |r| with_pct(r.jobs_table.peak_wcu, r.jobs_table.wcu_of_limit)),
        row("jobs table RCU/s", reports, |r| with_pct(r.jobs_table.peak_rcu, r.jobs_table.rcu_of_limit)),
        row("each executions table WCU/s", reports, |r| {
            with_pct(r.executions_table.peak_wcu, r.executions_table.wcu_of_limit)
        }),
        row("each executions table RCU/s", reports, |r| {
            with_pct(r.executions_table.peak_rcu, r.executions_table.rcu_of_limit)
        }),
    ]
}

fn partition_row(reports: &[Report], kind: PartitionKind) -> Row {
    let unit = reports.iter().find_map(|r| r.partition(kind)).map_or("", |p| p.unit.label());
    let label = format!("hottest {} {unit}/s", kind.label());
    row(&label, reports, |r| match r.partition(kind) {
        Some(p) => with_pct(p.peak_per_sec, p.of_limit),
        None => "-".to_string(),
    })
}

fn lambda_rows(reports: &[Report]) -> Vec<Row> {
    vec![
        row("scan invocations/min", reports, |r| num(f64::from(r.lambda.scan_invocations_per_minute))),
        row("scan seconds per invocation (peak minute)", reports, |r| {
            num(r.lambda.scan_seconds_per_invocation)
        }),
        row("scan concurrency mean / burst", reports, |r| {
            format!("{} / {}", num(r.lambda.scan_concurrency), num(r.lambda.scan_burst_concurrency))
        }),
        row("worker concurrency", reports, |r| num(r.lambda.worker_concurrency)),
        row("Lambda concurrency total", reports, |r| {
            with_pct(r.lambda.total_concurrency, r.lambda.total_concurrency / r.lambda.account_limit)
        }),
        row("SQS requests/s at peak (no limit)", reports, |r| num(r.sqs.peak_requests_per_sec)),
        row("SQS requests/month", reports, |r| num(r.sqs.requests_per_month)),
    ]
}

fn cost_rows(reports: &[Report]) -> Vec<Row> {
    vec![
        row("fires/month", reports, |r| num(r.cost.fires)),
        row("DynamoDB writes $/month", reports, |r| money(r.cost.dynamo_writes)),
        row("DynamoDB reads $/month", reports, |r| money(r.cost.dynamo_reads)),
        row("DynamoDB storage $/month", reports, |r| {
            format!("{} ({} GB)", money(r.cost.dynamo_storage), num(r.cost.storage_gb))
        }),
        row("SQS $/month", reports, |r| money(r.cost.sqs)),
        row("Lambda requests $/month", reports, |r| money(r.cost.lambda_requests)),
        row("Lambda GB-s $/month", reports, |r| money(r.cost.lambda_compute)),
        row("on-demand: Sundial total $/month", reports, |r| money(r.cost.total)),
        row("on-demand: $ per million fires", reports, |r| money(r.cost.per_million_fires)),
        row("EventBridge Scheduler $/month", reports, |r| money(r.cost.eventbridge_scheduler)),
        row("on-demand / EventBridge Scheduler", reports, |r| format!("{:.2}×", r.cost.ratio_to_eventbridge)),
    ]
}
