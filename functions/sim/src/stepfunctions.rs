//! The `stepFunctions` target in the simulator: each tenant owns three state machines in the
//! simulated AWS (tagged `sundial-tenant=<tenant>`, allowed by the deployment's `stepFunctions`
//! glob), and a few jobs target one of them instead of the in-process handler.
//!
//! Why three: a quick machine (its executions close while the worker still holds the fire),
//! a slow one (30 s, long enough that a worker killed or stalled mid-run leaves an execution
//! running for the takeover to adopt) and a failing one (every run FAILED: each retry is a new
//! run, a new execution, until the fire is DEAD).
//!
//! The effect of such a fire is its Step Functions execution: the ledger learns of every one
//! as it starts ([`crate::ledger::Ledger::step_functions_started`]) and holds the product to
//! docs/targets.md: a SUCCEEDED fire has an execution that succeeded (else the `effects`
//! invariant's "SUCCEEDED without its effect"), and no execution of a fire starts while another
//! of it runs or has succeeded (a takeover adopts; only a failed run is followed by a new one),
//! reported by [`violations`] under `effects`.

use crate::ledger::{Effect, Ledger};
use crate::violation::Violation;
use crate::world::World;
use anyhow::{Context, Result};
use sundial_core::execution::target::Invocation;
use sundial_model::Target;
use sundial_simaws::SfnExecution;

/// The state machines each tenant owns: (name suffix, definition).
pub const MACHINES: [(&str, &str); 3] = [
    ("quick", r#"{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":2,"End":true}}}"#),
    ("slow", r#"{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":30,"End":true}}}"#),
    (
        "fails",
        r#"{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":1,"Next":"F"},"F":{"Type":"Fail","Error":"SimSettlementError","Cause":"the simulated machine always fails"}}}"#,
    ),
];

/// The deployment's allowlist glob: every tenant's machines (the tag says whose each is).
pub const GLOB: &str = "arn:aws:states:us-east-1:000000000000:stateMachine:sim-*";

/// The ARN of `tenant`'s machine `kind` (an index into [`MACHINES`]).
pub fn machine_arn(tenant: &str, kind: usize) -> String {
    let (suffix, _) = MACHINES[kind % MACHINES.len()];
    format!("arn:aws:states:us-east-1:000000000000:stateMachine:sim-{tenant}-{suffix}")
}

/// The target of a job of `tenant` aimed at its machine `kind`.
pub fn target(tenant: &str, kind: usize) -> Target {
    Target::step_functions(machine_arn(tenant, kind))
}

/// Creates every tenant's machines (through the SDK, as a tenant's deployment would), and lets
/// `ledger` see every execution started.
pub async fn provision<'a>(
    world: &World,
    ledger: &Ledger,
    tenants: impl IntoIterator<Item = &'a str>,
) -> Result<()> {
    let sfn = world.clients("provision").sfn;
    let mut seen = std::collections::BTreeSet::new();
    for tenant in tenants.into_iter().filter(|t| seen.insert(t.to_string())) {
        for (suffix, definition) in MACHINES {
            let tag = aws_sdk_sfn::types::Tag::builder().key("sundial-tenant").value(tenant).build();
            sfn.create_state_machine()
                .name(format!("sim-{tenant}-{suffix}"))
                .definition(definition)
                .role_arn("arn:aws:iam::000000000000:role/sim-sfn")
                .tags(tag)
                .send()
                .await
                .with_context(|| format!("creating {tenant}'s state machine {suffix}"))?;
        }
    }
    let ledger = ledger.clone();
    world.aws.on_start_execution(std::sync::Arc::new(move |x| record(&ledger, x)));
    Ok(())
}

/// The fire an execution was started for and the effect it stands for (applied when it
/// closes), from its input, the invocation; `None` for an input that is not one.
pub fn effect_of(x: &SfnExecution) -> Option<(String, Effect)> {
    let inv: Invocation = serde_json::from_str(&x.input).ok()?;
    Some(crate::ledger::effect_of(&inv, x.stop_ms))
}

/// Hands `ledger` an execution as it starts, with the fire it was started for and the effect it
/// stands for ([`effect_of`]); one whose input is not an invocation is not a fire's, and is not
/// recorded.
pub fn record(ledger: &Ledger, x: &SfnExecution) {
    if let Some((id, effect)) = effect_of(x) {
        ledger.step_functions_started(x, id, effect);
    }
}

/// Executions started for a fire while an earlier one of it ran or had succeeded (a takeover
/// must adopt the running one; a new run only follows a failed or stopped one), as `effects`
/// violations. Each is judged as it ended (`current`, simaws's state now): an execution
/// stopped at a timeout or a cancel is ABORTED from its stop on, no longer as it was started.
pub fn violations(ledger: &Ledger, current: impl Fn(&str) -> Option<SfnExecution>) -> Vec<Violation> {
    let mut out = Vec::new();
    for (id, started) in ledger.step_functions() {
        let xs: Vec<SfnExecution> =
            started.iter().map(|x| current(&x.arn).unwrap_or_else(|| x.clone())).collect();
        for (i, x) in xs.iter().enumerate() {
            let live: Vec<String> = xs[..i]
                .iter()
                .filter(|e| !matches!(e.status_at(x.start_ms), "FAILED" | "ABORTED"))
                .map(|e| format!("{} ({} at its start)", e.name, e.status_at(x.start_ms)))
                .collect();
            if !live.is_empty() {
                let detail = format!(
                    "Step Functions execution {} started while {} of the fire",
                    x.name,
                    live.join(", ")
                );
                out.push(Violation { invariant: "effects", detail, execution: Some(id.clone()) });
            }
        }
    }
    out
}

/// The run's summary of the target: executions started, the fires they were started for,
/// fires with more than one (a run after a failed one), and starts answered
/// `ExecutionAlreadyExists` (a takeover adopting, or an SDK retry after the execution closed).
pub fn summary(ledger: &Ledger, world: &World) -> String {
    let all = ledger.step_functions();
    let started: usize = all.values().map(Vec::len).sum();
    let several = all.values().filter(|v| v.len() > 1).count();
    format!(
        "step functions: {started} executions for {} fires ({several} with more than one run), {} starts adopted a taken name\n",
        all.len(),
        world.aws.sfn_already_exists()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn started(name: &str, token: u64, start_ms: i64, stop_ms: i64, fails: bool) -> SfnExecution {
        let input = serde_json::json!({
            "executionId": "tenant0:job0001@1774857300000", "fencingToken": token, "attempt": token,
            "scheduledAt": "2026-03-30T07:55:00Z", "tenant": "tenant0", "jobId": "job0001", "params": {"v": 2},
        });
        SfnExecution {
            arn: format!("arn:aws:states:us-east-1:000000000000:execution:sim-tenant0-slow:{name}"),
            machine_arn: machine_arn("tenant0", 1),
            name: name.into(),
            input: input.to_string(),
            start_ms,
            stop_ms,
            failure: fails.then(|| ("E".into(), "c".into())),
            aborted: false,
        }
    }

    #[test]
    fn a_succeeded_execution_is_the_fires_effect_and_a_start_beside_a_live_one_is_a_double() {
        // GIVEN a fire whose first run FAILED and whose second run succeeds
        let ledger = Ledger::default();
        record(&ledger, &started("r1", 1, 1_000, 2_000, true));
        record(&ledger, &started("r2", 2, 3_000, 33_000, false));
        // THEN its effect is the second run's, applied when it closes, and nothing is doubled
        let effects = ledger.effects();
        let e = effects.get("job0001@1774857300000").map(|e| (e.token, e.at_ms, e.version));
        assert_eq!(e, Some((2, 33_000, Some(2))));
        assert!(violations(&ledger, |_| None).is_empty());
        // WHEN another execution of the fire starts while the second runs (a takeover that did
        // not adopt)
        record(&ledger, &started("r2-t3", 3, 10_000, 40_000, false));
        // THEN it is an effects violation naming the running one
        let v = violations(&ledger, |_| None);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.contains("r2 (RUNNING at its start)"), "{}", v[0].detail);
        // AND none when the second run had been stopped (ABORTED) before the third started
        let stopped = |arn: &str| {
            let mut x = started("r2", 2, 3_000, 33_000, false);
            x.stop_ms = 9_000;
            x.aborted = true;
            x.failure = Some(("Sundial.Stopped".into(), "timeout".into()));
            (x.arn == arn).then_some(x)
        };
        assert!(violations(&ledger, stopped).is_empty());
    }
}
