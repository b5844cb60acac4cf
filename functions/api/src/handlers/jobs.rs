//! Jobs: create, list, read, edit, pause, resume, delete, and their definition versions.

use super::bodies::{EditedJob, NewJob};
use super::{headers, Res};
use crate::dto;
use crate::error::ApiError;
use crate::extract::{Auth, Body, IfMatch, IfMatchRequired, Now, P, Q};
use crate::layers::idempotency::IdempotencyKeyHeader;
use crate::params::{Int, JobPath, JobVersionPath, ListJobsQuery, ListQuery};
use crate::Api;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use sundial_api_types::{CreateJob, ErrorBody, Job, JobChange, Page, ResumeRequest, UpdateJob};
use sundial_core::control;
use sundial_model::JobState;

/// Create a job.
///
/// The body is a definition with its `jobId`. Answers the job with its next fires, `Location`
/// and `ETag`.
#[utoipa::path(post, path = "/v1/jobs", operation_id = "createJob", tag = "jobs",
    params(IdempotencyKeyHeader), request_body = CreateJob,
    responses(
        (status = 201, description = "Created", body = JobChange,
            headers(("Location" = String, description = "the job"), ("ETag" = String, description = "its version"))),
        (status = 409, description = "A job with this id exists (or is retained after deletion)", body = ErrorBody),
    ))]
pub(crate) async fn create_job(
    State(api): State<Api>,
    Auth(caller): Auth,
    Now(now): Now,
    Body(b): Body<NewJob>,
) -> Res<(StatusCode, HeaderMap, Json<JobChange>)> {
    let v = control::jobs::create(api.control(), &caller, &b.job_id, b.definition, now).await?;
    let h = headers(v.job.version, Some(format!("/v1/jobs/{}", b.job_id)))?;
    Ok((StatusCode::CREATED, h, Json(dto::job_view(&v))))
}

/// List jobs, by id.
#[utoipa::path(get, path = "/v1/jobs", operation_id = "listJobs", tag = "jobs", params(ListJobsQuery),
    responses((status = 200, description = "One page of the caller's jobs", body = sundial_api_types::JobPage)))]
pub(crate) async fn list_jobs(
    State(api): State<Api>,
    Auth(caller): Auth,
    Now(now): Now,
    Q(q): Q<ListJobsQuery>,
) -> Res<Json<Page<Job>>> {
    let deleted = q.include_deleted.is_some_and(|f| f.0);
    let page =
        control::jobs::list(api.control(), &caller, q.limit.map(Int::get), q.cursor.as_deref(), deleted)
            .await?;
    Ok(Json(Page::new(page.items.iter().map(|j| dto::job_at(j, now)).collect(), page.next)))
}

/// Read a job (with its real next fire and, with `maxRuns`, its scheduled fires so far).
#[utoipa::path(get, path = "/v1/jobs/{jobId}", operation_id = "getJob", tag = "jobs", params(JobPath),
    responses(
        (status = 200, description = "The job", body = Job, headers(("ETag" = String, description = "its version"))),
        (status = 404, description = "No such job for this tenant", body = ErrorBody),
    ))]
pub(crate) async fn get_job(
    State(api): State<Api>,
    Auth(caller): Auth,
    Now(now): Now,
    P(p): P<JobPath>,
) -> Res<(HeaderMap, Json<Job>)> {
    let j = control::jobs::get(api.control(), &caller, &p.job_id).await?;
    let mut view = dto::job_at(&j, now);
    view.runs = control::jobs::runs(api.control(), &j).await?;
    Ok((headers(j.version, None)?, Json(view)))
}

/// Edit a job: a new definition version (If-Match required).
#[utoipa::path(put, path = "/v1/jobs/{jobId}", operation_id = "updateJob", tag = "jobs",
    params(JobPath, IfMatchRequired), request_body = UpdateJob,
    responses(
        (status = 200, description = "The job as edited", body = JobChange, headers(("ETag" = String, description = "its version"))),
        (status = 404, description = "No such job for this tenant", body = ErrorBody),
        (status = 409, description = "The job is deleted", body = ErrorBody),
        (status = 412, description = "If-Match names another version", body = ErrorBody),
        (status = 428, description = "If-Match is missing", body = ErrorBody),
    ))]
pub(crate) async fn update_job(
    State(api): State<Api>,
    Auth(caller): Auth,
    Now(now): Now,
    P(p): P<JobPath>,
    IfMatchRequired(expected): IfMatchRequired,
    Body(b): Body<EditedJob>,
) -> Res<(HeaderMap, Json<JobChange>)> {
    if b.job_id.as_ref().is_some_and(|id| *id != p.job_id) {
        return Err(ApiError::invalid("jobId", "does not match the job in the path (ids cannot change)"));
    }
    let v = control::jobs::update(api.control(), &caller, &p.job_id, expected, b.definition, now).await?;
    Ok((headers(v.job.version, None)?, Json(dto::job_view(&v))))
}

/// Delete, pause or resume (`state`): If-Match is optional.
async fn set_state(
    api: &Api,
    caller: &sundial_core::control::Caller,
    job: &str,
    state: JobState,
    if_match: Option<u64>,
    now: chrono::DateTime<chrono::Utc>,
) -> Res<(HeaderMap, Json<JobChange>)> {
    let v = control::jobs::set_state(api.control(), caller, job, state, if_match, now).await?;
    Ok((headers(v.job.version, None)?, Json(dto::job_view(&v))))
}

/// Delete a job (soft: its id is kept for the retention period; queued fires are canceled).
#[utoipa::path(delete, path = "/v1/jobs/{jobId}", operation_id = "deleteJob", tag = "jobs", params(JobPath, IfMatch),
    responses(
        (status = 200, description = "The job as deleted", body = JobChange),
        (status = 404, description = "No such job for this tenant", body = ErrorBody),
        (status = 409, description = "Already deleted", body = ErrorBody),
        (status = 412, description = "If-Match names another version", body = ErrorBody),
    ))]
pub(crate) async fn delete_job(
    State(api): State<Api>,
    Auth(caller): Auth,
    Now(now): Now,
    P(p): P<JobPath>,
    IfMatch(m): IfMatch,
) -> Res<(HeaderMap, Json<JobChange>)> {
    set_state(&api, &caller, &p.job_id, JobState::Deleted, m, now).await
}

/// Pause a job: no fires from now on; queued fires of later instants are held.
#[utoipa::path(post, path = "/v1/jobs/{jobId}/pause", operation_id = "pauseJob", tag = "jobs", params(JobPath, IfMatch),
    responses(
        (status = 200, description = "The job as paused", body = JobChange),
        (status = 404, description = "No such job for this tenant", body = ErrorBody),
        (status = 409, description = "The job is deleted", body = ErrorBody),
        (status = 412, description = "If-Match names another version", body = ErrorBody),
    ))]
pub(crate) async fn pause_job(
    State(api): State<Api>,
    Auth(caller): Auth,
    Now(now): Now,
    P(p): P<JobPath>,
    IfMatch(m): IfMatch,
) -> Res<(HeaderMap, Json<JobChange>)> {
    set_state(&api, &caller, &p.job_id, JobState::Paused, m, now).await
}

/// Resume a paused job: it fires again from its next instant; held fires still due are released.
/// With `catchUp` (`all` or `last`) the fires the pause skipped are replayed in the same call,
/// paced like a backfill (docs/api.md, "Resume and catch-up").
#[utoipa::path(post, path = "/v1/jobs/{jobId}/resume", operation_id = "resumeJob", tag = "jobs", params(JobPath, IfMatch),
    request_body(content = Option<ResumeRequest>, description = "Optional: what to replay of the paused window"),
    responses(
        (status = 200, description = "The job as resumed (and, with catchUp, what was replayed)", body = JobChange),
        (status = 400, description = "A bad catchUp or paceSecs, or a paused window a catch-up cannot cover (the job stays paused)", body = ErrorBody),
        (status = 404, description = "No such job for this tenant", body = ErrorBody),
        (status = 409, description = "The job is deleted", body = ErrorBody),
        (status = 412, description = "If-Match names another version", body = ErrorBody),
    ))]
pub(crate) async fn resume_job(
    State(api): State<Api>,
    Auth(caller): Auth,
    Now(now): Now,
    P(p): P<JobPath>,
    IfMatch(m): IfMatch,
    Body(b): Body<ResumeRequest>,
) -> Res<(HeaderMap, Json<JobChange>)> {
    use control::catch_up::CatchUp;
    let catch_up = match b.catch_up.as_deref() {
        None => CatchUp::None,
        Some(s) => {
            CatchUp::parse(s).ok_or_else(|| ApiError::invalid("catchUp", "must be one of none, all, last"))?
        }
    };
    let pace = b.pace_secs.unwrap_or(0);
    if pace > control::executions::MAX_PACE_SECS {
        return Err(ApiError::invalid(
            "paceSecs",
            format!("must be at most {}", control::executions::MAX_PACE_SECS),
        ));
    }
    let (v, report) =
        control::catch_up::resume(api.control(), &caller, &p.job_id, m, catch_up, pace, now).await?;
    let mut change = dto::job_view(&v);
    change.catch_up = report.as_ref().map(dto::backfill_report);
    Ok((headers(v.job.version, None)?, Json(change)))
}

/// Read one definition version.
#[utoipa::path(get, path = "/v1/jobs/{jobId}/versions/{version}", operation_id = "getJobVersion", tag = "jobs",
    params(JobVersionPath),
    responses(
        (status = 200, description = "That version", body = Job),
        (status = 404, description = "No such job or version for this tenant", body = ErrorBody),
    ))]
pub(crate) async fn get_job_version(
    State(api): State<Api>,
    Auth(caller): Auth,
    P(p): P<JobVersionPath>,
) -> Res<Json<Job>> {
    let j = control::jobs::get_version(api.control(), &caller, &p.job_id, p.version.0).await?;
    Ok(Json(dto::job(&j)))
}

/// A job's definition versions, newest first.
#[utoipa::path(get, path = "/v1/jobs/{jobId}/versions", operation_id = "listJobVersions", tag = "jobs",
    params(JobPath, ListQuery),
    responses(
        (status = 200, description = "One page of versions", body = sundial_api_types::JobPage),
        (status = 404, description = "No such job for this tenant", body = ErrorBody),
    ))]
pub(crate) async fn list_job_versions(
    State(api): State<Api>,
    Auth(caller): Auth,
    P(p): P<JobPath>,
    Q(q): Q<ListQuery>,
) -> Res<Json<Page<Job>>> {
    let page =
        control::jobs::list_versions(api.control(), &caller, &p.job_id, q.limit(), q.cursor.as_deref())
            .await?;
    Ok(Json(Page::new(page.items.iter().map(dto::job).collect(), page.next)))
}

/// A job's dependency graph: what its fires wait for (its `after`) and which of the caller's
/// jobs wait for its runs (docs/dependencies.md).
#[utoipa::path(get, path = "/v1/jobs/{jobId}/dependencies", operation_id = "getJobDependencies", tag = "jobs",
    params(JobPath),
    responses(
        (status = 200, description = "Its upstreams and downstreams", body = sundial_api_types::JobDependencies),
        (status = 404, description = "No such job for this tenant", body = ErrorBody),
    ))]
pub(crate) async fn get_job_dependencies(
    State(api): State<Api>,
    Auth(caller): Auth,
    P(p): P<JobPath>,
) -> Res<Json<sundial_api_types::JobDependencies>> {
    let g = control::dependencies::graph(api.control(), &caller, &p.job_id).await?;
    let edge = |e: control::dependencies::Edge| sundial_api_types::DependencyEdge {
        job: e.job,
        dependency: e.dependency,
        state: e.state,
    };
    Ok(Json(sundial_api_types::JobDependencies {
        upstreams: g.upstreams.into_iter().map(edge).collect(),
        downstreams: g.downstreams.into_iter().map(edge).collect(),
        downstreams_complete: g.downstreams_complete,
    }))
}
