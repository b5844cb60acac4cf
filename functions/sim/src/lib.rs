//! # sundial-sim: the deterministic simulator
//!
//! Sundial's production code (the tick and its scans, the verification pass, the reconciler,
//! the workers' Lambda and ECS paths, the control plane) runs unchanged against
//! [`sundial_simaws::Aws`], an in-process AWS plugged in below the SDK as its HTTP client, on a
//! current-thread tokio runtime whose clock is paused: every timer, every SDK retry backoff,
//! every long poll and every `now` the code reads is simulated time, so a simulated day takes
//! seconds and a seed replays exactly.
//!
//! A run ([`run::run`]) draws everything from its seed: the workload ([`workload`]: jobs of every
//! trigger class and policy, pause/resume/edit/delete/trigger-now racing the tick), the faults
//! ([`faults`]: lost and duplicated messages, lost responses, throttling, SQS down, tick and
//! reconciler outages, workers killed at an await point and restarted, per-worker clock skew),
//! the events an at-least-once source sends ([`events`]: repeated, keyed or not, its sender
//! dying between the key claim and the put; every attempt logged in [`eventlog`]),
//! then stops the faults, lets the system go quiet, and checks the invariants ([`invariants`],
//! over the [`evidence`] it gathered;
//! each broken one a [`violation::Violation`]) over the tables, the queues and the effects
//! ledger the simulated target keeps ([`ledger`]; a `stepFunctions` job's effect is its
//! execution in the simulated AWS, [`stepfunctions`], an `ecs` job's its task, [`ecs`]). A
//! failing seed prints the command that replays it and the trace of the execution involved.
//! `docs/simulation.md` explains how to run, replay and extend it.
pub mod checkpoints;
pub mod coverage;
pub mod ecs;
pub mod eventlog;
pub mod events;
pub mod evidence;
pub mod faults;
pub mod fencing;
pub mod invariants;
pub mod ledger;
pub mod processes;
pub mod resources;
pub mod run;
pub mod stepfunctions;
pub mod violation;
pub mod workload;
pub mod world;

/// The `n`-th draw of `seed`'s stream, independent of every other draw (so concurrent tasks
/// cannot reorder each other's randomness).
pub fn draw(seed: u64, n: u64) -> u64 {
    sundial_hash::splitmix64(seed ^ sundial_hash::splitmix64(n))
}

/// A draw in `[lo, hi]`.
pub fn between(seed: u64, n: u64, lo: u64, hi: u64) -> u64 {
    if hi <= lo {
        return lo;
    }
    lo + draw(seed, n) % (hi - lo + 1)
}

/// A draw that is true with probability `permille`/1000.
pub fn chance(seed: u64, n: u64, permille: u64) -> bool {
    draw(seed, n) % 1000 < permille
}
