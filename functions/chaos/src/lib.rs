//! # sundial-chaos: seeded fault injection and a checked claim protocol
//!
//! Sundial promises that no fire is lost, no stale write is accepted, and every execution ends
//! in a final state or is visibly in flight. This crate tries to break that promise on purpose,
//! and checks the protocol the promise rests on exhaustively for small instances.
//!
//! ## Layout
//! - [`explore`]: the breadth-first explorer both models use: safety in every state, liveness
//!   under fairness, shortest counterexample traces.
//! - [`model`]: the claim / heartbeat / finish / takeover protocol as a finite state machine.
//! - [`trigger_model`]: the trigger plane (tick, scan, due classes, catch-up budget, pause /
//!   resume / edit, lost and duplicated messages, the reconciler) as a finite state machine,
//!   with one broken variant per historical bug that the checker must catch with a trace.
//! - [`prng`]: SplitMix64, so every decision is a function of the seed.
//! - [`proxy`]: the fault-injecting HTTP proxy between Sundial and the emulator.
//! - [`effect`]: the chaos handler, its fenced resource and idempotent effect, the journal.
//! - [`shards`]: the sharded settlement handler, its effect ledger and checker.
//! - [`check`]: pure end-of-run checks over the table, the resources and the journal.
//! - [`emulator`]: SDK configuration for the emulator, directly or through a proxy.
//! - [`worker`]: the chaos worker process (the ECS loop with the chaos handler, skewable clock).
//! - [`run`]: the chaos run: ticks, worker processes and the fault controller, then the check.
//!
//! Binaries: `chaos` (the run; `chaos worker` is its worker process), `trigger-model` (every
//! case of the trigger-plane model) and `fault-proxy` (the proxy alone, for manual drills).
//! `docs/reliability.md` has the figures and how to run them.
pub mod check;
pub mod effect;
pub mod emulator;
pub mod explore;
pub mod model;
pub mod prng;
pub mod proxy;
pub mod run;
pub mod shards;
pub mod trigger_model;
pub mod worker;
