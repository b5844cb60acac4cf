//! An exhaustive check of the trigger plane (tick, scan, admission, API pause / resume / edit,
//! reconciler) for small instances, with one broken variant per historical bug.
//!
//! Why a model: the trigger plane's bugs are races between a scan that runs as a sequence of
//! reads and writes, API calls that change a job in between, faults (a lost send, a tick that
//! dies mid-range) and the catch-up budget. Each of the eleven historical bugs ([`Flaw`]'s
//! scenarios) needed one particular interleaving; for a few jobs over a few minutes every
//! interleaving can be enumerated. [`explore`] does that with the crate's breadth-first
//! explorer ([`crate::explore`]) over the whole state graph.
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
//!   Held: Canceled if the job was paused at m by its last window (or that window began at or
//!   after m), else the hold is stale, released, and the fire checked as below (the model's
//!   atomic API calls cannot make a stale hold; this keeps the worker as the code is). Otherwise
//!   the worker reads the job (strongly consistent, in the same step)
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
//! - **The `open` index and the verification pass**: an execution is put with its index entry
//!   by admission, bucket and API dispatches, without one by the every-minute group. The
//!   verification pass runs at the end of each shard's scan (grace: one minute): for the minutes
//!   after the shard's verified one up to `min(max(through, wm), now - 1)`, each fire of a job
//!   the scan read in `E#` (from its position on) that is not final is indexed. A job leaving
//!   `E#` (pause, edit; the scan's deferral) has its open executions after the verified minute
//!   indexed; the API also counts the leave on the shard (`left`), and a scan that sees the
//!   count moved between its start and its end indexes the open executions of each job it read
//!   in `E#` that is no longer there as read (`verify::catch_racing_leaves`).
//! - **Reconciler**: re-sends a message for every Ready execution at least a minute overdue
//!   *that is in the `open` index*, which is all the real one reads ([`Flaw::RacingPutUnindexed`]
//!   is the protocol without the scan's second look, which strands a catch-up fire put by a scan
//!   that raced a pause). It still re-sends only when no message is queued: the real one does
//!   not know that and re-sends a copy anyway (the claim absorbs it), but modelling those copies
//!   multiplied the every-minute instances' states by about 80, past what a debug test run
//!   explores in CI; they are duplicates, which the two-worker instance already covers.
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
//!   still to run. An edit applies to an enabled job, once (v1 to v2). An API call is one step,
//!   so its indexing before and after the change are one, and a concurrent pause and resume or
//!   a sweep that fails part-way (review finding 5) cannot be expressed: those are covered by
//!   `tests/tests/pause_edit.rs` against the store instead.
//! - No daily (`D#`) class and no business calendars (review findings 6 and 9 are covered by
//!   integration tests), no `fireOnce`, no `fireAll` cap and no global budget. The instance the
//!   review names for finding 1 (an `E#` `fireAll` job and a same-tenant bucket job under a small
//!   budget, an outage) is not among the fixed protocol's cases: that finding's fix is not in
//!   this model's scan (see `docs/reliability.md`).
//! - A tick crash between a scan's every-minute puts and its second look at the leave count,
//!   racing a pause, with a lost message, strands a fire in the code as in the model: no
//!   instance combines a crash with a pause of an every-minute job (see `docs/reliability.md`).
//! - The worker's read of the job and its decision are one step with the delivery: an API call
//!   between the read and the claim is not modelled.
//! - The poison job fails its group's dispatch before any put. The worker's claim, run and
//!   finish are one step except in two-worker mode, which has no crashes, heartbeats or lease
//!   expiry by elapsed time: only the slow clock's already-ended lease ([`model`](super::model)
//!   checks the claim protocol itself).
//!
//! ## Layout
//! - `instance`: an instance's fixed part ([`Bounds`], [`JobSpec`]); `variants`: [`Flaw`] and
//!   the instances each case is checked on.
//! - `state`: the state; `actions`: the transitions' labels ([`Action`]).
//! - `transitions` (the order of every step), `scan` (the tick), `api` (pause, resume, edit),
//!   `worker` (delivery, claim, finish, the queue's faults).
//! - `properties`: safety, the documented limits, liveness's end states and obligations.
//! - `check`: the exploration and its report; `replay`: a trace's executions.

mod actions;
mod api;
mod check;
mod instance;
mod properties;
mod replay;
mod scan;
mod state;
mod transitions;
mod variants;
mod worker;

pub use actions::Action;
pub use check::{explore, report, report_line, Exploration, Violation};
pub use instance::{every, Bounds, Class, JobSpec, Partition, Policy};
pub use replay::{replay, ExecState, FireOutcome};
pub use variants::{cases, combined_bounds, default_bounds, extended_bounds, open_bounds, Flaw};
