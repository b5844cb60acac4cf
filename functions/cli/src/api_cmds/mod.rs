//! `sundial jobs|executions|dlq|ops ...`: the API from the command line.
//!
//! Every command is one or two calls of the typed client (`sundial-client`); `--output json`
//! prints the API's JSON for scripts, the default prints tables. `jobs update` reads the job,
//! applies the flags to its definition and saves it with `If-Match: <the version read>`, so a
//! concurrent edit makes it fail (412) rather than be overwritten. Every list takes `--limit`,
//! `--cursor` and `--all` (every page, following the cursor); `--all` prints the items of every
//! page as one page without a cursor.
//!
//! One file per command family (`jobs`, `executions`, `dlq`, `ops`); a job definition from
//! flags in `job_spec`, the shared paging flags in `paging`, tables and JSON in `output`.

mod dlq;
mod executions;
mod job_spec;
mod jobs;
mod ops;
mod output;
mod paging;

pub(crate) use dlq::{dlq, DlqCmd};
pub(crate) use executions::{executions, ExecCmd};
pub(crate) use jobs::{jobs, EventFields, JobsCmd};
pub(crate) use ops::{ops, OpsCmd};
pub(crate) use output::{items, next_hint, print_json, s, table, to_json};
pub(crate) use paging::{list, Paging};
