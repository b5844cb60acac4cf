//! A pool's two queues (lanes): the main one and the low-priority one (docs/priority.md).

use serde::{Deserialize, Serialize};

/// Which of a pool's queues a message travels in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Lane {
    /// `{prefix}{pool}`: high and normal priority.
    #[default]
    Main,
    /// `{prefix}{pool}-low`: low priority and backfills.
    Low,
}

impl Lane {
    /// Whether this is the main lane (left out of messages: old messages have no lane).
    pub fn is_main(&self) -> bool {
        *self == Lane::Main
    }

    /// The suffix of its queue name after `{prefix}{pool}`.
    pub fn suffix(self) -> &'static str {
        match self {
            Lane::Main => "",
            Lane::Low => LOW_LANE_SUFFIX,
        }
    }

    /// Both lanes, in the order workers receive from them.
    pub const ALL: [Lane; 2] = [Lane::Main, Lane::Low];

    /// Its name in metrics and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Lane::Main => "main",
            Lane::Low => "low",
        }
    }
}

/// Queue-name suffix of a pool's low lane.
pub const LOW_LANE_SUFFIX: &str = "-low";
