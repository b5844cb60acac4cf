//! Executions (read, children, logs, cancel) and dead letters (replay).

use super::request::{enc, Call};
use super::Client;
use crate::error::Error;
use crate::types::{Execution, ExecutionDetail, ExecutionLogs, Page, ReplayResults};
use hyper::Method;

impl Client {
    /// `GET /v1/executions/{executionId}`: with its timeline.
    pub async fn get_execution(&self, execution_id: &str) -> Result<ExecutionDetail, Error> {
        self.execute(Call::new(Method::GET, format!("/v1/executions/{}", enc(execution_id)))).await
    }

    /// `GET /v1/executions/{executionId}/children`: the first page of a fire's children, in
    /// order (100; a sharded or broadcast fire has at most 100, a map-reduce fire up to 100,000:
    /// page through them with [`crate::ListChildren`] and [`Client::page`] or [`Client::all`]).
    pub async fn list_children(&self, execution_id: &str) -> Result<Page<Execution>, Error> {
        self.page(&crate::ListChildren::new(execution_id)).await
    }

    /// `GET /v1/executions/{executionId}/logs`: the worker's log lines of one execution (the
    /// local run keeps them), or a CloudWatch Logs Insights link (deployed).
    pub async fn execution_logs(&self, execution_id: &str) -> Result<ExecutionLogs, Error> {
        self.execute(Call::new(Method::GET, format!("/v1/executions/{}/logs", enc(execution_id)))).await
    }

    /// `POST /v1/executions/{executionId}/cancel`: canceled, or cancel requested if running.
    pub async fn cancel_execution(&self, execution_id: &str) -> Result<ExecutionDetail, Error> {
        self.execute(Call::new(Method::POST, format!("/v1/executions/{}/cancel", enc(execution_id)))).await
    }

    /// `POST /v1/dlq/replay`: up to 25 dead executions, one outcome each.
    pub async fn replay_dead_letters(&self, execution_ids: &[String]) -> Result<ReplayResults, Error> {
        self.replay_dead_letters_because(execution_ids, None).await
    }

    /// `POST /v1/dlq/replay` with a reason, recorded in each replay's operations-log entry
    /// (`detail`; at most 500 characters).
    pub async fn replay_dead_letters_because(
        &self,
        execution_ids: &[String],
        reason: Option<&str>,
    ) -> Result<ReplayResults, Error> {
        let mut body = serde_json::json!({ "executionIds": execution_ids });
        if let Some(r) = reason {
            body["reason"] = r.into();
        }
        self.execute(Call::new(Method::POST, "/v1/dlq/replay".into()).json(&body)?).await
    }

    /// `POST /v1/dlq/{executionId}/replay`.
    pub async fn replay_dead_letter(&self, execution_id: &str) -> Result<ExecutionDetail, Error> {
        self.execute(Call::new(Method::POST, format!("/v1/dlq/{}/replay", enc(execution_id)))).await
    }
}
