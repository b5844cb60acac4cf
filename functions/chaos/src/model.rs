//! An exhaustive check of the claim / heartbeat / finish / takeover protocol for small instances.
//!
//! Why a model as well as the chaos run: a seeded run samples a few thousand interleavings; the
//! protocol's bugs live in rare ones (a claim that lands between a zombie's heartbeat and its
//! finish, a crash between a finish and the message delete). For one execution and two or three
//! workers, every interleaving can be enumerated: this module states the protocol as a
//! [`Model`] and the crate's explorer ([`crate::explore`]) runs a breadth-first search over the
//! whole state graph.
//!
//! ## What is modelled (the conditions are the ones `store/executions.rs` writes)
//! - **claim** = read, then `UpdateItem` with `st = :read_st AND tok = :read_tok AND cx unset`
//!   plus `lease_until < now - margin` (takeover) or `available_at <= now` (READY/RETRY_WAIT);
//!   it sets `RUNNING`, the owner, a live lease, `tok + 1`, `attempt + 1`. A failed condition
//!   sends the worker back to re-read (the store's loop over the returned old item).
//! - **heartbeat**, **finish**: `st = RUNNING AND tok = :mine AND owner = :me`. A refused
//!   heartbeat stops the run (lease lost); a refused finish discards the result.
//! - **budget**: a claim whose attempt exceeds `max_attempts` finishes DEAD at once
//!   (`Budget::may_start`); a retryable failure on the last attempt finishes DEAD
//!   (`after_failure`), earlier ones RETRY_WAIT.
//! - **messages**: a worker holds at most one; a delete follows only a terminal finish or a read
//!   that found the execution final; every other outcome (held, not yet, refused, crash) returns
//!   the message to the queue (visibility timeout), as `worker.rs` and `long_poll.rs` do.
//! - **faults** (bounded, so the graph is finite): a crash loses a worker's local state and
//!   returns its message; a *pause* lets a live holder's lease expire (GC pause, SIGSTOP, clock
//!   jump). A crashed holder's lease expires for free. Duplicate deliveries start as extra
//!   messages (a repeated tick or a retried `SendMessage`).
//!
//! ## What is checked
//! Safety, in every reachable state and on every transition: at most one accepted terminal
//! finish; every accepted fenced write carries the newest token ever issued (no stale write);
//! tokens strictly increase; every status change is an edge of [`ExecStatus::can_move_to`]; a
//! non-final execution always has a message (queued or held), so it cannot be forgotten.
//!
//! Liveness: from every reachable state a final state (SUCCEEDED or DEAD, message deleted,
//! workers idle) is reachable. On a finite graph this `AG EF done` is exactly what makes
//! `AF done` hold on every path that is strongly fair to each transition (a transition enabled
//! infinitely often is taken infinitely often): faults are bounded, so a fair scheduler cannot
//! keep an execution whose workers keep crashing from ending DEAD or SUCCEEDED.

use crate::explore::{self, Model};
use std::fmt;
use sundial_core::model::ExecStatus;

/// The size of one instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Workers (2-3 keeps the graph small).
    pub workers: u8,
    /// The job's `retry.maxAttempts`.
    pub max_attempts: u32,
    /// Worker crashes (SIGKILL) in one behaviour.
    pub crashes: u8,
    /// Pauses of a live lease holder past its lease.
    pub pauses: u8,
    /// Messages for the execution at the start (2 = a duplicate tick or a retried send).
    pub messages: u8,
    /// Whether a run may succeed (false: every attempt fails with a retryable error).
    pub may_succeed: bool,
}

/// A deliberately broken variant of the protocol, to show the checker can fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flaw {
    /// The real protocol.
    None,
    /// Finish without the token condition (only `st = RUNNING`).
    FinishIgnoresToken,
    /// Never take over a RUNNING execution, even when its lease has expired.
    NoTakeover,
    /// Delete the message when the claim is refused (as if "someone else has it").
    DeleteOnRefusedClaim,
}

/// One worker's local state. Every phase but `Idle` holds one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Phase {
    Idle,
    /// Received a message; about to read the execution.
    Received,
    /// Read `(from, token, attempt)`; about to CAS the claim.
    Claiming {
        from: ExecStatus,
        token: u64,
        attempt: u32,
    },
    /// Holds (it believes) the execution with this token.
    Running {
        token: u64,
        attempt: u32,
    },
    /// Decided how the attempt ends; about to CAS the finish.
    Finishing {
        token: u64,
        to: ExecStatus,
    },
    /// Recorded a final status (or read one); about to delete the message.
    Deleting,
}

/// One worker: its phase, and whether it still holds a live receipt for a message. A worker
/// paused past its lease keeps its phase but loses the message: its visibility ran out and the
/// message is back in the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Worker {
    phase: Phase,
    msg: bool,
}

const IDLE: Worker = Worker { phase: Phase::Idle, msg: false };

/// The whole system: one execution, its queue, the workers, the fault budgets and the history
/// variables the invariants need.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct State {
    status: ExecStatus,
    token: u64,
    attempt: u32,
    owner: Option<u8>,
    lease_live: bool,
    available: bool,
    /// Visible (or soon visible) copies of the message.
    queued: u8,
    workers: Vec<Worker>,
    crashes_left: u8,
    pauses_left: u8,
    /// History: the newest token ever issued by a claim.
    issued: u64,
    /// History: accepted finishes into a final status.
    final_finishes: u8,
}

/// A transition, for counterexample traces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Worker `w` receives a message.
    Receive(u8),
    /// Worker `w` reads the execution and decides.
    Read(u8),
    /// Worker `w` CASes its claim.
    Claim(u8),
    /// Worker `w` renews its lease.
    Heartbeat(u8),
    /// Worker `w`'s handler returns (`true` = success).
    Complete(u8, bool),
    /// Worker `w` CASes its finish.
    Finish(u8),
    /// Worker `w` deletes its message.
    Delete(u8),
    /// Worker `w` is SIGKILLed (and restarted empty).
    Crash(u8),
    /// The lease runs out (crashed holder, or a pause).
    Expire,
    /// The retry backoff ends.
    BackoffEnds,
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// What an exploration found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exploration {
    /// Distinct reachable states.
    pub states: usize,
    /// Transitions between them.
    pub transitions: usize,
    /// Reachable states in which the execution is SUCCEEDED.
    pub succeeded_states: usize,
    /// Reachable states in which it is DEAD.
    pub dead_states: usize,
    /// The highest fencing token reached.
    pub max_token: u64,
    /// The first safety violation, with the trace that reaches it.
    pub safety: Option<Violation>,
    /// A reachable state from which no final state is reachable, with its trace.
    pub liveness: Option<Violation>,
}

/// A property that failed, and how to get there from the initial state (`A`: the model's
/// actions; the trigger-plane model uses its own).
pub type Violation<A = Action> = explore::Violation<A>;

/// One transition, with the safety property it breaks by itself, if any.
type Step = explore::Step<State, Action>;

fn final_status(s: ExecStatus) -> bool {
    matches!(s, ExecStatus::Succeeded | ExecStatus::Dead)
}

fn token_of(p: Phase) -> Option<u64> {
    match p {
        Phase::Running { token, .. } | Phase::Finishing { token, .. } => Some(token),
        _ => None,
    }
}

impl State {
    fn initial(b: &Bounds) -> State {
        State {
            status: ExecStatus::Ready,
            token: 0,
            attempt: 0,
            owner: None,
            lease_live: false,
            available: true,
            queued: b.messages,
            workers: vec![IDLE; usize::from(b.workers)],
            crashes_left: b.crashes,
            pauses_left: b.pauses,
            issued: 0,
            final_finishes: 0,
        }
    }

    /// Safety properties of a single state.
    fn check(&self) -> Option<String> {
        if self.final_finishes > 1 {
            return Some("two accepted finishes into a final status".into());
        }
        if !self.status.is_terminal() && self.queued == 0 && !self.workers.iter().any(|w| w.msg) {
            return Some(format!("execution {:?} has no message left: it would never run", self.status));
        }
        if self.token != self.issued {
            return Some(format!("stored token {} is not the newest issued {}", self.token, self.issued));
        }
        let current = self.workers.iter().filter(|w| token_of(w.phase) == Some(self.token)).count();
        if self.status == ExecStatus::Running && current > 1 {
            return Some("two workers hold the current token".into());
        }
        None
    }

    fn done(&self) -> bool {
        final_status(self.status) && self.queued == 0 && self.workers.iter().all(|w| *w == IDLE)
    }

    /// Whether a (non-crashed) worker holds the current token: its heartbeats keep the lease.
    fn live_holder(&self) -> Option<usize> {
        self.workers.iter().position(|w| token_of(w.phase) == Some(self.token))
    }

    /// Worker `w` moves to phase `p`, keeping its message.
    fn with_phase(&self, w: usize, p: Phase) -> State {
        let mut n = self.clone();
        n.workers[w].phase = p;
        n
    }

    /// Worker `w` goes idle; its message (if its receipt is still live) returns to the queue.
    fn release(&self, w: usize) -> State {
        let mut n = self.clone();
        if n.workers[w].msg {
            n.queued += 1;
        }
        n.workers[w] = IDLE;
        n
    }

    /// Moves the status, checking the edge against the authoritative list.
    fn transition(&mut self, to: ExecStatus) -> Option<String> {
        let from = self.status;
        self.status = to;
        (!from.can_move_to(to)).then(|| format!("{from:?} -> {to:?} is not an allowed edge"))
    }

    /// An accepted fenced write: its token must be the newest issued.
    fn fenced_write_ok(&self, token: u64) -> Option<String> {
        (token != self.issued)
            .then(|| format!("a write with stale token {token} was accepted (newest {})", self.issued))
    }

    fn successors(&self, b: &Bounds, flaw: Flaw) -> Vec<Step> {
        let mut out = Vec::new();
        for w in 0..self.workers.len() {
            self.worker_steps(w, b, flaw, &mut out);
            if self.workers[w] != IDLE && self.crashes_left > 0 {
                let mut n = self.release(w);
                n.crashes_left -= 1;
                out.push(Step::to(Action::Crash(w as u8), n));
            }
        }
        self.environment_steps(&mut out);
        out
    }

    /// What worker `w` does next, from its phase.
    fn worker_steps(&self, w: usize, b: &Bounds, flaw: Flaw, out: &mut Vec<Step>) {
        let wi = w as u8;
        match self.workers[w].phase {
            Phase::Idle => {
                if self.queued > 0 {
                    let mut n = self.clone();
                    n.queued -= 1;
                    n.workers[w] = Worker { phase: Phase::Received, msg: true };
                    out.push(Step::to(Action::Receive(wi), n));
                }
            }
            Phase::Received => out.push(Step::to(Action::Read(wi), self.read(w, flaw))),
            Phase::Claiming { from, token, attempt } => out.push(self.claim(w, flaw, from, token, attempt)),
            Phase::Running { token, attempt } => self.running_steps(w, b, token, attempt, out),
            Phase::Finishing { token, to } => out.push(self.finish(w, flaw, token, to)),
            Phase::Deleting => self.delete_steps(w, out),
        }
    }

    /// `next_step()` on a (strongly consistent) read.
    fn read(&self, w: usize, flaw: Flaw) -> State {
        let claim = Phase::Claiming { from: self.status, token: self.token, attempt: self.attempt };
        match self.status {
            ExecStatus::Ready => self.with_phase(w, claim),
            ExecStatus::RetryWait if self.available => self.with_phase(w, claim),
            ExecStatus::Running if !self.lease_live && flaw != Flaw::NoTakeover => self.with_phase(w, claim),
            // NotYet / Held: RetryAfter, the message comes back later.
            ExecStatus::RetryWait | ExecStatus::Running => self.release(w),
            _ => self.with_phase(w, Phase::Deleting),
        }
    }

    /// The claim's CAS on what the worker read.
    fn claim(&self, w: usize, flaw: Flaw, from: ExecStatus, token: u64, attempt: u32) -> Step {
        let wi = w as u8;
        let lease_ok = from != ExecStatus::Running || !self.lease_live;
        let avail_ok = from != ExecStatus::RetryWait || self.available;
        if self.status == from && self.token == token && lease_ok && avail_ok {
            let mut n = self.with_phase(w, Phase::Running { token: token + 1, attempt: attempt + 1 });
            let mut broken = n.transition(ExecStatus::Running);
            if token < self.issued {
                broken = Some(format!("claim issued token {} not above {}", token + 1, self.issued));
            }
            n.token = token + 1;
            n.issued = n.issued.max(token + 1);
            n.attempt = attempt + 1;
            n.owner = Some(wi);
            n.lease_live = true;
            Step { action: Action::Claim(wi), next: n, broken }
        } else if flaw == Flaw::DeleteOnRefusedClaim {
            Step::to(Action::Claim(wi), self.with_phase(w, Phase::Deleting))
        } else {
            // The store re-decides from the item the failed condition returned.
            Step::to(Action::Claim(wi), self.with_phase(w, Phase::Received))
        }
    }

    /// A running worker heartbeats (or learns it lost the lease) and its handler returns.
    fn running_steps(&self, w: usize, b: &Bounds, token: u64, attempt: u32, out: &mut Vec<Step>) {
        let wi = w as u8;
        let fenced = self.status == ExecStatus::Running && self.token == token && self.owner == Some(wi);
        if fenced && !self.lease_live {
            let mut n = self.clone();
            n.lease_live = true;
            out.push(Step { action: Action::Heartbeat(wi), next: n, broken: self.fenced_write_ok(token) });
        } else if !fenced {
            // Heartbeat refused: lease lost, result discarded, message left alone.
            out.push(Step::to(Action::Heartbeat(wi), self.release(w)));
        }
        let finishing = |to| self.with_phase(w, Phase::Finishing { token, to });
        if attempt > b.max_attempts {
            // Budget::may_start refuses the attempt: finish DEAD without running.
            out.push(Step::to(Action::Complete(wi, false), finishing(ExecStatus::Dead)));
        } else {
            if b.may_succeed {
                out.push(Step::to(Action::Complete(wi, true), finishing(ExecStatus::Succeeded)));
            }
            // A retryable failure: RETRY_WAIT, or DEAD on the last attempt.
            let to = if attempt >= b.max_attempts { ExecStatus::Dead } else { ExecStatus::RetryWait };
            out.push(Step::to(Action::Complete(wi, false), finishing(to)));
        }
    }

    /// The finish's CAS into `to`.
    fn finish(&self, w: usize, flaw: Flaw, token: u64, to: ExecStatus) -> Step {
        let wi = w as u8;
        let cond = if flaw == Flaw::FinishIgnoresToken {
            self.status == ExecStatus::Running
        } else {
            self.status == ExecStatus::Running && self.token == token && self.owner == Some(wi)
        };
        if !cond {
            return Step::to(Action::Finish(wi), self.release(w));
        }
        let mut n = if to == ExecStatus::RetryWait {
            // RetryAfter(backoff): the same message carries the retry.
            self.release(w)
        } else {
            self.with_phase(w, Phase::Deleting)
        };
        let broken = n.transition(to).or_else(|| self.fenced_write_ok(token));
        n.lease_live = false;
        if to == ExecStatus::RetryWait {
            n.available = false;
        } else {
            n.final_finishes += 1;
        }
        Step { action: Action::Finish(wi), next: n, broken }
    }

    /// The message's delete after a final status.
    fn delete_steps(&self, w: usize, out: &mut Vec<Step>) {
        let wi = w as u8;
        let mut n = self.clone();
        n.workers[w] = IDLE;
        if !self.workers[w].msg && n.queued > 0 {
            // A stale receipt: SQS may or may not delete the re-queued copy.
            let mut m = n.clone();
            m.queued -= 1;
            out.push(Step::to(Action::Delete(wi), m));
        }
        out.push(Step::to(Action::Delete(wi), n));
    }

    /// What happens to the execution without a worker's step: its lease runs out (a crashed
    /// holder, or a pause), its backoff ends.
    fn environment_steps(&self, out: &mut Vec<Step>) {
        if self.status == ExecStatus::Running && self.lease_live {
            match self.live_holder() {
                None => {
                    let mut n = self.clone();
                    n.lease_live = false;
                    out.push(Step::to(Action::Expire, n));
                }
                Some(h) if self.pauses_left > 0 => {
                    // The holder is paused past its lease: the lease and the message's
                    // visibility both run out; it keeps its phase and wakes up later.
                    let mut n = self.clone();
                    n.lease_live = false;
                    n.pauses_left -= 1;
                    if n.workers[h].msg {
                        n.workers[h].msg = false;
                        n.queued += 1;
                    }
                    out.push(Step::to(Action::Expire, n));
                }
                Some(_) => {}
            }
        }
        if self.status == ExecStatus::RetryWait && !self.available {
            let mut n = self.clone();
            n.available = true;
            out.push(Step::to(Action::BackoffEnds, n));
        }
    }
}

/// The claim protocol of the instance `b` with the protocol `flaw`, as the explorer sees it.
struct ClaimProtocol<'a> {
    b: &'a Bounds,
    flaw: Flaw,
}

impl Model for ClaimProtocol<'_> {
    type State = State;
    type Action = Action;

    fn initial_states(&self) -> Vec<State> {
        vec![State::initial(self.b)]
    }

    fn successors(&self, s: &State) -> Vec<Step> {
        s.successors(self.b, self.flaw)
    }

    fn invariant(&self, s: &State) -> Option<String> {
        s.check()
    }

    fn done(&self, s: &State) -> bool {
        s.done()
    }
}

/// Explores every reachable state of the instance `b` (with the protocol `flaw`), checking the
/// safety properties on the way and liveness at the end.
pub fn explore(b: &Bounds, flaw: Flaw) -> Exploration {
    let e = explore::explore(&ClaimProtocol { b, flaw });
    let states = &e.states;
    let liveness = e.liveness.map(|d| Violation {
        property: format!(
            "no final state reachable from status {:?}, token {}, attempt {}",
            states[d.state].status, states[d.state].token, states[d.state].attempt
        ),
        trace: d.trace,
    });
    Exploration {
        states: states.len(),
        transitions: e.transitions,
        succeeded_states: states.iter().filter(|s| s.status == ExecStatus::Succeeded).count(),
        dead_states: states.iter().filter(|s| s.status == ExecStatus::Dead).count(),
        max_token: states.iter().map(|s| s.token).max().unwrap_or(0),
        safety: e.safety,
        liveness,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: Bounds =
        Bounds { workers: 2, max_attempts: 2, crashes: 1, pauses: 1, messages: 1, may_succeed: true };

    #[test]
    fn the_initial_state_is_ready_with_its_messages() {
        let s = State::initial(&SMALL);
        assert_eq!((s.status, s.token, s.queued), (ExecStatus::Ready, 0, 1));
        assert!(s.check().is_none());
        assert!(!s.done());
    }

    #[test]
    fn a_lone_worker_without_faults_has_one_path_to_success() {
        // GIVEN one worker, no faults, a handler that always succeeds on the first attempt
        let b = Bounds { workers: 1, max_attempts: 1, crashes: 0, pauses: 0, messages: 1, may_succeed: true };
        let e = explore(&b, Flaw::None);
        // THEN the graph branches only on the handler's result (success, or DEAD after one try)
        assert!(e.safety.is_none() && e.liveness.is_none(), "{e:?}");
        assert!(e.succeeded_states > 0 && e.dead_states > 0);
        assert_eq!(e.max_token, 1);
    }
}
