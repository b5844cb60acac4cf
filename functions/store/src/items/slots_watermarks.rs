//! The codec of the compare-and-set protocols' small items: job slots, tenant gates, shard
//! watermarks.

use super::{attr, get_n_opt, Item};
use crate::slots::{RunningSet, Slot};

/// Decodes a job slot item (an absent item is a free slot).
pub fn slot_from_item(item: &Item) -> Slot {
    Slot {
        holder: get_n_opt(item, attr::SLOT_HOLDER).ok().flatten(),
        released: get_n_opt(item, attr::SLOT_RELEASED).ok().flatten(),
    }
}

/// Decodes a tenant gate item (an absent item is an empty set with no version).
pub fn running_from_item(item: &Item) -> RunningSet {
    let leases = item
        .get(attr::RUNNING)
        .and_then(|v| v.as_m().ok())
        .map(|m| {
            m.iter().filter_map(|(k, v)| Some((k.clone(), v.as_n().ok()?.parse::<i64>().ok()?))).collect()
        })
        .unwrap_or_default();
    RunningSet { leases, version: get_n_opt(item, attr::GATE_VERSION).ok().flatten() }
}

/// The scanned-through minute of a shard watermark item.
pub fn watermark_from_item(item: &Item) -> Option<i64> {
    get_n_opt(item, attr::THROUGH).ok().flatten()
}
