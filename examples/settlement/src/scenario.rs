//! The post-mortem, replayed: one trigger, a timeout failover, a crash, a re-run, a stale
//! worker waking up.
//!
//! ```text
//! A (token 1) settles merchants 0.., stops after crediting merchant P (a long GC pause)
//! Sundial's timeout fails the execution over: B (token 2) runs the same settlement from 0,
//!   takes P over from A, stops after crediting merchant K and is killed (SIGKILL or abort)
//! Sundial retries: C (token 3) runs from 0, takes over what B left SETTLING, finishes,
//!   reconciles, sets the done-marker
//! A wakes up and carries on with its stale token 1
//! The trigger is delivered once more: D (token 4) finds the done-marker and exits
//! ```
//!
//! Then [`audit`] looks at every table and at the account service's ledger. With every layer
//! on, each merchant is settled once, credited once, and reconciliation is clean; with a layer
//! off, [`Audit`] lists what was booked twice.

use crate::account_service::{AccountClient, AccountService};
use crate::settle::{
    amount_due, merchant_id, open_day, scan_all, settle_date_for, Gate, Layers, RunSummary, Settlement,
    Tables, SETTLED,
};
use anyhow::{anyhow, bail, Context, Result};
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use chrono::{DateTime, TimeZone, Utc};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use sundial_idempotency::outbound::Outbound;
use sundial_idempotency::reconcile::Report;
use sundial_idempotency::ExecutionContext;
use tokio::io::AsyncBufReadExt;

/// The execution every attempt belongs to: one trigger of the 02:00 Asia/Shanghai job.
pub const EXECUTION_ID: &str = "settlement-daily@2026-11-30T18:00:00Z";

/// The scheduled instant of that trigger: 2026-12-01 02:00 in Shanghai, settling 2026-11-30.
pub fn scheduled_at() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 30, 18, 0, 0).single().unwrap_or_default()
}

/// How worker B dies.
#[derive(Debug, Clone)]
pub enum Crash {
    /// B runs as a task in this process and is aborted (its futures dropped mid-flight).
    Abort,
    /// B runs as a child process (`exe worker ...`) and gets SIGKILL.
    Kill {
        /// This example's binary.
        exe: PathBuf,
        /// The emulator endpoint the child uses.
        endpoint: String,
    },
}

/// The scenario's knobs.
#[derive(Debug, Clone)]
pub struct ScenarioConfig {
    /// Merchants to settle.
    pub merchants: usize,
    /// Where A pauses (after crediting, before SETTLED).
    pub pause_a_at: usize,
    /// Where B dies (after crediting, before SETTLED). Must be past `pause_a_at + lanes`.
    pub crash_b_at: usize,
    /// Merchants in flight per worker.
    pub lanes: usize,
    /// Which per-item layers are on.
    pub layers: Layers,
    /// Drop every n-th account-service response after applying the credit (0: never).
    pub drop_every: u64,
    /// How B dies.
    pub crash: Crash,
}

/// Everything the scenario saw.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScenarioOutcome {
    /// A's run (it finishes after waking up, stale).
    pub a: RunSummary,
    /// The re-run after B's crash.
    pub c: RunSummary,
    /// The late duplicate delivery.
    pub d: RunSummary,
    /// Responses the account service dropped after applying.
    pub dropped_responses: u64,
    /// Wall-clock seconds of each phase: open day, A to its pause, B to its crash, C, A's rest.
    pub phase_secs: BTreeMap<&'static str, f64>,
    /// The final state.
    pub audit: Audit,
}

/// The books after the scenario.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Audit {
    /// Merchants.
    pub merchants: usize,
    /// Merchants SETTLED whose settlement was booked once (`settled_count = 1`).
    pub settled_once: usize,
    /// Merchants booked more than once on our side: (merchant, times).
    pub settled_repeatedly: Vec<(String, u64)>,
    /// Merchants not SETTLED.
    pub not_settled: Vec<String>,
    /// Sum of `paid_out_total` over merchants, and what it should be.
    pub paid_out_total: i64,
    /// The amount due over all merchants.
    pub expected_total: i64,
    /// Detail rows.
    pub detail_rows: usize,
    /// Merchants with more than one detail row.
    pub duplicate_details: Vec<String>,
    /// Credits the account service applied.
    pub credits: usize,
    /// Merchants credited more than once: (merchant, times).
    pub credited_repeatedly: Vec<(String, usize)>,
    /// Merchants never credited.
    pub never_credited: Vec<String>,
    /// Sum of applied credits.
    pub credited_total: i64,
    /// Our details against the service's ledger.
    pub reconciliation: Report,
    /// Outbound outcomes still recorded as unknown.
    pub unknown_outcomes: usize,
    /// The fencing token on the stored run report (the newest writer's).
    pub report_token: Option<u64>,
}

impl Audit {
    /// Every merchant settled once, credited once, and the books agree.
    pub fn exactly_once(&self) -> bool {
        self.settled_once == self.merchants
            && self.settled_repeatedly.is_empty()
            && self.not_settled.is_empty()
            && self.paid_out_total == self.expected_total
            && self.detail_rows == self.merchants
            && self.duplicate_details.is_empty()
            && self.credits == self.merchants
            && self.credited_repeatedly.is_empty()
            && self.never_credited.is_empty()
            && self.credited_total == self.expected_total
            && self.reconciliation.is_clean()
    }

    /// One line per kind of duplicate found (empty when there is none).
    pub fn duplicates(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.settled_repeatedly.is_empty() {
            out.push(format!(
                "{} merchants settled more than once on our books (paid_out_total {} vs {} due), e.g. {:?}",
                self.settled_repeatedly.len(),
                self.paid_out_total,
                self.expected_total,
                &self.settled_repeatedly[..self.settled_repeatedly.len().min(3)]
            ));
        }
        if !self.duplicate_details.is_empty() {
            out.push(format!(
                "{} merchants with more than one settlement detail row, e.g. {:?}",
                self.duplicate_details.len(),
                &self.duplicate_details[..self.duplicate_details.len().min(3)]
            ));
        }
        if !self.credited_repeatedly.is_empty() {
            out.push(format!(
                "{} merchants credited more than once by the account service ({} credited vs {} due), e.g. {:?}",
                self.credited_repeatedly.len(),
                self.credited_total,
                self.expected_total,
                &self.credited_repeatedly[..self.credited_repeatedly.len().min(3)]
            ));
        }
        out
    }
}

fn ctx(token: u64) -> ExecutionContext {
    ExecutionContext::new(EXECUTION_ID, token, scheduled_at())
}

/// Runs the whole story on fresh tables under `prefix` against `service`.
pub async fn run(
    ddb: &Client,
    prefix: &str,
    service: &AccountService,
    cfg: &ScenarioConfig,
    now: DateTime<Utc>,
) -> Result<ScenarioOutcome> {
    if cfg.crash_b_at < cfg.pause_a_at + cfg.lanes || cfg.crash_b_at >= cfg.merchants {
        bail!(
            "crash_b_at {} must be in [pause_a_at + lanes, merchants) = [{}, {})",
            cfg.crash_b_at,
            cfg.pause_a_at + cfg.lanes,
            cfg.merchants
        );
    }
    let n = cfg.merchants;
    let tables = Tables::with_prefix(prefix);
    let date = settle_date_for(scheduled_at());
    let mut phase = BTreeMap::new();
    let mut clock = Instant::now();
    let mut lap = |name: &'static str, phase: &mut BTreeMap<&'static str, f64>| {
        phase.insert(name, clock.elapsed().as_secs_f64());
        clock = Instant::now();
    };
    tables.ensure(ddb).await?;
    open_day(ddb, &tables, n, date, cfg.lanes).await?;
    service.faults().drop_every(cfg.drop_every);
    lap("1 open day", &mut phase);
    let job = || {
        let account = AccountClient::new(service.url(), Duration::from_secs(5));
        Settlement::new(ddb.clone(), tables.clone(), account, cfg.layers, cfg.lanes)
    };

    // A starts, and stops right after crediting merchant P: a pause long enough to time out.
    let gate_a = Gate::at(cfg.pause_a_at);
    let mut a_task = {
        let (job, gate) = (job(), gate_a.clone());
        tokio::spawn(async move { job.run(&ctx(1), n, Some(gate), now).await })
    };
    tokio::select! {
        _ = gate_a.wait_reached() => {}
        r = &mut a_task => bail!("A finished without reaching its pause point: {r:?}"),
    }
    lap("2 A until its pause", &mut phase);

    // Sundial fails the execution over to B, which dies after crediting merchant K.
    match &cfg.crash {
        Crash::Abort => {
            let gate_b = Gate::at(cfg.crash_b_at);
            let mut b_task = {
                let (job, gate) = (job(), gate_b.clone());
                tokio::spawn(async move { job.run(&ctx(2), n, Some(gate), now).await })
            };
            tokio::select! {
                _ = gate_b.wait_reached() => {}
                r = &mut b_task => bail!("B finished without reaching its crash point: {r:?}"),
            }
            // Every lane of B is dropped wherever it is, as a killed process would stop.
            b_task.abort();
            let _ = b_task.await;
        }
        Crash::Kill { exe, endpoint } => {
            let mut cmd = tokio::process::Command::new(exe);
            cmd.arg("worker")
                .args(["--prefix", prefix, "--account-url", &service.url(), "--endpoint", endpoint])
                .args(["--token", "2", "--merchants", &n.to_string(), "--lanes", &cfg.lanes.to_string()])
                .args(["--stop-at", &cfg.crash_b_at.to_string()])
                .stdout(std::process::Stdio::piped())
                .kill_on_drop(true);
            for (off, flag) in [
                (!cfg.layers.unique_constraint, "--no-unique"),
                (!cfg.layers.cas, "--no-cas"),
                (!cfg.layers.outbound_idempotency, "--no-outbound-key"),
            ] {
                if off {
                    cmd.arg(flag);
                }
            }
            let mut child = cmd.spawn().with_context(|| format!("starting worker B ({})", exe.display()))?;
            let at = read_until_stopped(&mut child).await?;
            child.start_kill().context("SIGKILL to worker B")?;
            let status = child.wait().await?;
            tracing::info!(at, ?status, "worker B killed");
        }
    }
    lap("3 B until its crash", &mut phase);

    // Sundial retries the execution: C re-runs from the first merchant.
    let c = job().run(&ctx(3), n, None, now).await.context("C")?;
    lap("4 C re-run", &mut phase);

    // A wakes up, unaware, with its stale token.
    gate_a.open();
    let a = a_task.await.map_err(|e| anyhow!("A panicked: {e}"))?.context("A")?;
    lap("5 A wakes up", &mut phase);

    // The trigger arrives once more.
    let d = job().run(&ctx(4), n, None, now).await.context("D")?;
    lap("6 D late delivery", &mut phase);

    let audit = audit(ddb, &tables, service, n).await?;
    Ok(ScenarioOutcome { a, c, d, dropped_responses: service.faults().dropped(), phase_secs: phase, audit })
}

/// Reads every table and the service's ledger.
pub async fn audit(
    ddb: &Client,
    tables: &Tables,
    service: &AccountService,
    merchants: usize,
) -> Result<Audit> {
    let date = settle_date_for(scheduled_at());
    let num = |item: &std::collections::HashMap<String, AttributeValue>, f: &str| -> Result<i64> {
        match item.get(f) {
            Some(AttributeValue::N(v)) => Ok(v.parse()?),
            _ => Err(anyhow!("item without number {f}: {item:?}")),
        }
    };
    let mut a = Audit {
        merchants,
        settled_once: 0,
        settled_repeatedly: Vec::new(),
        not_settled: Vec::new(),
        paid_out_total: 0,
        expected_total: (0..merchants).map(amount_due).sum(),
        detail_rows: 0,
        duplicate_details: Vec::new(),
        credits: 0,
        credited_repeatedly: Vec::new(),
        never_credited: Vec::new(),
        credited_total: 0,
        reconciliation: Report::default(),
        unknown_outcomes: 0,
        report_token: None,
    };
    for item in scan_all(ddb, &tables.merchants).await? {
        let m = match item.get("merchant_id") {
            Some(AttributeValue::S(v)) => v.clone(),
            _ => return Err(anyhow!("merchant without id: {item:?}")),
        };
        let count = num(&item, "settled_count")? as u64;
        a.paid_out_total += num(&item, "paid_out_total")?;
        let settled = matches!(item.get("settle_status"), Some(AttributeValue::S(v)) if v == SETTLED);
        if !settled {
            a.not_settled.push(m.clone());
        }
        match count {
            1 if settled => a.settled_once += 1,
            0 | 1 => {}
            c => a.settled_repeatedly.push((m, c)),
        }
    }
    let details = crate::settle::detail_ledger(ddb, &tables.details, date).await?;
    a.detail_rows = details.len();
    let mut per_merchant: BTreeMap<String, usize> = BTreeMap::new();
    for d in &details {
        *per_merchant.entry(d.key.clone()).or_default() += 1;
    }
    a.duplicate_details = per_merchant.into_iter().filter(|(_, c)| *c > 1).map(|(k, _)| k).collect();
    let ledger = service.ledger();
    a.credits = ledger.len();
    a.credited_total = ledger.iter().map(|c| c.amount).sum();
    let mut credited: BTreeMap<String, usize> = BTreeMap::new();
    for c in &ledger {
        *credited.entry(c.merchant_id.clone()).or_default() += 1;
    }
    a.never_credited = (0..merchants).map(merchant_id).filter(|m| !credited.contains_key(m)).collect();
    a.credited_repeatedly = credited.into_iter().filter(|(_, c)| *c > 1).collect();
    let job = Settlement::new(
        ddb.clone(),
        tables.clone(),
        AccountClient::new(service.url(), Duration::from_secs(5)),
        Layers::ALL,
        1,
    );
    a.reconciliation = job.reconcile(date).await?;
    let outbound = Outbound::new(
        AccountClient::new(service.url(), Duration::from_secs(5)),
        ddb.clone(),
        &tables.toolkit.outbound,
    );
    a.unknown_outcomes = outbound.unknown_outcomes().await?.len();
    let reports = sundial_idempotency::fence::FencedTable::new(ddb.clone(), &tables.reports);
    let key = std::collections::HashMap::from([(
        sundial_idempotency::tables::PK.to_owned(),
        AttributeValue::S(format!("report#settle:{date}")),
    )]);
    a.report_token = reports.token_of(key).await?;
    Ok(a)
}

/// Reads the child's stdout until it reports `STOPPED {i}`.
async fn read_until_stopped(child: &mut tokio::process::Child) -> Result<usize> {
    let out = child.stdout.take().ok_or_else(|| anyhow!("child has no stdout"))?;
    let mut lines = tokio::io::BufReader::new(out).lines();
    while let Some(line) = lines.next_line().await.context("reading the child's stdout")? {
        if let Some(i) = line.strip_prefix("STOPPED ") {
            return Ok(i.trim().parse()?);
        }
    }
    Err(anyhow!("the child exited before reaching its stop point"))
}
