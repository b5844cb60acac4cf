//! The trigger plane: turns "should run at T" into immutable executions (docs/trigger.md).
//!
//! - [`plan`]: pure — which fires a job gets in a window, misfire policy, catch-up budget.
//! - [`cache`] and [`calendars`]: re-exported from [`crate::schedules`], the parsed-schedule and
//!   business-calendar caches the scan, the worker and the control plane share.
//! - [`scan`]: the I/O loop over a shard range: put → send → advance → watermark; `batch`: a
//!   `fireOnce` batch found existing at its put, whose range is then covered once.
//! - `limit`: `maxRuns` — a limited job's fires put counted, in schedule order, and which
//!   jobs the scan completes (docs/schedule.md, "A run-count limit").
//! - [`verify`]: every-minute and daily fires are put without an `open` index entry; a grace
//!   after their minute this pass looks them up and indexes the ones not final yet.
//! - [`settle`]: the fires a job owes when a pause, edit or delete changes it, put first.
//! - [`throughput`]: the provisioned-capacity planner (forecast from the `due` index, the pure
//!   plan of `sundial-throughput`, `UpdateTable`), for tables in provisioned mode.
//! - [`tick`]: the per-minute entry: scan in-process, or fan shard ranges out to scan
//!   functions with asynchronous Lambda invokes when the shard count calls for it.
pub use crate::execution::follow;
/// The schedule and calendar caches, from [`crate::schedules`] (kept under their old paths).
pub use crate::schedules::{self as cache, calendars};
mod batch;
mod limit;
mod moves;
pub mod plan;
pub mod report;
pub mod scan;
pub mod settle;
pub mod throughput;
pub mod tick;
pub mod verify;
