//! Step Functions (awsJson1_0, `X-Amz-Target: AWSStepFunctions.<Op>`): standard state machines
//! with tags, and executions whose course is decided when they start.
//!
//! Why decided at the start: a definition here is a chain of `Pass`, `Wait` (`Seconds`),
//! `Succeed` and `Fail` states, so an execution's whole course follows from its definition
//! and its start instant: it is RUNNING until its start plus the chain's waits, then SUCCEEDED
//! (its output its input) or FAILED (with the `Fail` state's error and cause). No task runs in
//! the background; `DescribeExecution` reads the simulated clock, so a paused tokio clock moves
//! executions forward like every other timer. Other state types are refused at creation
//! (`InvalidDefinition`, naming what is not modelled).
//!
//! What Sundial relies on and this keeps: a name is taken on its machine for good, so a second
//! `StartExecution` of one name is `ExecutionAlreadyExists`, except that the same name and the
//! same input while the first still runs answer that execution again (how an SDK retry of a
//! lost response stays one execution).

use crate::call::Call;
use crate::ddb::{ACCOUNT, REGION};
use crate::error::ApiError;
use crate::Aws;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// One execution, as the harness sees it ([`Aws::on_start_execution`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SfnExecution {
    pub arn: String,
    pub machine_arn: String,
    pub name: String,
    /// The input, as JSON text.
    pub input: String,
    pub start_ms: i64,
    /// When it closes (it is RUNNING before).
    pub stop_ms: i64,
    /// Its error and cause when it closes FAILED (or ABORTED); `None`: it closes SUCCEEDED.
    pub failure: Option<(String, String)>,
    /// Stopped by `StopExecution` (at `stop_ms`): it closes ABORTED.
    pub aborted: bool,
}

impl SfnExecution {
    /// `RUNNING`, `SUCCEEDED`, `FAILED` or `ABORTED` at `now_ms`.
    pub fn status_at(&self, now_ms: i64) -> &'static str {
        match (&self.failure, now_ms >= self.stop_ms) {
            (_, false) => "RUNNING",
            (_, true) if self.aborted => "ABORTED",
            (None, true) => "SUCCEEDED",
            (Some(_), true) => "FAILED",
        }
    }
}

/// The course a definition gives every execution: (how long it runs, its failure if it fails).
#[derive(Debug, Clone, PartialEq)]
struct Course {
    run_ms: i64,
    failure: Option<(String, String)>,
}

struct Machine {
    arn: String,
    definition: String,
    course: Course,
    tags: BTreeMap<String, String>,
    created_ms: i64,
}

#[derive(Default)]
pub(crate) struct StepFunctions {
    machines: BTreeMap<String, Machine>,
    executions: BTreeMap<String, SfnExecution>,
    /// `StartExecution`s answered `ExecutionAlreadyExists` (a caller adopting a name taken).
    pub(crate) already_exists: u64,
}

/// Most states a chain may visit (a longer one is refused: it would be a loop).
const MAX_STATES: usize = 100;

fn invalid_definition(why: impl Into<String>) -> ApiError {
    ApiError::new(400, "InvalidDefinition", why)
}

/// Walks the chain from `StartAt`.
fn course_of(definition: &str) -> Result<Course, ApiError> {
    let d: Value =
        serde_json::from_str(definition).map_err(|e| invalid_definition(format!("not JSON: {e}")))?;
    let mut at = d["StartAt"].as_str().ok_or_else(|| invalid_definition("no StartAt"))?.to_string();
    let mut run_ms = 0i64;
    for _ in 0..MAX_STATES {
        let s = &d["States"][&at];
        let kind = s["Type"].as_str().ok_or_else(|| invalid_definition(format!("no state {at:?}")))?;
        match kind {
            "Pass" => {}
            "Wait" => {
                let secs = s["Seconds"]
                    .as_i64()
                    .ok_or_else(|| invalid_definition("simaws models a Wait state by its Seconds only"))?;
                run_ms += secs.max(0) * 1000;
            }
            "Succeed" => return Ok(Course { run_ms, failure: None }),
            "Fail" => {
                let field = |k: &str| s[k].as_str().unwrap_or("").to_string();
                return Ok(Course { run_ms, failure: Some((field("Error"), field("Cause"))) });
            }
            other => {
                return Err(invalid_definition(format!(
                    "simaws models Pass, Wait, Succeed and Fail states, not {other} (docs/simulation.md)"
                )))
            }
        }
        if s["End"].as_bool() == Some(true) {
            return Ok(Course { run_ms, failure: None });
        }
        at = s["Next"].as_str().ok_or_else(|| invalid_definition(format!("{at:?} has no Next")))?.to_string();
    }
    Err(invalid_definition(format!("more than {MAX_STATES} states in a row")))
}

fn tags_of(v: &Value) -> BTreeMap<String, String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| Some((t["key"].as_str()?.to_string(), t["value"].as_str().unwrap_or("").to_string())))
        .collect()
}

fn secs(ms: i64) -> f64 {
    ms as f64 / 1000.0
}

fn no_machine(arn: &str) -> ApiError {
    ApiError::new(400, "StateMachineDoesNotExist", format!("State Machine Does Not Exist: '{arn}'"))
}

fn summary(x: &SfnExecution, now: i64) -> Value {
    let status = x.status_at(now);
    let mut v = json!({
        "executionArn": x.arn, "stateMachineArn": x.machine_arn, "name": x.name,
        "status": status, "startDate": secs(x.start_ms),
    });
    if status != "RUNNING" {
        v["stopDate"] = json!(secs(x.stop_ms));
    }
    v
}

impl StepFunctions {
    fn create(&mut self, req: &Value, now: i64) -> Result<Value, ApiError> {
        let name = req["name"].as_str().unwrap_or_default();
        if name.is_empty() || name.len() > 80 {
            return Err(ApiError::new(400, "InvalidName", format!("Invalid Name: '{name}'")));
        }
        let definition = req["definition"].as_str().unwrap_or_default();
        let course = course_of(definition)?;
        let arn = format!("arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:{name}");
        if let Some(m) = self.machines.get(&arn) {
            // The same definition again is the same machine (AWS answers it idempotently).
            if m.definition != definition {
                return Err(ApiError::new(
                    400,
                    "StateMachineAlreadyExists",
                    format!("State Machine Already Exists: '{arn}'"),
                ));
            }
            return Ok(json!({ "stateMachineArn": arn, "creationDate": secs(m.created_ms) }));
        }
        let m = Machine {
            arn: arn.clone(),
            definition: definition.to_string(),
            course,
            tags: tags_of(&req["tags"]),
            created_ms: now,
        };
        self.machines.insert(arn.clone(), m);
        Ok(json!({ "stateMachineArn": arn, "creationDate": secs(now) }))
    }

    /// Starts an execution, or answers the running one of the same name and input; the new
    /// execution, if one was made, is returned for the harness's hook.
    fn start(&mut self, req: &Value, now: i64) -> Result<(Value, Option<SfnExecution>), ApiError> {
        let machine_arn = req["stateMachineArn"].as_str().unwrap_or_default();
        let m = self.machines.get(machine_arn).ok_or_else(|| no_machine(machine_arn))?;
        let name = req["name"].as_str().unwrap_or_default();
        if name.is_empty() || name.len() > 80 {
            return Err(ApiError::new(400, "InvalidName", format!("Invalid Name: '{name}'")));
        }
        let input = req["input"].as_str().unwrap_or("{}");
        if serde_json::from_str::<Value>(input).is_err() {
            return Err(ApiError::new(400, "InvalidExecutionInput", "Invalid execution input (not JSON)"));
        }
        let arn = format!("{}:{name}", m.arn.replacen(":stateMachine:", ":execution:", 1));
        if let Some(x) = self.executions.get(&arn) {
            if x.input == input && x.status_at(now) == "RUNNING" {
                return Ok((json!({ "executionArn": arn, "startDate": secs(x.start_ms) }), None));
            }
            self.already_exists += 1;
            return Err(ApiError::new(
                400,
                "ExecutionAlreadyExists",
                format!("Execution Already Exists: '{arn}'"),
            ));
        }
        let x = SfnExecution {
            arn: arn.clone(),
            machine_arn: m.arn.clone(),
            name: name.to_string(),
            input: input.to_string(),
            start_ms: now,
            stop_ms: now + m.course.run_ms,
            failure: m.course.failure.clone(),
            aborted: false,
        };
        self.executions.insert(arn.clone(), x.clone());
        Ok((json!({ "executionArn": arn, "startDate": secs(now) }), Some(x)))
    }

    fn describe(&self, req: &Value, now: i64) -> Result<Value, ApiError> {
        let arn = req["executionArn"].as_str().unwrap_or_default();
        let x = self.executions.get(arn).ok_or_else(|| {
            ApiError::new(400, "ExecutionDoesNotExist", format!("Execution Does Not Exist: '{arn}'"))
        })?;
        let mut v = summary(x, now);
        v["input"] = json!(x.input);
        match (&x.failure, x.status_at(now)) {
            (_, "RUNNING") => {}
            (Some((error, cause)), _) => {
                v["error"] = json!(error);
                v["cause"] = json!(cause);
            }
            (None, _) => v["output"] = json!(x.input),
        }
        Ok(v)
    }

    /// Stops a running execution at `now`: it closes ABORTED with the given error and cause. A
    /// closed one is left as it is.
    fn stop(&mut self, req: &Value, now: i64) -> Result<Value, ApiError> {
        let arn = req["executionArn"].as_str().unwrap_or_default();
        let x = self.executions.get_mut(arn).ok_or_else(|| {
            ApiError::new(400, "ExecutionDoesNotExist", format!("Execution Does Not Exist: '{arn}'"))
        })?;
        if x.status_at(now) == "RUNNING" {
            x.stop_ms = now;
            x.aborted = true;
            let text = |k: &str| req[k].as_str().unwrap_or_default().to_string();
            x.failure = Some((text("error"), text("cause")));
        }
        Ok(json!({ "stopDate": secs(x.stop_ms) }))
    }

    /// The execution `arn` as it is now (a stop shows).
    pub(crate) fn execution(&self, arn: &str) -> Option<SfnExecution> {
        self.executions.get(arn).cloned()
    }

    /// Newest first, as AWS lists them; no paging.
    fn list(&self, req: &Value, now: i64) -> Result<Value, ApiError> {
        let machine_arn = req["stateMachineArn"].as_str().unwrap_or_default();
        if !self.machines.contains_key(machine_arn) {
            return Err(no_machine(machine_arn));
        }
        let filter = req["statusFilter"].as_str();
        let mut xs: Vec<&SfnExecution> = self
            .executions
            .values()
            .filter(|x| x.machine_arn == machine_arn && filter.is_none_or(|f| x.status_at(now) == f))
            .collect();
        xs.sort_by(|a, b| b.start_ms.cmp(&a.start_ms).then_with(|| a.name.cmp(&b.name)));
        Ok(json!({ "executions": xs.into_iter().map(|x| summary(x, now)).collect::<Vec<_>>() }))
    }

    fn tags(&self, req: &Value) -> Result<Value, ApiError> {
        let arn = req["resourceArn"].as_str().unwrap_or_default();
        let m = self
            .machines
            .get(arn)
            .ok_or_else(|| ApiError::new(400, "ResourceNotFound", format!("Resource not found: '{arn}'")))?;
        let tags: Vec<Value> = m.tags.iter().map(|(k, v)| json!({ "key": k, "value": v })).collect();
        Ok(json!({ "tags": tags }))
    }
}

pub(crate) fn call(aws: &Aws, call: &Call) -> Result<Value, ApiError> {
    let req = &call.json;
    let now = aws.now_ms();
    let (out, started, hook) = {
        let mut st = aws.lock();
        let sfn = &mut st.sfn;
        let (out, started) = match call.op.as_str() {
            "CreateStateMachine" => (sfn.create(req, now)?, None),
            "StartExecution" => sfn.start(req, now)?,
            "DescribeExecution" => (sfn.describe(req, now)?, None),
            "ListExecutions" => (sfn.list(req, now)?, None),
            "StopExecution" => (sfn.stop(req, now)?, None),
            "ListTagsForResource" => (sfn.tags(req)?, None),
            "DeleteStateMachine" => {
                sfn.machines.remove(req["stateMachineArn"].as_str().unwrap_or_default());
                (json!({}), None)
            }
            op => return Err(ApiError::unknown_operation("StepFunctions", op)),
        };
        (out, started, st.on_start_execution.clone())
    };
    // The hook runs outside the lock: it may read the simulated AWS.
    if let (Some(x), Some(hook)) = (started, hook) {
        hook(&x);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chain_of_waits_runs_their_sum_and_a_fail_state_fails_with_its_error() {
        let ok = r#"{"StartAt":"P","States":{"P":{"Type":"Pass","Next":"W"},"W":{"Type":"Wait","Seconds":3,"Next":"W2"},"W2":{"Type":"Wait","Seconds":2,"End":true}}}"#;
        assert_eq!(course_of(ok), Ok(Course { run_ms: 5_000, failure: None }));
        let fail = r#"{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":1,"Next":"F"},"F":{"Type":"Fail","Error":"E","Cause":"c"}}}"#;
        assert_eq!(course_of(fail), Ok(Course { run_ms: 1_000, failure: Some(("E".into(), "c".into())) }));
        let task = r#"{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"x","End":true}}}"#;
        assert_eq!(course_of(task).map_err(|e| e.code), Err("InvalidDefinition".to_string()));
        let lp = r#"{"StartAt":"P","States":{"P":{"Type":"Pass","Next":"P"}}}"#;
        assert!(course_of(lp).is_err());
    }

    #[test]
    fn a_stopped_execution_closes_aborted_at_once_and_a_closed_one_stays_as_it_is() {
        let mut sfn = StepFunctions::default();
        let wait = r#"{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":30,"End":true}}}"#;
        let quick = r#"{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}"#;
        let mut arns = vec![];
        for (name, def) in [("long", wait), ("quick", quick)] {
            let m = sfn.create(&json!({"name": name, "definition": def}), 0).unwrap();
            let start = json!({"stateMachineArn": m["stateMachineArn"], "name": "r1", "input": "{}"});
            arns.push(sfn.start(&start, 0).unwrap().0["executionArn"].as_str().unwrap().to_string());
        }
        let stop = |arn: &str| json!({"executionArn": arn, "error": "Sundial.Stopped", "cause": "timeout"});
        // WHEN the running one is stopped at 5 s, and the closed one at 6 s
        assert_eq!(sfn.stop(&stop(&arns[0]), 5_000).unwrap()["stopDate"], json!(5.0));
        sfn.stop(&stop(&arns[1]), 6_000).unwrap();
        // THEN the first is ABORTED from 5 s with the stop's error, the second still SUCCEEDED
        let long = sfn.execution(&arns[0]).unwrap();
        assert_eq!((long.status_at(4_999), long.status_at(5_000)), ("RUNNING", "ABORTED"));
        let d = sfn.describe(&json!({"executionArn": arns[0]}), 7_000).unwrap();
        assert_eq!((d["status"].as_str(), d["error"].as_str()), (Some("ABORTED"), Some("Sundial.Stopped")));
        assert_eq!(sfn.execution(&arns[1]).unwrap().status_at(7_000), "SUCCEEDED");
        assert_eq!(
            sfn.stop(&stop("arn:nope"), 0).map_err(|e| e.code),
            Err("ExecutionDoesNotExist".to_string())
        );
    }
}
