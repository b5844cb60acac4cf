//! The workers: delivery, the worker's check of the job, claim and finish (two-worker mode),
//! the effect inbox, and the queue's and the workers' faults (waits, panics, lost and
//! duplicated messages).

use super::actions::Action;
use super::instance::Bounds;
use super::state::{Exec, State, Status, LIMIT_OLDER_EDIT, LIMIT_OLDER_PAUSE, MSG_CAP};
use super::variants::Flaw;

impl State {
    /// The inbox applies an execution's effect once per id.
    fn apply_effect(&mut self, b: &Bounds, flaw: Flaw, j: usize, m: u8, s: usize) {
        let spec = &b.jobs[j];
        let tenant = if flaw == Flaw::TenantlessExecutionId { 0xff } else { u32::from(spec.tenant) };
        let id = (tenant << 16) | ((spec.name as u32 & 0xff) << 8) | u32::from(m);
        if let Err(pos) = self.inbox.binary_search(&id) {
            self.inbox.insert(pos, id);
            if let Some(e) = &mut self.slots[s].exec {
                e.effects += 1;
            }
        }
    }

    /// The worker's check of the job at the delivery of a due, Ready, unheld execution `x` of
    /// job `j` at minute `m` (one strongly consistent read, in the delivery's step; the real
    /// `follow::at_claim` before the first claim): `false` to cancel it; otherwise it runs,
    /// amended to the job's definition if the check asked for that. A racing put's run that
    /// the check lets through against the job's history is marked with the documented limit it
    /// falls in.
    fn check_job(&self, b: &Bounds, flaw: Flaw, j: usize, m: u8, x: &mut Exec) -> bool {
        let cur = self.jobs[j];
        let slot = &self.slots[self.slot(b, j, m)];
        if flaw.checks_job() {
            if cur.paused_at(m) {
                return false; // Canceled, code `Paused`.
            }
            if flaw.checks_definition() && cur.def != x.def && cur.edited_before(m) {
                if b.jobs[j].mask(cur.def) & (1 << m) == 0 {
                    return false; // Canceled, code `Superseded`.
                }
                x.def = cur.def; // Amended.
            }
        }
        // A racing put the check let through (a broken variant without it is not excused).
        if x.raced {
            // Paused when the clock reached m.
            if flaw.checks_job() && slot.snap & 1 == 0 {
                x.limit |= LIMIT_OLDER_PAUSE;
            }
            // Another definition was in force at m.
            if flaw.checks_job() && flaw.checks_definition() && slot.snap >> 1 != x.def {
                x.limit |= LIMIT_OLDER_EDIT;
            }
        }
        true
    }

    /// The workers' and the queue's steps on every message due by now, then the two-worker
    /// finishes.
    pub(super) fn worker_successors(&self, b: &Bounds, flaw: Flaw, out: &mut Vec<(Action, State)>) {
        for j in 0..b.jobs.len() {
            for m in 0..b.horizon.min(self.now + 1) {
                let s = self.slot(b, j, m);
                let Some(e) = self.slots[s].exec else { continue };
                for k in 0..2 {
                    if e.msgs[k] == 0 {
                        continue;
                    }
                    // A copy received `k` times before, taken off the queue.
                    let mut taken = e;
                    taken.msgs[k] -= 1;
                    if !b.two_workers {
                        out.push((Action::Deliver(j as u8, m), self.deliver(b, flaw, j, m, e, taken)));
                    } else {
                        self.claim_steps(b, flaw, j, m, taken, out);
                    }
                    self.message_fault_steps(b, flaw, (j, m), k, taken, out);
                }
                let q = e.queued();
                if q > 0 && q < MSG_CAP && self.duplicate > 0 && !e.is_final() {
                    let mut n = self.clone();
                    n.duplicate -= 1;
                    if let Some(x) = &mut n.slots[s].exec {
                        x.msgs[0] += 1;
                    }
                    out.push((Action::DuplicateMessage(j as u8, m), n));
                }
            }
        }
        self.finish_steps(b, flaw, out);
    }

    /// A held execution at its delivery: the hold stands (canceled, `Paused`) if the job was
    /// paused at m by its last window, or that window began at or after m (the one that held it
    /// is no longer recorded); otherwise it is stale, released, and the fire is checked like
    /// any other (`follow::at_claim`). Without the job check, every hold stands.
    fn hold_stands(&self, flaw: Flaw, j: usize, m: u8) -> bool {
        let cur = self.jobs[j];
        !flaw.checks_job()
            || cur.paused_at(m)
            || cur.paused.is_some_and(|(from, _)| i16::from(from) >= i16::from(m))
    }

    /// One worker receives the message and handles it to the end: a Ready execution is
    /// canceled (held, or by the check of the job) or run, its effect through the inbox.
    fn deliver(&self, b: &Bounds, flaw: Flaw, j: usize, m: u8, e: Exec, taken: Exec) -> State {
        let s = self.slot(b, j, m);
        let mut n = self.clone();
        let mut x = taken;
        if x.status == Status::Ready {
            if x.held && self.hold_stands(flaw, j, m) || !self.check_job(b, flaw, j, m, &mut x) {
                x.status = Status::Canceled;
            } else {
                x.status = Status::Succeeded;
                x.runs += 1;
            }
        }
        n.slots[s].exec = Some(x);
        if x.status == Status::Succeeded && e.status == Status::Ready {
            n.apply_effect(b, flaw, j, m, s);
        }
        n
    }

    /// Two-worker mode: each idle worker may receive the message and claim the execution,
    /// with a lease written from its own clock.
    fn claim_steps(
        &self,
        b: &Bounds,
        flaw: Flaw,
        j: usize,
        m: u8,
        taken: Exec,
        out: &mut Vec<(Action, State)>,
    ) {
        let s = self.slot(b, j, m);
        for w in 0..2u8 {
            if self.workers[usize::from(w)].is_some() {
                continue;
            }
            let mut n = self.clone();
            let mut x = taken;
            let stands = x.held && self.hold_stands(flaw, j, m);
            if x.status == Status::Ready && (stands || !self.check_job(b, flaw, j, m, &mut x)) {
                x.status = Status::Canceled;
            }
            match x.status {
                Status::Ready | Status::Running { live: false, .. } => {
                    // The lease is written from the worker's clock: worker 0 runs 30 s slow,
                    // so with the flaw its lease has already ended.
                    let live = !(flaw == Flaw::LeaseFromLocalClock && w == 0);
                    x.token += 1;
                    x.status = Status::Running { owner: w, token: x.token, live };
                    x.runs += 1;
                    n.workers[usize::from(w)] = Some((s as u16, x.token));
                }
                // A live lease: the message comes back later (no change).
                Status::Running { live: true, .. } => continue,
                Status::Succeeded | Status::Canceled => {}
            }
            n.slots[s].exec = Some(x);
            out.push((Action::Claim(w, j as u8, m), n));
        }
    }

    /// The faults on a message copy of the fire `(j, m)` received `k` times: a wait
    /// (concurrency or tenant limit), a worker panic, a loss in the queue.
    fn message_fault_steps(
        &self,
        b: &Bounds,
        flaw: Flaw,
        (j, m): (usize, u8),
        k: usize,
        taken: Exec,
        out: &mut Vec<(Action, State)>,
    ) {
        let s = self.slot(b, j, m);
        let (jb, ready) = (j as u8, taken.status == Status::Ready);
        if ready && !taken.held && self.waits > 0 {
            let mut n = self.clone();
            n.waits -= 1;
            if flaw == Flaw::WaitsBurnReceives {
                let mut x = taken;
                if k + 1 < usize::from(b.max_receives) {
                    x.msgs[k + 1] += 1;
                }
                n.slots[s].exec = Some(x);
            }
            out.push((Action::Wait(jb, m), n));
        }
        if ready && self.panics > 0 {
            let mut n = self.clone();
            n.panics -= 1;
            if flaw == Flaw::PanicDeletesMessage {
                n.slots[s].exec = Some(taken);
            }
            out.push((Action::Panic(jb, m), n));
        }
        if self.lose > 0 {
            let mut n = self.clone();
            n.lose -= 1;
            n.slots[s].exec = Some(taken);
            out.push((Action::LoseMessage(jb, m), n));
        }
    }

    /// Two-worker mode: each worker holding an execution finishes it; a finish refused by the
    /// token leaves the message to come back.
    fn finish_steps(&self, b: &Bounds, flaw: Flaw, out: &mut Vec<(Action, State)>) {
        for w in 0..2u8 {
            let Some((s, token)) = self.workers[usize::from(w)] else { continue };
            let (s, j) = (usize::from(s), usize::from(s) / usize::from(b.horizon));
            let m = (s % usize::from(b.horizon)) as u8;
            let mut n = self.clone();
            n.workers[usize::from(w)] = None;
            let accepted = matches!(
                self.slots[s].exec.map(|e| e.status),
                Some(Status::Running { owner, token: t, .. }) if owner == w && t == token
            );
            if let Some(x) = &mut n.slots[s].exec {
                if accepted {
                    x.status = Status::Succeeded;
                } else {
                    // Refused finish: the message is left to come back.
                    x.send();
                }
            }
            if accepted {
                n.apply_effect(b, flaw, j, m, s);
            }
            out.push((Action::Finish(w), n));
        }
    }
}
