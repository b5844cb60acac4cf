//! The `sqs` target: send the invocation to a user's SQS queue, parsed strictly into region,
//! account and name (so the queue judged is the queue SQS uses) and never one of Sundial's own
//! queues (a job that sends to them would forge executions). The call: `sundial-core`'s
//! `execution/target/sqs.rs`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::view::PolicyView;
use crate::codes;
use crate::deployment::Deployment;
use crate::lane::Lane;
use crate::outbound::{parse_queue_url, refuse, QueueRef, Refusal};

/// An `sqs` target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(description = "Send the invocation to an SQS queue")]
pub struct SqsTarget {
    /// the queue's URL; never one of Sundial's own queues; the tenant's allowlist applies when
    /// set
    // `queue_url` is read from definitions stored before 0.2.
    #[serde(alias = "queue_url")]
    #[schema(min_length = 8, max_length = 1024, pattern = "^https?://")]
    pub queue_url: String,
}

impl SqsTarget {
    /// Judges the URL (strictly, as an AWS or emulator queue URL), that the queue is not
    /// Sundial's own, then the tenant's `sqs` ARN globs.
    pub fn check(&self, view: &PolicyView<'_>) -> Result<(), Refusal> {
        let policy = view.policy;
        let queue = parse_queue_url(&self.queue_url, &policy.addresses, &policy.home)?;
        let queue = check_not_own(&view.deployment, queue)?;
        view.listed("queue", "target.queueUrl", &queue.arn(), |a| &a.sqs)
    }
}

/// Refuses Sundial's own queues: a current pool's lanes (`{prefix}{pool}`, `{prefix}{pool}-low`),
/// dead-letter queue and notification queue (`{prefix}{pool}-notify`), and any other name under the pool queues' prefix (a pool added or
/// renamed later). With an empty prefix only the first rule can apply, so it must name every
/// lane.
fn check_not_own(cfg: &Deployment<'_>, queue: QueueRef) -> Result<QueueRef, Refusal> {
    let base = queue.name.trim_end_matches(".fifo");
    let own = (!cfg.queue_prefix.is_empty() && base.starts_with(cfg.queue_prefix))
        || cfg.pools.iter().any(|p| {
            base == cfg.dlq_name(p)
                || base == cfg.notify_queue_name(p)
                || Lane::ALL.iter().any(|lane| base == cfg.lane_queue_name(p, *lane))
        });
    if own {
        return Err(refuse(codes::TARGET_NOT_ALLOWED, "target.queueUrl", "is one of Sundial's own queues"));
    }
    Ok(queue)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outbound::{AddressPolicy, TargetPolicy, TenantTargets};
    use crate::target::testing::{allowlist, refusal};
    use crate::target::Target;

    fn sqs(url: &str) -> Target {
        Target::sqs(url)
    }

    #[test]
    fn queue_urls_are_parsed_strictly_and_matched_as_arns() {
        // GIVEN acme allowed its own account's acme-* queues, by ARN glob
        let policy = allowlist(r#"{"acme": {"sqs": ["arn:aws:sqs:*:123456789012:acme-*"]}}"#);
        let bad = Some((codes::BAD_TARGET, "target.queueUrl".to_string()));
        let not_allowed = Some((codes::TARGET_NOT_ALLOWED, "target.queueUrl".to_string()));
        // THEN its queues are accepted in both AWS host forms
        for url in [
            "https://sqs.eu-west-1.amazonaws.com/123456789012/acme-inbox",
            "https://eu-west-1.queue.amazonaws.com/123456789012/acme-inbox.fifo",
        ] {
            assert_eq!(refusal(&policy, "acme", &sqs(url)), None, "{url}");
        }
        // AND a queue of another account, or of another partition, is not allowed
        for url in [
            "https://sqs.us-east-1.amazonaws.com/999999999999/acme-inbox",
            "https://sqs.cn-north-1.amazonaws.com.cn/123456789012/acme-inbox",
        ] {
            assert_eq!(refusal(&policy, "acme", &sqs(url)), not_allowed, "{url}");
        }
        let cn = allowlist(r#"{"acme": {"sqs": ["arn:aws-cn:sqs:*:123456789012:acme-*"]}}"#);
        assert_eq!(
            refusal(&cn, "acme", &sqs("https://sqs.cn-north-1.amazonaws.com.cn/123456789012/acme-q")),
            None
        );
        // AND a URL that a second parser could read as another queue is not a queue URL at all
        for url in [
            "https://sqs.us-east-1.amazonaws.com/999999999999/globex-q?x=.amazonaws.com/123456789012/acme-1",
            "https://sqs.us-east-1.amazonaws.com/123456789012/acme-x/../globex-q",
            "https://sqs.us-east-1.amazonaws.com/123456789012/acme-x/%2e%2e/globex-q",
            "https://sqs.us-east-1.amazonaws.com/123456789012/acme-x#globex",
            "https://sqs.us-east-1.amazonaws.com/123456789012/acme-x?",
            "https://user@sqs.us-east-1.amazonaws.com/123456789012/acme-x",
            "https://sqs.us-east-1.amazonaws.com/queue/123456789012/acme-x",
            "https://sqs.us-east-1.amazonaws.com/123456789012/acme-x/",
            "https://sqs.us-east-1.amazonaws.com/12345678901/acme-x",
            "https://sqs.us-east-1.amazonaws.com.evil.net/123456789012/acme-x",
            "https://evil.net/123456789012/acme-x",
            "http://sqs.us-east-1.amazonaws.com/123456789012/acme-x",
            "http://127.0.0.1:4566/000000000000/acme-x",
        ] {
            assert_eq!(refusal(&policy, "acme", &sqs(url)), bad, "{url}");
        }
        // AND a URL-shaped glob is refused when the setting is read, saying what to write
        let e =
            TenantTargets::parse(r#"{"acme": {"sqs": ["https://sqs.*.amazonaws.com/123456789012/acme-*"]}}"#);
        assert!(e.as_ref().is_err_and(|e| e.contains("ARN glob")), "{e:?}");
    }

    #[test]
    fn the_emulators_queue_urls_are_queue_urls_under_the_dev_policy() {
        // GIVEN the dev-loopback policy and the URL shapes MiniStack, moto and LocalStack return
        let mut policy = allowlist(r#"{"acme": {"sqs": ["arn:aws:sqs:*:*:acme-*"]}}"#);
        policy.addresses = AddressPolicy::dev_loopback();
        // THEN each is accepted and matched as an ARN
        for url in [
            "http://127.0.0.1:4566/000000000000/acme-q",
            "http://localhost:4566/000000000000/acme-q",
            "http://127.0.0.1:4567/123456789012/acme-q",
            "http://sqs.us-east-1.localhost.localstack.cloud:4566/000000000000/acme-q",
            "http://[::1]:4566/000000000000/acme-q",
        ] {
            assert_eq!(refusal(&policy, "acme", &sqs(url)), None, "{url}");
            assert_eq!(
                refusal(&policy, "acme", &sqs(&url.replace("acme-q", "globex-q"))),
                Some((codes::TARGET_NOT_ALLOWED, "target.queueUrl".to_string())),
                "{url}"
            );
        }
        // AND a non-loopback host is still held to the AWS shape
        assert_eq!(
            refusal(&policy, "acme", &sqs("http://sqs.evil.net:4566/000000000000/acme-q")),
            Some((codes::BAD_TARGET, "target.queueUrl".to_string()))
        );
    }

    #[test]
    fn an_empty_queue_prefix_still_refuses_every_lane_of_a_pool() {
        // GIVEN a deployment whose pool queues have no prefix (the CDK allows queuePrefix '')
        let policy = TargetPolicy::default();
        let pools = vec!["default".to_string()];
        let cfg = Deployment { pools: &pools, shards: 16, queue_prefix: "", targets: &policy };
        // THEN the pool queue, its low lane, its DLQ and its notification queue are all Sundial's own
        for name in ["default", "default-low", "default-dlq", "default-low.fifo", "default-notify"] {
            let url = format!("https://sqs.us-east-1.amazonaws.com/123456789012/{name}");
            let refused = policy.check(cfg, "acme", &sqs(&url)).err().map(|r| (r.code, r.error.field));
            assert_eq!(refused, Some((codes::TARGET_NOT_ALLOWED, "target.queueUrl".to_string())), "{name}");
        }
        // AND a user's queue named after no pool is a target
        let url = "https://sqs.us-east-1.amazonaws.com/123456789012/default-inbox";
        assert!(policy.check(cfg, "acme", &sqs(url)).is_ok());
    }
}
