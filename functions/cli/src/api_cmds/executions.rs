//! `sundial executions ...`.

use super::output::{
    exec_rows, items, next_hint, print_json, render_execution, s, table, to_json, EXEC_HEADERS,
};
use super::paging::{list, Paging};
use crate::client::{ApiArgs, Output};
use anyhow::Context;
use sundial_client::{ExecStatus, ListChildren, ListExecutions, ListJobExecutions};

/// `sundial executions ...`
#[derive(clap::Subcommand, Debug)]
pub(crate) enum ExecCmd {
    /// List executions of a job (any status), or across jobs by status (RETRY_WAIT, FAILED, DEAD, CANCELED).
    List {
        /// The job.
        #[arg(long)]
        job: Option<String>,
        /// Only this status (required without --job: RETRY_WAIT, FAILED, DEAD or CANCELED).
        #[arg(long)]
        status: Option<String>,
        /// Oldest first (with --job).
        #[arg(long, requires = "job")]
        oldest_first: bool,
        /// Only executions scheduled at or before this instant (RFC 3339, or `now`: the fires
        /// due so far, not the ones already planned for the coming minutes; with --job).
        #[arg(long, requires = "job", value_parser = until_arg)]
        until: Option<chrono::DateTime<chrono::Utc>>,
        #[command(flatten)]
        paging: Paging,
    },
    /// Show one execution with its timeline (a parent: also its children).
    Get {
        /// Execution id (`job@ms`; a child's `job@ms.s3` or `job@ms.m-<member>`).
        execution_id: String,
    },
    /// List the children of a sharded, broadcast or map-reduce fire, with their status.
    Children {
        /// The parent's execution id (`job@ms`).
        execution_id: String,
        #[command(flatten)]
        paging: Paging,
    },
    /// Cancel an execution.
    Cancel {
        /// Execution id.
        execution_id: String,
    },
}

/// Runs `sundial executions ...`.
pub(crate) async fn executions(args: &ApiArgs, cmd: ExecCmd) -> anyhow::Result<()> {
    let c = args.client().await?;
    let out = args.output;
    match cmd {
        ExecCmd::List { job, status: st, oldest_first, until, paging } => {
            let st = st.as_deref().map(status).transpose()?;
            let v = match job {
                Some(job_id) => {
                    let req = ListJobExecutions {
                        job_id,
                        status: st,
                        oldest_first,
                        limit: paging.limit,
                        cursor: paging.cursor,
                        until,
                    };
                    list(&c, req, paging.all).await?
                }
                None => {
                    let st = st
                        .context("--status is required without --job (RETRY_WAIT, FAILED, DEAD, CANCELED)")?;
                    let req = ListExecutions { status: st, limit: paging.limit, cursor: paging.cursor };
                    list(&c, req, paging.all).await?
                }
            };
            if out == Output::Json {
                print_json(&v);
            } else {
                println!("{}", table(&EXEC_HEADERS, &exec_rows(items(&v))));
                next_hint(&v);
            }
        }
        ExecCmd::Get { execution_id } => {
            let mut v = to_json(&c.get_execution(&execution_id).await?)?;
            if out == Output::Json {
                print_json(&v)
            } else {
                if v["children"].is_object() {
                    // The execution carries only the counts; show the first page of children.
                    let kids = to_json(&c.list_children(&execution_id).await?)?;
                    v["childExecutions"] = kids["items"].clone();
                }
                println!("{}", render_execution(&v))
            }
        }
        ExecCmd::Children { execution_id, paging } => {
            let req = ListChildren { execution_id, limit: paging.limit, cursor: paging.cursor };
            let v = list(&c, req, paging.all).await?;
            if out == Output::Json {
                print_json(&v);
            } else {
                println!("{}", table(&EXEC_HEADERS, &exec_rows(items(&v))));
                next_hint(&v);
            }
        }
        ExecCmd::Cancel { execution_id } => {
            let v = to_json(&c.cancel_execution(&execution_id).await?)?;
            if out == Output::Json {
                print_json(&v)
            } else {
                println!(
                    "{} {}",
                    s(&v["executionId"]),
                    if v["status"] == "CANCELED" { "cancelled" } else { "cancel requested (running)" }
                )
            }
        }
    }
    Ok(())
}

fn status(s: &str) -> anyhow::Result<ExecStatus> {
    ExecStatus::parse(&s.to_uppercase()).with_context(|| {
        let all: Vec<&str> = ExecStatus::ALL.iter().map(|s| s.as_str()).collect();
        format!("--status {s}: not one of {}", all.join(", "))
    })
}

/// `--until`: `now` or an RFC 3339 instant.
fn until_arg(s: &str) -> Result<chrono::DateTime<chrono::Utc>, String> {
    if s == "now" {
        return Ok(chrono::Utc::now());
    }
    chrono::DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&chrono::Utc))
        .map_err(|e| format!("--until: not `now` or an RFC 3339 instant ({e})"))
}
