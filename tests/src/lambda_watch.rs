//! Runs a workspace Lambda function through `cargo lambda watch`, which emulates the Lambda
//! Runtime API and answers aws-sdk-lambda `Invoke` on loopback: the function runs as the real
//! binary with the real `lambda_runtime`, not as a direct call into its handler.
//!
//! Needs `cargo-lambda` on PATH: `scripts/tools.sh` installs it (the test scripts source it).

use anyhow::{bail, Context, Result};
use aws_config::{BehaviorVersion, Region, SdkConfig};
use std::net::TcpListener;
use std::process::Stdio;
use std::time::Duration;
use tokio::process::{Child, Command};

/// A running `cargo lambda watch`; killed (with its children) on drop.
pub struct LambdaWatch {
    child: Child,
    /// The invoke endpoint, e.g. `http://127.0.0.1:9123`.
    pub endpoint: String,
}

fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

impl LambdaWatch {
    /// Starts `cargo lambda watch -p <package>` with `env` passed to the function. In values,
    /// `{watch}` is replaced by this watch's own endpoint (a function that invokes functions,
    /// like the tick fanning out to scans, points `AWS_ENDPOINT_URL_LAMBDA` at it).
    pub async fn start(package: &str, env: &[(String, String)]) -> Result<Self> {
        let which = std::process::Command::new("cargo").args(["lambda", "--version"]).output();
        if !which.map(|o| o.status.success()).unwrap_or(false) {
            bail!("`cargo lambda` is not installed: source scripts/tools.sh (scripts/test.sh does) to install cargo-lambda");
        }
        let port = free_port()?;
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut cmd = Command::new("cargo");
        cmd.current_dir(&root)
            .args(["lambda", "watch", "--quiet", "--ignore-changes", "-A", "127.0.0.1", "-P"])
            .arg(port.to_string())
            .args(["-p", package]);
        let me = format!("http://127.0.0.1:{port}");
        let vars: Vec<String> =
            env.iter().map(|(k, v)| format!("{k}={}", v.replace("{watch}", &me))).collect();
        for v in vars {
            cmd.arg("--env-var").arg(v);
        }
        cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::inherit()).kill_on_drop(true);
        // Own process group, so drop can stop the function process cargo-lambda started.
        cmd.process_group(0);
        let child = cmd.spawn().context("starting cargo lambda watch")?;
        let endpoint = format!("http://127.0.0.1:{port}");
        for _ in 0..300 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                return Ok(LambdaWatch { child, endpoint });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        bail!("cargo lambda watch did not listen on {port} within 30 s")
    }

    /// An aws-sdk-lambda client pointed at this watch (dummy credentials).
    pub fn client(&self) -> aws_sdk_lambda::Client {
        let creds = aws_credential_types::Credentials::new("test", "test", None, None, "lambda-watch");
        let conf = SdkConfig::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .endpoint_url(&self.endpoint)
            .credentials_provider(aws_credential_types::provider::SharedCredentialsProvider::new(creds))
            .build();
        aws_sdk_lambda::Client::new(&conf)
    }
}

impl Drop for LambdaWatch {
    fn drop(&mut self) {
        if let Some(pid) = self.child.id() {
            // SIGTERM the whole group (cargo-lambda and the function binary it spawned).
            let _ = std::process::Command::new("kill").args(["-TERM", &format!("-{pid}")]).status();
        }
        let _ = self.child.start_kill();
    }
}
