//! A re-send raises the execution's wait generation, so that older copies of its message drop
//! themselves when they come; if the re-send itself cannot be sent (SQS down), the raise must
//! be undone, or the copy still queued from before is dropped as stale when SQS comes back and
//! the fire waits for the reconciler's next look, minutes later by its backoff
//! (docs/simulation.md, K8; seed 14 of the faults shape, `--jobs 12 --minutes 40`: SQS down
//! 08:46–09:10, four re-sends that never left, and at 09:10 the tick's own copy dropped).
//!
//! Deterministic: the simulated AWS on a paused tokio clock.

use sundial_core::reconcile::{reconcile, ReconcileOptions};
use sundial_model::{ExecStatus, Execution, JobDefinition};
use sundial_simaws::Faults;
use sundial_store::executions::{ExecKey, ExecStore};

fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"))
}

fn ready(job: &str, at_ms: i64) -> Execution {
    let def = serde_json::json!({
        "schedule": {"expression": "rate(1 minute)", "timezone": "UTC"},
        "target": {"type": "http", "url": "https://example.com/run"}
    });
    let definition: JobDefinition = serde_json::from_value(def).unwrap_or_else(|e| panic!("{e}"));
    let at = sundial_sim::world::ms(at_ms);
    Execution {
        tenant: "alpha".into(),
        job_id: job.into(),
        scheduled_at: at,
        fire_at: at,
        created_at: at,
        status: ExecStatus::Ready,
        attempt: 0,
        fencing_token: 0,
        lease_owner: None,
        lease_until: None,
        available_at: at_ms,
        def_version: 1,
        definition,
        missed_range: None,
        missed_except: Vec::new(),
        last_error: None,
        cancel_requested: false,
        timeline: vec![],
        child: None,
        children: None,
        map_reduce: None,
    }
}

#[test]
fn a_resend_that_could_not_be_sent_leaves_the_queued_copies_standing() {
    paused_runtime().block_on(async {
        let w = sundial_sim::world::World::new(13, 1_774_728_000_000, 1, Default::default())
            .await
            .unwrap_or_else(|e| panic!("world: {e:#}"));
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
        let after = store
            .get(&key, true)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("no item"));
        assert_eq!(after.exec.status, ExecStatus::Ready);
        assert!(
            !sundial_model::reconcile::stale_copy(0, after.wait_gen),
            "the re-send never left, yet the queued copy (generation 0) is stale at generation {}",
            after.wait_gen
        );
        assert_eq!(after.resends, 1, "the re-send is still counted, and its backoff kept");
    });
}
