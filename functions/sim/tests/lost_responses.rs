//! A conditional write whose response is lost is applied, answered 500, and sent again by the
//! SDK; the second attempt then fails its own condition, because the first one changed what it
//! tests. Each store write must still know it landed, or its caller acts on a write it thinks
//! another process made: the reconciler raises an execution's wait generation and never sends
//! the new chain's message, so the last copy drops itself as stale and the fire waits for the
//! next look (docs/simulation.md, K8; seed 4 of the faults shape); a worker takes its own claim
//! for someone else's live lease, its own finish for a takeover, its own heartbeat for a lost
//! lease.
//!
//! Deterministic: the simulated AWS loses exactly the next response of one operation
//! ([`sundial_simaws::Aws::lose_next_response`]), on a paused tokio clock.

use sundial_model::claim::{Fence, Finish, LeaseTerms};
mod common;

use common::{paused_runtime, ready};
use sundial_model::ExecStatus;
use sundial_store::executions::{ClaimOutcome, ExecKey, ExecStore, FinishResult, Heartbeat};

async fn given(w: &sundial_sim::world::World, job: &str) -> (ExecStore, ExecKey) {
    let store = ExecStore::new(w.clients("worker").ddb, w.cfg.executions_table.clone());
    let e = ready(job, w.aws.now_ms() - 5 * 60_000);
    store.put_new(&e).await.unwrap_or_else(|e| panic!("put: {e}"));
    (store, ExecKey::of(&e))
}

const TERMS: LeaseTerms = LeaseTerms { duration_ms: 30_000, skew_margin_ms: 2_000, may_take_over: true };

fn faults(w: &sundial_sim::world::World) -> u64 {
    w.aws.stats().faults.get("lost_response").copied().unwrap_or(0)
}

#[test]
fn a_resend_whose_response_was_lost_is_still_the_reconcilers_to_send() {
    paused_runtime().block_on(async {
        let w = common::world(11).await;
        let (store, key) = given(&w, "resent").await;
        let seen = common::stored(&store, &key).await;
        let now = w.aws.now_ms();
        w.aws.lose_next_response("UpdateItem");
        let got = store.mark_resent(&key, &seen, now + 120_000, "reconciler:1", now).await;
        assert_eq!(faults(&w), 1, "the response was lost once");
        let after = common::stored(&store, &key).await;
        assert_eq!(after.wait_gen, seen.wait_gen + 1, "the write landed once");
        assert_eq!(
            got.unwrap_or_else(|e| panic!("{e}")),
            Some(1),
            "its own landed write is not a race: the reconciler must send the new chain's message"
        );
    });
}

#[test]
fn a_wait_whose_response_was_lost_still_gives_its_copy_the_new_generation() {
    paused_runtime().block_on(async {
        let w = common::world(11).await;
        let (store, key) = given(&w, "waiting").await;
        let seen = common::stored(&store, &key).await;
        w.aws.lose_next_response("UpdateItem");
        let got =
            store.note_wait(&key, &seen, w.aws.now_ms() + 60_000).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(faults(&w), 1);
        assert_eq!(got, Some(seen.wait_gen + 1), "the copy must carry the generation its own write raised");
    });
}

#[test]
fn a_claim_finish_and_heartbeat_whose_responses_were_lost_are_still_the_workers() {
    paused_runtime().block_on(async {
        let w = common::world(11).await;
        let (store, key) = given(&w, "claimed").await;
        w.aws.lose_next_response("UpdateItem");
        let claimed = match store.claim(&key, "w1", &TERMS, w.now()).await.unwrap_or_else(|e| panic!("{e}")) {
            ClaimOutcome::Claimed(c) => c,
            other => panic!("its own claim, landed on the first attempt, was taken for {other:?}"),
        };
        assert_eq!(faults(&w), 1);
        assert_eq!(claimed.fence.token, 1);
        let fence: Fence = claimed.fence.clone();
        w.aws.lose_next_response("UpdateItem");
        let beat =
            store.heartbeat(&key, &fence, w.aws.now_ms() + 30_000).await.unwrap_or_else(|e| panic!("{e}"));
        assert!(
            matches!(beat, Heartbeat::Extended { .. }),
            "its own heartbeat was taken for a lost lease: {beat:?}"
        );
        w.aws.lose_next_response("UpdateItem");
        let done =
            store.finish(&key, &fence, &Finish::Succeeded, w.now()).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(done, FinishResult::Done, "its own finish was taken for a takeover");
        assert_eq!(faults(&w), 3);
        let after = common::stored(&store, &key).await;
        assert_eq!(after.exec.status, ExecStatus::Succeeded);
        assert_eq!(
            after.exec.timeline.len(),
            2,
            "one claim and one finish on the timeline: {:?}",
            after.exec.timeline
        );
    });
}

#[test]
fn a_zombies_write_after_a_takeover_is_still_refused() {
    paused_runtime().block_on(async {
        let w = common::world(11).await;
        let (store, key) = given(&w, "zombie").await;
        let first = match store.claim(&key, "w1", &TERMS, w.now()).await.unwrap_or_else(|e| panic!("{e}")) {
            ClaimOutcome::Claimed(c) => c,
            other => panic!("{other:?}"),
        };
        tokio::time::sleep(std::time::Duration::from_secs(60)).await;
        let second = match store.claim(&key, "w2", &TERMS, w.now()).await.unwrap_or_else(|e| panic!("{e}")) {
            ClaimOutcome::Claimed(c) => c,
            other => panic!("the expired lease was not taken over: {other:?}"),
        };
        assert!(second.fence.token > first.fence.token);
        w.aws.lose_next_response("UpdateItem");
        let beat = store
            .heartbeat(&key, &first.fence, w.aws.now_ms() + 30_000)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(beat, Heartbeat::Lost, "a zombie's heartbeat must stay fenced");
        let done = store
            .finish(&key, &first.fence, &Finish::Succeeded, w.now())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            matches!(done, FinishResult::TakenOver { .. }),
            "a zombie's finish must stay fenced: {done:?}"
        );
        let after = common::stored(&store, &key).await;
        assert_eq!(after.exec.status, ExecStatus::Running);
        assert_eq!(after.exec.lease_owner.as_deref(), Some("w2"));
    });
}
