//! Every transition out of a state, in a fixed order: the clock, the start of a tick, the scan
//! or a tick crash, the API, the workers, the reconciler.

use super::actions::Action;
use super::instance::Bounds;
use super::state::{Scan, ScanStep, State, Status};
use super::variants::Flaw;

impl State {
    /// Every transition out of this state, in a fixed order (it decides which of several
    /// shortest traces the explorer reports, and which step a [`replay`](super::replay) takes).
    pub(super) fn successors(&self, b: &Bounds, flaw: Flaw) -> Vec<(Action, State)> {
        let mut out = Vec::new();
        if self.scan.is_none() {
            if self.now < b.horizon {
                out.push((Action::TickClock, self.tick_clock(b)));
            }
            let n = self.start_tick(b);
            if n != *self {
                out.push((Action::StartTick, n));
            }
        } else {
            self.scan_successors(b, flaw, &mut out);
            if self.tick_crashes > 0 {
                let mut n = self.clone();
                n.tick_crashes -= 1;
                n.scan = None;
                out.push((Action::TickCrash, n));
            }
        }
        self.api_successors(b, flaw, &mut out);
        self.worker_successors(b, flaw, &mut out);
        if flaw.reconciler() {
            out.extend(self.reconcile(b).map(|n| (Action::Reconcile, n)));
        }
        for (_, n) in &mut out {
            n.canonical();
        }
        // Self-loops (a repeated tick that changes nothing) add nothing to the graph.
        out.retain(|(_, n)| n != self);
        out
    }

    /// Forgets what no later step can read, so that states differing only there are one: the
    /// index entry of a final execution (the reconciler only drops it), and the shards' leave
    /// counts while no scan is in flight (a scan compares the count with itself only).
    fn canonical(&mut self) {
        for s in &mut self.slots {
            if let Some(e) = &mut s.exec {
                if e.is_final() {
                    e.indexed = false;
                }
            }
        }
        if self.scan.is_none() {
            self.left.iter_mut().for_each(|l| *l = 0);
        }
    }

    /// The clock moves to the next minute, and each job's state then is recorded in its slot
    /// (what the fire of that minute is owed by).
    fn tick_clock(&self, b: &Bounds) -> State {
        let mut n = self.clone();
        n.now += 1;
        if n.now < b.horizon {
            for j in 0..b.jobs.len() {
                let s = n.slot(b, j, n.now);
                n.slots[s].snap = u8::from(n.jobs[j].enabled) | (n.jobs[j].def << 1);
            }
        }
        n
    }

    /// A tick starts: each shard's window `min(wm + 1, now) ..= now + 1`, at most
    /// `max_buckets` long, and a fresh catch-up budget.
    fn start_tick(&self, b: &Bounds) -> State {
        let mut n = self.clone();
        let windows = self
            .wm
            .iter()
            .map(|&wm| {
                let first = (i16::from(wm) + 1).min(i16::from(self.now)).max(0) as u8;
                let last = (self.now + 1).min(first + b.max_buckets - 1);
                (first, last)
            })
            .collect();
        let tenants = b.jobs.iter().map(|j| usize::from(j.tenant) + 1).max().unwrap_or(1);
        n.scan = Some(Scan {
            shard: 0,
            step: ScanStep::ReadFirst,
            windows,
            reads: [Vec::new(), Vec::new()],
            used: vec![0; tenants],
            held_at: None,
            every_held: false,
            failed: 0,
            left_seen: 0,
        });
        n
    }

    /// The reconciler re-sends every Ready execution at least a minute overdue that is in the
    /// `open` index, which is all it reads: it does not know of executions outside the index
    /// (every-minute fires until the verification pass or a leaving job indexes them). It still
    /// re-sends only when no message is queued: the real one cannot know that, and re-sends a
    /// copy anyway, which the claim absorbs; modelling those extra copies multiplied the states
    /// of the every-minute instances by about 80 (see the module docs). `None` if there is none.
    fn reconcile(&self, b: &Bounds) -> Option<State> {
        let mut n = self.clone();
        let mut any = false;
        for j in 0..b.jobs.len() {
            for m in 0..b.horizon.min(self.now) {
                let s = self.slot(b, j, m);
                if let Some(e) = &mut n.slots[s].exec {
                    if e.status == Status::Ready && e.indexed && e.queued() == 0 {
                        e.send();
                        any = true;
                    }
                }
            }
        }
        any.then_some(n)
    }
}
