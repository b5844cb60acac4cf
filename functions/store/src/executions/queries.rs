//! The Queries over executions: a job's executions page by page, the `attention` index, the
//! executions of a job after an instant, and the first pending one in a range.

use super::{s, ExecKey, ExecStore, Snapshot};
use crate::error::StoreError;
use crate::expr::{Expr, WithExpr};
use crate::items::{self, attr, index, Item};
use crate::query::{one_page, Pager};
use crate::QueryPage;
use std::collections::HashMap;
use sundial_model::keys;
use sundial_model::{ExecStatus, Execution};

/// Most queries one page of [`ExecStore::list_for_job`] spends skipping a fan-out's children.
const MAX_PAGE_QUERIES: usize = 8;
/// Items one of those later queries reads (a map-reduce fire has thousands of children).
const CHILD_SKIP_STEP: i32 = 200;

/// Which page of a job's executions [`ExecStore::list_for_job`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobPage {
    /// Only this status (a filter: the items read are still billed).
    pub status: Option<ExecStatus>,
    /// Oldest first (default: newest first).
    pub oldest_first: bool,
    /// Most items to read.
    pub limit: i32,
    /// Start after the execution scheduled at this instant (ms).
    pub after_ms: Option<i64>,
    /// Only executions scheduled at or before this instant (ms): the fires due by then, not
    /// the ones the tick has already planned for later (a key condition: nothing later is read).
    pub until_ms: Option<i64>,
}

impl ExecStore {
    /// One page of a job's executions in scheduled order (newest first unless
    /// `page.oldest_first`); `next` is the scheduled instant (ms) the next page starts after.
    pub async fn list_for_job(
        &self,
        tenant: &str,
        job_id: &str,
        page: &JobPage,
    ) -> Result<QueryPage<Execution, i64>, StoreError> {
        let pk = keys::job_pk(tenant, job_id);
        let start = page.after_ms.map(|ms| {
            HashMap::from([(attr::PK.to_string(), s(&pk)), (attr::SK.to_string(), s(keys::exec_sk(ms)))])
        });
        let mut e = Expr::new();
        e.key_eq(attr::PK, s(&pk));
        match page.until_ms {
            // `E#` sorts before every execution key; a child of the last fire sorts after its
            // fire's key and is left out, as children always are here.
            Some(until) => e.key_between(attr::SK, s(keys::EXEC_SK_PREFIX), s(keys::exec_sk(until.max(0)))),
            None => e.key_begins_with(attr::SK, keys::EXEC_SK_PREFIX),
        };
        if let Some(st) = page.status {
            e.filter_eq(attr::STATUS, s(st.as_str()));
        }
        // The fires only: children are listed under their parent (`docs/children.md`).
        e.filter_not_exists(attr::CHILD);
        let query = self.ddb.query().table_name(&self.table).expr(e).scan_index_forward(page.oldest_first);
        let pages = Pager::new(query, start, "Query(executions)");
        let (items, last_key) = read_fires(pages, page.limit).await?;
        Ok(page_of_fires(items, last_key, page))
    }

    /// One page of a tenant's executions in an off-happy-path status (RETRY_WAIT, FAILED,
    /// DEAD, CANCELED), newest first, from the sparse `attention` index; `next` is the key of
    /// the last execution read.
    pub async fn list_attention(
        &self,
        tenant: &str,
        status: ExecStatus,
        limit: i32,
        after: Option<&ExecKey>,
    ) -> Result<QueryPage<Execution, ExecKey>, StoreError> {
        let att_pk = keys::attention_pk(tenant, status.as_str());
        let start = after.map(|k| {
            HashMap::from([
                (attr::ATT_PK.to_string(), s(&att_pk)),
                (attr::ATT_SK.to_string(), s(keys::attention_sk(k.scheduled_ms, &k.job_id))),
                (attr::PK.to_string(), s(k.pk())),
                (attr::SK.to_string(), s(k.sk())),
            ])
        });
        let mut e = Expr::new();
        e.key_eq(attr::ATT_PK, s(&att_pk));
        let query = self
            .ddb
            .query()
            .table_name(&self.table)
            .index_name(index::attention()?)
            .expr(e)
            .scan_index_forward(false)
            .limit(limit);
        let page = one_page(query, start, "Query(attention)").await?;
        let items = page.items.iter().map(items::execution_from_item).collect::<Result<Vec<_>, _>>()?;
        let next = page.last_key.and_then(|k| {
            let job = k.get(attr::PK).and_then(|v| v.as_s().ok()).and_then(|pk| keys::job_of_pk(pk))?;
            let (ms, child) =
                k.get(attr::SK).and_then(|v| v.as_s().ok()).and_then(|sk| keys::parse_any_exec_sk(sk))?;
            Some(ExecKey { tenant: tenant.to_string(), job_id: job.to_string(), scheduled_ms: ms, child })
        });
        Ok(QueryPage { items, next })
    }

    /// Every execution of a job scheduled after `after_ms`, as snapshots (consistent reads, all
    /// pages).
    pub async fn scheduled_after(
        &self,
        tenant: &str,
        job_id: &str,
        after_ms: i64,
    ) -> Result<Vec<Snapshot>, StoreError> {
        let pk = keys::job_pk(tenant, job_id);
        let mut e = Expr::new();
        e.key_eq(attr::PK, s(&pk)).key_between(
            attr::SK,
            s(keys::exec_sk(after_ms + 1)),
            s(keys::exec_sk(keys::MAX_SCHEDULED_MS)),
        );
        let query = self.ddb.query().table_name(&self.table).expr(e).consistent_read(true);
        Pager::new(query, None, "Query(future executions)").all(items::snapshot_from_item).await
    }

    /// The fires' executions of a job scheduled in `[from_ms, to_ms]` (children left out), as
    /// snapshots in scheduled order (consistent reads, all pages): what a `fireOnce` batch over
    /// that range steps past.
    pub async fn fires_between(
        &self,
        tenant: &str,
        job_id: &str,
        from_ms: i64,
        to_ms: i64,
    ) -> Result<Vec<Snapshot>, StoreError> {
        if from_ms > to_ms {
            return Ok(Vec::new());
        }
        let pk = keys::job_pk(tenant, job_id);
        let mut e = Expr::new();
        e.key_eq(attr::PK, s(&pk)).key_between(attr::SK, s(keys::exec_sk(from_ms)), s(keys::exec_sk(to_ms)));
        e.filter_not_exists(attr::CHILD);
        let query = self.ddb.query().table_name(&self.table).expr(e).consistent_read(true);
        Pager::new(query, None, "Query(fires between)").all(items::snapshot_from_item).await
    }

    /// The scheduled instant (ms) of the first execution of `key`'s job in `(after, before)`
    /// that is not final (READY, RETRY_WAIT or RUNNING), if any.
    pub async fn first_pending_between(
        &self,
        key: &ExecKey,
        after: i64,
        before: i64,
    ) -> Result<Option<i64>, StoreError> {
        if after + 1 > before - 1 {
            return Ok(None);
        }
        // A waiting parent is pending too: its fire is not over until its children are.
        let open = [ExecStatus::Ready, ExecStatus::RetryWait, ExecStatus::Running, ExecStatus::Waiting];
        let mut e = Expr::new();
        e.key_eq(attr::PK, s(key.pk()))
            .key_between(attr::SK, s(keys::exec_sk(after + 1)), s(keys::exec_sk(before - 1)))
            .filter_in(attr::STATUS, open.map(|st| s(st.as_str())))
            .project(&[attr::SK, attr::STATUS]);
        let query = self.ddb.query().table_name(&self.table).expr(e).consistent_read(true);
        let mut pages = Pager::new(query, None, "Query(pending)");
        // The first page with a match answers (a filtered page may be empty with more to come).
        while let Some(page) = pages.next().await? {
            if let Some(first) = page.items.first() {
                let sk = first.get(attr::SK).and_then(|v| v.as_s().ok()).cloned().unwrap_or_default();
                return Ok(keys::parse_any_exec_sk(&sk).map(|(ms, _)| ms));
            }
        }
        Ok(None)
    }
}

/// Reads fires for one page of [`ExecStore::list_for_job`]: DynamoDB applies `Limit` before
/// the filter, and a fire's children sort right after it (first, newest first), so one query
/// of `limit` items could return an empty page with a cursor. Reads on, in bigger steps, until
/// the page is full (`limit` fires), the partition ends or [`MAX_PAGE_QUERIES`] queries were
/// spent (then the cursor says where to go on). Returns the fires read and the last query's
/// `LastEvaluatedKey`.
async fn read_fires(mut pages: Pager, limit: i32) -> Result<(Vec<Execution>, Option<Item>), StoreError> {
    let want = limit.max(1) as usize;
    let mut fires = Vec::new();
    let mut last_key = None;
    for i in 0..MAX_PAGE_QUERIES {
        let step = if i == 0 { limit } else { limit.max(CHILD_SKIP_STEP) };
        let Some(page) = pages.next_limited(step).await? else { break };
        for it in &page.items {
            fires.push(items::execution_from_item(it)?);
        }
        last_key = page.last_key;
        if fires.len() >= want {
            break;
        }
    }
    Ok((fires, last_key))
}

/// The page [`read_fires`] read, and where the next one starts.
fn page_of_fires(
    mut items: Vec<Execution>,
    last_key: Option<Item>,
    page: &JobPage,
) -> QueryPage<Execution, i64> {
    let want = page.limit.max(1) as usize;
    if items.len() >= want {
        // A full page: the next one starts after its last fire.
        let more = items.len() > want || last_key.is_some();
        items.truncate(want);
        let next = if more { items.last().map(|e| e.scheduled_at.timestamp_millis()) } else { None };
        return QueryPage { items, next };
    }
    // A page may end on a child (children sort right after their parent): newest first,
    // its parent is still to come, so the next page starts after the instant above it.
    let next = last_key
        .as_ref()
        .and_then(|k| k.get(attr::SK))
        .and_then(|v| v.as_s().ok())
        .and_then(|sk| keys::parse_any_exec_sk(sk))
        .map(|(ms, child)| if child.is_some() && !page.oldest_first { ms + 1 } else { ms });
    QueryPage { items, next }
}
