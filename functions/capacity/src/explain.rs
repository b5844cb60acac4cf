//! `sundial capacity --explain`: where each cent of a fire goes. Units per fire by class, policy
//! and item kind, as measured, then what they cost per million fires in each billing mode.

use std::fmt::Write as _;

use crate::costs::{ClassCost, Costs, ItemKind};
use crate::numbers::money;
use crate::prices::Prices;
use crate::report::Report;
use crate::{BYTES_PER_GB, ITEM_OVERHEAD_BYTES};

/// One line of the breakdown: a unit, its amount per fire in each class, and its price per unit
/// on demand and provisioned (at the plan's utilisation).
struct Line {
    label: String,
    per_class: [f64; 3],
    mixed: f64,
    on_demand: f64,
    provisioned: f64,
    reserved: f64,
}

fn class_units(c: &Costs, f: impl Fn(&ClassCost) -> f64) -> [f64; 3] {
    [f(&c.every_minute), f(&c.daily), f(&c.bucket)]
}

/// Per-fire units of each class and the typical mix, and their price per million fires, for
/// the scenario of `r`.
pub fn render_explain(c: &Costs, r: &Report, prices: &Prices) -> String {
    let s = &r.scenario;
    let mix = [s.class_mix.every_minute, s.class_mix.daily, s.class_mix.bucket];
    let hour_to_unit = 1e6 / 3_600.0;
    let p = &r.provisioned;
    // The cheapest reservation's capacity bill against the plan's: the blended unit price.
    let term = p.reserved.iter().min_by(|a, b| a.total.total_cmp(&b.total));
    let blend = |reserved: f64, plain: f64| if plain > 0.0 { reserved / plain } else { 1.0 };
    let (kw, kr) = term.map_or((1.0, 1.0), |t| {
        (blend(t.dynamo_writes, p.dynamo_writes), blend(t.dynamo_reads, p.dynamo_reads))
    });
    let wu_prov = prices.dynamo_wcu_hour * hour_to_unit / p.write_utilisation.max(1e-9);
    let ru_prov = prices.dynamo_rcu_hour * hour_to_unit / p.read_utilisation.max(1e-9);
    let wu = (prices.dynamo_write_per_million, wu_prov, wu_prov * kw);
    let ru = (prices.dynamo_read_per_million, ru_prov, ru_prov * kr);
    let mut lines = Vec::new();
    for (kind, share) in ItemKind::ALL.into_iter().map(|k| (k, applied(s, k))) {
        for (what, price, get) in [
            ("WU", wu, ClassCost::write as fn(&ClassCost, ItemKind) -> f64),
            ("RU", ru, ClassCost::read as fn(&ClassCost, ItemKind) -> f64),
        ] {
            let per_class = class_units(c, |cc| get(cc, kind));
            if per_class.iter().all(|v| *v == 0.0) {
                continue;
            }
            let label = format!("{what} {}{}", kind.key(), policy_note(kind, share));
            lines.push(line(label, per_class, mix, share, price));
        }
    }
    let watermark = f64::from(s.shards.max(1)) / 60.0 / s.mean_fires_per_sec.max(f64::MIN_POSITIVE);
    lines.push(line(format!("WU watermark ({} shards, 1 a tick)", s.shards), [watermark; 3], mix, 1.0, wu));
    let sqs = (prices.sqs_per_million, prices.sqs_per_million, prices.sqs_per_million);
    lines.push(line("SQS requests".into(), class_units(c, |cc| cc.sqs_requests), mix, 1.0, sqs));
    let batch = f64::from(s.worker_batch_size.max(1));
    let lambda = (
        prices.lambda_per_million_requests,
        prices.lambda_per_million_requests,
        prices.lambda_per_million_requests,
    );
    lines.push(line(format!("Lambda worker requests (batch {batch})"), [1.0 / batch; 3], mix, 1.0, lambda));
    let gbs = s.worker_mean_duration_ms / 1000.0 * s.worker_memory_mb / 1024.0 / batch;
    let gbs_unit = prices.lambda_per_gb_second * 1e6;
    let gbs_price = (gbs_unit, gbs_unit, gbs_unit);
    lines.push(line(
        format!("Lambda worker GB-s ({} ms, {} MB)", s.worker_mean_duration_ms, s.worker_memory_mb),
        [gbs; 3],
        mix,
        1.0,
        gbs_price,
    ));
    let bytes = s.execution_item_bytes + ITEM_OVERHEAD_BYTES;
    let gb_months = bytes / BYTES_PER_GB * s.stored_days() / 30.0;
    let store = prices.dynamo_storage_per_gb_month * 1e6;
    let store = (store, store, store);
    lines.push(line(
        format!(
            "GB-months stored ({bytes} B × {:.2} days: {} succeeded, {} × {} audit)",
            s.stored_days(),
            s.retention_days,
            s.audit_share,
            s.audit_retention_days
        ),
        [gb_months; 3],
        mix,
        1.0,
        store,
    ));
    render(&s.name, &lines, r)
}

fn applied(s: &crate::Scenario, kind: ItemKind) -> f64 {
    match kind {
        ItemKind::Slot => s.forbid_share,
        ItemKind::TenantGate => s.gate_share(),
        ItemKind::Watermark => 0.0,
        _ => 1.0,
    }
}

fn policy_note(kind: ItemKind, share: f64) -> String {
    match kind {
        ItemKind::Slot => format!(" (FORBID/SERIALIZE slot, × {share} of fires)"),
        ItemKind::TenantGate => format!(" (tenant running gate, × {share})"),
        ItemKind::Watermark => " (per fire of the bench; modelled per shard below)".to_string(),
        _ => String::new(),
    }
}

fn line(label: String, per_class: [f64; 3], mix: [f64; 3], share: f64, price: (f64, f64, f64)) -> Line {
    let mixed = share * per_class.iter().zip(mix).map(|(u, m)| u * m).sum::<f64>();
    Line {
        label,
        per_class,
        mixed,
        on_demand: mixed * price.0,
        provisioned: mixed * price.1,
        reserved: mixed * price.2,
    }
}

fn render(name: &str, lines: &[Line], r: &Report) -> String {
    let mut out = format!(
        "Per fire, {name} (write utilisation {:.0} %, read {:.0} % under the plan):\n\n",
        r.provisioned.write_utilisation * 100.0,
        r.provisioned.read_utilisation * 100.0
    );
    let term = r.provisioned.reserved.iter().min_by(|a, b| a.total.total_cmp(&b.total));
    let reserved =
        term.map_or("no reservation priced".to_string(), |t| format!("base reserved {} y", t.term_years));
    let _ = writeln!(
        out,
        "| unit | every-minute | daily | bucket | typical mix | $/M fires on-demand | $/M fires provisioned | $/M fires provisioned, {reserved} |"
    );
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|\n");
    let (mut od, mut pr, mut rs) = (0.0, 0.0, 0.0);
    for l in lines {
        let [a, b, c] = l.per_class;
        let _ = writeln!(
            out,
            "| {} | {a:.4} | {b:.4} | {c:.4} | {:.4} | {} | {} | {} |",
            l.label,
            l.mixed,
            money(l.on_demand),
            money(l.provisioned),
            money(l.reserved)
        );
        od += l.on_demand;
        pr += l.provisioned;
        rs += l.reserved;
    }
    let _ = writeln!(
        out,
        "| per-fire total (without ticks and scans) | | | | | {} | {} | {} |",
        money(od),
        money(pr),
        money(rs)
    );
    out
}
