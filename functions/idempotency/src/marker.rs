//! The batch done-marker: a cheap short-circuit, **an optimisation only**.
//!
//! `settle:done:{settle_date}` written at the end of a batch lets a re-trigger of a *finished*
//! batch exit after one read instead of walking 10,000 items. It does nothing for the failure
//! that actually paid merchants twice in the post-mortem of docs/idempotency.md: a batch that
//! crashed half-way has no marker, so its re-run walks every item again, and two overlapping runs
//! both start before either finishes. Correctness must come from the per-item layers
//! ([`crate::unique`], [`crate::state`], [`crate::outbound`]); with them in place, deleting every
//! marker changes the cost of a re-run, never its result.
//!
//! Markers expire (`expires_at`, epoch seconds, the attribute DynamoDB TTL is set on): a short TTL
//! (docs/idempotency.md, "The pieces") keeps a marker from outliving the batch window it speaks
//! for. DynamoDB deletes expired items lazily, so [`DoneMarkers::check`] also ignores an expired
//! marker itself, against the `now` it is given.

use crate::attr::{get_time, get_u64, key_text, n, req_str, s, time};
use crate::context::ExecutionContext;
use crate::error::{Error, Result};
use crate::tables::PK;
use crate::update::Item;
use aws_sdk_dynamodb::Client;
use chrono::{DateTime, Duration, Utc};

/// A finished batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DoneRecord {
    /// The batch (e.g. `settle:2026-11-30`).
    pub batch: String,
    /// The execution that finished it.
    pub execution_id: String,
    /// Its attempt's token.
    pub fencing_token: u64,
    /// When.
    pub done_at: DateTime<Utc>,
    /// When the marker stops counting.
    pub expires_at: DateTime<Utc>,
}

/// The marker table (hash key [`PK`]).
#[derive(Debug, Clone)]
pub struct DoneMarkers {
    ddb: Client,
    table: String,
}

impl DoneMarkers {
    /// Markers in `table`.
    pub fn new(ddb: Client, table: impl Into<String>) -> Self {
        DoneMarkers { ddb, table: table.into() }
    }

    /// The batch's marker, if it is set and not expired at `now`.
    pub async fn check(&self, batch: &str, now: DateTime<Utc>) -> Result<Option<DoneRecord>> {
        let got = self
            .ddb
            .get_item()
            .table_name(&self.table)
            .key(PK, s(batch))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| Error::dynamo("GetItem", &self.table, e))?;
        let Some(item) = got.item else { return Ok(None) };
        let rec = self.parse(batch, &item)?;
        Ok((rec.expires_at > now).then_some(rec))
    }

    /// Sets the batch's marker for `ttl` from `now`. Overwrites an older marker: marking a
    /// finished batch finished again is harmless.
    pub async fn mark(
        &self,
        batch: &str,
        ctx: &ExecutionContext,
        now: DateTime<Utc>,
        ttl: Duration,
    ) -> Result<()> {
        if batch.is_empty() {
            return Err(Error::invalid("batch", "is empty"));
        }
        let expires = now + ttl;
        self.ddb
            .put_item()
            .table_name(&self.table)
            .item(PK, s(batch))
            .item("execution_id", s(&ctx.execution_id))
            .item("fencing_token", n(ctx.fencing_token))
            .item("done_at", time(now))
            .item("expires_at", n(expires.timestamp()))
            .send()
            .await
            .map_err(|e| Error::dynamo("PutItem", &self.table, e))?;
        Ok(())
    }

    fn parse(&self, batch: &str, item: &Item) -> Result<DoneRecord> {
        let t = &self.table;
        let missing = |f: &str| Error::malformed(t, key_text(item), f, "missing");
        let expires = get_u64(item, t, "expires_at")?.ok_or_else(|| missing("expires_at"))?;
        let expires_at =
            i64::try_from(expires).ok().and_then(|e| DateTime::from_timestamp(e, 0)).ok_or_else(|| {
                Error::malformed(t, key_text(item), "expires_at", format!("{expires} is out of range"))
            })?;
        Ok(DoneRecord {
            batch: batch.to_owned(),
            execution_id: req_str(item, t, "execution_id")?.to_owned(),
            fencing_token: get_u64(item, t, "fencing_token")?.ok_or_else(|| missing("fencing_token"))?,
            done_at: get_time(item, t, "done_at")?.ok_or_else(|| missing("done_at"))?,
            expires_at,
        })
    }
}
