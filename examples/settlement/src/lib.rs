//! # settlement-example: the merchant settlement of docs/idempotency.md as a Sundial job
//!
//! A daily settlement of merchants at 02:00 in Asia/Shanghai (`job.json` is its Sundial job
//! definition), written with `sundial-idempotency` so that running it twice, three times, or
//! half-way and again, pays every merchant exactly once.
//!
//! ## Layout
//! - [`account_service`]: the fake account service (a real HTTP server on loopback with its own
//!   idempotency keys and fault switches) and the handler's client of it.
//! - [`settle`]: the job itself: per merchant, CAS claim → unique detail row → keyed credit →
//!   CAS finish; reconciliation, done-marker and a fenced run report at the end. [`Layers`]
//!   switches each per-item layer off for the tests that prove it necessary.
//! - [`scenario`]: the post-mortem replayed: timeout failover, a worker killed half-way, a
//!   re-run, a stale worker waking up, a late duplicate trigger; then an audit of every table.
//! - [`mapreduce`]: the same settlement as a Sundial map-reduce job over merchants: the map
//!   emits one item per merchant, each item settles its merchant under its own execution id
//!   and token, the reduce reconciles and closes the day once (`docs/mapreduce.md`).
//! - [`emulator`]: DynamoDB client for the local emulator (this example never talks to AWS).
//!
//! Run it: `cargo run -p settlement-example -- demo --merchants 10000 --crash-b-at 5000`.

pub mod account_service;
pub mod emulator;
pub mod mapreduce;
pub mod scenario;
pub mod settle;

pub use settle::Layers;
