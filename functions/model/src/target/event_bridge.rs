//! The `eventBridge` target: put the invocation as the `detail` of one event on a tenant's bus
//! (source `sundial.job`; fire and forget: done when the bus accepted it), as the tenant
//! (docs/targets.md). The call: `sundial-core`'s `execution/target/eventbridge.rs`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::view::PolicyView;
use crate::arn::Arn;
use crate::outbound::{invalid, Refusal};

/// Longest `detail-type` EventBridge takes.
pub const MAX_DETAIL_TYPE_CHARS: usize = 128;

/// An `eventBridge` target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(
    description = "Put the invocation as one event's detail on a tenant's EventBridge bus (source sundial.job), as the tenant; done when the bus accepted it"
)]
pub struct EventBridgeTarget {
    /// the bus's ARN; it must carry the tag sundial-tenant=<tenant>; the tenant's allowlist
    /// applies when set
    #[schema(
        min_length = 30,
        max_length = 1600,
        pattern = "^arn:aws[a-z-]*:events:[a-z0-9-]+:[0-9]{12}:event-bus/[A-Za-z0-9._/-]{1,256}$"
    )]
    pub event_bus_arn: String,
    /// the event's detail-type (default SundialJobFired)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(min_length = 1, max_length = 128)]
    pub detail_type: Option<String>,
}

impl EventBridgeTarget {
    /// Judges the bus's ARN, the detail type, then the tenant's `eventBridge` globs.
    pub fn check(&self, view: &PolicyView<'_>) -> Result<(), Refusal> {
        if !is_event_bus_arn(&self.event_bus_arn) {
            return Err(invalid(
                "target.eventBusArn",
                "must be an event bus ARN: arn:<partition>:events:<region>:<account>:event-bus/<name>",
            ));
        }
        if let Some(t) = &self.detail_type {
            if t.is_empty() || t.chars().count() > MAX_DETAIL_TYPE_CHARS {
                return Err(invalid("target.detailType", "must be 1-128 characters"));
            }
        }
        view.listed("event bus", "target.eventBusArn", &self.event_bus_arn, |a| &a.event_bridge)
    }
}

/// `arn:<partition>:events:<region>:<account>:event-bus/<name>` with a 12-digit account and a
/// bus name of 1-256 of `[A-Za-z0-9._-/]`.
pub fn is_event_bus_arn(arn: &str) -> bool {
    Arn::regional(arn, "events").and_then(|a| a.name_after("event-bus/")).is_some_and(|name| {
        !name.is_empty()
            && name.len() <= 256
            && name.chars().all(|c| c.is_ascii_alphanumeric() || "._-/".contains(c))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codes;
    use crate::target::testing::{allowlist, field, refusal};
    use crate::target::Target;

    fn bus(arn: &str, dt: Option<&str>) -> Target {
        Target::EventBridge(EventBridgeTarget {
            event_bus_arn: arn.to_string(),
            detail_type: dt.map(str::to_string),
        })
    }

    #[test]
    fn event_bus_targets_are_arns_checked_against_the_tenants_globs() {
        let policy =
            allowlist(r#"{"acme": {"eventBridge": ["arn:aws:events:*:123456789012:event-bus/acme-*"]}}"#);
        assert_eq!(
            refusal(&policy, "acme", &bus("arn:aws:events:eu-west-1:123456789012:event-bus/acme-ops", None)),
            None
        );
        assert_eq!(
            refusal(
                &policy,
                "acme",
                &bus("arn:aws:events:eu-west-1:123456789012:event-bus/globex-ops", None)
            ),
            field("target.eventBusArn", codes::TARGET_NOT_ALLOWED)
        );
        for bad in [
            "acme-ops",
            "arn:aws:sqs:eu-west-1:123456789012:acme-ops",
            "arn:aws:events:eu-west-1:1234:event-bus/acme-ops",
            "arn:aws:events:eu-west-1:123456789012:rule/acme-ops",
            "arn:aws:events:eu-west-1:123456789012:event-bus/",
        ] {
            assert_eq!(
                refusal(&policy, "acme", &bus(bad, None)),
                field("target.eventBusArn", codes::BAD_TARGET),
                "{bad}"
            );
        }
        let long = "x".repeat(129);
        let ok_bus = "arn:aws:events:eu-west-1:123456789012:event-bus/acme-ops";
        assert_eq!(
            refusal(&policy, "acme", &bus(ok_bus, Some(&long))),
            field("target.detailType", codes::BAD_TARGET)
        );
        // A tenant without eventBridge globs may name no bus.
        let other = allowlist(r#"{"acme": {"sqs": ["*"]}}"#);
        assert_eq!(
            refusal(&other, "acme", &bus(ok_bus, None)),
            field("target.eventBusArn", codes::TARGET_NOT_ALLOWED)
        );
    }
}
