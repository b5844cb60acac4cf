//! The `ecs` target in the simulator: one cluster shared by every tenant, and per tenant a few
//! task definitions in the simulated AWS (tagged `sundial-tenant=<tenant>`, allowed by the
//! deployment's `ecsClusters` and `ecsTaskDefinitions` globs); a few jobs run one of them
//! instead of the in-process handler.
//!
//! No container runs: simaws plays each from its environment ([`sundial_simaws::RUN_SECS_VAR`],
//! [`sundial_simaws::EXIT_CODE_VAR`]). Why these [`DEFINITIONS`]: a quick task (it stops while
//! the worker still holds the fire), a slow one (30 s, long enough that a worker killed or
//! stalled mid-run leaves it running for the takeover to adopt; some jobs run it under a
//! [`SHORT_TIMEOUT_SECS`] `timeoutSecs`, so every attempt times out and must stop its task), a
//! failing one (exit 3: each retry is a new run of the fire and a new task, until the fire is
//! DEAD) and, rarely, one that never starts (`TaskFailedToStart`, no exit code).
//!
//! The ledger sees every task created ([`crate::ledger::Ledger::ecs_task_created`]) and this
//! module holds the product to docs/targets.md, under `effects`:
//! - a SUCCEEDED fire has a task whose container exited 0 (its effect, [`settle`]);
//! - no task of a run name (`startedBy`, the fire's run) is created while another of it runs or
//!   has exited 0 (a takeover or a race that did not adopt);
//! - a task carries its fire's `SUNDIAL_EXECUTION_ID` and no fencing token above the fire's
//!   last;
//! - no task runs past the instant its fire became final (a timed-out or cancelled attempt
//!   stops its task; a success waited for it).

use crate::ledger::{Effect, Ledger};
use crate::violation::Violation;
use crate::world::{ms, World};
use anyhow::{bail, Result};
use std::collections::{BTreeMap, BTreeSet};
use sundial_core::execution::target::ecs::RunNames;
use sundial_core::execution::target::stepfunctions::run_of;
use sundial_core::execution::target::Invocation;
use sundial_model::{EcsLaunchType, EcsTarget, Execution, Target};
use sundial_simaws::{Aws, EcsStopCode, EcsTask, EXIT_CODE_VAR, RUN_SECS_VAR};

/// One task definition each tenant owns: its family is `sim-{tenant}-{suffix}`, and its
/// container runs `run_secs` from the task's creation, then exits with `exit_code` (`none`: it
/// never starts).
#[derive(Debug, Clone, Copy)]
pub struct Definition {
    /// The family's suffix.
    pub suffix: &'static str,
    /// Seconds from the task's creation to its container's exit.
    pub run_secs: &'static str,
    /// The container's exit code, or `none`.
    pub exit_code: &'static str,
}

/// The task definitions each tenant owns: quick, slow and failing (in that order, the jobs'
/// turns: `workload::add_ecs`), and [`NEVER`].
pub const DEFINITIONS: [Definition; 4] = [
    Definition { suffix: "quick", run_secs: "2", exit_code: "0" },
    Definition { suffix: "slow", run_secs: "30", exit_code: "0" },
    Definition { suffix: "fails", run_secs: "1", exit_code: "3" },
    Definition { suffix: "never", run_secs: "5", exit_code: "none" },
];

/// Index of the slow definition in [`DEFINITIONS`] (the one that outlasts a short timeout).
pub const SLOW: usize = 1;

/// Index of the definition whose tasks never start.
pub const NEVER: usize = 3;

/// The `timeoutSecs` of a slow job drawn to time out: shorter than the slow task.
pub const SHORT_TIMEOUT_SECS: u32 = 20;

/// The container that gets the fire's overrides and whose exit decides.
pub const CONTAINER: &str = "main";

/// The subnet every simulated task is placed in (FARGATE needs one), given to every tenant.
pub const SUBNET: &str = "subnet-0a1b2c3d";
/// The security group every simulated task carries, given to every tenant.
pub const SECURITY_GROUP: &str = "sg-0a1b2c3d";

/// Where simaws's ECS lives (its one region and account).
const ARN_PREFIX: &str = "arn:aws:ecs:us-east-1:000000000000";
const CLUSTER: &str = "sim-shared";

/// The deployment's allowlist globs: (`ecsClusters`, `ecsTaskDefinitions`). Every cluster and
/// family of the simulator's (a family matched without its revision); the tag on a definition
/// says whose it is.
pub fn globs() -> (String, String) {
    (format!("{ARN_PREFIX}:cluster/sim-*"), format!("{ARN_PREFIX}:task-definition/sim-*"))
}

/// The shared cluster's ARN.
pub fn cluster_arn() -> String {
    format!("{ARN_PREFIX}:cluster/{CLUSTER}")
}

/// The ARN of `tenant`'s definition `kind` (an index into [`DEFINITIONS`]), at its only
/// revision: a job names the revision it runs.
pub fn task_definition_arn(tenant: &str, kind: usize) -> String {
    let d = DEFINITIONS[kind % DEFINITIONS.len()];
    format!("{ARN_PREFIX}:task-definition/sim-{tenant}-{}:1", d.suffix)
}

/// The target of a job of `tenant` running its definition `kind` on FARGATE.
pub fn target(tenant: &str, kind: usize) -> Target {
    Target::Ecs(EcsTarget {
        cluster_arn: cluster_arn(),
        task_definition_arn: task_definition_arn(tenant, kind),
        container_name: CONTAINER.into(),
        launch_type: EcsLaunchType::Fargate,
        subnets: vec![SUBNET.into()],
        security_groups: vec![SECURITY_GROUP.into()],
        assign_public_ip: false,
    })
}

/// Creates the shared cluster (no tag: clusters are shared) and every tenant's definitions,
/// and lets `ledger` see every task created.
pub fn provision<'a>(
    world: &World,
    ledger: &Ledger,
    tenants: impl IntoIterator<Item = &'a str>,
) -> Result<()> {
    let aws = &world.aws;
    let cluster = aws.create_cluster(CLUSTER, &[]);
    if cluster != cluster_arn() {
        bail!("the simulated cluster is {cluster}, the jobs name {}", cluster_arn());
    }
    let mut seen = BTreeSet::new();
    for tenant in tenants.into_iter().filter(|t| seen.insert(t.to_string())) {
        for (kind, d) in DEFINITIONS.iter().enumerate() {
            let env: &[(&str, &str)] = &[(RUN_SECS_VAR, d.run_secs), (EXIT_CODE_VAR, d.exit_code)];
            let family = format!("sim-{tenant}-{}", d.suffix);
            let arn =
                aws.register_task_definition(&family, &[(CONTAINER, env)], &[("sundial-tenant", tenant)]);
            if arn != task_definition_arn(tenant, kind) {
                bail!(
                    "{tenant}'s task definition is {arn}, its jobs name {}",
                    task_definition_arn(tenant, kind)
                );
            }
        }
    }
    let ledger = ledger.clone();
    aws.on_run_task(std::sync::Arc::new(move |t| ledger.ecs_task_created(t)));
    Ok(())
}

/// A task's container environment (its overrides: the fire's identity).
fn env(t: &EcsTask) -> Option<&BTreeMap<String, String>> {
    t.override_env.get(CONTAINER)
}

/// The effect a task stands for, from the invocation in its overrides, applied at its stop;
/// `None` without one.
pub fn effect_of(t: &EcsTask) -> Option<(String, Effect)> {
    let inv: Invocation = serde_json::from_str(env(t)?.get("SUNDIAL_INVOCATION")?).ok()?;
    Some(crate::ledger::effect_of(&inv, t.stopped_ms))
}

/// The tasks the ledger saw, as they ended (a `StopTask` after the creation moved their stop).
fn as_ended(ledger: &Ledger, aws: &Aws) -> Vec<EcsTask> {
    ledger.ecs_tasks().into_iter().map(|t| aws.ecs_task(&t.arn).unwrap_or(t)).collect()
}

/// Applies the effect of every task whose container exited 0, the earliest to stop first (the
/// ledger keeps one per fire): what the `effects` invariant looks for in a SUCCEEDED fire.
/// Called once the run is over, when every task has ended.
pub fn settle(ledger: &Ledger, aws: &Aws) {
    let mut ended = as_ended(ledger, aws);
    ended.sort_by_key(|t| t.stopped_ms);
    let now = aws.now_ms();
    for t in ended.iter().filter(|t| t.exit_code_at(now) == Some(0)) {
        if let Some((id, effect)) = effect_of(t) {
            ledger.ecs_effect(&id, effect);
        }
    }
}

/// The fires of `ecs` jobs by run name: (the fire, its run).
fn fires_by_name<'a>(
    executions: impl IntoIterator<Item = &'a Execution>,
) -> BTreeMap<String, (&'a Execution, u32)> {
    let mut out = BTreeMap::new();
    for e in executions.into_iter().filter(|e| matches!(e.definition.target, Target::Ecs(_))) {
        for run in 1..=run_of(e) {
            out.insert(RunNames::default().name(&e.global_id(), run), (e, run));
        }
    }
    out
}

/// When `e` entered the final status it has (`None`: not final).
fn final_at(e: &Execution) -> Option<i64> {
    // No earlier than an event before it: a worker's clock corrected backwards between two of
    // its writes stamps the later one earlier (the full mix's seed 1077: an attempt's end at
    // :02.5, the fire's cancel right after it at :00.5).
    let (mut at, mut latest) = (None, i64::MIN);
    for ev in &e.timeline {
        latest = latest.max(ev.at);
        if !ev.to.is_terminal() {
            at = None;
        } else if at.is_none() {
            at = Some(latest);
        }
    }
    at
}

/// A task's id (the end of its ARN).
fn short(t: &EcsTask) -> &str {
    t.arn.rsplit('/').next().unwrap_or(&t.arn)
}

/// A task and how it was at `at_ms`, in a violation's words.
fn describe(t: &EcsTask, at_ms: i64) -> String {
    let exit = t.exit_code_at(at_ms).map_or(String::new(), |c| format!(", exit {c}"));
    format!("{} ({}{exit})", short(t), t.status_at(at_ms))
}

/// What the run's tasks did: the summary's figures.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Counts {
    /// Tasks created.
    pub tasks: usize,
    /// Fires they were created for.
    pub fires: usize,
    /// Attempts that tracked a task another claim had created (the timeline's task notes).
    pub adoptions: usize,
    /// Tasks stopped by `StopTask` at a timeout.
    pub stopped_timeout: usize,
    /// Tasks stopped by `StopTask` at a cancel.
    pub stopped_cancel: usize,
    /// Tasks created while a task of an earlier run of the same fire still ran (a retry after
    /// an attempt that failed without its task's end; not a violation, docs/targets.md).
    pub beside_earlier_run: usize,
}

/// The `effects` violations of the run's tasks (see the module doc) and its figures, over the
/// final `executions`; `slack_ms` covers the workers' clock skew (a fire's final instant is
/// written by a worker's clock, a task's stop by the simulated one).
pub fn check<'a>(
    ledger: &Ledger,
    aws: &Aws,
    executions: impl IntoIterator<Item = &'a Execution> + Clone,
    slack_ms: i64,
) -> (Vec<Violation>, Counts) {
    let tasks = as_ended(ledger, aws);
    let fires = fires_by_name(executions.clone());
    let fire_of = |t: &EcsTask| fires.get(t.started_by.as_deref().unwrap_or_default()).map(|f| f.0);
    let mut out = Vec::new();
    let mut counts =
        Counts { tasks: tasks.len(), adoptions: adoptions(executions, &tasks), ..Counts::default() };
    let mut fired = BTreeSet::new();
    for (i, t) in tasks.iter().enumerate() {
        match (t.stop_code, t.stopped_reason.as_deref()) {
            (EcsStopCode::UserInitiated, Some(r)) if r.contains("timeoutSecs") => counts.stopped_timeout += 1,
            (EcsStopCode::UserInitiated, _) => counts.stopped_cancel += 1,
            _ => {}
        }
        let Some(e) = fire_of(t) else {
            let detail = format!("ECS task {} started by {:?}, the run of no fire", short(t), t.started_by);
            out.push(Violation { invariant: "effects", detail, execution: None });
            continue;
        };
        fired.insert(e.global_id());
        let earlier = &tasks[..i];
        let beside = |p: &&EcsTask| {
            p.started_by != t.started_by
                && fire_of(p).is_some_and(|f| std::ptr::eq(f, e))
                && p.status_at(t.created_ms) != "STOPPED"
        };
        if earlier.iter().any(|p| beside(&p)) {
            counts.beside_earlier_run += 1;
        }
        let found = not_adopted(t, earlier).into_iter().chain(identity(t, e)).chain(outlived(t, e, slack_ms));
        out.extend(found.map(|detail| Violation { invariant: "effects", detail, execution: Some(e.id()) }));
    }
    counts.fires = fired.len();
    (out, counts)
}

/// A task created while another of its run ran or had exited 0: a takeover or a racing claim
/// that ran its own instead of adopting that one.
fn not_adopted(t: &EcsTask, earlier: &[EcsTask]) -> Option<String> {
    let live: Vec<String> = earlier
        .iter()
        .filter(|p| p.started_by == t.started_by)
        .filter(|p| p.status_at(t.created_ms) != "STOPPED" || p.exit_code_at(t.created_ms) == Some(0))
        .map(|p| describe(p, t.created_ms))
        .collect();
    (!live.is_empty()).then(|| {
        format!(
            "ECS task {} created at {} while {} of the same run {}",
            short(t),
            ms(t.created_ms),
            live.join(", "),
            t.started_by.as_deref().unwrap_or_default()
        )
    })
}

/// What is wrong with the fire's identity a task carries: another execution id, or a fencing
/// token no claim of the fire had.
fn identity(t: &EcsTask, e: &Execution) -> Vec<String> {
    let var = |k: &str| env(t).and_then(|v| v.get(k)).map(String::as_str);
    let mut wrong = Vec::new();
    if var("SUNDIAL_EXECUTION_ID") != Some(e.global_id().as_str()) {
        wrong.push(format!(
            "ECS task {} carries SUNDIAL_EXECUTION_ID {:?}",
            short(t),
            var("SUNDIAL_EXECUTION_ID")
        ));
    }
    let token = var("SUNDIAL_FENCING_TOKEN").and_then(|v| v.parse::<u64>().ok());
    if token.is_none_or(|token| token > e.fencing_token) {
        wrong.push(format!(
            "ECS task {} carries SUNDIAL_FENCING_TOKEN {token:?}, the fire's last is {}",
            short(t),
            e.fencing_token
        ));
    }
    wrong
}

/// A task that ran past the instant its fire became final: a timed-out or cancelled attempt
/// stops its task before it settles, and a success waited for its task's end.
fn outlived(t: &EcsTask, e: &Execution, slack_ms: i64) -> Option<String> {
    let at = final_at(e).filter(|at| t.stopped_ms > at + slack_ms)?;
    Some(format!(
        "ECS task {} of the run {} ran until {} ({}), past its fire's {:?} at {}",
        describe(t, at),
        t.started_by.as_deref().unwrap_or_default(),
        ms(t.stopped_ms),
        t.stop_code.as_str(),
        e.status,
        ms(at)
    ))
}

/// Attempts that tracked a task another claim had created: the timeline's task notes whose
/// token is not the one the task carries.
fn adoptions<'a>(executions: impl IntoIterator<Item = &'a Execution>, tasks: &[EcsTask]) -> usize {
    let token_of: BTreeMap<&str, u64> = tasks
        .iter()
        .filter_map(|t| Some((t.arn.as_str(), env(t)?.get("SUNDIAL_FENCING_TOKEN")?.parse().ok()?)))
        .collect();
    let prefix = format!("{} ", sundial_model::retry::codes::ECS_TASK);
    executions
        .into_iter()
        .flat_map(|e| &e.timeline)
        .filter_map(|ev| Some((ev.token, ev.code.as_deref()?.strip_prefix(&prefix)?)))
        .filter(|(token, arn)| token_of.get(arn).is_some_and(|t| t != token))
        .count()
}

/// The run's summary line of the target.
pub fn summary(c: &Counts, aws: &Aws) -> String {
    format!(
        "ecs: {} tasks for {} fires, {} adoptions, {} stopped at a timeout / {} at a cancel, {} beside an earlier run's, {} token replays, {} conflicts\n",
        c.tasks,
        c.fires,
        c.adoptions,
        c.stopped_timeout,
        c.stopped_cancel,
        c.beside_earlier_run,
        aws.ecs_token_replays(),
        aws.ecs_token_conflicts()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use sundial_model::{AuditEvent, ExecStatus, Job, JobDefinition};
    use sundial_schedule::{Schedule, ScheduleSpec};

    const T0: i64 = 1_774_857_300_000;

    /// A task of `run` of the fire `tenant0:job0001@T0` created by the claim `token`, ending at
    /// `stop` with `exit`.
    fn task(id: &str, run: u32, token: u64, created: i64, stop: i64, exit: i32) -> EcsTask {
        let fire = "tenant0:job0001@1774857300000";
        let inv = serde_json::json!({
            "executionId": fire, "fencingToken": token, "attempt": token, "scheduledAt": "2026-03-30T07:55:00Z",
            "tenant": "tenant0", "jobId": "job0001", "params": {"v": 2},
        });
        let env: BTreeMap<String, String> = [
            ("SUNDIAL_EXECUTION_ID".to_string(), fire.to_string()),
            ("SUNDIAL_FENCING_TOKEN".to_string(), token.to_string()),
            ("SUNDIAL_INVOCATION".to_string(), inv.to_string()),
        ]
        .into();
        EcsTask {
            arn: format!("{ARN_PREFIX}:task/{CLUSTER}/{id}"),
            cluster_arn: cluster_arn(),
            task_definition_arn: task_definition_arn("tenant0", SLOW),
            started_by: Some(RunNames::default().name(fire, run)),
            group: "family:sim-tenant0-slow".into(),
            launch_type: Some("FARGATE".into()),
            override_env: [(CONTAINER.to_string(), env)].into(),
            containers: vec![sundial_simaws::EcsContainer {
                arn: format!("{ARN_PREFIX}:container/{CLUSTER}/{id}/0"),
                name: CONTAINER.into(),
                essential: true,
                exit_code: Some(exit),
            }],
            tags: BTreeMap::new(),
            created_ms: T0 + created,
            stopped_ms: T0 + stop,
            stop_code: EcsStopCode::EssentialContainerExited,
            stopped_reason: None,
        }
    }

    /// The fire: run 1 failed, run 2's claim (token 2) ran a task, a takeover (token 3) noted
    /// `adopted` and it SUCCEEDED at `T0 + 36 s`.
    fn fire(adopted: &str) -> Execution {
        let mut cfg = sundial_core::config::Config::local("sim-", &crate::world::POOLS, 16);
        cfg.targets.tenants = Some(crate::run::tenant_targets());
        let def = JobDefinition::new(ScheduleSpec::new("0 * * * * *", "UTC"), target("tenant0", SLOW));
        let now = ms(T0);
        let job = Job::new(&cfg, "tenant0", "job0001", def, now).unwrap_or_else(|e| panic!("{e}"));
        let sch = Schedule::parse(&job.definition.schedule, job.anchor).unwrap_or_else(|e| panic!("{e:?}"));
        let mut e = Execution::ready(&job, &sch, now, None, now, "tick");
        let step = |at: i64, from: ExecStatus, to: ExecStatus, token: u64, code: Option<String>| AuditEvent {
            at: T0 + at,
            actor: "w".into(),
            from: Some(from),
            to,
            attempt: token as u32,
            token,
            code,
        };
        use ExecStatus::{Ready, RetryWait, Running, Succeeded};
        let note = Some(format!("{} {adopted}", sundial_model::retry::codes::ECS_TASK));
        e.timeline.extend([
            step(0, Ready, Running, 1, None),
            step(2_000, Running, RetryWait, 1, None),
            step(4_000, RetryWait, Running, 2, None),
            step(20_000, Running, Running, 3, None),
            step(20_100, Running, Running, 3, note),
            step(36_000, Running, Succeeded, 3, None),
        ]);
        (e.status, e.fencing_token, e.attempt) = (Succeeded, 3, 3);
        e
    }

    #[test]
    fn a_run_adopted_by_its_takeover_is_clean_and_a_second_task_of_the_run_is_each_violation() {
        // GIVEN a fire whose first run's task exited 3 and whose second run's task, adopted by a
        // takeover, exited 0 before the fire SUCCEEDED
        let (ledger, aws) = (Ledger::default(), Aws::new(1, T0 + 3_600_000));
        let second = task("b", 2, 2, 5_000, 35_000, 0);
        ledger.ecs_task_created(&task("a", 1, 1, 0, 2_000, 3));
        ledger.ecs_task_created(&second);
        let e = fire(&second.arn);
        // THEN nothing is wrong, the takeover's note counts as an adoption, and the task that
        // exited 0 is the fire's effect
        let (v, counts) = check(&ledger, &aws, [&e], 0);
        assert!(v.is_empty(), "{v:?}");
        assert_eq!((counts.tasks, counts.fires, counts.adoptions), (2, 1, 1));
        settle(&ledger, &aws);
        let effect = ledger.effects().get("job0001@1774857300000").map(|x| (x.token, x.at_ms));
        assert_eq!(effect, Some((2, T0 + 35_000)));
        // WHEN the takeover had run a task of its own (token 3), then a zombie one (token 4)
        // that outlived the fire
        ledger.ecs_task_created(&task("c", 2, 4, 20_000, 50_000, 0));
        let (v, _) = check(&ledger, &aws, [&e], 1_000);
        // THEN the second task of the run, its token and its run past the fire's end are
        // violations of the fire
        let details: Vec<&str> = v.iter().map(|v| v.detail.as_str()).collect();
        assert_eq!(v.len(), 3, "{details:#?}");
        assert!(details[0].contains("while b (RUNNING) of the same run"), "{}", details[0]);
        assert!(details[1].contains("SUNDIAL_FENCING_TOKEN Some(4), the fire's last is 3"), "{}", details[1]);
        assert!(details[2].contains("past its fire's Succeeded"), "{}", details[2]);
        assert!(v
            .iter()
            .all(|v| v.invariant == "effects" && v.execution.as_deref() == Some("job0001@1774857300000")));
    }

    #[test]
    fn a_job_names_its_definitions_only_revision() {
        assert_eq!(
            task_definition_arn("tenant1", 2),
            format!("{ARN_PREFIX}:task-definition/sim-tenant1-fails:1")
        );
        assert_eq!(DEFINITIONS[SLOW].suffix, "slow");
        assert_eq!(DEFINITIONS[NEVER].exit_code, "none");
    }
}
