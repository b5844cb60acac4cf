//! Who the caller is: nothing (the local run), a bearer token (the JWT authorizer), or AWS
//! credentials that sign each request with SigV4 (the IAM authorizer, the construct's default).
//!
//! IAM signing uses the SDK's own signer (`aws-sigv4`) with service `execute-api`, over the
//! exact bytes sent: method, path, query string, every header the client sets and the SHA-256
//! of the body. Each attempt of a retried request is signed again, at its own instant.

use crate::error::Error;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_credential_types::Credentials;
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use std::fmt;
use std::time::SystemTime;

/// The SigV4 service name of API Gateway.
pub const EXECUTE_API: &str = "execute-api";

/// How requests are authenticated.
#[derive(Clone, Default)]
pub enum Auth {
    /// No credentials: the local run's server, which takes the tenant from `X-Sundial-Tenant`
    /// ([`crate::ClientBuilder::tenant`]).
    #[default]
    None,
    /// `Authorization: Bearer <token>` (API Gateway JWT authorizer).
    Jwt(String),
    /// SigV4-signed requests (API Gateway IAM authorizer).
    Iam(Iam),
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Auth::None => f.write_str("None"),
            Auth::Jwt(_) => f.write_str("Jwt(<redacted>)"),
            Auth::Iam(i) => f.debug_tuple("Iam").field(i).finish(),
        }
    }
}

/// IAM credentials and the region to sign for.
#[derive(Clone)]
pub struct Iam {
    credentials: SharedCredentialsProvider,
    /// Set by the caller: wins over the URL's region.
    region: Option<String>,
    /// The AWS configuration's region (`AWS_REGION`, the profile): used when neither the caller
    /// nor the URL says.
    default_region: Option<String>,
}

impl fmt::Debug for Iam {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Iam")
            .field("region", &self.region)
            .field("default_region", &self.default_region)
            .finish_non_exhaustive()
    }
}

impl Iam {
    /// Signs with `credentials`, for `region` if given (else the URL's).
    pub fn new(credentials: impl ProvideCredentials + 'static, region: Option<String>) -> Iam {
        Iam { credentials: SharedCredentialsProvider::new(credentials), region, default_region: None }
    }

    /// The standard AWS credential chain (environment, profile, SSO, web identity, container,
    /// instance metadata) and region, through `aws-config`. `region`, if given, wins over the
    /// region of the API's URL, which wins over the configured one.
    ///
    /// Behind the `default-credentials` feature: the chain's web-identity and SSO providers
    /// pull `aws-config` and the STS and SSO service crates, which a client that is handed its
    /// credentials ([`Iam::new`]) does not need.
    #[cfg(feature = "default-credentials")]
    pub async fn from_env(region: Option<String>) -> Result<Iam, Error> {
        let conf = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
        let credentials = conf
            .credentials_provider()
            .ok_or_else(|| Error::Signing("the AWS configuration has no credentials provider".into()))?;
        Ok(Iam { credentials, region, default_region: conf.region().map(|r| r.to_string()) })
    }

    /// The region to sign for when calling `base_url`.
    pub(crate) fn region_for(&self, base_url: &str) -> Result<String, Error> {
        self.region
            .clone()
            .or_else(|| region_of_url(base_url))
            .or_else(|| self.default_region.clone())
            .ok_or_else(|| {
                Error::Invalid(format!(
                    "IAM auth needs a region: {base_url} is not an execute-api URL; set it explicitly \
                     (--region) or in the AWS configuration (AWS_REGION)"
                ))
            })
    }

    pub(crate) async fn credentials(&self) -> Result<Credentials, Error> {
        self.credentials
            .provide_credentials()
            .await
            .map_err(|e| Error::Signing(format!("no AWS credentials: {e}")))
    }
}

/// The region of an API Gateway URL: `https://{id}.execute-api.{region}.amazonaws.com[.cn]/...`.
pub fn region_of_url(url: &str) -> Option<String> {
    let uri: hyper::Uri = url.parse().ok()?;
    let labels: Vec<&str> = uri.host()?.split('.').collect();
    match labels.as_slice() {
        [_, "execute-api", region, "amazonaws", "com", ..] if !region.is_empty() => Some(region.to_string()),
        _ => None,
    }
}

/// Signs `req` (whose body is `body`) with SigV4 for `service` in `region` at `time`: adds
/// `x-amz-date`, `x-amz-security-token` (temporary credentials) and `authorization`.
pub fn sign<B>(
    req: &mut hyper::Request<B>,
    body: &[u8],
    credentials: &Credentials,
    region: &str,
    service: &str,
    time: SystemTime,
) -> Result<(), Error> {
    let instructions = {
        let mut headers = Vec::with_capacity(req.headers().len());
        for (k, v) in req.headers() {
            let v = v.to_str().map_err(|_| Error::Invalid(format!("header {k} is not visible ASCII")))?;
            headers.push((k.as_str(), v));
        }
        let uri = req.uri().to_string();
        let signable =
            SignableRequest::new(req.method().as_str(), uri, headers.into_iter(), SignableBody::Bytes(body))
                .map_err(|e| Error::Signing(e.to_string()))?;
        let identity: Identity = credentials.clone().into();
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(region)
            .name(service)
            .time(time)
            .settings(SigningSettings::default())
            .build()
            .map_err(|e| Error::Signing(e.to_string()))?
            .into();
        aws_sigv4::http_request::sign(signable, &params)
            .map_err(|e| Error::Signing(e.to_string()))?
            .into_parts()
            .0
    };
    instructions.apply_to_request_http1x(req);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn example_credentials(token: Option<&str>) -> Credentials {
        // The AWS SigV4 test suite's example key pair.
        Credentials::new(
            "AKIDEXAMPLE",
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            token.map(str::to_string),
            None,
            "test",
        )
    }

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    }

    fn authorization<B>(req: &hyper::Request<B>) -> &str {
        req.headers().get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default()
    }

    #[test]
    fn signs_the_aws_test_suite_request_as_published() {
        // GIVEN AWS's published vector `get-vanilla-query-order-key-case` (aws-signing-test-suite
        // v4, also in the aws-sigv4 crate's sources): GET /?Param2=value2&Param1=value1 on
        // example.amazonaws.com, service `service`, us-east-1, 2015-08-30T12:36:00Z
        let mut req = hyper::Request::builder()
            .method("GET")
            .uri("https://example.amazonaws.com/?Param2=value2&Param1=value1")
            .body(())
            .unwrap_or_else(|e| panic!("{e}"));
        // WHEN signed
        sign(&mut req, b"", &example_credentials(None), "us-east-1", "service", at(1_440_938_160))
            .unwrap_or_else(|e| panic!("{e}"));
        // THEN the Authorization header is the published one (the query string is signed, sorted)
        assert_eq!(
            authorization(&req),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, \
             SignedHeaders=host;x-amz-date, \
             Signature=b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"
        );
        assert_eq!(req.headers()["x-amz-date"], "20150830T123600Z");
    }

    #[test]
    fn signs_an_execute_api_post_like_botocore() {
        // GIVEN a create-job POST as the client sends it: JSON body, Idempotency-Key, query
        // string, temporary credentials, 2026-12-01T10:00:00Z
        let body = br#"{"jobId":"nightly","schedule":{"expression":"0 30 2 * * *","timezone":"UTC"}}"#;
        let mut req = hyper::Request::builder()
            .method("POST")
            .uri("https://abc123.execute-api.eu-west-1.amazonaws.com/v1/jobs?limit=5")
            .header("content-type", "application/json")
            .header("idempotency-key", "k-1")
            .body(())
            .unwrap_or_else(|e| panic!("{e}"));
        // WHEN signed for execute-api
        sign(
            &mut req,
            body,
            &example_credentials(Some("SESSIONTOKEN")),
            "eu-west-1",
            EXECUTE_API,
            at(1_796_119_200),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        // THEN the header is the one botocore 1.43.11 computes independently for the same request
        // (tests/sigv4_botocore.py: same credentials, instant, headers and body)
        assert_eq!(
            authorization(&req),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261201/eu-west-1/execute-api/aws4_request, \
             SignedHeaders=content-type;host;idempotency-key;x-amz-date;x-amz-security-token, \
             Signature=8b4ec6fc472356cd0ab7f368043dac87b0c00acce9bd5948ae8bceff7e32ecab"
        );
        assert_eq!(req.headers()["x-amz-security-token"], "SESSIONTOKEN");
    }

    #[test]
    fn the_region_comes_from_an_execute_api_url() {
        assert_eq!(
            region_of_url("https://abc.execute-api.eu-west-1.amazonaws.com/"),
            Some("eu-west-1".into())
        );
        assert_eq!(
            region_of_url("https://abc.execute-api.cn-north-1.amazonaws.com.cn"),
            Some("cn-north-1".into())
        );
        assert_eq!(region_of_url("https://api.example.com"), None);
        assert_eq!(region_of_url("http://127.0.0.1:8080"), None);
        let iam = Iam::new(example_credentials(None), None);
        assert_eq!(
            iam.region_for("https://a.execute-api.us-east-2.amazonaws.com").ok(),
            Some("us-east-2".into())
        );
        assert!(iam.region_for("https://api.example.com").is_err());
        let explicit = Iam::new(example_credentials(None), Some("ap-south-1".into()));
        assert_eq!(
            explicit.region_for("https://a.execute-api.us-east-2.amazonaws.com").ok(),
            Some("ap-south-1".into())
        );
        // The token never shows in Debug output.
        assert_eq!(format!("{:?}", Auth::Jwt("secret".into())), "Jwt(<redacted>)");
    }
}
