//! The API's calls on a job: pause, resume, edit, and the dispatch that follows a resume or an
//! edit as a separate step.

use super::actions::Action;
use super::instance::{Bounds, Class};
use super::scan::{GroupCtx, Outcome};
use super::state::{first_from, JobDyn, State, Status, NONE};
use super::variants::Flaw;

impl State {
    /// The API's calls on each job: the pending dispatch after a resume or edit (one call per
    /// job at a time), else a pause, a resume or an edit while their budgets last.
    pub(super) fn api_successors(&self, b: &Bounds, flaw: Flaw, out: &mut Vec<(Action, State)>) {
        for j in 0..b.jobs.len() {
            if b.jobs[j].poison {
                continue;
            }
            if let Some((api_now, written)) = self.pending[j] {
                self.dispatch_one(b, flaw, j, api_now, written, out);
                continue;
            }
            let cur = self.jobs[j];
            if cur.enabled && self.pauses > 0 {
                out.push((Action::Pause(j as u8), self.pause(b, flaw, j)));
            }
            if !cur.enabled && self.resumes > 0 {
                out.push((Action::Resume(j as u8), self.resume(b, j)));
            }
            if cur.enabled && cur.def == 1 && self.edits > 0 {
                out.push((Action::Edit(j as u8), self.edit(b, flaw, j)));
            }
        }
    }

    /// The API dispatches job `j` as it wrote it at `api_now` (no catch-up budget).
    fn dispatch_one(
        &self,
        b: &Bounds,
        flaw: Flaw,
        j: usize,
        api_now: u8,
        written: JobDyn,
        out: &mut Vec<(Action, State)>,
    ) {
        let jb = j as u8;
        let fails: &[bool] = if self.send_fails > 0 { &[false, true] } else { &[false] };
        for &send_fails in fails {
            let mut n = self.clone();
            n.pending[j] = None;
            let cx =
                GroupCtx { now: api_now, last: api_now + 1, floor: None, with_budget: false, send_fails };
            let mut used = vec![0; 256];
            match n.dispatch(b, flaw, &[(jb, written)], &cx, &mut used) {
                Outcome::NotApplicable => continue,
                Outcome::Failed => n.send_fails -= 1,
                Outcome::Done { .. } => {}
            }
            out.push((Action::DispatchOne { job: jb, send_fails }, n));
        }
    }

    /// Fires of job `j` up to now with no execution are no longer owed: the pause or edit
    /// dropped them before they had one.
    fn excuse_unplanned(&mut self, b: &Bounds, j: usize) {
        for m in 0..=self.now.min(b.horizon.saturating_sub(1)) {
            let s = self.slot(b, j, m);
            if self.slots[s].exec.is_none() {
                self.slots[s].excused = true;
            }
        }
    }

    /// A job in the every-minute class leaves it (pause, edit): its open executions are indexed
    /// (`verify::before_leaving`, and after the change commits `verify::after_leaving`, which
    /// first counts the leave on the shard's watermark item; one step here, as API calls are
    /// atomic in the model).
    fn leave_every(&mut self, b: &Bounds, flaw: Flaw, j: usize) {
        if self.jobs[j].class == Class::Every && self.jobs[j].enabled {
            self.index_open(b, j);
            if flaw != Flaw::RacingPutUnindexed {
                self.left[usize::from(b.jobs[j].shard)] += 1;
            }
        }
    }

    /// Pause: disable, leave the partitions, hold the queued-ahead Ready executions.
    fn pause(&self, b: &Bounds, flaw: Flaw, j: usize) -> State {
        let cur = self.jobs[j];
        let mut n = self.clone();
        n.leave_every(b, flaw, j);
        n.pauses -= 1;
        n.jobs[j] = JobDyn {
            enabled: false,
            version: cur.version + 1,
            class: Class::Off,
            paused: Some((self.now as i8, None)),
            ..cur
        };
        n.excuse_unplanned(b, j);
        for m in self.now + 1..b.horizon {
            let s = n.slot(b, j, m);
            if let Some(e) = &mut n.slots[s].exec {
                if e.status == Status::Ready {
                    if flaw == Flaw::PauseCancelsQueued {
                        e.status = Status::Canceled;
                    } else {
                        e.held = true;
                    }
                }
            }
        }
        n
    }

    /// Resume: enable at the first fire after now, in admission, release the held executions
    /// ahead, close the pause window; the API's dispatch follows.
    fn resume(&self, b: &Bounds, j: usize) -> State {
        let cur = self.jobs[j];
        let mut n = self.clone();
        n.resumes -= 1;
        let next = first_from(b.jobs[j].mask(cur.def), i16::from(self.now) + 1);
        let class = if next == NONE { Class::Off } else { Class::Admission };
        let paused = cur.paused.map(|(from, _)| (from, Some(self.now)));
        let w = JobDyn { enabled: true, version: cur.version + 1, next, class, paused, ..cur };
        n.jobs[j] = w;
        for m in self.now + 1..b.horizon {
            let s = n.slot(b, j, m);
            if let Some(e) = &mut n.slots[s].exec {
                if e.status == Status::Ready {
                    e.held = false;
                }
            }
        }
        n.pending[j] = Some((self.now, w));
        n
    }

    /// Edit to v2: in admission, queued-ahead Ready executions amended to v2 on a v2 minute and
    /// canceled on the others; the API's dispatch follows.
    fn edit(&self, b: &Bounds, flaw: Flaw, j: usize) -> State {
        let spec = &b.jobs[j];
        let cur = self.jobs[j];
        let mut n = self.clone();
        n.leave_every(b, flaw, j);
        n.edits -= 1;
        let next = first_from(spec.v2, i16::from(self.now) + 1);
        let class = if next == NONE { Class::Off } else { Class::Admission };
        let w = JobDyn {
            enabled: true,
            version: cur.version + 1,
            def: 2,
            next,
            class,
            edited: self.now as i8,
            ..cur
        };
        n.jobs[j] = w;
        n.excuse_unplanned(b, j);
        if flaw != Flaw::EditKeepsOldQueued {
            for m in self.now + 1..b.horizon {
                let s = n.slot(b, j, m);
                if let Some(e) = &mut n.slots[s].exec {
                    if e.status == Status::Ready {
                        if spec.v2 & (1 << m) != 0 {
                            e.def = 2;
                        } else {
                            e.status = Status::Canceled;
                        }
                    }
                }
            }
        }
        n.pending[j] = Some((self.now, w));
        n
    }
}
