//! The list operations and their pagination.
//!
//! Every list answers `{items, nextCursor}`; a cursor is opaque and belongs to one list (another
//! list's is 400 on `cursor`). Each list's parameters are a [`ListRequest`], so one [`Pager`]
//! walks any of them: [`crate::Client::page`] reads one page, [`crate::Client::pages`] returns a
//! pager and [`crate::Client::all`] reads to the end.

use crate::client::{enc, Client};
use crate::error::Error;
use crate::types::{ExecStatus, Execution, Job, Operation, Page, TzReportJob};
use serde::de::DeserializeOwned;

/// A list operation's parameters.
pub trait ListRequest: Clone + Send + Sync {
    /// What its pages hold.
    type Item: DeserializeOwned + Send;
    /// The path, without the query string.
    fn path(&self) -> String;
    /// Query parameters other than `limit` and `cursor`.
    fn params(&self) -> Vec<(&'static str, String)>;
    /// Page size (1-100; the server's default is 50).
    fn limit(&self) -> Option<u32>;
    /// Where to start.
    fn cursor(&self) -> Option<&str>;
    /// The same request from `cursor`.
    fn with_cursor(&self, cursor: String) -> Self;

    /// Path and query string.
    fn path_and_query(&self) -> String {
        let mut q = self.params();
        if let Some(l) = self.limit() {
            q.push(("limit", l.to_string()));
        }
        if let Some(c) = self.cursor() {
            q.push(("cursor", c.to_string()));
        }
        let q: Vec<String> = q.iter().map(|(k, v)| format!("{k}={}", enc(v))).collect();
        if q.is_empty() {
            self.path()
        } else {
            format!("{}?{}", self.path(), q.join("&"))
        }
    }
}

macro_rules! paging {
    () => {
        fn limit(&self) -> Option<u32> {
            self.limit
        }
        fn cursor(&self) -> Option<&str> {
            self.cursor.as_deref()
        }
        fn with_cursor(&self, cursor: String) -> Self {
            Self { cursor: Some(cursor), ..self.clone() }
        }
    };
}

/// `GET /v1/jobs`: the caller's jobs, by id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListJobs {
    /// Also deleted jobs (kept for the retention period).
    pub include_deleted: bool,
    /// Page size.
    pub limit: Option<u32>,
    /// Start from this cursor.
    pub cursor: Option<String>,
}

impl ListRequest for ListJobs {
    type Item = Job;
    fn path(&self) -> String {
        "/v1/jobs".into()
    }
    fn params(&self) -> Vec<(&'static str, String)> {
        if self.include_deleted {
            vec![("includeDeleted", "true".into())]
        } else {
            Vec::new()
        }
    }
    paging!();
}

/// `GET /v1/calendars`: the caller's business calendars, by id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListCalendars {
    /// Page size.
    pub limit: Option<u32>,
    /// Start from this cursor.
    pub cursor: Option<String>,
}

impl ListRequest for ListCalendars {
    type Item = crate::types::BusinessCalendar;
    fn path(&self) -> String {
        "/v1/calendars".into()
    }
    fn params(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
    paging!();
}

/// `GET /v1/jobs/{jobId}/executions`: one job's executions, newest first unless `oldest_first`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListJobExecutions {
    /// The job.
    pub job_id: String,
    /// Only this status.
    pub status: Option<ExecStatus>,
    /// Oldest first.
    pub oldest_first: bool,
    /// Page size.
    pub limit: Option<u32>,
    /// Start from this cursor.
    pub cursor: Option<String>,
    /// Only executions scheduled at or before this instant (`Some(Utc::now())`: the fires due
    /// by now, leaving out the ones the tick has already planned ahead).
    pub until: Option<chrono::DateTime<chrono::Utc>>,
}

impl ListJobExecutions {
    /// Every execution of `job_id`, newest first.
    pub fn new(job_id: impl Into<String>) -> Self {
        ListJobExecutions { job_id: job_id.into(), ..Default::default() }
    }
}

impl ListRequest for ListJobExecutions {
    type Item = Execution;
    fn path(&self) -> String {
        format!("/v1/jobs/{}/executions", enc(&self.job_id))
    }
    fn params(&self) -> Vec<(&'static str, String)> {
        let mut p = Vec::new();
        if let Some(s) = self.status {
            p.push(("status", s.as_str().to_string()));
        }
        if self.oldest_first {
            p.push(("order", "asc".into()));
        }
        if let Some(t) = self.until {
            p.push(("until", t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)));
        }
        p
    }
    paging!();
}

/// `GET /v1/executions?status`: executions needing attention across jobs (RETRY_WAIT, FAILED,
/// DEAD, CANCELED; the server refuses other statuses).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListExecutions {
    /// The status.
    pub status: ExecStatus,
    /// Page size.
    pub limit: Option<u32>,
    /// Start from this cursor.
    pub cursor: Option<String>,
}

impl ListExecutions {
    /// Every execution in `status`.
    pub fn new(status: ExecStatus) -> Self {
        ListExecutions { status, limit: None, cursor: None }
    }
}

impl ListRequest for ListExecutions {
    type Item = Execution;
    fn path(&self) -> String {
        "/v1/executions".into()
    }
    fn params(&self) -> Vec<(&'static str, String)> {
        vec![("status", self.status.as_str().to_string())]
    }
    paging!();
}

/// `GET /v1/executions/{executionId}/children`: a sharded, broadcast or map-reduce fire's
/// children, in key order (shards by index, members by name). Pages of up to 1,000 (the server's
/// default is 100; a map-reduce fire has up to 100,000 items).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListChildren {
    /// The parent's execution id (`job@ms`).
    pub execution_id: String,
    /// Page size (1-1,000).
    pub limit: Option<u32>,
    /// Start from this cursor.
    pub cursor: Option<String>,
}

impl ListChildren {
    /// Every child of `execution_id`.
    pub fn new(execution_id: impl Into<String>) -> Self {
        ListChildren { execution_id: execution_id.into(), limit: None, cursor: None }
    }
}

impl ListRequest for ListChildren {
    type Item = Execution;
    fn path(&self) -> String {
        format!("/v1/executions/{}/children", enc(&self.execution_id))
    }
    fn params(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
    paging!();
}

/// `GET /v1/dlq`: dead executions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListDeadLetters {
    /// Page size.
    pub limit: Option<u32>,
    /// Start from this cursor.
    pub cursor: Option<String>,
}

impl ListRequest for ListDeadLetters {
    type Item = Execution;
    fn path(&self) -> String {
        "/v1/dlq".into()
    }
    fn params(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
    paging!();
}

/// `GET /v1/operations`: the audit log, newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListOperations {
    /// Only this job's entries.
    pub job_id: Option<String>,
    /// Page size.
    pub limit: Option<u32>,
    /// Start from this cursor.
    pub cursor: Option<String>,
}

impl ListRequest for ListOperations {
    type Item = Operation;
    fn path(&self) -> String {
        "/v1/operations".into()
    }
    fn params(&self) -> Vec<(&'static str, String)> {
        self.job_id.iter().map(|j| ("jobId", j.clone())).collect()
    }
    paging!();
}

/// `GET /v1/tz-report`: the jobs whose next `fires` fires differ under the server's compiled
/// tz database release. As a list it yields the listed jobs of every page; for the report's
/// own fields (compiled release, jobs examined) read a page with [`Client::tz_report`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TzReportRequest {
    /// Fires compared per job (1-1000; the server's default is 50).
    pub fires: Option<u32>,
    /// Jobs examined per page.
    pub limit: Option<u32>,
    /// Start from this cursor.
    pub cursor: Option<String>,
}

impl ListRequest for TzReportRequest {
    type Item = TzReportJob;
    fn path(&self) -> String {
        "/v1/tz-report".into()
    }
    fn params(&self) -> Vec<(&'static str, String)> {
        self.fires.iter().map(|f| ("fires", f.to_string())).collect()
    }
    paging!();
}

/// Walks a list page by page, following `nextCursor` until the server gives none.
#[derive(Debug)]
pub struct Pager<R: ListRequest> {
    client: Client,
    next: Option<R>,
}

impl<R: ListRequest> Pager<R> {
    pub(crate) fn new(client: Client, first: R) -> Self {
        Pager { client, next: Some(first) }
    }

    /// The next page, or `None` after the last one. A failed page (after the client's retries)
    /// can be asked for again: the pager stays where it was.
    pub async fn next_page(&mut self) -> Result<Option<Page<R::Item>>, Error> {
        let Some(req) = &self.next else { return Ok(None) };
        let page = self.client.page(req).await?;
        self.next = match &page.next_cursor {
            // A server that answers a cursor with itself would loop forever: stop instead.
            Some(c) if req.cursor() != Some(c.as_str()) => Some(req.with_cursor(c.clone())),
            _ => None,
        };
        Ok(Some(page))
    }

    /// Every remaining item.
    pub async fn collect_all(mut self) -> Result<Vec<R::Item>, Error> {
        let mut all = Vec::new();
        while let Some(p) = self.next_page().await? {
            all.extend(p.items);
        }
        Ok(all)
    }
}
