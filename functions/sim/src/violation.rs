//! One broken promise, as every check reports it: the invariants ([`crate::invariants`]) and
//! the targets' own checks ([`crate::stepfunctions`], [`crate::ecs`]).
//!
//! Its own file because the invariants read the workload, which names the targets: with the
//! type in `invariants.rs`, the targets' modules would import the invariants and, through the
//! workload, the invariants them.

/// One broken promise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Which invariant.
    pub invariant: &'static str,
    /// What was seen.
    pub detail: String,
    /// The execution involved, if one.
    pub execution: Option<String>,
}
