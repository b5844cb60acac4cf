//! The `lambda` target: invoke a tenant's Lambda function (RequestResponse), never one of
//! Sundial's own. The call: `sundial-core`'s `execution/target/lambda.rs`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::view::PolicyView;
use crate::arn::{is_account, is_region, partition_of, Arn};
use crate::codes;
use crate::outbound::{glob_match, invalid, refuse, Home, Refusal, TargetPolicy};

/// Longest function reference a job may name (Lambda's own limit for `FunctionName`).
pub const MAX_FUNCTION_LEN: usize = 170;

/// A `lambda` target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(description = "Invoke a Lambda function (RequestResponse)")]
pub struct LambdaTarget {
    /// function name or ARN; the tenant's allowlist applies when set
    #[schema(min_length = 1, max_length = 170)]
    pub function: String,
}

const FUNCTION_SHAPE: &str =
    "must be a function name, name:qualifier, <account>:function:<name>[:qualifier] or a Lambda function ARN (at most 170 characters)";

impl LambdaTarget {
    /// Judges the reference's form, that it is not one of Sundial's own functions, then the
    /// tenant's `lambda` globs (both completed into ARNs with the deployment's home).
    pub fn check(&self, view: &PolicyView<'_>) -> Result<(), Refusal> {
        let function = self.function.as_str();
        let f = FunctionRef::split(function)
            .filter(|f| function.len() <= MAX_FUNCTION_LEN && f.is_valid())
            .ok_or_else(|| invalid("target.function", FUNCTION_SHAPE))?;
        let policy = view.policy;
        if is_own_function(policy, &f, function) {
            return Err(refuse(
                codes::TARGET_NOT_ALLOWED,
                "target.function",
                "is one of Sundial's own functions",
            ));
        }
        view.allowed("Lambda function", "target.function", |a| {
            a.lambda.iter().any(|g| function_glob_matches(g, &f, function, &policy.home))
        })
    }
}

/// Whether `f` (written `text`) is one of Sundial's own functions, in any version or alias:
/// a glob matches its ARN with or without the qualifier (as [`function_glob_matches`]) or,
/// for a glob of names, its name in any account (refusing too much is harmless here, and a
/// bare name must not slip past while the account is unknown).
fn is_own_function(policy: &TargetPolicy, f: &FunctionRef<'_>, text: &str) -> bool {
    let unqualified = FunctionRef { qualifier: None, ..*f };
    let unqualified_text = text.rsplit_once(':').filter(|_| f.qualifier.is_some()).map_or(text, |(t, _)| t);
    policy.own_functions.iter().any(|g| {
        function_glob_matches(g, f, text, &policy.home)
            || function_glob_matches(g, &unqualified, unqualified_text, &policy.home)
            || (!g.contains(':') && glob_match(g, f.name))
    })
}

/// A Lambda function in one of the forms `Invoke` accepts: `name`, `name:qualifier`,
/// `account:function:name[:qualifier]` or `arn:<partition>:lambda:<region>:<account>:function:name[:qualifier]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FunctionRef<'s> {
    partition: Option<&'s str>,
    region: Option<&'s str>,
    account: Option<&'s str>,
    name: &'s str,
    qualifier: Option<&'s str>,
}

impl<'s> FunctionRef<'s> {
    /// Splits `s` by its form, `None` if it has none of them. The characters are not checked
    /// (a glob's `*` is allowed here; [`FunctionRef::is_valid`] checks a job's value).
    fn split(s: &'s str) -> Option<Self> {
        let (partition, region, account, rest) = match Arn::parse(s) {
            // An ARN is a function's only when it is Lambda's `function:` resource.
            Some(a) => {
                let rest = a.name_after("function:").filter(|_| a.service == "lambda")?;
                (Some(a.partition), Some(a.region), Some(a.account), rest)
            }
            None => match s.split_once(':') {
                Some((account, rest)) if rest.split(':').next() == Some("function") => {
                    let rest = rest.strip_prefix("function").and_then(|r| r.strip_prefix(':'));
                    (None, None, Some(account), rest.unwrap_or_default())
                }
                _ => (None, None, None, s),
            },
        };
        let (name, qualifier) = match rest.split(':').collect::<Vec<_>>()[..] {
            [name] => (name, None),
            [name, qualifier] => (name, Some(qualifier)),
            _ => return None,
        };
        let f = FunctionRef { partition, region, account, name, qualifier };
        [partition, region, account, Some(name), qualifier]
            .iter()
            .flatten()
            .all(|p| !p.is_empty())
            .then_some(f)
    }

    /// Whether every part is spelled as Lambda allows (a job's value; globs are not checked).
    fn is_valid(&self) -> bool {
        let word = |s: &str, max: usize, extra: &[u8]| {
            s.len() <= max
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || extra.contains(&b))
        };
        word(self.name, 64, b"")
            && self.qualifier.is_none_or(|q| word(q, 128, b"$"))
            && self.account.is_none_or(is_account)
            && self.region.is_none_or(is_region)
            && self.partition.is_none_or(|p| p.starts_with("aws") && word(p, 16, b""))
    }

    /// `arn:<partition>:lambda:<region>:<account>:function:<name>[:<qualifier>]`, the parts it
    /// lacks taken from `home`; `None` when one of them is unknown.
    fn arn(&self, home: &Home) -> Option<String> {
        let region = self.region.or(home.region.as_deref())?;
        let account = self.account.or(home.account.as_deref())?;
        let partition = self.partition.unwrap_or_else(|| partition_of(region));
        let qualifier = self.qualifier.map(|q| format!(":{q}")).unwrap_or_default();
        Some(format!("arn:{partition}:lambda:{region}:{account}:function:{}{qualifier}", self.name))
    }
}

/// Whether `glob` matches the function `f` (written `text`). Both are completed into ARNs with
/// the deployment's region and account, so a name glob means "in this account and region" and
/// a bare name is the function Lambda would invoke; where a part is unknown, each is compared
/// as written (a bare name then matches name globs only).
fn function_glob_matches(glob: &str, f: &FunctionRef<'_>, text: &str, home: &Home) -> bool {
    if glob == "*" {
        return true;
    }
    let value = f.arn(home).unwrap_or_else(|| text.to_string());
    let glob = FunctionRef::split(glob).and_then(|g| g.arn(home)).unwrap_or_else(|| glob.to_string());
    glob_match(&glob, &value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::testing::{allowlist, refusal};
    use crate::target::Target;

    fn lambda(function: &str) -> Target {
        Target::lambda(function)
    }

    fn home(region: &str, account: &str) -> Home {
        Home { region: Some(region.into()), account: Some(account.into()) }
    }

    #[test]
    fn function_references_split_by_their_form() {
        type Parts<'s> = (Option<&'s str>, Option<&'s str>, Option<&'s str>, &'s str, Option<&'s str>);
        fn parts(s: &str) -> Option<Parts<'_>> {
            FunctionRef::split(s).map(|f| (f.partition, f.region, f.account, f.name, f.qualifier))
        }
        assert_eq!(parts("f"), Some((None, None, None, "f", None)));
        assert_eq!(parts("f:live"), Some((None, None, None, "f", Some("live"))));
        assert_eq!(parts("123456789012:function:f"), Some((None, None, Some("123456789012"), "f", None)));
        assert_eq!(
            parts("arn:aws:lambda:eu-west-1:123456789012:function:f:3"),
            Some((Some("aws"), Some("eu-west-1"), Some("123456789012"), "f", Some("3")))
        );
        for none in [
            "",
            "a:b:c",
            "x:y:z:w",
            "arn:aws:s3:eu-west-1:123456789012:function:f",
            "arn:aws:lambda:eu-west-1:123456789012:layer:f",
            "arn:aws:lambda:eu-west-1:123456789012:function",
            "arn:aws:lambda:eu-west-1:123456789012:function:f:3:x",
            "arn:function:a:b:c:d",
        ] {
            assert_eq!(parts(none), None, "{none}");
        }
        assert_eq!(parts("arn:function:f"), Some((None, None, Some("arn"), "f", None)), "not an ARN");
        assert_eq!(parts("123456789012:function"), None);
    }

    #[test]
    fn sundials_own_functions_are_not_targets() {
        // GIVEN a deployment in eu-west-1 of 123456789012 whose own functions are acme-sundial-*
        // and, by ARN, ops-sched-*; no tenant allowlist
        let mut policy = TargetPolicy {
            own_functions: vec![
                "acme-sundial-*".into(),
                "arn:aws:lambda:*:123456789012:function:ops-sched-*".into(),
            ],
            home: home("eu-west-1", "123456789012"),
            ..TargetPolicy::default()
        };
        let own = Some((codes::TARGET_NOT_ALLOWED, "target.function".to_string()));
        // THEN each is refused by name, qualified name, partial ARN or ARN
        for f in [
            "acme-sundial-api",
            "acme-sundial-tick:live",
            "123456789012:function:acme-sundial-scan",
            "arn:aws:lambda:eu-west-1:123456789012:function:acme-sundial-worker",
            "ops-sched-run",
            "arn:aws:lambda:eu-west-1:123456789012:function:ops-sched-run:3",
        ] {
            assert_eq!(refusal(&policy, "acme", &lambda(f)), own, "{f}");
        }
        let cfg = crate::LocalDeployment::local("t-", &["default"], 16);
        let message = policy.check(&cfg, "acme", &lambda("acme-sundial-api"));
        assert!(message.is_err_and(|r| r.error.reason.contains("Sundial's own functions")));
        // AND other functions are targets, also one of another account under the ARN glob's name
        for f in ["acme-run", "arn:aws:lambda:eu-west-1:999999999999:function:ops-sched-run"] {
            assert_eq!(refusal(&policy, "acme", &lambda(f)), None, "{f}");
        }
        // AND with the account unknown a name glob still refuses the name in any ARN
        policy.home = Home::default();
        let f = "arn:aws:lambda:us-east-1:999999999999:function:acme-sundial-api";
        assert_eq!(refusal(&policy, "acme", &lambda(f)), own);
    }

    #[test]
    fn function_names_are_completed_into_arns_before_matching() {
        // GIVEN a deployment in eu-west-1 of 123456789012; acme allowed acme-* of its account by
        // ARN glob, globex allowed globex-* by name glob (this deployment's account and region)
        let mut policy = allowlist(
            r#"{"acme": {"lambda": ["arn:aws:lambda:*:123456789012:function:acme-*"]},
                "globex": {"lambda": ["globex-*"]}}"#,
        );
        policy.home = home("eu-west-1", "123456789012");
        let not_allowed = Some((codes::TARGET_NOT_ALLOWED, "target.function".to_string()));
        // THEN a bare name and a partial ARN are the function in the deployment's account
        for f in [
            "acme-run",
            "123456789012:function:acme-run",
            "arn:aws:lambda:eu-west-1:123456789012:function:acme-run",
        ] {
            assert_eq!(refusal(&policy, "acme", &lambda(f)), None, "{f}");
        }
        // AND another account's function of the same name is not, nor a qualifier the glob
        // does not name (a `*` never crosses `:`)
        for f in ["arn:aws:lambda:eu-west-1:999999999999:function:acme-run", "acme-run:prod"] {
            assert_eq!(refusal(&policy, "acme", &lambda(f)), not_allowed, "{f}");
        }
        // AND a name glob means this deployment's account and region
        assert_eq!(refusal(&policy, "globex", &lambda("globex-run")), None);
        assert_eq!(
            refusal(&policy, "globex", &lambda("arn:aws:lambda:eu-west-1:123456789012:function:globex-run")),
            None
        );
        for f in [
            "arn:aws:lambda:eu-west-1:999999999999:function:globex-run",
            "arn:aws:lambda:us-east-1:123456789012:function:globex-run",
        ] {
            assert_eq!(refusal(&policy, "globex", &lambda(f)), not_allowed, "{f}");
        }
        // AND what is not a function reference is refused as such
        for f in ["acme run", "arn:aws:lambda:eu-west-1:123456789012:function:", "a:b:c", "", "x:y:z:w"] {
            let bad = Some((codes::BAD_TARGET, "target.function".to_string()));
            assert_eq!(refusal(&policy, "acme", &lambda(f)), bad, "{f:?}");
        }
        // AND with the account unknown names are matched as written, as before
        policy.home = Home::default();
        assert_eq!(refusal(&policy, "acme", &lambda("acme-run")), not_allowed);
        assert_eq!(refusal(&policy, "globex", &lambda("globex-run")), None);
    }
}
