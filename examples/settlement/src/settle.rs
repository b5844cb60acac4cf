//! The settlement job: the recipe of docs/idempotency.md as a Sundial handler.
//!
//! ```text
//! 02:00 Asia/Shanghai ─> Sundial claims the execution (fencing token t) ─> run():
//!   done-marker settle:{date}?  ─ yes ─> exit (the whole batch finished before)
//!   per merchant, in parallel lanes:
//!     read merchant                       short-circuit: SETTLED → skip
//!     CAS UNSETTLED→SETTLING owner=t      (or take SETTLING over from an older token)
//!                                         0 rows → someone else has it: skip
//!     insert detail (merchant, date)      unique: exists → carry on from the existing row
//!     credit account service              idempotency key settle:{merchant}:{date}
//!                                         lost answer → query before retry; unknown → record
//!     CAS SETTLING→SETTLED IF owner=t     + paid_out_total += amount, settled_count += 1
//!                                         0 rows → a newer attempt took it over: skip
//!   all merchants SETTLED ─> reconcile details vs the service's ledger, publish the
//!   reconciliation once per execution (inbox), set the done-marker
//!   every run ─> fenced write of its run report (a stale attempt cannot overwrite a newer one)
//! ```
//!
//! [`Layers`] switches the three per-item layers off one by one, for the tests that show each
//! is necessary: with a layer off, the same failover scenario books something twice.

use crate::account_service::{AccountClient, CreditRequest};
use anyhow::{anyhow, Context, Result};
use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem};
use aws_sdk_dynamodb::Client;
use chrono::{DateTime, Duration, NaiveDate, Utc};
use chrono_tz::Asia::Shanghai;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use sundial_idempotency::fence::{FenceOutcome, FencedTable};
use sundial_idempotency::inbox::{Inbox, TransactOutcome};
use sundial_idempotency::marker::DoneMarkers;
use sundial_idempotency::outbound::{CallOutcome, IdempotencyKey, Outbound, RetryPolicy};
use sundial_idempotency::reconcile::{reconcile, LedgerEntry, Report};
use sundial_idempotency::state::{CasOutcome, StateMachine, Transition};
use sundial_idempotency::tables::{delete_table, ensure_table, ToolkitTables, PK};
use sundial_idempotency::unique::{insert_unique, Insert};
use sundial_idempotency::{ExecutionContext, Update};
use tokio::sync::watch;

/// Merchant states.
pub const UNSETTLED: &str = "UNSETTLED";
/// Claimed by an attempt, not finished.
pub const SETTLING: &str = "SETTLING";
/// Done for the day.
pub const SETTLED: &str = "SETTLED";

/// How long the done-marker counts: the rest of the settlement window.
const MARKER_TTL_HOURS: i64 = 20;

/// The per-item layers, each switchable off for the tests that show it is necessary. All on in
/// any real use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Layers {
    /// Detail rows keyed by the natural key `(merchant_id, settle_date)` and inserted only if
    /// absent. Off: keyed by `(merchant_id, settle_date#attempt)`, like a table with a surrogate
    /// id and no unique index, so each attempt writes its own row.
    pub unique_constraint: bool,
    /// The per-merchant state machine (short-circuit read, CAS claim, holder-only finish). Off:
    /// every attempt settles every merchant it reaches, with plain writes.
    pub cas: bool,
    /// The credit's idempotency key is `settle:{merchant}:{date}`. Off: a key per attempt, so
    /// the account service sees each attempt as a new credit.
    pub outbound_idempotency: bool,
}

impl Layers {
    /// Every layer on.
    pub const ALL: Layers = Layers { unique_constraint: true, cas: true, outbound_idempotency: true };
}

impl Default for Layers {
    fn default() -> Self {
        Layers::ALL
    }
}

/// The day a run settles: the business day that ended before the 02:00 Shanghai trigger.
/// Taken from the *scheduled* instant, so a late or repeated run settles the same day.
pub fn settle_date_for(scheduled_at: DateTime<Utc>) -> NaiveDate {
    let local = scheduled_at.with_timezone(&Shanghai).date_naive();
    local.pred_opt().unwrap_or(local)
}

/// The id of merchant `i`.
pub fn merchant_id(i: usize) -> String {
    format!("m{i:05}")
}

/// The amount due to merchant `i` (cents), deterministic so a test can recompute it.
pub fn amount_due(i: usize) -> i64 {
    1_000 + ((i as i64) * 7_919) % 100_000
}

/// The job's tables.
#[derive(Debug, Clone)]
pub struct Tables {
    /// Merchants: hash `merchant_id`; `settle_status`, `owner_token`, `settle_date`, `amount_due`,
    /// `paid_out_total`, `settled_count`.
    pub merchants: String,
    /// Settlement details: hash `merchant_id`, range `detail_key` (= `settle_date` with the
    /// unique layer on: the key *is* the natural key).
    pub details: String,
    /// Run reports (fenced) and published reconciliations: hash `pk`.
    pub reports: String,
    /// The toolkit's inbox, outbound record and markers.
    pub toolkit: ToolkitTables,
}

impl Tables {
    /// Every table under `prefix`.
    pub fn with_prefix(prefix: &str) -> Self {
        Tables {
            merchants: format!("{prefix}merchants"),
            details: format!("{prefix}settle_detail"),
            reports: format!("{prefix}reports"),
            toolkit: ToolkitTables::with_prefix(prefix),
        }
    }

    /// Creates them (local emulator; on AWS the CDK does).
    pub async fn ensure(&self, ddb: &Client) -> Result<()> {
        ensure_table(ddb, &self.merchants, "merchant_id", None).await?;
        ensure_table(ddb, &self.details, "merchant_id", Some("detail_key")).await?;
        ensure_table(ddb, &self.reports, PK, None).await?;
        self.toolkit.ensure(ddb).await?;
        Ok(())
    }

    /// Deletes them.
    pub async fn delete(&self, ddb: &Client) -> Result<()> {
        for t in [&self.merchants, &self.details, &self.reports] {
            delete_table(ddb, t).await?;
        }
        self.toolkit.delete(ddb).await?;
        Ok(())
    }
}

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

fn n(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

fn merchant_key(m: &str) -> HashMap<String, AttributeValue> {
    HashMap::from([("merchant_id".to_owned(), s(m))])
}

/// Opens the day: every merchant `0..count` is `UNSETTLED` for `date` with its amount due.
/// Returns the total due.
pub async fn open_day(
    ddb: &Client,
    tables: &Tables,
    count: usize,
    date: NaiveDate,
    lanes: usize,
) -> Result<i64> {
    let next = Arc::new(AtomicUsize::new(0));
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..lanes.max(1) {
        let (ddb, table, next) = (ddb.clone(), tables.merchants.clone(), next.clone());
        set.spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= count {
                    return anyhow::Ok(());
                }
                ddb.put_item()
                    .table_name(&table)
                    .item("merchant_id", s(merchant_id(i)))
                    .item("settle_date", s(date.to_string()))
                    .item("settle_status", s(UNSETTLED))
                    .item("amount_due", n(amount_due(i)))
                    .item("paid_out_total", n(0))
                    .item("settled_count", n(0))
                    .send()
                    .await
                    .with_context(|| format!("opening merchant {i}"))?;
            }
        });
    }
    while let Some(r) = set.join_next().await {
        r??;
    }
    Ok((0..count).map(amount_due).sum())
}

/// A point where a worker stops, as a GC pause or a hung process would: the test decides when
/// (or whether) it continues. Every lane of the worker stops at its next merchant too.
#[derive(Debug)]
pub struct Gate {
    at: usize,
    reached: watch::Sender<bool>,
    open: watch::Sender<bool>,
}

impl Gate {
    /// A gate that stops the worker after it credited merchant `at`, before it marks it
    /// settled: the worst place to stop.
    pub fn at(at: usize) -> Arc<Gate> {
        Arc::new(Gate { at, reached: watch::channel(false).0, open: watch::channel(false).0 })
    }

    /// The merchant it stops at.
    pub fn position(&self) -> usize {
        self.at
    }

    /// Waits until the worker has stopped at the gate.
    pub async fn wait_reached(&self) {
        let _ = self.reached.subscribe().wait_for(|r| *r).await;
    }

    /// Lets the worker continue.
    pub fn open(&self) {
        self.open.send_replace(true);
    }

    async fn stop_here(&self) {
        self.reached.send_replace(true);
        let _ = self.open.subscribe().wait_for(|o| *o).await;
    }

    async fn hold_if_stopped(&self) {
        if *self.reached.borrow() {
            let _ = self.open.subscribe().wait_for(|o| *o).await;
        }
    }
}

/// What one merchant's settlement came to in this attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ItemResult {
    /// This attempt settled it.
    Settled,
    /// Already SETTLED when this attempt looked.
    AlreadySettled,
    /// Held (SETTLING) by an attempt with a token not older than ours: not ours to touch.
    HeldByOther,
    /// We claimed it, a newer attempt took it over before we finished.
    Superseded,
    /// The credit's outcome is unknown (recorded); left SETTLING for a later attempt.
    CreditUnknown,
    /// The credit certainly did not happen (service unreachable); left SETTLING.
    CreditNotApplied,
    /// The account service refused the credit.
    CreditRejected,
}

/// What a run did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunSummary {
    /// The execution.
    pub execution_id: String,
    /// This attempt's token.
    pub fencing_token: u64,
    /// The day settled.
    pub settle_date: String,
    /// The done-marker was set: nothing was done.
    pub skipped_by_marker: bool,
    /// Merchants this attempt settled.
    pub settled: usize,
    /// Merchants found already settled.
    pub already_settled: usize,
    /// Merchants held by another (not older) attempt.
    pub held_by_other: usize,
    /// Merchants taken over from this attempt by a newer one.
    pub superseded: usize,
    /// Credits whose outcome is unknown.
    pub credit_unknown: usize,
    /// Credits that certainly did not happen.
    pub credit_not_applied: usize,
    /// Credits the service refused.
    pub credit_rejected: usize,
    /// Credits confirmed by a lookup after a lost answer.
    pub confirmed_by_lookup: usize,
    /// Detail rows that already existed (the unique key absorbed a repeat).
    pub detail_existed: usize,
    /// Every merchant ended SETTLED in this run's view, so the batch is done.
    pub complete: bool,
    /// Reconciliation, when the batch completed.
    pub reconciliation: Option<Report>,
    /// Whether this attempt's report landed (false: a newer attempt had written one).
    pub report_written: bool,
}

/// One attempt of the settlement job.
#[derive(Debug, Clone)]
pub struct Settlement {
    ddb: Client,
    tables: Tables,
    layers: Layers,
    lanes: usize,
    states: StateMachine,
    outbound: Outbound<AccountClient>,
}

impl Settlement {
    /// The job over `tables`, crediting through `account`, with `lanes` merchants in flight.
    pub fn new(ddb: Client, tables: Tables, account: AccountClient, layers: Layers, lanes: usize) -> Self {
        let states =
            StateMachine::new(ddb.clone(), &tables.merchants).with_attrs("settle_status", "owner_token");
        let policy = RetryPolicy { max_attempts: 3, backoff: std::time::Duration::from_millis(20) };
        let outbound = Outbound::new(account, ddb.clone(), &tables.toolkit.outbound).with_policy(policy);
        Settlement { ddb, tables, layers, lanes: lanes.max(1), states, outbound }
    }

    /// The account service client.
    pub fn account(&self) -> &AccountClient {
        self.outbound.far_side()
    }

    /// Runs the attempt `ctx` over merchants `0..count`. `gate`, if any, stops it at a merchant.
    /// `now` stamps records; the day settled comes from `ctx.scheduled_at`.
    pub async fn run(
        &self,
        ctx: &ExecutionContext,
        count: usize,
        gate: Option<Arc<Gate>>,
        now: DateTime<Utc>,
    ) -> Result<RunSummary> {
        let date = settle_date_for(ctx.scheduled_at);
        let batch = format!("settle:{date}");
        let mut summary = RunSummary {
            execution_id: ctx.execution_id.clone(),
            fencing_token: ctx.fencing_token,
            settle_date: date.to_string(),
            ..RunSummary::default()
        };
        let markers = DoneMarkers::new(self.ddb.clone(), &self.tables.toolkit.markers);
        if markers.check(&batch, now).await?.is_some() {
            summary.skipped_by_marker = true;
            summary.complete = true;
            return Ok(summary);
        }

        let next = Arc::new(AtomicUsize::new(0));
        let mut lanes = tokio::task::JoinSet::new();
        for _ in 0..self.lanes {
            let (me, ctx, next, gate) = (self.clone(), ctx.clone(), next.clone(), gate.clone());
            lanes.spawn(async move {
                let mut results = Vec::new();
                loop {
                    if let Some(g) = &gate {
                        g.hold_if_stopped().await;
                    }
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= count {
                        return anyhow::Ok(results);
                    }
                    let r = me
                        .settle_one(&ctx, i, date, gate.as_deref(), now)
                        .await
                        .with_context(|| format!("merchant {i}"))?;
                    results.push(r);
                }
            });
        }
        while let Some(lane) = lanes.join_next().await {
            for (r, existed, by_lookup) in lane.map_err(|e| anyhow!("a settlement lane panicked: {e}"))?? {
                summary.detail_existed += usize::from(existed);
                summary.confirmed_by_lookup += usize::from(by_lookup);
                match r {
                    ItemResult::Settled => summary.settled += 1,
                    ItemResult::AlreadySettled => summary.already_settled += 1,
                    ItemResult::HeldByOther => summary.held_by_other += 1,
                    ItemResult::Superseded => summary.superseded += 1,
                    ItemResult::CreditUnknown => summary.credit_unknown += 1,
                    ItemResult::CreditNotApplied => summary.credit_not_applied += 1,
                    ItemResult::CreditRejected => summary.credit_rejected += 1,
                }
            }
        }
        summary.complete = summary.settled + summary.already_settled == count;

        if summary.complete {
            let report = self.reconcile(date).await?;
            self.publish_reconciliation(ctx, &batch, &report, now).await?;
            summary.reconciliation = Some(report);
            markers.mark(&batch, ctx, now, Duration::hours(MARKER_TTL_HOURS)).await?;
        }
        summary.report_written = self.write_report(ctx, &batch, &summary).await?.is_written();
        Ok(summary)
    }

    /// Settles merchant `i`; returns what happened, whether its detail row existed, and whether
    /// the credit was confirmed by a lookup.
    async fn settle_one(
        &self,
        ctx: &ExecutionContext,
        i: usize,
        date: NaiveDate,
        gate: Option<&Gate>,
        now: DateTime<Utc>,
    ) -> Result<(ItemResult, bool, bool)> {
        let m = merchant_id(i);
        let key = merchant_key(&m);
        let token = ctx.fencing_token;

        // 1. Short-circuit read (part of the state-machine layer), which also gives the amount.
        let state =
            self.states.state_of(key.clone()).await?.ok_or_else(|| anyhow!("merchant {m} does not exist"))?;
        let amount: i64 = match state.item.get("amount_due") {
            Some(AttributeValue::N(v)) => {
                v.parse().with_context(|| format!("merchant {m}: amount_due {v:?}"))?
            }
            _ => return Err(anyhow!("merchant {m} has no amount_due")),
        };
        if self.layers.cas {
            match state.status.as_deref() {
                Some(SETTLED) => return Ok((ItemResult::AlreadySettled, false, false)),
                Some(SETTLING) if state.owner.is_some_and(|o| o >= token) => {
                    return Ok((ItemResult::HeldByOther, false, false))
                }
                _ => {}
            }
            // 2. CAS claim: UNSETTLED → SETTLING, or take SETTLING over from an older attempt.
            let claim = Transition::claim(UNSETTLED, SETTLING, token)
                .taking_over(SETTLING)
                .require("settle_date", s(date.to_string()));
            if let CasOutcome::AlreadyHandled { current } =
                self.states.transition(key.clone(), &claim).await?
            {
                let settled = current.and_then(|c| c.status).is_some_and(|st| st == SETTLED);
                let r = if settled { ItemResult::AlreadySettled } else { ItemResult::HeldByOther };
                return Ok((r, false, false));
            }
        } else {
            self.ddb
                .update_item()
                .table_name(&self.tables.merchants)
                .set_key(Some(key.clone()))
                .update_expression("SET settle_status = :s, owner_token = :t")
                .expression_attribute_values(":s", s(SETTLING))
                .expression_attribute_values(":t", n(token))
                .send()
                .await
                .context("unguarded claim")?;
        }

        // 3. The detail row, unique on (merchant_id, settle_date).
        let detail_key =
            if self.layers.unique_constraint { date.to_string() } else { format!("{date}#t{token}") };
        let detail = HashMap::from([
            ("merchant_id".to_owned(), s(&m)),
            ("detail_key".to_owned(), s(detail_key)),
            ("settle_date".to_owned(), s(date.to_string())),
            ("amount".to_owned(), n(amount)),
            ("execution_id".to_owned(), s(&ctx.execution_id)),
            ("fencing_token".to_owned(), n(token)),
        ]);
        let existed = if self.layers.unique_constraint {
            matches!(
                insert_unique(&self.ddb, &self.tables.details, detail, &["merchant_id", "detail_key"])
                    .await?,
                Insert::Exists(_)
            )
        } else {
            self.ddb
                .put_item()
                .table_name(&self.tables.details)
                .set_item(Some(detail))
                .send()
                .await
                .context("detail put")?;
            false
        };

        // 4. Credit the merchant through the account service, under the item's own key.
        let date_text = date.to_string();
        let attempt = format!("t{token}");
        let mut parts = vec![m.as_str(), date_text.as_str()];
        if !self.layers.outbound_idempotency {
            parts.push(&attempt);
        }
        let idem = IdempotencyKey::for_item("settle", &parts)?;
        let request = CreditRequest { merchant_id: m.clone(), settle_date: date_text.clone(), amount };
        let (credit_ref, by_lookup) = match self.outbound.call(ctx, &idem, &request, now).await? {
            CallOutcome::Confirmed { receipt, via_lookup, .. } => (receipt.transaction_id, via_lookup),
            CallOutcome::Unknown { .. } => return Ok((ItemResult::CreditUnknown, existed, false)),
            CallOutcome::NotApplied { .. } => return Ok((ItemResult::CreditNotApplied, existed, false)),
            CallOutcome::Rejected { code, message } => {
                tracing::error!(merchant = %m, %code, %message, "credit rejected");
                return Ok((ItemResult::CreditRejected, existed, false));
            }
        };

        if let Some(g) = gate.filter(|g| g.at == i) {
            g.stop_here().await;
        }

        // 5. SETTLING → SETTLED by the holder only, moving the money on our side in the same write.
        let booked = Update::new()
            .set("credit_ref", s(credit_ref))
            .add("paid_out_total", amount)
            .add("settled_count", 1);
        if self.layers.cas {
            let finish = Transition::by_holder(SETTLING, SETTLED, token)
                .require("settle_date", s(date.to_string()))
                .with(booked);
            if !self.states.transition(key, &finish).await?.is_applied() {
                return Ok((ItemResult::Superseded, existed, by_lookup));
            }
        } else {
            self.ddb
                .update_item()
                .table_name(&self.tables.merchants)
                .set_key(Some(key))
                .update_expression("SET settle_status = :s ADD paid_out_total :a, settled_count :one")
                .expression_attribute_values(":s", s(SETTLED))
                .expression_attribute_values(":a", n(amount))
                .expression_attribute_values(":one", n(1))
                .send()
                .await
                .context("unguarded finish")?;
        }
        Ok((ItemResult::Settled, existed, by_lookup))
    }

    /// Settles merchant `i` alone (a map-reduce item, [`crate::mapreduce`]): the same layers as
    /// a lane of [`Settlement::run`] under the item's own execution id and token. `Ok(true)`:
    /// SETTLED (by this attempt or an earlier one); `Ok(false)`: not settled yet, retry later
    /// (held by a newer attempt, credit outcome unknown or not applied); `Err` for a refusal.
    pub async fn settle_item(&self, ctx: &ExecutionContext, i: usize, now: DateTime<Utc>) -> Result<bool> {
        let date = settle_date_for(ctx.scheduled_at);
        let (r, _, _) = self.settle_one(ctx, i, date, None, now).await?;
        match r {
            ItemResult::Settled | ItemResult::AlreadySettled => Ok(true),
            ItemResult::CreditRejected => {
                Err(anyhow!("the account service rejected the credit of {}", merchant_id(i)))
            }
            _ => Ok(false),
        }
    }

    /// The end of a day settled item by item (the map-reduce's reduce): the reconciliation,
    /// published once per execution, the done-marker, and the fenced run report.
    pub async fn close_day(
        &self,
        ctx: &ExecutionContext,
        settled: usize,
        count: usize,
        now: DateTime<Utc>,
    ) -> Result<RunSummary> {
        let date = settle_date_for(ctx.scheduled_at);
        let batch = format!("settle:{date}");
        let mut summary = RunSummary {
            execution_id: ctx.execution_id.clone(),
            fencing_token: ctx.fencing_token,
            settle_date: date.to_string(),
            settled,
            complete: settled == count,
            ..RunSummary::default()
        };
        if summary.complete {
            let report = self.reconcile(date).await?;
            self.publish_reconciliation(ctx, &batch, &report, now).await?;
            summary.reconciliation = Some(report);
            let markers = DoneMarkers::new(self.ddb.clone(), &self.tables.toolkit.markers);
            markers.mark(&batch, ctx, now, Duration::hours(MARKER_TTL_HOURS)).await?;
        }
        summary.report_written = self.write_report(ctx, &batch, &summary).await?.is_written();
        Ok(summary)
    }

    /// Our ledger (detail rows of `date`) against the account service's.
    pub async fn reconcile(&self, date: NaiveDate) -> Result<Report> {
        let local = detail_ledger(&self.ddb, &self.tables.details, date).await?;
        let far = self
            .account()
            .ledger()
            .await
            .map_err(|e| anyhow!("reading the account service's ledger: {e}"))?
            .into_iter()
            .filter(|c| c.settle_date == date.to_string())
            .map(|c| LedgerEntry {
                key: format!("{}:{}", c.merchant_id, c.settle_date),
                amount: c.amount,
                reference: c.transaction_id,
            });
        Ok(reconcile(local, far))
    }

    /// Stores the reconciliation once per execution (inbox + put in one transaction).
    async fn publish_reconciliation(
        &self,
        ctx: &ExecutionContext,
        batch: &str,
        report: &Report,
        now: DateTime<Utc>,
    ) -> Result<()> {
        let put = Put::builder()
            .table_name(&self.tables.reports)
            .item(PK, s(format!("recon#{batch}#{}", ctx.execution_id)))
            .item("report", s(serde_json::to_string(report)?))
            .item("clean", AttributeValue::Bool(report.is_clean()))
            .item("fencing_token", n(ctx.fencing_token))
            .build()?;
        let inbox = Inbox::new(self.ddb.clone(), &self.tables.toolkit.inbox);
        match inbox
            .transact(ctx, "publish-reconciliation", now, vec![TransactWriteItem::builder().put(put).build()])
            .await?
        {
            TransactOutcome::Applied | TransactOutcome::AlreadyApplied(_) => Ok(()),
            TransactOutcome::ConditionFailed { index } => {
                Err(anyhow!("reconciliation write {index} refused"))
            }
        }
    }

    /// The run's report, fenced: only an attempt newer than the last writer may replace it.
    async fn write_report(
        &self,
        ctx: &ExecutionContext,
        batch: &str,
        summary: &RunSummary,
    ) -> Result<FenceOutcome> {
        let reports = FencedTable::new(self.ddb.clone(), &self.tables.reports);
        let key = HashMap::from([(PK.to_owned(), s(format!("report#{batch}")))]);
        let update = Update::new()
            .set("summary", s(serde_json::to_string(summary)?))
            .set("execution_id", s(&ctx.execution_id));
        Ok(reports.write(key, ctx.fencing_token, &update).await?)
    }
}

/// Every detail row of `date`, as ledger entries keyed `merchant:date`.
pub async fn detail_ledger(ddb: &Client, table: &str, date: NaiveDate) -> Result<Vec<LedgerEntry>> {
    let mut out = Vec::new();
    for item in scan_all(ddb, table).await? {
        let text = |f: &str| match item.get(f) {
            Some(AttributeValue::S(v)) => Ok(v.clone()),
            _ => Err(anyhow!("detail row without {f}: {item:?}")),
        };
        if text("settle_date")? != date.to_string() {
            continue;
        }
        let amount = match item.get("amount") {
            Some(AttributeValue::N(v)) => v.parse()?,
            _ => return Err(anyhow!("detail row without amount: {item:?}")),
        };
        out.push(LedgerEntry {
            key: format!("{}:{}", text("merchant_id")?, text("settle_date")?),
            amount,
            reference: text("detail_key")?,
        });
    }
    Ok(out)
}

/// A whole table (the example's tables are private to one run; never do this on a shared table).
pub async fn scan_all(ddb: &Client, table: &str) -> Result<Vec<HashMap<String, AttributeValue>>> {
    let mut out = Vec::new();
    let mut start = None;
    loop {
        let page = ddb
            .scan()
            .table_name(table)
            .consistent_read(true)
            .set_exclusive_start_key(start)
            .send()
            .await
            .with_context(|| format!("scanning {table}"))?;
        out.extend(page.items.unwrap_or_default());
        match page.last_evaluated_key {
            Some(k) if !k.is_empty() => start = Some(k),
            _ => return Ok(out),
        }
    }
}
