//! Issue 18: a sharded fire through the API: the parent with its children's summary and each
//! child, the children list, and each child's link to its parent (what a console shows).

use crate::common::{at, Harness};
use chrono::Utc;
use std::time::Duration;
use sundial_core::execution::retry::RunError;
use sundial_core::execution::target::in_process::{BoxFuture, Handler, HandlerContext, Handlers};
use sundial_core::model::Target;
use sundial_tests::fixtures;

struct FailShard(u32);

impl Handler for FailShard {
    fn run(&self, ctx: HandlerContext) -> BoxFuture<'_, Result<(), RunError>> {
        let bad = ctx.invocation.shard_index == Some(self.0);
        Box::pin(async move {
            if bad {
                Err(RunError::permanent("Bad", "shard refuses"))
            } else {
                Ok(())
            }
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parent_shows_its_children_and_each_child_its_parent() {
    // GIVEN a fire of a job with 3 shards whose shard 1 fails permanently, run to its end
    let h = Harness::new("children", at("2026-12-01T10:00:00Z")).await;
    let mut def = fixtures::definition(Target::InProcess { handler: "fail1".into() });
    def.shards = Some(3);
    let parent = fixtures::create_ready(&h.env, "acme", "settle", def, Utc::now())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (worker, _) = fixtures::worker_with(
        &h.env,
        fixtures::settings("api-kids"),
        Handlers::new().with("fail1", FailShard(1)),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (stop, poller) = fixtures::spawn_poller(worker, 4);
    fixtures::wait_for(&h.env, &parent, Duration::from_secs(60), |s| s.exec.status.is_terminal())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    stop.cancel();
    let _ = poller.await;

    // WHEN the parent is read
    let a = h.get("acme", &format!("/v1/executions/{}", parent.id())).await;
    // THEN it is FAILED with its children's summary, naming the failing shard, and lists them
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.body["status"], "FAILED");
    assert_eq!(a.body["children"]["total"], 3);
    assert_eq!(a.body["children"]["finished"], 3);
    assert_eq!(a.body["children"]["succeeded"], 2);
    assert_eq!(a.body["children"]["failed"], serde_json::json!(["s1"]));
    assert_eq!(a.body["lastError"]["code"], "ChildrenFailed");
    let kids = a.body["childExecutions"].as_array().cloned().unwrap_or_default();
    let got: Vec<(String, String)> = kids
        .iter()
        .map(|k| {
            (
                k["executionId"].as_str().unwrap_or("").to_string(),
                k["status"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let id = parent.id();
    assert_eq!(
        got,
        vec![
            (format!("{id}.s0"), "SUCCEEDED".into()),
            (format!("{id}.s1"), "FAILED".into()),
            (format!("{id}.s2"), "SUCCEEDED".into())
        ]
    );
    // AND the children list says the same
    let l = h.get("acme", &format!("/v1/executions/{id}/children")).await;
    assert_eq!(l.status, 200, "{}", l.body);
    assert_eq!(l.body["items"].as_array().map(Vec::len), Some(3));
    assert_eq!(l.body["nextCursor"], serde_json::Value::Null);
    // AND a child links to its parent and says which shard it is
    let c = h.get("acme", &format!("/v1/executions/{id}.s1")).await;
    assert_eq!(c.status, 200, "{}", c.body);
    assert_eq!(c.body["parentExecutionId"], id.as_str());
    assert_eq!(
        c.body["child"],
        serde_json::json!({"kind": "shard", "tag": "s1", "shardIndex": 1, "shardTotal": 3})
    );
    assert_eq!(c.body["status"], "FAILED");
    // AND another tenant sees nothing; a child has no children; a bad child part is a 400
    assert_eq!(h.get("other", &format!("/v1/executions/{id}/children")).await.status, 404);
    assert_eq!(h.get("acme", &format!("/v1/executions/{id}.s1/children")).await.status, 400);
    assert_eq!(h.get("acme", &format!("/v1/executions/{id}.x9")).await.status, 400);
}
