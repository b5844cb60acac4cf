//! Where the API is and who the caller is, as flags; and the [`sundial_client::Client`] they
//! make. The HTTP client itself (auth, retries, pagination) is the `sundial-client` crate.

use anyhow::{bail, Context};
use sundial_client::{Auth, Client, Iam};
use sundial_model::resources::{Defaults, EnvNames, Resources};

fn names() -> &'static EnvNames {
    &Resources::get().env
}

fn defaults() -> &'static Defaults {
    &Resources::get().defaults
}

/// Where the API is and who the caller is. The variable names and the default URL come from
/// `resources.json` (`envLoaders.ApiArgs`), like every other setting.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct ApiArgs {
    /// Base URL of the API (the local run prints it; deployed: the stack's ApiUrl output).
    #[arg(long, env = names().api_url.as_str(), default_value = defaults().api_url.as_str(), global = true)]
    pub api_url: String,
    /// Bearer token for the deployed API's JWT authorizer.
    #[arg(long, env = names().token.as_str(), hide_env_values = true, global = true)]
    pub token: Option<String>,
    /// Tenant for the local run's API (sent as X-Sundial-Tenant; the deployed API ignores it).
    #[arg(long, env = names().tenant.as_str(), global = true)]
    pub tenant: Option<String>,
    /// How to authenticate: none (the local run), jwt (--token as a bearer), iam (SigV4 with the
    /// standard AWS credential chain). Default: jwt when a token is given, else none.
    #[arg(long, value_enum, env = names().auth.as_str(), global = true)]
    pub auth: Option<AuthMode>,
    /// Region to sign for with --auth iam (default: the execute-api URL's, else AWS_REGION).
    #[arg(long, global = true)]
    pub region: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text", global = true)]
    pub output: Output,
}

/// `--auth`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AuthMode {
    /// No credentials (the local run's server).
    None,
    /// `Authorization: Bearer <--token>` (API Gateway JWT authorizer).
    Jwt,
    /// SigV4 with the AWS credential chain (API Gateway IAM authorizer).
    Iam,
}

/// How results are printed.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Output {
    /// Tables and lines for people.
    Text,
    /// The API's JSON, for scripts.
    Json,
}

impl ApiArgs {
    /// The auth mode the flags ask for.
    fn auth_mode(&self) -> AuthMode {
        self.auth.unwrap_or(if self.token.is_some() { AuthMode::Jwt } else { AuthMode::None })
    }

    /// A client of the API the flags name. Retries are reported on stderr (stdout carries the
    /// answer, which scripts read).
    pub(crate) async fn client(&self) -> anyhow::Result<Client> {
        let auth = match (self.auth_mode(), &self.token) {
            (AuthMode::None, _) => Auth::None,
            (AuthMode::Jwt, Some(t)) => Auth::Jwt(t.clone()),
            (AuthMode::Jwt, None) => bail!("--auth jwt needs a token (--token or {})", names().token),
            (AuthMode::Iam, _) => Auth::Iam(Iam::from_env(self.region.clone()).await?),
        };
        if self.region.is_some() && self.auth_mode() != AuthMode::Iam {
            bail!("--region is for --auth iam");
        }
        Client::builder(&self.api_url)
            .auth(auth)
            .tenant(self.tenant.clone())
            .on_retry(|n| {
                let key = if n.idempotency_key.is_some() { " with the same Idempotency-Key" } else { "" };
                eprintln!("retrying in {} ms{key} after: {}", n.wait.as_millis(), n.error);
            })
            .build()
            .with_context(|| format!("setting up the API client for {}", self.api_url))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(token: Option<&str>, auth: Option<AuthMode>) -> ApiArgs {
        ApiArgs {
            api_url: "http://127.0.0.1:9".into(),
            token: token.map(str::to_string),
            tenant: None,
            auth,
            region: None,
            output: Output::Text,
        }
    }

    #[tokio::test]
    async fn the_auth_mode_defaults_to_jwt_with_a_token_and_none_without() {
        assert_eq!(args(Some("t"), None).auth_mode(), AuthMode::Jwt);
        assert_eq!(args(None, None).auth_mode(), AuthMode::None);
        assert_eq!(args(Some("t"), Some(AuthMode::None)).auth_mode(), AuthMode::None);
        let err = args(None, Some(AuthMode::Jwt)).client().await.err().map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("needs a token")));
        let with_region = ApiArgs { region: Some("eu-west-1".into()), ..args(None, None) };
        assert!(with_region.client().await.is_err());
    }
}
