//! A job's `outcomeNotify` receiver, judged as a webhook target is: the same address policy and
//! allowlists (`http` hosts, `secrets`, the tenant's `cidrs`), with its own field names.

use super::{Refusal, TargetPolicy};
use crate::deployment::Deployment;
use crate::outcome::OutcomeNotify;
use crate::target::{HttpTarget, Target};

impl TargetPolicy {
    /// Judges `tenant`'s notification receiver as [`TargetPolicy::check`] judges a webhook with
    /// the same URL and signing secret; a refusal names `outcomeNotify.url` or
    /// `outcomeNotify.signingSecretArn`.
    pub fn check_notify<'a>(
        &self,
        cfg: impl Into<Deployment<'a>>,
        tenant: &str,
        notify: &OutcomeNotify,
    ) -> Result<(), Refusal> {
        let as_webhook = Target::Http(HttpTarget {
            signing_secret_arn: notify.signing_secret_arn.clone(),
            ..HttpTarget::new(notify.url.clone())
        });
        self.check(cfg, tenant, &as_webhook).map_err(|mut r| {
            if let Some(rest) = r.error.field.strip_prefix("target.") {
                r.error.field = format!("outcomeNotify.{rest}");
            }
            r.error.reason = r.error.reason.replace("target.headers", "a webhook target's headers");
            r
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outbound::TenantTargets;

    fn notify(url: &str, secret: Option<&str>) -> OutcomeNotify {
        OutcomeNotify { url: url.into(), signing_secret_arn: secret.map(str::to_string) }
    }

    #[test]
    fn a_receiver_is_judged_as_a_webhook_and_refused_under_its_own_field() {
        let pools = vec!["default".to_string()];
        let policy = TargetPolicy::default();
        let cfg = Deployment { pools: &pools, shards: 16, queue_prefix: "t-sundial-", targets: &policy };
        let field = |n: &OutcomeNotify| policy.check_notify(cfg, "acme", n).err().map(|r| r.error.field);
        assert_eq!(field(&notify("https://hooks.acme.com/o", None)), None);
        for bad in ["http://hooks.acme.com/o", "https://169.254.169.254/x", "https://u:p@x.com/", "nope"] {
            assert_eq!(field(&notify(bad, None)).as_deref(), Some("outcomeNotify.url"), "{bad}");
        }
        assert_eq!(
            field(&notify("https://hooks.acme.com/o", Some("not-an-arn"))).as_deref(),
            Some("outcomeNotify.signingSecretArn")
        );
        // AND the tenant's allowlist of webhook hosts applies
        let listed = TargetPolicy {
            tenants: Some(
                TenantTargets::parse(r#"{"acme": {"http": ["*.acme.com"], "pools": ["default"]}}"#)
                    .unwrap_or_else(|e| panic!("{e}")),
            ),
            ..TargetPolicy::default()
        };
        let cfg = Deployment { targets: &listed, ..cfg };
        assert!(listed.check_notify(cfg, "acme", &notify("https://hooks.acme.com/o", None)).is_ok());
        let r = listed.check_notify(cfg, "acme", &notify("https://evil.example/o", None)).err();
        assert_eq!(r.map(|r| r.error.field).as_deref(), Some("outcomeNotify.url"));
    }
}
