//! Shard watermarks: the last epoch minute each shard's scan fully dispatched.
//!
//! One item per shard in the jobs table ([`keys::watermark_pk`], [`keys::WATERMARK_SK`]). A tick
//! after an outage starts from it and walks the missed buckets, so no job's fires are
//! forgotten; it only ever moves forward, so a slow scanner cannot rewind a faster one.

use super::error::StoreError;
use super::expr::{Cmp, Expr};
use super::items::{self, attr, n};
use super::{get_consistent, update_if};
use sundial_model::keys;

/// A shard's position: the watermark, the last minute whose every-minute and daily fires the
/// verification pass has checked (`None`: never; see `trigger::verify`), and the last minute
/// whose every-minute and daily fires were dispatched when that is past the watermark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    /// Last epoch minute fully scanned.
    pub through: i64,
    /// Last epoch minute verified.
    pub verified: Option<i64>,
    /// Last epoch minute whose every-minute and daily fires were put and sent (`None`: the
    /// watermark's). Ahead of `through` while a deferred bucket job holds the watermark, so the
    /// next tick plans those classes after it instead of counting their fires against the
    /// catch-up budget again.
    pub planned: Option<i64>,
    /// How many every-minute or daily jobs of the shard have left their class (paused, edited,
    /// deleted): a scan that sees it move while it ran may have put fires of such a job from a
    /// read older than the change (see `trigger::verify`).
    pub left: i64,
}

impl Position {
    /// The last minute whose every-minute and daily fires were dispatched.
    pub fn planned_through(&self) -> i64 {
        self.planned.map_or(self.through, |p| p.max(self.through))
    }
}

/// A shard's position (`None`: never scanned).
pub async fn position(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    shard: u32,
) -> Result<Option<Position>, StoreError> {
    let item = get_consistent(ddb, table, (keys::watermark_pk(shard), keys::WATERMARK_SK), "GetItem").await?;
    Ok(item.as_ref().and_then(|i| {
        let through = items::watermark_from_item(i)?;
        Some(Position {
            through,
            verified: items::get_n_opt(i, attr::VERIFIED).ok().flatten(),
            planned: items::get_n_opt(i, attr::PLANNED).ok().flatten(),
            left: items::get_n_opt(i, attr::LEFT_CLASS).ok().flatten().unwrap_or(0),
        })
    }))
}

/// Moves a shard's watermark forward to `through` (never back), and its verified minute to
/// `verified` in the same write. Returns false if the watermark was already at or past
/// `through` (a concurrent scanner got there first).
pub async fn advance(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    shard: u32,
    through: i64,
    verified: Option<i64>,
) -> Result<bool, StoreError> {
    let mut e = Expr::new();
    e.set(attr::THROUGH, n(through)).cond_absent_or(attr::THROUGH, Cmp::Lt, n(through));
    if let Some(v) = verified {
        e.set(attr::VERIFIED, n(v));
    }
    update_if(ddb, table, (keys::watermark_pk(shard), keys::WATERMARK_SK), e, "UpdateItem").await
}

/// Starts a shard's watermark at `through` if it has none yet (the shard was never scanned).
/// The API calls it before it moves a new job out of the admission partition into the bucket of
/// a later fire ([`keys::minute_of`] of now, less one): without it, a tick that first runs
/// after that would start from its own present and never read the bucket the job waits in, so
/// the job and every fire owed since would be lost. True if this call started it.
pub async fn start_if_never(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    shard: u32,
    through: i64,
) -> Result<bool, StoreError> {
    let mut e = Expr::new();
    e.set(attr::THROUGH, n(through)).cond_not_exists(attr::THROUGH);
    update_if(ddb, table, (keys::watermark_pk(shard), keys::WATERMARK_SK), e, "UpdateItem").await
}

/// Counts one more job leaving the shard's every-minute or daily class (after the change that
/// took it out committed). Unconditional: it only ever grows.
pub async fn note_leaving(ddb: &aws_sdk_dynamodb::Client, table: &str, shard: u32) -> Result<(), StoreError> {
    let mut e = Expr::new();
    e.add(attr::LEFT_CLASS, 1);
    update_if(ddb, table, (keys::watermark_pk(shard), keys::WATERMARK_SK), e, "UpdateItem").await?;
    Ok(())
}

/// Moves only the verified minute forward (a tick whose watermark did not move).
pub async fn advance_verified(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    shard: u32,
    verified: i64,
) -> Result<bool, StoreError> {
    let mut e = Expr::new();
    e.set(attr::VERIFIED, n(verified)).cond_absent_or(attr::VERIFIED, Cmp::Lt, n(verified));
    update_if(ddb, table, (keys::watermark_pk(shard), keys::WATERMARK_SK), e, "UpdateItem").await
}

/// Moves only the planned minute forward (a tick whose watermark a deferred bucket job held
/// before the end of its walk).
pub async fn advance_planned(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    shard: u32,
    planned: i64,
) -> Result<bool, StoreError> {
    let mut e = Expr::new();
    e.set(attr::PLANNED, n(planned)).cond_absent_or(attr::PLANNED, Cmp::Lt, n(planned));
    update_if(ddb, table, (keys::watermark_pk(shard), keys::WATERMARK_SK), e, "UpdateItem").await
}
