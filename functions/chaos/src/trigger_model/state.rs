//! The whole system's state: the jobs' stored, mutable part, one slot per (job, fire minute)
//! with its execution and the history the properties need, the scan in flight, the API's
//! pending dispatches, the workers, and what is left of each fault budget.

use super::instance::{Bounds, Class};

/// Executions' messages beyond this count coalesce: more copies are only more duplicates.
pub(super) const MSG_CAP: u8 = 2;
/// Documented limit 1: a racing put (unheld) of a fire whose job was paused at its minute runs
/// because that pause is no longer the job's last window (a resume and a second pause came
/// before the delivery).
pub(super) const LIMIT_OLDER_PAUSE: u8 = 1;
/// Documented limit 2: a racing put runs a definition that was not in force at its minute (a
/// second edit came before the delivery: the job keeps only its last edit's minute). Not
/// reachable in the model, whose jobs are edited once; kept as a check of the check.
pub(super) const LIMIT_OLDER_EDIT: u8 = 2;
/// `next` of a job whose schedule is exhausted.
pub(super) const NONE: u8 = u8::MAX;

/// A job's stored, mutable part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct JobDyn {
    pub(super) enabled: bool,
    pub(super) version: u8,
    pub(super) def: u8,
    pub(super) next: u8,
    pub(super) class: Class,
    /// The minute the current definition took effect (the job item's `edited_at`: its creation
    /// or its last edit; a pause or resume does not move it). -1: before minute 0.
    pub(super) edited: i8,
    /// The job's last pause window (`paused`): the minute of the pause (-1: before minute 0)
    /// and, once resumed, the minute of the resume. A new pause replaces it.
    pub(super) paused: Option<(i8, Option<u8>)>,
}

impl JobDyn {
    /// `Job::paused_at(m:00)` in model minutes. A pause or resume at minute t happens after t:00
    /// (the clock reached t first), so `from <= m:00` is `from < m` and `m:00 < until` is
    /// `m <= until`.
    pub(super) fn paused_at(&self, m: u8) -> bool {
        let m = i16::from(m);
        match self.paused {
            Some((from, None)) => !self.enabled && i16::from(from) < m,
            Some((from, Some(until))) => i16::from(from) < m && m <= i16::from(until),
            None => false,
        }
    }

    /// An edit at minute e happens after e:00: `edited_at <= m:00` is `e < m`.
    pub(super) fn edited_before(&self, m: u8) -> bool {
        i16::from(self.edited) < i16::from(m)
    }
}

/// An execution's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Status {
    Ready,
    Running { owner: u8, token: u8, live: bool },
    Succeeded,
    Canceled,
}

/// An execution (at most one per job and fire minute: the unique key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct Exec {
    pub(super) status: Status,
    pub(super) held: bool,
    pub(super) def: u8,
    /// Queued messages by receive count (0, 1).
    pub(super) msgs: [u8; 2],
    /// Effects applied through the inbox.
    pub(super) effects: u8,
    /// Handler runs started.
    pub(super) runs: u8,
    /// Put by a scan that read the job before a pause, resume or edit (a racing put).
    pub(super) raced: bool,
    /// In the reconciler's `open` index: put so (admission, bucket and API dispatches), or
    /// indexed later (the verification pass, a job leaving the every-minute class). Only these
    /// are ever re-sent.
    pub(super) indexed: bool,
    /// The documented limits it ran in (`LIMIT_OLDER_PAUSE`, `LIMIT_OLDER_EDIT`).
    pub(super) limit: u8,
    pub(super) token: u8,
}

impl Exec {
    pub(super) fn queued(&self) -> u8 {
        self.msgs[0] + self.msgs[1]
    }

    pub(super) fn send(&mut self) {
        if self.queued() < MSG_CAP {
            self.msgs[0] += 1;
        }
    }

    pub(super) fn is_final(&self) -> bool {
        matches!(self.status, Status::Succeeded | Status::Canceled)
    }
}

/// Per (job, minute): the execution and the history the properties need.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub(super) struct Slot {
    pub(super) exec: Option<Exec>,
    /// When the clock reached the minute: 0 = not yet, else bit 0 enabled, bits 1.. definition.
    pub(super) snap: u8,
    /// A pause or edit at a minute `>= m` dropped the fire before it had an execution.
    pub(super) excused: bool,
    /// A completed tick had the fire in its window while it was on time.
    pub(super) seen: bool,
}

/// The next step of a shard's scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum ScanStep {
    ReadFirst,
    ReadSecond,
    DispatchFirst,
    DispatchSecond,
    Walk(u8),
    Watermark,
}

/// A tick's scan in flight.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct Scan {
    pub(super) shard: u8,
    pub(super) step: ScanStep,
    /// Per shard: the window `(first, last)` computed when the tick started.
    pub(super) windows: Vec<(u8, u8)>,
    pub(super) reads: [Vec<(u8, JobDyn)>; 2],
    /// Catch-up budget used this tick, per tenant.
    pub(super) used: Vec<u8>,
    pub(super) held_at: Option<u8>,
    pub(super) every_held: bool,
    /// Shards whose scan failed this tick (bit per shard).
    pub(super) failed: u8,
    /// The shard's count of jobs that left the every-minute class, as read with its position
    /// when its scan began (`Position::left`).
    pub(super) left_seen: u8,
}

/// The whole system: the clock, the watermarks, the jobs, the executions with their history,
/// what is in flight, and what is left of each fault budget.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct State {
    pub(super) now: u8,
    pub(super) wm: Vec<i8>,
    /// Per shard: the last minute the verification pass checked (-1: none).
    pub(super) verified: Vec<i8>,
    /// Per shard: how many jobs left its every-minute class (the watermark item's `lv`).
    pub(super) left: Vec<u8>,
    pub(super) jobs: Vec<JobDyn>,
    pub(super) slots: Vec<Slot>,
    pub(super) scan: Option<Scan>,
    /// Per job: an API dispatch_one still to run: the API's `now` and the job it wrote.
    pub(super) pending: Vec<Option<(u8, JobDyn)>>,
    /// Execution ids whose effect the inbox has applied.
    pub(super) inbox: Vec<u32>,
    /// Two-worker mode: what each worker holds (slot, token).
    pub(super) workers: [Option<(u16, u8)>; 2],
    pub(super) pauses: u8,
    pub(super) resumes: u8,
    pub(super) edits: u8,
    pub(super) lose: u8,
    pub(super) duplicate: u8,
    pub(super) send_fails: u8,
    pub(super) tick_crashes: u8,
    pub(super) waits: u8,
    pub(super) panics: u8,
}

/// Takes `n` catch-up tokens from a tenant's `used`, or none (`CatchUpBudget::try_take`).
pub(super) fn try_take(used: &mut u8, n: u8, per_tenant: u8) -> bool {
    if n == 0 {
        return true;
    }
    let alone = *used == 0 && n > per_tenant;
    if *used + n > per_tenant && !alone {
        return false;
    }
    *used += n;
    true
}

/// The first fire minute `>= from` in `mask`, or [`NONE`].
pub(super) fn first_from(mask: u16, from: i16) -> u8 {
    (from.max(0)..16).find(|&m| mask & (1 << m) != 0).map_or(NONE, |m| m as u8)
}

impl State {
    /// Every job at its start, the clock at minute 0, nothing planned.
    pub(super) fn initial(b: &Bounds) -> State {
        let h = usize::from(b.horizon);
        let jobs: Vec<JobDyn> = b
            .jobs
            .iter()
            .map(|j| {
                let next = if j.enabled { first_from(j.v1, 0) } else { NONE };
                let class = match j.start {
                    _ if next == NONE => Class::Off,
                    Class::Bucket(_) => Class::Bucket(next),
                    c => c,
                };
                // A job paused at the start was paused before minute 0 (jobs are created enabled).
                let paused = (!j.enabled).then_some((-1, None));
                JobDyn { enabled: j.enabled, version: 1, def: 1, next, class, edited: -1, paused }
            })
            .collect();
        let mut slots = vec![Slot::default(); b.jobs.len() * h];
        for (j, d) in jobs.iter().enumerate() {
            if h > 0 {
                slots[j * h].snap = u8::from(d.enabled) | (d.def << 1);
            }
        }
        State {
            now: 0,
            wm: vec![-1; usize::from(b.shards)],
            verified: vec![-1; usize::from(b.shards)],
            left: vec![0; usize::from(b.shards)],
            jobs,
            slots,
            scan: None,
            pending: vec![None; b.jobs.len()],
            inbox: Vec::new(),
            workers: [None, None],
            pauses: b.pauses,
            resumes: b.resumes,
            edits: b.edits,
            lose: b.lose,
            duplicate: b.duplicate,
            send_fails: b.send_fails,
            tick_crashes: b.tick_crashes,
            waits: b.waits,
            panics: b.panics,
        }
    }

    /// Puts job `j`'s open executions after the shard's verified minute into the `open` index
    /// (`track_job_since`: the job leaves the class the verification pass reads).
    pub(super) fn index_open(&mut self, b: &Bounds, j: usize) {
        let since = i16::from(self.verified[usize::from(b.jobs[j].shard)]);
        for m in 0..b.horizon {
            let s = self.slot(b, j, m);
            if let Some(e) = &mut self.slots[s].exec {
                if i16::from(m) > since && !e.is_final() {
                    e.indexed = true;
                }
            }
        }
    }

    /// The index of the slot of job `j`'s fire at minute `m`.
    pub(super) fn slot(&self, b: &Bounds, j: usize, m: u8) -> usize {
        j * usize::from(b.horizon) + usize::from(m)
    }
}

#[cfg(test)]
mod tests {
    use super::super::instance::every;
    use super::*;

    #[test]
    fn the_budget_lets_a_large_job_through_alone() {
        let mut used = 0;
        assert!(try_take(&mut used, 3, 1));
        assert!(!try_take(&mut used, 1, 1));
        assert!(try_take(&mut used, 0, 1));
    }

    #[test]
    fn first_from_finds_the_next_fire() {
        assert_eq!(first_from(0b1010, 0), 1);
        assert_eq!(first_from(0b1010, 2), 3);
        assert_eq!(first_from(0b1010, 4), NONE);
        assert_eq!(every(3), 0b111);
    }
}
