//! The tick's scan of the shards, step by step: the partition reads, the group dispatches
//! (plan, put, send, CAS advance, under the catch-up budget), the bucket walk and the
//! watermark.

use super::actions::Action;
use super::instance::{every, Bounds, Class, JobSpec, Partition, Policy};
use super::state::{first_from, try_take, Exec, JobDyn, Scan, ScanStep, State, Status, NONE};
use super::variants::Flaw;

/// How one group dispatch is run.
pub(super) struct GroupCtx {
    pub(super) now: u8,
    pub(super) last: u8,
    /// `Every` group: the floor `watermark + 1`.
    pub(super) floor: Option<i16>,
    pub(super) with_budget: bool,
    pub(super) send_fails: bool,
}

/// The result of a group dispatch.
pub(super) enum Outcome {
    /// Puts, sends, advances done; `all_done` false if a job was deferred.
    Done { all_done: bool, every_held: bool },
    /// The dispatch failed (poison job, failed send): the shard's scan fails.
    Failed,
    /// A send failure was asked for but nothing was to be sent.
    NotApplicable,
}

impl State {
    /// Plans, puts, sends and advances one group of jobs (read earlier as `items`).
    pub(super) fn dispatch(
        &mut self,
        b: &Bounds,
        flaw: Flaw,
        items: &[(u8, JobDyn)],
        cx: &GroupCtx,
        used: &mut [u8],
    ) -> Outcome {
        if items.iter().any(|&(j, _)| b.jobs[usize::from(j)].poison) {
            return Outcome::Failed;
        }
        let plan = plan_group(b, flaw, items, cx, used);
        // Every-minute puts carry no `open` index entry (the verification pass finds them).
        let sends = self.put(b, &plan.puts, cx.floor.is_none());
        if cx.send_fails {
            return if sends.is_empty() { Outcome::NotApplicable } else { Outcome::Failed };
        }
        for &s in &sends {
            if let Some(e) = &mut self.slots[s].exec {
                e.send();
            }
        }
        self.advance(b, &plan.advances);
        self.move_deferred(b, &plan.moves);
        Outcome::Done { all_done: plan.all_done, every_held: plan.every_held }
    }

    /// The puts of a group, plain put-if-absent (not fenced on the version the scan read): the
    /// slots to send a message for.
    fn put(&mut self, b: &Bounds, puts: &[(usize, JobDyn, Vec<u8>)], indexed: bool) -> Vec<usize> {
        let mut sends = Vec::new();
        for (ju, r, fires) in puts {
            for &m in fires {
                let s = self.slot(b, *ju, m);
                match &self.slots[s].exec {
                    None => {
                        self.slots[s].exec = Some(Exec {
                            status: Status::Ready,
                            held: false,
                            def: r.def,
                            msgs: [0, 0],
                            effects: 0,
                            runs: 0,
                            token: 0,
                            raced: self.jobs[*ju].version != r.version,
                            indexed,
                            limit: 0,
                        });
                        sends.push(s);
                    }
                    // A repeated put that finds the execution READY sends again.
                    Some(e) if e.status == Status::Ready => sends.push(s),
                    Some(_) => {}
                }
            }
        }
        sends
    }

    /// CAS on (version, read position): an advance lost to a pause, resume or edit is dropped
    /// and nothing is repaired (the worker checks the job at delivery).
    fn advance(&mut self, b: &Bounds, advances: &[(usize, JobDyn, u8)]) {
        for &(j, r, next) in advances {
            let cur = &mut self.jobs[j];
            if cur.version != r.version {
                continue;
            }
            if cur.next == r.next && cur.class != Class::Off {
                cur.next = next;
                cur.class = if next == NONE {
                    Class::Off
                } else if b.jobs[j].mask(r.def) & every(b.horizon) == every(b.horizon) {
                    Class::Every
                } else {
                    Class::Bucket(next)
                };
            }
        }
    }

    /// A deferred every-minute job moves to admission at its first unplanned fire (its open
    /// executions indexed first: it leaves the class the verification pass reads).
    fn move_deferred(&mut self, b: &Bounds, moves: &[(usize, JobDyn, u8)]) {
        for &(j, r, next) in moves {
            if self.jobs[j].version == r.version && self.jobs[j].class == Class::Every {
                self.index_open(b, j);
                let cur = &mut self.jobs[j];
                cur.next = next;
                cur.class = if next == NONE { Class::Off } else { Class::Admission };
            }
        }
    }

    /// The shard's scan is over (done or failed): the next shard, or the end of the tick.
    fn next_shard(&mut self, b: &Bounds, mut scan: Scan, stop: bool) {
        if !stop && scan.shard + 1 < b.shards {
            scan.shard += 1;
            scan.step = ScanStep::ReadFirst;
            scan.reads = [Vec::new(), Vec::new()];
            scan.held_at = None;
            scan.every_held = false;
            self.scan = Some(scan);
            return;
        }
        // The tick ran to its end: on-time fires in the windows of shards that did not fail
        // are owed, whatever their policy.
        for (j, spec) in b.jobs.iter().enumerate() {
            if scan.failed & (1 << spec.shard) != 0 {
                continue;
            }
            let (first, last) = scan.windows[usize::from(spec.shard)];
            for m in first..=last.min(b.horizon.saturating_sub(1)) {
                if m + spec.threshold >= self.now {
                    let s = self.slot(b, j, m);
                    self.slots[s].seen = true;
                }
            }
        }
        self.scan = None;
    }

    /// Which of a scan's two reads is the every-minute partition's.
    fn every_read(flaw: Flaw) -> usize {
        usize::from(State::partitions(flaw)[1] == Partition::Every)
    }

    /// `verify::catch_racing_leaves`: a job left the every-minute class while this scan ran, so
    /// each job it read there that is no longer there as read has its open executions indexed
    /// (a fire the scan put from the older read would otherwise be in no index).
    fn index_racing_leaves(&mut self, b: &Bounds, every: &[(u8, JobDyn)]) {
        for &(j, r) in every {
            let cur = self.jobs[usize::from(j)];
            if cur.class != Class::Every || cur.version != r.version {
                self.index_open(b, usize::from(j));
            }
        }
    }

    /// The verification pass (`verify::verify_minutes`, grace one minute): the minutes after
    /// the shard's verified one up to `to`; each fire there of a job this scan read in the
    /// every-minute partition (from its position on) that is not final enters the `open` index.
    fn verify(&mut self, b: &Bounds, su: usize, every: &[(u8, JobDyn)], to: i16) {
        let from = i16::from(self.verified[su]) + 1;
        for m in from.max(0)..=to.min(i16::from(b.horizon) - 1) {
            let m = m as u8;
            for &(j, r) in every {
                let ju = usize::from(j);
                if !r.enabled || r.next == NONE || r.next > m || b.jobs[ju].mask(r.def) & (1 << m) == 0 {
                    continue;
                }
                let s = self.slot(b, ju, m);
                if let Some(e) = &mut self.slots[s].exec {
                    if !e.is_final() {
                        e.indexed = true;
                    }
                }
            }
        }
        if to > i16::from(self.verified[su]) {
            self.verified[su] = to as i8;
        }
    }

    /// The order the scan reads a shard's partitions in.
    fn partitions(flaw: Flaw) -> [Partition; 2] {
        if flaw == Flaw::EveryReadBeforeAdmission {
            [Partition::Every, Partition::Admission]
        } else {
            [Partition::Admission, Partition::Every]
        }
    }

    /// The next step of the scan in flight, if any (a group dispatch with or without a failed
    /// send).
    pub(super) fn scan_successors(&self, b: &Bounds, flaw: Flaw, out: &mut Vec<(Action, State)>) {
        let Some(scan) = &self.scan else { return };
        match scan.step {
            ScanStep::ReadFirst | ScanStep::ReadSecond => out.push(self.read_step(b, flaw, scan)),
            ScanStep::DispatchFirst | ScanStep::DispatchSecond | ScanStep::Walk(_) => {
                let fails: &[bool] = if self.send_fails > 0 { &[false, true] } else { &[false] };
                for &send_fails in fails {
                    out.extend(self.group_step(b, flaw, scan, send_fails));
                }
            }
            ScanStep::Watermark => out.push(self.watermark_step(b, flaw, scan)),
        }
    }

    /// The scan reads the first or the second partition of its shard.
    fn read_step(&self, b: &Bounds, flaw: Flaw, scan: &Scan) -> (Action, State) {
        let shard = scan.shard;
        let parts = State::partitions(flaw);
        let i = usize::from(scan.step == ScanStep::ReadSecond);
        let want = if parts[i] == Partition::Every { Class::Every } else { Class::Admission };
        let mut n = self.clone();
        let mut sc = scan.clone();
        if i == 0 {
            // The shard's position, read as its scan begins.
            sc.left_seen = self.left[usize::from(shard)];
        }
        sc.reads[i] = self.jobs_in(b, shard, want);
        sc.step = if i == 0 { ScanStep::ReadSecond } else { ScanStep::DispatchFirst };
        n.scan = Some(sc);
        (Action::Read { shard, partition: parts[i] }, n)
    }

    /// The jobs of `shard` whose due entry is in `class`, as stored now.
    fn jobs_in(&self, b: &Bounds, shard: u8, class: Class) -> Vec<(u8, JobDyn)> {
        (0..b.jobs.len())
            .filter(|&j| b.jobs[j].shard == shard && self.jobs[j].class == class)
            .map(|j| (j as u8, self.jobs[j]))
            .collect()
    }

    /// The scan dispatches a partition it read, or walks a bucket (read and dispatched at
    /// once); `None` if a failed send was asked for but nothing was to be sent.
    fn group_step(&self, b: &Bounds, flaw: Flaw, scan: &Scan, send_fails: bool) -> Option<(Action, State)> {
        let shard = scan.shard;
        let last = scan.windows[usize::from(shard)].1;
        let (items, floor, action) = match scan.step {
            ScanStep::Walk(m) => (
                self.jobs_in(b, shard, Class::Bucket(m)),
                None,
                Action::Walk { shard, minute: m, send_fails },
            ),
            _ => {
                let parts = State::partitions(flaw);
                let i = usize::from(scan.step == ScanStep::DispatchSecond);
                let floor =
                    (parts[i] == Partition::Every).then(|| i16::from(self.wm[usize::from(shard)]) + 1);
                (scan.reads[i].clone(), floor, Action::Dispatch { shard, partition: parts[i], send_fails })
            }
        };
        let mut n = self.clone();
        let mut sc = scan.clone();
        let cx = GroupCtx { now: self.now, last, floor, with_budget: true, send_fails };
        match n.dispatch(b, flaw, &items, &cx, &mut sc.used) {
            Outcome::NotApplicable => return None,
            Outcome::Failed => {
                if send_fails {
                    n.send_fails -= 1;
                }
                sc.failed |= 1 << shard;
                n.next_shard(b, sc, flaw == Flaw::FailingShardStopsRange);
            }
            Outcome::Done { all_done, every_held } => {
                sc.every_held |= every_held;
                sc.step = after_group(&mut sc, flaw, all_done);
                n.scan = Some(sc);
            }
        }
        Some((action, n))
    }

    /// The scan of the shard ends: the watermark moves through the window, or stops before
    /// the first bucket that kept a deferred job (not at all if an `Every` deferral holds it).
    fn watermark_step(&self, b: &Bounds, flaw: Flaw, scan: &Scan) -> (Action, State) {
        let shard = scan.shard;
        let su = usize::from(shard);
        let last = scan.windows[su].1;
        let mut n = self.clone();
        let every = &scan.reads[State::every_read(flaw)];
        if flaw != Flaw::RacingPutUnindexed && n.left[su] != scan.left_seen {
            n.index_racing_leaves(b, every);
        }
        let through = scan.held_at.map_or(i16::from(last), |m| i16::from(m) - 1);
        let wm = i16::from(n.wm[su]);
        if !scan.every_held && through > wm {
            n.wm[su] = through as i8;
        }
        n.verify(b, su, every, through.max(wm).min(i16::from(self.now) - 1));
        n.next_shard(b, scan.clone(), false);
        (Action::MoveWatermark { shard }, n)
    }
}

/// The scan's step after a group dispatched (`all_done`: no job deferred): the second
/// partition, the walk's first bucket, its next one, or the watermark.
fn after_group(sc: &mut Scan, flaw: Flaw, all_done: bool) -> ScanStep {
    let (first, last) = sc.windows[usize::from(sc.shard)];
    match sc.step {
        ScanStep::DispatchFirst => ScanStep::DispatchSecond,
        ScanStep::DispatchSecond => ScanStep::Walk(first),
        ScanStep::Walk(m) => {
            let stop = !all_done && flaw == Flaw::WalkStopsAtDeferral;
            if !all_done && sc.held_at.is_none() {
                sc.held_at = Some(m);
            }
            if m >= last || stop {
                ScanStep::Watermark
            } else {
                ScanStep::Walk(m + 1)
            }
        }
        s => s,
    }
}

/// What a group dispatch will do, decided from what the scan read.
struct GroupPlan {
    /// Per job that fits the budget: the fires to put.
    puts: Vec<(usize, JobDyn, Vec<u8>)>,
    /// Per non-`Every` job put: its new position.
    advances: Vec<(usize, JobDyn, u8)>,
    /// Per deferred `Every` job: its first unplanned fire (it moves to admission).
    moves: Vec<(usize, JobDyn, u8)>,
    /// No job was deferred.
    all_done: bool,
    /// A deferred `Every` job holds the watermark ([`Flaw::EveryDeferralHoldsWatermark`]).
    every_held: bool,
}

/// Plans each job of a group: its fires in the window (missed ones per its policy), and
/// whether the catch-up budget lets them through; a job that does not fit is deferred.
fn plan_group(b: &Bounds, flaw: Flaw, items: &[(u8, JobDyn)], cx: &GroupCtx, used: &mut [u8]) -> GroupPlan {
    let mut plan = GroupPlan {
        puts: Vec::new(),
        advances: Vec::new(),
        moves: Vec::new(),
        all_done: true,
        every_held: false,
    };
    for &(j, r) in items {
        let ju = usize::from(j);
        let spec = &b.jobs[ju];
        if !r.enabled || r.next == NONE {
            continue;
        }
        let mask = spec.mask(r.def);
        let from = cx.floor.map_or(i16::from(r.next), |f| f.max(i16::from(r.next)));
        let (fires, missed) = fires_in_window(b, spec, mask, from, cx);
        let tenant = usize::from(spec.tenant);
        if cx.with_budget && !try_take(&mut used[tenant], missed, b.per_tenant) {
            plan.all_done = false;
            if cx.floor.is_some() {
                if flaw == Flaw::EveryDeferralHoldsWatermark {
                    plan.every_held = true;
                } else {
                    plan.moves.push((ju, r, first_from(mask, from)));
                }
            }
            continue;
        }
        plan.puts.push((ju, r, fires));
        if cx.floor.is_none() {
            let after = i16::from(cx.last).max(i16::from(r.next) - 1);
            plan.advances.push((ju, r, first_from(mask, after + 1)));
        }
    }
    plan
}

/// A job's fires from `from` to the end of the window, and how many of them are missed (late
/// past the threshold): `Skip` drops those, `FireAll` plans them on the catch-up budget.
fn fires_in_window(b: &Bounds, spec: &JobSpec, mask: u16, from: i16, cx: &GroupCtx) -> (Vec<u8>, u8) {
    let mut fires = Vec::new();
    let mut missed = 0;
    for m in from.max(0)..=i16::from(cx.last.min(b.horizon.saturating_sub(1))) {
        let m = m as u8;
        if mask & (1 << m) == 0 {
            continue;
        }
        let late = m + spec.threshold < cx.now;
        match (late, spec.policy) {
            (true, Policy::Skip) => {}
            (true, Policy::FireAll) => {
                missed += 1;
                fires.push(m);
            }
            (false, _) => fires.push(m),
        }
    }
    (fires, missed)
}
