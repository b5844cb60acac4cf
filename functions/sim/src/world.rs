//! The simulated deployment: one in-process AWS, the tables and queues `resources.json` asks
//! for, and the clients each simulated process builds from it.

use anyhow::{Context, Result};
use chrono::{DateTime, TimeZone, Utc};
use std::collections::BTreeMap;
use std::sync::Arc;
use sundial_core::aws::Clients;
use sundial_core::config::Config;
use sundial_core::execution::clock::Clock;
use sundial_core::Ctx;
use sundial_model::outbound::TenantTargets;
use sundial_simaws::Aws;
use sundial_store::queue::PoolQueues;
use sundial_testkit::provision;

/// The pools every simulated deployment has.
pub const POOLS: [&str; 2] = ["default", "batch"];

/// One simulated deployment.
#[derive(Clone)]
pub struct World {
    /// The simulated AWS.
    pub aws: Aws,
    /// Table, queue and pool names.
    pub cfg: Config,
    /// Queue URLs and ARNs by pool.
    pub queues: BTreeMap<String, provision::PoolQueues>,
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World").field("cfg", &self.cfg).finish()
    }
}

impl World {
    /// A fresh deployment at simulated instant `epoch_ms`, with `shards` logical shards, whose
    /// tenants may call `targets` (the caller names them: the targets' modules build on the
    /// world).
    pub async fn new(seed: u64, epoch_ms: i64, shards: u32, targets: TenantTargets) -> Result<World> {
        let aws = Aws::new(seed, epoch_ms);
        let mut cfg = Config::local("sim-", &POOLS, shards);
        // The stack's bus, as the CDK construct makes it: FireMissed and outcome events.
        cfg.event_bus = Some("sim-events".into());
        cfg.targets.tenants = Some(targets);
        let clients = Clients::plain(&aws.sdk_config_for("provision"));
        let queues = provision::ensure_all(&clients, &cfg).await.context("provisioning the simulated AWS")?;
        Ok(World { aws, cfg, queues })
    }

    /// The SDK clients of simulated process `process` (faults can aim at one process).
    pub fn clients(&self, process: &str) -> Clients {
        Clients::plain(&self.aws.sdk_config_for(process))
    }

    /// The tick's and the control plane's context for `process`.
    pub fn ctx(&self, process: &str) -> Ctx {
        let c = self.clients(process);
        Ctx { ddb: c.ddb, cfg: self.cfg.clone(), queues: PoolQueues::new(c.sqs, self.cfg.clone()) }
    }

    /// The simulated instant.
    pub fn now(&self) -> DateTime<Utc> {
        ms(self.aws.now_ms())
    }
}

/// An instant from epoch milliseconds.
pub fn ms(v: i64) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(v).single().unwrap_or_default()
}

/// The clock a simulated worker reads: the simulated instant plus its own skew.
#[derive(Clone)]
pub struct SimClock {
    aws: Aws,
    skew_ms: i64,
}

impl std::fmt::Debug for SimClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimClock").field("skew_ms", &self.skew_ms).finish()
    }
}

impl SimClock {
    /// The simulated clock, `skew_ms` off.
    pub fn new(aws: Aws, skew_ms: i64) -> Arc<SimClock> {
        Arc::new(SimClock { aws, skew_ms })
    }
}

impl Clock for SimClock {
    fn now(&self) -> DateTime<Utc> {
        ms(self.aws.now_ms() + self.skew_ms)
    }
}

/// The execution id an SQS message body carries (`ExecMessage`: `j`, `s`, `c`), if it is one.
pub fn execution_of_message(body: &str) -> Option<String> {
    let m: sundial_model::ExecMessage = serde_json::from_str(body).ok()?;
    let base = sundial_model::keys::execution_id(&m.job_id, m.scheduled_ms);
    Some(match m.child.as_deref() {
        Some(c) => format!("{base}.{c}"),
        None => base,
    })
}
