//! `GET /v1/executions/{id}/logs`: the local run's worker log lines per
//! execution, for the caller's tenant only; deployed, a Logs Insights link and no lines.

use crate::common::{at, Harness};
use chrono::Utc;
use std::sync::Arc;
use sundial_api::console::{ConsoleAuth, ConsoleSettings};
use sundial_api::exec_logs::{ExecLogs, LogLine};
use sundial_model::Target;
use sundial_tests::fixtures;

fn line(m: &str) -> LogLine {
    LogLine { at: Utc::now(), level: "INFO".into(), message: m.into() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_lines_of_an_execution_are_its_tenants_only() {
    // GIVEN the same job id and instant in two tenants, each with a line kept by the local run
    let mut h = Harness::new("execlogs", at("2026-12-01T10:00:00Z")).await;
    let def = || fixtures::definition(Target::in_process("noop"));
    let a = fixtures::create_ready(&h.env, "acme", "settle", def(), Utc::now())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let id = a.id();
    let logs = Arc::new(ExecLogs::default());
    logs.push(&format!("acme:{id}"), line("acme's line"));
    logs.push(&format!("other:{id}"), line("other's line"));
    h.api = h.api.clone().with_exec_logs(logs);

    // WHEN acme reads its execution's lines THEN it gets its own line only
    let r = h.get("acme", &format!("/v1/executions/{id}/logs")).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["captured"], true);
    assert_eq!(r.body["executionId"], id.as_str());
    let msgs: Vec<&str> =
        r.body["lines"].as_array().into_iter().flatten().filter_map(|l| l["message"].as_str()).collect();
    assert_eq!(msgs, ["acme's line"]);
    assert_eq!(r.body["lines"][0]["level"], "INFO");
    assert_eq!(r.body["logsInsightsUrl"], serde_json::Value::Null);
    // AND another tenant (which has no such execution) gets 404, whatever the buffer holds
    let o = h.get("other", &format!("/v1/executions/{id}/logs")).await;
    assert_eq!(o.status, 404, "{}", o.body);
    // AND an unknown execution is 404, a malformed id 400
    assert_eq!(h.get("acme", "/v1/executions/settle@1/logs").await.status, 404);
    assert_eq!(h.get("acme", "/v1/executions/not-an-id/logs").await.status, 400);

    // WHEN the API is the deployed one (no buffer; region and log groups known)
    let d = Harness::new("execlogs2", at("2026-12-01T10:00:00Z")).await;
    let deployed = d.api.clone().with_console(ConsoleSettings {
        auth: ConsoleAuth::Oidc,
        region: Some("eu-west-1".into()),
        log_groups: vec!["/aws/lambda/sundial-worker".into()],
        ..Default::default()
    });
    let d = Harness { api: deployed, ..d };
    let b = fixtures::create_ready(&d.env, "acme", "settle", def(), Utc::now())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // THEN no lines, and a Logs Insights link over the log groups filtered by the id
    let r = d.get("acme", &format!("/v1/executions/{}/logs", b.id())).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["captured"], false);
    assert_eq!(r.body["lines"], serde_json::json!([]));
    let url = r.body["logsInsightsUrl"].as_str().unwrap_or_default();
    assert!(
        url.starts_with(
            "https://eu-west-1.console.aws.amazon.com/cloudwatch/home?region=eu-west-1#logsV2:logs-insights"
        ),
        "{url}"
    );
    assert!(url.contains("*2Faws*2Flambda*2Fsundial-worker"), "{url}");
    assert!(url.contains(&b.id().replace('@', "*40")), "{url}");
    // AND it filters on the global id (issue 28, L1): `settle@…` alone also matches another
    // tenant's `globex:settle@…`
    let global = format!("acme*3A{}", b.id().replace('@', "*40"));
    assert!(url.contains(&format!("*22{global}*22")), "{url}");
    assert!(!url.contains(&format!("*22{}", b.id().replace('@', "*40"))), "{url}");
}
