//! Jobs: create, read, edit, pause, resume, delete, trigger, backfill, their versions and
//! upcoming fires; the tzdb upgrade report and the preview of a draft schedule.

use super::request::{enc, Call};
use super::Client;
use crate::error::Error;
use crate::page::{ListRequest, TzReportRequest};
use crate::types::{
    BackfillReport, BackfillRequest, CreateJob, EventAccepted, EventRequest, ExecutionDetail, Job, JobChange,
    JobDefinition, JobDependencies, Page, Preview, PreviewRequest, ResumeRequest, TriggerRequest, TzReport,
    UpcomingFires,
};
use hyper::Method;

impl Client {
    /// `POST /v1/jobs` (with an Idempotency-Key, retried with it).
    pub async fn create_job(&self, job: &CreateJob) -> Result<JobChange, Error> {
        self.execute(Call::new(Method::POST, "/v1/jobs".into()).json(job)?.once()).await
    }

    /// `GET /v1/jobs/{jobId}`.
    pub async fn get_job(&self, job_id: &str) -> Result<Job, Error> {
        self.execute(Call::new(Method::GET, format!("/v1/jobs/{}", enc(job_id)))).await
    }

    /// `PUT /v1/jobs/{jobId}` with `If-Match: version`: fails with 412 if the job changed since.
    pub async fn update_job(
        &self,
        job_id: &str,
        definition: &JobDefinition,
        version: u64,
    ) -> Result<JobChange, Error> {
        let call = Call::new(Method::PUT, format!("/v1/jobs/{}", enc(job_id))).json(definition)?;
        self.execute(call.if_match(Some(version))).await
    }

    /// `DELETE /v1/jobs/{jobId}` (soft delete), optionally only at `version`.
    pub async fn delete_job(&self, job_id: &str, version: Option<u64>) -> Result<JobChange, Error> {
        self.execute(Call::new(Method::DELETE, format!("/v1/jobs/{}", enc(job_id))).if_match(version)).await
    }

    /// `POST /v1/jobs/{jobId}/pause`, optionally only at `version`.
    pub async fn pause_job(&self, job_id: &str, version: Option<u64>) -> Result<JobChange, Error> {
        self.execute(Call::new(Method::POST, format!("/v1/jobs/{}/pause", enc(job_id))).if_match(version))
            .await
    }

    /// `POST /v1/jobs/{jobId}/resume`, optionally only at `version`.
    pub async fn resume_job(&self, job_id: &str, version: Option<u64>) -> Result<JobChange, Error> {
        self.execute(Call::new(Method::POST, format!("/v1/jobs/{}/resume", enc(job_id))).if_match(version))
            .await
    }

    /// `POST /v1/jobs/{jobId}/resume` with a catch-up of the paused window (`catchUp`:
    /// `none`, `all` or `last`; `paceSecs`). Retried safely: the same window is found again.
    pub async fn resume_job_with(
        &self,
        job_id: &str,
        version: Option<u64>,
        req: &ResumeRequest,
    ) -> Result<JobChange, Error> {
        self.execute(
            Call::new(Method::POST, format!("/v1/jobs/{}/resume", enc(job_id)))
                .if_match(version)
                .json(req)?,
        )
        .await
    }

    /// `POST /v1/jobs/{jobId}/trigger`: run now (with an Idempotency-Key, retried with it).
    pub async fn trigger_job(&self, job_id: &str) -> Result<ExecutionDetail, Error> {
        self.execute(Call::new(Method::POST, format!("/v1/jobs/{}/trigger", enc(job_id))).once()).await
    }

    /// `POST /v1/jobs/{jobId}/trigger` with per-run parameters merged over the job's.
    pub async fn trigger_job_with(
        &self,
        job_id: &str,
        req: &TriggerRequest,
    ) -> Result<ExecutionDetail, Error> {
        self.execute(Call::new(Method::POST, format!("/v1/jobs/{}/trigger", enc(job_id))).json(req)?.once())
            .await
    }

    /// `POST /v1/jobs/{jobId}/events`: one event for a job with `events` (with an
    /// Idempotency-Key, retried with it; give the event a `key` to deduplicate it beyond).
    pub async fn post_job_event(&self, job_id: &str, req: &EventRequest) -> Result<EventAccepted, Error> {
        self.execute(Call::new(Method::POST, format!("/v1/jobs/{}/events", enc(job_id))).json(req)?.once())
            .await
    }

    /// `GET /v1/jobs/{jobId}/dependencies`: its upstreams and downstreams.
    pub async fn job_dependencies(&self, job_id: &str) -> Result<JobDependencies, Error> {
        self.execute(Call::new(Method::GET, format!("/v1/jobs/{}/dependencies", enc(job_id)))).await
    }

    /// `POST /v1/jobs/{jobId}/backfill` (with an Idempotency-Key, retried with it).
    pub async fn backfill_job(&self, job_id: &str, req: &BackfillRequest) -> Result<BackfillReport, Error> {
        self.execute(Call::new(Method::POST, format!("/v1/jobs/{}/backfill", enc(job_id))).json(req)?.once())
            .await
    }

    /// `GET /v1/jobs/{jobId}/versions/{version}`: an immutable definition version.
    pub async fn get_job_version(&self, job_id: &str, version: u64) -> Result<Job, Error> {
        self.execute(Call::new(Method::GET, format!("/v1/jobs/{}/versions/{version}", enc(job_id)))).await
    }

    /// `GET /v1/jobs/{jobId}/versions`, every page: a job's versions, newest first, at most
    /// `limit` of them (all if `None`). Versions that are gone (the older versions of a deleted
    /// job expire) are not listed.
    pub async fn job_versions(&self, job_id: &str, limit: Option<u64>) -> Result<Vec<Job>, Error> {
        let want = usize::try_from(limit.unwrap_or(u64::MAX)).unwrap_or(usize::MAX);
        let mut out = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let page_size = want.saturating_sub(out.len()).clamp(1, 100);
            let mut path = format!("/v1/jobs/{}/versions?limit={page_size}", enc(job_id));
            if let Some(c) = &cursor {
                path.push_str(&format!("&cursor={}", enc(c)));
            }
            let page: Page<Job> = self.execute(Call::new(Method::GET, path)).await?;
            out.extend(page.items);
            cursor = page.next_cursor;
            if cursor.is_none() || out.len() >= want {
                break;
            }
        }
        out.truncate(want);
        Ok(out)
    }

    /// `GET /v1/jobs/{jobId}/upcoming`: the job's fires over `days` (1-90, default 28) from
    /// `from` (default now, or the schedule's start when later), with the daylight-saving
    /// transitions they cross.
    pub async fn upcoming_fires(
        &self,
        job_id: &str,
        from: Option<chrono::DateTime<chrono::Utc>>,
        days: Option<u32>,
    ) -> Result<UpcomingFires, Error> {
        let mut q = Vec::new();
        if let Some(f) = from {
            q.push(format!("from={}", enc(&f.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))));
        }
        if let Some(d) = days {
            q.push(format!("days={d}"));
        }
        let qs = if q.is_empty() { String::new() } else { format!("?{}", q.join("&")) };
        self.execute(Call::new(Method::GET, format!("/v1/jobs/{}/upcoming{qs}", enc(job_id)))).await
    }

    /// `GET /v1/tz-report`: one page of the tzdb upgrade report, with the compiled release
    /// and the number of jobs examined ([`Client::all`] with the same request reads every
    /// listed job instead).
    pub async fn tz_report(&self, req: &TzReportRequest) -> Result<TzReport, Error> {
        self.execute(Call::new(Method::GET, req.path_and_query())).await
    }

    /// `POST /v1/preview`: the next fires of a draft schedule; nothing is stored.
    pub async fn preview(&self, req: &PreviewRequest) -> Result<Preview, Error> {
        self.execute(Call::new(Method::POST, "/v1/preview".into()).json(req)?).await
    }
}
