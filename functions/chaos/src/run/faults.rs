//! The faults the run injects beside the proxy's: the worker-fault controller (SIGKILL and
//! restart, SIGSTOP past the lease), the message thief (loss and DLQ overflow) and the poison
//! job items.

use super::config::RunConfig;
use super::processes::Fleet;
use super::TENANT;
use crate::prng::SplitMix;
use anyhow::Result;
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Duration as CDuration, Utc};
use std::sync::Arc;
use std::time::Duration;
use sundial_core::aws::Clients;
use sundial_core::config::Config;
use tokio::sync::Mutex;

async fn sleep_until(t: DateTime<Utc>) {
    let d = (t - Utc::now()).num_milliseconds();
    if d > 0 {
        tokio::time::sleep(Duration::from_millis(d as u64)).await;
    }
}

/// The worker-fault controller: SIGKILL + restart, or SIGSTOP past the lease + SIGCONT, until
/// `until`. The first two faults are one of each, so even a short run has both.
pub(super) async fn controller(fleet: Arc<Mutex<Fleet>>, rc: RunConfig, until: DateTime<Utc>) -> Result<()> {
    let mut rng = SplitMix::new(rc.seed ^ 0xC0_47_20_11);
    let pause_for = Duration::from_millis(rc.lease_secs as u64 * 1000 + rc.skew_margin_ms as u64 + 2_000);
    let mut k = 0u64;
    loop {
        let wait = rng.between(rc.fault_every.0.as_millis() as u64, rc.fault_every.1.as_millis() as u64);
        let at = Utc::now() + CDuration::milliseconds(wait as i64);
        if at >= until {
            return Ok(());
        }
        sleep_until(at).await;
        let victim = rng.below(rc.workers as u64) as usize;
        let pause = match k {
            0 => false,
            1 => true,
            _ => rng.chance(300),
        };
        let mut f = fleet.lock().await;
        if pause {
            f.pause(victim, pause_for).await;
        } else {
            let down = Duration::from_millis(rng.between(300, 2_000));
            f.kill_and_restart(victim, down).await?;
        }
        k += 1;
    }
}

/// Message loss and DLQ overflow: every `thief_every` until firing ends, takes up to 10
/// messages from the pool queue (directly, not through the proxy) and drops some silently,
/// moves some to the DLQ, and puts the rest back. Returns (lost, dead-lettered).
pub(super) async fn thief(
    direct: Clients,
    cfg: Config,
    rc: RunConfig,
    end: DateTime<Utc>,
    stop: tokio_util::sync::CancellationToken,
) -> Result<(u64, u64)> {
    let mut rng = SplitMix::new(rc.seed ^ 0x0007_41EF);
    let url = queue_url(&direct, &cfg.queue_name("default")).await?;
    let dlq = queue_url(&direct, &cfg.dlq_name("default")).await?;
    let (mut lost, mut dead) = (0, 0);
    while Utc::now() < end {
        tokio::select! {
            _ = tokio::time::sleep(rc.thief_every) => {}
            _ = stop.cancelled() => break,
        }
        let Ok(got) = direct
            .sqs
            .receive_message()
            .queue_url(&url)
            .max_number_of_messages(10)
            .visibility_timeout(30)
            .send()
            .await
        else {
            continue;
        };
        for m in got.messages.unwrap_or_default() {
            match steal(&direct, &rc, &mut rng, (&url, &dlq), &m).await {
                Stolen::Lost => lost += 1,
                Stolen::DeadLettered => dead += 1,
                Stolen::Returned => {}
            }
        }
    }
    Ok((lost, dead))
}

async fn queue_url(direct: &Clients, name: &str) -> Result<String> {
    Ok(direct.sqs.get_queue_url().queue_name(name).send().await?.queue_url.unwrap_or_default())
}

/// What the thief did with one message.
enum Stolen {
    /// Deleted unread.
    Lost,
    /// Moved to the DLQ.
    DeadLettered,
    /// Put back (visible at once), or a move that failed.
    Returned,
}

/// Drops the message silently, moves it to the DLQ, or puts it back, as the seed decides.
async fn steal(
    direct: &Clients,
    rc: &RunConfig,
    rng: &mut SplitMix,
    (url, dlq): (&str, &str),
    m: &aws_sdk_sqs::types::Message,
) -> Stolen {
    let handle = m.receipt_handle.clone().unwrap_or_default();
    let delete = || direct.sqs.delete_message().queue_url(url).receipt_handle(&handle).send();
    if rng.chance(rc.loss_permille) {
        if delete().await.is_ok() {
            return Stolen::Lost;
        }
    } else if rng.chance(rc.dlq_permille) {
        let body = m.body.clone().unwrap_or_default();
        if direct.sqs.send_message().queue_url(dlq).message_body(body).send().await.is_ok()
            && delete().await.is_ok()
        {
            return Stolen::DeadLettered;
        }
    } else {
        let _ = direct
            .sqs
            .change_message_visibility()
            .queue_url(url)
            .receipt_handle(&handle)
            .visibility_timeout(0)
            .send()
            .await;
    }
    Stolen::Returned
}

/// Plants `n` job items this version cannot decode (a definition field from a newer writer)
/// in the admission partitions of the shards, round robin. Returns how many.
pub(super) async fn plant_poison(ddb: &aws_sdk_dynamodb::Client, cfg: &Config, n: u32) -> Result<u64> {
    for i in 0..n {
        let shard = i % cfg.shards.max(1);
        let s = |v: String| AttributeValue::S(v);
        let item = std::collections::HashMap::from([
            ("pk".to_string(), s(sundial_model::keys::job_pk(TENANT, &format!("poison-{i}")))),
            ("sk".to_string(), s(sundial_model::keys::JOB_DEF_SK.to_string())),
            ("due_pk".to_string(), s(sundial_model::keys::admission_bucket(shard))),
            ("due_sk".to_string(), s(format!("0#{TENANT}#poison-{i}"))),
            ("def".to_string(), s(r#"{"aFieldFromTheFuture":true}"#.to_string())),
        ]);
        ddb.put_item().table_name(&cfg.jobs_table).set_item(Some(item)).send().await?;
    }
    Ok(u64::from(n))
}
