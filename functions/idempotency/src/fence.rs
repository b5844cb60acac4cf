//! Fenced writes: a stale worker cannot overwrite a newer worker's output.
//!
//! A lease tells who *should* be running; it cannot stop a worker that paused (GC, swap, a
//! network partition) past its lease and then wakes up and writes. Sundial increments the
//! execution's fencing token on every claim, so the newest attempt holds the largest token. A
//! protected item remembers the token of its last writer (`last_fencing_token`, docs/targets.md,
//! "Fencing downstream") and accepts a write only from a token newer than that:
//!
//! ```sql
//! UPDATE report_output SET object_key = :key, last_fencing_token = :token
//!  WHERE execution_id = :executionId AND last_fencing_token < :token;
//! ```
//!
//! A rejected write is [`FenceOutcome::Stale`], a value the caller must act on (stop, do not
//! publish), not an error.

use crate::attr::{get_u64, key_text, n};
use crate::error::{Error, Result};
use crate::update::{Expr, Item, Update};
use aws_sdk_dynamodb::types::ReturnValue;
use aws_sdk_dynamodb::Client;

/// The attribute holding the token of the last accepted writer.
pub const FENCE_ATTR: &str = "last_fencing_token";

/// Which tokens a fenced item accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FenceMode {
    /// Only a token strictly newer than the stored one (docs/targets.md, "Fencing downstream"):
    /// each attempt writes its output once; a second write by the same attempt is reported as
    /// [`FenceOutcome::Stale`] with `stored == mine`, which tells a retrying writer that its first
    /// write landed.
    #[default]
    StrictlyNewer,
    /// A token newer than *or equal to* the stored one: for items the same attempt rewrites
    /// (checkpoints), while still refusing every older attempt.
    NotOlder,
}

/// What a fenced write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FenceOutcome {
    /// Written; `previous` is the token of the writer it replaced (none for a new item).
    Written {
        /// The token stored before this write.
        previous: Option<u64>,
    },
    /// Refused: the item already carries token `stored`, which this mode does not let `mine`
    /// replace. The caller is stale (or retrying its own landed write when `stored == mine`).
    Stale {
        /// The token on the item.
        stored: u64,
        /// The caller's token.
        mine: u64,
    },
}

impl FenceOutcome {
    /// Whether the write happened.
    pub fn is_written(&self) -> bool {
        matches!(self, FenceOutcome::Written { .. })
    }
}

/// A table whose items are protected by fencing tokens.
#[derive(Debug, Clone)]
pub struct FencedTable {
    ddb: Client,
    table: String,
    mode: FenceMode,
}

impl FencedTable {
    /// Fenced writes to `table` in the default mode, [`FenceMode::StrictlyNewer`].
    pub fn new(ddb: Client, table: impl Into<String>) -> Self {
        FencedTable { ddb, table: table.into(), mode: FenceMode::default() }
    }

    /// The same table in another mode.
    pub fn with_mode(mut self, mode: FenceMode) -> Self {
        self.mode = mode;
        self
    }

    /// Applies `update` to the item at `key` (creating it if absent) if and only if `token` is
    /// accepted by the item's stored token, and records `token` as the new stored token, all in
    /// one conditional write.
    pub async fn write(&self, key: Item, token: u64, update: &Update) -> Result<FenceOutcome> {
        if update.touches(FENCE_ATTR) {
            return Err(Error::invalid("update", format!("may not set {FENCE_ATTR}; the fence sets it")));
        }
        let mut e = Expr::default();
        let f = e.name(FENCE_ATTR);
        let t = e.value(n(token));
        let cmp = match self.mode {
            FenceMode::StrictlyNewer => "<",
            FenceMode::NotOlder => "<=",
        };
        let condition = format!("attribute_not_exists({f}) OR {f} {cmp} {t}");
        let update_expr = e.update_expression(vec![(FENCE_ATTR, n(token))], update);
        let res = self
            .ddb
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key.clone()))
            .update_expression(update_expr)
            .condition_expression(condition)
            .set_expression_attribute_names(Some(e.names))
            .set_expression_attribute_values(Some(e.values))
            .return_values(ReturnValue::UpdatedOld)
            .send()
            .await;
        match res {
            Ok(out) => {
                let previous = match out.attributes {
                    Some(old) => get_u64(&old, &self.table, FENCE_ATTR)?,
                    None => None,
                };
                Ok(FenceOutcome::Written { previous })
            }
            Err(err) if err.as_service_error().is_some_and(|s| s.is_conditional_check_failed_exception()) => {
                let stored = self.token_of(key.clone()).await?.ok_or_else(|| Error::Contended {
                    table: self.table.clone(),
                    key: key_text(&key),
                    reason: "the fenced write was refused but the item has no token on read-back",
                })?;
                Ok(FenceOutcome::Stale { stored, mine: token })
            }
            Err(err) => Err(Error::dynamo("UpdateItem", &self.table, err)),
        }
    }

    /// The token stored on the item at `key` (strongly consistent read); `None` if the item or
    /// its token is absent.
    pub async fn token_of(&self, key: Item) -> Result<Option<u64>> {
        let got = self
            .ddb
            .get_item()
            .table_name(&self.table)
            .set_key(Some(key))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| Error::dynamo("GetItem", &self.table, e))?;
        match got.item {
            Some(item) => get_u64(&item, &self.table, FENCE_ATTR),
            None => Ok(None),
        }
    }
}
