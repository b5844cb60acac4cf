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
    /// Held for the watch's lifetime: one `cargo lambda watch` on the machine at a time.
    _lock: std::fs::File,
    /// The invoke endpoint, e.g. `http://127.0.0.1:9123`.
    pub endpoint: String,
}

fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Builds `package` as `cargo lambda watch` will run it (the dev profile, the same features),
/// before any clock starts: the watch then finds the binary fresh, and its first invoke only
/// starts it. Without this the first invoke compiled the function under a 300 s bound, which a
/// cold build on a loaded 2-core machine overran. No timeout here: a build takes what it takes.
async fn build(root: &std::path::Path, package: &str) -> Result<()> {
    let log_path = std::env::temp_dir().join(format!("sundial-lambda-build-{package}.log"));
    let log = std::fs::File::create(&log_path).map(Stdio::from).unwrap_or_else(|_| Stdio::null());
    let mut cmd = Command::new("cargo");
    cmd.current_dir(root).args(["build", "--quiet", "-p", package]);
    if RECORDED.contains(&package) {
        cmd.args(["-F", "iam-record"]);
    }
    let status = cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(log).status().await?;
    if !status.success() {
        bail!("cargo build -p {package} failed ({status}); see {}", log_path.display());
    }
    Ok(())
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
        // One watch at a time, machine-wide (a file lock, so parallel tests and parallel test
        // processes queue up): two `cargo lambda watch` of the same package at once stalled
        // each other's invocations here.
        let lock_path = std::env::temp_dir().join("sundial-lambda-watch.lock");
        let lock = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&lock_path)?;
        let lock = tokio::task::spawn_blocking(move || lock.lock().map(|_| lock)).await??;
        let port = free_port()?;
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        build(&root, package).await?;
        // cargo-lambda runs in its own PID namespace when `unshare` allows it (root, as here and
        // in CI): whatever it signals on shutdown, it can only reach its own processes, and
        // killing `unshare` (which runs with --kill-child) takes the whole namespace down.
        let contained = std::process::Command::new("unshare")
            .args(["--pid", "--fork", "--kill-child", "--mount-proc", "true"])
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        let mut cmd = if contained {
            let mut c = Command::new("unshare");
            c.args(["--pid", "--fork", "--kill-child", "--mount-proc", "cargo"]);
            c
        } else {
            Command::new("cargo")
        };
        // cargo-lambda's and the function's output go to a log file (named in failures), not
        // into the test output.
        let log_path = std::env::temp_dir().join(format!("sundial-lambda-watch-{package}-{port}.log"));
        let log = std::fs::File::create(&log_path).map(Stdio::from).unwrap_or_else(|_| Stdio::null());
        cmd.current_dir(&root)
            // Several instances: a function that invokes functions (the tick fanning out to
            // itself as the scan function) must not wait for its own only instance.
            .args([
                "lambda",
                "watch",
                "--quiet",
                "--ignore-changes",
                "--concurrency",
                "4",
                "-A",
                "127.0.0.1",
                "-P",
            ])
            .arg(port.to_string())
            .args(["-p", package]);
        // Sundial's own functions are built with their AWS calls recorded (docs/iam.md).
        if RECORDED.contains(&package) {
            cmd.args(["-F", "iam-record"]);
        }
        let me = format!("http://127.0.0.1:{port}");
        let vars: Vec<String> =
            env.iter().map(|(k, v)| format!("{k}={}", v.replace("{watch}", &me))).collect();
        // `--env-var` splits its value at commas: a value with one (a JSON setting) goes through
        // an env file instead, single-quoted (taken literally).
        let (listed, quoted): (Vec<String>, Vec<String>) = vars.into_iter().partition(|v| !v.contains(','));
        for v in listed {
            cmd.arg("--env-var").arg(v);
        }
        if !quoted.is_empty() {
            let path = std::env::temp_dir().join(format!("sundial-lambda-watch-{port}.env"));
            let mut lines = String::new();
            for v in quoted {
                let (k, val) = v.split_once('=').unwrap_or((&v, ""));
                if val.contains('\'') {
                    bail!("{k}: a value with both a comma and a single quote cannot be passed to cargo lambda watch");
                }
                lines.push_str(&format!("{k}='{val}'\n"));
            }
            std::fs::write(&path, lines)?;
            cmd.arg("--env-file").arg(&path);
        }
        // cargo-lambda itself resolves AWS credentials and region to hand them to the function:
        // give it dummy ones so it never walks the default chain out to the instance metadata
        // service (169.254.169.254), an address nothing here may contact.
        cmd.env("AWS_EC2_METADATA_DISABLED", "true")
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .env("AWS_REGION", "us-east-1")
            .env_remove("AWS_PROFILE");
        cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(log).kill_on_drop(true);
        // Own process group, so drop can stop the function process cargo-lambda started.
        cmd.process_group(0);
        let child = cmd.spawn().context("starting cargo lambda watch")?;
        let endpoint = format!("http://127.0.0.1:{port}");
        for _ in 0..300 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                return Ok(LambdaWatch { child, _lock: lock, endpoint });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        bail!("cargo lambda watch did not listen on {port} within 30 s; see {}", log_path.display())
    }

    /// Invokes `function` once and waits for its answer: the first invoke under `cargo lambda
    /// watch` compiles the function, which on a busy machine can take longer than a job's
    /// `timeoutSecs`. Tests that measure attempts call this first, so the compile is not
    /// counted as a failed attempt.
    pub async fn warm_up(&self, function: &str) -> Result<()> {
        let payload = aws_sdk_lambda::primitives::Blob::new(r#"{"warmUp": true}"#);
        let call = self.client().invoke().function_name(function).payload(payload).send();
        tokio::time::timeout(Duration::from_secs(300), call)
            .await
            .context("the warm-up invoke did not answer within 300 s")?
            .context("warm-up invoke")?;
        Ok(())
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

impl LambdaWatch {
    /// `base` (a Lambda client of the emulator) with its `Invoke` calls sent to this watch: as on
    /// AWS, where one endpoint answers both, a worker reads a target function's tags
    /// (`GetFunction`, from the emulator, where [`crate::fixtures::tenant_function`] registered
    /// it) and invokes it (the real binary, here).
    pub fn client_beside(&self, base: &aws_sdk_lambda::Client) -> aws_sdk_lambda::Client {
        let conf = base.config().to_builder().interceptor(InvokeTo(self.endpoint.clone())).build();
        aws_sdk_lambda::Client::from_conf(conf)
    }
}

/// Sends `Invoke` requests (`POST .../invocations`) to another endpoint.
#[derive(Debug)]
struct InvokeTo(String);

impl aws_smithy_runtime_api::client::interceptors::Intercept for InvokeTo {
    fn name(&self) -> &'static str {
        "InvokeToLambdaWatch"
    }

    fn modify_before_signing(
        &self,
        context: &mut aws_smithy_runtime_api::client::interceptors::context::BeforeTransmitInterceptorContextMut<'_>,
        _rc: &aws_smithy_runtime_api::client::runtime_components::RuntimeComponents,
        _cfg: &mut aws_smithy_types::config_bag::ConfigBag,
    ) -> Result<(), aws_smithy_runtime_api::box_error::BoxError> {
        let req = context.request_mut();
        let uri = req.uri().to_string();
        let Some(path_at) = uri.find("/2015-03-31/functions/") else { return Ok(()) };
        if uri.contains("/invocations") {
            req.set_uri(format!("{}{}", self.0, &uri[path_at..]))?;
        }
        Ok(())
    }
}

impl Drop for LambdaWatch {
    fn drop(&mut self) {
        // SIGKILL our child: `unshare --kill-child` then kills the namespace's processes (or,
        // uncontained, the process group we created for cargo-lambda and its function).
        if let Some(pid) = self.child.id().filter(|p| *p > 1) {
            // `--` matters: procps-ng 4.0.2's kill misreads `kill -KILL -1234` as `kill(-1, SIGKILL)`
            // (every process on the machine); `kill -KILL -- -1234` signals the group.
            let _ = std::process::Command::new("kill").args(["-KILL", "--", &format!("-{pid}")]).status();
        }
        let _ = self.child.start_kill();
    }
}

/// The packages built with the `iam-record` feature under `cargo lambda watch`.
const RECORDED: &[&str] = &["sundial-tick", "sundial-worker", "sundial-api"];
