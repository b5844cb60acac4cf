//! Per-item CAS state machine: the layer that keeps a re-run from repeating finished items.
//!
//! The settlement recipe of docs/idempotency.md, per merchant:
//!
//! ```sql
//! UPDATE merchant SET settle_status = 'SETTLING' WHERE id = ? AND settle_status = 'UNSETTLED';
//! -- 0 rows: someone else settled (or is settling) it: skip, it is not an error
//! ...write the detail row, call the account service...
//! UPDATE merchant SET settle_status = 'SETTLED' WHERE id = ? AND settle_status = 'SETTLING';
//! ```
//!
//! Each move is one conditional `UpdateItem`; [`CasOutcome::AlreadyHandled`] is the "0 rows
//! affected" answer, returned with the item's current state so the caller can log who has it.
//!
//! Two additions the plain SQL recipe needs once workers crash:
//! - **Take-over by a newer attempt.** A worker that crashed between `SETTLING` and `SETTLED`
//!   leaves the item `SETTLING` for ever, and "0 rows → skip" would then never settle it. A
//!   claim records the claimant's fencing token as owner, and a claim may also take an item from
//!   a *stale* state (`SETTLING`) when its owner's token is older than the claimant's. The newer
//!   attempt then redoes the item's steps, which must therefore be idempotent themselves
//!   (natural-key insert, idempotency key on the outbound call).
//! - **Finish by the holder only.** The move to `SETTLED` requires `owner = my token`, so a
//!   stale worker whose item was taken over cannot finish it a second time.
//!
//! Extra changes (`SET credit_ref`, `ADD paid_out_total`) ride in the same conditional write, so
//! they happen exactly when the transition does. An unguarded `ADD` run twice adds twice.

use crate::attr::{get_str, get_u64, key_text, n, s};
use crate::error::{Error, Result};
use crate::update::{Expr, Item, Update};
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;

/// Default attribute holding the state.
pub const STATUS_ATTR: &str = "status";
/// Default attribute holding the owning attempt's fencing token.
pub const OWNER_ATTR: &str = "owner_token";

/// How the owner token takes part in a transition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    /// No owner check and no owner recorded.
    Ignore,
    /// Take the item for attempt `token` and record it as owner. With `take_over`, the item may
    /// also be taken from state `take_over` when its owner's token is older than `token`.
    Claim {
        /// The claimant's fencing token.
        token: u64,
        /// The stale state a newer attempt may take over from (e.g. `SETTLING`).
        take_over: Option<String>,
    },
    /// Only the attempt holding the item (`owner = token`) may move it.
    Holder(u64),
}

/// One guarded move `from → to`.
#[derive(Debug, Clone, PartialEq)]
pub struct Transition {
    from: String,
    to: String,
    owner: Owner,
    require: Vec<(String, AttributeValue)>,
    update: Update,
}

impl Transition {
    /// `from → to` with no owner involved.
    pub fn new(from: impl Into<String>, to: impl Into<String>) -> Self {
        Transition {
            from: from.into(),
            to: to.into(),
            owner: Owner::Ignore,
            require: Vec::new(),
            update: Update::new(),
        }
    }

    /// `from → to`, recording attempt `token` as the owner.
    pub fn claim(from: impl Into<String>, to: impl Into<String>, token: u64) -> Self {
        Transition { owner: Owner::Claim { token, take_over: None }, ..Transition::new(from, to) }
    }

    /// `from → to` by the attempt that holds the item only.
    pub fn by_holder(from: impl Into<String>, to: impl Into<String>, token: u64) -> Self {
        Transition { owner: Owner::Holder(token), ..Transition::new(from, to) }
    }

    /// For a claim: also take the item from `stale_state` when its owner is an older attempt.
    pub fn taking_over(mut self, stale_state: impl Into<String>) -> Self {
        if let Owner::Claim { take_over, .. } = &mut self.owner {
            *take_over = Some(stale_state.into());
        }
        self
    }

    /// Also require `attr = value` (e.g. the item's `settle_date` is today's).
    pub fn require(mut self, attr: impl Into<String>, value: AttributeValue) -> Self {
        self.require.push((attr.into(), value));
        self
    }

    /// Apply `update` in the same conditional write.
    pub fn with(mut self, update: Update) -> Self {
        self.update = update;
        self
    }
}

/// An item's state as read back.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemState {
    /// The state (`None` if the item has no state attribute).
    pub status: Option<String>,
    /// The owning attempt's token, if one is recorded.
    pub owner: Option<u64>,
    /// The whole item.
    pub item: Item,
}

/// What a transition did.
#[derive(Debug, Clone, PartialEq)]
pub enum CasOutcome {
    /// This call moved the item.
    Applied,
    /// Zero rows affected: the item was not in the expected state (another attempt moved it, or
    /// holds it with a newer token). "Already done by someone else", not an error. `current` is
    /// the item as read right after (`None` if it does not exist).
    AlreadyHandled {
        /// The item's state after the refused move.
        current: Option<ItemState>,
    },
}

impl CasOutcome {
    /// Whether this call made the move.
    pub fn is_applied(&self) -> bool {
        matches!(self, CasOutcome::Applied)
    }
}

/// The items of one table as state machines.
#[derive(Debug, Clone)]
pub struct StateMachine {
    ddb: Client,
    table: String,
    status_attr: String,
    owner_attr: String,
}

impl StateMachine {
    /// State in [`STATUS_ATTR`], owner in [`OWNER_ATTR`].
    pub fn new(ddb: Client, table: impl Into<String>) -> Self {
        StateMachine {
            ddb,
            table: table.into(),
            status_attr: STATUS_ATTR.into(),
            owner_attr: OWNER_ATTR.into(),
        }
    }

    /// Use other attribute names (e.g. `settle_status`).
    pub fn with_attrs(mut self, status_attr: impl Into<String>, owner_attr: impl Into<String>) -> Self {
        self.status_attr = status_attr.into();
        self.owner_attr = owner_attr.into();
        self
    }

    /// The table.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The item's current state (strongly consistent). Use it as a cheap short-circuit before a
    /// transition, never instead of one: between this read and a write, anything can happen.
    pub async fn state_of(&self, key: Item) -> Result<Option<ItemState>> {
        let got = self
            .ddb
            .get_item()
            .table_name(&self.table)
            .set_key(Some(key))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| Error::dynamo("GetItem", &self.table, e))?;
        got.item.map(|item| self.state_from(item)).transpose()
    }

    fn state_from(&self, item: Item) -> Result<ItemState> {
        let status = get_str(&item, &self.table, &self.status_attr)?.map(str::to_owned);
        let owner = get_u64(&item, &self.table, &self.owner_attr)?;
        Ok(ItemState { status, owner, item })
    }

    /// Applies `t` to the item at `key` in one conditional write.
    pub async fn transition(&self, key: Item, t: &Transition) -> Result<CasOutcome> {
        for attr in [&self.status_attr, &self.owner_attr] {
            if t.update.touches(attr) {
                return Err(Error::invalid("update", format!("may not set {attr}; the transition sets it")));
            }
        }
        let mut e = Expr::default();
        let st = e.name(&self.status_attr);
        let from = e.value(s(&t.from));
        let mut own_sets: Vec<(&str, AttributeValue)> = vec![(&self.status_attr, s(&t.to))];
        let mut condition = match &t.owner {
            Owner::Ignore => format!("{st} = {from}"),
            Owner::Claim { token, take_over: None } => {
                own_sets.push((&self.owner_attr, n(token)));
                format!("{st} = {from}")
            }
            Owner::Claim { token, take_over: Some(stale) } => {
                own_sets.push((&self.owner_attr, n(token)));
                let (ow, stale, tok) = (e.name(&self.owner_attr), e.value(s(stale)), e.value(n(token)));
                format!("({st} = {from} OR ({st} = {stale} AND {ow} < {tok}))")
            }
            Owner::Holder(token) => {
                let (ow, tok) = (e.name(&self.owner_attr), e.value(n(token)));
                format!("{st} = {from} AND {ow} = {tok}")
            }
        };
        for eq in e.equalities(&t.require) {
            condition.push_str(" AND ");
            condition.push_str(&eq);
        }
        let update_expr = e.update_expression(own_sets, &t.update);
        let res = self
            .ddb
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key.clone()))
            .update_expression(update_expr)
            .condition_expression(condition)
            .set_expression_attribute_names(Some(e.names))
            .set_expression_attribute_values(Some(e.values))
            .send()
            .await;
        match res {
            Ok(_) => Ok(CasOutcome::Applied),
            Err(err) if err.as_service_error().is_some_and(|s| s.is_conditional_check_failed_exception()) => {
                tracing::debug!(table = %self.table, key = %key_text(&key), from = %t.from, to = %t.to,
                    "transition not applied: already handled");
                Ok(CasOutcome::AlreadyHandled { current: self.state_of(key).await? })
            }
            Err(err) => Err(Error::dynamo("UpdateItem", &self.table, err)),
        }
    }
}
