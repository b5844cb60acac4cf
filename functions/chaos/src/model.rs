//! An exhaustive check of the claim / heartbeat / finish / takeover protocol for small instances.
//!
//! Why a model as well as the chaos run: a seeded run samples a few thousand interleavings; the
//! protocol's bugs live in rare ones (a claim that lands between a zombie's heartbeat and its
//! finish, a crash between a finish and the message delete). For one execution and two or three
//! workers, every interleaving can be enumerated: this module does it with a breadth-first
//! search over the whole state graph.
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
//!   the message to the queue (visibility timeout), as `worker.rs` and `ecs.rs` do.
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

use std::collections::{HashMap, VecDeque};
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation<A = Action> {
    /// Which property.
    pub property: String,
    /// The actions from the initial state.
    pub trace: Vec<A>,
}

impl<A: fmt::Display> fmt::Display for Violation<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} after [", self.property)?;
        for (i, a) in self.trace.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{a}")?;
        }
        f.write_str("]")
    }
}

struct Step {
    action: Action,
    next: State,
    /// A safety property this transition breaks.
    broken: Option<String>,
}

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
        let mut push = |action: Action, next: State, broken: Option<String>| {
            out.push(Step { action, next, broken });
        };
        for w in 0..self.workers.len() {
            let wi = w as u8;
            match self.workers[w].phase {
                Phase::Idle => {
                    if self.queued > 0 {
                        let mut n = self.clone();
                        n.queued -= 1;
                        n.workers[w] = Worker { phase: Phase::Received, msg: true };
                        push(Action::Receive(wi), n, None);
                    }
                }
                Phase::Received => {
                    // next_step() on a (strongly consistent) read.
                    let claim =
                        Phase::Claiming { from: self.status, token: self.token, attempt: self.attempt };
                    let n = match self.status {
                        ExecStatus::Ready => self.with_phase(w, claim),
                        ExecStatus::RetryWait if self.available => self.with_phase(w, claim),
                        ExecStatus::Running if !self.lease_live && flaw != Flaw::NoTakeover => {
                            self.with_phase(w, claim)
                        }
                        // NotYet / Held: RetryAfter, the message comes back later.
                        ExecStatus::RetryWait | ExecStatus::Running => self.release(w),
                        _ => self.with_phase(w, Phase::Deleting),
                    };
                    push(Action::Read(wi), n, None);
                }
                Phase::Claiming { from, token, attempt } => {
                    let lease_ok = from != ExecStatus::Running || !self.lease_live;
                    let avail_ok = from != ExecStatus::RetryWait || self.available;
                    if self.status == from && self.token == token && lease_ok && avail_ok {
                        let mut n =
                            self.with_phase(w, Phase::Running { token: token + 1, attempt: attempt + 1 });
                        let mut broken = n.transition(ExecStatus::Running);
                        if token < self.issued {
                            broken =
                                Some(format!("claim issued token {} not above {}", token + 1, self.issued));
                        }
                        n.token = token + 1;
                        n.issued = n.issued.max(token + 1);
                        n.attempt = attempt + 1;
                        n.owner = Some(wi);
                        n.lease_live = true;
                        push(Action::Claim(wi), n, broken);
                    } else if flaw == Flaw::DeleteOnRefusedClaim {
                        push(Action::Claim(wi), self.with_phase(w, Phase::Deleting), None);
                    } else {
                        // The store re-decides from the item the failed condition returned.
                        push(Action::Claim(wi), self.with_phase(w, Phase::Received), None);
                    }
                }
                Phase::Running { token, attempt } => {
                    let fenced =
                        self.status == ExecStatus::Running && self.token == token && self.owner == Some(wi);
                    if fenced && !self.lease_live {
                        let mut n = self.clone();
                        n.lease_live = true;
                        push(Action::Heartbeat(wi), n, self.fenced_write_ok(token));
                    } else if !fenced {
                        // Heartbeat refused: lease lost, result discarded, message left alone.
                        push(Action::Heartbeat(wi), self.release(w), None);
                    }
                    if attempt > b.max_attempts {
                        // Budget::may_start refuses the attempt: finish DEAD without running.
                        let n = self.with_phase(w, Phase::Finishing { token, to: ExecStatus::Dead });
                        push(Action::Complete(wi, false), n, None);
                    } else {
                        if b.may_succeed {
                            let n = self.with_phase(w, Phase::Finishing { token, to: ExecStatus::Succeeded });
                            push(Action::Complete(wi, true), n, None);
                        }
                        // A retryable failure: RETRY_WAIT, or DEAD on the last attempt.
                        let to =
                            if attempt >= b.max_attempts { ExecStatus::Dead } else { ExecStatus::RetryWait };
                        push(
                            Action::Complete(wi, false),
                            self.with_phase(w, Phase::Finishing { token, to }),
                            None,
                        );
                    }
                }
                Phase::Finishing { token, to } => {
                    let cond = if flaw == Flaw::FinishIgnoresToken {
                        self.status == ExecStatus::Running
                    } else {
                        self.status == ExecStatus::Running && self.token == token && self.owner == Some(wi)
                    };
                    if cond {
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
                        push(Action::Finish(wi), n, broken);
                    } else {
                        push(Action::Finish(wi), self.release(w), None);
                    }
                }
                Phase::Deleting => {
                    if self.workers[w].msg {
                        let mut n = self.clone();
                        n.workers[w] = IDLE;
                        push(Action::Delete(wi), n, None);
                    } else {
                        // A stale receipt: SQS may or may not delete the re-queued copy.
                        let mut n = self.clone();
                        n.workers[w] = IDLE;
                        if n.queued > 0 {
                            let mut m = n.clone();
                            m.queued -= 1;
                            push(Action::Delete(wi), m, None);
                        }
                        push(Action::Delete(wi), n, None);
                    }
                }
            }
            if self.workers[w] != IDLE && self.crashes_left > 0 {
                let mut n = self.release(w);
                n.crashes_left -= 1;
                push(Action::Crash(wi), n, None);
            }
        }
        if self.status == ExecStatus::Running && self.lease_live {
            match self.live_holder() {
                None => {
                    let mut n = self.clone();
                    n.lease_live = false;
                    push(Action::Expire, n, None);
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
                    push(Action::Expire, n, None);
                }
                Some(_) => {}
            }
        }
        if self.status == ExecStatus::RetryWait && !self.available {
            let mut n = self.clone();
            n.available = true;
            push(Action::BackoffEnds, n, None);
        }
        out
    }
}

/// Explores every reachable state of the instance `b` (with the protocol `flaw`), checking the
/// safety properties on the way and liveness at the end.
pub fn explore(b: &Bounds, flaw: Flaw) -> Exploration {
    let init = State::initial(b);
    let mut index: HashMap<State, usize> = HashMap::new();
    let mut states: Vec<State> = Vec::new();
    // For traces: the predecessor and action of each state's first discovery.
    let mut parent: Vec<Option<(usize, Action)>> = Vec::new();
    let mut edges: Vec<Vec<usize>> = Vec::new();
    let mut queue = VecDeque::new();
    index.insert(init.clone(), 0);
    states.push(init);
    parent.push(None);
    edges.push(Vec::new());
    queue.push_back(0);
    let mut safety = None;
    let mut transitions = 0;
    let trace = |parent: &[Option<(usize, Action)>], mut i: usize, last: Option<Action>| {
        let mut t: Vec<Action> = last.into_iter().collect();
        while let Some((p, a)) = parent[i] {
            t.push(a);
            i = p;
        }
        t.reverse();
        t
    };
    if let Some(p) = states[0].check() {
        safety = Some(Violation { property: p, trace: vec![] });
    }
    while let Some(i) = queue.pop_front() {
        let here = states[i].clone();
        for step in here.successors(b, flaw) {
            transitions += 1;
            if safety.is_none() {
                if let Some(p) = step.broken.clone() {
                    safety = Some(Violation { property: p, trace: trace(&parent, i, Some(step.action)) });
                }
            }
            let j = match index.get(&step.next) {
                Some(&j) => j,
                None => {
                    let j = states.len();
                    if safety.is_none() {
                        if let Some(p) = step.next.check() {
                            safety =
                                Some(Violation { property: p, trace: trace(&parent, i, Some(step.action)) });
                        }
                    }
                    index.insert(step.next.clone(), j);
                    states.push(step.next);
                    parent.push(Some((i, step.action)));
                    edges.push(Vec::new());
                    queue.push_back(j);
                    j
                }
            };
            edges[i].push(j);
        }
    }
    // Liveness: backward reachability from the final states over reversed edges.
    let mut rev: Vec<Vec<usize>> = vec![Vec::new(); states.len()];
    for (i, out) in edges.iter().enumerate() {
        for &j in out {
            rev[j].push(i);
        }
    }
    let mut good = vec![false; states.len()];
    let mut work: Vec<usize> = (0..states.len()).filter(|&i| states[i].done()).collect();
    for &i in &work {
        good[i] = true;
    }
    while let Some(j) = work.pop() {
        for &i in &rev[j] {
            if !good[i] {
                good[i] = true;
                work.push(i);
            }
        }
    }
    let liveness = good.iter().position(|g| !g).map(|i| Violation {
        property: format!(
            "no final state reachable from status {:?}, token {}, attempt {}",
            states[i].status, states[i].token, states[i].attempt
        ),
        trace: trace(&parent, i, None),
    });
    Exploration {
        states: states.len(),
        transitions,
        succeeded_states: states.iter().filter(|s| s.status == ExecStatus::Succeeded).count(),
        dead_states: states.iter().filter(|s| s.status == ExecStatus::Dead).count(),
        max_token: states.iter().map(|s| s.token).max().unwrap_or(0),
        safety,
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
