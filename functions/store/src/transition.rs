//! The one status change of an execution: [`Transition`] renders `SET st = to`, the audit
//! event appended to the timeline `tl`, and the conditions that the execution is still where
//! the caller saw it (`st = from AND tok = token`, and `lo = owner` for a lease holder's
//! write), in one place. The write's other changes go [`Transition::expr`]'s `before` and
//! `after` hooks: before or after the event in the `SET` clause (and so in the numbering of
//! the `:vN` placeholders).

use super::expr::Expr;
use super::items::{attr, n};
use aws_sdk_dynamodb::types::AttributeValue;
use sundial_model::claim::Fence;
use sundial_model::{AuditEvent, ExecStatus};

/// Whose write a transition is: who must still hold the execution for it to land.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Guard<'a> {
    /// Anyone who read the execution at this fencing token (`tok = token`).
    Token(u64),
    /// The lease holder `fence` (`tok = fence.token AND lo = fence.owner`).
    Fence(&'a Fence),
}

impl Guard<'_> {
    /// Adds the conditions of a write from `from`: `st = from AND tok = .. [AND lo = ..]`.
    pub(crate) fn conditions(&self, e: &mut Expr, from: ExecStatus) {
        e.cond_eq(attr::STATUS, AttributeValue::S(from.as_str().into()));
        match self {
            Guard::Token(t) => {
                e.cond_eq(attr::TOKEN, n(*t));
            }
            Guard::Fence(f) => {
                e.cond_eq(attr::TOKEN, n(f.token))
                    .cond_eq(attr::LEASE_OWNER, AttributeValue::S(f.owner.clone()));
            }
        }
    }
}

/// An execution's move from `from` to `to`, with its audit event, guarded by `guard`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Transition<'a> {
    /// The status it must be in.
    pub(crate) from: ExecStatus,
    /// The status it moves to.
    pub(crate) to: ExecStatus,
    /// Who must still hold it.
    pub(crate) guard: Guard<'a>,
    /// When (ms).
    pub(crate) at: i64,
    /// Who (`worker:{owner}`, `api:{principal}`, ...).
    pub(crate) actor: String,
    /// The attempt the event records.
    pub(crate) attempt: u32,
    /// The fencing token the event records (a claim's is the new one, one above its guard's).
    pub(crate) token: u64,
    /// Why (an error or reason code), if anything but the obvious.
    pub(crate) code: Option<String>,
}

impl<'a> Transition<'a> {
    /// A lease holder's move out of RUNNING: the worker `fence.owner` at its attempt and token.
    pub(crate) fn by_worker(fence: &'a Fence, to: ExecStatus, at: i64, code: Option<String>) -> Self {
        Transition {
            from: ExecStatus::Running,
            to,
            guard: Guard::Fence(fence),
            at,
            actor: format!("worker:{}", fence.owner),
            attempt: fence.attempt,
            token: fence.token,
            code,
        }
    }

    /// A move by whoever read the execution at `(from, token, attempt)` (the control plane,
    /// the reconciler, a parent's last child).
    pub(crate) fn at_token(
        (from, token, attempt): (ExecStatus, u64, u32),
        to: ExecStatus,
        actor: &str,
        at: i64,
        code: Option<String>,
    ) -> Self {
        Transition {
            from,
            to,
            guard: Guard::Token(token),
            at,
            actor: actor.to_string(),
            attempt,
            token,
            code,
        }
    }

    /// The audit event it appends.
    pub(crate) fn event(&self) -> AuditEvent {
        AuditEvent {
            at: self.at,
            actor: self.actor.clone(),
            from: Some(self.from),
            to: self.to,
            attempt: self.attempt,
            token: self.token,
            code: self.code.clone(),
        }
    }

    /// The update: `SET st = to`, `before`'s changes, the event appended to `tl`, `after`'s
    /// changes, then the guard's conditions. The caller may add more conditions to the result.
    pub(crate) fn expr(&self, before: impl FnOnce(&mut Expr), after: impl FnOnce(&mut Expr)) -> Expr {
        let mut e = Expr::new();
        e.set(attr::STATUS, AttributeValue::S(self.to.as_str().into()));
        before(&mut e);
        e.append_event(&self.event());
        after(&mut e);
        if matches!(self.guard, Guard::Fence(_))
            && sundial_mutants::active(sundial_mutants::Mutant::FinishUnfenced)
        {
            e.cond_eq(attr::STATUS, AttributeValue::S(self.from.as_str().into()));
            return e;
        }
        self.guard.conditions(&mut e, self.from);
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> AttributeValue {
        AttributeValue::S(v.to_string())
    }

    fn fence() -> Fence {
        Fence { owner: "w1".into(), token: 7, attempt: 2, indexed: true }
    }

    #[test]
    fn a_workers_transition_renders_what_the_hand_built_update_did() {
        let f = fence();
        let t = Transition::by_worker(&f, ExecStatus::Waiting, 1_000, Some("FanOut".into()));
        let got = t.expr(
            |e| {
                e.set(attr::CHILDREN, n(3));
            },
            |e| {
                e.remove(attr::LEASE_UNTIL);
            },
        );
        // The update as `await_children` built it by hand before the type existed.
        let ev = AuditEvent {
            at: 1_000,
            actor: "worker:w1".into(),
            from: Some(ExecStatus::Running),
            to: ExecStatus::Waiting,
            attempt: 2,
            token: 7,
            code: Some("FanOut".into()),
        };
        let mut want = Expr::default();
        want.set(attr::STATUS, s(ExecStatus::Waiting.as_str()))
            .set(attr::CHILDREN, n(3))
            .append_event(&ev)
            .remove(attr::LEASE_UNTIL)
            .cond_eq(attr::STATUS, s(ExecStatus::Running.as_str()))
            .cond_eq(attr::TOKEN, n(7))
            .cond_eq(attr::LEASE_OWNER, s("w1"));
        assert_eq!(got, want);
        assert_eq!(
            got.rendered(),
            (
                Some("SET #st = :v0, #kn = :v1, #tl = list_append(#tl, :v2) REMOVE #lu".to_string()),
                Some("#st = :v3 AND #tok = :v4 AND #lo = :v5".to_string()),
            )
        );
    }

    #[test]
    fn a_token_guarded_transition_checks_status_and_token_only() {
        let t = Transition::at_token(
            (ExecStatus::Dead, 4, 3),
            ExecStatus::Ready,
            "api:alice",
            5,
            Some("Replay".into()),
        );
        let ev = t.event();
        assert_eq!((ev.from, ev.to, ev.attempt, ev.token), (Some(ExecStatus::Dead), ExecStatus::Ready, 3, 4));
        let got = t.expr(
            |_| {},
            |e| {
                e.set(attr::ERR_CODE, s("X"));
            },
        );
        assert_eq!(
            got.rendered(),
            (
                Some("SET #st = :v0, #tl = list_append(#tl, :v1), #ec = :v2".to_string()),
                Some("#st = :v3 AND #tok = :v4".to_string()),
            )
        );
        let mut want = Expr::new();
        want.set(attr::STATUS, s("READY"))
            .append_event(&ev)
            .set(attr::ERR_CODE, s("X"))
            .cond_eq(attr::STATUS, s("DEAD"))
            .cond_eq(attr::TOKEN, n(4));
        assert_eq!(got, want);
    }
}
