//! The `stepFunctions` target: start an execution of a tenant's state machine (a standard
//! workflow) with the invocation as its input, named after the fire, and track it to
//! completion: done when it SUCCEEDED, failed (retry policy applies) when it FAILED, TIMED_OUT
//! or was ABORTED; as the tenant (docs/targets.md). The call: `sundial-core`'s
//! `execution/target/stepfunctions.rs`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::view::PolicyView;
use crate::arn::Arn;
use crate::outbound::{invalid, Refusal};

/// Longest state machine name Step Functions takes.
pub const MAX_STATE_MACHINE_NAME: usize = 80;

/// A `stepFunctions` target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(
    description = "Start an execution of a tenant's Step Functions state machine (standard workflow) with the invocation as input, named after the fire, as the tenant; done when the execution SUCCEEDED"
)]
pub struct StepFunctionsTarget {
    /// the state machine's ARN (unqualified); it must carry the tag sundial-tenant=<tenant>; the
    /// tenant's allowlist applies when set
    #[schema(
        min_length = 45,
        max_length = 256,
        pattern = "^arn:aws[a-z-]*:states:[a-z0-9-]+:[0-9]{12}:stateMachine:[A-Za-z0-9_-]{1,80}$"
    )]
    pub state_machine_arn: String,
}

impl StepFunctionsTarget {
    /// Judges the state machine's ARN, then the tenant's `stepFunctions` globs.
    pub fn check(&self, view: &PolicyView<'_>) -> Result<(), Refusal> {
        if !is_state_machine_arn(&self.state_machine_arn) {
            return Err(invalid(
                "target.stateMachineArn",
                "must be a state machine ARN: arn:<partition>:states:<region>:<account>:stateMachine:<name>",
            ));
        }
        view.listed("state machine", "target.stateMachineArn", &self.state_machine_arn, |a| &a.step_functions)
    }
}

/// `arn:<partition>:states:<region>:<account>:stateMachine:<name>` with a 12-digit account and a
/// name of 1-80 of `[A-Za-z0-9_-]` (unqualified: no version or alias, so its executions' ARNs
/// follow from it).
pub fn is_state_machine_arn(arn: &str) -> bool {
    Arn::regional(arn, "states").and_then(|a| a.name_after("stateMachine:")).is_some_and(|name| {
        (1..=MAX_STATE_MACHINE_NAME).contains(&name.len())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    })
}

#[cfg(test)]
mod tests {
    use crate::codes;
    use crate::target::testing::{allowlist, field, refusal};
    use crate::target::Target;

    #[test]
    fn state_machine_targets_are_arns_checked_against_the_tenants_globs() {
        let machine = |arn: &str| Target::step_functions(arn);
        let policy = allowlist(
            r#"{"acme": {"stepFunctions": ["arn:aws:states:*:123456789012:stateMachine:acme-*"]}}"#,
        );
        let ok = "arn:aws:states:eu-west-1:123456789012:stateMachine:acme-settle_v2";
        assert_eq!(refusal(&policy, "acme", &machine(ok)), None);
        assert_eq!(
            refusal(
                &policy,
                "acme",
                &machine("arn:aws:states:eu-west-1:123456789012:stateMachine:globex-settle")
            ),
            field("target.stateMachineArn", codes::TARGET_NOT_ALLOWED)
        );
        for bad in [
            "acme-settle",
            "arn:aws:states:eu-west-1:123456789012:execution:acme-settle:run-1",
            "arn:aws:states:eu-west-1:123456789012:stateMachine:acme-settle:1",
            "arn:aws:states:eu-west-1:12345:stateMachine:acme-settle",
            "arn:aws:states:eu-west-1:123456789012:stateMachine:acme.settle",
            "arn:aws:sns:eu-west-1:123456789012:stateMachine:acme-settle",
        ] {
            assert_eq!(
                refusal(&policy, "acme", &machine(bad)),
                field("target.stateMachineArn", codes::BAD_TARGET),
                "{bad}"
            );
        }
        let long = format!("arn:aws:states:eu-west-1:123456789012:stateMachine:acme-{}", "x".repeat(75));
        assert_eq!(refusal(&policy, "acme", &machine(&long)), None);
        let too_long = format!("{long}x");
        assert_eq!(
            refusal(&policy, "acme", &machine(&too_long)),
            field("target.stateMachineArn", codes::BAD_TARGET)
        );
    }
}
