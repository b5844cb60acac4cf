//! A re-send raises the execution's wait generation, so that older copies of its message drop
//! themselves when they come; if the re-send itself cannot be sent (SQS down), the raise must
//! be undone, or the copy still queued from before is dropped as stale when SQS comes back and
//! the fire waits for the reconciler's next look, minutes later by its backoff
//! (docs/simulation.md, K8; seed 14 of the faults shape, `--jobs 12 --minutes 40`: SQS down
//! 08:46–09:10, four re-sends that never left, and at 09:10 the tick's own copy dropped).
//!
//! Deterministic: the simulated AWS on a paused tokio clock.

use std::time::Duration;
use sundial_core::execution::worker::NoExtend;
use sundial_core::reconcile::{reconcile, ReconcileOptions};
mod common;

use common::{paused_runtime, ready};
use sundial_model::ExecStatus;
use sundial_simaws::Faults;
use sundial_store::executions::{ExecKey, ExecStore};
use sundial_store::queue::Outgoing;
use tokio_util::sync::CancellationToken;

#[test]
fn a_resend_that_could_not_be_sent_leaves_the_queued_copies_standing() {
    paused_runtime().block_on(async {
        let w = common::world(13).await;
        let ctx = w.ctx("reconciler");
        let store = ExecStore::new(ctx.ddb.clone(), w.cfg.executions_table.clone());
        // GIVEN a READY fire ten minutes overdue whose only copy is still queued (generation 0),
        let e = ready("stranded", w.aws.now_ms() - 10 * 60_000);
        store.put_new(&e).await.unwrap_or_else(|e| panic!("put: {e}"));
        let key = ExecKey::of(&e);
        // WHEN the reconciler re-sends it while SQS is down,
        w.aws.set_faults(Faults { sqs_down: true, ..Faults::default() });
        let opts = ReconcileOptions { actor: "reconciler:1".into(), ..Default::default() };
        let report = reconcile(&ctx, w.now(), &opts).await;
        w.aws.set_faults(Faults::default());
        let failed = match &report {
            Ok(r) => r.failed,
            Err(_) => 1,
        };
        assert!(failed >= 1, "the re-send was not even tried: {report:?}");
        // THEN the queued copy still stands for it: the generation is what it carries.
        let after = common::stored(&store, &key).await;
        assert_eq!(after.exec.status, ExecStatus::Ready);
        assert!(
            !sundial_model::reconcile::stale_copy(0, after.wait_gen_sent),
            "the re-send never left, yet the queued copy (generation 0) is stale at generation {}",
            after.wait_gen_sent
        );
        assert_eq!(after.resends, 1, "the re-send is still counted, and its backoff kept");
    });
}

/// A wait at admission moves the reconciler's look and raises the wait generation, so older
/// copies drop themselves once its copy is sent. A worker that dies after the raise and before
/// the wait's own copy has left (killed, its Lambda timed out, at the SDK's pause between two attempts of the send)
/// must not have made the copy it was handed stale: SQS gives that copy back when its
/// visibility ends, and if it drops itself as stale, nothing is queued and the fire waits for
/// the reconciler's moved look, minutes late (docs/simulation.md, K15; seed 218 of the full
/// mix: a fire waiting for its upstream, its worker killed at 01:52:41, re-sent at 01:59:30).
#[test]
fn a_wait_cut_short_before_its_copy_left_leaves_the_delivered_copy_standing() {
    paused_runtime().block_on(Box::pin(async {
        let w = common::world(17).await;
        let store = ExecStore::new(w.clients("test").ddb, w.cfg.executions_table.clone());
        // GIVEN a READY fire of a job using a resource that has no limit defined: it waits
        let def = common::definition(serde_json::json!({"resources": ["gpu"]}));
        let e = common::execution("alpha", "gpu-job", w.aws.now_ms() - 1_000, ExecStatus::Ready, def);
        store.put_new(&e).await.unwrap_or_else(|e| panic!("put: {e}"));
        let key = ExecKey::of(&e);
        let delivered = Outgoing::for_execution(&e, w.now()).message;
        let body = serde_json::to_string(&delivered).unwrap_or_else(|e| panic!("{e}"));
        // WHEN its worker handles the delivered copy while SQS is down, and dies before the
        // wait's copy could leave
        let wk = common::worker(&w, "worker");
        w.aws.set_faults(Faults { sqs_down: true, ..Faults::default() });
        let stop = CancellationToken::new();
        let cut =
            tokio::time::timeout(Duration::from_millis(500), wk.handle("default", &body, &NoExtend, &stop))
                .await;
        w.aws.set_faults(Faults::default());
        assert!(cut.is_err(), "the worker ended before it was cut: {cut:?}");
        assert!(w.aws.stats().faults.get("sqs_down").copied().unwrap_or(0) >= 1, "no send was tried");
        // THEN the delivered copy, given back by SQS, still stands for the fire
        let after = common::stored(&store, &key).await;
        assert_eq!(after.exec.status, ExecStatus::Ready);
        assert!(
            !sundial_model::reconcile::stale_copy(delivered.wait_gen, after.wait_gen_sent),
            "the wait's copy never left, yet the delivered copy (generation {}) is stale at generation {}",
            delivered.wait_gen,
            after.wait_gen_sent
        );
    }));
}
