//! The `inProcess` target: a Rust handler registered in the ECS worker process. The run:
//! `sundial-core`'s `execution/target/in_process.rs`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::view::PolicyView;
use crate::outbound::{invalid, Refusal};

/// Longest handler name.
pub const MAX_HANDLER_LEN: usize = 64;

/// An `inProcess` target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(description = "A Rust handler in the worker process (ECS pools)")]
pub struct InProcessTarget {
    /// a handler registered in the ECS worker
    #[schema(min_length = 1, max_length = 64)]
    pub handler: String,
}

impl InProcessTarget {
    /// Judges the name, then the tenant's `inProcess` names.
    pub fn check(&self, view: &PolicyView<'_>) -> Result<(), Refusal> {
        if self.handler.is_empty() || self.handler.len() > MAX_HANDLER_LEN {
            return Err(invalid("target.handler", "must be 1-64 characters"));
        }
        view.listed("in-process handler", "target.handler", &self.handler, |a| &a.in_process)
    }
}

#[cfg(test)]
mod tests {
    use crate::codes;
    use crate::outbound::TargetPolicy;
    use crate::target::testing::{allowlist, refusal};
    use crate::target::Target;

    #[test]
    fn a_tenant_runs_only_the_in_process_handlers_its_allowlist_lists() {
        // GIVEN acme allowed the handler `report`, and globex an allowlist without handlers
        let policy = allowlist(r#"{"acme": {"inProcess": ["report", "etl-*"]}, "globex": {"http": ["*"]}}"#);
        let handler = |h: &str| Target::in_process(h);
        let not_allowed = Some((codes::TARGET_NOT_ALLOWED, "target.handler".to_string()));
        // THEN acme runs its handlers and no other (the diagnostic `sleep` and `count` included)
        assert_eq!(refusal(&policy, "acme", &handler("report")), None);
        assert_eq!(refusal(&policy, "acme", &handler("etl-daily")), None);
        for h in ["sleep", "count"] {
            assert_eq!(refusal(&policy, "acme", &handler(h)), not_allowed, "{h}");
        }
        // AND globex runs none
        assert_eq!(refusal(&policy, "globex", &handler("report")), not_allowed);
        // AND without allowlists any registered handler may be named, as before
        assert_eq!(refusal(&TargetPolicy::default(), "globex", &handler("sleep")), None);
    }
}
