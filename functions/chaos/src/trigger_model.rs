//! An exhaustive check of the trigger plane (tick, scan, admission, API pause / resume / edit,
//! reconciler) for small instances, with one broken variant per historical bug of issue 13.
//!
//! Why a model: the trigger plane's bugs are races between a scan that runs as a sequence of
//! reads and writes, API calls that change a job in between, faults (a lost send, a tick that
//! dies mid-range) and the catch-up budget. Each of the eleven scenarios of issue 13 needed one
//! particular interleaving; for a few jobs over a few minutes every interleaving can be
//! enumerated. [`explore`] does that with a breadth-first search over the whole state graph.
//!
//! ## What is modelled (minute granularity)
//! - **Clock**: `now` in `0..=horizon`; [`Action::TickClock`] advances it between scans.
//!   Schedules are bit sets over the minutes `0..horizon`, so every fire can be planned and run.
//! - **Jobs**: a shard, a tenant, a name, two definitions (`v1`, `v2`: their fire minutes), a
//!   misfire policy (`FireAll` or `Skip`) and threshold; stored state `enabled`, the CAS
//!   `version` (+1 on each API change), the definition in force, the position `next` and the due
//!   class: `Every` (`E#`: planned from `max(next, watermark + 1)`, never advanced), `Admission`
//!   (`A#`: read every tick, planned from `next`) or `Bucket(m)` (read when the walk covers m).
//! - **Executions**: at most one per (job, fire minute), the unique key. Ready / Running /
//!   Succeeded / Canceled, a `held` flag, the definition it was planned with, its messages.
//! - **Tick / scan**: per shard, atomic steps: read the first partition, read the second
//!   (Admission then Every; the other order for [`Flaw::EveryReadBeforeAdmission`]), dispatch each
//!   read group (plan → put → send → CAS advance), walk the buckets `min(wm + 1, now) ..= now + 1`
//!   (at most `max_buckets`; each bucket is read and dispatched in one step), move the watermark
//!   (stopping before the first bucket that kept a deferred job). API actions, workers and faults
//!   interleave between any two steps. A per-tick catch-up budget per tenant (missed-fire
//!   executions; a job needing more than the whole budget goes alone if first for its tenant)
//!   defers jobs that do not fit. A deferred `Every` job moves to Admission at its first unplanned
//!   fire and the watermark moves on. A shard whose scan fails (poison job, failed send) keeps
//!   its positions; the scan goes on with the next shard.
//! - **Puts are plain put-if-absent** (a transaction fencing them on the job version would
//!   double the write cost), and nothing repairs them: a dispatch whose CAS advance fails because
//!   a pause, resume or edit changed the job since the scan read it just drops the advance. Such
//!   a scan may have put a fresh, unheld execution of the old definition after the change (a
//!   *racing put*), and the message may be delivered as soon as its minute comes.
//! - **API**: `Pause` (disable, leave the partitions, hold queued-ahead Ready executions: fire
//!   minute `> now`), `Resume` (enable at the first fire after `now`, Admission, release the
//!   held ones whose minute is `> now`), `Edit` (definition v2, Admission, amend queued-ahead
//!   Ready executions on a v2 minute to v2, cancel the v1-only ones). The job keeps the marks
//!   the worker's check reads (the job item's `edited_at` and `paused`): `edited`, the minute its
//!   definition took effect (creation, before minute 0, or the edit; pause and resume leave it),
//!   and its *last* pause window `(from, until)`: a pause sets `(now, open)`, a resume closes
//!   the window at `now`, a new pause replaces it (a job paused at the start was paused before
//!   minute 0). Resume and edit are followed by a separate [`Action::DispatchOne`] step (the API
//!   dispatching the job at once), which may run after the clock moved on and race a scan.
//! - **Worker**: a delivery of a due message claims and completes a Ready execution in one step.
//!   Held: Canceled. Otherwise the worker reads the job (strongly consistent, in the same step)
//!   and decides as `follow::at_claim` does before the first claim of a scheduled execution of
//!   instant m: the job paused at m by its last window (`Job::paused_at`): Canceled (code
//!   `Paused`), not run; else, the job's definition not the execution's and in effect since
//!   before m: run with the job's definition if m is one of its fires (amend, then run), else
//!   Canceled (`Superseded`); else run as is. This closes the racing put ([`Flaw::UnfencedPut`]
//!   is the protocol without the check; [`Flaw::EditKeepsOldQueued`] drops the definition
//!   check with the edit's amendment, as scenario 9's protocol had neither: with the check, the
//!   amendment alone left out breaks nothing on its instance). Job deletion is not modelled.
//!   With `two_workers` the claim (with the same check) and the finish are separate steps of
//!   two workers, with leases (scenario 10). Effects go through an inbox keyed by execution id.
//! - **Minutes and instants**: the fire of minute m is at the instant m:00, and an API call "at
//!   minute t" comes after t:00 (the clock reached t first; as for the API's hold, `> now`). So
//!   the real comparisons on timestamps become, in model minutes: a pause at p is before the fire
//!   (`from <= m:00`) when `p < m`; a resume at q ends the window after the fire (`m:00 <
//!   until`) when `m <= q`; an edit at e is in effect at the fire (`edited_at <= m:00`) when `e <
//!   m`. Each is tight: `p <= m` cancels a fire queued before a pause in its own minute, which is
//!   owed (liveness fails on every instance with a pause action); `m < q`
//!   lets a racing put run when the resume came in the fire's own minute (`api_race` reaches
//!   it); `e <= m` amends to v2 a fire that ran while v1 was in force (safety fails on
//!   `api_and_loss`, `api_race` and `edit`). A call at exactly m:00.000 (a tie) is not
//!   modelled; the real code counts a pause, a resume or an edit at the instant as before it.
//! - **Faults** (bounded): a lost or duplicated message, a failed send after the put, a tick
//!   crash between any two scan steps, waits (concurrency or tenant limit), worker panics, a
//!   poison job that fails its shard's scan on every tick.
//! - **Reconciler**: re-sends a message for every Ready execution at least a minute overdue
//!   with no message in the queue.
//!
//! ## What is checked
//! Safety in every reachable state: no fire runs inside a paused window; no fire runs that is
//! not a fire of the definition in force at its minute, or with another definition; no fire's
//! handler runs twice; no execution succeeds without its effect.
//!
//! **Documented limit.** The worker's check sees the job's *last* pause window and *last* edit,
//! not its whole history. With one pause, one resume and one edit per behaviour (`api_race`)
//! that is enough: every racing put is canceled or amended as its minute requires (the two
//! runs the previous check, with a single change minute, let through, a resume after the fire's
//! minute and a pause hiding an edit, are gone). A second pause reaches one run it lets
//! through, which the safety property excludes (an execution flagged as a racing put when it
//! was put, the check having let it through, and the run's circumstances checked at the run);
//! [`explore`] reports it, with its shortest trace, in [`Exploration::limits`]. Only the
//! `api_race_twice` instance (two pauses, one resume) reaches it:
//! 1. *An older pause window*: a scan reads the job, a pause at minute p puts nothing on hold
//!    yet, the scan puts fire m > p (unheld); before the delivery a resume at `q >= m` and a
//!    second pause at `p2 >= q` replace the window `(p, q)`, which covered m, by `(p2, open)`,
//!    which starts after it: fire m runs although the job was paused at m. Trace (14 steps):
//!    `StartTick, Read A, Read E, Pause, Dispatch A, Dispatch E, Walk 0, Walk 1,
//!    MoveWatermark, TickClock, Resume, DispatchOne, Pause, Deliver(0, 1)`. In the real system
//!    the message is due at m:00, so the resume and the second pause must both come between
//!    the fire's instant and a late first claim (after waits, or a lost message and the
//!    reconciler's re-send).
//! 2. *An older edit* (the same with two edits: v1 put racing an edit to v2 before m, a second
//!    edit after m back to v1 or to v3: the check sees `edited_at >= m` and runs v1) is not
//!    reachable here, as the model edits a job once (v1 to v2); a run of a definition not in
//!    force at its minute that the check let through would be reported as limit 2.
//!
//! Liveness, as `AG EF done` (as in [`model`](super::model)): from every reachable state a good
//! end state is reachable: the clock at the horizon, no scan or API dispatch in flight, every
//! execution final (none stranded), and every *owed* fire Succeeded. A fire at minute m is owed
//! when the job was enabled when the clock reached m (the state after every action at `m - 1`),
//! m is a fire of the definition in force then, no pause or edit at a minute `>= m` dropped it
//! before it had an execution, and, for `Skip` jobs, a tick that ran to its end without an
//! injected fault in the job's shard had m in its window while m was on time. Ticks may repeat
//! within a minute, so on a finite graph this is `AF done` under strong fairness: faults are
//! bounded, and a fair scheduler keeps ticking, delivering and reconciling.
//!
//! ## What is abstracted away
//! - Time is whole minutes: sub-minute fires, the 60 s horizon and `DelaySeconds` become "a
//!   message is deliverable from its fire minute on". The clock does not move during a scan
//!   step sequence (a scan finishes within its minute); overlapping ticks are not modelled.
//! - A bucket is read and dispatched in one step (the `A#` and `E#` reads are separate steps,
//!   as the promotion race needs). Put, send and advance of one group are one step; a crash
//!   between the put and the send is the failed-send fault.
//! - Misfire policies `FireAll` and `Skip` only (no `fireOnce`, no `fireAll` cap); the
//!   catch-up budget is per tenant only (no global budget).
//! - At most two (`MSG_CAP`) copies of an execution's message are kept; more would only be more
//!   duplicates, which the claim absorbs.
//! - One API call per job at a time: no pause, resume or edit while the job's `dispatch_one` is
//!   still to run. An edit applies to an enabled job, once (v1 to v2).
//! - The worker's read of the job and its decision are one step with the delivery: an API call
//!   between the read and the claim is not modelled.
//! - The poison job fails its group's dispatch before any put. The worker's claim, run and
//!   finish are one step except in two-worker mode, which has no crashes, heartbeats or lease
//!   expiry by elapsed time: only the slow clock's already-ended lease ([`model`](super::model)
//!   checks the claim protocol itself).

use std::collections::{HashMap, VecDeque};
use std::fmt;

/// Executions' messages beyond this count coalesce: more copies are only more duplicates.
const MSG_CAP: u8 = 2;
/// Documented limit 1: a racing put (unheld) of a fire whose job was paused at its minute runs
/// because that pause is no longer the job's last window (a resume and a second pause came
/// before the delivery).
const LIMIT_OLDER_PAUSE: u8 = 1;
/// Documented limit 2: a racing put runs a definition that was not in force at its minute (a
/// second edit came before the delivery: the job keeps only its last edit's minute). Not
/// reachable in the model, whose jobs are edited once; kept as a check of the check.
const LIMIT_OLDER_EDIT: u8 = 2;
/// `next` of a job whose schedule is exhausted.
const NONE: u8 = u8::MAX;

/// What happens to fires late by more than the job's threshold when they are planned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Policy {
    /// Every missed fire gets an execution (drawing on the catch-up budget).
    FireAll,
    /// Missed fires get none; on-time fires are planned as usual.
    Skip,
}

/// Where a job's due entry lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Class {
    /// No due entry (paused, or exhausted).
    Off,
    /// The shard's every-minute partition `E#`.
    Every,
    /// The shard's admission partition `A#`.
    Admission,
    /// The due bucket of this minute.
    Bucket(u8),
}

/// A partition of a shard read at the start of its scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Partition {
    /// `A#{shard}`.
    Admission,
    /// `E#{shard}`.
    Every,
}

/// One job of an instance (its fixed part).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobSpec {
    /// Its name (the same name may appear for two tenants).
    pub name: char,
    /// Its tenant.
    pub tenant: u8,
    /// Its shard.
    pub shard: u8,
    /// Fire minutes of definition v1 (bit m = fires at minute m).
    pub v1: u16,
    /// Fire minutes of definition v2 (after an edit).
    pub v2: u16,
    /// Misfire policy.
    pub policy: Policy,
    /// Misfire threshold in minutes: a fire is missed when `fire + threshold < now`.
    pub threshold: u8,
    /// Enabled at the start (otherwise paused, with no due entry).
    pub enabled: bool,
    /// Its due class at the start (`Bucket` takes the minute of its first fire).
    pub start: Class,
    /// A job whose dispatch always fails (a removed pool): it fails its shard's scan.
    pub poison: bool,
}

impl JobSpec {
    /// An enabled `FireAll` job with threshold 0, in bucket class, tenant 0, shard 0.
    pub const fn new(name: char, v1: u16) -> JobSpec {
        JobSpec {
            name,
            tenant: 0,
            shard: 0,
            v1,
            v2: v1,
            policy: Policy::FireAll,
            threshold: 0,
            enabled: true,
            start: Class::Bucket(0),
            poison: false,
        }
    }

    fn mask(&self, def: u8) -> u16 {
        if def == 2 {
            self.v2
        } else {
            self.v1
        }
    }

    fn label(&self) -> String {
        format!("{}/t{}", self.name, self.tenant)
    }
}

/// The bit set of the minutes `0..n`.
pub const fn every(n: u8) -> u16 {
    ((1u32 << n) - 1) as u16
}

/// The size of one instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bounds {
    /// A short name for reports.
    pub name: &'static str,
    /// The last minute of the clock; fires lie in `0..horizon`.
    pub horizon: u8,
    /// Shards (each job names one below this).
    pub shards: u8,
    /// Most buckets one shard's walk reads per tick.
    pub max_buckets: u8,
    /// Catch-up budget: missed-fire executions per tenant per tick.
    pub per_tenant: u8,
    /// The jobs.
    pub jobs: Vec<JobSpec>,
    /// API pauses in one behaviour.
    pub pauses: u8,
    /// API resumes.
    pub resumes: u8,
    /// API edits (to definition v2).
    pub edits: u8,
    /// Messages lost in the queue.
    pub lose: u8,
    /// Messages duplicated.
    pub duplicate: u8,
    /// Sends that fail after the put.
    pub send_fails: u8,
    /// Ticks that die between two scan steps.
    pub tick_crashes: u8,
    /// Worker waits (concurrency policy or tenant limit): the message goes back to the queue.
    pub waits: u8,
    /// Worker panics.
    pub panics: u8,
    /// Receives after which the queue moves a message to the DLQ (flawed waits only).
    pub max_receives: u8,
    /// Claim and finish as separate steps of two workers (leases; scenario 10).
    pub two_workers: bool,
}

impl Bounds {
    /// An instance with these jobs and no API actions or faults.
    pub fn quiet(name: &'static str, horizon: u8, jobs: Vec<JobSpec>) -> Bounds {
        Bounds {
            name,
            horizon,
            shards: 1,
            max_buckets: 3,
            per_tenant: 1,
            jobs,
            pauses: 0,
            resumes: 0,
            edits: 0,
            lose: 0,
            duplicate: 0,
            send_fails: 0,
            tick_crashes: 0,
            waits: 0,
            panics: 0,
            max_receives: 2,
            two_workers: false,
        }
    }
}

/// The protocol as fixed, or with one historical bug of issue 13 put back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Flaw {
    /// The fixed protocol.
    None,
    /// Scenario 1: a deferred `Every` job stays in `E#` and keeps the watermark where it is.
    EveryDeferralHoldsWatermark,
    /// Scenario 2: waits count as receives toward the DLQ; no reconciler.
    WaitsBurnReceives,
    /// Scenario 3: a shard whose scan fails ends the whole tick.
    FailingShardStopsRange,
    /// Scenario 4: the scan reads `E#` before `A#`.
    EveryReadBeforeAdmission,
    /// Scenario 5: a pause cancels queued-ahead executions instead of holding them.
    PauseCancelsQueued,
    /// Scenario 6: the bucket walk stops at the first bucket that keeps a deferred job.
    WalkStopsAtDeferral,
    /// Scenario 7: no reconciler, so an execution whose send failed may never be sent.
    NoReconcilerSendFails,
    /// Scenario 8: a worker panic deletes the message; no reconciler.
    PanicDeletesMessage,
    /// Scenario 9: an edit leaves queued-ahead executions on the old definition.
    EditKeepsOldQueued,
    /// Scenario 10: a worker writes its lease from its own (slow) clock: already expired.
    LeaseFromLocalClock,
    /// Scenario 11: execution ids without the tenant: `{job}@{minute}`.
    TenantlessExecutionId,
    /// Found by this model: the scan's puts are plain put-if-absent, and the worker does not
    /// check the job at delivery, so a put that raced a pause or edit (the scan read the job
    /// before it) runs inside the paused window, or on the old definition.
    UnfencedPut,
}

impl Flaw {
    /// Every broken variant (not [`Flaw::None`]).
    pub const BROKEN: [Flaw; 12] = [
        Flaw::EveryDeferralHoldsWatermark,
        Flaw::WaitsBurnReceives,
        Flaw::FailingShardStopsRange,
        Flaw::EveryReadBeforeAdmission,
        Flaw::PauseCancelsQueued,
        Flaw::WalkStopsAtDeferral,
        Flaw::NoReconcilerSendFails,
        Flaw::PanicDeletesMessage,
        Flaw::EditKeepsOldQueued,
        Flaw::LeaseFromLocalClock,
        Flaw::TenantlessExecutionId,
        Flaw::UnfencedPut,
    ];

    fn reconciler(self) -> bool {
        !matches!(self, Flaw::WaitsBurnReceives | Flaw::NoReconcilerSendFails | Flaw::PanicDeletesMessage)
    }

    /// The worker reads the job at delivery and decides from it (pause, edit).
    fn checks_job(self) -> bool {
        self != Flaw::UnfencedPut
    }

    /// The worker's check compares the execution's definition with the job's (it came with
    /// the edit's amendment: scenario 9's protocol had neither).
    fn checks_definition(self) -> bool {
        self != Flaw::EditKeepsOldQueued
    }
}

/// The smallest instance that exposes `flaw` (for [`Flaw::None`], a combined instance with
/// API actions and faults).
pub fn default_bounds(flaw: Flaw) -> Bounds {
    let h = 4;
    match flaw {
        Flaw::None => combined_bounds().swap_remove(0),
        // Two every-minute jobs of one tenant; an outage makes both late.
        Flaw::EveryDeferralHoldsWatermark => Bounds {
            max_buckets: 2,
            ..Bounds::quiet(
                "every_deferral",
                h,
                vec![
                    JobSpec { start: Class::Every, ..JobSpec::new('a', every(h)) },
                    JobSpec { start: Class::Every, ..JobSpec::new('b', every(h)) },
                ],
            )
        },
        Flaw::WaitsBurnReceives => {
            Bounds { waits: 2, ..Bounds::quiet("waits", 2, vec![JobSpec::new('a', 0b01)]) }
        }
        // A poison job in shard 0, an on-time `Skip` fire in shard 1.
        Flaw::FailingShardStopsRange => Bounds {
            shards: 2,
            ..Bounds::quiet(
                "failing_shard",
                3,
                vec![
                    JobSpec { poison: true, start: Class::Admission, ..JobSpec::new('p', 0b001) },
                    JobSpec { shard: 1, policy: Policy::Skip, ..JobSpec::new('s', 0b010) },
                ],
            )
        },
        // A paused every-minute job, resumed; its dispatch_one runs a minute late.
        Flaw::EveryReadBeforeAdmission => Bounds {
            resumes: 1,
            ..Bounds::quiet(
                "promotion_race",
                h,
                vec![JobSpec { enabled: false, start: Class::Off, ..JobSpec::new('a', every(h)) }],
            )
        },
        Flaw::PauseCancelsQueued => Bounds {
            pauses: 1,
            resumes: 1,
            ..Bounds::quiet("pause_resume", 3, vec![JobSpec::new('a', 0b110)])
        },
        // Tenant 0's two late jobs share bucket 0; tenant 1's on-time `Skip` job is in bucket 2.
        Flaw::WalkStopsAtDeferral => Bounds {
            max_buckets: 4,
            ..Bounds::quiet(
                "walk_deferral",
                h,
                vec![
                    JobSpec::new('x', 0b0001),
                    JobSpec::new('y', 0b0001),
                    JobSpec { tenant: 1, policy: Policy::Skip, ..JobSpec::new('z', 0b0100) },
                ],
            )
        },
        Flaw::NoReconcilerSendFails => Bounds {
            send_fails: 1,
            ..Bounds::quiet(
                "send_fails",
                3,
                vec![JobSpec { policy: Policy::Skip, ..JobSpec::new('a', 0b010) }],
            )
        },
        Flaw::PanicDeletesMessage => {
            Bounds { panics: 1, ..Bounds::quiet("panic", 2, vec![JobSpec::new('a', 0b01)]) }
        }
        // v1 fires at 1 and 2, v2 only at 1: the shared minute 1 is queued ahead at minute 0 (the
        // flaw also drops the worker's definition check, which would amend it at delivery).
        Flaw::EditKeepsOldQueued => Bounds {
            edits: 1,
            pauses: 1,
            ..Bounds::quiet("edit", 3, vec![JobSpec { v2: 0b010, ..JobSpec::new('a', 0b110) }])
        },
        Flaw::LeaseFromLocalClock => Bounds {
            duplicate: 1,
            two_workers: true,
            ..Bounds::quiet("lease_clock", 1, vec![JobSpec::new('a', 0b1)])
        },
        Flaw::TenantlessExecutionId => Bounds::quiet(
            "tenant_ids",
            1,
            vec![JobSpec::new('a', 0b1), JobSpec { tenant: 1, shard: 0, ..JobSpec::new('a', 0b1) }],
        ),
        // A job just created (admission), firing at minute 1; a pause races the scan.
        Flaw::UnfencedPut => Bounds {
            pauses: 1,
            ..Bounds::quiet(
                "unfenced_put",
                2,
                vec![JobSpec { start: Class::Admission, ..JobSpec::new('a', 0b10) }],
            )
        },
    }
}

/// The instances for [`Flaw::None`] beyond the flaws' own: API actions with a lost message on
/// one job; two shards (an edited job, a `Skip` job) with a failed send and a tick crash; API
/// actions racing the scan's Admission read (`api_race`); the same with two pauses and a resume
/// (`api_race_twice`: it reaches the documented limit of the last pause window).
pub fn combined_bounds() -> Vec<Bounds> {
    let a = JobSpec { v2: 0b010, ..JobSpec::new('a', 0b110) };
    let b = JobSpec { shard: 1, tenant: 1, policy: Policy::Skip, ..JobSpec::new('b', 0b011) };
    vec![
        Bounds { pauses: 1, resumes: 1, edits: 1, lose: 1, ..Bounds::quiet("api_and_loss", 3, vec![a]) },
        Bounds {
            shards: 2,
            send_fails: 1,
            tick_crashes: 1,
            ..Bounds::quiet("shards_and_faults", 3, vec![a, b])
        },
        Bounds {
            pauses: 1,
            resumes: 1,
            edits: 1,
            ..Bounds::quiet("api_race", 3, vec![JobSpec { start: Class::Admission, ..a }])
        },
        Bounds {
            pauses: 2,
            resumes: 1,
            ..Bounds::quiet("api_race_twice", 3, vec![JobSpec { start: Class::Admission, ..a }])
        },
    ]
}

/// A larger instance (every worker and queue fault at once, about 5.9 million states): too slow
/// for a debug test run, checked by an ignored test in release mode.
pub fn extended_bounds() -> Bounds {
    Bounds {
        lose: 1,
        duplicate: 1,
        waits: 1,
        panics: 1,
        name: "all_faults",
        ..combined_bounds().swap_remove(1)
    }
}

/// Every case: each combined instance with [`Flaw::None`], then each flaw's instance with the
/// fixed protocol and with the flaw.
pub fn cases() -> Vec<(Flaw, Bounds)> {
    let mut out: Vec<(Flaw, Bounds)> = combined_bounds().into_iter().map(|b| (Flaw::None, b)).collect();
    for flaw in Flaw::BROKEN {
        out.push((Flaw::None, default_bounds(flaw)));
        out.push((flaw, default_bounds(flaw)));
    }
    out
}

/// A job's stored, mutable part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct JobDyn {
    enabled: bool,
    version: u8,
    def: u8,
    next: u8,
    class: Class,
    /// The minute the current definition took effect (the job item's `edited_at`: its creation
    /// or its last edit; a pause or resume does not move it). -1: before minute 0.
    edited: i8,
    /// The job's last pause window (`paused`): the minute of the pause (-1: before minute 0)
    /// and, once resumed, the minute of the resume. A new pause replaces it.
    paused: Option<(i8, Option<u8>)>,
}

impl JobDyn {
    /// `Job::paused_at(m:00)` in model minutes. A pause or resume at minute t happens after t:00
    /// (the clock reached t first), so `from <= m:00` is `from < m` and `m:00 < until` is
    /// `m <= until`.
    fn paused_at(&self, m: u8) -> bool {
        let m = i16::from(m);
        match self.paused {
            Some((from, None)) => !self.enabled && i16::from(from) < m,
            Some((from, Some(until))) => i16::from(from) < m && m <= i16::from(until),
            None => false,
        }
    }

    /// An edit at minute e happens after e:00: `edited_at <= m:00` is `e < m`.
    fn edited_before(&self, m: u8) -> bool {
        i16::from(self.edited) < i16::from(m)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Status {
    Ready,
    Running { owner: u8, token: u8, live: bool },
    Succeeded,
    Canceled,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Exec {
    status: Status,
    held: bool,
    def: u8,
    /// Queued messages by receive count (0, 1).
    msgs: [u8; 2],
    /// Effects applied through the inbox.
    effects: u8,
    /// Handler runs started.
    runs: u8,
    /// Put by a scan that read the job before a pause, resume or edit (a racing put).
    raced: bool,
    /// The documented limits it ran in (`LIMIT_OLDER_PAUSE`, `LIMIT_OLDER_EDIT`).
    limit: u8,
    token: u8,
}

impl Exec {
    fn queued(&self) -> u8 {
        self.msgs[0] + self.msgs[1]
    }

    fn send(&mut self) {
        if self.queued() < MSG_CAP {
            self.msgs[0] += 1;
        }
    }

    fn is_final(&self) -> bool {
        matches!(self.status, Status::Succeeded | Status::Canceled)
    }
}

/// Per (job, minute): the execution and the history the properties need.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
struct Slot {
    exec: Option<Exec>,
    /// When the clock reached the minute: 0 = not yet, else bit 0 enabled, bits 1.. definition.
    snap: u8,
    /// A pause or edit at a minute `>= m` dropped the fire before it had an execution.
    excused: bool,
    /// A completed tick had the fire in its window while it was on time.
    seen: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Step {
    ReadFirst,
    ReadSecond,
    DispatchFirst,
    DispatchSecond,
    Walk(u8),
    Watermark,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Scan {
    shard: u8,
    step: Step,
    /// Per shard: the window `(first, last)` computed when the tick started.
    windows: Vec<(u8, u8)>,
    reads: [Vec<(u8, JobDyn)>; 2],
    /// Catch-up budget used this tick, per tenant.
    used: Vec<u8>,
    held_at: Option<u8>,
    every_held: bool,
    /// Shards whose scan failed this tick (bit per shard).
    failed: u8,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct State {
    now: u8,
    wm: Vec<i8>,
    jobs: Vec<JobDyn>,
    slots: Vec<Slot>,
    scan: Option<Scan>,
    /// Per job: an API dispatch_one still to run: the API's `now` and the job it wrote.
    pending: Vec<Option<(u8, JobDyn)>>,
    /// Execution ids whose effect the inbox has applied.
    inbox: Vec<u32>,
    /// Two-worker mode: what each worker holds (slot, token).
    workers: [Option<(u16, u8)>; 2],
    pauses: u8,
    resumes: u8,
    edits: u8,
    lose: u8,
    duplicate: u8,
    send_fails: u8,
    tick_crashes: u8,
    waits: u8,
    panics: u8,
}

/// A transition, for counterexample traces. Jobs are indices into [`Bounds::jobs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// The clock moves to the next minute.
    TickClock,
    /// A tick starts scanning the shards at `now`.
    StartTick,
    /// The scan reads a partition of a shard.
    Read {
        /// The shard.
        shard: u8,
        /// The partition.
        partition: Partition,
    },
    /// The scan dispatches what it read from a partition.
    Dispatch {
        /// The shard.
        shard: u8,
        /// The partition read.
        partition: Partition,
        /// The send after the puts fails.
        send_fails: bool,
    },
    /// The walk reads and dispatches one bucket.
    Walk {
        /// The shard.
        shard: u8,
        /// The bucket's minute.
        minute: u8,
        /// The send after the puts fails.
        send_fails: bool,
    },
    /// The scan of a shard ends by moving its watermark (maybe not at all).
    MoveWatermark {
        /// The shard.
        shard: u8,
    },
    /// The tick dies between two steps.
    TickCrash,
    /// API: pause a job.
    Pause(u8),
    /// API: resume a job.
    Resume(u8),
    /// API: edit a job to definition v2.
    Edit(u8),
    /// API: dispatch a job right after a resume or edit.
    DispatchOne {
        /// The job.
        job: u8,
        /// The send after the puts fails.
        send_fails: bool,
    },
    /// A worker receives a message for (job, minute) and handles it to the end.
    Deliver(u8, u8),
    /// Worker `w` receives a message for (job, minute) and claims (two-worker mode).
    Claim(u8, u8, u8),
    /// Worker `w`'s handler returns and it finishes (two-worker mode).
    Finish(u8),
    /// A worker waits (concurrency or tenant limit): the message goes back.
    Wait(u8, u8),
    /// A worker panics on the message.
    Panic(u8, u8),
    /// The queue loses a message.
    LoseMessage(u8, u8),
    /// The queue delivers a message twice.
    DuplicateMessage(u8, u8),
    /// The reconciler re-sends overdue Ready executions that have no message.
    Reconcile,
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
    /// Reachable good end states.
    pub done_states: usize,
    /// The first safety violation, with the shortest trace that reaches it.
    pub safety: Option<Violation>,
    /// The documented limits reached (excluded from [`Exploration::safety`]): for each, the
    /// shortest trace to a run in it. See the module docs.
    pub limits: Vec<Violation>,
    /// A reachable state from which no good end state is reachable: the shortest trace to the
    /// first such state, continued by the shortest path to a settled end state (clock at the
    /// horizon, nothing in flight) whose unmet obligation is the property.
    pub liveness: Option<Violation>,
}

/// A property that failed, and how to get there from the initial state (the execution-plane
/// model's type, over this model's actions).
pub type Violation = super::model::Violation<Action>;

/// Takes `n` catch-up tokens from a tenant's `used`, or none (`CatchUpBudget::try_take`).
fn try_take(used: &mut u8, n: u8, per_tenant: u8) -> bool {
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
fn first_from(mask: u16, from: i16) -> u8 {
    (from.max(0)..16).find(|&m| mask & (1 << m) != 0).map_or(NONE, |m| m as u8)
}

/// How one group dispatch is run.
struct GroupCtx {
    now: u8,
    last: u8,
    /// `Every` group: the floor `watermark + 1`.
    floor: Option<i16>,
    with_budget: bool,
    send_fails: bool,
}

/// The result of a group dispatch.
enum Outcome {
    /// Puts, sends, advances done; `all_done` false if a job was deferred.
    Done { all_done: bool, every_held: bool },
    /// The dispatch failed (poison job, failed send): the shard's scan fails.
    Failed,
    /// A send failure was asked for but nothing was to be sent.
    NotApplicable,
}

impl State {
    fn initial(b: &Bounds) -> State {
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

    fn slot(&self, b: &Bounds, j: usize, m: u8) -> usize {
        j * usize::from(b.horizon) + usize::from(m)
    }

    /// Plans, puts, sends and advances one group of jobs (read earlier as `items`).
    fn dispatch(
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
        let (mut all_done, mut every_held) = (true, false);
        let mut sends = Vec::new();
        let mut advances = Vec::new();
        let mut moves = Vec::new();
        for &(j, r) in items {
            let ju = usize::from(j);
            let spec = &b.jobs[ju];
            if !r.enabled || r.next == NONE {
                continue;
            }
            let mask = spec.mask(r.def);
            let from = cx.floor.map_or(i16::from(r.next), |f| f.max(i16::from(r.next)));
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
            let tenant = usize::from(spec.tenant);
            if cx.with_budget && !try_take(&mut used[tenant], missed, b.per_tenant) {
                all_done = false;
                if cx.floor.is_some() {
                    if flaw == Flaw::EveryDeferralHoldsWatermark {
                        every_held = true;
                    } else {
                        moves.push((ju, r, first_from(mask, from)));
                    }
                }
                continue;
            }
            // A plain put-if-absent: not fenced on the version the scan read.
            for m in fires {
                let s = self.slot(b, ju, m);
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
                            raced: self.jobs[ju].version != r.version,
                            limit: 0,
                        });
                        sends.push((ju, m, s));
                    }
                    // A repeated put that finds the execution READY sends again.
                    Some(e) if e.status == Status::Ready => sends.push((ju, m, s)),
                    Some(_) => {}
                }
            }
            if cx.floor.is_none() {
                let after = i16::from(cx.last).max(i16::from(r.next) - 1);
                advances.push((ju, r, first_from(mask, after + 1)));
            }
        }
        if cx.send_fails {
            return if sends.is_empty() { Outcome::NotApplicable } else { Outcome::Failed };
        }
        for &(_, _, s) in &sends {
            if let Some(e) = &mut self.slots[s].exec {
                e.send();
            }
        }
        // CAS on (version, read position): an advance lost to a pause, resume or edit is dropped
        // and nothing is repaired (the worker checks the job at delivery).
        for (j, r, next) in advances {
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
        // A deferred every-minute job moves to admission at its first unplanned fire.
        for (j, r, next) in moves {
            let cur = &mut self.jobs[j];
            if cur.version == r.version && cur.class == Class::Every {
                cur.next = next;
                cur.class = if next == NONE { Class::Off } else { Class::Admission };
            }
        }
        Outcome::Done { all_done, every_held }
    }

    /// The shard's scan is over (done or failed): the next shard, or the end of the tick.
    fn next_shard(&mut self, b: &Bounds, mut scan: Scan, stop: bool) {
        if !stop && scan.shard + 1 < b.shards {
            scan.shard += 1;
            scan.step = Step::ReadFirst;
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

    fn partitions(flaw: Flaw) -> [Partition; 2] {
        if flaw == Flaw::EveryReadBeforeAdmission {
            [Partition::Every, Partition::Admission]
        } else {
            [Partition::Admission, Partition::Every]
        }
    }

    fn scan_successors(&self, b: &Bounds, flaw: Flaw, out: &mut Vec<(Action, State)>) {
        let Some(scan) = &self.scan else { return };
        let shard = scan.shard;
        let su = usize::from(shard);
        let parts = State::partitions(flaw);
        let (first, last) = scan.windows[su];
        let read = |p: Partition| -> Vec<(u8, JobDyn)> {
            let want = if p == Partition::Every { Class::Every } else { Class::Admission };
            (0..b.jobs.len())
                .filter(|&j| {
                    let d = &self.jobs[j];
                    b.jobs[j].shard == shard && d.class == want
                })
                .map(|j| (j as u8, self.jobs[j]))
                .collect()
        };
        let fails: &[bool] = if self.send_fails > 0 { &[false, true] } else { &[false] };
        match scan.step {
            Step::ReadFirst | Step::ReadSecond => {
                let i = usize::from(scan.step == Step::ReadSecond);
                let mut n = self.clone();
                let mut sc = scan.clone();
                sc.reads[i] = read(parts[i]);
                sc.step = if i == 0 { Step::ReadSecond } else { Step::DispatchFirst };
                n.scan = Some(sc);
                out.push((Action::Read { shard, partition: parts[i] }, n));
            }
            Step::DispatchFirst | Step::DispatchSecond | Step::Walk(_) => {
                for &send_fails in fails {
                    let mut n = self.clone();
                    let mut sc = scan.clone();
                    let (items, floor, action) = match scan.step {
                        Step::Walk(m) => {
                            let items: Vec<(u8, JobDyn)> = (0..b.jobs.len())
                                .filter(|&j| {
                                    b.jobs[j].shard == shard && self.jobs[j].class == Class::Bucket(m)
                                })
                                .map(|j| (j as u8, self.jobs[j]))
                                .collect();
                            (items, None, Action::Walk { shard, minute: m, send_fails })
                        }
                        _ => {
                            let i = usize::from(scan.step == Step::DispatchSecond);
                            let floor = (parts[i] == Partition::Every).then(|| i16::from(self.wm[su]) + 1);
                            (
                                sc.reads[i].clone(),
                                floor,
                                Action::Dispatch { shard, partition: parts[i], send_fails },
                            )
                        }
                    };
                    let cx = GroupCtx { now: self.now, last, floor, with_budget: true, send_fails };
                    match n.dispatch(b, flaw, &items, &cx, &mut sc.used) {
                        Outcome::NotApplicable => continue,
                        Outcome::Failed => {
                            if send_fails {
                                n.send_fails -= 1;
                            }
                            sc.failed |= 1 << shard;
                            n.next_shard(b, sc, flaw == Flaw::FailingShardStopsRange);
                        }
                        Outcome::Done { all_done, every_held } => {
                            sc.every_held |= every_held;
                            sc.step = match scan.step {
                                Step::DispatchFirst => Step::DispatchSecond,
                                Step::DispatchSecond => Step::Walk(first),
                                Step::Walk(m) => {
                                    let stop = !all_done && flaw == Flaw::WalkStopsAtDeferral;
                                    if !all_done && sc.held_at.is_none() {
                                        sc.held_at = Some(m);
                                    }
                                    if m >= last || stop {
                                        Step::Watermark
                                    } else {
                                        Step::Walk(m + 1)
                                    }
                                }
                                s => s,
                            };
                            n.scan = Some(sc);
                        }
                    }
                    out.push((action, n));
                }
            }
            Step::Watermark => {
                let mut n = self.clone();
                let through = scan.held_at.map_or(i16::from(last), |m| i16::from(m) - 1);
                if !scan.every_held && through > i16::from(n.wm[su]) {
                    n.wm[su] = through as i8;
                }
                n.next_shard(b, scan.clone(), false);
                out.push((Action::MoveWatermark { shard }, n));
            }
        }
    }

    fn api_successors(&self, b: &Bounds, flaw: Flaw, out: &mut Vec<(Action, State)>) {
        let h = b.horizon;
        for j in 0..b.jobs.len() {
            let spec = &b.jobs[j];
            let cur = self.jobs[j];
            let jb = j as u8;
            if spec.poison {
                continue;
            }
            if let Some((api_now, written)) = self.pending[j] {
                let fails: &[bool] = if self.send_fails > 0 { &[false, true] } else { &[false] };
                for &send_fails in fails {
                    let mut n = self.clone();
                    n.pending[j] = None;
                    let cx = GroupCtx {
                        now: api_now,
                        last: api_now + 1,
                        floor: None,
                        with_budget: false,
                        send_fails,
                    };
                    let mut used = vec![0; 256];
                    match n.dispatch(b, flaw, &[(jb, written)], &cx, &mut used) {
                        Outcome::NotApplicable => continue,
                        Outcome::Failed => n.send_fails -= 1,
                        Outcome::Done { .. } => {}
                    }
                    out.push((Action::DispatchOne { job: jb, send_fails }, n));
                }
                continue;
            }
            let drop_unplanned = |n: &mut State| {
                for m in 0..=n.now.min(h.saturating_sub(1)) {
                    let s = n.slot(b, j, m);
                    if n.slots[s].exec.is_none() {
                        n.slots[s].excused = true;
                    }
                }
            };
            if cur.enabled && self.pauses > 0 {
                let mut n = self.clone();
                n.pauses -= 1;
                n.jobs[j] = JobDyn {
                    enabled: false,
                    version: cur.version + 1,
                    class: Class::Off,
                    paused: Some((self.now as i8, None)),
                    ..cur
                };
                drop_unplanned(&mut n);
                for m in self.now + 1..h {
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
                out.push((Action::Pause(jb), n));
            }
            if !cur.enabled && self.resumes > 0 {
                let mut n = self.clone();
                n.resumes -= 1;
                let next = first_from(spec.mask(cur.def), i16::from(self.now) + 1);
                let class = if next == NONE { Class::Off } else { Class::Admission };
                let paused = cur.paused.map(|(from, _)| (from, Some(self.now)));
                let w = JobDyn { enabled: true, version: cur.version + 1, next, class, paused, ..cur };
                n.jobs[j] = w;
                for m in self.now + 1..h {
                    let s = n.slot(b, j, m);
                    if let Some(e) = &mut n.slots[s].exec {
                        if e.status == Status::Ready {
                            e.held = false;
                        }
                    }
                }
                n.pending[j] = Some((self.now, w));
                out.push((Action::Resume(jb), n));
            }
            if cur.enabled && cur.def == 1 && self.edits > 0 {
                let mut n = self.clone();
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
                drop_unplanned(&mut n);
                if flaw != Flaw::EditKeepsOldQueued {
                    for m in self.now + 1..h {
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
                out.push((Action::Edit(jb), n));
            }
        }
    }

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

    fn worker_successors(&self, b: &Bounds, flaw: Flaw, out: &mut Vec<(Action, State)>) {
        for j in 0..b.jobs.len() {
            for m in 0..b.horizon.min(self.now + 1) {
                let s = self.slot(b, j, m);
                let Some(e) = self.slots[s].exec else { continue };
                let (jb, q) = (j as u8, e.queued());
                for k in 0..2 {
                    if e.msgs[k] == 0 {
                        continue;
                    }
                    let mut taken = e;
                    taken.msgs[k] -= 1;
                    if !b.two_workers {
                        let mut n = self.clone();
                        let mut x = taken;
                        if x.status == Status::Ready {
                            if x.held || !self.check_job(b, flaw, j, m, &mut x) {
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
                        out.push((Action::Deliver(jb, m), n));
                    } else {
                        for w in 0..2u8 {
                            if self.workers[usize::from(w)].is_some() {
                                continue;
                            }
                            let mut n = self.clone();
                            let mut x = taken;
                            if x.status == Status::Ready && (x.held || !self.check_job(b, flaw, j, m, &mut x))
                            {
                                x.status = Status::Canceled;
                            }
                            match x.status {
                                Status::Ready | Status::Running { live: false, .. } => {
                                    // The lease is written from the worker's clock: worker 0 runs
                                    // 30 s slow, so with the flaw its lease has already ended.
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
                            out.push((Action::Claim(w, jb, m), n));
                        }
                    }
                    if e.status == Status::Ready && !e.held && self.waits > 0 {
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
                    if e.status == Status::Ready && self.panics > 0 {
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
                if q > 0 && q < MSG_CAP && self.duplicate > 0 && !e.is_final() {
                    let mut n = self.clone();
                    n.duplicate -= 1;
                    if let Some(x) = &mut n.slots[s].exec {
                        x.msgs[0] += 1;
                    }
                    out.push((Action::DuplicateMessage(jb, m), n));
                }
            }
        }
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

    fn successors(&self, b: &Bounds, flaw: Flaw) -> Vec<(Action, State)> {
        let mut out = Vec::new();
        if self.scan.is_none() {
            if self.now < b.horizon {
                let mut n = self.clone();
                n.now += 1;
                if n.now < b.horizon {
                    for j in 0..b.jobs.len() {
                        let s = n.slot(b, j, n.now);
                        n.slots[s].snap = u8::from(n.jobs[j].enabled) | (n.jobs[j].def << 1);
                    }
                }
                out.push((Action::TickClock, n));
            }
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
                step: Step::ReadFirst,
                windows,
                reads: [Vec::new(), Vec::new()],
                used: vec![0; tenants],
                held_at: None,
                every_held: false,
                failed: 0,
            });
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
            let mut n = self.clone();
            let mut any = false;
            for j in 0..b.jobs.len() {
                for m in 0..b.horizon.min(self.now) {
                    let s = self.slot(b, j, m);
                    if let Some(e) = &mut n.slots[s].exec {
                        if e.status == Status::Ready && e.queued() == 0 {
                            e.send();
                            any = true;
                        }
                    }
                }
            }
            if any {
                out.push((Action::Reconcile, n));
            }
        }
        // Self-loops (a repeated tick that changes nothing) add nothing to the graph.
        out.retain(|(_, n)| n != self);
        out
    }

    fn label(&self, b: &Bounds, j: usize, m: u8) -> String {
        format!("fire {m} of job {}", b.jobs[j].label())
    }

    /// The documented limits that runs of this state fell in (bit set), and a description of
    /// the first of each.
    fn limit_hits(&self, b: &Bounds) -> Vec<(u8, String)> {
        let mut out: Vec<(u8, String)> = Vec::new();
        for j in 0..b.jobs.len() {
            for m in 0..b.horizon {
                let Some(e) = self.slots[self.slot(b, j, m)].exec else { continue };
                for (bit, what) in [
                    (LIMIT_OLDER_PAUSE, "ran inside a paused window that is no longer the job's last"),
                    (LIMIT_OLDER_EDIT, "ran a definition an older edit replaced before its minute"),
                ] {
                    if e.runs > 0 && e.limit & bit != 0 && !out.iter().any(|x| x.0 == bit) {
                        let text = format!("{} {what} (documented limit)", self.label(b, j, m));
                        out.push((bit, text));
                    }
                }
            }
        }
        out
    }

    /// Safety properties of a single state.
    fn check(&self, b: &Bounds) -> Option<String> {
        for (j, spec) in b.jobs.iter().enumerate() {
            for m in 0..b.horizon {
                let slot = &self.slots[self.slot(b, j, m)];
                let Some(e) = slot.exec else { continue };
                if spec.poison || e.runs == 0 {
                    continue;
                }
                let (enabled, def) = (slot.snap & 1 != 0, slot.snap >> 1);
                let what = self.label(b, j, m);
                // The documented limits (see the module docs) are excluded here, reported apart.
                if !enabled && e.limit & LIMIT_OLDER_PAUSE == 0 {
                    return Some(format!("{what} ran inside a paused window"));
                }
                if e.limit & LIMIT_OLDER_EDIT != 0 {
                    continue;
                }
                if spec.mask(def) & (1 << m) == 0 {
                    return Some(format!("{what} ran but is not a fire of v{def}, in force at minute {m}"));
                }
                if e.def != def {
                    return Some(format!("{what} ran definition v{}, but v{def} was in force", e.def));
                }
                if e.runs > 1 {
                    return Some(format!("{what}: its handler ran twice"));
                }
                if e.status == Status::Succeeded && e.effects == 0 {
                    return Some(format!("{what} succeeded but its effect was skipped as already applied"));
                }
            }
        }
        None
    }

    /// The unmet obligations of an end state (empty: every owed fire ran, none stranded).
    fn unmet(&self, b: &Bounds) -> Vec<String> {
        let mut out = Vec::new();
        for (j, spec) in b.jobs.iter().enumerate() {
            if spec.poison {
                continue;
            }
            for m in 0..b.horizon {
                let slot = &self.slots[self.slot(b, j, m)];
                let what = self.label(b, j, m);
                if let Some(e) = slot.exec {
                    if !e.is_final() {
                        let msg = if e.queued() == 0 { "with no message: stranded" } else { "still queued" };
                        out.push(format!("{what}: execution {:?} {msg}", e.status));
                        continue;
                    }
                }
                let (enabled, def) = (slot.snap & 1 != 0, slot.snap >> 1);
                let owed = enabled
                    && spec.mask(def) & (1 << m) != 0
                    && !slot.excused
                    && (spec.policy == Policy::FireAll || slot.seen);
                match slot.exec {
                    _ if !owed => {}
                    None => out.push(format!("{what} never executed (no execution)")),
                    Some(e) if e.status == Status::Canceled => {
                        out.push(format!("{what} never executed (its execution was canceled)"))
                    }
                    Some(_) => {}
                }
            }
        }
        out
    }

    /// Nothing in flight and nothing left to deliver: where a behaviour ends.
    fn quiescent(&self, b: &Bounds) -> bool {
        self.now == b.horizon
            && self.settled()
            && self.slots.iter().all(|s| s.exec.is_none_or(|e| e.is_final() || e.queued() == 0))
    }

    fn settled(&self) -> bool {
        self.scan.is_none()
            && self.pending.iter().all(Option::is_none)
            && self.workers.iter().all(Option::is_none)
    }

    fn done(&self, b: &Bounds) -> bool {
        self.now == b.horizon && self.settled() && self.unmet(b).is_empty()
    }
}

/// Explores every reachable state of the instance `b` (with the protocol `flaw`), checking the
/// safety properties on the way and liveness at the end.
pub fn explore(b: &Bounds, flaw: Flaw) -> Exploration {
    let init = State::initial(b);
    let mut index: HashMap<State, u32> = HashMap::new();
    let mut states: Vec<State> = Vec::new();
    let mut parent: Vec<Option<(u32, Action)>> = Vec::new();
    let mut edges: Vec<Vec<(u32, Action)>> = Vec::new();
    let mut queue = VecDeque::new();
    index.insert(init.clone(), 0);
    states.push(init);
    parent.push(None);
    edges.push(Vec::new());
    queue.push_back(0u32);
    let mut safety = None;
    let mut limits: Vec<(u8, Violation)> = Vec::new();
    let mut transitions = 0;
    let trace = |parent: &[Option<(u32, Action)>], mut i: u32| {
        let mut t = Vec::new();
        while let Some((p, a)) = parent[i as usize] {
            t.push(a);
            i = p;
        }
        t.reverse();
        t
    };
    if let Some(p) = states[0].check(b) {
        safety = Some(Violation { property: p, trace: vec![] });
    }
    while let Some(i) = queue.pop_front() {
        let here = states[i as usize].clone();
        for (action, next) in here.successors(b, flaw) {
            transitions += 1;
            let j = match index.get(&next) {
                Some(&j) => j,
                None => {
                    let j = states.len() as u32;
                    let broken = if safety.is_none() { next.check(b) } else { None };
                    let gaps = next.limit_hits(b);
                    index.insert(next.clone(), j);
                    states.push(next);
                    parent.push(Some((i, action)));
                    edges.push(Vec::new());
                    queue.push_back(j);
                    if let Some(p) = broken {
                        safety = Some(Violation { property: p, trace: trace(&parent, j) });
                    }
                    for (bit, p) in gaps {
                        if !limits.iter().any(|x| x.0 == bit) {
                            limits.push((bit, Violation { property: p, trace: trace(&parent, j) }));
                        }
                    }
                    j
                }
            };
            edges[i as usize].push((j, action));
        }
    }
    drop(index);
    // Liveness: backward reachability from the good end states over reversed edges.
    let mut rev: Vec<Vec<u32>> = vec![Vec::new(); states.len()];
    for (i, out) in edges.iter().enumerate() {
        for &(j, _) in out {
            rev[j as usize].push(i as u32);
        }
    }
    let mut good = vec![false; states.len()];
    let mut work: Vec<u32> = (0..states.len() as u32).filter(|&i| states[i as usize].done(b)).collect();
    let done_states = work.len();
    for &i in &work {
        good[i as usize] = true;
    }
    while let Some(j) = work.pop() {
        for &i in &rev[j as usize] {
            if !good[i as usize] {
                good[i as usize] = true;
                work.push(i);
            }
        }
    }
    let liveness = good.iter().position(|g| !g).map(|i| {
        // Continue to the quiescent end state that misses the fewest obligations (the nearest
        // among those), and name what it owes.
        let mut t = trace(&parent, i as u32);
        let mut from: Vec<Option<Option<(u32, Action)>>> = vec![None; states.len()];
        let mut q = VecDeque::from([i as u32]);
        from[i] = Some(None);
        let mut best: Option<(usize, u32)> = None;
        while let Some(k) = q.pop_front() {
            let s = &states[k as usize];
            if s.quiescent(b) {
                let n = s.unmet(b).len();
                if n > 0 && best.is_none_or(|(m, _)| n < m) {
                    best = Some((n, k));
                }
            }
            for &(n, a) in &edges[k as usize] {
                if from[n as usize].is_none() {
                    from[n as usize] = Some(Some((k, a)));
                    q.push_back(n);
                }
            }
        }
        let property = match best {
            Some((count, k)) => {
                let mut tail = Vec::new();
                let mut c = k;
                while let Some(Some((p, a))) = from[c as usize] {
                    tail.push(a);
                    c = p;
                }
                tail.reverse();
                let doomed = t.len();
                t.extend(tail);
                let unmet = states[k as usize].unmet(b);
                let what = unmet.first().cloned().unwrap_or_default();
                let more = if count > 1 { format!(" and {} more", count - 1) } else { String::new() };
                format!("{what}{more}; doomed after step {doomed}")
            }
            None => "no good end state reachable (livelock)".to_string(),
        };
        Violation { property, trace: t }
    });
    limits.sort_by_key(|x| x.0);
    let limits = limits.into_iter().map(|x| x.1).collect();
    Exploration { states: states.len(), transitions, done_states, safety, limits, liveness }
}

/// An execution's status after a [`replay`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecState {
    /// Planned, not yet run.
    Ready,
    /// Claimed by a worker (two-worker mode).
    Running,
    /// Ran to the end.
    Succeeded,
    /// Canceled (held at delivery, superseded by an edit, or canceled by a pause).
    Canceled,
}

/// One execution after a [`replay`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FireOutcome {
    /// The job (index into [`Bounds::jobs`]).
    pub job: u8,
    /// The fire minute.
    pub minute: u8,
    /// Its status.
    pub state: ExecState,
    /// The definition version it carries (ran with, if it succeeded).
    pub definition: u8,
    /// Held by a pause.
    pub held: bool,
    /// Effects the inbox applied for it.
    pub effects: u8,
}

/// Replays `trace` from the initial state (each action must be enabled; the first successor
/// with that label is taken) and lists the executions at the end. `Err(i)`: action `i` was not
/// enabled.
pub fn replay(b: &Bounds, flaw: Flaw, trace: &[Action]) -> Result<Vec<FireOutcome>, usize> {
    let mut s = State::initial(b);
    for (i, a) in trace.iter().enumerate() {
        let next = s.successors(b, flaw).into_iter().find(|(x, _)| x == a).ok_or(i)?;
        s = next.1;
    }
    let mut out = Vec::new();
    for j in 0..b.jobs.len() {
        for m in 0..b.horizon {
            let Some(e) = s.slots[s.slot(b, j, m)].exec else { continue };
            let state = match e.status {
                Status::Ready => ExecState::Ready,
                Status::Running { .. } => ExecState::Running,
                Status::Succeeded => ExecState::Succeeded,
                Status::Canceled => ExecState::Canceled,
            };
            out.push(FireOutcome {
                job: j as u8,
                minute: m,
                state,
                definition: e.def,
                held: e.held,
                effects: e.effects,
            });
        }
    }
    Ok(out)
}

/// One line of [`report`]: the instance, the protocol, and what the check found.
pub fn report_line(b: &Bounds, flaw: Flaw, e: &Exploration) -> String {
    let head = if flaw == Flaw::None { "none".to_string() } else { format!("{flaw:?}") };
    let mut line =
        format!("{head:<28} instance={:<15} states={} transitions={}", b.name, e.states, e.transitions);
    match (&e.safety, &e.liveness) {
        (None, None) if !e.limits.is_empty() => line.push_str(" ok with documented limits"),
        (None, None) => line.push_str(" ok"),
        (Some(v), _) => {
            line.push_str(&format!(" safety property=\"{}\" trace_len={}", v.property, v.trace.len()))
        }
        (None, Some(v)) => {
            line.push_str(&format!(" liveness property=\"{}\" trace_len={}", v.property, v.trace.len()))
        }
    }
    for v in &e.limits {
        line.push_str(&format!(" limit=\"{}\" limit_trace_len={}", v.property, v.trace.len()));
    }
    line
}

/// Explores every case of [`cases`]; one line per case.
pub fn report() -> Vec<String> {
    cases().into_iter().map(|(flaw, b)| report_line(&b, flaw, &explore(&b, flaw))).collect()
}

#[cfg(test)]
mod tests {
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
