#![recursion_limit = "256"] // the SDK futures nest deeply inside the runtime loop
//! The `tick` Lambda: config, clients, `run(service_fn(..))`. Logic: `sundial_tick` and
//! `sundial_core::trigger`.

use lambda_runtime::{run, service_fn, Error, LambdaEvent};
use sundial_core::config::{Config, TickSettings};
use sundial_core::control::outcomes::ControlPause;
use sundial_core::control::{Control, ControlSettings};
use sundial_core::Ctx;
use sundial_store::queue::PoolQueues;
use sundial_tick::{TickEvent, TickService};

#[tokio::main]
async fn main() -> Result<(), Error> {
    sundial_core::telemetry::init();
    #[cfg(feature = "iam-record")]
    sundial_testkit::access::install();
    // Env set by the CDK construct (infra/lib/sundial-scheduler.ts) from resources.json.
    let cfg = Config::from_env()?;
    let clients = sundial_core::aws::Clients::from_env().await;
    let settings = TickSettings::from_env()?;
    // Read (and so checked) as the deployment sets it; since outcome notifications moved to
    // their pools' queues, the reconciler makes no call as a tenant.
    let _roles = sundial_core::config::TenantRoleSettings::from_env()?;
    let queues = PoolQueues::new(clients.sqs.clone(), cfg.clone());
    // The reconciler pauses jobs for their dead fires through the control plane's pause.
    let control_ctx =
        Ctx { ddb: clients.ddb.clone(), queues: PoolQueues::new(clients.sqs, cfg.clone()), cfg: cfg.clone() };
    let control = Control::new(control_ctx, ControlSettings::default());
    let service = TickService {
        ctx: Ctx { ddb: clients.ddb, queues, cfg },
        lambda: clients.lambda,
        settings,
        events: Some(clients.events),
        backpressure: sundial_core::config::BackpressureSettings::from_env()?,
        pause: Some(std::sync::Arc::new(ControlPause::new(control))),
    };
    let service = &service;
    run(service_fn(move |event: LambdaEvent<TickEvent>| async move { service.handle_lambda(event).await }))
        .await
}
