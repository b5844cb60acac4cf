//! Per-period dependencies (docs/dependencies.md): a waiting fire registers on its upstream
//! run's item, and the upstream's final write returns who registered, so its worker wakes them.
//!
//! Registration and the final write are two conditional writes of one item, so DynamoDB orders
//! them: a registration that lands first is in the set the final write returns (the finishing
//! worker wakes the waiter); one that comes after fails its condition and sees the final status
//! (the waiter goes on without waiting). No wake is lost between the two, and no waiter polls.

use super::{ExecKey, ExecStore};
use crate::error::StoreError;
use crate::expr::{Cmp, Expr};
use crate::items::{self, attr, Item};
use aws_sdk_dynamodb::types::AttributeValue;
use sundial_model::dependency::DependencyStatus;
use sundial_model::ExecStatus;

/// What [`ExecStore::wait_on`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Registration {
    /// Registered on the upstream run, which is in this status (not satisfying): its final
    /// write will name the waiter.
    Registered(ExecStatus),
    /// The upstream run does not exist (yet).
    Missing,
    /// The upstream run is in this status, which satisfies the dependency: nothing written.
    Satisfied(ExecStatus),
}

/// Every status that satisfies `need`.
fn satisfying(need: DependencyStatus) -> &'static [ExecStatus] {
    match need {
        DependencyStatus::Succeeded => &[ExecStatus::Succeeded],
        DependencyStatus::Final => &[
            ExecStatus::Succeeded,
            ExecStatus::Failed,
            ExecStatus::Dead,
            ExecStatus::Canceled,
            ExecStatus::Skipped,
        ],
    }
}

/// The waiters a final write's new item names ([`attr::DOWNSTREAM`]), as execution ids of the
/// same tenant, sorted.
pub fn downstream_of(item: &Item) -> Vec<String> {
    let mut ids: Vec<String> = match item.get(attr::DOWNSTREAM) {
        Some(AttributeValue::Ss(v)) => v.clone(),
        _ => Vec::new(),
    };
    ids.sort();
    ids
}

impl ExecStore {
    /// Registers execution `downstream` (an id of `upstream`'s tenant) on the upstream run,
    /// unless the run already satisfies `need` or does not exist. One conditional write
    /// (`ADD dw`), idempotent: registering twice leaves one entry.
    pub async fn wait_on(
        &self,
        upstream: &ExecKey,
        downstream: &str,
        need: DependencyStatus,
    ) -> Result<Registration, StoreError> {
        let mut e = Expr::new();
        e.add_strings(attr::DOWNSTREAM, vec![downstream.to_string()]);
        e.cond_exists(attr::PK);
        for st in satisfying(need) {
            e.cond_cmp(attr::STATUS, Cmp::Ne, AttributeValue::S(st.as_str().into()));
        }
        let seen = match self.cas(upstream, "UpdateItem(wait on upstream)", e).await? {
            Ok(new) => {
                return Ok(Registration::Registered(items::status_of(&new).unwrap_or(ExecStatus::Ready)));
            }
            Err(Some(old)) => Some(old),
            // Not every server returns the item a condition failed on: read it.
            Err(None) => self.get_item(upstream, true).await?,
        };
        Ok(match seen.as_ref().and_then(items::status_of) {
            None => Registration::Missing,
            Some(st) if satisfying(need).contains(&st) => Registration::Satisfied(st),
            // Only a satisfying status or a missing item fails the condition.
            Some(st) => Registration::Registered(st),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_waiters_of_an_item_are_its_dw_set_sorted_and_none_without_it() {
        let mut item = Item::new();
        assert!(downstream_of(&item).is_empty());
        item.insert(attr::DOWNSTREAM.into(), AttributeValue::Ss(vec!["b@2".into(), "a@1".into()]));
        assert_eq!(downstream_of(&item), vec!["a@1".to_string(), "b@2".to_string()]);
    }

    #[test]
    fn final_is_satisfied_by_every_final_status_and_succeeded_by_success_only() {
        for st in satisfying(DependencyStatus::Final) {
            assert!(st.is_terminal(), "{st:?}");
        }
        assert_eq!(satisfying(DependencyStatus::Succeeded), &[ExecStatus::Succeeded]);
    }
}
