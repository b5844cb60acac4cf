//! Reading the documents the bench binary writes (one per trigger class) into [`ClassCost`]s,
//! and the three of them into [`Costs`].

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::costs::{ClassCost, Costs, ItemKind};
use crate::validate::check_non_negative;

/// One document written by the bench binary (only the fields the model uses).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BenchDocument {
    per_execution: BenchPhases,
}

/// The two phases of one execution the bench meters.
#[derive(Deserialize)]
struct BenchPhases {
    tick: BenchPhase,
    worker: BenchPhase,
    /// The verification pass's re-read of every-minute and daily fires (absent in older
    /// documents: counted as nothing).
    #[serde(default)]
    verify: Option<BenchPhase>,
}

/// Units per execution of one phase; every key is optional (present only when nonzero).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BenchPhase {
    #[serde(default)]
    writes_by_kind: BTreeMap<String, f64>,
    #[serde(default)]
    reads_by_kind: BTreeMap<String, f64>,
    #[serde(default)]
    sqs_requests: f64,
    #[serde(default)]
    lambda_invokes: f64,
}

// In this file rather than costs.rs: the reading builds on the costs' types, so costs.rs
// calling it would make the two files import each other.
impl Costs {
    /// Builds the three classes from the JSON documents the bench binary writes, one per class:
    /// `{"jobs": n, "perExecution": {"tick": {...}, "worker": {...}}}`, where each phase has
    /// optional `writesByKind`, `readsByKind` (units per execution), `sqsRequests` and
    /// `lambdaInvokes`; other fields (`writeUnits`, `requests`, ...) are ignored.
    ///
    /// Units are summed over tick and worker and attributed with [`ItemKind::from_bench_key`]
    /// (several keys landing on `other` add up); kinds that sum to 0 are left out.
    /// `sqs_requests` is tick + worker. `lambda_invokes` is tick + worker as measured but never
    /// used by the model, which takes `1 / worker_batch_size`. The `watermark` kind is kept for
    /// reference but ignored by the model, which adds `shards / 60` watermark writes itself.
    pub fn from_bench(every_minute: &str, daily: &str, bucket: &str) -> Result<Costs, String> {
        Ok(Costs {
            every_minute: class_from_bench("everyMinute", every_minute)?,
            daily: class_from_bench("daily", daily)?,
            bucket: class_from_bench("bucket", bucket)?,
        })
    }
}

/// One class's costs from its bench document: tick + worker (+ verify), kinds mapped, then
/// validated.
pub(crate) fn class_from_bench(class: &str, json: &str) -> Result<ClassCost, String> {
    let doc: BenchDocument = serde_json::from_str(json).map_err(|e| format!("{class} bench JSON: {e}"))?;
    let mut phases = vec![("tick", &doc.per_execution.tick), ("worker", &doc.per_execution.worker)];
    if let Some(v) = &doc.per_execution.verify {
        phases.push(("verify", v));
    }
    let (mut writes, mut reads) = (BTreeMap::new(), BTreeMap::new());
    // The tick's units are spent the minute before the fire (it puts a minute ahead).
    let (mut ahead_writes, mut ahead_reads) = (BTreeMap::new(), BTreeMap::new());
    let tick = &doc.per_execution.tick;
    add_bench_units(
        &mut ahead_writes,
        &tick.writes_by_kind,
        &format!("{class}.perExecution.tick.writesByKind"),
    )?;
    add_bench_units(
        &mut ahead_reads,
        &tick.reads_by_kind,
        &format!("{class}.perExecution.tick.readsByKind"),
    )?;
    let (mut sqs_requests, mut lambda_invokes) = (0.0, 0.0);
    for (name, phase) in phases {
        let at = format!("{class}.perExecution.{name}");
        add_bench_units(&mut writes, &phase.writes_by_kind, &format!("{at}.writesByKind"))?;
        add_bench_units(&mut reads, &phase.reads_by_kind, &format!("{at}.readsByKind"))?;
        check_non_negative(&format!("{at}.sqsRequests"), phase.sqs_requests)?;
        check_non_negative(&format!("{at}.lambdaInvokes"), phase.lambda_invokes)?;
        sqs_requests += phase.sqs_requests;
        lambda_invokes += phase.lambda_invokes;
    }
    for m in [&mut writes, &mut reads, &mut ahead_writes, &mut ahead_reads] {
        m.retain(|_, v| *v != 0.0);
    }
    let cost = ClassCost { writes, reads, ahead_writes, ahead_reads, sqs_requests, lambda_invokes };
    cost.validate(class)?;
    Ok(cost)
}

/// Adds one phase's units, keyed by bench kind, onto `into`, keyed by [`ItemKind::key`].
fn add_bench_units(
    into: &mut BTreeMap<String, f64>,
    by_kind: &BTreeMap<String, f64>,
    at: &str,
) -> Result<(), String> {
    for (key, value) in by_kind {
        check_non_negative(&format!("{at}.{key}"), *value)?;
        *into.entry(ItemKind::from_bench_key(key).key().to_string()).or_insert(0.0) += value;
    }
    Ok(())
}
