//! The ECS service's tasks: what a task is, how its emulated containers run (from their
//! environment, [`RUN_SECS_VAR`] and [`EXIT_CODE_VAR`]) and the course that follows (see the
//! parent module).

use std::collections::BTreeMap;

/// Seconds from a task's creation to its emulated container's exit (a decimal; default 1).
pub const RUN_SECS_VAR: &str = "SUNDIAL_EMULATED_RUN_SECS";
/// The emulated container's exit code (default 0), or `none`: it never starts.
pub const EXIT_CODE_VAR: &str = "SUNDIAL_EMULATED_EXIT_CODE";

const DEFAULT_RUN_MS: i64 = 1_000;
/// How long a task is PROVISIONING before it is RUNNING.
pub(super) const STARTUP_MS: i64 = 1_000;
/// The exit code of a container ended by the SIGTERM of a stop (128 + 15).
pub(super) const SIGTERM_EXIT: i32 = 143;

/// Why a task stopped (its `stopCode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum EcsStopCode {
    /// Its first essential container exited (the normal end of a run).
    EssentialContainerExited,
    /// A container never started (`SUNDIAL_EMULATED_EXIT_CODE=none`).
    TaskFailedToStart,
    /// A `StopTask` came first.
    UserInitiated,
}

impl EcsStopCode {
    /// As ECS writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            EcsStopCode::EssentialContainerExited => "EssentialContainerExited",
            EcsStopCode::TaskFailedToStart => "TaskFailedToStart",
            EcsStopCode::UserInitiated => "UserInitiated",
        }
    }
}

/// One container of a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EcsContainer {
    pub arn: String,
    pub name: String,
    pub essential: bool,
    /// What it reports once the task stopped (absent before); `None`: it never started.
    pub exit_code: Option<i32>,
}

/// One task, as the harness sees it ([`Aws::on_run_task`], [`Aws::ecs_task`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EcsTask {
    pub arn: String,
    pub cluster_arn: String,
    pub task_definition_arn: String,
    pub started_by: Option<String>,
    pub group: String,
    pub launch_type: Option<String>,
    /// The `RunTask` overrides' environment, per container named there.
    pub override_env: BTreeMap<String, BTreeMap<String, String>>,
    pub containers: Vec<EcsContainer>,
    pub tags: BTreeMap<String, String>,
    pub created_ms: i64,
    /// When it is STOPPED: its run's end, or the `StopTask` that came first.
    pub stopped_ms: i64,
    pub stop_code: EcsStopCode,
    pub stopped_reason: Option<String>,
}

impl EcsTask {
    /// When it was RUNNING first (`None`: it never starts).
    pub fn started_ms(&self) -> Option<i64> {
        let never = self.stop_code == EcsStopCode::TaskFailedToStart;
        (!never).then(|| (self.created_ms + STARTUP_MS).min(self.stopped_ms))
    }

    /// `PROVISIONING`, `RUNNING` or `STOPPED` at `now_ms`.
    pub fn status_at(&self, now_ms: i64) -> &'static str {
        if now_ms >= self.stopped_ms {
            "STOPPED"
        } else if self.started_ms().is_some_and(|s| now_ms >= s) {
            "RUNNING"
        } else {
            "PROVISIONING"
        }
    }

    /// The first essential container's exit code, once the task stopped.
    pub fn exit_code_at(&self, now_ms: i64) -> Option<i32> {
        if now_ms < self.stopped_ms {
            return None;
        }
        self.containers.iter().find(|c| c.essential).and_then(|c| c.exit_code)
    }
}

/// How one emulated container runs, from its effective environment.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Run {
    Exits { after_ms: i64, code: i32 },
    NeverStarts { after_ms: i64, reason: String },
}

impl Run {
    fn after_ms(&self) -> i64 {
        match self {
            Run::Exits { after_ms, .. } | Run::NeverStarts { after_ms, .. } => *after_ms,
        }
    }
}

pub(super) fn emulated(env: &BTreeMap<String, String>) -> Run {
    let secs = env.get(RUN_SECS_VAR).map(|v| (v, v.trim().parse::<f64>()));
    let after_ms = match secs {
        None => DEFAULT_RUN_MS,
        Some((_, Ok(s))) if s.is_finite() && s >= 0.0 => (s * 1000.0).round() as i64,
        Some((v, _)) => {
            let reason = format!(
                "CannotStartContainerError: emulated: {RUN_SECS_VAR}={v:?} is not a non-negative number of seconds"
            );
            return Run::NeverStarts { after_ms: DEFAULT_RUN_MS, reason };
        }
    };
    match env.get(EXIT_CODE_VAR).map(|v| v.trim()) {
        None => Run::Exits { after_ms, code: 0 },
        Some("none") => {
            Run::NeverStarts { after_ms, reason: "CannotPullContainerError: emulated".to_string() }
        }
        Some(v) => match v.parse::<i32>() {
            Ok(code) => Run::Exits { after_ms, code },
            Err(_) => Run::NeverStarts {
                after_ms,
                reason: format!(
                    "CannotStartContainerError: emulated: {EXIT_CODE_VAR}={v:?} is neither an integer nor none"
                ),
            },
        },
    }
}

/// A task's course, from its containers' (essential, run).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Course {
    pub(super) stopped_after_ms: i64,
    pub(super) code: EcsStopCode,
    pub(super) reason: String,
    pub(super) exit_codes: Vec<Option<i32>>,
}

pub(super) fn course(containers: &[(bool, Run)]) -> Course {
    let failed = containers
        .iter()
        .filter_map(|(_, r)| match r {
            Run::NeverStarts { after_ms, reason } => Some((*after_ms, reason)),
            Run::Exits { .. } => None,
        })
        .min_by_key(|(after, _)| *after);
    if let Some((after, reason)) = failed {
        return Course {
            stopped_after_ms: after,
            code: EcsStopCode::TaskFailedToStart,
            reason: reason.clone(),
            exit_codes: vec![None; containers.len()],
        };
    }
    // ECS requires an essential container; a definition without one is read as all essential.
    let any_essential = containers.iter().any(|(e, _)| *e);
    let end = containers
        .iter()
        .filter(|(e, _)| *e || !any_essential)
        .map(|(_, r)| r.after_ms())
        .min()
        .unwrap_or(DEFAULT_RUN_MS);
    let exit_codes = containers
        .iter()
        .map(|(_, r)| match r {
            Run::Exits { after_ms, code } if *after_ms <= end => Some(*code),
            _ => Some(SIGTERM_EXIT),
        })
        .collect();
    Course {
        stopped_after_ms: end,
        code: EcsStopCode::EssentialContainerExited,
        reason: "Essential container in task exited".to_string(),
        exit_codes,
    }
}
