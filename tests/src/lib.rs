//! # sundial-tests: the integration-test harness
//!
//! Every integration test in `tests/tests/` runs against the local AWS emulator
//! (`localstack/start.sh`), never against an in-memory stand-in. [`TestEnv::new`] gives each test
//! its own tables and queues, named with a unique prefix, so tests run in parallel without
//! seeing each other's items (moto's Query also scans whole tables, so small tables keep it fast).
//!
//! If the emulator is not running, the first call fails with a message naming the start script.
//!
//! Layout: [`clock`] (the [`clock::ManualClock`] every test that moves time uses), [`fixtures`]
//! (executions, workers, a webhook server, a fenced resource), [`trigger`] (jobs and scans at a
//! chosen instant), [`lambda_watch`] (functions under `cargo lambda watch`), [`bench`] (shared by
//! the bench binaries), [`fairness`] (the noisy-neighbour scenario of docs/priority.md).

/// The Schemathesis release `scripts/tools.sh` installs (the API fuzzing test runs it).
pub const SCHEMATHESIS_VERSION: &str = "4.32.5";

pub mod bench;
pub mod clock;
pub mod fairness;
pub mod fixtures;
pub mod lambda_watch;
pub mod trigger;

use anyhow::{Context, Result};
use aws_config::{BehaviorVersion, Region, SdkConfig};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use sundial_core::aws::Clients;
use sundial_core::config::Config;
use sundial_testkit::provision::{self, PoolQueues};

/// The emulator's endpoint: `AWS_ENDPOINT_URL`, else `http://127.0.0.1:$SUNDIAL_EMULATOR_PORT`
/// (4566 by default), the same defaults as `localstack/env.sh`.
pub fn endpoint() -> String {
    std::env::var("AWS_ENDPOINT_URL").unwrap_or_else(|_| {
        let port = std::env::var("SUNDIAL_EMULATOR_PORT").unwrap_or_else(|_| "4566".into());
        format!("http://127.0.0.1:{port}")
    })
}

/// An SDK configuration for the emulator with dummy credentials. Built explicitly (not from the
/// process environment) so a developer's real AWS profile can never be picked up by a test.
pub fn sdk_config() -> SdkConfig {
    let creds = aws_credential_types::Credentials::new("test", "test", None, None, "sundial-tests");
    SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .endpoint_url(endpoint())
        .credentials_provider(aws_credential_types::provider::SharedCredentialsProvider::new(creds))
        .build()
}

/// SDK clients for the emulator.
pub fn clients() -> Clients {
    // Every AWS call made under a function's scope is recorded when SUNDIAL_IAM_RECORD is set.
    sundial_testkit::access::install();
    Clients::new(&sdk_config())
}

/// Fails with a clear message when the emulator does not answer.
pub async fn require_emulator(clients: &Clients) -> Result<()> {
    let probe =
        tokio::time::timeout(Duration::from_secs(10), clients.ddb.list_tables().limit(1).send()).await;
    match probe {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(anyhow::anyhow!(
            "the AWS emulator at {} did not answer ({}); start it with `localstack/start.sh` \
             (or run the whole suite with `scripts/test.sh`)",
            endpoint(),
            aws_sdk_dynamodb::error::DisplayErrorContext(e)
        )),
        Err(_) => Err(anyhow::anyhow!(
            "the AWS emulator at {} timed out; start it with `localstack/start.sh`",
            endpoint()
        )),
    }
}

/// Whether the tests run against moto (`SUNDIAL_EMULATOR=moto`, as `scripts/test.sh` sets for its
/// second pass): its SQS send walks the whole queue (docs/trigger.md), so a test that queues
/// thousands of messages scales its backlog down there.
pub fn on_moto() -> bool {
    std::env::var("SUNDIAL_EMULATOR").is_ok_and(|v| v == "moto")
}

/// A unique name prefix for one test: `t{pid}-{n}-{label}-`.
pub fn unique_prefix(label: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let label: String =
        label.chars().filter(|c| c.is_ascii_alphanumeric()).take(12).collect::<String>().to_lowercase();
    format!("t{}-{}-{label}-", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

/// One test's private Sundial resources on the emulator.
pub struct TestEnv {
    /// Names of this test's tables and queues.
    pub cfg: Config,
    /// Clients for the emulator.
    pub clients: Clients,
    /// Queue URLs by pool.
    pub queues: BTreeMap<String, PoolQueues>,
}

impl TestEnv {
    /// Provisions fresh tables and queues for `label` with the given pools and shard count.
    pub async fn with(label: &str, pools: &[&str], shards: u32) -> Result<Self> {
        let clients = clients();
        require_emulator(&clients).await?;
        let mut cfg = Config::local(&unique_prefix(label), pools, shards);
        // The tests' webhook servers listen on loopback: the dev-only policy (its `to_env`
        // carries it to the binaries the tests start).
        cfg.targets = sundial_model::outbound::TargetPolicy::dev_loopback();
        let queues = provision::ensure_all(&clients, &cfg).await.context("provisioning test resources")?;
        Ok(TestEnv { cfg, clients, queues })
    }

    /// One pool (`default`), 16 logical shards.
    pub async fn new(label: &str) -> Result<Self> {
        Self::with(label, &["default"], 16).await
    }

    /// The queue URL of a pool.
    pub fn queue_url(&self, pool: &str) -> &str {
        &self.queues[pool].url
    }

    /// Deletes this test's tables and queues (best effort; call at the end of a passing test so
    /// the emulator stays small; a failing test leaves them for inspection).
    pub async fn cleanup(self) {
        for t in [&self.cfg.jobs_table, &self.cfg.executions_table] {
            let _ = self.clients.ddb.delete_table().table_name(t).send().await;
        }
        for q in self.queues.values() {
            let _ = self.clients.sqs.delete_queue().queue_url(&q.url).send().await;
            let _ = self.clients.sqs.delete_queue().queue_url(&q.dlq_url).send().await;
            let _ = self.clients.sqs.delete_queue().queue_url(&q.low_url).send().await;
        }
    }
}
