//! The control plane's checks of a job's `after` (docs/dependencies.md), at create and edit:
//! each upstream is a job of the caller's tenant that is not deleted (400 on `after[i].job`),
//! and no cycle of waits forms (400 on `after`, naming the cycle: `a → b → c → a`).
//!
//! The cycle check walks the upstream graph from the job being written, reading each job on
//! the way once (a chain's length, not the tenant's size), at most [`MAX_GRAPH_JOBS`] of them.

use super::error::ControlError;
use super::Control;
use crate::model::dependency::{self, Dependency};
use crate::model::{JobDefinition, JobState};
use crate::store::jobs;
use std::collections::{BTreeMap, VecDeque};

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
