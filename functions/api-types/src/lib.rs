//! # sundial-api-types: the HTTP API's wire types
//!
//! Every request and response body of the API, once: the server (`sundial-api`) serializes these
//! types, the typed client (`sundial-client`) and the tests read them, and the OpenAPI document
//! (`functions/api/openapi.json`, a golden file) is generated from their `utoipa` schemas and the
//! server's handlers. A change here is a visible change of the contract.
//!
//! - Definitions are `sundial-model`'s own [`JobDefinition`] (the type the API validates and
//!   stores), so a definition read from the API can be edited and written back.
//! - **Requests are strict, answers are lenient.** Request bodies refuse unknown fields at every
//!   level (`deny_unknown_fields`; the document says `additionalProperties: false`). Answers
//!   ignore fields they do not know, definitions inside answers included ([`lenient`]), so a
//!   client built against an older document reads a newer server.
//! - Instants are written as the API writes them: RFC 3339 UTC with milliseconds ([`time`]).
//!
//! ## Layout
//! - [`jobs`]: create and edit bodies, a job, a job after a change, previews, upcoming fires,
//!   the tz report.
//! - [`executions`]: executions, timelines, trigger-now and backfill, replays, log lines.
//! - [`calendars`]: business calendars and resource limits.
//! - [`ops`]: the operations log and list pages.
//! - [`errors`]: the error body and [`ErrorCode`].
//! - [`lenient`]: reading strict types leniently inside answers.
//! - [`time`]: the API's instant format.

pub mod calendars;
pub mod errors;
pub mod executions;
pub mod jobs;
pub mod lenient;
pub mod ops;
pub mod pools;
pub mod time;

pub use calendars::*;
pub use errors::*;
pub use executions::*;
pub use jobs::*;
pub use ops::*;
pub use pools::*;
pub use sundial_model::{ConcurrencyPolicy, ExecStatus, JobDefinition, JobState, RetryPolicy, Target};
pub use sundial_schedule::{BusinessCalendarRef, BusinessCalendarSpec, MisfirePolicy, Roll, ScheduleSpec};

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_read_back_and_write_out_as_the_api_sent_them() {
        // GIVEN a JobChange as the API writes it (functions/api/src/dto.rs)
        let sent = json!({
            "job": {
                "jobId": "a", "version": 2, "etag": "\"2\"", "state": "ENABLED",
                "definition": {
                    "schedule": {"expression": "0 30 2 * * *", "timezone": "UTC", "onGap": "shift",
                        "onOverlap": "first", "start": null, "end": null,
                        "exclusions": {"dates": [], "weekdays": []}, "jitterWindowSecs": 0},
                    "pool": "default", "target": {"type": "http", "url": "https://h.example/run"},
                    "params": {"v": 1}, "misfire": {"policy": "fireOnce"}, "misfireThresholdSecs": 60,
                    "concurrency": "ALLOW",
                    "retry": {"maxAttempts": 3, "baseDelaySecs": 2, "maxDelaySecs": 300, "maxAgeSecs": 86400},
                    "timeoutSecs": 300
                },
                "nextFireAt": "2026-12-02T02:30:00.000Z",
                "createdAt": "2026-12-01T10:00:00.000Z", "updatedAt": "2026-12-01T10:00:00.123Z"
            },
            "nextFires": ["2026-12-02T02:30:00.000Z"],
            "canceledExecutions": [], "heldExecutions": [], "amendedExecutions": [], "releasedExecutions": []
        });
        // WHEN read and written again
        let change: JobChange = serde_json::from_value(sent.clone()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(change.job.state, JobState::Enabled);
        let back = serde_json::to_value(&change).unwrap_or_else(|e| panic!("{e}"));
        // THEN the instants keep the API's format
        assert_eq!(back["job"]["updatedAt"], "2026-12-01T10:00:00.123Z");
        assert_eq!(back["nextFires"][0], "2026-12-02T02:30:00.000Z");
        assert_eq!(back["job"]["definition"]["target"], sent["job"]["definition"]["target"]);
    }

    #[test]
    fn an_answer_with_fields_this_client_does_not_know_is_read() {
        // GIVEN an execution detail from a newer server: new fields beside the known ones, in
        // the execution, its timeline and its definition (inside the tagged target too)
        let sent = json!({
            "executionId": "a@1", "jobId": "a", "status": "SUCCEEDED", "newStatusDetail": "x",
            "scheduledAt": "2026-12-01T10:00:00.000Z", "fireAt": "2026-12-01T10:00:00.000Z",
            "createdAt": "2026-12-01T10:00:00.000Z", "startedAt": null, "finishedAt": null,
            "startLagMs": null, "attempt": 1, "fencingToken": 1, "definitionVersion": 1,
            "leaseOwner": null, "leaseUntil": null, "availableAt": "2026-12-01T10:00:00.000Z",
            "cancelRequested": false, "missedRange": null, "lastError": null,
            "definition": {"schedule": {"expression": "* * * * *", "timezone": "UTC"},
                "target": {"type": "http", "url": "https://h.example/run", "newTargetOption": 1},
                "newPolicy": {"a": 1}},
            "timeline": [{"at": "2026-12-01T10:00:00.000Z", "actor": "tick", "from": null, "to": "READY",
                "attempt": 0, "token": 0, "code": null, "newEventField": true}],
        });
        // WHEN read with this client's types
        let d: ExecutionDetail = serde_json::from_value(sent).unwrap_or_else(|e| panic!("{e}"));
        // THEN what it knows is there
        assert_eq!(d.execution.status, ExecStatus::Succeeded);
        assert_eq!(d.definition.schedule.expression, "* * * * *");
        assert_eq!(d.timeline.len(), 1);
    }
}
