//! Helpers shared by the bench binaries (`bench-trigger`, `bench-worker`): the emulator's raw
//! SQS rate, measured in the same run as the figures it normalises, and percentiles.

use anyhow::Result;
use std::time::Instant;

/// Single-client SQS send + receive + delete cycles per second on `url` (`n` cycles).
pub async fn sqs_cycles_per_sec(sqs: &aws_sdk_sqs::Client, url: &str, n: usize) -> Result<f64> {
    let t = Instant::now();
    for i in 0..n {
        sqs.send_message().queue_url(url).message_body(format!("{i}")).send().await?;
        let got = sqs.receive_message().queue_url(url).max_number_of_messages(1).send().await?;
        for msg in got.messages() {
            sqs.delete_message()
                .queue_url(url)
                .receipt_handle(msg.receipt_handle().unwrap_or_default())
                .send()
                .await?;
        }
    }
    Ok(n as f64 / t.elapsed().as_secs_f64())
}

/// The `fraction` (0..=1) percentile of an ascending slice, nearest rank; 0 when empty.
pub fn percentile(sorted: &[i64], fraction: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = (fraction.clamp(0.0, 1.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// This process's CPU time so far (user + system), in ms, from `/proc/self/stat`; `None` where
/// that file does not exist (not Linux).
pub fn process_cpu_ms() -> Option<i64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may contain spaces) are space-separated; utime and
    // stime are the 14th and 15th fields, in clock ticks (100 per second on Linux).
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    let ticks: i64 = f.get(11)?.parse::<i64>().ok()? + f.get(12)?.parse::<i64>().ok()?;
    Some(ticks * 10)
}
