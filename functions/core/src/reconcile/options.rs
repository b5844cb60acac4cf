//! The reconciler's settings ([`ReconcileOptions`]), read by every look of a run and by the
//! map-reduce backstop.

use sundial_model::reconcile::GRACE_MS;

/// Reconciler settings.
#[derive(Debug, Clone)]
pub struct ReconcileOptions {
    /// Who writes the notes (`reconciler:<request id>`).
    pub actor: String,
    /// Most executions examined in one run (the rest wait for the next run).
    pub max_per_run: usize,
    /// Executions examined at once.
    pub concurrency: usize,
    /// How long past its due instant an execution nothing acts on waits before a re-send (ms;
    /// default [`GRACE_MS`]; the compressed chaos run uses seconds).
    pub grace_ms: i64,
    /// The EventBridge client `FireMissed` events go out with (to `Config::event_bus`); none:
    /// start-deadline misses are still recorded, logged and counted, but send no event.
    pub events: Option<aws_sdk_eventbridge::Client>,
    /// Most items of one waiting map-reduce parent read in one look, keys and status only
    /// (`mapreduce`: only once its counts stall).
    pub max_items_per_look: usize,
    /// The control plane's pause, for jobs whose dead fires reach `autoPauseAfterDeadFires`
    /// (docs/outcomes.md); none: such an outbox entry waits for a run that has it.
    pub pause: Option<std::sync::Arc<dyn crate::execution::outcome::AutoPause>>,
}

impl Default for ReconcileOptions {
    fn default() -> Self {
        ReconcileOptions {
            actor: "reconciler".into(),
            max_per_run: 2_000,
            concurrency: 16,
            grace_ms: GRACE_MS,
            events: None,
            max_items_per_look: 2_000,
            pause: None,
        }
    }
}
