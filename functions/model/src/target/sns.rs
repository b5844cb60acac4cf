//! The `sns` target: publish the invocation to a tenant's SNS topic (fire and forget: done
//! when the topic accepted it), as the tenant (docs/targets.md). The call: `sundial-core`'s
//! `execution/target/sns.rs`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::view::PolicyView;
use crate::arn::Arn;
use crate::outbound::{invalid, Refusal};

/// Longest subject SNS takes (email subscriptions).
pub const MAX_SUBJECT_LEN: usize = 100;

/// An `sns` target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(
    description = "Publish the invocation to a tenant's SNS topic, as the tenant; done when the topic accepted it"
)]
pub struct SnsTarget {
    /// the topic's ARN; it must carry the tag sundial-tenant=<tenant>; the tenant's allowlist
    /// applies when set
    #[schema(
        min_length = 20,
        max_length = 1024,
        pattern = "^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,251}(\\.fifo)?$"
    )]
    pub topic_arn: String,
    /// the message's subject: 1-100 printable ASCII characters
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(min_length = 1, max_length = 100, pattern = "^[ -~]{1,100}$")]
    pub subject: Option<String>,
}

impl SnsTarget {
    /// Judges the topic's ARN, the subject, then the tenant's `sns` globs.
    pub fn check(&self, view: &PolicyView<'_>) -> Result<(), Refusal> {
        if !is_topic_arn(&self.topic_arn) {
            return Err(invalid(
                "target.topicArn",
                "must be an SNS topic ARN: arn:<partition>:sns:<region>:<account>:<name>",
            ));
        }
        if let Some(s) = &self.subject {
            if s.is_empty() || s.len() > MAX_SUBJECT_LEN || !s.chars().all(|c| (' '..='~').contains(&c)) {
                return Err(invalid("target.subject", "must be 1-100 printable ASCII characters"));
            }
        }
        view.listed("topic", "target.topicArn", &self.topic_arn, |a| &a.sns)
    }
}

/// `arn:<partition>:sns:<region>:<account>:<name>` with a 12-digit account and a topic name of
/// 1-256 of `[A-Za-z0-9_-]` (`.fifo` allowed at its end).
pub fn is_topic_arn(arn: &str) -> bool {
    Arn::regional(arn, "sns").is_some_and(|a| {
        let name = a.resource;
        let bare = name.strip_suffix(".fifo").unwrap_or(name);
        !bare.is_empty()
            && name.len() <= 256
            && bare.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codes;
    use crate::target::testing::{allowlist, field, refusal};
    use crate::target::Target;

    fn topic(arn: &str, subject: Option<&str>) -> Target {
        Target::Sns(SnsTarget { topic_arn: arn.to_string(), subject: subject.map(str::to_string) })
    }

    #[test]
    fn topic_targets_are_arns_checked_against_the_tenants_globs() {
        let policy = allowlist(r#"{"acme": {"sns": ["arn:aws:sns:*:123456789012:acme-*"]}}"#);
        for ok in [
            "arn:aws:sns:eu-west-1:123456789012:acme-alerts",
            "arn:aws:sns:eu-west-1:123456789012:acme-q.fifo",
        ] {
            assert_eq!(refusal(&policy, "acme", &topic(ok, Some("nightly"))), None, "{ok}");
        }
        assert_eq!(
            refusal(&policy, "acme", &topic("arn:aws:sns:eu-west-1:123456789012:globex-alerts", None)),
            field("target.topicArn", codes::TARGET_NOT_ALLOWED)
        );
        for bad in [
            "acme-alerts",
            "arn:aws:sqs:eu-west-1:123456789012:acme-alerts",
            "arn:aws:sns:eu-west-1:123456789012:acme-alerts:sub-id",
            "arn:aws:sns:eu-west-1:12345:acme-alerts",
            "arn:aws:sns:eu-west-1:123456789012:acme.alerts",
        ] {
            assert_eq!(
                refusal(&policy, "acme", &topic(bad, None)),
                field("target.topicArn", codes::BAD_TARGET),
                "{bad}"
            );
        }
        let ok = "arn:aws:sns:eu-west-1:123456789012:acme-alerts";
        assert_eq!(
            refusal(&policy, "acme", &topic(ok, Some(""))),
            field("target.subject", codes::BAD_TARGET)
        );
        assert_eq!(
            refusal(&policy, "acme", &topic(ok, Some("a\nb"))),
            field("target.subject", codes::BAD_TARGET)
        );
    }
}
