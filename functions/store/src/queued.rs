//! Writes on queued-ahead executions when their job changes (pause, resume, edit, delete): hold,
//! release, amend to the new definition, cancel with a reason; and the take-over of a fire a
//! backfill (a resume's catch-up) replays. Each is a CAS on the execution as
//! read (READY, never claimed: token as read) and appends its note or transition to the
//! timeline, so a worker that claims in between wins and the change does not touch a run.

use super::error::StoreError;
use super::executions::{ExecKey, ExecStore, Snapshot};
use super::expr::Expr;
use super::items::{self, attr, n};
use super::transition::Guard;
use aws_sdk_dynamodb::types::AttributeValue;
use sundial_model::{AuditEvent, ExecStatus, Execution, JobDefinition};

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

/// Condition: READY and never claimed since it was read.
fn untouched(e: &mut Expr, seen: &Execution) {
    Guard::Token(seen.fencing_token).conditions(e, ExecStatus::Ready);
}

impl ExecStore {
    /// Holds a queued-ahead execution for a pause of job version `version`: it runs only if a
    /// resume releases it before its instant (a worker that receives it held cancels it).
    /// False if it changed meanwhile or was held already.
    pub async fn hold(
        &self,
        seen: &Execution,
        version: u64,
        actor: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let mut e = Expr::default();
        e.set(attr::HELD, n(version)).append_event(&AuditEvent::note(
            seen,
            now_ms,
            actor,
            sundial_model::retry::codes::HELD,
        ));
        untouched(&mut e, seen);
        e.cond_not_exists(attr::HELD);
        Ok(self.cas(&ExecKey::of(seen), "UpdateItem(hold)", e).await?.is_ok())
    }

    /// Releases a held execution (a resume before its instant). False if it was not held or
    /// changed meanwhile.
    pub async fn release_hold(&self, seen: &Execution, actor: &str, now_ms: i64) -> Result<bool, StoreError> {
        let mut e = Expr::default();
        e.remove(attr::HELD).append_event(&AuditEvent::note(
            seen,
            now_ms,
            actor,
            sundial_model::retry::codes::UNHELD,
        ));
        untouched(&mut e, seen);
        e.cond_exists(attr::HELD);
        Ok(self.cas(&ExecKey::of(seen), "UpdateItem(release hold)", e).await?.is_ok())
    }

    /// Takes `seen`, a queued-ahead fire still READY and never claimed, over for a backfill (a
    /// resume's catch-up) that replays its instant: `to` is the execution the backfill would
    /// have created there (its definition and version, its paced start). In one write its
    /// pause's hold goes, it moves to `to`'s definition and start, gets a `CaughtUp` note (its
    /// worker no longer checks it against the pause, `Execution::is_caught_up`), a new chain of
    /// copies (older copies drop themselves) and an `open` index entry due at its first look,
    /// with its re-send count started over. The execution as written, or `None` if it changed
    /// meanwhile.
    pub async fn catch_up(
        &self,
        seen: &Snapshot,
        to: &Execution,
        actor: &str,
        now_ms: i64,
    ) -> Result<Option<Snapshot>, StoreError> {
        let taken = Execution {
            definition: to.definition.clone(),
            def_version: to.def_version,
            fire_at: to.fire_at,
            available_at: to.available_at,
            ..seen.exec.clone()
        };
        let mut e = Expr::default();
        e.set(attr::DEF, s(serde_json::to_string(&taken.definition).unwrap_or_default()))
            .set(attr::VERSION, n(taken.def_version))
            .set(attr::FIRE, n(taken.fire_at.timestamp_millis()))
            .set(attr::AVAILABLE, n(taken.available_at))
            .set(attr::WAIT_GEN, n(seen.wait_gen as i64 + 1))
            .set(attr::WAIT_GEN_SENT, n(seen.wait_gen as i64 + 1))
            .remove(attr::HELD)
            .remove(attr::RESENDS)
            .append_event(&AuditEvent::note(
                &seen.exec,
                now_ms,
                actor,
                sundial_model::retry::codes::CAUGHT_UP,
            ));
        if let Some(at) = sundial_model::reconcile::first_look(&taken) {
            let part = sundial_model::keys::open_partition(sundial_model::keys::open_part(
                &seen.exec.tenant,
                &seen.exec.job_id,
            ));
            e.set(attr::OPEN_PK, s(part)).set(attr::OPEN_DUE, n(at));
        }
        untouched(&mut e, &seen.exec);
        match self.cas(&ExecKey::of(&seen.exec), "UpdateItem(catch up)", e).await? {
            Ok(item) => Ok(Some(items::snapshot_from_item(&item)?)),
            Err(_) => Ok(None),
        }
    }

    /// Moves a queued-ahead execution to definition `def` of job version `version` (an edit
    /// whose new schedule keeps its instant). If the new definition sets a start deadline, the
    /// execution enters the `open` index due at it (it may have been put outside it, or due a
    /// grace after its delivery). False if it changed meanwhile.
    pub async fn amend(
        &self,
        seen: &Execution,
        def: &JobDefinition,
        version: u64,
        actor: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let mut e = Expr::default();
        e.set(attr::DEF, s(serde_json::to_string(def).unwrap_or_default()))
            .set(attr::VERSION, n(version))
            .append_event(&AuditEvent::note(seen, now_ms, actor, sundial_model::retry::codes::AMENDED));
        let amended = Execution { definition: def.clone(), def_version: version, ..seen.clone() };
        if sundial_model::reconcile::pending_deadline(&amended, false).is_some() {
            if let Some(at) = sundial_model::reconcile::first_look(&amended) {
                let part = sundial_model::keys::open_partition(sundial_model::keys::open_part(
                    &seen.tenant,
                    &seen.job_id,
                ));
                e.set(attr::OPEN_PK, s(part)).set(attr::OPEN_DUE, n(at));
            }
        }
        untouched(&mut e, seen);
        e.cond_eq(attr::VERSION, n(seen.def_version));
        Ok(self.cas(&ExecKey::of(seen), "UpdateItem(amend)", e).await?.is_ok())
    }

    /// Records the instants a `fireOnce` batch does not stand for (`mx`: each has its own
    /// execution, already claimed or otherwise decided; docs/simulation.md, K6), before the
    /// batch's first claim, with a note (`ExceptedFromBatch`). False if it changed meanwhile.
    pub async fn except_from_batch(
        &self,
        seen: &Execution,
        except: &[chrono::DateTime<chrono::Utc>],
        actor: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let mut e = Expr::default();
        let set = except.iter().map(|t| t.timestamp_millis().to_string()).collect();
        e.set(attr::MISSED_EXCEPT, AttributeValue::Ns(set)).append_event(&AuditEvent::note(
            seen,
            now_ms,
            actor,
            sundial_model::retry::codes::EXCEPTED_FROM_BATCH,
        ));
        untouched(&mut e, seen);
        Ok(self.cas(&ExecKey::of(seen), "UpdateItem(batch except)", e).await?.is_ok())
    }

    /// A note with `code` on a READY execution never claimed since it was read (a fire that
    /// starts waiting for its upstreams, or runs past its dependency deadline). False if it
    /// changed meanwhile.
    pub async fn note_ready(
        &self,
        seen: &Execution,
        code: &str,
        actor: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        self.note_untouched(seen, code, actor, now_ms, "UpdateItem(note)", |_| {}).await
    }

    /// Moves a queued-ahead execution's start to `now_ms` (an event for its fire came first,
    /// `oncePerPeriod`), with a note `code`. False if it changed meanwhile.
    pub async fn advance_ready(
        &self,
        seen: &Execution,
        code: &str,
        actor: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        self.note_untouched(seen, code, actor, now_ms, "UpdateItem(advance)", |e| {
            e.set(attr::FIRE, n(now_ms)).set(attr::AVAILABLE, n(now_ms));
        })
        .await
    }

    /// A note `code` on `seen` while it is READY and never claimed since it was read, with the
    /// sets `more` adds, in one conditional write. False if it changed meanwhile.
    async fn note_untouched(
        &self,
        seen: &Execution,
        code: &str,
        actor: &str,
        now_ms: i64,
        op: &'static str,
        more: impl FnOnce(&mut Expr),
    ) -> Result<bool, StoreError> {
        let mut e = Expr::default();
        more(&mut e);
        e.append_event(&AuditEvent::note(seen, now_ms, actor, code));
        untouched(&mut e, seen);
        Ok(self.cas(&ExecKey::of(seen), op, e).await?.is_ok())
    }

    /// READY → CANCELED with `code` (an edit removed its instant, a pause held it through its
    /// instant, a delete). False if it changed meanwhile.
    pub async fn cancel_ready(
        &self,
        seen: &Execution,
        code: &str,
        actor: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let at = (ExecStatus::Ready, seen.fencing_token, seen.attempt);
        let deadline = sundial_model::reconcile::finish_deadline(seen);
        Ok(self.cas_cancel_with(&ExecKey::of(seen), at, code, deadline, actor, now_ms).await?.is_ok())
    }
}
