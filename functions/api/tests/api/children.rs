//! Issue 18: a sharded fire through the API: the parent with its children's summary and each
//! child, the children list, and each child's link to its parent (what a console shows).

use crate::common::{at, Harness};
use chrono::Utc;
use std::time::Duration;
use sundial_core::execution::target::in_process::{BoxFuture, Handler, HandlerContext, Handlers};
use sundial_model::children::ChildKey;
use sundial_model::retry::RunError;
use sundial_model::Target;
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
    let mut def = fixtures::definition(Target::in_process("fail1"));
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
    // THEN it is FAILED with its children's summary, naming the failing shard
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.body["status"], "FAILED");
    assert_eq!(a.body["children"]["total"], 3);
    assert_eq!(a.body["children"]["finished"], 3);
    assert_eq!(a.body["children"]["succeeded"], 2);
    assert_eq!(a.body["children"]["failed"], serde_json::json!(["s1"]));
    assert_eq!(a.body["lastError"]["code"], "ChildrenFailed");
    // AND only the counts: the children themselves are the children list's (paged, issue 28 M6)
    assert!(a.body.get("childExecutions").is_none(), "{}", a.body);
    let l = h.get("acme", &format!("/v1/executions/{}/children", parent.id())).await;
    let kids = l.body["items"].as_array().cloned().unwrap_or_default();
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
    // AND the children list is one page
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

#[tokio::test]
async fn the_children_list_is_paged_and_never_read_whole() {
    // GIVEN a fire with 25 shard children (written as the fan-out writes them)
    let h = Harness::new("children-pages", at("2026-12-01T10:00:00Z")).await;
    let mut def = fixtures::definition(Target::in_process("noop"));
    def.shards = Some(25);
    let now = Utc::now();
    let parent = fixtures::ready_execution("acme", "wide", def, at("2026-12-01T09:00:00Z"), now);
    let key = fixtures::put_execution(&h.env, &parent).await.unwrap_or_else(|e| panic!("{e}"));
    for i in 0..25 {
        let kid = sundial_model::children::child_of(&parent, ChildKey::Shard(i), now, "test");
        fixtures::put_execution(&h.env, &kid).await.unwrap_or_else(|e| panic!("{e}"));
    }
    let id = key.id();
    // WHEN it is listed 10 at a time, following nextCursor
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for round in 0.. {
        assert!(round < 5, "the pages never end: {seen:?}");
        let path = match &cursor {
            Some(c) => format!("/v1/executions/{id}/children?limit=10&cursor={c}"),
            None => format!("/v1/executions/{id}/children?limit=10"),
        };
        let p = h.get("acme", &path).await;
        assert_eq!(p.status, 200, "{}", p.body);
        let items = p.body["items"].as_array().cloned().unwrap_or_default();
        // THEN no page holds more than asked
        assert!(items.len() <= 10, "{}", p.body);
        seen.extend(items.iter().map(|k| k["executionId"].as_str().unwrap_or("").to_string()));
        match p.body["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    // AND every child is listed once, in shard order
    let want: Vec<String> = (0..25).map(|i| format!("{id}.s{i}")).collect();
    assert_eq!(seen, want);
    // AND the default page is 100 (all 25 here); a limit above 1,000 or a foreign cursor is 400
    let all = h.get("acme", &format!("/v1/executions/{id}/children")).await;
    assert_eq!(all.body["items"].as_array().map(Vec::len), Some(25), "{}", all.body);
    let big = h.get("acme", &format!("/v1/executions/{id}/children?limit=1000")).await;
    assert_eq!(big.status, 200, "{}", big.body);
    let over = h.get("acme", &format!("/v1/executions/{id}/children?limit=1001")).await;
    assert_eq!((over.status, over.error_field()), (400, Some("limit")), "{}", over.body);
    let junk = h.get("acme", &format!("/v1/executions/{id}/children?cursor=zz")).await;
    assert_eq!((junk.status, junk.error_field()), (400, Some("cursor")), "{}", junk.body);
    // AND another tenant's view of it is 404, cursor or not
    assert_eq!(h.get("globex", &format!("/v1/executions/{id}/children?limit=10")).await.status, 404);
    h.env.cleanup().await;
}
