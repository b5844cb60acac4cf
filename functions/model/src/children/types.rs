//! The children's types a definition and an execution embed: a broadcast job's
//! [`Broadcast`] set, the [`ChildKey`] naming one child, and a parent's [`Tally`]. Below the
//! definition, the execution and the key formats, so it imports only leaves of the crate
//! ([`ExecStatus`], the schema helpers); the rules over them are `children.rs`'s.

use crate::execution::status::ExecStatus;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use sundial_schedule::id::validate_id;

/// A broadcast job's target set: one child per member, each seeing its member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(
    description = "Broadcast job (docs/children.md): each fire runs as one child execution per member, each invoked with its member; every member does the whole job (cache warm-ups, per-region refreshes), never work that must happen once, such as moving money. Not with shards."
)]
pub struct Broadcast {
    /// The members (1–100 distinct ids of `[A-Za-z0-9_-]`, e.g. regions or cells).
    #[schema(schema_with = crate::schema::members)]
    pub members: Vec<String>,
}

/// Which child of a parent an execution is.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum ChildKey {
    /// Shard `i` of a sharded job (0-based, below `shards`).
    Shard(u32),
    /// One member of a broadcast job's set.
    Member(String),
    /// One item of a map step (reserved: emitted at run time by an in-process handler, each
    /// with its own idempotency key, followed by a fenced reduce; not created yet).
    Item(String),
}

impl ChildKey {
    /// The short tag in ids and in the parent's tally: `s3`, `m-eu-west-1`, `i-<key>`.
    pub fn tag(&self) -> String {
        match self {
            ChildKey::Shard(i) => format!("s{i}"),
            ChildKey::Member(m) => format!("m-{m}"),
            ChildKey::Item(k) => format!("i-{k}"),
        }
    }

    /// The part of the sort key: as [`ChildKey::tag`], shard indexes zero-padded to sort.
    pub fn sort_part(&self) -> String {
        match self {
            ChildKey::Shard(i) => format!("s{i:05}"),
            other => other.tag(),
        }
    }

    /// Parses a tag or a sort part.
    pub fn parse(s: &str) -> Option<Self> {
        let ok_id = |v: &str| validate_id("child", v).is_ok();
        if let Some(i) = s.strip_prefix('s') {
            return (!i.is_empty() && i.len() <= 5 && i.bytes().all(|b| b.is_ascii_digit()))
                .then(|| i.parse().ok().map(ChildKey::Shard))
                .flatten();
        }
        if let Some(m) = s.strip_prefix("m-") {
            return ok_id(m).then(|| ChildKey::Member(m.to_string()));
        }
        if let Some(k) = s.strip_prefix("i-") {
            return ok_id(k).then(|| ChildKey::Item(k.to_string()));
        }
        None
    }
}

/// A parent's children: how many, and the final status of each one counted so far (by tag).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Tally {
    /// How many children the fan-out created.
    pub total: u32,
    /// Final status of each child counted so far, by [`ChildKey::tag`].
    pub finished: BTreeMap<String, ExecStatus>,
}
