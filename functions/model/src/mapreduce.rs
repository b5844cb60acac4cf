//! Map-reduce state (pure): the spec a job declares, the parent's and items' state stored on
//! their executions, and the rules that read it. The handler API and the fenced emit live in
//! the execution plane (`sundial_core::execution::mapreduce`); `docs/mapreduce.md` has the
//! protocol.

mod types;

pub use crate::limits::{MAX_EMIT_BATCH, MAX_ITEM_BYTES};
pub use types::{MapReduceSpec, MapState, Phase, MAX_ITEMS};

use crate::{ExecStatus, JobDefinition, Target, ValidationError};
use serde_json::Value;

/// Audit code of the parent's WAITING → READY move into its reduce phase.
pub const REDUCE_CODE: &str = "reduce";
/// Audit code of the parent's seal (RUNNING → WAITING once its map returned).
pub const SEAL_CODE: &str = "map_sealed";
/// Error code of an item input or result over [`MAX_ITEM_BYTES`].
pub const ITEM_TOO_LARGE: &str = "ItemTooLarge";

/// Checks `mapReduce` (called by [`JobDefinition::validate_with`]).
pub fn validate(def: &JobDefinition) -> Result<(), ValidationError> {
    let Some(spec) = &def.map_reduce else { return Ok(()) };
    let invalid = |f: &str, r: String| ValidationError { field: f.into(), reason: r };
    if !matches!(def.target, Target::InProcess(_)) {
        return Err(invalid(
            "mapReduce",
            "a map-reduce job needs an in-process target (its handler emits the items)".into(),
        ));
    }
    if def.shards.is_some() || def.broadcast.is_some() {
        return Err(invalid("mapReduce", "a job is map-reduce, sharded or broadcast, one of them".into()));
    }
    if let Some(n) = spec.max_items {
        if n == 0 || n > MAX_ITEMS {
            return Err(invalid("mapReduce.maxItems", format!("must be between 1 and {MAX_ITEMS}")));
        }
    }
    Ok(())
}

/// The phase of a map-reduce execution (`None` for any other, and for an item child).
pub fn phase_of(e: &crate::Execution) -> Option<Phase> {
    if e.definition.map_reduce.is_none() || e.child.is_some() {
        return None;
    }
    Some(match &e.map_reduce {
        Some(MapState::Parent { phase, .. }) => *phase,
        _ => Phase::Map,
    })
}

/// Whether a sealed parent may reduce: sealed (WAITING) and every emitted item counted.
pub fn ready_to_reduce(status: ExecStatus, st: Option<&MapState>) -> bool {
    matches!(st, Some(MapState::Parent { emitted, done, .. }) if status == ExecStatus::Waiting && done >= emitted)
}

/// One item the map emits: a key (1–64 characters of `[A-Za-z0-9_-]`, unique in the fire: it
/// is the item child's idempotency key) and an input (JSON, at most [`MAX_ITEM_BYTES`]).
#[derive(Debug, Clone, PartialEq)]
pub struct MapItem {
    /// The item's key.
    pub key: String,
    /// Its input.
    pub input: Value,
}

impl MapItem {
    /// An item.
    pub fn new(key: impl Into<String>, input: Value) -> Self {
        MapItem { key: key.into(), input }
    }
}

/// What an emit did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Emitted {
    /// Children this emit created.
    pub created: u64,
    /// Items whose child already existed (a batch repeated after a takeover).
    pub existing: u64,
}

/// One item's outcome, as the reduce receives it.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemResult {
    /// The item's key.
    pub key: String,
    /// Its child's final status (SUCCEEDED, FAILED, DEAD or CANCELED).
    pub status: ExecStatus,
    /// What its `run_item` returned (a succeeded item).
    pub result: Option<Value>,
    /// Its last error (code, message), for an item that did not succeed.
    pub error: Option<(String, String)>,
}
