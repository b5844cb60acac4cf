//! `sundial ops ...`: the operations audit log.

use super::output::{items, next_hint, print_json, s, table};
use super::paging::{list, Paging};
use crate::client::{ApiArgs, Output};
use sundial_client::ListOperations;

/// `sundial ops ...`
#[derive(clap::Subcommand, Debug)]
pub(crate) enum OpsCmd {
    /// The operations audit log, newest first.
    List {
        /// Only this job.
        #[arg(long)]
        job: Option<String>,
        #[command(flatten)]
        paging: Paging,
    },
}

/// Runs `sundial ops ...`.
pub(crate) async fn ops(args: &ApiArgs, cmd: OpsCmd) -> anyhow::Result<()> {
    let c = args.client().await?;
    let OpsCmd::List { job, paging } = cmd;
    let req = ListOperations { job_id: job, limit: paging.limit, cursor: paging.cursor };
    let v = list(&c, req, paging.all).await?;
    if args.output == Output::Json {
        print_json(&v);
    } else {
        let rows: Vec<Vec<String>> = items(&v)
            .iter()
            .map(|o| {
                vec![
                    s(&o["at"]),
                    s(&o["actor"]),
                    s(&o["action"]),
                    s(&o["jobId"]),
                    format!("{} → {}", s(&o["fromVersion"]), s(&o["toVersion"])),
                    s(&o["executionId"]),
                    s(&o["detail"]),
                ]
            })
            .collect();
        println!("{}", table(&["AT", "ACTOR", "ACTION", "JOB", "VERSION", "EXECUTION", "DETAIL"], &rows));
        next_hint(&v);
    }
    Ok(())
}
