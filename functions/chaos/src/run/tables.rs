//! Direct reads of the run's tables (not through the proxy) and their removal afterwards.

use super::TENANT;
use anyhow::Result;
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{Duration as CDuration, Utc};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;
use sundial_core::aws::Clients;
use sundial_core::config::Config;
use sundial_model::Execution;
use sundial_store::items;

/// Reads every execution of the run's jobs (directly from the emulator).
pub(super) async fn all_executions(
    ddb: &aws_sdk_dynamodb::Client,
    cfg: &Config,
    job_ids: &[String],
) -> Result<Vec<Execution>> {
    let mut out = Vec::new();
    for job in job_ids {
        let mut start = None;
        loop {
            let page = ddb
                .query()
                .table_name(&cfg.executions_table)
                .key_condition_expression("pk = :p")
                .expression_attribute_values(
                    ":p",
                    AttributeValue::S(sundial_model::keys::job_pk(TENANT, job)),
                )
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(|e| anyhow::anyhow!("{}", aws_sdk_dynamodb::error::DisplayErrorContext(e)))?;
            for i in page.items() {
                out.push(items::execution_from_item(i)?);
            }
            match page.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => break,
            }
        }
    }
    Ok(out)
}

/// Removes the run's tables, queues and run directory.
pub(super) async fn cleanup(
    direct: &Clients,
    cfg: &Config,
    effects_table: &str,
    queues: &BTreeMap<String, sundial_testkit::provision::PoolQueues>,
    dir: &Path,
) {
    for t in [cfg.jobs_table.as_str(), cfg.executions_table.as_str(), effects_table] {
        let _ = direct.ddb.delete_table().table_name(t).send().await;
    }
    for q in queues.values() {
        let _ = direct.sqs.delete_queue().queue_url(&q.url).send().await;
        let _ = direct.sqs.delete_queue().queue_url(&q.dlq_url).send().await;
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// The drain: waits for every execution to be final (faults still on). On a busy emulator the
/// backlog drains slowly but steadily, so the wait ends when nothing has finished for `stall`
/// (stuck), not at a fixed time; 30 minutes is the hard cap.
pub(super) async fn drain(
    ddb: &aws_sdk_dynamodb::Client,
    cfg: &Config,
    job_ids: &[String],
    stall: Duration,
) -> Result<()> {
    let stall = CDuration::milliseconds(stall.as_millis() as i64);
    let cap = Utc::now() + CDuration::minutes(30);
    let (mut best, mut improved) = (usize::MAX, Utc::now());
    loop {
        let ex = all_executions(ddb, cfg, job_ids).await?;
        let open = ex.iter().filter(|e| !e.status.is_terminal()).count();
        let now = Utc::now();
        if open < best {
            (best, improved) = (open, now);
        }
        if open == 0 || now - improved > stall || now > cap {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}
