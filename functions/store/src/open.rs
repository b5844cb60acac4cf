//! The `open` index: executions not yet final, by the instant the reconciler should look at
//! them; and the reconciler's three writes.
//!
//! Every write that creates an open execution sets `open_pk` (`OPEN#{part}`) and `open_due`
//! ([`sundial_model::reconcile::first_look`]); every write into a final status removes both, so the
//! index holds open executions only and a Query of `open_due <= now` per partition reads just
//! the ones that are due for a look. The projection is keys only: moving `open_due` is the only
//! index write besides entering and leaving.

use super::error::StoreError;
use super::executions::{CasResult, ExecKey, ExecStore, Snapshot};
use super::expr::{Cmp, Expr, WithExpr};
use super::items::{self, attr, index, n, Item};
use super::query::{one_page, Pager};
use super::transition::Guard;
use super::QueryPage;
use aws_sdk_dynamodb::types::AttributeValue;
use sundial_model::keys;
use sundial_model::retry::codes;
use sundial_model::{AuditEvent, ExecStatus};

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

/// One entry of the `open` index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenEntry {
    /// The execution.
    pub key: ExecKey,
    /// When the reconciler should look at it (ms).
    pub due: i64,
}

/// Where the next page of an `open` partition starts.
pub type OpenCursor = std::collections::HashMap<String, AttributeValue>;

impl ExecStore {
    /// One page (at most `limit`) of partition `part` of the `open` index with `open_due <=
    /// due_by`, earliest first.
    pub async fn open_due(
        &self,
        part: u32,
        due_by: i64,
        limit: i32,
        start: Option<OpenCursor>,
    ) -> Result<QueryPage<OpenEntry, OpenCursor>, StoreError> {
        let mut e = Expr::new();
        e.key_eq(attr::OPEN_PK, s(keys::open_partition(part))).key_cmp(attr::OPEN_DUE, Cmp::Le, n(due_by));
        let query =
            self.client().query().table_name(self.table()).index_name(index::open()?).expr(e).limit(limit);
        let page = one_page(query, start, "Query(open)").await?;
        let items = page.items.iter().filter_map(entry_of).collect();
        Ok(QueryPage { items, next: page.last_key.filter(|k| !k.is_empty()) })
    }

    /// Moves the reconciler's next look at `key` to `at` (ms), if it is still as `seen`.
    /// False if it changed meanwhile (a worker acted on it: nothing to do).
    pub async fn look_again(&self, key: &ExecKey, seen: &Snapshot, at: i64) -> Result<bool, StoreError> {
        let mut e = Expr::default();
        e.set(attr::OPEN_DUE, n(at));
        as_seen(&mut e, seen);
        Ok(self.cas(key, "UpdateItem(open look again)", e).await?.is_ok())
    }

    /// A worker re-queues `seen`, waiting at admission or woken: moves the reconciler's next
    /// look to `at` (ms; into the index if it was outside) and raises its wait generation, so
    /// the worker's copy starts the one live chain of copies
    /// ([`sundial_model::reconcile::wait_look`]); only if it is still as `seen`, so of two
    /// workers' waits one starts a chain. The raise is pending until
    /// [`ExecStore::note_wait_sent`] records the copy sent: older copies stand until then. The
    /// new generation, or `None` if it changed meanwhile (the copy then keeps its own).
    pub async fn note_wait(
        &self,
        key: &ExecKey,
        seen: &Snapshot,
        at: i64,
    ) -> Result<Option<u64>, StoreError> {
        let gen = seen.wait_gen + 1;
        let mut e = Expr::default();
        e.set(attr::OPEN_PK, s(keys::open_partition(keys::open_part(&key.tenant, &key.job_id))))
            .set(attr::OPEN_DUE, n(at))
            .set(attr::WAIT_GEN, n(gen as i64))
            // Written out, so that an item without it does not read as sent at the raise.
            .set(attr::WAIT_GEN_SENT, n(seen.wait_gen_sent as i64));
        as_seen(&mut e, seen);
        match seen.wait_gen {
            0 => e.cond_absent_or(attr::WAIT_GEN, Cmp::Eq, n(0)),
            g => e.cond_eq(attr::WAIT_GEN, n(g as i64)),
        };
        Ok(self.cas(key, "UpdateItem(open wait)", e).await?.is_ok().then_some(gen))
    }

    /// Records that the copy of wait generation `gen` of `key` was sent (a worker's wait or
    /// wake, after [`ExecStore::note_wait`]): from now on copies below it are stale. Only
    /// raises it. False if it was already there (or the execution is gone).
    pub async fn note_wait_sent(&self, key: &ExecKey, gen: u64) -> Result<bool, StoreError> {
        let mut e = Expr::default();
        e.set(attr::WAIT_GEN_SENT, n(gen as i64)).cond_exists(attr::PK).cond_absent_or(
            attr::WAIT_GEN_SENT,
            Cmp::Lt,
            n(gen as i64),
        );
        Ok(self.cas(key, "UpdateItem(open wait sent)", e).await?.is_ok())
    }

    /// Records a re-send by the reconciler (`actor`) at `now_ms`: a note on the timeline, one
    /// more re-send, the next look at `next_look` (ms), and a new wait generation (the re-sent
    /// message carries `seen.wait_gen + 1`); only if the execution is still as `seen`, so two
    /// reconcilers never both re-send it. Returns the re-send count, or `None` if it changed
    /// meanwhile.
    pub async fn mark_resent(
        &self,
        key: &ExecKey,
        seen: &Snapshot,
        next_look: i64,
        actor: &str,
        now_ms: i64,
    ) -> Result<Option<u32>, StoreError> {
        let ev = AuditEvent::note(&seen.exec, now_ms, actor, codes::RESENT);
        let mut e = Expr::default();
        let count = seen.resends.saturating_add(1);
        e.set(attr::OPEN_DUE, n(next_look)).set(attr::RESENDS, n(count)).append_event(&ev);
        // The re-send starts a new chain of copies: any older one still waiting drops itself.
        // Pending until the re-send is out (`note_wait_sent`): the older copies stand till then.
        e.set(attr::WAIT_GEN, n(seen.wait_gen as i64 + 1))
            .set(attr::WAIT_GEN_SENT, n(seen.wait_gen_sent as i64));
        as_seen(&mut e, seen);
        Ok(match self.cas(key, "UpdateItem(open resent)", e).await? {
            Ok(_) => Some(count),
            Err(_) => None,
        })
    }

    /// Records, once, that `key` had not started by its start deadline: sets `ms` (missed at)
    /// to `now_ms` if it is absent, notes `StartDeadlineMissed` on the timeline and moves the
    /// next look to `next_look` (ms); only if the execution is still as `seen` (not claimed
    /// since). True: this call recorded it, and its caller reports the miss (one report per
    /// fire, [`sundial_model::reconcile::missed`]).
    pub async fn mark_missed(
        &self,
        key: &ExecKey,
        seen: &Snapshot,
        next_look: i64,
        actor: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let ev = AuditEvent::note(&seen.exec, now_ms, actor, codes::START_DEADLINE_MISSED);
        let mut e = Expr::default();
        e.set(attr::MISSED, n(now_ms)).set(attr::OPEN_DUE, n(next_look)).append_event(&ev);
        e.cond_not_exists(attr::MISSED);
        as_seen(&mut e, seen);
        Ok(self.cas(key, "UpdateItem(open missed)", e).await?.is_ok())
    }

    /// Records that `seen` is past its finish deadline, once: sets `fdm` only if absent, notes
    /// it on the timeline and puts its `entry` (a `FinishDeadlineMissed` outbox entry) on the
    /// outbox, held by the caller for its flush, all in one write; the next look at
    /// `next_look`. True: the caller reports it (docs/outcomes.md).
    pub async fn mark_finish_missed(
        &self,
        key: &ExecKey,
        seen: &Snapshot,
        entries: &[String],
        next_look: Option<i64>,
        actor: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let ev = AuditEvent::note(&seen.exec, now_ms, actor, codes::FINISH_DEADLINE_MISSED);
        let mut e = Expr::default();
        e.set(attr::FINISH_MISSED, n(now_ms))
            .add_strings(attr::OUTBOX, entries.to_vec())
            .set(attr::OUTBOX_LEASE, n(now_ms + super::executions::OUTBOX_LEASE_MS))
            .append_event(&ev);
        if let Some(at) = next_look {
            e.set(attr::OPEN_DUE, n(at));
        }
        e.cond_not_exists(attr::FINISH_MISSED);
        as_seen(&mut e, seen);
        Ok(self.cas(key, "UpdateItem(open finish missed)", e).await?.is_ok())
    }

    /// A worker's [`ExecStore::mark_missed`]: it has just claimed `claimed` (RUNNING, its
    /// first attempt) after the start deadline. Sets `ms` only if no reconciler did first; true:
    /// this worker reports the miss.
    pub async fn mark_started_late(
        &self,
        key: &ExecKey,
        claimed: &sundial_model::Execution,
        actor: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let ev = AuditEvent::note(claimed, now_ms, actor, codes::START_DEADLINE_MISSED);
        let mut e = Expr::default();
        e.set(attr::MISSED, n(now_ms)).append_event(&ev);
        e.cond_exists(attr::PK).cond_not_exists(attr::MISSED);
        Ok(self.cas(key, "UpdateItem(started late)", e).await?.is_ok())
    }

    /// Takes a final execution out of the `open` index (a write that left it there, or an
    /// index entry read before the final write landed). False if it is not final.
    pub async fn close_open(&self, key: &ExecKey, seen: &Snapshot) -> Result<bool, StoreError> {
        let mut e = Expr::default();
        e.remove(attr::OPEN_PK).remove(attr::OPEN_DUE).cond_eq(attr::STATUS, s(seen.exec.status.as_str()));
        // Its outcome events go out first (docs/outcomes.md): the index is how they are found.
        e.cond_not_exists(attr::OUTBOX);
        let r: CasResult = self.cas(key, "UpdateItem(open close)", e).await?;
        Ok(r.is_ok())
    }

    /// Puts an open execution that is outside the `open` index into it, due for a look at `at`
    /// (ms), if it is still as `seen` and still outside (so two verifiers never both write it).
    /// The trigger's verification pass calls it for every-minute and daily fires that are not
    /// final a grace after their minute (`docs/reconciler.md`, "Fires the index never held").
    pub async fn track(&self, key: &ExecKey, seen: &Snapshot, at: i64) -> Result<bool, StoreError> {
        let mut e = Expr::default();
        e.set(attr::OPEN_PK, s(keys::open_partition(keys::open_part(&key.tenant, &key.job_id))))
            .set(attr::OPEN_DUE, n(at));
        as_seen(&mut e, seen);
        Ok(self.cas(key, "UpdateItem(open track)", e).await?.is_ok())
    }

    /// Puts every open execution of a job scheduled at or after `since_ms` that is outside the
    /// `open` index into it, due at `at`: called when a job leaves the every-minute or daily
    /// class (paused, edited, deleted, deferred, moved), whose fires the trigger's verification
    /// pass would otherwise no longer find. Returns how many it put in.
    pub async fn track_job_since(
        &self,
        tenant: &str,
        job_id: &str,
        since_ms: i64,
        at: i64,
    ) -> Result<u32, StoreError> {
        let open = [ExecStatus::Ready, ExecStatus::RetryWait, ExecStatus::Running];
        let mut e = Expr::new();
        e.key_eq(attr::PK, s(keys::job_pk(tenant, job_id)))
            .key_between(
                attr::SK,
                s(keys::exec_sk(since_ms.max(0))),
                s(keys::exec_sk(keys::MAX_SCHEDULED_MS)),
            )
            .filter_in(attr::STATUS, open.map(|st| s(st.as_str())));
        let query = self.client().query().table_name(self.table()).expr(e).consistent_read(true);
        let mut pages = Pager::new(query, None, "Query(open since)");
        let mut tracked = 0;
        // Page by page: each page's executions are tracked before the next page is read.
        while let Some(page) = pages.next().await? {
            for item in &page.items {
                let snap = items::snapshot_from_item(item)?;
                if snap.open_due.is_none() && self.track(&ExecKey::of(&snap.exec), &snap, at).await? {
                    tracked += 1;
                }
            }
        }
        Ok(tracked)
    }

    /// The executions of `keys` that exist (eventually consistent BatchGetItem, 100 keys a
    /// call, unprocessed keys retried), in no particular order.
    pub async fn snapshots(&self, keys: &[ExecKey]) -> Result<Vec<Snapshot>, StoreError> {
        let keys: Vec<Item> = keys
            .iter()
            .map(|k| Item::from([(attr::PK.to_string(), s(k.pk())), (attr::SK.to_string(), s(k.sk()))]))
            .collect();
        let items =
            super::batch_get(self.client(), self.table(), keys, false, "BatchGetItem(executions)").await?;
        Ok(items.iter().map(items::snapshot_from_item).collect::<Result<_, _>>()?)
    }

    /// The raw item of an execution (for the reconciler's tests and tools).
    pub async fn raw(&self, key: &ExecKey) -> Result<Option<Item>, StoreError> {
        self.get_item(key, true).await
    }
}

/// Condition: status, token and `open_due` as read (the last catches a concurrent reconciler).
fn as_seen(e: &mut Expr, seen: &Snapshot) {
    Guard::Token(seen.exec.fencing_token).conditions(e, seen.exec.status);
    match seen.open_due {
        Some(d) => e.cond_eq(attr::OPEN_DUE, n(d)),
        None => e.cond_not_exists(attr::OPEN_DUE),
    };
}

fn entry_of(item: &Item) -> Option<OpenEntry> {
    let pk = item.get(attr::PK)?.as_s().ok()?;
    let sk = item.get(attr::SK)?.as_s().ok()?;
    let (tenant, job) = keys::parse_job_pk(pk)?;
    let due = items::get_n_opt(item, attr::OPEN_DUE).ok().flatten()?;
    // A child's key names its child (`docs/children.md`): the reconciler watches children too.
    let (scheduled_ms, child) = keys::parse_any_exec_sk(sk)?;
    Some(OpenEntry { key: ExecKey { tenant: tenant.into(), job_id: job.into(), scheduled_ms, child }, due })
}
