//! Fair-queue groups on every message (security review 2026-12 M1): SQS fair queues keep one
//! tenant's backlog from delaying another's only if every message names its tenant as the
//! `MessageGroupId`. The tick did; the worker's sends (fan-out children, map-reduce items,
//! dead-letter copies) and the API's (trigger-now, backfill, replays) did not.

use aws_smithy_runtime_api::client::interceptors::context::Input;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use chrono::Utc;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use sundial_core::execution::target::in_process::Handlers;
use sundial_model::ExecStatus;
use sundial_testkit::intercept::{with_interceptors, Observe, Observer};
use sundial_tests::fixtures::{self, WebhookServer};
use sundial_tests::TestEnv;

/// The `MessageGroupId` of every message sent (`None`: sent without one).
#[derive(Debug, Clone, Default)]
struct Groups(Arc<Mutex<Vec<Option<String>>>>);

impl Observer for Groups {
    const NAME: &'static str = "FairGroupsRecorder";

    fn on_request(&self, _meta: &Metadata, input: &Input) {
        use aws_sdk_sqs::operation::{
            send_message::SendMessageInput, send_message_batch::SendMessageBatchInput,
        };
        let mut seen = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = input.downcast_ref::<SendMessageBatchInput>() {
            seen.extend(i.entries().iter().map(|e| e.message_group_id().map(str::to_string)));
        } else if let Some(i) = input.downcast_ref::<SendMessageInput>() {
            seen.push(i.message_group_id().map(str::to_string));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workers_fan_out_names_the_tenant_as_each_messages_group() -> anyhow::Result<()> {
    // GIVEN a sharded job of tenant acme (a fire fans out to 3 children)
    let env = TestEnv::new("fair-groups").await?;
    let hook = WebhookServer::start(vec![]).await?;
    let mut def = fixtures::http_definition(&hook.url("/run"));
    def.shards = Some(3);
    let key = fixtures::create_ready(&env, "acme", "sharded", def, Utc::now()).await?;

    // WHEN a worker runs the fire, its SQS sends observed
    let groups = Groups::default();
    let seen = groups.clone();
    let clients = with_interceptors(env.clients.clone(), move |_| Observe(seen.clone()));
    let (worker, _) =
        fixtures::worker_with_clients(&env, fixtures::settings("fair-1"), Handlers::new(), &clients)?;
    let (stop, poller) = fixtures::spawn_poller(worker, 4);
    let s = fixtures::wait_for(&env, &key, Duration::from_secs(60), |s| s.exec.status.is_terminal()).await?;
    stop.cancel();
    poller.await??;

    // THEN the fire succeeded through its children, and every message the worker sent (the
    // three children at least) carried MessageGroupId = acme
    assert_eq!(s.exec.status, ExecStatus::Succeeded, "{:?}", s.exec.last_error);
    let sent = groups.0.lock().map(|g| g.clone()).unwrap_or_default();
    assert!(sent.len() >= 3, "{sent:?}");
    assert!(sent.iter().all(|g| g.as_deref() == Some("acme")), "{sent:?}");
    env.cleanup().await;
    Ok(())
}
