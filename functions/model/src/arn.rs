//! One reading of an ARN, `arn:<partition>:<service>:<region>:<account>:<resource>`, for every
//! validator that judges one (targets, secrets, roles, queues, the API's callers): each asks
//! for the parts it needs instead of splitting the text its own way, so "a 12-digit account" or
//! "a region of `[a-z0-9-]`" means the same thing wherever an ARN is read.

/// The six parts of an ARN. `resource` is everything after the fifth `:`, so it may itself hold
/// `:` and `/` (`function:name:qualifier`, `task-definition/family:3`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arn<'a> {
    /// `aws`, `aws-cn`, `aws-us-gov`, ...
    pub partition: &'a str,
    /// `lambda`, `ecs`, `states`, ...
    pub service: &'a str,
    /// The region; empty for a global service (IAM).
    pub region: &'a str,
    /// The account id; empty for some resources (S3 buckets).
    pub account: &'a str,
    /// The resource: its type and name, written as the service writes them.
    pub resource: &'a str,
}

impl<'a> Arn<'a> {
    /// Splits `s` into its six parts: `None` unless it starts with `arn:` and has them all. The
    /// parts themselves are not judged (see [`Arn::regional`]).
    pub fn parse(s: &'a str) -> Option<Self> {
        let mut parts = s.splitn(6, ':');
        if parts.next()? != "arn" {
            return None;
        }
        Some(Arn {
            partition: parts.next()?,
            service: parts.next()?,
            region: parts.next()?,
            account: parts.next()?,
            resource: parts.next()?,
        })
    }

    /// An ARN of `service` as a regional resource has it: an `aws*` partition, a region of
    /// `[a-z0-9-]` and a 12-digit account. The resource is the caller's to judge.
    pub fn regional(s: &'a str, service: &str) -> Option<Self> {
        Self::parse(s).filter(|a| {
            a.service == service
                && a.partition.starts_with("aws")
                && is_region_text(a.region)
                && is_account(a.account)
        })
    }

    /// The resource's name after `kind` and its separator (`"cluster/"`, `"stateMachine:"`),
    /// `None` when the resource is of another kind.
    pub fn name_after(&self, kind_and_separator: &str) -> Option<&'a str> {
        self.resource.strip_prefix(kind_and_separator)
    }
}

/// A 12-digit account id.
pub fn is_account(s: &str) -> bool {
    s.len() == 12 && s.bytes().all(|b| b.is_ascii_digit())
}

/// A non-empty region written with `[a-z0-9-]` (what an ARN's region may hold; see
/// [`is_region`] for the stricter form a region name has).
pub fn is_region_text(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// `us-east-1`, `cn-north-1`, `us-gov-west-1`: lowercase words and a number, joined by `-`.
pub fn is_region(r: &str) -> bool {
    r.len() <= 32
        && r.contains('-')
        && r.starts_with(|c: char| c.is_ascii_lowercase())
        && r.ends_with(|c: char| c.is_ascii_digit())
        && !r.contains("--")
        && r.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// The partition a region belongs to.
pub fn partition_of(region: &str) -> &'static str {
    if region.starts_with("cn-") {
        "aws-cn"
    } else if region.starts_with("us-gov-") {
        "aws-us-gov"
    } else {
        "aws"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_arn_splits_into_six_parts_with_the_resource_whole() {
        let a = Arn::parse("arn:aws:lambda:eu-west-1:123456789012:function:f:live");
        assert_eq!(
            a,
            Some(Arn {
                partition: "aws",
                service: "lambda",
                region: "eu-west-1",
                account: "123456789012",
                resource: "function:f:live",
            })
        );
        assert_eq!(a.and_then(|a| a.name_after("function:")), Some("f:live"));
        let role = Arn::parse("arn:aws:iam::123456789012:role/x").map(|a| (a.region, a.resource));
        assert_eq!(role, Some(("", "role/x")));
        for bad in ["", "arn", "arn:aws:sns:eu-west-1:123456789012", "urn:aws:sns:r:1:t", "f:live"] {
            assert_eq!(Arn::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_regional_arn_has_an_aws_partition_a_region_and_an_account() {
        let ok = "arn:aws-cn:ecs:cn-north-1:123456789012:cluster/batch";
        assert!(Arn::regional(ok, "ecs").is_some());
        assert!(Arn::regional(ok, "sns").is_none(), "another service");
        for bad in [
            "arn:gcp:ecs:eu-west-1:123456789012:cluster/batch",
            "arn:aws:ecs::123456789012:cluster/batch",
            "arn:aws:ecs:EU-west-1:123456789012:cluster/batch",
            "arn:aws:ecs:eu-west-1:12345678901:cluster/batch",
            "arn:aws:ecs:eu-west-1:12345678901x:cluster/batch",
        ] {
            assert!(Arn::regional(bad, "ecs").is_none(), "{bad}");
        }
    }

    #[test]
    fn regions_and_partitions() {
        for ok in ["us-east-1", "cn-north-1", "us-gov-west-1", "eu-central-2"] {
            assert!(is_region(ok), "{ok}");
        }
        for bad in ["", "useast1", "us--east-1", "-us-east-1", "us-east-", "US-east-1", "us-east-x"] {
            assert!(!is_region(bad), "{bad}");
        }
        assert_eq!(partition_of("cn-north-1"), "aws-cn");
        assert_eq!(partition_of("us-gov-west-1"), "aws-us-gov");
        assert_eq!(partition_of("eu-west-1"), "aws");
    }
}
