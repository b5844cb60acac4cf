//! `sundial dlq ...`: dead executions, and replaying them.

use super::output::{exec_rows, items, next_hint, print_json, s, table, to_json, EXEC_HEADERS};
use super::paging::{list, Paging};
use crate::client::{ApiArgs, Output};
use sundial_client::ListDeadLetters;

/// `sundial dlq ...`
#[derive(clap::Subcommand, Debug)]
pub(crate) enum DlqCmd {
    /// List dead executions.
    List {
        #[command(flatten)]
        paging: Paging,
    },
    /// Replay dead executions (same execution ids; audited).
    Replay {
        /// Execution ids (up to 25).
        #[arg(required = true)]
        execution_ids: Vec<String>,
        /// Why (recorded in each replay's operations-log entry; at most 500 characters).
        #[arg(long)]
        reason: Option<String>,
    },
}

/// Runs `sundial dlq ...`.
pub(crate) async fn dlq(args: &ApiArgs, cmd: DlqCmd) -> anyhow::Result<()> {
    let c = args.client().await?;
    match cmd {
        DlqCmd::List { paging } => {
            let req = ListDeadLetters { limit: paging.limit, cursor: paging.cursor };
            let v = list(&c, req, paging.all).await?;
            if args.output == Output::Json {
                print_json(&v);
            } else {
                println!("{}", table(&EXEC_HEADERS, &exec_rows(items(&v))));
                next_hint(&v);
            }
        }
        DlqCmd::Replay { execution_ids, reason } => {
            let v = to_json(&c.replay_dead_letters_because(&execution_ids, reason.as_deref()).await?)?;
            if args.output == Output::Json {
                print_json(&v);
            } else {
                let rows: Vec<Vec<String>> = v["results"]
                    .as_array()
                    .map(|r| r.iter().map(|x| vec![s(&x["executionId"]), s(&x["outcome"])]).collect())
                    .unwrap_or_default();
                println!("{}", table(&["EXECUTION", "OUTCOME"], &rows));
            }
        }
    }
    Ok(())
}
