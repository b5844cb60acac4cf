//! Step Functions cases: what the `stepFunctions` target relies on (docs/targets.md): a state
//! machine's tags, a name taken once per machine (another input, or the execution closed:
//! `ExecutionAlreadyExists`; the same input while it runs: the same execution on AWS and the
//! simulator, `ExecutionAlreadyExists` on MiniStack, one execution either way), and the terminal statuses
//! `DescribeExecution` reports, with a `Fail` state's error and cause.

use super::{ensure, fail, Outcome};
use aws_sdk_sfn::error::SdkError;
use aws_sdk_sfn::operation::start_execution::{StartExecutionError, StartExecutionOutput};
use aws_sdk_sfn::types::{ExecutionStatus, Tag};
use std::time::Duration;

/// Any role: the emulators do not assume it, and the simulator has no IAM.
const ROLE: &str = "arn:aws:iam::123456789012:role/sundial-contract-sfn";

/// A state machine of `prefix` + `name` running `states`, tagged `sundial-tenant=t1`: its ARN.
async fn machine(
    sfn: &aws_sdk_sfn::Client,
    prefix: &str,
    name: &str,
    states: &str,
) -> Result<String, String> {
    let out = sfn
        .create_state_machine()
        .name(format!("{prefix}{name}"))
        .definition(states)
        .role_arn(ROLE)
        .tags(Tag::builder().key("sundial-tenant").value("t1").build())
        .send()
        .await
        .map_err(fail("CreateStateMachine"))?;
    Ok(out.state_machine_arn().to_string())
}

/// Describes `arn` until it is no longer RUNNING (at most a minute): (status, error, cause).
async fn closed(sfn: &aws_sdk_sfn::Client, arn: &str) -> Result<(ExecutionStatus, String, String), String> {
    for _ in 0..120 {
        let d =
            sfn.describe_execution().execution_arn(arn).send().await.map_err(fail("DescribeExecution"))?;
        if *d.status() != ExecutionStatus::Running {
            let text = |s: Option<&str>| s.unwrap_or("").to_string();
            return Ok((d.status().clone(), text(d.error()), text(d.cause())));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    Err(format!("{arn} still RUNNING after a minute"))
}

fn already_exists<R>(r: Result<StartExecutionOutput, SdkError<StartExecutionError, R>>) -> bool {
    matches!(r, Err(e) if e.as_service_error().is_some_and(|s| s.is_execution_already_exists()))
}

pub(super) async fn start_execution_by_name(sdk: &aws_config::SdkConfig, prefix: &str) -> Outcome {
    let sfn = aws_sdk_sfn::Client::new(sdk);
    let states = r#"{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":3,"End":true}}}"#;
    let m = machine(&sfn, prefix, "wait", states).await?;
    let out = async {
        // the tags, as the target's ownership check reads them
        let tags = sfn
            .list_tags_for_resource()
            .resource_arn(&m)
            .send()
            .await
            .map_err(fail("ListTagsForResource"))?;
        let tags: Vec<(&str, &str)> =
            tags.tags().iter().map(|t| (t.key().unwrap_or(""), t.value().unwrap_or(""))).collect();
        ensure!(tags == [("sundial-tenant", "t1")], "ListTagsForResource: {tags:?}");
        // a name and an input: one execution, answered again while it runs
        let start = |input: &'static str| {
            sfn.start_execution().state_machine_arn(&m).name("fire-r1").input(input).send()
        };
        let first = start(r#"{"token":1}"#).await.map_err(fail("StartExecution"))?;
        // AWS answers the same execution again (what the simulator does); MiniStack 1.5.33
        // answers ExecutionAlreadyExists. Sundial adopts the name either way, so the case holds
        // what it relies on: never a second execution.
        match start(r#"{"token":1}"#).await {
            Ok(again) => ensure!(
                again.execution_arn() == first.execution_arn(),
                "the same name and input while running: {} then {}",
                first.execution_arn(),
                again.execution_arn()
            ),
            r => ensure!(
                already_exists(r),
                "the same name and input again: neither the execution nor ExecutionAlreadyExists"
            ),
        }
        let want = format!("{}:fire-r1", m.replacen(":stateMachine:", ":execution:", 1));
        ensure!(first.execution_arn() == want, "execution ARN {} (expected {want})", first.execution_arn());
        // another input (a takeover's token) is refused: the name is taken
        ensure!(
            already_exists(start(r#"{"token":2}"#).await),
            "the same name with another input was not ExecutionAlreadyExists"
        );
        let d =
            sfn.describe_execution().execution_arn(&want).send().await.map_err(fail("DescribeExecution"))?;
        ensure!(*d.status() == ExecutionStatus::Running, "right after the start: {:?}", d.status());
        let (status, _, _) = closed(&sfn, &want).await?;
        ensure!(status == ExecutionStatus::Succeeded, "a Wait then End closed {status:?}");
        // closed, the name stays taken, even with the same input
        ensure!(
            already_exists(start(r#"{"token":1}"#).await),
            "a closed execution's name and input started again"
        );
        let list =
            sfn.list_executions().state_machine_arn(&m).send().await.map_err(fail("ListExecutions"))?;
        let runs: Vec<(&str, &ExecutionStatus)> =
            list.executions().iter().map(|x| (x.name(), x.status())).collect();
        ensure!(runs == [("fire-r1", &ExecutionStatus::Succeeded)], "ListExecutions: {runs:?}");
        let e = sfn
            .describe_execution()
            .execution_arn(format!("{}:none", m.replacen(":stateMachine:", ":execution:", 1)))
            .send()
            .await
            .err()
            .ok_or("a missing execution was described")?;
        ensure!(
            e.as_service_error().is_some_and(|s| s.is_execution_does_not_exist()),
            "a missing execution: {e:?}"
        );
        Ok(())
    }
    .await;
    let _ = sfn.delete_state_machine().state_machine_arn(&m).send().await;
    out
}

pub(super) async fn failed_execution(sdk: &aws_config::SdkConfig, prefix: &str) -> Outcome {
    let sfn = aws_sdk_sfn::Client::new(sdk);
    let states = r#"{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":1,"Next":"F"},"F":{"Type":"Fail","Error":"SettlementError","Cause":"ledger closed"}}}"#;
    let m = machine(&sfn, prefix, "fail", states).await?;
    let out = async {
        let started = sfn
            .start_execution()
            .state_machine_arn(&m)
            .name("fire-r1")
            .input("{}")
            .send()
            .await
            .map_err(fail("StartExecution"))?;
        let (status, error, cause) = closed(&sfn, started.execution_arn()).await?;
        ensure!(status == ExecutionStatus::Failed, "a Fail state closed {status:?}");
        ensure!(
            error == "SettlementError" && cause == "ledger closed",
            "FAILED with error {error:?} and cause {cause:?}"
        );
        let missing = m.replace(&format!("{prefix}fail"), &format!("{prefix}none"));
        let e = sfn
            .start_execution()
            .state_machine_arn(&missing)
            .name("x")
            .send()
            .await
            .err()
            .ok_or("a missing state machine started an execution")?;
        ensure!(
            e.as_service_error().is_some_and(|s| s.is_state_machine_does_not_exist()),
            "a missing state machine: {e:?}"
        );
        Ok(())
    }
    .await;
    let _ = sfn.delete_state_machine().state_machine_arn(&m).send().await;
    out
}
