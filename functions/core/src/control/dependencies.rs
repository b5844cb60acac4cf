//! The control plane's checks of a job's `after` (docs/dependencies.md), at create and edit:
//! each upstream is a job of the caller's tenant that is not deleted (400 on `after[i].job`),
//! and no cycle of waits forms (400 on `after`, naming the cycle: `a → b → c → a`).
//!
//! The cycle check walks the upstream graph from the job being written, reading each job on
//! the way once (a chain's length, not the tenant's size), at most [`MAX_GRAPH_JOBS`] of them.

use super::error::ControlError;
use super::Control;
use std::collections::{BTreeMap, VecDeque};
use sundial_model::dependency::{self, Dependency};
use sundial_model::{JobDefinition, JobState};
use sundial_store::jobs;

/// Most jobs one check reads; a larger upstream graph is refused (400 on `after`).
pub const MAX_GRAPH_JOBS: usize = 200;

/// Checks `def.after` of `tenant`'s job `job_id` (see the module doc).
pub async fn check(
    ctl: &Control,
    tenant: &str,
    job_id: &str,
    def: &JobDefinition,
) -> Result<(), ControlError> {
    if def.after.is_empty() {
        return Ok(());
    }
    dependency::validate(Some(job_id), &def.after, def.dependency_deadline_secs)?;
    let mut graph: BTreeMap<String, Vec<Dependency>> = BTreeMap::new();
    for (i, d) in def.after.iter().enumerate() {
        if d.job == job_id {
            continue;
        }
        let up = jobs::get_job(ctl.ddb(), ctl.cfg(), tenant, &d.job).await?;
        match up.filter(|j| j.state != JobState::Deleted) {
            Some(j) => {
                graph.insert(d.job.clone(), j.definition.after);
            }
            None => {
                return Err(ControlError::invalid(
                    format!("after[{i}].job"),
                    format!("no job named {:?} (upstreams must exist before a job waits for them)", d.job),
                ))
            }
        }
    }
    // Breadth-first along edges that wait for the present or the future; the job being written
    // is taken as `def` says, not as stored.
    let mut queue: VecDeque<String> = graph.values().flatten().map(|d| d.job.clone()).collect();
    while let Some(j) = queue.pop_front() {
        if j == job_id || graph.contains_key(&j) {
            continue;
        }
        if graph.len() >= MAX_GRAPH_JOBS {
            return Err(ControlError::invalid(
                "after",
                format!("the upstream graph has more than {MAX_GRAPH_JOBS} jobs; split it"),
            ));
        }
        let after = match jobs::get_job(ctl.ddb(), ctl.cfg(), tenant, &j).await? {
            Some(up) if up.state != JobState::Deleted => up.definition.after,
            _ => Vec::new(),
        };
        queue.extend(after.iter().filter(|d| !d.looks_back()).map(|d| d.job.clone()));
        graph.insert(j, after);
    }
    let lookup = |j: &str| graph.get(j).map(|v| v.as_slice());
    if let Some(cycle) = dependency::find_cycle(job_id, &def.after, &lookup) {
        return Err(ControlError::invalid(
            "after",
            format!(
                "these upstreams would make a cycle of waits: {} (a job may wait for a run in the past of its own chain, with period \"previous\" or a negative offset)",
                cycle.join(" → ")
            ),
        ));
    }
    Ok(())
}

/// Most of the tenant's jobs [`graph`] reads to find a job's downstreams; past it the answer
/// says so (`downstreams_complete: false`).
pub const MAX_DOWNSTREAM_SCAN: usize = 5_000;

/// One edge of a job's dependency graph, as the API shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Edge {
    /// The other job (the upstream, or the downstream).
    pub job: String,
    /// The dependency as declared (by the downstream).
    pub dependency: Dependency,
    /// The other job's state; `None`: it does not exist.
    pub state: Option<JobState>,
}

/// A job's upstreams (its own `after`) and downstreams (the tenant's jobs whose `after` names
/// it).
#[derive(Debug, Clone, PartialEq)]
pub struct Graph {
    /// What each of its fires waits for.
    pub upstreams: Vec<Edge>,
    /// Who waits for its runs.
    pub downstreams: Vec<Edge>,
    /// False when the tenant has more than [`MAX_DOWNSTREAM_SCAN`] jobs and not all were read.
    pub downstreams_complete: bool,
}

/// The dependency graph around the caller's job `job_id` (404 when it does not exist).
pub async fn graph(ctl: &Control, caller: &super::Caller, job_id: &str) -> Result<Graph, ControlError> {
    let job = ctl.job(caller, job_id).await?;
    let mut upstreams = Vec::new();
    for d in &job.definition.after {
        let state = jobs::get_job(ctl.ddb(), ctl.cfg(), &caller.tenant, &d.job).await?.map(|j| j.state);
        upstreams.push(Edge { job: d.job.clone(), dependency: d.clone(), state });
    }
    let mut downstreams = Vec::new();
    let (mut cursor, mut read) = (None::<String>, 0usize);
    let complete = loop {
        // The tenant's job ids a page at a time (the `by_tenant` index), then their definitions.
        let limit = super::page::limit(Some(ctl.settings.max_page), ctl.settings.max_page);
        let ids = jobs::list_job_ids(ctl.ddb(), ctl.cfg(), &caller.tenant, limit, cursor.as_deref()).await?;
        let page_jobs = jobs::batch_get_jobs(ctl.ddb(), ctl.cfg(), &caller.tenant, &ids.items).await?;
        read += ids.items.len();
        for j in page_jobs.iter().filter(|j| j.state != JobState::Deleted) {
            for d in j.definition.after.iter().filter(|d| d.job == job_id) {
                downstreams.push(Edge { job: j.job_id.clone(), dependency: d.clone(), state: Some(j.state) });
            }
        }
        match ids.next {
            Some(n) if read < MAX_DOWNSTREAM_SCAN => cursor = Some(n),
            Some(_) => break false,
            None => break true,
        }
    };
    Ok(Graph { upstreams, downstreams, downstreams_complete: complete })
}

/// What a READY fire of a job with `after` waits for, looked up now: each upstream run (job,
/// its execution id when the period has one, its status when it exists) and whether it is met.
#[derive(Debug, Clone, PartialEq)]
pub struct Waiting {
    /// Each upstream, in `after` order.
    pub upstreams: Vec<WaitingFor>,
    /// When it started waiting (its `WaitingForUpstream` note), if it has.
    pub since: Option<chrono::DateTime<chrono::Utc>>,
}

/// One upstream run a fire waits for.
#[derive(Debug, Clone, PartialEq)]
pub struct WaitingFor {
    /// The upstream job.
    pub job: String,
    /// The upstream run's execution id (`None`: the upstream has no fire for the period).
    pub execution_id: Option<String>,
    /// Its status (`None`: not put yet, or no fire).
    pub status: Option<sundial_model::ExecStatus>,
    /// Whether it satisfies the dependency.
    pub met: bool,
}

/// What `e` waits for (`None` unless it is a READY fire of a job with `after`).
pub async fn waiting(ctl: &Control, e: &sundial_model::Execution) -> Result<Option<Waiting>, ControlError> {
    if e.definition.after.is_empty() || e.status != sundial_model::ExecStatus::Ready || e.child.is_some() {
        return Ok(None);
    }
    let mut upstreams = Vec::new();
    for d in &e.definition.after {
        let job = jobs::get_job(ctl.ddb(), ctl.cfg(), &e.tenant, &d.job).await?;
        let instant = job
            .as_ref()
            .filter(|j| j.state != JobState::Deleted)
            .and_then(|j| crate::schedules::schedule_of(j).ok())
            .and_then(|s| d.upstream_instant(e.scheduled_at, &s));
        let status = match instant {
            Some(t) => {
                let key = sundial_store::executions::ExecKey::new(
                    e.tenant.clone(),
                    d.job.clone(),
                    t.timestamp_millis(),
                );
                ctl.execs.get(&key, false).await?.map(|s| s.exec.status)
            }
            None => None,
        };
        upstreams.push(WaitingFor {
            job: d.job.clone(),
            execution_id: instant.map(|t| sundial_model::keys::execution_id(&d.job, t.timestamp_millis())),
            status,
            met: status.is_some_and(|s| d.status.satisfied_by(s)),
        });
    }
    let since = e
        .timeline
        .iter()
        .rev()
        .find(|ev| ev.code.as_deref() == Some(sundial_model::retry::codes::WAITING_FOR_UPSTREAM))
        .map(|ev| sundial_store::items::ms_to_dt(ev.at));
    Ok(Some(Waiting { upstreams, since }))
}
