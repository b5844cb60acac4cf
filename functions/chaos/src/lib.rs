//! # sundial-chaos: seeded fault injection and a checked claim protocol (seed 000 §16–§17)
//!
//! Sundial promises that no fire is lost, no stale write is accepted, and every execution ends
//! in a final state or is visibly in flight. This crate tries to break that promise on purpose,
//! and checks the protocol the promise rests on exhaustively for small instances.
//!
//! ## Layout
//! - [`model`]: the claim / heartbeat / finish / takeover protocol as a finite state machine,
//!   explored breadth-first: safety in every state, liveness under fairness.
//! - [`prng`]: SplitMix64, so every decision is a function of the seed.
pub mod model;
pub mod prng;
